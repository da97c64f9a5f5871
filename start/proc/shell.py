"""Runs shell commands: own process group, stdin from /dev/null, per-command timeout, output cap,
one pipe for stdout and stderr (so their order is kept), and no orphans when start is stopped.

Each command is a start.proc.process Child: started, awaited, ended and reaped there, as headless
agents are (start.proc.agents, which a launch never imports); this module reads their pipes."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from start.base import fs, paths
from start.base.errors import StartError, signal_name
from start.base.record import Record
from start.proc import process
from start.proc.process import STOP_SIGNALS as STOP_SIGNALS
from start.proc.process import Stop
from start.proc.process import kill_group as kill_group

if TYPE_CHECKING:
    # What the callers of run_all name the owner of their commands' groups.
    from start.proc.process import Owner as Owner

# Commands start with subprocess.Popen (start.proc.process) and are watched with select.poll.
# subprocess, fcntl and select are imported only when a command runs: a launch that runs none
# does without them (tests/test_import_hygiene.py).

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

# The most one read takes. Its buffer is allocated and zeroed on every run, so it stays small.
_CHUNK: Final = 1 << 16
# A bigger pipe means fewer wake-ups per megabyte; 1 MiB is the default unprivileged maximum.
_PIPE_SIZE: Final = 1 << 20
_LEADER: Final = -1  # what a leader's pidfd is watched for; a pipe is watched for its own fd
_FOREVER: Final = float("inf")
# How long commands run before `progress` is first told about them.
PROGRESS_DELAY: Final = 0.3


class ShellNotFoundError(StartError):
    """The configured shell is neither on PATH nor an executable path."""

    def __init__(self, shell: str) -> None:
        self.shell = shell
        super().__init__(f"shell '{shell}' not found on PATH")


class CommandSpec(Record):
    command: str
    shell: str | None  # None: bash if it is on PATH, else sh
    timeout: float  # seconds
    cwd: str
    output_limit: int = fs.DEFAULT_OUTPUT_LIMIT  # bytes kept of the output (and of each stream)
    # One pipe for stdout and stderr keeps their order; `separate` captures them apart as well
    # (two pipes: `output` is then in order of arrival, which can differ from the order written).
    separate: bool = False
    label: str = ""  # how progress names it, e.g. "context git-status"
    # Variables added to start's environment: values reach the command without shell parsing.
    env: Mapping[str, str] | None = None
    # Commands of one non-empty chain run one after another, in the order given (the others at
    # once): the shell commands of one Gemini CLI command, which runs them in order.
    chain: str = ""
    # The command's positional parameters ($1 ... after $0, "start"), which a POSIX shell never
    # parses: `exec "$@"` runs them as a program's argv (start mcp's Taskfile tools).
    args: tuple[str, ...] = ()


class CommandResult(Record):
    spec: CommandSpec
    argv: tuple[str, ...]  # what was executed; empty if nothing was
    returncode: int | None  # None if it never started or timed out; -N if killed by signal N
    timed_out: bool
    output: str  # stdout and stderr together, in order
    stdout: str  # only with spec.separate, else ""
    stderr: str  # only with spec.separate, else ""
    truncated: int  # bytes of `output` dropped by the cap
    duration: float
    error: str | None  # why it could not start, else None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.returncode == 0

    @property
    def status(self) -> str:
        """What happened, in words: `failed with exit code 3`, `killed by SIGKILL`, ..."""
        if self.error is not None:
            return f"could not start: {self.error}"
        if self.timed_out:
            return f"timed out after {self.spec.timeout:g} s"
        if self.returncode is not None and self.returncode < 0:
            return f"killed by {signal_name(-self.returncode)}"
        if self.returncode == 0:
            return "succeeded"
        return f"failed with exit code {self.returncode}"


def shell_argv(shell: str | None, command: str, args: Sequence[str] = ()) -> list[str]:
    """The interpreter (resolved to a path), its run-this-program flag, the command, and with
    `args`, $0 ("start") and the positional parameters.

    Raises ShellNotFoundError when the interpreter is not on PATH or not executable.
    """
    if shell is None:
        found = paths.which("bash")
        name = "bash"
        if found is None:
            found = paths.which("sh")
            name = "sh"
    else:
        name = os.path.expanduser(shell)
        found = paths.which(name) if name.strip() else None
    if found is None:
        raise ShellNotFoundError(shell if shell is not None else "sh")
    return [found, _flag(os.path.basename(name)), command, *(("start", *args) if args else ())]


def _flag(basename: str) -> str:
    # python3.12, perl5.36, ruby3.2: the versioned name takes the flag of its family.
    return _FLAGS.get(basename) or _FLAGS.get(basename.rstrip("0123456789.-"), "-c")


Progress = Callable[[list[str]], None]


def run_all(
    specs: Sequence[CommandSpec],
    progress: Progress | None = None,
    owner: Owner | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> list[CommandResult]:
    """Run every command at once, all driven from one poll loop; results in input order. A
    command with a `chain` starts when the one before it in that chain has ended.

    While they run (from the main thread), SIGINT, SIGTERM and SIGHUP kill every command's
    process group and raise KeyboardInterrupt (SIGINT) or StoppedError (128 + N). `progress`,
    when given, is called with the labels of the commands still running once they have taken
    PROGRESS_DELAY seconds, again whenever that list changes, and with [] at the end if it was
    called before. `owner`, when given, is told of every command's process group (see Owner).
    `meanwhile`, when given, is called once the first commands have started and before any is
    waited for: work that needs none of their output is done while they run. If it raises,
    the commands are killed, as for a signal.
    """
    results: dict[int, CommandResult] = {}
    waiting: dict[str, list[int]] = {}  # each chain's commands not started yet, in order
    first: list[int] = []
    for index, spec in enumerate(specs):
        if spec.chain in waiting:
            waiting[spec.chain].append(index)
        else:
            first.append(index)
            if spec.chain:
                waiting[spec.chain] = []

    def start(index: int) -> None:
        """Start a command; one that cannot start lets the next of its chain start."""
        while True:
            with stop.held():
                started = _start(specs[index], index, owner)
                if not isinstance(started, CommandResult):
                    loop.add(started)
                    return
            results[index] = started
            rest = waiting.get(specs[index].chain)
            if not rest:
                return
            index = rest.pop(0)

    ended: list[_Job] = []

    def resume() -> None:
        """Start the next command of each chain whose command has ended."""
        while ended:
            rest = waiting.get(ended.pop().spec.chain)
            if rest:
                start(rest.pop(0))

    with Stop() as stop, _Loop(stop, progress) as loop:
        if waiting:
            loop.ended, loop.resume = ended.append, resume
        try:
            for index in first:
                start(index)
            if meanwhile is not None and first:
                meanwhile()
            for job, result in loop.drive():
                results[job.index] = result
        except BaseException:
            # A signal, KeyboardInterrupt or a bug: no command may outlive the run, and nothing
            # may interrupt the cleanup. Only unfinished jobs are killed: a finished one's leader
            # is reaped, so its group id may now be reused.
            stop.hold += 1
            for job in loop.jobs:
                job.close()
            process.end([job.child for job in loop.jobs], grace=0)
            raise
        finally:
            loop.clear_progress()
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
        """The kept bytes as text (the one text rule, with the truncation marker), and the
        number of bytes dropped, counting a character split by the cap."""
        data = bytes(self.data)
        dropped = self.dropped
        if dropped:
            dropped += len(data) - fs.utf8_boundary(data)
        return fs.capped_text(data, self.dropped), dropped


class _Job:
    """One running command and what it has printed so far."""

    __slots__ = (
        "argv", "captures", "child", "deadline", "index", "leader_fd", "open_fds", "output",
        "poll_at", "spec", "started",
    )  # fmt: skip

    def __init__(
        self,
        *,
        index: int,
        spec: CommandSpec,
        argv: tuple[str, ...],
        child: process.Child,
        captures: dict[int, _Capture | None],
        started: float,
    ) -> None:
        self.index = index
        self.spec = spec
        self.argv = argv
        self.child = child
        # Each pipe's own capture: stdout's and stderr's with `separate`, else None (one pipe).
        self.captures = captures
        self.started = started
        self.deadline = started + spec.timeout
        self.output = _Capture(spec.output_limit)
        self.open_fds = set(captures)
        # The leader's pidfd (the child's, which closes it), while waiting for a leader that
        # closed its pipes; where pidfds are missing, the time of the next poll of such a leader.
        self.leader_fd: int | None = None
        self.poll_at: float | None = None

    def fds(self) -> list[int]:
        return [*self.open_fds, *([self.leader_fd] if self.leader_fd is not None else [])]

    def close(self) -> None:
        """Close its pipes."""
        for fd in self.open_fds:
            os.close(fd)
        self.open_fds.clear()

    def streams(self) -> tuple[str, str]:
        """stdout and stderr as text, when captured apart."""
        if not self.spec.separate:
            return "", ""
        stdout, stderr = (c.text()[0] if c is not None else "" for c in self.captures.values())
        return stdout, stderr


def _start(spec: CommandSpec, index: int, owner: Owner | None) -> _Job | CommandResult:
    """Start a command, its output into pipes, and tell `owner` of its group. Call it with
    signals held (process.Stop.held)."""
    started = time.monotonic()

    def failed(error: str, argv: tuple[str, ...] = ()) -> CommandResult:
        duration = time.monotonic() - started
        return CommandResult(spec, argv, None, False, "", "", "", 0, duration, error)

    try:
        argv = tuple(shell_argv(spec.shell, spec.command, spec.args))
    except ShellNotFoundError as error:
        return failed(str(error))
    if not os.path.isdir(spec.cwd):
        return failed(f"working directory '{spec.cwd}' does not exist", argv)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe() if spec.separate else (None, out_w)
    readers = [fd for fd in (out_r, err_r) if fd is not None]
    try:
        for fd in readers:
            _grow_pipe(fd)
        # None: the command inherits this process's environment as it is, without a copy.
        env = {**os.environ, **spec.env} if spec.env else None
        child = process.spawn(argv, cwd=spec.cwd, env=env, stdout=out_w, stderr=err_w, owner=owner)
    except OSError as error:
        for fd in readers:
            os.close(fd)
        return failed(f"cannot start '{argv[0]}': {error.strerror or error}", argv)
    except BaseException:
        for fd in readers:
            os.close(fd)
        raise
    finally:
        os.close(out_w)
        if err_r is not None:
            os.close(err_w)
    if err_r is None:
        captures: dict[int, _Capture | None] = {out_r: None}
    else:
        captures = {out_r: _Capture(spec.output_limit), err_r: _Capture(spec.output_limit)}
    return _Job(index=index, spec=spec, argv=argv, child=child, captures=captures, started=started)


def _grow_pipe(fd: int) -> None:
    import fcntl

    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if setpipe is not None:
        # Over the system's limit the default size still works, only slower.
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, setpipe, _PIPE_SIZE)


class _Loop:
    """One poll over every command's pipes, and the shared /dev/null drain."""

    def __init__(self, stop: Stop, progress: Progress | None = None) -> None:
        import select

        self.stop = stop
        self.poll = select.poll()
        self.readable = select.POLLIN
        self.watched: dict[int, tuple[_Job, int]] = {}  # fd -> its job, and the fd or _LEADER
        self.jobs: set[_Job] = set()
        self.scratch = bytearray(_CHUNK)
        self.devnull: int | None = None
        # Linux moves pipe contents to /dev/null in the kernel; elsewhere the excess is read.
        self.splice = getattr(os, "splice", None)
        self.progress = progress
        self.progress_at = time.monotonic() + PROGRESS_DELAY if progress is not None else _FOREVER
        self.shown: list[str] | None = None  # what progress was last told
        # Told of each job once it has ended; `resume` is called between polls, where a new job
        # may start (never while a poll's events are handled: a new pipe could reuse a closed
        # pipe's descriptor, with an event still to come for it).
        self.ended: Callable[[_Job], None] | None = None
        self.resume: Callable[[], None] | None = None

    def __enter__(self) -> _Loop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.watched.clear()
        if self.devnull is not None:
            os.close(self.devnull)

    def add(self, job: _Job) -> None:
        self.jobs.add(job)
        for fd in job.captures:
            self.watch(fd, job, fd)

    def drive(self) -> list[tuple[_Job, CommandResult]]:
        done: list[tuple[_Job, CommandResult]] = []
        while self.more():
            now = time.monotonic()
            for job in [job for job in self.jobs if job.deadline <= now]:
                done.append((job, self.finish(job, timed_out=True)))
            if not self.more():
                break
            now = time.monotonic()
            self.report(now)
            wake = min(job.deadline for job in self.jobs)
            polls = [job.poll_at for job in self.jobs if job.poll_at is not None]
            if polls:
                wake = min(wake, *polls)
            if self.shown is None:
                wake = min(wake, self.progress_at)
            # In milliseconds, capped so that a huge timeout cannot overflow poll's count.
            wait = None if wake == _FOREVER else min(max(0.0, wake - now), process.MAX_WAIT) * 1000
            # Any event is a reason to read: data, or the end (POLLHUP) that reads as 0 bytes.
            for fd, _ in self.poll.poll(wait):
                job, what = self.watched[fd]
                if what == _LEADER:
                    self.unwatch(fd)
                    job.leader_fd = None
                    done.append((job, self.finish(job, timed_out=False)))
                else:
                    self.read(job, fd)
                    if not job.open_fds and job.leader_fd is None:
                        self.leader_or_finish(job, done)
            now = time.monotonic()
            for job in [job for job in self.jobs if job.poll_at is not None]:
                if job.poll_at is not None and job.poll_at <= now:
                    self.leader_or_finish(job, done)
        return done

    def more(self) -> bool:
        """Whether any job runs, once those due to start have started."""
        if self.resume is not None:
            self.resume()
        return bool(self.jobs)

    def watch(self, fd: int, job: _Job, what: int) -> None:
        self.poll.register(fd, self.readable)
        self.watched[fd] = (job, what)

    def unwatch(self, fd: int) -> None:
        self.poll.unregister(fd)
        del self.watched[fd]

    def report(self, now: float) -> None:
        """Tell `progress` what still runs, once the commands have taken PROGRESS_DELAY."""
        if self.progress is None or now < self.progress_at:
            return
        running = [
            job.spec.label or job.spec.command
            for job in sorted(self.jobs, key=lambda job: job.index)
        ]
        if running != self.shown:
            self.shown = running
            self.progress(running)

    def clear_progress(self) -> None:
        if self.progress is not None and self.shown:
            self.shown = []
            self.progress([])

    def read(self, job: _Job, fd: int) -> None:
        stream = job.captures[fd]
        full = stream.full if stream is not None else job.output.full
        # A command past its cap runs on (unlike an agent past print_answer_limit, stopped in
        # start.proc.agents): its output is still used, cut, and its exit status decides whether
        # the launch goes on; the rest is only thrown away, without memory or disk.
        if full:
            count = self.discard(fd)
            if stream is not None:
                stream.dropped += count
            job.output.dropped += count
        else:
            count = os.readv(fd, [self.scratch])
            chunk = memoryview(self.scratch)[:count]
            if stream is not None:
                stream.add(chunk)
            job.output.add(chunk)
            chunk.release()
        if count == 0:
            self.unwatch(fd)
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
        if job.child.exited():
            job.poll_at = None
            done.append((job, self.finish(job, timed_out=False)))
            return
        if job.poll_at is None:
            job.leader_fd = job.child.watch()
            if job.leader_fd is not None:
                self.watch(job.leader_fd, job, _LEADER)
                return
        job.poll_at = time.monotonic() + job.child.gap()

    def finish(self, job: _Job, *, timed_out: bool) -> CommandResult:
        with self.stop.held():
            for fd in job.fds():
                self.unwatch(fd)
            job.leader_fd = None
            job.close()
            # Its whole group is killed, then its leader reaped: its exit code, or -N when
            # signal N killed it.
            returncode = job.child.reap()
            duration = time.monotonic() - job.started
            self.jobs.discard(job)
        if self.ended is not None:
            self.ended(job)
        output, truncated = job.output.text()
        stdout, stderr = job.streams()
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
