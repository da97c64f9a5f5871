"""`start mcp`'s runs of other agents: ask_agent and ask_agents, whose call waits for them and is
told their progress, and ask_start's asynchronous runs, which ask_result and ask_cancel find by
id. Each run's agents' states are one record (start.ui.progress), read for progress notifications
and for ask_result, as the terminal's live board reads it for `--print -a A,B`.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Awaitable, Mapping
from typing import Any, Final, TypeVar

import anyio
import mcp.types as types
from mcp.server import ServerRequestContext

from start import runs as records
from start.base.errors import StartError
from start.compose.ask import Ask
from start.mcp import asking, report, tools
from start.mcp.owners import Commands, beside, off_loop
from start.proc.groups import Job, Request, Workers
from start.runs import Run, rules
from start.runs.rules import RequestError, Scope
from start.ui.progress import Progress

# Seconds between progress notifications while no agent's state changes.
PROGRESS_EVERY: Final = 2.0
# Asynchronous runs: how many may run at once, and how many ended ones are kept for ask_result.
RUNS_AT_ONCE: Final = 16
RUNS_KEPT: Final = 64

logger = logging.getLogger("start.mcp")

Context = ServerRequestContext[Any, Any]
R = TypeVar("R")


async def ask(
    ctx: Context, scope: Scope, commands: Commands, tool: str, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    """ask_agent and ask_agents: run the agents to their end, with progress notifications when
    the client asked for them; a cancelled call kills the agents' process groups."""
    try:
        asked = await off_loop(tools.ask_call, scope, tool, arguments)
    except StartError as error:
        return tools.failed(str(error))
    progress = Progress(asked.agents)
    try:
        results = await with_progress(
            ctx,
            progress,
            commands.run(lambda owner: asking.run(scope, asked, owner, progress.update)),
        )
    except StartError as error:
        return tools.failed(str(error))
    if tool == tools.ASK_AGENT:
        (result,) = results
        return types.CallToolResult(
            content=[tools.text(report.answer(result))],
            structured_content=records.data(result),
            is_error=not result.ok,
        )
    return types.CallToolResult(
        content=[tools.text(report.answers(results))],
        structured_content={"results": [records.data(r) for r in results]},
        is_error=not any(result.ok for result in results),
    )


def states(progress: Progress) -> list[dict[str, str]]:
    """Each agent's state, as ask_result and ask_cancel give them."""
    return [{"agent": job.name, "state": job.state} for job in progress.jobs()]


def message(progress: Progress) -> str:
    """`claude: running, gemini: waiting (12 s)`: each agent's state, and the run's time."""
    said = ", ".join(f"{one['agent']}: {one['state']}" for one in states(progress))
    return f"{said} ({int(progress.elapsed())} s)"


async def with_progress(ctx: Context, progress: Progress, work: Awaitable[R]) -> R:
    """`await work`, telling the client the time elapsed and each agent's state meanwhile (when
    its request asked for progress; the SDK sends nothing otherwise): at once, on each change,
    and every PROGRESS_EVERY seconds."""

    async def tell() -> None:
        told = -1.0
        last = -PROGRESS_EVERY
        while True:
            now = progress.elapsed()
            if progress.take_change() or now - last >= PROGRESS_EVERY:
                # Progress must grow with every notification.
                told = max(round(now, 1), round(told + 0.1, 1))
                last = now
                await ctx.session.report_progress(told, message=message(progress))
            await anyio.sleep(0.2)

    return await beside(work, tell)


class _Run:
    """One asynchronous run (ask_start): its agents' states, and its results once it ended."""

    def __init__(self, id_: str, asked: Ask) -> None:
        self.id = id_
        self.ask = asked
        self.job: Job[None] | None = None  # once it is submitted
        self.progress = Progress(asked.agents)
        self.done = threading.Event()
        self.results: list[Run] = []
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
            "elapsed": round(self.progress.elapsed(), 1),
            "agents": states(self.progress),
            "error": self.error,
            "results": [records.data(r) for r in self.results],
        }

    def reply(self) -> types.CallToolResult:
        data = self.status()
        if data["state"] == "running":
            text = f"Run {self.id} is running: {message(self.progress)}. Call ask_result again."
        elif data["state"] == "done":
            text = report.answers(self.results)
        elif data["state"] == "cancelled":
            text = f"Run {self.id} was cancelled; its agents' processes were killed."
        else:
            text = f"Run {self.id} failed: {self.error}"
        return types.CallToolResult(
            content=[tools.text(text)], structured_content=data, is_error=data["state"] == "failed"
        )


class Runs:
    """The asynchronous runs of one server: ask_start starts one as a job of workers of their
    own (RUNS_AT_ONCE, each in a thread of its own), whose process groups the server's registry
    owns, as it owns those of a request."""

    def __init__(self, scope: Scope, commands: Commands) -> None:
        self.scope = scope
        self.workers = Workers(commands.groups, RUNS_AT_ONCE, "start mcp ask_start")
        self.lock = threading.Lock()
        self.runs: dict[str, _Run] = {}
        self.count = 0

    async def start(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        try:
            asked = await off_loop(tools.ask_call, self.scope, tools.ASK_START, arguments)
            await off_loop(rules.vet, self.scope, asked)
        except StartError as error:
            return tools.failed(str(error))
        with self.lock:
            running = [run for run in self.runs.values() if not run.done.is_set()]
            if len(running) >= RUNS_AT_ONCE:
                return tools.failed(
                    f"{len(running)} runs are running, the most at once; wait for one with "
                    "ask_result, or stop one with ask_cancel"
                )
            ended = [key for key, run in self.runs.items() if run.done.is_set()]
            for key in ended[: max(0, len(self.runs) - RUNS_KEPT + 1)]:
                del self.runs[key]
            self.count += 1
            run = _Run(f"ask-{self.count}", asked)
            self.runs[run.id] = run
            run.job = self.workers.submit(functools.partial(self._work, run))
        return run.reply()

    def _work(self, run: _Run, owner: Request) -> None:
        try:
            run.results = asking.run(self.scope, run.ask, owner, run.progress.update)
        except StartError as error:
            run.error = str(error)
        except Exception as error:
            logger.exception("%s failed", run.id)
            run.error = f"internal error: {type(error).__name__}: {error}"
        finally:
            run.done.set()

    def _find(self, arguments: Mapping[str, Any]) -> _Run:
        """The run that a checked ask_result or ask_cancel call names."""
        id_ = arguments["id"]
        with self.lock:
            run = self.runs.get(id_)
            known = list(self.runs)
        if run is None:
            listing = f"runs: {', '.join(known)}" if known else "no run was started"
            raise RequestError(f"no run '{id_}'; {listing}")
        return run

    async def result(self, ctx: Context, arguments: Mapping[str, Any]) -> types.CallToolResult:
        found = tools.given(arguments)
        try:
            tools.check(tools.ASK_RESULT, tools.result_input(), found)
            run = self._find(found)
        except RequestError as error:
            return tools.failed(str(error))
        wait = found.get("wait_seconds", tools.WAIT_MOST)

        async def ended() -> None:
            deadline = time.monotonic() + wait
            while not run.done.is_set() and time.monotonic() < deadline:
                await anyio.sleep(0.1)

        await with_progress(ctx, run.progress, ended())
        return run.reply()

    async def cancel(self, arguments: Mapping[str, Any]) -> types.CallToolResult:
        found = tools.given(arguments)
        try:
            tools.check(tools.ASK_CANCEL, tools.cancel_input(), found)
            run = self._find(found)
        except RequestError as error:
            return tools.failed(str(error))
        if not run.done.is_set():
            run.cancelled = True
            assert run.job is not None
            self.workers.cancel(run.job)
            if run.job.future.cancelled():  # it had not started, and never will
                run.done.set()
            # The agents' threads end once their groups are gone.
            deadline = time.monotonic() + 10
            while not run.done.is_set() and time.monotonic() < deadline:
                await anyio.sleep(0.05)
        return run.reply()
