"""The StartError tree, the Problem record and the exit-code table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum
from pathlib import Path
from typing import NamedTuple


class ExitCode(IntEnum):
    """Documented exit codes: docs/usage.md and ``start --help`` show this table."""

    OK = 0
    ERROR = 1
    USAGE = 2
    CONFIG = 3
    UNKNOWN_NAME = 4
    UNTRUSTED = 5
    NOT_EXECUTABLE = 126
    NOT_FOUND = 127
    INTERRUPTED = 130


EXIT_CODE_TABLE: tuple[tuple[int, str], ...] = (
    (ExitCode.OK, "ok (after exec, the agent's own exit status)"),
    (ExitCode.ERROR, "error (a failing task command, an oversize prompt, ...)"),
    (ExitCode.USAGE, "usage error"),
    (ExitCode.CONFIG, "config invalid"),
    (ExitCode.UNKNOWN_NAME, "unknown or ambiguous agent, role, context, task or model name"),
    (ExitCode.UNTRUSTED, "project config not trusted"),
    (ExitCode.NOT_EXECUTABLE, "agent binary not executable"),
    (ExitCode.NOT_FOUND, "agent binary not found"),
    (ExitCode.INTERRUPTED, "interrupted"),
)


class Problem(NamedTuple):
    """One validation finding, located in a file and a dotted key path."""

    severity: str  # "error" or "warning"
    file: Path | None
    key: str
    message: str
    suggestion: str | None = None
    line: int | None = None
    column: int | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        where = str(self.file) if self.file is not None else "<merged config>"
        if self.line is not None:
            where = f"{where}:{self.line}:{self.column or 1}"
        text = f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"
        if self.suggestion:
            text += f" (did you mean '{self.suggestion}'?)"
        return text

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
        errors = sum(1 for p in self.problems if p.is_error)
        head = headline or f"configuration is invalid ({errors} error{'s' if errors != 1 else ''})"
        lines = [head, *(f"  {p.severity}: {p}" for p in self.problems)]
        lines.append("Run 'start config validate' to see every problem.")
        super().__init__("\n".join(lines))


class UnknownNameError(StartError):
    """An agent, role, context or task name that does not exist or is ambiguous."""

    exit_code = ExitCode.UNKNOWN_NAME

    def __init__(
        self,
        kind: str,
        name: str,
        known: Iterable[str],
        *,
        candidates: Sequence[str] = (),
    ) -> None:
        self.kind = kind
        self.name = name
        known = list(known)
        if candidates:
            listed = ", ".join(candidates)
            message = f"{kind} '{name}' is ambiguous; it matches: {listed}"
        else:
            message = f"unknown {kind} '{name}'"
            close = suggest(name, known)
            if close:
                message += f"; did you mean '{close}'?"
            elif known:
                message += f"; known {kind}s: {', '.join(sorted(known))}"
            else:
                message += f"; no {kind}s are defined"
        super().__init__(message)


class CommandError(StartError):
    """A task command failed or timed out; carries everything needed to see why."""

    def __init__(
        self,
        what: str,
        command: str,
        *,
        exit_code: int | None,
        stdout: str,
        stderr: str,
        timeout: float | None = None,
    ) -> None:
        self.command = command
        self.returncode = exit_code
        self.stdout = stdout
        self.stderr = stderr
        if timeout is not None:
            status = f"timed out after {timeout:g} s"
        else:
            status = f"failed with exit code {exit_code}"
        lines = [f"{what} {status}", f"  command: {command}"]
        if exit_code is not None:
            lines.append(f"  exit code: {exit_code}")
        lines.append("  stdout:" + _indent_block(stdout))
        lines.append("  stderr:" + _indent_block(stderr))
        super().__init__("\n".join(lines))


def _indent_block(text: str) -> str:
    if not text:
        return " (empty)"
    return "\n" + "\n".join("    " + line for line in text.rstrip("\n").split("\n"))


class AgentNotFoundError(StartError):
    exit_code = ExitCode.NOT_FOUND


class AgentNotExecutableError(StartError):
    exit_code = ExitCode.NOT_EXECUTABLE


class UntrustedError(StartError):
    exit_code = ExitCode.UNTRUSTED
