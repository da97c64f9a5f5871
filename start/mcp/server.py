"""The MCP server of `start mcp`: the SDK's low-level Server on stdio, over `library`.

Every request loads the config afresh in a worker thread, because loading, trust checks and task
commands block and the SDK runs requests concurrently. A failed task command is a tool result with
isError; a bad request is an MCP error and never stops the server. Logs go to stderr: stdout is the
protocol's channel (and `stdio_server` points file descriptor 1 at stderr while it serves).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final, ParamSpec, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from start import __version__
from start.config.model import Task
from start.errors import StartError
from start.mcp import library, report
from start.mcp.library import RequestError, Scope
from start.params import TASK_NAME_ARGUMENT

LIST_TASKS: Final = "list_tasks"
RUN_TASK: Final = "run_task"
MIME: Final = "text/markdown"
STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

logger = logging.getLogger("start.mcp")

Context = ServerRequestContext[Any, Any]
P = ParamSpec("P")
R = TypeVar("R")


async def _off_loop(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run blocking work in a worker thread, so other requests go on meanwhile."""
    return await anyio.to_thread.run_sync(functools.partial(function, *args, **kwargs))


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


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _failed(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(message)], is_error=True)


def _prompt(task: Task) -> types.Prompt:
    return types.Prompt(
        name=task.name,
        description=task.description,
        arguments=[
            types.PromptArgument(name=a.name, description=a.description, required=a.required)
            for a in library.arguments(task)
        ],
    )


def _tools(tasks: list[Task]) -> list[types.Tool]:
    """The task tools; their schemas are rebuilt on every request from the offered tasks."""
    properties: dict[str, Any] = {
        TASK_NAME_ARGUMENT: {
            "type": "string",
            "enum": [task.name for task in tasks],
            "description": "The task to run: one of the names list_tasks returns.",
        }
    }
    for task in tasks:
        for argument in library.arguments(task):
            properties.setdefault(
                argument.name, {"type": "string", "description": argument.description}
            )
    return [
        types.Tool(
            name=LIST_TASKS,
            description=(
                "List the user's start tasks for this project: each name with its description, "
                "and a status message. Run one with run_task."
            ),
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            output_schema=report.LIST_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name=RUN_TASK,
            description=(
                "Run one of the user's start tasks: compose it as `start task NAME INSTRUCTIONS` "
                "does, which runs the task's command. The first text is the command's result: "
                "\"Task 'NAME' completed successfully. Output:\\n[stdout]\\nError Output:\\n"
                "[stderr]\" or \"Task 'NAME' failed. Output:\\n[stdout]\\nError Output:\\n"
                '[stderr]\\nExit Code: [code]\\nError: [message]". On success the second text '
                "is the composed prompt: follow it."
            ),
            input_schema={
                "type": "object",
                "properties": properties,
                "required": [TASK_NAME_ARGUMENT],
                "additionalProperties": False,
            },
            output_schema=report.RUN_SCHEMA,
        ),
    ]


def build(scope: Scope) -> Server[Any]:
    """The server for one directory; it reads nothing until a request comes."""

    @_guarded
    async def list_prompts(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        seen = await _off_loop(library.view, scope)
        return types.ListPromptsResult(prompts=[_prompt(t) for t in library.listed(seen.config)])

    @_guarded
    async def get_prompt(
        ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        composed = await _off_loop(library.compose, scope, params.name, params.arguments or {})
        message = types.PromptMessage(role="user", content=_text(composed.message))
        return types.GetPromptResult(description=composed.task.description, messages=[message])

    @_guarded
    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        seen = await _off_loop(library.view, scope)
        tasks = library.listed(seen.config)
        # No task offered: the task tools are not registered (seed 000), and nothing fails.
        return types.ListToolsResult(tools=_tools(tasks) if tasks else [])

    @_guarded
    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in (LIST_TASKS, RUN_TASK):
            raise MCPError(types.INVALID_PARAMS, f"unknown tool '{params.name}'")
        try:
            seen = await _off_loop(library.view, scope)
        except StartError as error:
            return _failed(str(error))
        tasks = library.listed(seen.config)
        if not tasks:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool '{params.name}': no task is offered, so the task tools are not "
                "registered",
            )
        if params.name == LIST_TASKS:
            data = report.listing(tasks, scope.workdir, seen.note)
            text = json.dumps(data, ensure_ascii=False)
            return types.CallToolResult(content=[_text(text)], structured_content=data)
        return await _run_task(scope, params.arguments or {})

    @_guarded
    async def list_resources(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        seen = await _off_loop(library.view, scope)
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
        text = await _off_loop(library.read, scope, params.uri)
        contents = types.TextResourceContents(uri=params.uri, text=text, mime_type=MIME)
        return types.ReadResourceResult(contents=[contents])

    return Server(
        "start",
        version=__version__,
        instructions=library.instructions(scope),
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )


async def _run_task(scope: Scope, arguments: Mapping[str, Any]) -> types.CallToolResult:
    name = arguments.get(TASK_NAME_ARGUMENT)
    if not isinstance(name, str):
        return _failed("run_task needs task_name: a string, one of the names list_tasks returns")
    values = {key: value for key, value in arguments.items() if key != TASK_NAME_ARGUMENT}
    try:
        run = await _off_loop(library.run, scope, name, values)
    except StartError as error:
        return _failed(str(error))
    content: list[types.ContentBlock] = [_text(report.outcome(run))]
    if run.ok:
        content.append(_text(run.message))
    return types.CallToolResult(
        content=content, structured_content=report.outcome_data(run), is_error=not run.ok
    )


def serve(scope: Scope) -> int | None:
    """Serve on stdin and stdout until the client disconnects (None) or a signal comes (its
    number). Commands still running then finish or reach their timeout first."""
    return anyio.run(_serve, build(scope))


async def _serve(server: Server[Any]) -> int | None:
    stopped: int | None = None
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal stopped
            with anyio.open_signal_receiver(*STOP_SIGNALS) as received:
                async for number in received:
                    stopped = number
                    group.cancel_scope.cancel()
                    return

        group.start_soon(watch)
        async with (
            _stdin() as lines,
            stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write),
        ):
            await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()
    return stopped


@asynccontextmanager
async def _stdin() -> AsyncIterator[MemoryObjectReceiveStream[str]]:
    """The lines of stdin, read by a daemon thread, for `stdio_server` (which only iterates them).

    The SDK reads stdin in a worker thread that a cancelled server waits for: a signal could not
    stop a server whose client keeps stdin open (on a terminal, not before Enter). A daemon thread
    is left behind instead. File descriptor 0 points at /dev/null meanwhile, as the SDK does.
    """
    fd = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    send, receive = anyio.create_memory_object_stream[str]()
    try:
        async with anyio.from_thread.BlockingPortal() as portal:
            pump = threading.Thread(
                target=_pump, args=(fd, send, portal), name="start mcp stdin", daemon=True
            )
            pump.start()
            try:
                yield receive
            finally:
                await portal.stop(cancel_remaining=True)
    finally:
        os.dup2(fd, 0)  # the thread may still read `fd`: it is left open until the process ends


def _pump(
    fd: int, send: MemoryObjectSendStream[str], portal: anyio.from_thread.BlockingPortal
) -> None:
    pending = b""
    try:
        while chunk := os.read(fd, 65536):
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                portal.call(send.send, line.decode("utf-8", "replace"))
        if pending:
            portal.call(send.send, pending.decode("utf-8", "replace"))
        portal.call(send.close)
    except Exception:  # the server stopped (portal gone, stream closed): nothing to do
        return
