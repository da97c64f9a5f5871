"""The MCP server of `start mcp`: the SDK's low-level Server, its handlers over `library` (the
prompts, resources and task tools), `jobs` (the asking tools) and `board` (the board's tools).

Every request loads the config afresh in a worker thread, because loading, trust checks and task
commands block and the SDK runs requests concurrently. Requests that may run commands take their
threads from workers of their own, so listings never wait behind them, and their process groups
have an owner until they are gone (start.mcp.owners). A failed task command is a tool result with
isError; a bad request is an MCP error and never stops the server. Logs go to stderr: stdout is
the protocol's channel (start.mcp.stdio).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeVar

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server import Server

from start import __version__
from start.base import inputs
from start.base.errors import StartError
from start.config.model import Config, Task
from start.mcp import asking, board, jobs, library, report, stdio, taskfile, tools, workflows
from start.mcp.jobs import Context
from start.mcp.owners import Commands, off_loop
from start.proc.shell import STOP_SIGNALS
from start.proc.watchdog import Watchdog
from start.runs import rules
from start.runs.rules import RequestError, Scope

MIME: Final = "text/markdown"

logger = logging.getLogger("start.mcp")

R = TypeVar("R")


def _guarded(
    handler: Callable[[Context, Any], Awaitable[R]],
) -> Callable[[Context, Any], Awaitable[R]]:
    """Turn every failure into an MCP error the client can show; the server goes on."""

    @functools.wraps(handler)
    async def guarded(ctx: Context, params: Any) -> R:
        try:
            return await handler(ctx, params)
        except MCPError:
            raise
        except RequestError as error:
            raise MCPError(types.INVALID_PARAMS, str(error)) from None
        except StartError as error:
            raise MCPError(types.INTERNAL_ERROR, str(error)) from None
        except Exception as error:
            logger.exception("%s failed", ctx.method)
            message = f"internal error: {type(error).__name__}: {error}"
            raise MCPError(types.INTERNAL_ERROR, message) from None

    return guarded


def _prompt(task: Task) -> types.Prompt:
    return types.Prompt(
        name=task.name,
        description=task.description,
        arguments=[
            types.PromptArgument(name=a.name, description=a.description, required=a.required)
            for a in rules.arguments(task)
        ],
    )


def build(scope: Scope, commands: Commands | None = None) -> Server[Any]:
    """The server for one directory; it reads nothing until a request comes.

    `commands` owns the process groups of the commands that requests run (a new one if None).
    """
    if commands is None:
        commands = Commands()
    runs = jobs.Runs(scope, commands)
    boards = board.Tools(scope, wait_most=tools.WAIT_MOST, progress_every=jobs.PROGRESS_EVERY)
    taskfiles = taskfile.Tools(scope)

    @_guarded
    async def list_prompts(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        seen = await off_loop(rules.view, scope)
        return types.ListPromptsResult(prompts=[_prompt(t) for t in rules.listed(seen.config)])

    @_guarded
    async def get_prompt(
        ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        values = params.arguments or {}
        composed = await commands.run(
            lambda owner: library.compose(scope, params.name, values, owner)
        )
        message = types.PromptMessage(role="user", content=tools.text(composed.message))
        return types.GetPromptResult(description=composed.task.description, messages=[message])

    @_guarded
    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        seen = await off_loop(rules.view, scope)
        tasks = rules.listed(seen.config)
        agents, _ = await off_loop(rules.offered, scope, seen.config)
        # No task offered: the task tools are not registered (seed 000), and nothing fails. No
        # agent may be asked (too deep, or none on PATH): no asking tools.
        listed = tools.task_tools(tasks) if tasks else []
        listed += tools.asking_tools(agents) if agents else []
        listed += await off_loop(_workflow_tools, scope) if agents else []
        listed += await taskfiles.listed()
        return types.ListToolsResult(tools=listed + boards.listed())

    @_guarded
    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if boards.offers(params.name):
            return await boards.call(ctx, params.name, arguments)
        if taskfiles.offers(params.name):
            return await taskfiles.call(params.name, arguments, commands.run)
        if params.name in (tools.ASK_AGENT, tools.ASK_AGENTS):
            return await jobs.ask(ctx, scope, commands, params.name, arguments)
        if params.name == tools.ASK_START:
            return await runs.start(arguments)
        if params.name == tools.ASK_RESULT:
            return await runs.result(ctx, arguments)
        if params.name == tools.ASK_CANCEL:
            return await runs.cancel(arguments)
        if params.name in workflows.NAMES:
            return await workflows.call_tool(ctx, scope, commands, params.name, arguments)
        if params.name not in (tools.LIST_TASKS, tools.FIND_TASKS, tools.RUN_TASK):
            raise MCPError(types.INVALID_PARAMS, f"unknown tool '{params.name}'")
        try:
            seen = await off_loop(rules.view, scope)
        except StartError as error:
            return tools.failed(str(error))
        unregistered = MCPError(
            types.INVALID_PARAMS,
            f"unknown tool '{params.name}': no task is offered, so the task tools are not "
            "registered",
        )
        if params.name == tools.FIND_TASKS:
            # Ranked from find's index, which says which tasks are offered: none is decoded.
            try:
                flows = functools.partial(workflows.offered, scope)
                data = await off_loop(tools.find_call, seen.config, arguments, flows)
            except tools.NoTaskOfferedError:
                raise unregistered from None
            except RequestError as error:
                return tools.failed(str(error))
            text = json.dumps(data, ensure_ascii=False)
            return types.CallToolResult(content=[tools.text(text)], structured_content=data)
        tasks = rules.listed(seen.config)
        if not tasks:
            raise unregistered
        if params.name == tools.RUN_TASK:
            return await _run_task(scope, commands, seen.config, arguments)
        try:
            await off_loop(
                tools.check, tools.LIST_TASKS, tools.list_input(), tools.given(arguments)
            )
        except RequestError as error:
            return tools.failed(str(error))
        agents, closed = await off_loop(rules.offered, scope, seen.config)
        data = report.listing(tasks, scope.workdir, seen.note, agents, closed)
        text = json.dumps(data, ensure_ascii=False)
        return types.CallToolResult(content=[tools.text(text)], structured_content=data)

    @_guarded
    async def list_resources(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        seen = await off_loop(rules.view, scope)
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r.uri, name=f"{r.kind} {r.name}", description=r.description, mime_type=MIME
                )
                for r in library.resources(seen.config)
            ]
        )

    @_guarded
    async def list_resource_templates(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=f"{library.SCHEME}{kind}/{{name}}",
                    name=kind,
                    description=f"A {kind} of start by name, materialised as a launch does it.",
                    mime_type=MIME,
                )
                for kind in ("context", "role")
            ]
        )

    @_guarded
    async def read_resource(
        ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        text = await commands.run(lambda owner: library.read(scope, params.uri, owner))
        contents = types.TextResourceContents(uri=params.uri, text=text, mime_type=MIME)
        return types.ReadResourceResult(contents=[contents])

    return Server(
        "start",
        version=__version__,
        # Valid Unicode, as JSON-RPC carries it: a project's path may hold bytes that are not.
        instructions=inputs.valid(
            library.instructions(scope)
            + asking.instructions(scope)
            + workflows.instructions(scope)
            + taskfile.instructions(scope)
        ),
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )


def _workflow_tools(scope: Scope) -> list[types.Tool]:
    """The workflow tools, when a workflow is offered; none while the workflows do not check
    (the server's instructions and a call say why)."""
    try:
        found = workflows.offer(scope)
    except StartError:
        return []
    return workflows.listed(found) if found is not None else []


async def _run_task(
    scope: Scope, commands: Commands, config: Config, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    try:
        name, values = await off_loop(tools.task_call, config, arguments)
        run = await commands.run(lambda owner: library.run(scope, name, values, owner))
    except StartError as error:
        return tools.failed(str(error))
    content: list[types.ContentBlock] = [tools.text(report.outcome(run))]
    if run.ok:
        content.append(tools.text(run.message))
    return types.CallToolResult(
        content=content, structured_content=report.outcome_data(run), is_error=not run.ok
    )


def serve(scope: Scope) -> int | None:
    """Serve on stdin and stdout until the client disconnects (None) or a signal comes (its
    number). Commands still running then are killed, and the server exits without waiting."""
    try:
        dog: Watchdog | None = Watchdog.start()
    except OSError as error:
        reason = error.strerror or error
        logger.warning("no watchdog (%s): a command can outlive a killed server", reason)
        dog = None
    commands = Commands(dog)
    try:
        return anyio.run(_serve, build(scope, commands), commands)
    finally:
        commands.close()


async def _serve(server: Server[Any], commands: Commands) -> int | None:
    stopped: int | None = None
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal stopped
            with anyio.open_signal_receiver(*STOP_SIGNALS) as received:
                async for number in received:
                    stopped = number
                    commands.stop()
                    group.cancel_scope.cancel()
                    return

        group.start_soon(watch)
        async with stdio.streams() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        commands.stop()
        group.cancel_scope.cancel()
    return stopped
