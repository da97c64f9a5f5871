"""The MCP server of `start mcp`: the SDK's low-level Server on stdio, over `library`.

Every request loads the config afresh in a worker thread, because loading, trust checks and task
commands block and the SDK runs requests concurrently. Requests that may run commands take their
threads from a limiter of their own, so listings never wait behind them. A failed task command is
a tool result with isError; a bad request is an MCP error and never stops the server. Logs go to
stderr: stdout is the protocol's channel (and `stdio_server` points file descriptor 1 at stderr
while it serves).

Every command's process group has an owner until it is gone (`Commands`): a cancelled request's
groups are killed, the server kills all of them when it stops, and a watchdog process
(start.watchdog) kills those left when the server itself is killed. The agents that the asking
tools run (`asking`) are such groups too, whether their call waits for them (ask_agent,
ask_agents) or not (ask_start).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from start import __version__, headless
from start.config import schema
from start.config.model import Task
from start.errors import StartError
from start.mcp import asking, board, library, report, taskfile
from start.mcp.library import RequestError, Scope
from start.params import TASK_NAME_ARGUMENT
from start.shell import STOP_SIGNALS, kill_group
from start.watchdog import Watchdog

if TYPE_CHECKING:
    from start.shell import Owner

LIST_TASKS: Final = "list_tasks"
RUN_TASK: Final = "run_task"
ASK_AGENT: Final = "ask_agent"
ASK_AGENTS: Final = "ask_agents"
ASK_START: Final = "ask_start"
ASK_RESULT: Final = "ask_result"
ASK_CANCEL: Final = "ask_cancel"
# Seconds between progress notifications while no agent's state changes.
PROGRESS_EVERY: Final = 2.0
# The most seconds ask_result waits for a run, under the shortest client timeout (Codex: 60 s).
WAIT_MOST: Final = 50
# Asynchronous runs: how many may run at once, and how many ended ones are kept for ask_result.
RUNS_AT_ONCE: Final = 16
RUNS_KEPT: Final = 64
MIME: Final = "text/markdown"
# The most bytes one message may take on stdin, its newline not counted.
MESSAGE_LIMIT: Final = 16 << 20
# How many requests that may run commands (run_task, prompts/get, resources/read) run at once;
# more wait their turn, and listings never wait for them.
COMMAND_CALLS: Final = 16

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


def _asking_tools(agents: list[str]) -> list[types.Tool]:
    """ask_agent, ask_agents, ask_start, ask_result and ask_cancel, for the agents offered."""
    what: dict[str, Any] = {
        "prompt": {
            "type": "string",
            "description": "The text to ask, composed as `start prompt TEXT` does (with the "
            "user's required contexts and default role). Give this or task.",
        },
        "task": {
            "type": "string",
            "description": "One of the user's tasks, as list_tasks names them, composed as "
            "`start task NAME INSTRUCTIONS` does (its command runs). Give this or prompt.",
        },
        "instructions": {
            "type": "string",
            "description": "With task: the task's {instructions}.",
        },
        "params": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "With task: values of the task's parameters, by name.",
        },
        "model": {
            "type": "string",
            "description": "A model alias or id of the agent; default: the agent's default.",
        },
        "permissions": {
            "type": "string",
            "enum": list(schema.LEVELS),
            "description": "What the agent may do; default: the task's level, else read-only. "
            "A level above what the user's config allows is refused.",
        },
    }
    one = {"type": "string", "enum": agents, "description": "The agent to ask."}
    several = {
        "type": "array",
        "items": {"type": "string", "enum": agents},
        "minItems": 1,
        "description": "The agents to ask, at once; the same agent twice runs twice.",
    }

    def schema_of(who: str, kind: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {who: kind, **what},
            "required": [who],
            "additionalProperties": False,
        }

    run_id = {"type": "string", "description": "The id ask_start returned."}
    return [
        types.Tool(
            name=ASK_AGENT,
            description=(
                "Ask another coding agent: run it headless on a prompt or one of the user's "
                "tasks, as `start task NAME --print` does, and return its answer. The structured "
                "content is `start --print --json`'s object. Runs take minutes; where the client "
                "may cut a call off sooner, use ask_start."
            ),
            input_schema=schema_of("agent", one),
            output_schema=report.RESULT_SCHEMA,
        ),
        types.Tool(
            name=ASK_AGENTS,
            description=(
                "Ask several agents the same prompt or task at once, and return every answer, "
                "each under a heading with the agent's name. Structured content: {results: "
                "[one `start --print --json` object per agent]}."
            ),
            input_schema=schema_of("agents", several),
            output_schema=report.RESULTS_SCHEMA,
        ),
        types.Tool(
            name=ASK_START,
            description=(
                "Start asking one or more agents, as ask_agents does, without waiting: returns "
                "the run's id at once. Then call ask_result with the id until its state is not "
                "running, or ask_cancel to stop it."
            ),
            input_schema=schema_of("agents", several),
            output_schema=report.STATUS_SCHEMA,
        ),
        types.Tool(
            name=ASK_RESULT,
            description=(
                "The state of a run ask_start started; waits up to wait_seconds for it to end, "
                "and returns the answers once it has."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "id": run_id,
                    "wait_seconds": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": WAIT_MOST,
                        "description": f"How long to wait for the end (default and most: "
                        f"{WAIT_MOST}).",
                    },
                },
                "required": ["id"],
                "additionalProperties": False,
            },
            output_schema=report.STATUS_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name=ASK_CANCEL,
            description="Stop a run that ask_start started: its agents' processes are killed.",
            input_schema={
                "type": "object",
                "properties": {"id": run_id},
                "required": ["id"],
                "additionalProperties": False,
            },
            output_schema=report.STATUS_SCHEMA,
        ),
    ]


def build(scope: Scope, commands: Commands | None = None) -> Server[Any]:
    """The server for one directory; it reads nothing until a request comes.

    `commands` owns the process groups of the commands that requests run (a new one if None).
    """
    if commands is None:
        commands = Commands()
    runs = Runs(scope, commands)
    boards = board.Tools(scope, wait_most=WAIT_MOST, progress_every=PROGRESS_EVERY)
    taskfiles = taskfile.Tools(scope)

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
        values = params.arguments or {}
        composed = await commands.run(
            lambda owner: library.compose(scope, params.name, values, owner)
        )
        message = types.PromptMessage(role="user", content=_text(composed.message))
        return types.GetPromptResult(description=composed.task.description, messages=[message])

    @_guarded
    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        seen = await _off_loop(library.view, scope)
        tasks = library.listed(seen.config)
        agents, _ = await _off_loop(asking.offered, scope, seen.config)
        # No task offered: the task tools are not registered (seed 000), and nothing fails. No
        # agent may be asked (too deep, or none on PATH): no asking tools.
        tools = _tools(tasks) if tasks else []
        tools += _asking_tools(agents) if agents else []
        tools += await taskfiles.listed()
        return types.ListToolsResult(tools=tools + boards.listed())

    @_guarded
    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        if boards.offers(params.name):
            return await boards.call(ctx, params.name, arguments)
        if taskfiles.offers(params.name):
            return await taskfiles.call(params.name, arguments, commands.run)
        if params.name in (ASK_AGENT, ASK_AGENTS):
            return await _ask(ctx, scope, commands, arguments, several=params.name == ASK_AGENTS)
        if params.name == ASK_START:
            return await runs.start(arguments)
        if params.name == ASK_RESULT:
            return await runs.result(ctx, arguments)
        if params.name == ASK_CANCEL:
            return await runs.cancel(arguments)
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
            agents, closed = await _off_loop(asking.offered, scope, seen.config)
            data = report.listing(tasks, scope.workdir, seen.note, agents, closed)
            text = json.dumps(data, ensure_ascii=False)
            return types.CallToolResult(content=[_text(text)], structured_content=data)
        return await _run_task(scope, commands, arguments)

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
        text = await commands.run(lambda owner: library.read(scope, params.uri, owner))
        contents = types.TextResourceContents(uri=params.uri, text=text, mime_type=MIME)
        return types.ReadResourceResult(contents=[contents])

    return Server(
        "start",
        version=__version__,
        instructions=library.instructions(scope)
        + asking.instructions(scope)
        + taskfile.instructions(scope),
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )


async def _run_task(
    scope: Scope, commands: Commands, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    name = arguments.get(TASK_NAME_ARGUMENT)
    if not isinstance(name, str):
        return _failed("run_task needs task_name: a string, one of the names list_tasks returns")
    values = {key: value for key, value in arguments.items() if key != TASK_NAME_ARGUMENT}
    try:
        run = await commands.run(lambda owner: library.run(scope, name, values, owner))
    except StartError as error:
        return _failed(str(error))
    content: list[types.ContentBlock] = [_text(report.outcome(run))]
    if run.ok:
        content.append(_text(run.message))
    return types.CallToolResult(
        content=content, structured_content=report.outcome_data(run), is_error=not run.ok
    )


# --- asking agents ---------------------------------------------------------------------------


async def _ask(
    ctx: Context,
    scope: Scope,
    commands: Commands,
    arguments: Mapping[str, Any],
    *,
    several: bool,
) -> types.CallToolResult:
    """ask_agent and ask_agents: run the agents to their end, with progress notifications when
    the client asked for them; a cancelled call kills the agents' process groups."""
    try:
        ask = asking.check(arguments, several=several)
    except RequestError as error:
        return _failed(str(error))
    board = _Board(ask.agents)
    try:
        results = await _with_progress(
            ctx, board, commands.run(lambda owner: asking.run(scope, ask, owner, board.update))
        )
    except StartError as error:
        return _failed(str(error))
    if not several:
        (result,) = results
        return types.CallToolResult(
            content=[_text(report.answer(result))],
            structured_content=headless.result_data(result),
            is_error=not result.ok,
        )
    return types.CallToolResult(
        content=[_text(report.answers(results))],
        structured_content={"results": [headless.result_data(r) for r in results]},
        is_error=not any(result.ok for result in results),
    )


class _Board:
    """Each asked agent's state, told from the threads that run them (agentrun.run_agents'
    on_state), read by the event loop for progress notifications and ask_result."""

    def __init__(self, agents: tuple[str, ...]) -> None:
        self.agents = agents
        self.states = ["waiting"] * len(agents)
        self.began = time.monotonic()
        self.lock = threading.Lock()
        self.changed = True

    def update(self, index: int, state: str, elapsed: float) -> None:
        with self.lock:
            self.states[index] = state
            self.changed = True

    def take_change(self) -> bool:
        with self.lock:
            changed, self.changed = self.changed, False
            return changed

    def elapsed(self) -> float:
        return time.monotonic() - self.began

    def each(self) -> list[dict[str, str]]:
        with self.lock:
            return [
                {"agent": agent, "state": state}
                for agent, state in zip(self.agents, self.states, strict=True)
            ]

    def message(self) -> str:
        """`claude: running, gemini: waiting (12 s)`"""
        states = ", ".join(f"{one['agent']}: {one['state']}" for one in self.each())
        return f"{states} ({int(self.elapsed())} s)"


async def _with_progress(ctx: Context, board: _Board, work: Awaitable[R]) -> R:
    """`await work`, telling the client the time elapsed and each agent's state meanwhile (when
    its request asked for progress; the SDK sends nothing otherwise): at once, on each change,
    and every PROGRESS_EVERY seconds."""

    async def tell() -> None:
        told = -1.0
        last = -PROGRESS_EVERY
        while True:
            now = board.elapsed()
            if board.take_change() or now - last >= PROGRESS_EVERY:
                # Progress must grow with every notification.
                told = max(round(now, 1), round(told + 0.1, 1))
                last = now
                await ctx.session.report_progress(told, message=board.message())
            await anyio.sleep(0.2)

    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(tell)
        try:
            result = await work
        except Exception as error:  # raised as itself, not in the task group's ExceptionGroup
            failure = error
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


class _Run:
    """One asynchronous run (ask_start): its agents' states, and its results once it ended."""

    def __init__(self, id_: str, ask: asking.Ask, request: _Request) -> None:
        self.id = id_
        self.ask = ask
        self.request = request
        self.board = _Board(ask.agents)
        self.done = threading.Event()
        self.results: list[headless.Result] = []
        self.error: str | None = None
        self.cancelled = False

    def status(self) -> dict[str, Any]:
        if not self.done.is_set():
            state = "running"
        else:
            state = "cancelled" if self.cancelled else "failed" if self.error else "done"
        return {
            "id": self.id,
            "state": state,
            "elapsed": round(self.board.elapsed(), 1),
            "agents": self.board.each(),
            "error": self.error,
            "results": [headless.result_data(r) for r in self.results],
        }

    def reply(self) -> types.CallToolResult:
        data = self.status()
        if data["state"] == "running":
            text = f"Run {self.id} is running: {self.board.message()}. Call ask_result again."
        elif data["state"] == "done":
            text = report.answers(self.results)
        elif data["state"] == "cancelled":
            text = f"Run {self.id} was cancelled; its agents' processes were killed."
        else:
            text = f"Run {self.id} failed: {self.error}"
        return types.CallToolResult(
            content=[_text(text)], structured_content=data, is_error=data["state"] == "failed"
        )


class Runs:
    """The asynchronous runs of one server: ask_start starts one in a thread of its own, whose
    process groups `commands` owns, as it owns those of a request."""

    def __init__(self, scope: Scope, commands: Commands) -> None:
        self.scope = scope
        self.commands = commands
        self.lock = threading.Lock()
        self.runs: dict[str, _Run] = {}
        self.count = 0

    async def start(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        try:
            ask = asking.check(arguments, several=True)
            await _off_loop(asking.vet, self.scope, ask)
        except StartError as error:
            return _failed(str(error))
        with self.lock:
            running = [run for run in self.runs.values() if not run.done.is_set()]
            if len(running) >= RUNS_AT_ONCE:
                return _failed(
                    f"{len(running)} runs are running, the most at once; wait for one with "
                    "ask_result, or stop one with ask_cancel"
                )
            ended = [key for key, run in self.runs.items() if run.done.is_set()]
            for key in ended[: max(0, len(self.runs) - RUNS_KEPT + 1)]:
                del self.runs[key]
            self.count += 1
            run = _Run(f"ask-{self.count}", ask, _Request(self.commands))
            self.runs[run.id] = run
        threading.Thread(
            target=self._work, args=(run,), name=f"start mcp {run.id}", daemon=True
        ).start()
        return run.reply()

    def _work(self, run: _Run) -> None:
        try:
            run.results = asking.run(self.scope, run.ask, run.request, run.board.update)
        except StartError as error:
            run.error = str(error)
        except Exception as error:
            logger.exception("%s failed", run.id)
            run.error = f"internal error: {type(error).__name__}: {error}"
        finally:
            run.done.set()

    def _find(self, arguments: Mapping[str, Any]) -> _Run:
        id_ = arguments.get("id")
        with self.lock:
            run = self.runs.get(id_) if isinstance(id_, str) else None
            known = list(self.runs)
        if run is None:
            listing = f"runs: {', '.join(known)}" if known else "no run was started"
            raise RequestError(f"no run '{id_}'; {listing}")
        return run

    async def result(self, ctx: Context, arguments: Mapping[str, Any]) -> types.CallToolResult:
        try:
            run = self._find(arguments)
        except RequestError as error:
            return _failed(str(error))
        wait = arguments.get("wait_seconds", WAIT_MOST)
        if not isinstance(wait, int) or isinstance(wait, bool) or not 0 <= wait <= WAIT_MOST:
            return _failed(f"'wait_seconds' must be a whole number from 0 to {WAIT_MOST}")

        async def ended() -> None:
            deadline = time.monotonic() + wait
            while not run.done.is_set() and time.monotonic() < deadline:
                await anyio.sleep(0.1)

        await _with_progress(ctx, run.board, ended())
        return run.reply()

    async def cancel(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        try:
            run = self._find(arguments)
        except RequestError as error:
            return _failed(str(error))
        if not run.done.is_set():
            run.cancelled = True
            self.commands.kill(run.request)
            # The agents' threads end once their groups are gone.
            deadline = time.monotonic() + 10
            while not run.done.is_set() and time.monotonic() < deadline:
                await anyio.sleep(0.05)
        return run.reply()


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
        # `stdio_server` only writes: `_stdin` reads stdin, and answers what it cannot pass on.
        async with (
            stdio_server(stdin=cast("anyio.AsyncFile[str]", _NoLines())) as (unread, write),
            _stdin(write.send) as read,
        ):
            unread.close()
            await server.run(read, write, server.create_initialization_options())
        commands.stop()
        group.cancel_scope.cancel()
    return stopped


# --- the commands' process groups -----------------------------------------------------------


class Commands:
    """The process groups of the commands that requests run, each with its request (shell.Owner).

    A cancelled request's groups are killed at once, and after `stop` every group is, including
    those that start later. The watchdog is told of each group, for when the server is killed.
    """

    def __init__(self, watchdog: Watchdog | None = None) -> None:
        self.lock = threading.Lock()
        self.live: dict[int, _Request] = {}  # process group id -> its request
        self.stopped = False
        self.watchdog = watchdog
        self.limiter = anyio.CapacityLimiter(COMMAND_CALLS)

    async def run(self, work: Callable[[Owner], R]) -> R:
        """`work(owner)` in a worker thread, COMMAND_CALLS at most at once.

        Cancelled (the client cancelled the request, or the server stops), it kills the groups of
        the commands that `work` runs and returns at once; the thread then ends on its own.
        """
        request = _Request(self)
        try:
            return await anyio.to_thread.run_sync(
                work, request, limiter=self.limiter, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            self.kill(request)
            raise

    def adopt(self, request: _Request, pgid: int) -> None:
        with self.lock:
            self.live[pgid] = request
            if self.watchdog is not None:
                self.watchdog.adopt(pgid)
            if self.stopped or request.killed:
                kill_group(pgid)

    def release(self, pgid: int) -> None:
        with self.lock:
            del self.live[pgid]
            if self.watchdog is not None:
                self.watchdog.release(pgid)

    def kill(self, request: _Request) -> None:
        with self.lock:
            request.killed = True
            for pgid in [pgid for pgid, owner in self.live.items() if owner is request]:
                kill_group(pgid)

    def stop(self) -> None:
        """Kill every group, now and from now on."""
        with self.lock:
            self.stopped = True
            for pgid in self.live:
                kill_group(pgid)

    def close(self) -> None:
        """Stop, and let the watchdog go: it kills what is left, which is no longer running."""
        self.stop()
        with self.lock:
            watchdog, self.watchdog = self.watchdog, None
        if watchdog is not None:
            watchdog.close()


class _Request:
    """shell.Owner for the commands of one request."""

    def __init__(self, commands: Commands) -> None:
        self.commands = commands
        self.killed = False

    def adopt(self, pgid: int) -> None:
        self.commands.adopt(self, pgid)

    def release(self, pgid: int) -> None:
        self.commands.release(pgid)


# --- stdin ----------------------------------------------------------------------------------


Reply = Callable[[SessionMessage], Awaitable[None]]


class _NoLines:
    """An empty stdin for `stdio_server`, so that it claims only stdout."""

    def __aiter__(self) -> _NoLines:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


@asynccontextmanager
async def _stdin(
    reply: Reply,
) -> AsyncIterator[MemoryObjectReceiveStream[SessionMessage | Exception]]:
    """The messages on stdin, read and parsed by a daemon thread, which sends its own error
    replies (`_parse`) with `reply`.

    The SDK reads stdin in a worker thread that a cancelled server waits for: a signal could not
    stop a server whose client keeps stdin open (on a terminal, not before Enter). A daemon thread
    is left behind instead. File descriptor 0 points at /dev/null meanwhile, as the SDK does.
    """
    fd = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception]()
    try:
        async with anyio.from_thread.BlockingPortal() as portal:
            pump = threading.Thread(
                target=_pump, args=(fd, send, reply, portal), name="start mcp stdin", daemon=True
            )
            pump.start()
            try:
                yield receive
            finally:
                await portal.stop(cancel_remaining=True)
                send.close()
    finally:
        os.dup2(fd, 0)  # the thread may still read `fd`: it is left open until the process ends


def _pump(
    fd: int,
    send: MemoryObjectSendStream[SessionMessage | Exception],
    reply: Reply,
    portal: anyio.from_thread.BlockingPortal,
) -> None:
    lines = Lines()
    try:
        while chunk := os.read(fd, 65536):
            for line, size in lines.feed(chunk):
                _deliver(_parse(line, size), send, reply, portal)
        rest = lines.rest()
        if rest is not None:
            _deliver(_parse(*rest), send, reply, portal)
        portal.call(send.close)
    except Exception:  # the server stopped (portal gone, stream closed): nothing to do
        return


def _deliver(
    parsed: SessionMessage | types.JSONRPCError | None,
    send: MemoryObjectSendStream[SessionMessage | Exception],
    reply: Reply,
    portal: anyio.from_thread.BlockingPortal,
) -> None:
    if isinstance(parsed, SessionMessage):
        portal.call(send.send, parsed)
    elif parsed is not None:
        logger.debug("refused a message: %s", parsed.error.message)
        portal.call(reply, SessionMessage(parsed))


class Lines:
    """Bytes split into lines, in time linear in their length.

    A line over MESSAGE_LIMIT keeps only its first HEAD bytes (where its id is), and its size.
    """

    HEAD: Final = 4096

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def feed(self, chunk: bytes) -> Iterator[tuple[bytes, int]]:
        """Each line that `chunk` completes, without its newline, and its size."""
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._keep(chunk[start:end])
            yield self._take()
            start = end + 1
        self._keep(chunk[start:])

    def rest(self) -> tuple[bytes, int] | None:
        """The last line, when the input does not end with a newline."""
        return self._take() if self.size else None

    def _keep(self, piece: bytes) -> None:
        if self.size <= MESSAGE_LIMIT:
            self.parts.append(piece)
            if self.size + len(piece) > MESSAGE_LIMIT:
                self.parts = [b"".join(self.parts)[: self.HEAD]]
        self.size += len(piece)

    def _take(self) -> tuple[bytes, int]:
        line, size = b"".join(self.parts), self.size
        self.parts, self.size = [], 0
        return line, size


def _parse(line: bytes, size: int) -> SessionMessage | types.JSONRPCError | None:
    """A line of stdin as a message, or the error reply to it: JSON-RPC wants every request
    answered, with the id null when its id cannot be read. None: nothing to answer."""
    if size > MESSAGE_LIMIT:
        return _refusal(
            _head_id(line),
            types.INVALID_REQUEST,
            f"Invalid Request: the message has {size:,} bytes, over the limit of "
            f"{MESSAGE_LIMIT:,} bytes",
        )
    text = line.decode("utf-8", "replace")
    if not text.strip():
        return None
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        return _refused(text, invalid=True)
    # The SDK reads a request whose id is null or not a string or integer as a notification,
    # which gets no answer.
    if isinstance(message, types.JSONRPCNotification) and '"id"' in text:
        refused = _refused(text, invalid=False)
        if refused is not None:
            return refused
    return SessionMessage(message)


def _refused(text: str, *, invalid: bool) -> types.JSONRPCError | None:
    """Why `text` is not a valid message, as the reply. None for a response, which is never
    answered, and for a message with no fault named here unless the SDK found it `invalid`."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return _refusal(None, types.PARSE_ERROR, "Parse error: the message is not valid JSON")
    if not isinstance(body, dict):
        return _refusal(None, types.INVALID_REQUEST, "Invalid Request: not a JSON object")
    id_ = body.get("id")
    if "id" in body and not _is_id(id_):
        problem = '"id" must be a string or an integer'
        return _refusal(None, types.INVALID_REQUEST, f"Invalid Request: {problem}")
    method = body.get("method")
    if method is None:
        if "result" in body or "error" in body:
            logger.debug("dropped a response that is not valid JSON-RPC")
            return None
        return _refusal(id_, types.INVALID_REQUEST, 'Invalid Request: no "method"')
    if body.get("jsonrpc") != "2.0":
        return _refusal(id_, types.INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if not isinstance(method, str):
        return _refusal(id_, types.INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    if not isinstance(body.get("params", {}), dict):
        return _refusal(id_, types.INVALID_PARAMS, 'Invalid params: "params" must be an object')
    if invalid:  # JSON to Python, not to the SDK: a lone surrogate in a string
        return _refusal(id_, types.PARSE_ERROR, "Parse error: the message is not valid JSON")
    return None


def _refusal(id_: types.RequestId | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=id_, error=types.ErrorData(code=code, message=message)
    )


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


_SPACE: Final = re.compile(r"[ \t\n\r]*")


def _head_id(head: bytes) -> types.RequestId | None:
    """The top-level "id" of a JSON object cut short, when it comes before the cut."""
    text = head.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return None
    at += 1
    try:
        while True:
            key, at = decoder.raw_decode(text, _skip(text, at))
            at = _skip(text, at)
            if not text.startswith(":", at):
                return None
            value, at = decoder.raw_decode(text, _skip(text, at + 1))
            if key == "id":
                return value if _is_id(value) else None
            at = _skip(text, at)
            if not text.startswith(",", at):
                return None
            at += 1
    except (ValueError, RecursionError):
        return None


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    assert match is not None
    return match.end()
