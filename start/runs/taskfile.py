"""A project's go-task Taskfile: its tasks, which `start task taskfile:NAME` runs for the user,
start mcp's Taskfile tools offer an agent (start.mcp.taskfile), and `start doctor` checks.

The Taskfile is the project's `.agent/Taskfile.yml`, else its `Taskfile.yml` (paths.taskfile),
run by the real `task` binary (go-task; the `taskfile` extra installs it from PyPI as
go-task-bin). It is used only when there is such a file, a `task` binary, and a project the user
vouches for (start.trust.vouched: an approval pins the Taskfile's bytes). Every `task` that start
reads runs through start's command runner (start.proc.shell), for at most
settings.taskfile_timeout seconds with settings.command_output_limit bytes kept, its words as
argv: no shell parses them. The words that reach a Taskfile's {{.CLI_ARGS}} are the caller's: the
user's pass as they are (the command line); an agent's, below `full` permissions, may hold only
PLAIN characters, which no shell context gives a meaning (`plain`).

Nothing here is imported by a launch that names no Taskfile task.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from start.base import paths
from start.base.errors import (
    ExitCode,
    StartError,
    UsageError,
    suggest,
)
from start.base.record import Record
from start.compose.ask import AGENT, USER
from start.proc import shell
from start.runs import FAILED, OK, TIMED_OUT, Run

if TYPE_CHECKING:
    from start.config.model import Config, Settings
    from start.proc.shell import Owner
    from start.runs.rules import Scope

# A Taskfile task's name among start's tasks: `taskfile:NAME`, as other agents' command files
# are `claude:NAME` (start.config.interop).
SOURCE: Final = "taskfile"
PREFIX: Final = SOURCE + ":"
PLACES: Final = paths.TASKFILES
BINARY: Final = "task"
# What `task` runs: the positional parameters, as one program's argv (shell.CommandSpec.args).
_EXEC: Final = 'exec "$@"'
# The level at which a caller's words may be anything: a caller who may run a shell.
FULL: Final = "full"
# Below FULL, the characters a word may hold. go-task leaves a word of these unquoted in
# {{.CLI_ARGS}}, and no shell gives them a meaning, bare or in single or double quotes
# (tests/mcp/test_taskfile_args.py holds each to the real `task`). Not `=`: go-task quotes any word
# that holds it, and its quotes close a single-quoted {{.CLI_ARGS}}. Not non-ASCII letters:
# go-task quotes what Go's Unicode tables call unprintable, which are not Python's.
PLAIN: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@%+,")
PLAIN_NAMED: Final = "ASCII letters, digits and any of `._-/:@%+,`"
# The most characters of a refused word that its message shows.
SHOWN: Final = 40
TIMEOUT_SETTING: Final = "settings.taskfile_timeout"
NOT_INSTALLED: Final = (
    "the `task` program (go-task) is not on PATH; install it, or add start's taskfile extra: "
    "pipx inject start-agent go-task-bin"
)


class Taskfile(Record):
    """A Taskfile whose tasks are offered, and what runs them."""

    root: str  # the project root, where `task` starts
    path: str  # the Taskfile, absolute
    binary: str  # the `task` program
    timeout: int  # seconds: settings.taskfile_timeout, or the run's own
    limit: int  # settings.command_output_limit
    by: str  # who gives the words and names (start.compose.ask: USER or AGENT)
    level: str  # the most the caller may do: below FULL, its words hold PLAIN characters only
    level_from: str  # where that level is set, for messages
    settings: Settings  # the settings it was found with (the history's, ...)
    timeout_from: str = TIMEOUT_SETTING  # where `timeout` is set, for messages

    @property
    def name(self) -> str:
        """The Taskfile's path below the root, for messages."""
        return os.path.relpath(self.path, self.root)


class Done(Record):
    """One Taskfile task run: its output, and how it ended."""

    task: str  # its name in the Taskfile
    ok: bool
    stdout: str
    stderr: str  # without `task`'s own last line of a failure, which is `error`
    exit_code: int | None  # None when `task` did not start, or did not exit by itself
    error: str  # why it failed; "" when it did not
    timed_out: bool
    duration: float  # seconds
    argv: tuple[str, ...]  # the `task` command line


class UnknownTaskError(StartError):
    """A name that the Taskfile's listing does not name, shown as `prefix` + NAME."""

    exit_code = ExitCode.UNKNOWN_NAME

    def __init__(self, found: Taskfile, name: str, known: Sequence[str], prefix: str) -> None:
        # The suggestion is made from the names alone: with the prefix, every name looks close.
        close = suggest(name, known)
        if close:
            tail = f"did you mean '{prefix}{close}'?"
        elif known:
            tail = f"known tasks: {', '.join(prefix + task for task in sorted(known))}"
        else:
            tail = f"{found.name} has no tasks"
        super().__init__(f"unknown task '{prefix}{name}'; {tail} (in {found.name})")


def named(task: str | None) -> str | None:
    """The Taskfile task that a task word names (`taskfile:test`: `test`), or None."""
    if task is None or not task.startswith(PREFIX):
        return None
    return task[len(PREFIX) :]


def binary() -> str | None:
    """The `task` program: on PATH, else beside the Python that runs start (where the taskfile
    extra installs it when start's environment is not on PATH, as with pipx)."""
    found = paths.which(BINARY)
    if found is not None:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), BINARY)
    return paths.which(beside)


class TaskfileError(StartError):
    """Why a project's Taskfile is not used; the message follows its name or the project's."""


class NoTaskfileError(TaskfileError):
    exit_code = ExitCode.UNKNOWN_NAME


class UntrustedTaskfileError(TaskfileError):
    exit_code = ExitCode.UNTRUSTED


class NoTaskProgramError(TaskfileError):
    exit_code = ExitCode.NOT_FOUND


def offer(scope: Scope, *, by: str) -> tuple[Taskfile | None, str]:
    """The Taskfile offered to `by` in `scope`, or None and why it is not (`find`'s error)."""
    try:
        return find(scope, by=by), ""
    except TaskfileError as error:
        return None, str(error)
    except StartError as error:
        return None, f"the configuration cannot be loaded: {error}"


def find(scope: Scope, *, by: str) -> Taskfile:
    """The Taskfile offered to `by` (USER: the command line; AGENT: start mcp's caller) in
    `scope`. Raises a TaskfileError that says why it is not offered, or the error of a
    configuration that cannot be loaded (ConfigError)."""
    from start.runs import rules

    seen = rules.view(scope)
    config = seen.config
    root = config.root
    taskfile = paths.taskfile(root)
    if taskfile is None:
        raise NoTaskfileError(f"{root} has no {' or '.join(PLACES)}")
    name = os.path.relpath(taskfile, root)
    if not scope.use_project:
        raise NoTaskfileError(f"{name} is ignored (--no-project)")
    if not seen.use_project:
        raise UntrustedTaskfileError(f"{name} is not used: {seen.note}")
    try:
        return usable(config, taskfile, by=by)
    except TaskfileError as error:
        raise type(error)(f"{name} is not used: {error}") from None


def usable(config: Config, taskfile: str, *, by: str) -> Taskfile:
    """The Taskfile at `taskfile` of `config`'s project, for `by`. Raises a TaskfileError when
    the user does not vouch for it, or `task` is not installed."""
    from start import trust
    from start.runs import rules

    vouched, why = trust.vouched(config)
    if not vouched:
        raise UntrustedTaskfileError(why)
    program = binary()
    if program is None:
        raise NoTaskProgramError(NOT_INSTALLED)
    settings = config.settings
    if by == USER:
        level, level_from = FULL, "your own words"
    else:
        assert by == AGENT, by
        level, level_from = rules.allowed(config)
    return Taskfile(
        config.root,
        taskfile,
        program,
        settings.taskfile_timeout,
        settings.command_output_limit,
        by,
        level,
        level_from,
        settings,
    )


def argv(found: Taskfile, words: Sequence[str], *, color: bool = False) -> tuple[str, ...]:
    """`task --taskfile FILE WORDS...`: colourless unless `color` (a terminal's)."""
    return (found.binary, "--taskfile", found.path, *(() if color else ("--color=false",)), *words)


def run_words(name: str, words: Sequence[str]) -> list[str]:
    """The words after `task`'s options that run task `name` with `words` as its CLI_ARGS.
    With --exit-code, `task` exits with the failed command's code, not its own 201."""
    return ["--exit-code", name, *(["--", *words] if words else [])]


def _task(
    found: Taskfile, words: list[str], label: str, owner: Owner | None
) -> shell.CommandResult:
    """`task --taskfile FILE WORDS...` in the project root, through start's command runner."""
    spec = shell.CommandSpec(
        _EXEC,
        None,
        found.timeout,
        found.root,
        found.limit,
        separate=True,
        label=label,
        args=argv(found, words),
    )
    (result,) = shell.run_all([spec], owner=owner)
    return result


def tasks(found: Taskfile, owner: Owner | None = None) -> list[dict[str, str]]:
    """The tasks offered, by name: for an agent, those `task --list` shows (not internal, with a
    description); for the user, those `task --list-all` shows (not internal).

    `--no-status` keeps `task` from running the tasks' `status` commands to list them.
    """
    which = "--list" if found.by == AGENT else "--list-all"
    result = _task(found, [which, "--json", "--no-status"], f"task {which} {found.name}", owner)
    if not result.ok:
        said = (result.stderr or result.stdout).strip()
        raise StartError(
            f"cannot list the tasks of {found.name}: `task {which}` {result.status}"
            + (f": {said}" if said else "")
        )
    try:
        listed = json.loads(result.stdout)["tasks"]
        return [{"name": str(t["name"]), "description": str(t["desc"])} for t in listed]
    except (ValueError, KeyError, TypeError) as error:
        raise StartError(f"cannot read what `task {which} --json` printed: {error}") from None


def check(found: Taskfile, name: str, words: Sequence[str], owner: Owner | None = None) -> None:
    """Before any task runs: refuse words the caller's level does not allow (`plain`), then a
    name the listing does not name (UnknownTaskError), or no name (UsageError). The user's
    names are shown as start's tasks (`taskfile:NAME`), an agent's as its tool has them."""
    plain(found, words)
    known = [task["name"] for task in tasks(found, owner)]
    prefix = PREFIX if found.by == USER else ""
    if not name.strip():
        listed = ", ".join(prefix + task for task in known) or "none"
        raise UsageError(f"no task name given; known tasks: {listed}")
    if name not in known:
        raise UnknownTaskError(found, name, known, prefix)


def run(found: Taskfile, name: str, words: Sequence[str], owner: Owner | None = None) -> Done:
    """Task `name` run to its end with `words` as its CLI_ARGS, after `check`; its stdout,
    stderr and exit code. Every failure of the task itself is a Done that is not ok."""
    check(found, name, words, owner)
    return checked(found, name, words, owner)


def checked(found: Taskfile, name: str, words: Sequence[str], owner: Owner | None = None) -> Done:
    """`run` of a name and words that `check` has passed."""
    asked = run_words(name, words)
    result = _task(found, asked, f"task {name}", owner)
    ran = argv(found, asked)
    if result.ok:
        return Done(name, True, result.stdout, result.stderr, 0, "", False, result.duration, ran)
    stderr, said = _said(result.stderr)
    if result.error is not None or result.timed_out:
        said = f"`task {name}` {result.status}" + (
            f" ({found.timeout_from})" if result.timed_out else ""
        )
    elif not said:
        said = f"`task {name}` {result.status}"
    return Done(
        name, False, result.stdout, stderr, result.returncode, said, result.timed_out,
        result.duration, ran,
    )  # fmt: skip


def plain(found: Taskfile, words: Sequence[str]) -> None:
    """Refuse, below FULL, a word with a character outside PLAIN: where a Taskfile puts
    {{.CLI_ARGS}} inside quotes of its own, `task`'s quotes are text (double quotes) or end them
    (single quotes), and such a word would reach a shell that the caller may not run.

    A word starting with `-` passes: options for the task's command are what {{.CLI_ARGS}} is
    for. So does an empty word: go-task quotes it (''), as it quotes a shell keyword such as
    `if`, and in every context those quotes hold or close around nothing a shell expands.
    """
    if found.level == FULL:
        return
    from start.runs.rules import RequestError

    for number, word in enumerate(words, 1):
        odd = next((char for char in word if char not in PLAIN), None)
        if odd is None:
            continue
        shown = repr(word) if len(word) <= SHOWN else f"{word[:SHOWN]!r}..."
        raise RequestError(
            f"refused: word {number} of args, {shown}, holds {_character(odd)}. Below '{FULL}' "
            f"permissions a word may hold only {PLAIN_NAMED}, which no shell expands, bare or in "
            "the quotes a Taskfile puts around {{.CLI_ARGS}}; the user allows "
            f"'{found.level}' ({found.level_from}). Nothing ran. Pass only such words, or ask "
            f"the user to raise settings.mcp_permissions to {FULL}, or to write the task so that "
            "it needs no such words"
        )


def _character(char: str) -> str:
    """One character for a message: quoted, with its code point unless printable ASCII."""
    if char.isascii() and char.isprintable():
        return repr(char)
    return f"{char!r} (U+{ord(char):04X})"


def _said(stderr: str) -> tuple[str, str]:
    """`task`'s own message of a failure, its last line of stderr (`task: Failed to run task
    "NAME": exit status 1`), apart from the commands' own error output before it."""
    lines = stderr.removesuffix("\n").split("\n")
    if lines and lines[-1].startswith("task: "):
        rest = "\n".join(lines[:-1])
        return (rest + "\n" if rest else ""), lines[-1]
    return stderr, ""


# --- a run of the command line, in the history -----------------------------------------------


def begun(found: Taskfile, name: str, words: Sequence[str], workdir: str, *, color: bool) -> Run:
    """A run of task `name`, before it runs: what the history keeps of a Taskfile task run for
    the user (start.runs.recording); `ended` adds how it ended. Its agent is `task`."""
    import time

    from start.compose.pipeline import now

    return Run(
        time=now(),
        at=time.time(),
        cwd=workdir,
        workdir=workdir,
        project=found.root,
        mode="task",
        agent=BINARY,
        prompt="",
        role_text="",
        argv=argv(found, run_words(name, words), color=color),
        headless=False,
        task=PREFIX + name,
        permissions=FULL,
        permissions_from="a Taskfile task runs as you do: its commands are the Taskfile's",
    )


def ended(run: Run, done: Done) -> Run:
    """`run` with how its task ended: its stdout the answer when it succeeded; else its last
    output, and why it failed."""
    state = OK if done.ok else TIMED_OUT if done.timed_out else FAILED
    return run._replace(
        argv=done.argv,
        headless=True,
        state=state,
        exit_code=done.exit_code,
        duration=done.duration,
        answer=done.stdout if done.ok else None,
        error=done.error or None,
        stdout="" if done.ok else done.stdout,
        stderr=done.stderr,
    )
