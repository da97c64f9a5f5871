"""Runs shell commands: own process group, stdin from /dev/null, per-command timeout, output cap."""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NamedTuple

from start.errors import StartError

DEFAULT_OUTPUT_LIMIT: Final = 1_048_576

# The flag that makes each interpreter run its next argument as a program.
_FLAGS: Final[dict[str, str]] = {
    "sh": "-c",
    "bash": "-c",
    "zsh": "-c",
    "dash": "-c",
    "ksh": "-c",
    "mksh": "-c",
    "fish": "-c",
    "python": "-c",
    "python3": "-c",
    "node": "-e",
    "ruby": "-e",
    "perl": "-E",
    "deno": "eval",
    "pwsh": "-Command",
    "powershell": "-Command",
}

_CHUNK: Final = 1 << 20
# A bigger pipe means fewer wake-ups per megabyte; 1 MiB is the default unprivileged maximum.
_PIPE_SIZE: Final = 1 << 20
_STDOUT: Final = 1
_STDERR: Final = 2
_LEADER: Final = 3
# Without pidfd_open, a leader that closed its pipes but keeps running is polled this often at most.
_POLL_MAX: Final = 0.05
_FOREVER: Final = float("inf")


class ShellNotFoundError(StartError):
    """The configured shell is neither on PATH nor an executable path."""

    def __init__(self, shell: str) -> None:
        self.shell = shell
        super().__init__(f"shell '{shell}' not found on PATH")


class CommandSpec(NamedTuple):
    command: str
    shell: str | None  # None: bash if it is on PATH, else sh
    timeout: float  # seconds
    cwd: Path
    output_limit: int = DEFAULT_OUTPUT_LIMIT  # bytes kept of each of output, stdout and stderr


class CommandResult(NamedTuple):
    spec: CommandSpec
    argv: tuple[str, ...]  # what was executed; empty if nothing was
    returncode: int | None  # None if it never started or timed out
    timed_out: bool
    output: str  # stdout and stderr interleaved in order of arrival
    stdout: str
    stderr: str
    truncated: int  # bytes of `output` dropped by the cap
    duration: float
    error: str | None  # why it could not start, else None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.returncode == 0


def shell_argv(shell: str | None, command: str) -> list[str]:
    """The interpreter (resolved to a path), its run-this-program flag, and the command.

    Raises ShellNotFoundError when the interpreter is not on PATH or not executable.
    """
    if shell is None:
        found = shutil.which("bash")
        name = "bash"
        if found is None:
            found = shutil.which("sh")
            name = "sh"
    else:
        name = os.path.expanduser(shell)
        found = shutil.which(name)
    if found is None:
        raise ShellNotFoundError(shell if shell is not None else "sh")
    return [found, _flag(os.path.basename(name)), command]


def _flag(basename: str) -> str:
    flag = _FLAGS.get(basename)
    if flag is None:
        # python3.12, perl5.36, ruby3.2: the versioned name takes the flag of its family.
        flag = _FLAGS.get(basename.rstrip("0123456789.-"), "-c")
    return flag


def run(spec: CommandSpec) -> CommandResult:
    return run_all([spec])[0]


def run_all(specs: Sequence[CommandSpec]) -> list[CommandResult]:
    """Run every command at once, all driven from one selector loop; results in input order."""
    results: dict[int, CommandResult] = {}
    with _Loop() as loop:
        try:
            for index, spec in enumerate(specs):
                started = _start(spec, index)
                if isinstance(started, CommandResult):
                    results[index] = started
                else:
                    loop.add(started)
            for job, result in loop.drive():
                results[job.index] = result
        except BaseException:
            # KeyboardInterrupt (or a bug): no command may outlive the run. Only unfinished jobs
            # are killed: a finished one's leader is reaped, so its group id may now be reused.
            for job in loop.jobs:
                _kill_group(job.proc.pid)
            for job in loop.jobs:
                job.close()
                job.proc.wait()
            raise
    return [results[index] for index in range(len(specs))]


class _Capture:
    """The first `limit` bytes of a byte stream, and a count of the rest."""

    __slots__ = ("data", "dropped", "limit")

    def __init__(self, limit: int) -> None:
        self.data = bytearray()
        self.dropped = 0
        self.limit = max(0, limit)

    @property
    def full(self) -> bool:
        return len(self.data) >= self.limit

    def add(self, chunk: bytes | memoryview) -> None:
        room = self.limit - len(self.data)
        if room >= len(chunk):
            self.data += chunk
        else:
            if room > 0:
                self.data += chunk[:room]
            self.dropped += len(chunk) - max(room, 0)

    def text(self) -> tuple[str, int]:
        """The kept bytes decoded, with the truncation marker; and the number of bytes dropped."""
        data = self.data
        dropped = self.dropped
        if dropped:
            cut = _utf8_boundary(data)
            dropped += len(data) - cut
            del data[cut:]
        text = data.decode("utf-8", "replace").replace("\x00", "\ufffd")
        if dropped:
            if text and not text.endswith("\n"):
                text += "\n"
            text += f"[... truncated {dropped} bytes ...]\n"
        return text, dropped


def _utf8_boundary(data: bytearray) -> int:
    """Where to cut `data` so that a character split by the cap is dropped whole."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte & 0xC0 == 0x80:  # a continuation byte: keep looking for the lead
            continue
        need = 4 if byte >= 0xF0 else 3 if byte >= 0xE0 else 2 if byte >= 0xC2 else 1
        return end - back if 0xC2 <= byte <= 0xF4 and back < need else end
    return end


class _Job:
    """One running command and what it has printed so far."""

    __slots__ = (
        "argv", "deadline", "err_fd", "index", "leader_fd", "open_fds", "out_fd", "output",
        "poll_at", "poll_gap", "proc", "spec", "started", "stderr", "stdout",
    )  # fmt: skip

    def __init__(
        self,
        *,
        index: int,
        spec: CommandSpec,
        argv: tuple[str, ...],
        proc: subprocess.Popen[bytes],
        out_fd: int,
        err_fd: int,
        started: float,
        deadline: float,
        output: _Capture,
        stdout: _Capture,
        stderr: _Capture,
        open_fds: set[int],
    ) -> None:
        self.index = index
        self.spec = spec
        self.argv = argv
        self.proc = proc
        self.out_fd = out_fd
        self.err_fd = err_fd
        self.started = started
        self.deadline = deadline
        self.output = output
        self.stdout = stdout
        self.stderr = stderr
        self.open_fds = open_fds
        self.leader_fd: int | None = (
            None  # a pidfd, while waiting for a leader that closed its pipes
        )
        self.poll_at: float | None = (
            None  # the next poll of such a leader, where pidfds are missing
        )
        self.poll_gap = 0.001

    def fds(self) -> list[int]:
        return [*self.open_fds, *([self.leader_fd] if self.leader_fd is not None else [])]

    def close(self) -> None:
        for fd in self.fds():
            os.close(fd)
        self.open_fds.clear()
        self.leader_fd = None


def _start(spec: CommandSpec, index: int) -> _Job | CommandResult:
    started = time.monotonic()

    def failed(error: str, argv: tuple[str, ...] = ()) -> CommandResult:
        duration = time.monotonic() - started
        return CommandResult(spec, argv, None, False, "", "", "", 0, duration, error)

    try:
        argv = tuple(shell_argv(spec.shell, spec.command))
    except ShellNotFoundError as error:
        return failed(str(error))
    if not spec.cwd.is_dir():
        return failed(f"working directory '{spec.cwd}' does not exist", argv)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        for fd in (out_r, err_r):
            _grow_pipe(fd)
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            cwd=spec.cwd,
            start_new_session=True,
        )
    except OSError as error:
        os.close(out_r)
        os.close(err_r)
        return failed(f"cannot start '{argv[0]}': {error.strerror or error}", argv)
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    return _Job(
        index=index,
        spec=spec,
        argv=argv,
        proc=proc,
        out_fd=out_r,
        err_fd=err_r,
        started=started,
        deadline=started + spec.timeout,
        output=_Capture(spec.output_limit),
        stdout=_Capture(spec.output_limit),
        stderr=_Capture(spec.output_limit),
        open_fds={out_r, err_r},
    )


def _grow_pipe(fd: int) -> None:
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if setpipe is not None:
        # Over the system's limit the default size still works, only slower.
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, setpipe, _PIPE_SIZE)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _Loop:
    """One selector over every command's pipes, and the shared /dev/null drain."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.jobs: set[_Job] = set()
        self.scratch = bytearray(_CHUNK)
        self.devnull: int | None = None
        # Linux moves pipe contents to /dev/null in the kernel; elsewhere the excess is read.
        self.splice = getattr(os, "splice", None)

    def __enter__(self) -> _Loop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.selector.close()
        if self.devnull is not None:
            os.close(self.devnull)

    def add(self, job: _Job) -> None:
        self.jobs.add(job)
        self.selector.register(job.out_fd, selectors.EVENT_READ, (job, _STDOUT))
        self.selector.register(job.err_fd, selectors.EVENT_READ, (job, _STDERR))

    def drive(self) -> list[tuple[_Job, CommandResult]]:
        done: list[tuple[_Job, CommandResult]] = []
        while self.jobs:
            now = time.monotonic()
            for job in [job for job in self.jobs if job.deadline <= now]:
                done.append((job, self.finish(job, timed_out=True)))
            if not self.jobs:
                break
            wake = min(job.deadline for job in self.jobs)
            polls = [job.poll_at for job in self.jobs if job.poll_at is not None]
            if polls:
                wake = min(wake, *polls)
            wait = None if wake == _FOREVER else max(0.0, wake - now)
            for key, _ in self.selector.select(wait):
                job, what = key.data
                if what == _LEADER:
                    self.selector.unregister(key.fd)
                    os.close(key.fd)
                    job.leader_fd = None
                    done.append((job, self.finish(job, timed_out=False)))
                else:
                    self.read(job, key.fd, what)
                    if not job.open_fds and job.leader_fd is None:
                        self.leader_or_finish(job, done)
            now = time.monotonic()
            for job in [job for job in self.jobs if job.poll_at is not None]:
                if job.poll_at is not None and job.poll_at <= now:
                    self.leader_or_finish(job, done)
        return done

    def read(self, job: _Job, fd: int, what: int) -> None:
        stream = job.stdout if what == _STDOUT else job.stderr
        if stream.full:
            count = self.discard(fd)
            stream.dropped += count
            job.output.dropped += count
        else:
            count = os.readv(fd, [self.scratch])
            chunk = memoryview(self.scratch)[:count]
            stream.add(chunk)
            job.output.add(chunk)
            chunk.release()
        if count == 0:
            self.selector.unregister(fd)
            os.close(fd)
            job.open_fds.discard(fd)

    def discard(self, fd: int) -> int:
        """Move whatever the pipe holds to /dev/null without copying it through Python."""
        if self.splice is not None:
            if self.devnull is None:
                self.devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
            try:
                count: int = self.splice(fd, self.devnull, _PIPE_SIZE)
                return count
            except OSError:
                self.splice = None  # e.g. EINVAL on a kernel or fs without splice to /dev/null
        return os.readv(fd, [self.scratch])

    def leader_or_finish(self, job: _Job, done: list[tuple[_Job, CommandResult]]) -> None:
        """Both pipes are closed: finish now if the leader has exited, else wait for it."""
        if _exited(job.proc):
            job.poll_at = None
            done.append((job, self.finish(job, timed_out=False)))
            return
        if job.poll_at is None and hasattr(os, "pidfd_open"):
            try:
                job.leader_fd = os.pidfd_open(job.proc.pid)
            except OSError:
                pass
            else:
                self.selector.register(job.leader_fd, selectors.EVENT_READ, (job, _LEADER))
                return
        job.poll_at = time.monotonic() + job.poll_gap
        job.poll_gap = min(job.poll_gap * 2, _POLL_MAX)

    def finish(self, job: _Job, *, timed_out: bool) -> CommandResult:
        # Kill the group before reaping the leader: while the leader is unreaped its pid, and so
        # the group id, cannot be reused by an unrelated process.
        _kill_group(job.proc.pid)
        returncode = job.proc.wait()
        duration = time.monotonic() - job.started
        for fd in job.fds():
            self.selector.unregister(fd)
        job.close()
        self.jobs.discard(job)
        output, truncated = job.output.text()
        stdout, _ = job.stdout.text()
        stderr, _ = job.stderr.text()
        return CommandResult(
            spec=job.spec,
            argv=job.argv,
            returncode=None if timed_out else returncode,
            timed_out=timed_out,
            output=output,
            stdout=stdout,
            stderr=stderr,
            truncated=truncated,
            duration=duration,
            error=None,
        )


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the leader has exited, without reaping it (so its group id stays reserved)."""
    waitid = getattr(os, "waitid", None)
    nowait = getattr(os, "WNOWAIT", None)
    if waitid is None or nowait is None:
        return proc.poll() is not None
    try:
        info = waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | nowait)
    except ChildProcessError:
        return True
    return info is not None
