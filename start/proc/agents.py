"""Running headless agents (`start --print`, `start mcp`'s ask_agent, `start board run`) to their
end: each agent CLI in a session of its own, stdin from a file or /dev/null, stdout and stderr
into files, a timeout, and a limit on what it prints, that give its process group SIGTERM and
then SIGKILL, and several agents at once, all driven from one loop in the calling thread.

A launch never imports this module (it runs only its commands, through start.proc.shell). An agent
is a start.proc.process Child, as a command is: started, awaited, ended and reaped there, with the
same signal handling. Every group has an owner: the caller's (process.Owner), else a registry of
the run's own (start.proc.groups), whose watchdog ends them should `start` be killed.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Final

from start.base import fs
from start.base.errors import signal_name
from start.base.record import Record
from start.proc import groups, process
from start.proc.process import GRACE, StoppedError

if TYPE_CHECKING:
    from start.proc.process import Owner

# How much of the end of an agent's stderr is read: more than a failure shows (its last lines).
STDERR_TAIL: Final = 1 << 16
# How often a job whose CLI another call is running looks again, in seconds.
_RETRY: Final = 0.2
# How often the size of a running agent's stdout is measured against its job's `limit`, in
# seconds: the file gives no sign when it grows, and a measure is one fstat.
SIZE_CHECK: Final = 0.1


class AgentRun(Record):
    """One headless agent run, to its end."""

    argv: tuple[str, ...]
    # None if it timed out, was stopped for printing too much, or never started; -N if signal N
    # killed it
    returncode: int | None
    timed_out: bool
    stdout: str  # whole up to the run's `limit`; past it, only its end (STDERR_TAIL bytes)
    stderr: str  # its end: STDERR_TAIL bytes at most
    duration: float  # seconds
    error: str | None  # why it could not start, else None
    stdout_size: int = 0  # bytes the agent wrote on stdout
    # The signal (SIGINT, SIGTERM, SIGHUP) that stopped the call before this run ended by itself,
    # or before it started (then `error` says so); None if it was not stopped (see Interrupted).
    stopped: int | None = None
    # Whether it printed more than its job's `limit` and was stopped for it (its group ended);
    # one that exited by itself first is not (its `stdout_size` says how much it printed).
    too_large: bool = False


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP stopped run_agents (or run_agent): `signum`, and `runs`, every
    job's AgentRun in the order of the jobs. A run that had ended is as it ended. One that was
    running has `stopped` set and what it had written by then: its group was ended, SIGTERM, the
    grace, SIGKILL (`returncode` is how its leader ended). One that never started has `stopped`
    set, no `returncode` and an `error` that says why.

    It is raised as a KeyboardInterrupt for SIGINT (the CLI says "interrupted", 130) and as a
    process.StoppedError for SIGTERM and SIGHUP (128 + N), so that a caller that catches those
    catches it as before; `except Interrupted` catches either.
    """

    signum: int
    # Every run, in order: AgentRuns as run_agents raises it; start.runs.Run records as
    # start.runs.headless.run_each raises it again, the answers that had arrived read.
    runs: tuple[Any, ...]


class _Interrupt(Interrupted, KeyboardInterrupt):
    pass


class _Stopped(Interrupted, StoppedError):
    pass


def interrupted(signum: int, runs: Sequence[Any]) -> Interrupted:
    error: Interrupted = _Interrupt() if signum == signal.SIGINT else _Stopped(signum)
    error.signum = signum
    error.runs = tuple(runs)
    return error


def run_agent(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    *,
    timeout: float,
    stdin: str | None = None,
    grace: float = GRACE,
    owner: Owner | None = None,
    limit: int | None = None,
) -> AgentRun:
    """Run one agent CLI to its end: run_agents with a list of one (see it), which raises
    Interrupted with the one run on a signal."""
    job = AgentJob(tuple(argv), env, cwd, timeout, stdin, limit=limit)
    return run_agents([job], cap=1, grace=grace, owner=owner)[0]


def _head(file: IO[bytes]) -> str:
    file.seek(0)
    return fs.text(file.read())


def _tail(file: IO[bytes]) -> str:
    """The last STDERR_TAIL bytes of `file`, from the first line that starts in them."""
    size = os.fstat(file.fileno()).st_size
    file.seek(max(0, size - STDERR_TAIL))
    data = file.read()
    if size > STDERR_TAIL:
        data = data[data.find(b"\n") + 1 :]
    return fs.text(data)


# One lock per key (a CLI's program name) for the life of the process, the only one: see
# run_agents.
_RUNNING: dict[str, threading.Lock] = {}
_RUNNING_GUARD = threading.Lock()


def _one_at_a_time(key: str) -> threading.Lock:
    with _RUNNING_GUARD:
        return _RUNNING.setdefault(key, threading.Lock())


class AgentJob(Record):
    """One agent run of several (run_agents)."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    timeout: float
    stdin: str | None = None
    # Runs with the same non-empty key never overlap: two instances of one CLI can share state
    # files.
    key: str = ""
    limit: int | None = None  # bytes of stdout read, at most (None: all)


# What run_agents tells `on_state` of each job, with the seconds since the first began: waiting
# (for a free slot, or for another run of the same CLI), running, then done, failed, timed out
# or stopped (by a signal, while running or waiting).
State = Callable[[int, str, float], None]


class _Running:
    """One job's agent while it runs: its process, its output files, and its key's lock."""

    __slots__ = (
        "child", "deadline", "files", "index", "job", "lock", "started", "timed_out", "too_large",
    )  # fmt: skip

    def __init__(
        self,
        index: int,
        job: AgentJob,
        lock: threading.Lock | None,
        started: float,
        files: list[IO[bytes]],
        child: process.Child,
    ) -> None:
        self.index = index
        self.job = job
        self.lock = lock
        self.started = started
        self.deadline = started + job.timeout
        self.files = files  # stdout's and stderr's
        self.child = child
        self.timed_out = False
        self.too_large = False

    def printed_too_much(self) -> bool:
        """Whether its stdout holds more than its job's `limit`."""
        limit = self.job.limit
        return limit is not None and os.fstat(self.files[0].fileno()).st_size > limit

    def ended(self, stopped: int | None) -> AgentRun:
        """The run, once its leader is reaped; its files closed and its key let go."""
        out, err = self.files
        duration = time.monotonic() - self.started
        size = os.fstat(out.fileno()).st_size
        limit = self.job.limit
        stdout = _head(out) if limit is None or size <= limit else _tail(out)
        cut = self.timed_out or self.too_large
        returncode = None if cut else self.child.returncode
        run = AgentRun(
            self.job.argv, returncode, self.timed_out, stdout, _tail(err), duration, None, size,
            stopped, self.too_large,
        )  # fmt: skip
        self.close()
        return run

    def close(self) -> None:
        _let_go(self.files, self.lock)
        self.lock = None


def _let_go(files: list[IO[bytes]], lock: threading.Lock | None) -> None:
    for file in files:
        file.close()
    files.clear()
    if lock is not None:
        lock.release()


def run_agents(
    jobs: Sequence[AgentJob],
    *,
    cap: int,
    on_state: State | None = None,
    grace: float = GRACE,
    owner: Owner | None = None,
) -> list[AgentRun]:
    """Run agent CLIs to their end, at most `cap` at a time and never two of one `key` together;
    results in the order of `jobs`. Two of one key never run together in this process at all,
    whatever the call (`start mcp` answers several ask calls at once, and `start board run` runs
    several items, in threads): a job waits for the other call's run to end, and the jobs after
    it may start meanwhile.

    Each runs in a session of its own, stdin from its `stdin` (a file) or /dev/null, its stdout
    and stderr into files (so that nothing blocks it). Its stdout is read whole up to its `limit`;
    an answer past it is not read, only its end, and `stdout_size` says how much there was. At
    its timeout, or once its stdout has passed its `limit` (measured every SIZE_CHECK seconds:
    its answer will not be read, so it runs for nothing; `too_large` says so), its whole process
    group gets SIGTERM, `grace` seconds, then SIGKILL; when it exits, what it left running in its
    group is killed too.

    `on_state` is told of each job's State. `owner`, when given, is told of every group
    (process.Owner): `start mcp` kills it when the request that asked for the run is cancelled
    or the client goes away, and the registry's watchdog kills it if `start` is killed. Without
    one, a registry of the call's own, with a watchdog, owns them (start.proc.groups.watching).

    On SIGINT, SIGTERM or SIGHUP (from the main thread) no job starts any more, every running
    group gets SIGTERM, `grace` seconds, then SIGKILL, and Interrupted is raised with every
    job's run, the finished ones included. So it is in any thread when the owner's registry is
    stopped for a signal (groups.stopped_by: `start board run`'s Ctrl-C, which its workers' jobs
    never receive themselves): the runs it cut short are stopped by that signal, not failed by
    the SIGTERM that ended them. Any other error ends the groups the same way and propagates as
    it is.
    """
    import tempfile

    began = time.monotonic()
    runs: dict[int, AgentRun] = {}
    waiting = list(range(len(jobs)))
    running: list[_Running] = []

    def state(index: int, what: str) -> None:
        if on_state is not None:
            on_state(index, what, time.monotonic() - began)

    def outcome(run: AgentRun) -> str:
        if run.stopped is not None:
            return "stopped"
        if run.timed_out:
            return "timed out"
        return "failed" if run.error is not None or run.returncode != 0 else "done"

    def start(index: int, stop: process.Stop, owner: Owner | None) -> bool:
        """Start job `index`; False if another run of its key runs."""
        job = jobs[index]
        with stop.held():
            lock = _one_at_a_time(job.key) if job.key else None
            if lock is not None and not lock.acquire(blocking=False):
                return False
            started = time.monotonic()
            files: list[IO[bytes]] = []
            try:
                # Closed when the run has been read (_Running.close), not at the end of a block.
                files.append(tempfile.TemporaryFile())  # noqa: SIM115
                files.append(tempfile.TemporaryFile())  # noqa: SIM115
                child = process.spawn(
                    job.argv, cwd=job.cwd, env=job.env, stdin=job.stdin, stdout=files[0],
                    stderr=files[1], owner=owner,
                )  # fmt: skip
            except BaseException as error:
                _let_go(files, lock)
                if not isinstance(error, OSError):
                    raise
                reason = f"cannot start '{job.argv[0]}': {error.strerror or error}"
                duration = time.monotonic() - started
                runs[index] = AgentRun(job.argv, None, False, "", "", duration, reason)
            else:
                running.append(_Running(index, job, lock, started, files, child))
        state(index, "failed" if index in runs else "running")
        return True

    def step(stop: process.Stop, now: float) -> bool:
        """Time out the runs past their deadline, stop those that printed past their limit, and
        end those due; whether any ended."""
        due = []
        for one in running:
            if one.child.kill_at is None and not one.child.exited():
                late = now >= one.deadline
                if late or one.printed_too_much():
                    with stop.held():
                        one.timed_out, one.too_large = late, not late
                        one.child.terminate(grace)
            if one.child.due(now):
                due.append(one)
        for one in due:
            with stop.held():
                cut = groups.stopped_by(owner, one.child.pid) if owner is not None else None
                one.child.reap()
                run = runs[one.index] = one.ended(cut)
                running.remove(one)
            state(one.index, outcome(run))
        return bool(due)

    def wake(now: float, blocked: bool) -> float:
        """When the loop has something to do, should no leader exit before."""
        times = [float("inf")]
        for one in running:
            if one.child.kill_at is not None:
                times.append(one.child.kill_at)
            else:
                times.append(one.deadline)
                if one.job.limit is not None:
                    times.append(now + SIZE_CHECK)
        if blocked:
            times.append(now + _RETRY)
        return min(times)

    with groups.watching(owner) as owner, process.Stop() as stop:
        try:
            for index in waiting:
                state(index, "waiting")
            while waiting or running:
                halted = groups.stopped_by(owner)
                if halted is not None:  # as the signal would in the main thread
                    raise process.stop_error(halted)
                blocked = False
                for index in list(waiting):
                    if len(running) >= max(1, cap):
                        break
                    if start(index, stop, owner):
                        waiting.remove(index)
                    else:
                        blocked = True
                now = time.monotonic()
                ended = step(stop, now)
                if not ended and (running or blocked):
                    process.wait([one.child for one in running], wake(now, blocked))
            halted = groups.stopped_by(owner)
            if halted is not None and any(run.stopped is not None for run in runs.values()):
                raise process.stop_error(halted)  # the last run was cut short
        except BaseException as error:
            stop.hold += 1  # a second signal must not interrupt the ending
            signum = process.signal_of(error)
            # Runs whose leader exited by itself, or that were being stopped (timed out, printed
            # too much), end as they would have.
            cut = [
                one
                for one in running
                if (one.child.kill_at is None and not one.child.exited())
                or groups.stopped_by(owner, one.child.pid) is not None
            ]
            process.end([one.child for one in running], grace)
            for one in list(running):
                run = runs[one.index] = one.ended(signum if one in cut else None)
                running.remove(one)
                state(one.index, outcome(run))
            if signum is None:
                raise
            reason = f"not started: stopped by {signal_name(signum)}"
            for index in waiting:
                runs[index] = AgentRun(
                    jobs[index].argv, None, False, "", "", 0.0, reason, 0, signum
                )
                state(index, "stopped")
            raise interrupted(signum, [runs[index] for index in range(len(jobs))]) from None
        finally:
            for one in running:  # none, unless ending them failed
                one.close()
    return [runs[index] for index in range(len(jobs))]
