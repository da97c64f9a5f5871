"""The processes start runs, task commands (start.proc.shell) and headless agents
(start.proc.agents) alike: each started in a session of its own (`spawn`), awaited without being
reaped (`wait`), ended with its whole process group (SIGTERM, a grace, SIGKILL: `end`), then reaped;
and the signals that stop them (`Stop`).

A group's owner, when the caller has one (Owner: a watchdog, `start mcp`'s requests), is told of
it from its start to its leader's reaping, and may kill it from outside the run. The leader is
reaped last: until then its pid, and so its group's id, cannot be reused, so no group is
signalled after its leader was reaped. subprocess and select are imported only when a process
starts or is awaited.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Final, NoReturn

from start.base.errors import StartError, signal_name

if TYPE_CHECKING:
    import subprocess
    from typing import Protocol

    class Owner(Protocol):
        """Told of each process group while it may be killed from outside the run.

        `adopt` comes just after the leader starts, `release` just before it is reaped (so the
        group id cannot be reused in between). Both are called from the thread that runs the
        processes; an owner that kills a group in between makes the process end as killed.

        Only annotations name it (it exists for type checkers alone): an owner is any object with
        these two methods.
        """

        def adopt(self, pgid: int) -> None: ...

        def release(self, pgid: int) -> None: ...


# How long a headless agent's process group has between SIGTERM and SIGKILL (start.proc.agents), and
# the groups start leaves behind when it is killed (start.proc.watchdog).
GRACE: Final = 5.0
# Without pidfd_open, a leader is polled this often at most.
POLL_MAX: Final = 0.05
# The longest single wait; deadlines are checked at least this often.
MAX_WAIT: Final = 3600.0
STOP_SIGNALS: Final = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


# --- the signals that stop a run --------------------------------------------------------------


class StoppedError(StartError):
    """SIGTERM or SIGHUP arrived while commands or agents ran; they were ended. Exit 128 + N.

    (SIGINT, Ctrl-C, is a KeyboardInterrupt, after the same cleanup.)
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"stopped by {signal_name(signum)}; the running commands were killed")


class Stop:
    """SIGINT, SIGTERM and SIGHUP become StoppedError while processes run (main thread only).

    Inside `held()` a signal is remembered and raised at its end, so a process is never started
    without being tracked, nor reaped without being accounted for.
    """

    __slots__ = ("hold", "pending", "saved")

    def __init__(self) -> None:
        self.hold = 0
        self.pending: int | None = None
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> Stop:
        for signum in STOP_SIGNALS:
            try:
                self.saved[signum] = signal.signal(signum, self.handle)
            except ValueError:  # not the main thread: signals are not ours to handle
                break
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self.saved.items():
            # None: the handler was set outside Python and cannot be put back; the default is.
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)

    def handle(self, signum: int, frame: object) -> None:
        if self.hold:
            if self.pending is None:
                self.pending = signum
            return
        _stop(signum)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.hold += 1
        try:
            yield
        finally:
            self.hold -= 1
        if not self.hold and self.pending is not None:
            _stop(self.pending)


def _stop(signum: int) -> NoReturn:
    raise stop_error(signum)


def stop_error(signum: int) -> BaseException:
    """What a stop by `signum` raises: Ctrl-C stays a KeyboardInterrupt, which the CLI reports as
    "interrupted" (130); SIGTERM and SIGHUP are a StoppedError (128 + N)."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return StoppedError(signum)


def signal_of(error: BaseException) -> int | None:
    """The signal that `error` stands for (KeyboardInterrupt: SIGINT; StoppedError: its own);
    None for any other error."""
    if isinstance(error, StoppedError):
        return error.signum
    if isinstance(error, KeyboardInterrupt):
        return int(signal.SIGINT)
    return None


# --- a child and its process group --------------------------------------------------------


class Child:
    """A process started by `spawn`: the leader of a process group of its own (its pid is the
    group's id), from its start to its reaping."""

    __slots__ = ("_fd", "_gap", "kill_at", "owner", "pid", "popen")

    def __init__(self, popen: subprocess.Popen[bytes], owner: Owner | None) -> None:
        self.popen = popen  # its returncode is set once the leader is reaped
        self.pid = popen.pid
        self.owner = owner
        self.kill_at: float | None = None  # once `terminate`d: when the group gets SIGKILL
        self._fd: int | None = None  # the pidfd once `watch` opened it; -1: there is none
        self._gap = 0.001

    @property
    def returncode(self) -> int | None:
        """The leader's exit status once it is reaped (-N: killed by signal N)."""
        return self.popen.returncode

    def exited(self) -> bool:
        """Whether the leader has exited, without reaping it (see leader_exited)."""
        return leader_exited(self.popen)

    def watch(self) -> int | None:
        """A descriptor that polls readable once the leader has exited (its pidfd, opened once
        and closed by `reap`); None where there is none: then ask `exited` again after `gap()`."""
        if self._fd is None:
            self._fd = -1
            opener = getattr(os, "pidfd_open", None)
            if opener is not None:
                with contextlib.suppress(OSError):
                    self._fd = opener(self.pid)
        return self._fd if self._fd >= 0 else None

    def gap(self) -> float:
        """How long to wait before asking `exited` again, without a pidfd: 1 ms at first,
        doubling up to POLL_MAX."""
        gap, self._gap = self._gap, min(self._gap * 2, POLL_MAX)
        return gap

    def terminate(self, grace: float) -> None:
        """Once: SIGTERM to the group and its SIGKILL due `grace` seconds later (`due`); with
        no grace, SIGKILL now."""
        if self.kill_at is not None:
            return
        self.kill_at = time.monotonic() + grace
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGTERM if grace > 0 else signal.SIGKILL)

    def due(self, now: float) -> bool:
        """Whether it is to be reaped: its leader has exited, or its grace is over."""
        return (self.kill_at is not None and now >= self.kill_at) or self.exited()

    def reap(self) -> int:
        """SIGKILL to the group (what the leader left in it too), the owner told, then the
        leader reaped; its exit status. Call it with signals held (Stop.held)."""
        kill_group(self.pid)
        if self.owner is not None:
            self.owner.release(self.pid)
        returncode = self.popen.wait()
        if self._fd is not None and self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        return returncode


def spawn(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str] | None,
    stdout: int | IO[bytes],
    stderr: int | IO[bytes],
    stdin: str | None = None,
    owner: Owner | None = None,
) -> Child:
    """Start `argv` in `cwd` in a new session (its own process group), stdin from the file
    `stdin` or /dev/null, with `env` (None: this process's environment, `os.environ` and all it
    was given), and tell `owner` of its group. Call it with signals held (Stop.held).

    Raises OSError when it cannot start. subprocess gives the process the default SIGPIPE and
    SIGXFSZ back (Python ignores them, and an ignored signal stays ignored across exec), so
    `git log | head -1` ends as it would in a shell, and closes every descriptor but 0, 1 and 2.
    """
    import subprocess

    source = os.open(stdin, os.O_RDONLY | os.O_CLOEXEC) if stdin else subprocess.DEVNULL
    try:
        popen = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=source, stdout=stdout, stderr=stderr,
            start_new_session=True,
        )  # fmt: skip
    finally:
        if stdin:
            os.close(source)
    if owner is not None:
        owner.adopt(popen.pid)
    return Child(popen, owner)


def wait(children: Collection[Child], until: float) -> None:
    """Wait until the leader of one of `children` has exited (at once if one has), or the
    monotonic clock reaches `until`, without reaping any. A signal's handler may raise."""
    import select

    poll = select.poll()
    now = time.monotonic()
    wake = until
    for child in children:
        if child.exited():
            return
        fd = child.watch()
        if fd is None:
            wake = min(wake, now + child.gap())
        else:
            poll.register(fd, select.POLLIN)
    if wake > now:
        poll.poll(min(wake - now, MAX_WAIT) * 1000)


def end(children: Iterable[Child], grace: float) -> None:
    """End every group: SIGTERM, up to `grace` seconds for each leader to exit (one already
    `terminate`d keeps its own), SIGKILL, and each leader reaped. Call it with signals held."""
    left = list(children)
    for child in left:
        child.terminate(grace)
    while left:
        now = time.monotonic()
        for child in [child for child in left if child.due(now)]:
            child.reap()
            left.remove(child)
        if left:
            wait(left, min(child.kill_at or now for child in left))


def kill_group(pgid: int, signum: int = signal.SIGKILL) -> None:
    """SIGKILL (or `signum`) to a process group, if it is still there."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def leader_exited(process: subprocess.Popen[bytes]) -> bool:
    """Whether the leader has exited, without reaping it (so its group id stays reserved).

    Where there is no waitid (macOS), an exited leader is reaped, and its Popen keeps its status.
    """
    exited = pid_exited(process.pid)
    return process.poll() is not None if exited is None else exited


def pid_exited(pid: int) -> bool | None:
    """Whether this process's child `pid` has exited, without reaping it (from any thread);
    None where that cannot be told without reaping it (no waitid: macOS)."""
    waitid = getattr(os, "waitid", None)
    nowait = getattr(os, "WNOWAIT", None)
    if waitid is None or nowait is None:
        return None
    try:
        info = waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | nowait)
    except ChildProcessError:
        return True
    return info is not None
