"""The StartError tree, the Problem record and the exit-code table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from start.base.record import Record


class ExitCode:
    """Documented exit codes: docs/usage.md and ``start --help`` show this table.

    Plain ints under one name: an IntEnum is built on every launch (docs/performance.md).
    """

    OK: Final = 0
    ERROR: Final = 1
    USAGE: Final = 2
    CONFIG: Final = 3
    UNKNOWN_NAME: Final = 4
    UNTRUSTED: Final = 5
    BLOCKED: Final = 6  # --fail-if PATH: an answer holds true at PATH (a gate said block)
    OUTPUT: Final = 65  # EX_DATAERR: a --print answer is not in the task's output format
    UNSUPPORTED: Final = 69  # EX_UNAVAILABLE: not a POSIX system
    SOFTWARE: Final = 70  # EX_SOFTWARE: a bug in start
    REFUSED: Final = 75  # EX_TEMPFAIL: the board refused a claim or change (start board)
    TIMED_OUT: Final = 124  # as timeout(1): a headless run (--print) ran out of time
    NOT_EXECUTABLE: Final = 126
    NOT_FOUND: Final = 127
    HANGUP: Final = 129  # 128 + SIGHUP
    INTERRUPTED: Final = 130
    TERMINATED: Final = 143  # 128 + SIGTERM


EXIT_CODE_TABLE: tuple[tuple[int, str], ...] = (
    (ExitCode.OK, "ok (after exec, the agent's own exit status)"),
    (
        ExitCode.ERROR,
        "error (a failing task command, an oversize prompt or answer, a --print run that "
        "failed, a watched board item that failed)",
    ),
    (ExitCode.USAGE, "usage error"),
    (ExitCode.CONFIG, "config invalid"),
    (
        ExitCode.UNKNOWN_NAME,
        "unknown or ambiguous agent, role, context, task or model name; no such run (start log) "
        "or board item; no task matches (start find)",
    ),
    (ExitCode.UNTRUSTED, "project config not trusted"),
    (ExitCode.BLOCKED, "--fail-if PATH: a --print answer holds true at PATH (a gate said block)"),
    (
        ExitCode.OUTPUT,
        "a --print answer is not in the task's output format (not JSON, or not matching its "
        "schema)",
    ),
    (ExitCode.UNSUPPORTED, "not a POSIX system (start runs on Linux and macOS)"),
    (ExitCode.SOFTWARE, "internal error (a bug; --debug or START_DEBUG=1 shows the traceback)"),
    (
        ExitCode.REFUSED,
        "the board refused: the item is another's, blocked, finished or reassigned; or nothing "
        "is ready (start board)",
    ),
    (
        ExitCode.TIMED_OUT,
        "a --print run timed out (its agent, or the check of its answer, was stopped); start board "
        "watch timed out",
    ),
    (ExitCode.NOT_EXECUTABLE, "agent binary not executable"),
    (ExitCode.NOT_FOUND, "agent binary not found"),
    (ExitCode.HANGUP, "terminated by a signal (SIGHUP)"),
    (ExitCode.INTERRUPTED, "interrupted (Ctrl-C)"),
    (ExitCode.TERMINATED, "terminated by a signal (SIGTERM)"),
)


class Problem(Record):
    """One validation finding, located in a file and a dotted key path."""

    severity: str  # "error" or "warning"
    file: str | None
    key: str
    message: str
    suggestion: str | None = None
    line: int | None = None
    column: int | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    @property
    def where(self) -> str:
        """The file, or `<merged config>` for a problem of the merged result without one."""
        return str(self.file) if self.file is not None else "<merged config>"

    @property
    def detail(self) -> str:
        """`key.path: message (did you mean 'x'?)`, without the file."""
        text = f"{self.key}: {self.message}" if self.key else self.message
        if self.suggestion:
            text += f" (did you mean '{self.suggestion}'?)"
        return text

    def __str__(self) -> str:
        where = self.where
        if self.line is not None:
            where = f"{where}:{self.line}:{self.column or 1}"
        return f"{where}: {self.detail}"

    def as_dict(self) -> dict[str, object]:
        return {
            "severity": self.severity,
            "file": str(self.file) if self.file is not None else None,
            "key": self.key,
            "message": self.message,
            "suggestion": self.suggestion,
            "line": self.line,
            "column": self.column,
        }


def suggest(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The closest candidate to a mistyped word, or None."""
    import difflib  # only on an error path

    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=cutoff)
    return matches[0] if matches else None


class StartError(Exception):
    """Base of every error the user can see; ``str(error)`` is the whole message."""

    exit_code: int = ExitCode.ERROR


class UsageError(StartError):
    exit_code = ExitCode.USAGE


class ConfigError(StartError):
    """The configuration has errors; carries every problem found."""

    exit_code = ExitCode.CONFIG

    def __init__(self, problems: Sequence[Problem], headline: str | None = None) -> None:
        self.problems = tuple(problems)
        self.headline = headline
        errors = sum(1 for p in self.problems if p.is_error)
        head = headline or f"configuration is invalid ({errors} error{'s' if errors != 1 else ''})"
        lines = [head, *problem_lines(self.problems)]
        lines.append("Run 'start config validate' to see every problem.")
        super().__init__("\n".join(lines))


def problem_lines(problems: Iterable[Problem]) -> list[str]:
    """Problems grouped by file, the file named once: `  LINE:COL: severity: key: message`."""
    groups: dict[str, list[Problem]] = {}
    for problem in problems:
        groups.setdefault(problem.where, []).append(problem)
    lines = []
    for where, found in groups.items():
        lines.append(f"  {where}")
        for problem in sorted(found, key=lambda p: p.line or 0):
            at = f"{problem.line}:{problem.column or 1}: " if problem.line is not None else ""
            lines.append(f"    {at}{problem.severity}: {problem.detail}")
    return lines


class UnknownNameError(StartError):
    """An agent, role, context or task name that does not exist or is ambiguous."""

    exit_code = ExitCode.UNKNOWN_NAME

    def __init__(
        self,
        what: str,
        name: str,
        known: Iterable[str],
        *,
        candidates: Sequence[str] = (),
        meaning: Sequence[str] = (),
    ) -> None:
        """`meaning`: the names NAME's words suggest, best first (start.config.finding), which
        the hint gives after the name spelled closest to NAME, if any."""
        self.what = what
        self.name = name
        self.candidates = tuple(candidates)
        self.meaning: tuple[str, ...] = ()
        known = list(known)
        if candidates:
            listed = ", ".join(candidates)
            message = f"{what} '{name}' is ambiguous; it matches: {listed}"
        else:
            message = f"unknown {what} '{name}'"
            close = suggest(name, known)
            self.meaning = tuple(other for other in meaning if other != close)
            meant = ", ".join(f"'{other}'" for other in self.meaning)
            if close and meant:
                message += f"; did you mean '{close}' (by spelling) or {meant} (by meaning)?"
            elif meant:
                message += f"; did you mean {meant} (by meaning)?"
            elif close:
                message += f"; did you mean '{close}'?"
            elif known:
                message += f"; known {what}s: {', '.join(sorted(known))}"
            else:
                message += f"; no {what}s are defined"
        super().__init__(message)


class CommandError(StartError):
    """A role or task command failed, timed out or could not start.

    ``str(error)`` is short: one line when the command printed one line (a script's own message,
    such as "not a git repository"), else the headline, the command and at most about 20 lines of
    output, head and tail. ``in_full()`` is the same error showing all of the output (--debug).
    """

    def __init__(
        self,
        source: str,
        command: str,
        *,
        returncode: int | None,
        output: str,
        timeout: float | None = None,
        reason: str | None = None,
        full: bool = False,
    ) -> None:
        self.source = source
        self.command = command
        self.returncode = returncode
        self.output = output
        self.timeout = timeout
        self.reason = reason
        self.full = full
        super().__init__(self._message())

    def in_full(self) -> CommandError:
        """The same error, with every line of the command's output."""
        return CommandError(
            self.source,
            self.command,
            returncode=self.returncode,
            output=self.output,
            timeout=self.timeout,
            reason=self.reason,
            full=True,
        )

    def _message(self) -> str:
        lines = self.output.rstrip("\n").split("\n") if self.output.strip() else []
        said = [line for line in lines if line.strip()]
        if self.reason is not None:
            return (
                f"{self.source} command could not start: {self.reason}\n  command: {self.command}"
            )
        if self.timeout is not None:
            status = f"timed out after {self.timeout:g} s"
        elif self.returncode is not None and self.returncode < 0:
            status = f"was killed by {signal_name(-self.returncode)}"
        else:
            status = f"failed with exit code {self.returncode}"
            if len(said) == 1 and not self.full:
                return f"{self.source} failed: {_clip(said[0].strip())}"
        head = [f"{self.source} command {status}", f"  command: {self.command}"]
        if not lines:
            return "\n".join([*head, "  output: (none)"])
        if self.full or len(lines) <= SHOWN_LINES + 1:
            shown = [f"    {line}" if self.full else f"    {_clip(line)}" for line in lines]
            return "\n".join([*head, "  output:", *shown])
        half = SHOWN_LINES // 2
        cut = len(lines) - 2 * half
        return "\n".join(
            [
                *head,
                f"  output ({len(lines):,} lines; --debug shows them all):",
                *(f"    {_clip(line)}" for line in lines[:half]),
                f"    [... {cut:,} lines cut ...]",
                *(f"    {_clip(line)}" for line in lines[-half:]),
            ]
        )


# A failing command's output is shown as this many lines, head and tail, unless --debug.
SHOWN_LINES = 20
_LINE_WIDTH = 300


def _clip(line: str) -> str:
    if len(line) <= _LINE_WIDTH:
        return line
    return f"{line[:_LINE_WIDTH]} [... {len(line) - _LINE_WIDTH:,} more characters]"


def signal_name(number: int) -> str:
    """SIGKILL for 9; `signal 99` for a number the OS has no name for."""
    import signal  # an error path only

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class NothingToDoError(StartError):
    """A task's command printed nothing and the task says what that means (`if_no_output`)."""


class UnsupportedSystemError(StartError):
    """`start` runs on POSIX systems only: it needs `fcntl`, process groups and POSIX signals."""

    exit_code = ExitCode.UNSUPPORTED

    def __init__(self, missing: str) -> None:
        super().__init__(f"needs a POSIX system (Linux, macOS); {missing}")


# The POSIX-only standard modules `start` imports: without one, this is not a system it runs on.
POSIX_MODULES = frozenset({"fcntl", "termios", "pty", "_posixsubprocess"})


class AgentNotFoundError(StartError):
    exit_code = ExitCode.NOT_FOUND


class AgentNotExecutableError(StartError):
    exit_code = ExitCode.NOT_EXECUTABLE


class UntrustedError(StartError):
    exit_code = ExitCode.UNTRUSTED
