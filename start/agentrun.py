"""Running headless agents (`start --print`, `start mcp`'s ask_agent) to their end: each agent CLI
in a session of its own, stdin from a file or /dev/null, stdout and stderr into files, a timeout
that gives its process group SIGTERM and then SIGKILL, and several agents at once in threads.

A launch never imports this module (it runs only its commands, through start.shell); the
signal handling and the process-group helpers are start.shell's, shared. Every group has an
owner that outlives a killed `start`: the caller's (shell.Owner), else a watchdog of the run's
own (start.watchdog).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from start import fs, watchdog
from start.record import Record
from start.shell import POLL_MAX, Stop, kill_group, leader_exited

if TYPE_CHECKING:
    import subprocess

    from start.shell import Owner

# How long a headless agent's process group has between SIGTERM and SIGKILL.
GRACE: Final = 5.0
# How much of the end of an agent's stderr is read: more than a failure shows (its last lines).
STDERR_TAIL: Final = 1 << 16


class AgentRun(Record):
    """One headless agent run, to its end."""

    argv: tuple[str, ...]
    returncode: int | None  # None if it timed out or never started; -N if signal N killed it
    timed_out: bool
    stdout: str  # whole up to the run's `limit`; past it, only its end (STDERR_TAIL bytes)
    stderr: str  # its end: STDERR_TAIL bytes at most
    duration: float  # seconds
    error: str | None  # why it could not start, else None
    stdout_size: int = 0  # bytes the agent wrote on stdout


def run_agent(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    *,
    timeout: float,
    stdin: str | None = None,
    progress: Callable[[float], None] | None = None,
    grace: float = GRACE,
    on_start: Callable[[int], None] | None = None,
    owner: Owner | None = None,
    limit: int | None = None,
) -> AgentRun:
    """Run an agent CLI to its end in a session of its own, stdin from `stdin` (a file) or
    /dev/null, its stdout and stderr into files (so that nothing blocks it), and
    `progress` told the seconds elapsed about once a second.

    At the timeout, and on SIGINT, SIGTERM or SIGHUP (which then raise as in shell.run_all), the
    whole process group gets SIGTERM, `grace` seconds, then SIGKILL. What the agent left running
    in its group when it exited is killed too. `on_start` is told the process group's id as soon
    as it exists (run_agents, which runs this in threads, kills the groups on a signal). `owner`,
    when given, is told of the group as shell.run_all tells it (shell.Owner): `start mcp` kills
    it when the request that asked for the run is cancelled or the client goes away, and `start
    --print` has its watchdog kill it if `start` is killed. Without one, a watchdog of the run's
    own does (start.watchdog).

    Its stdout is read whole up to `limit` bytes (None: no limit); an answer past it is not
    read, only its end, and `stdout_size` says how much there was.
    """
    import subprocess
    import tempfile

    started = time.monotonic()
    argv = tuple(argv)

    def ended(returncode: int | None, timed_out: bool, out: Any, err: Any) -> AgentRun:
        size = os.fstat(out.fileno()).st_size
        whole = limit is None or size <= limit
        stdout = _head(out) if whole else _tail(out)
        duration = time.monotonic() - started
        return AgentRun(argv, returncode, timed_out, stdout, _tail(err), duration, None, size)

    with (
        watchdog.watching(owner) as owner,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        Stop() as stop,
    ):
        source = os.open(stdin, os.O_RDONLY | os.O_CLOEXEC) if stdin else subprocess.DEVNULL
        try:
            with stop.held():
                process = subprocess.Popen(
                    argv, cwd=cwd, env=env, stdin=source, stdout=out, stderr=err,
                    start_new_session=True,
                )  # fmt: skip
                if on_start is not None:
                    on_start(process.pid)
                if owner is not None:
                    owner.adopt(process.pid)
        except OSError as error:
            duration = time.monotonic() - started
            reason = f"cannot start '{argv[0]}': {error.strerror or error}"
            return AgentRun(argv, None, False, "", "", duration, reason)
        finally:
            if stdin:
                os.close(source)

        def reap() -> int:
            # The owner lets go of the group before its leader is reaped, so that it never
            # kills a group id the kernel has reused.
            if owner is not None:
                owner.release(process.pid)
            return process.wait()

        try:
            exited = _await(process, started + timeout, progress)
        except BaseException:
            stop.hold += 1  # a second signal must not interrupt the cleanup
            _end_group(process, grace, reap)
            raise
        stop.hold += 1
        if not exited:
            _end_group(process, grace, reap)
            return ended(None, True, out, err)
        kill_group(process.pid)  # what the agent left behind; its leader is not reaped yet
        return ended(reap(), False, out, err)


def _head(file: Any) -> str:
    file.seek(0)
    return fs.text(file.read())


def _tail(file: Any) -> str:
    """The last STDERR_TAIL bytes of `file`, from the first line that starts in them."""
    size = os.fstat(file.fileno()).st_size
    file.seek(max(0, size - STDERR_TAIL))
    data = file.read()
    if size > STDERR_TAIL:
        data = data[data.find(b"\n") + 1 :]
    return fs.text(data)


def _await(
    process: subprocess.Popen[bytes], deadline: float, progress: Callable[[float], None] | None
) -> bool:
    """Wait for the leader to exit, without reaping it; False at the deadline."""
    import select

    started = time.monotonic()
    told = 0
    watch: Any = None
    pidfd: int | None = None
    if hasattr(os, "pidfd_open"):
        with contextlib.suppress(OSError):
            pidfd = os.pidfd_open(process.pid)
            watch = select.poll()
            watch.register(pidfd, select.POLLIN)
    gap = 0.001
    try:
        while True:
            if leader_exited(process):
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            if progress is not None and now - started >= told + 1:
                told = int(now - started)
                progress(now - started)
            wait = min(deadline - now, 1.0)
            if watch is not None:
                watch.poll(wait * 1000)
            else:
                time.sleep(min(wait, gap))
                gap = min(gap * 2, POLL_MAX)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _end_group(process: subprocess.Popen[bytes], grace: float, reap: Callable[[], int]) -> None:
    """SIGTERM to the group, `grace` seconds for the leader to go, SIGKILL, then reap."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not leader_exited(process):
        time.sleep(0.02)
    kill_group(process.pid)
    reap()


# One lock per key (a CLI's program name) for the life of the process: see run_agents.
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
    # Runs with the same key never overlap: two instances of one CLI can share state files.
    key: str = ""
    limit: int | None = None  # bytes of stdout read (run_agent)


# What run_agents tells `on_state` of each job, with the seconds since the first began: waiting
# (for a free slot, or for another run of the same CLI), running, then done, failed or timed out.
State = Callable[[int, str, float], None]


def run_agents(
    jobs: Sequence[AgentJob],
    *,
    cap: int,
    on_state: State | None = None,
    grace: float = GRACE,
    owner: Owner | None = None,
) -> list[AgentRun]:
    """Run agents at once, at most `cap` at a time and never two of one `key` together, each as
    run_agent runs one; results in the order of `jobs`. Two of one key never run together in
    this process at all, whatever the call (`start mcp` answers several ask calls at once): a
    job waits for the other call's run to end.

    On SIGINT, SIGTERM or SIGHUP (from the main thread) no job starts any more, every running
    process group gets SIGTERM, `grace` seconds, then SIGKILL, and the signal raises as in
    shell.run_all. `owner` is told of every group, as run_agent tells it; without one, one
    watchdog watches every group of the call.
    """
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    groups: set[int] = set()
    guard = threading.Lock()
    stopped = threading.Event()
    began = time.monotonic()

    def state(index: int, what: str) -> None:
        if on_state is not None:
            on_state(index, what, time.monotonic() - began)

    def started(pgid: int) -> None:
        with guard:
            groups.add(pgid)
        if stopped.is_set():  # a signal came while it started: it must not run on
            kill_group(pgid)

    def one(index: int, job: AgentJob) -> AgentRun:
        stop_here = AgentRun(job.argv, None, False, "", "", 0.0, "not started: stopped")
        same = _one_at_a_time(job.key)
        # Short waits: a job waiting for another call's run must see a signal that stops this one.
        while not same.acquire(timeout=0.2):
            if stopped.is_set():
                return stop_here
        try:
            if stopped.is_set():
                return stop_here
            state(index, "running")
            pgid: list[int] = []

            def mine(found: int) -> None:
                pgid.append(found)
                started(found)

            done = run_agent(
                job.argv, job.env, job.cwd, timeout=job.timeout, stdin=job.stdin,
                grace=grace, on_start=mine, owner=owner, limit=job.limit,
            )  # fmt: skip
            with guard:
                groups.difference_update(pgid)
        finally:
            same.release()
        ended = done.error is not None or done.returncode != 0
        state(index, "timed out" if done.timed_out else "failed" if ended else "done")
        return done

    with (
        watchdog.watching(owner) as owner,
        Stop() as stop,
        ThreadPoolExecutor(max_workers=max(1, cap)) as pool,
    ):
        for index in range(len(jobs)):
            state(index, "waiting")
        futures = [pool.submit(one, index, job) for index, job in enumerate(jobs)]
        try:
            pending = set(futures)
            while pending:
                # Short waits: the main thread must come back to Python for a signal to raise.
                _, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in futures:
                    failure = future.exception() if future.done() else None
                    if failure is not None:
                        raise failure
        except BaseException:
            stop.hold += 1
            stopped.set()
            with guard:
                targets = list(groups)
            for pgid in targets:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and not all(f.done() for f in futures):
                time.sleep(0.05)
            with guard:
                targets = list(groups)
            for pgid in targets:
                kill_group(pgid)
            raise
        return [future.result() for future in futures]
