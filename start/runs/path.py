"""The one path of an ask, below every door: the ask rules, then compose, run and record.

    ask (start.compose.ask) -> rules.vet -> pipeline.prepare_each -> headless.run_each
        -> recorded (a pending file, an id) -> the answers, shown by the door -> the runs

The command line (`--print`, `start again`, `start continue`), `start mcp`'s asking tools and
`start board run` each make an Ask and call `run`; none of them applies a rule, composes, runs
or records on its own. What a door shows is the door's (`Door`): how it asks for trust, what it
says before the agents start, how it follows them, and how it shows the answers that arrived.
Nothing here prints, asks, or imports click, rich or the MCP SDK.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from start.base.errors import StartError
from start.compose import pipeline
from start.compose.ask import CLI, Ask, data
from start.runs import Run
from start.runs.rules import DEPTH_VARIABLE, Scope, vet

if TYPE_CHECKING:
    from start.config.model import Settings
    from start.proc import agents as agentrun
    from start.proc import shell

T = TypeVar("T")


class Door:
    """What a door shows of its asks; this one, nothing. A door that shows more (the command
    line's --print) has the same methods (DoorLike)."""

    def trusted(self, prepare: Callable[[], T]) -> T:
        """`prepare()`, which raises TrustRequired for a project not trusted yet: the command
        line asks on a terminal, then calls it again."""
        return prepare()

    def prepared(self, each: Sequence[pipeline.Prepared]) -> None:
        """Told the launches before any agent starts (their summary, their warnings)."""

    def running(
        self, each: Sequence[pipeline.Prepared]
    ) -> contextlib.AbstractContextManager[agentrun.State | None]:
        """While the agents run: what is told each agent's state (agentrun.run_agents)."""
        return contextlib.nullcontext()

    def arrived(self, runs: Sequence[Run], stopped: BaseException | None) -> None:
        """Told the runs as they ended, once recorded (each with its history id, where the
        history gave one) and before the database is written (`stopped`: the signal that stopped
        them, which `run` raises next)."""

    def unrecorded(self, error: StartError) -> None:
        """Told why a run could not be put in the history: it costs the run its id only."""


class DoorLike(Protocol):
    """What `run` asks of a door: Door's methods."""

    def trusted(self, prepare: Callable[[], T]) -> T: ...

    def prepared(self, each: Sequence[pipeline.Prepared]) -> None: ...

    def running(
        self, each: Sequence[pipeline.Prepared]
    ) -> contextlib.AbstractContextManager[agentrun.State | None]: ...

    def arrived(self, runs: Sequence[Run], stopped: BaseException | None) -> None: ...

    def unrecorded(self, error: StartError) -> None: ...


def agents_of(ask: Ask) -> list[str | None]:
    """Whom pipeline.prepare_each builds for: each agent of several; of one or none, the ask's
    own agent (None)."""
    return list(ask.agents) if len(ask.agents) > 1 else [None]


def prepare(
    scope: Scope,
    ask: Ask,
    door: DoorLike | None = None,
    *,
    owner: shell.Owner | None = None,
    progress: shell.Progress | None = None,
    dry_run: bool = False,
) -> list[pipeline.Prepared]:
    """The ask, through the rules (rules.vet), composed for each of its agents. Raises what
    either raises. The temp files of the result belong to the caller, as for pipeline.prepare."""
    vetted = vet(scope, ask)
    shown = door or Door()
    return shown.trusted(
        lambda: pipeline.prepare_each(
            vetted, agents_of(vetted), progress=progress, owner=owner, dry_run=dry_run
        )
    )


def run(
    scope: Scope,
    ask: Ask,
    door: DoorLike | None = None,
    *,
    owner: shell.Owner | None = None,
    progress: shell.Progress | None = None,
    args: tuple[str, ...] | None = None,
    cwd: str | None = None,
) -> list[Run]:
    """Vet, compose, run and record one ask, to the end of every agent it asks; the runs, in
    the order of its agents, recorded (each with its history id where the history gives one).

    An ask that did not come in at the command line marks its agents' environment with the
    caller's depth plus one, and this process as running them at that depth meanwhile
    (lineage.registered), so that an agent it runs cannot ask back beyond settings.mcp_depth.
    `owner` is told of every process group (the composition's commands and the agents); `args`
    and `cwd` are the command line's own words and directory, which its runs record.

    Each run is recorded before the door is shown it, with its history id (`record`: the id is
    reserved, so a history that another process holds delays nothing); the pending runs move
    into the database after. On a signal (agentrun.Interrupted), the runs that had ended are
    recorded and shown, and the signal is raised again.
    """
    from start.proc import agents as agentrun
    from start.runs import headless

    shown = door or Door()
    each = prepare(scope, ask, shown, owner=owner, progress=progress)
    shown.prepared(each)
    vetted = each[0].ask
    assert vetted is not None
    settings = each[0].config.settings
    timeout = vetted.timeout or settings.print_timeout
    below = vetted.door != CLI
    mark = {DEPTH_VARIABLE: str(scope.depth + 1)} if below else None
    registered: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if below:
        from start.proc import lineage  # the process tree: only below another door

        registered = lineage.registered(scope.depth + 1)
    stopped: agentrun.Interrupted | None = None
    try:
        with registered, shown.running(each) as on_state:
            done = headless.run_each(
                each, timeout, settings.print_agents, on_state, env=mark, owner=owner
            )
    except agentrun.Interrupted as stop:
        done, stopped = list(stop.runs), stop
    asked = data(vetted)
    done = [found._replace(request=asked, args=args, cwd=cwd or found.cwd) for found in done]
    due = False
    try:
        # Recorded first, so that what the door shows names each run's id: a pending file and an
        # id of its own, which never wait for the database another process may hold. Whatever
        # happens to the recording, the door shows the runs.
        kept = []
        for found in done:
            recorded, full = record(found, settings, shown)
            kept.append(recorded)
            due = due or full
        done = kept
    finally:
        shown.arrived(done, stopped)
    if due:
        move_in(shown)
    if stopped is not None:
        raise stopped
    return done


def record(run: Run, settings: Settings, door: DoorLike | None = None) -> tuple[Run, bool]:
    """Put a run in the history, the one way every door does (start.runs.recording: a pending
    file and the id reserved for it, so that a history another process holds never holds an
    answer): the run with its id (none when settings.history is off), and whether the pending
    runs are due to move into the database (`move_in`, once the door has shown the run). A
    history that cannot be written costs the run its id only; the door is told why."""
    from start.runs import history, recording

    try:
        written = recording.record(run, settings, flush=False)
    except history.HistoryError as error:
        (door or Door()).unrecorded(error)
        return run, False
    if written is None:
        return run, False
    return run._replace(id=written.id), written.full


def move_in(door: DoorLike | None = None) -> None:
    """Move the pending runs into the database (start.runs.recording.move_in); a history that
    cannot be used is told to the door, as for `record`."""
    from start.runs import history, recording

    try:
        recording.move_in()
    except history.HistoryError as error:
        (door or Door()).unrecorded(error)
