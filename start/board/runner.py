"""`start board run`: the board's ready items, run headless by agents through the path `--print`
takes, and finished from each run's evidence (docs/board.md, "Running the board").

    claim the next ready item FOR its run (before any process starts; the run's own identity,
    held by this process) -> compose and run it (pipeline.prepare, headless.run_each)
    -> record it in the history -> completed with the answer and the run's history id, or
    failed with the reason; a stop (Ctrl-C, SIGTERM) releases what it did not finish

At most `cap` runs at once (settings.print_agents), each a job of start.proc.groups.Workers
(a thread of its own) while this thread claims and waits; never two of one CLI together
(start.proc.agents, whichever run asks). Every process group a run starts, its task's commands
included, has an owner in the run's registry (start.proc.groups), which ends them on a stop:
SIGTERM, process.GRACE, SIGKILL. `run_one` is the one place the board meets the runner and the
history: when the run record changes, only it changes. Nothing here prints: the caller is told
each step (`Report`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, Final

from start import board
from start.base import template
from start.base.errors import StartError, UntrustedError
from start.base.record import Record
from start.board import (
    COMPLETED,
    FAILED,
    PENDING,
    Change,
    Holder,
    Item,
    RefusedError,
)
from start.board import file as boardfile
from start.board import store as boarddb
from start.compose.ask import AGENT, BOARD, WORKFLOW, Ask
from start.config.schema import LEVELS
from start.proc import agents as agentrun
from start.proc import groups, process, shell
from start.runs.rules import Scope

# How often the runner looks for new ready items while none is, in seconds.
IDLE: Final = 0.2


class UnconfirmedError(StartError):
    """With sync on, a claim the runner made could not be confirmed by a push: it let the item
    go without running it, and stops claiming (exit 1)."""


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
    value: Any = None  # the answer's checked JSON value, for a task with an output format
    problems: tuple[str, ...] = ()  # why the answer is out of format (a workflow's exit 65)


class Report(Record):
    """One step of the runner, for its caller to show: `claimed` (the item as claimed), perhaps
    `capped` (who shaped it holds its run below the user's level: board.cap), then `completed`,
    `failed` or `released` (the item as finished or let go), or `fenced` (the item was
    reassigned while its run ran: the run's outcome is not its end). With sync on a claim is
    confirmed by a push before `claimed` is told: `lost` (another machine's claim was first on
    the remote) or `released` (the push failed: `note` says why) instead, and nothing runs."""

    step: str
    item: Item
    outcome: Outcome | None = None
    note: str = ""


# --- the adapter: the board's one door to the path of every ask ------------------------------


def run_one(scope: Scope, ask: Ask, owner: shell.Owner) -> Outcome:
    """Run one item's ask to its end through the path of every door (start.runs.path: the ask
    rules, compose, run, record), as `--print` does; its Outcome.

    The commands that compose it and the agent are owned by `owner`. Raises what the path
    raises before the agent starts (UntrustedError, RequestError, ...); every failure of the
    agent itself is an Outcome that is not ok. A history that cannot be written costs the run
    its id only.
    """
    from start.runs import path

    (result,) = path.run(scope, ask, owner=owner)
    return Outcome(
        result.ok,
        result.answer or "",
        result.error,
        result.agent,
        result.id,
        value=result.value,
        problems=result.problems,
    )


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


def with_text(ask: Ask, text: str) -> Ask:
    """An item's ask with its text: the prompt, or the task's instructions."""
    if ask.task is None:
        return ask._replace(prompt=text)
    return ask._replace(instructions=text if text.strip() else None)


def ask_for(
    scope: Scope, item: Item, text: str | None, cap: board.Cap | None = None, door: str = BOARD
) -> Ask:
    """The ask of an item's run whose text (the prompt, or the task's instructions) is `text`
    (None: the run's own, as a workflow step's is, filled when it became ready), where the board
    runs, never above `cap` (board.cap: who shaped it). An item an agent wrote
    is the agent's ask, held by the ask rules to what the user allows agents (rules.vet), checked
    when the item is made and again before it runs; the user's own is run as `--print` would."""
    assert item.run is not None
    ask = (item.run if text is None else with_text(item.run, text))._replace(
        headless=True,
        directory=scope.workdir,
        no_project=not scope.use_project,
        door=door,
        item=item.id,
    )
    if ask.by != AGENT and ask.permissions is not None and ask.permissions_from is None:
        ask = ask._replace(permissions_from="the item's permissions")
    if cap is not None:
        ask = ask._replace(most=cap.level, most_from=cap.why)
    return ask


# --- the runner --------------------------------------------------------------------------------


class Runner:
    """Runs the ready items of one project's board (see the module)."""

    def __init__(
        self,
        scope: Scope,
        *,
        cap: int,
        timeout: int | None,
        told: Callable[[Report], None] = lambda report: None,
        idle: Callable[[], None] = lambda: None,
        labels: tuple[str, ...] = (),
        door: str = BOARD,
        remote: str | None = None,
        remote_level: str = LEVELS[0],
        warned: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.scope = scope
        self.cap = max(1, cap)
        self.timeout = timeout
        self.told = told
        self.idle = idle  # told once each time it starts waiting for a ready item
        # Only the items with every one of these labels (a workflow run's own steps), and the
        # door their runs come in by: a workflow step's run is filled when it becomes ready.
        self.labels = labels
        self.door = door
        self.stopping = False
        self.ended: list[Item] = []  # the items its runs finished, in the order they ended
        self.claimed = 0  # how many items it claimed for runs
        # With sync on: the remote that confirms each claim (board_remote), and the most other
        # machines' operations may set (board_remote_level).
        self.remote = remote
        self.remote_level = remote_level
        self.halted: StartError | None = None  # a claim that could not be confirmed: why
        # With board_remote set, its syncs: each finish pushed, and while it waits at most one
        # every syncing.EVERY seconds; a failed one told (`warned`) once per reason.
        from start.board import syncing

        self.pacer = syncing.Pacer(syncing.Setting(remote, remote_level), warned)

    def run(self, until_empty: bool) -> list[Item]:
        """Claim and run ready items, `cap` at once, until nothing is ready and nothing runs
        (`until_empty`) or for ever; the items finished. On a signal (KeyboardInterrupt,
        StoppedError) or an error that stops every run (UntrustedError), the runs are stopped
        and their items released, then it raises."""
        running: dict[Future[None], tuple[Item, Holder]] = {}
        with (
            groups.watched() as registry,
            boardfile.opened(self.scope.workdir) as opened,
            process.Stop() as stop,
        ):
            workers = groups.Workers(registry, self.cap, "start board run")
            if opened.sync() is not None and self.remote is None:
                from start.board.syncing import no_remote

                raise no_remote()  # nothing claimed: a claim could not be confirmed
            # A claim is confirmed by a push once sync is on, or is to be turned on by the
            # first sync (board_remote set).
            confirming = self.remote is not None
            try:
                seen: int | None = None
                waiting = False
                while True:
                    opened.sweep()
                    while len(running) < self.cap and self.halted is None:
                        holder = board.run_holder(os.urandom(3).hex())
                        item = opened.claim_next(
                            holder,
                            runnable=True,
                            labels=self.labels,
                            steps=self.door == WORKFLOW,  # a workflow run's own steps
                        )
                        if item is None:
                            break
                        if confirming:
                            confirmed = self._confirmed(opened, item, holder)
                            if confirmed is None:
                                continue
                            item = confirmed
                        self.claimed += 1
                        waiting = False
                        self.told(Report("claimed", item))
                        work = functools.partial(self._work, item, holder)
                        running[workers.submit(work).future] = (item, holder)
                    if not running:
                        if self.halted is not None:
                            raise self.halted
                        # Nothing ready here: what other machines made or let go arrives by
                        # a sync, at most one every syncing.EVERY seconds.
                        if self.pacer.tick(opened):
                            continue
                        if until_empty:
                            return self.ended
                        if not waiting:
                            waiting = True
                            self.idle()
                        seen = self._idle(opened, seen)
                        continue
                    done, _ = wait(running, timeout=IDLE, return_when=FIRST_COMPLETED)
                    for future in done:
                        del running[future]
                        future.result()  # raises what stops every run
                    if done and confirming:
                        # Their finishes, written by the workers through their own
                        # connections, pushed now; the rows rebuilt while other runs go on.
                        self.pacer.now(opened)
            except BaseException as error:
                stop.hold += 1  # a second signal must not interrupt the stop
                # The runs learn why they were stopped (the signal; else the SIGTERM they get),
                # and are recorded as interrupted by it, as --print's are.
                cause = process.signal_of(error) or signal.SIGTERM
                self._stop(opened, workers, running, cause)
                raise

    def _confirmed(self, opened: boarddb.Board, item: Item, holder: Holder) -> Item | None:
        """With sync on: push the claim of `item` (start board sync) and the item as it now is
        when the claim won on the remote. None when it did not: another machine's claim was
        first (told `lost`), or the sync failed, when the item is let go (told `released`)
        and the runner claims nothing more (`halted`)."""
        from start.board import syncing

        self.pacer.last = self.pacer.clock()  # a sync: the next idle one waits its turn
        claim = syncing.confirm(opened, item, holder.name, self.pacer.given)
        if claim.error is not None:
            error = claim.error
            found = claim.item
            with contextlib.suppress(StartError):
                found = opened.update(found.id, holder, Change(PENDING), found.epoch)
            # The push is not tried again: each try would claim and let go an item, two
            # operations every syncing.EVERY seconds in the log for as long as it is offline.
            self.told(Report("released", found, note=f"its claim was not confirmed: {error}"))
            self.halted = UnconfirmedError(
                f"{found.id} was let go without running: start board run runs an item only "
                f"once its claim is pushed, and {error}; start board run again once start board "
                "sync succeeds"
            )
            return None
        if claim.confirmed:
            return claim.item
        self.told(Report("lost", claim.item, note=claim.lost or "its claim did not win"))
        return None

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

    def _work(self, item: Item, holder: Holder, owner: shell.Owner) -> None:
        """Run one claimed item and finish it (a job of the workers: `owner` owns its groups)."""
        try:
            with boardfile.opened(self.scope.workdir, sweep=False) as opened:
                answers = opened.answers(item.blocked_by)
            assert item.run is not None
            text = item.run.prompt if item.run.prompt is not None else item.description
            fed = [found for found, _ in answers] if board.ANSWERS in template.names(text) else []
            cap = board.cap(item, fed)
            if cap is not None:
                self.told(Report("capped", item, note=f"runs at '{cap.level}' at most: {cap.why}"))
            if self.door == WORKFLOW:  # filled already, from the steps it reads
                ask = ask_for(self.scope, item, None, cap, WORKFLOW)
                ask = ask._replace(timeout=self.timeout or ask.timeout)
            else:
                ask = ask_for(self.scope, item, with_answers(text, answers), cap)
                ask = ask._replace(timeout=self.timeout)
            try:
                outcome = run_one(self.scope, ask, owner)
            except agentrun.Interrupted as stopped:
                # The runner's stop reached the run (groups.stopped_by), which is recorded as
                # interrupted; the item is let go, unless its answer had arrived.
                (run,) = stopped.runs
                outcome = Outcome(run.ok, run.answer or "", run.error, run.agent, run.id)
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
        self,
        opened: boarddb.Board,
        workers: groups.Workers,
        running: Mapping[Future[None], tuple[Item, Holder]],
        cause: int,
    ) -> None:
        """End every run, stopped by `cause` (a signal): SIGTERM to their groups,
        process.GRACE seconds, SIGKILL; then release the items no run finished."""
        self.stopping = True
        workers.stop(process.GRACE, cause)
        workers.join()
        for item, holder in running.values():
            with contextlib.suppress(StartError):
                opened.update(item.id, holder, Change(PENDING), item.epoch)
