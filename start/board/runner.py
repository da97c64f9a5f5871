"""`start board run`: the board's ready items, run headless by agents through the path `--print`
takes, and finished from each run's evidence (docs/board.md, "Running the board").

    claim the next ready item FOR its run (before any process starts; the run's own identity,
    held by this process) -> compose and run it (pipeline.prepare, headless.run_each)
    -> record it in the history -> completed with the answer and the run's history id, or
    failed with the reason; a stop (Ctrl-C, SIGTERM) releases what it did not finish

At most `cap` runs at once (settings.print_agents), never two of one CLI together, each in a
thread of its own while this thread claims and waits. Every process group a run starts, its
task's commands included, has an owner here (`Groups`), which ends them on a stop. `run_one` is
the one place the board meets the runner and the history: when the run record changes, only it
changes. Nothing here prints: the caller is told each step (`Report`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Final

from start import board
from start.base import template
from start.base.errors import StartError, UntrustedError
from start.base.record import Record
from start.board import COMPLETED, FAILED, PENDING, Change, Holder, Item, RefusedError, RunSpec
from start.board import file as boardfile
from start.board import store as boarddb
from start.compose import pipeline, resolve
from start.mcp import asking
from start.mcp.library import Scope
from start.proc import process, shell
from start.runs import headless

# How long the runs' process groups have between SIGTERM and SIGKILL on a stop.
GRACE: Final = 5.0
# How often the runner looks for new ready items while none is, in seconds.
IDLE: Final = 0.2


class Outcome(Record):
    """What one run of an item proved: the evidence its item is finished from."""

    ok: bool  # the agent answered, in the task's output format when it has one
    answer: str
    error: str | None  # why it failed, when it did
    agent: str | None  # the agent that ran; None when nothing ran
    history: int | None  # its id in the history (`start log show ID`); None: not recorded
    # The level of its answer's words: the lowest among who shaped the run (board.cap), whatever
    # permissions the agent had; the user's own when only the user shaped it.
    level: str = board.USER_LEVEL


class Report(Record):
    """One step of the runner, for its caller to show: `claimed` (the item as claimed), perhaps
    `capped` (who shaped it holds its run below the user's level: board.cap), then `completed`,
    `failed` or `released` (the item as finished or let go), or `fenced` (the item was
    reassigned while its run ran: the run's outcome is not its end)."""

    step: str
    item: Item
    outcome: Outcome | None = None
    note: str = ""


# --- the adapter: the board's one door to composing, running and recording a run -------------


def run_one(
    request: pipeline.LaunchRequest,
    timeout: float,
    owner: shell.Owner,
    env: Mapping[str, str],
    serial: Callable[[str], contextlib.AbstractContextManager[object]],
) -> Outcome:
    """Compose, run and record one headless run, as `--print` does; its Outcome.

    The commands that compose it and the agent are owned by `owner`; `env` is added to the
    agent's environment; `serial(CLI)` is held while the agent runs. Raises what
    pipeline.prepare raises (UntrustedError included); every failure of the agent itself is an
    Outcome that is not ok. A history that cannot be written costs the run its id only.
    """
    from start.runs import history, recording
    from start.runs import store as historydb

    runner = functools.partial(shell.run_all, owner=owner)
    (prepared,) = pipeline.prepare_each(request, [None], runner=runner)
    with serial(headless.cli_of(prepared)):
        (result,) = headless.run_each([prepared], timeout, 1, env=env, owner=owner)
    try:
        recorded = historydb.id_of(recording.record(result, prepared.config.settings))
    except history.HistoryError:
        recorded = None
    return Outcome(result.ok, result.answer or "", result.error, result.agent, recorded)


# --- what an item runs ------------------------------------------------------------------------


def with_answers(text: str, answers: Sequence[tuple[Item, str]]) -> str:
    """`text` with its {answers} filled: the answer of each item it waited on, under a heading
    of its id and title, in blocked_by order. Text without {answers} is left exactly as it is;
    text with it is a template, where {{NAME}} writes a literal {NAME}."""
    if board.ANSWERS not in template.names(text):
        return text
    value = "\n\n".join(
        f"## {item.id}: {item.title}\n\n{answer.strip() or '(no answer)'}"
        for item, answer in answers
    )
    return template.fill(text, {board.ANSWERS: value})


def request_for(
    scope: Scope, spec: RunSpec, text: str, cap: board.Cap | None = None
) -> pipeline.LaunchRequest:
    """The headless launch of a run whose text (the prompt, or the task's instructions) is
    `text`, never above `cap` (board.cap: who shaped it). A run an agent asked for over MCP is
    held to what the user allows agents (asking.vet: settings.mcp_permissions,
    settings.mcp_agents, settings.mcp_depth), checked when the item is made and again before
    it runs; the user's own runs are composed as `--print` would compose them. Raises
    RequestError for a run the rules refuse."""
    request = _request(scope, spec, text)
    if cap is None:
        return request
    return request._replace(most=cap.level, most_from=cap.why)


def _request(scope: Scope, spec: RunSpec, text: str) -> pipeline.LaunchRequest:
    if spec.via == "mcp":
        assert spec.agent is not None
        values = {"instructions": text} if spec.task is not None and text.strip() else {}
        ask = asking.Ask(
            (spec.agent,),
            text if spec.task is None else None,
            spec.task,
            values,
            spec.model,
            spec.permissions,
        )
        request = asking.vet(scope, ask)
        return request._replace(selection=request.selection._replace(agent=spec.agent))
    if spec.task is not None:
        selection = resolve.Request(
            "task",
            spec.agent,
            model=spec.model,
            task=spec.task,
            instructions=(text,) if text.strip() else (),
        )
    else:
        selection = resolve.Request("prompt", spec.agent, model=spec.model, text=text)
    return pipeline.LaunchRequest(
        scope.workdir,
        selection,
        scope.use_project,
        headless=True,
        permissions=spec.permissions,
        permissions_from="the item's permissions",
    )


# --- the process groups of the runs ----------------------------------------------------------


class Groups:
    """shell.Owner of every run's process groups; after `stop`, a group that starts is ended
    at once. Its `watchdog` (start.proc.watchdog), told of each group too, ends them should `start
    board run` itself be killed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: set[int] = set()
        self.stopped = False
        self.watchdog: shell.Owner | None = None

    def adopt(self, pgid: int) -> None:
        with self.lock:
            self.live.add(pgid)
            if self.watchdog is not None:
                self.watchdog.adopt(pgid)
            if self.stopped:
                process.kill_group(pgid)

    def release(self, pgid: int) -> None:
        with self.lock:
            self.live.discard(pgid)
            if self.watchdog is not None:
                self.watchdog.release(pgid)

    def signal(self, number: int) -> None:
        with self.lock:
            self.stopped = True
            for pgid in self.live:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, number)


class _Serial:
    """One lock per CLI, so that two runs of one CLI never overlap (headless.cli_of)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.locks: dict[str, threading.Lock] = {}

    @contextlib.contextmanager
    def __call__(self, cli: str) -> Iterator[object]:
        with self.lock:
            held = self.locks.setdefault(cli, threading.Lock())
        with held:
            yield held


# --- the runner --------------------------------------------------------------------------------


class Runner:
    """Runs the ready items of one project's board (see the module)."""

    def __init__(
        self,
        scope: Scope,
        *,
        cap: int,
        timeout: float,
        told: Callable[[Report], None] = lambda report: None,
    ) -> None:
        self.scope = scope
        self.cap = max(1, cap)
        self.timeout = timeout
        self.told = told
        self.groups = Groups()
        self.serial = _Serial()
        self.stopping = False
        self.ended: list[Item] = []  # the items its runs finished, in the order they ended
        self.claimed = 0  # how many items it claimed for runs
        # The agents' environment: one level deeper, as start mcp marks the runs it starts, so
        # that an agent the board runs cannot have start run agents for it beyond mcp_depth.
        self.env = {asking.DEPTH_VARIABLE: str(scope.depth + 1)}

    def run(self, until_empty: bool) -> list[Item]:
        """Claim and run ready items, `cap` at once, until nothing is ready and nothing runs
        (`until_empty`) or for ever; the items finished. On a signal (KeyboardInterrupt,
        StoppedError) or an error that stops every run (UntrustedError), the runs are stopped
        and their items released, then it raises."""
        from start.proc import watchdog

        running: dict[Future[None], tuple[Item, Holder]] = {}
        with (
            watchdog.watching() as dog,
            boardfile.opened(self.scope.workdir) as opened,
            process.Stop() as stop,
            ThreadPoolExecutor(self.cap, thread_name_prefix="start board run") as pool,
        ):
            self.groups.watchdog = dog
            try:
                seen: int | None = None
                while True:
                    opened.sweep()
                    while len(running) < self.cap:
                        holder = board.run_holder(os.urandom(3).hex())
                        item = opened.claim_next(holder, runnable=True)
                        if item is None:
                            break
                        self.claimed += 1
                        self.told(Report("claimed", item))
                        running[pool.submit(self._work, item, holder)] = (item, holder)
                    if not running:
                        if until_empty:
                            return self.ended
                        seen = self._idle(opened, seen)
                        continue
                    done, _ = wait(running, timeout=IDLE, return_when=FIRST_COMPLETED)
                    for future in done:
                        del running[future]
                        future.result()  # raises what stops every run
            except BaseException:
                stop.hold += 1  # a second signal must not interrupt the stop
                self._stop(opened, running)
                raise

    def _idle(self, opened: boarddb.Board, seen: int | None) -> int:
        """Wait until the board changes, or a second passes (a holder may have ended)."""
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            version = opened.version()
            if seen is not None and version != seen:
                return version
            seen = version
            time.sleep(IDLE)
        return seen if seen is not None else opened.version()

    def _work(self, item: Item, holder: Holder) -> None:
        """Run one claimed item and finish it (in a thread of the pool)."""
        try:
            with boardfile.opened(self.scope.workdir, sweep=False) as opened:
                answers = opened.answers(item.blocked_by)
            assert item.run is not None
            text = item.run.prompt if item.run.prompt is not None else item.description
            fed = [found for found, _ in answers] if board.ANSWERS in template.names(text) else []
            cap = board.cap(item, fed)
            if cap is not None:
                self.told(Report("capped", item, note=f"runs at '{cap.level}' at most: {cap.why}"))
            request = request_for(self.scope, item.run, with_answers(text, answers), cap)
            outcome = run_one(request, self.timeout, self.groups, self.env, self.serial)
            if cap is not None:
                outcome = outcome._replace(level=cap.level)
        except UntrustedError:
            self._finish(item, holder, None)
            raise
        except StartError as error:
            outcome = Outcome(False, "", str(error), None, None)
        self._finish(item, holder, outcome)

    def _finish(self, item: Item, holder: Holder, outcome: Outcome | None) -> None:
        """Complete the item with the answer, fail it with the reason, or (when the run was
        stopped, or there is no outcome) release it; as its holder, at the epoch it claimed."""
        if outcome is not None and outcome.ok:
            change = Change(
                COMPLETED,
                answer=outcome.answer,
                history=outcome.history,
                answer_level=outcome.level,
            )
        elif outcome is None or self.stopping:
            change = Change(PENDING)
        else:
            change = Change(FAILED, reason=outcome.error, history=outcome.history)
        with boardfile.opened(self.scope.workdir, sweep=False) as opened:
            try:
                done = opened.update(item.id, holder, change, item.epoch)
            except RefusedError as error:
                note = str(error)
                with contextlib.suppress(RefusedError):  # e.g. blocked since: let it go
                    done = opened.update(item.id, holder, Change(PENDING), item.epoch)
                    self.told(Report("released", done, outcome, note))
                    return
                self.told(Report("fenced", opened.get(item.id), outcome, note))
                return
        if done.status != PENDING:
            self.ended.append(done)
        self.told(Report(done.status if done.status != PENDING else "released", done, outcome))

    def _stop(
        self, opened: boarddb.Board, running: Mapping[Future[None], tuple[Item, Holder]]
    ) -> None:
        """End every run: SIGTERM to their groups, GRACE seconds, SIGKILL; then release the
        items no run finished."""
        self.stopping = True
        self.groups.signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and not all(f.done() for f in running):
            time.sleep(0.05)
        self.groups.signal(signal.SIGKILL)
        wait(running)
        for item, holder in running.values():
            with contextlib.suppress(StartError):
                opened.update(item.id, holder, Change(PENDING), item.epoch)
