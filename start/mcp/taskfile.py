"""`start mcp`'s Taskfile tools: a trusted project's go-task Taskfile for the agent (seed 000).

    list_user_tasks  run_user_task(task_name, args)

The Taskfile is the project's `.agent/Taskfile.yml`, else its `Taskfile.yml`, run by the real
`task` binary (go-task; the `taskfile` extra installs it from PyPI as go-task-bin). The tools are
registered only when there is such a file, a `task` binary, and a project the user vouches for
(start.trust.vouched: an approval pins the Taskfile's bytes); the server's instructions say which
is missing. Every `task` runs through start's command runner (start.proc.shell), with the request's
owner, settings.command_timeout and settings.command_output_limit, its words as argv: `args` is
split into words as a shell splits them, nothing expanded, and each word reaches the Taskfile in
{{.CLI_ARGS}}, which `task` quotes for a shell. A Taskfile may put {{.CLI_ARGS}} inside quotes of
its own, where `task`'s quotes are text or close them, so below `full` permissions a word may hold
only PLAIN characters, which no shell context gives a meaning.
Nothing here imports the SDK before a tool is listed or called.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from start.base import fs, paths
from start.base.errors import StartError, UnknownNameError
from start.base.record import Record
from start.mcp import report
from start.mcp.library import Run
from start.proc import shell
from start.runs import rules
from start.runs.rules import RequestError, Scope

if TYPE_CHECKING:
    import mcp.types as types

    from start.proc.shell import Owner

R = TypeVar("R")

LIST: Final = "list_user_tasks"
RUN: Final = "run_user_task"
PLACES: Final = paths.TASKFILES
BINARY: Final = "task"
# What `task` runs: the positional parameters, as one program's argv (shell.CommandSpec.args).
_EXEC: Final = 'exec "$@"'
# The level at which a caller's words of args may be anything: a caller who may run a shell.
FULL: Final = "full"
# Below FULL, the characters a word of args may hold. go-task leaves a word of these unquoted in
# {{.CLI_ARGS}}, and no shell gives them a meaning, bare or in single or double quotes
# (tests/mcp/test_taskfile_args.py holds each to the real `task`). Not `=`: go-task quotes any word
# that holds it, and its quotes close a single-quoted {{.CLI_ARGS}}. Not non-ASCII letters:
# go-task quotes what Go's Unicode tables call unprintable, which are not Python's.
PLAIN: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@%+,")
PLAIN_NAMED: Final = "ASCII letters, digits and any of `._-/:@%+,`"
# The most characters of a refused word that its message shows.
SHOWN: Final = 40

INPUTS: Final[Mapping[str, dict[str, Any]]] = {
    LIST: {"type": "object", "properties": {}, "additionalProperties": False},
    RUN: {
        "type": "object",
        "properties": {
            "task_name": {
                "type": "string",
                "description": "The name of the task to run (e.g., 'test', 'build'): one of the "
                "names list_user_tasks returns.",
            },
            "args": {
                "type": "string",
                "description": "Optional arguments to pass to the task. These arguments are made "
                "available within the Taskfile via the '{{.CLI_ARGS}}' variable. They are split "
                "into words as a shell splits them (quotes group words; nothing is expanded). "
                f"Unless the user allows '{FULL}' permissions, each word may hold only "
                f"{PLAIN_NAMED}.",
            },
        },
        "required": ["task_name"],
        "additionalProperties": False,
    },
}

OUTPUTS: Final[Mapping[str, dict[str, Any]]] = {
    LIST: {
        "type": "object",
        "properties": {"tasks": report.TASKS_SCHEMA, "message": {"type": "string"}},
        "required": ["tasks", "message"],
    },
    RUN: report.TASK_RUN_SCHEMA,
}

DESCRIPTIONS: Final[Mapping[str, str]] = {
    LIST: (
        "List the user-defined tasks of this project's Taskfile (go-task): each name with its "
        "description, and a status message. Run one with run_user_task."
    ),
    RUN: (
        "Run one of the project's Taskfile tasks with the real `task` binary, optionally with "
        "args (the Taskfile reads them as {{.CLI_ARGS}}). Returns \"Task 'NAME' completed "
        "successfully. Output:\\n[stdout]\\nError Output:\\n[stderr]\" or \"Task 'NAME' failed. "
        'Output:\\n[stdout]\\nError Output:\\n[stderr]\\nExit Code: [code]\\nError: [message]".'
    ),
}


class Offer(Record):
    """A Taskfile whose tasks are offered, and what runs them."""

    root: str  # the project root, where `task` starts
    taskfile: str  # its path, absolute
    binary: str  # the `task` program
    timeout: int  # settings.command_timeout
    limit: int  # settings.command_output_limit
    level: str  # the most a caller may do (rules.allowed): below FULL, args hold PLAIN words
    level_from: str  # where that level is set, for messages

    @property
    def name(self) -> str:
        """The Taskfile's path below the root, for messages."""
        return os.path.relpath(self.taskfile, self.root)


def binary() -> str | None:
    """The `task` program: on PATH, else beside the Python that runs start (where the taskfile
    extra installs it when start's environment is not on PATH, as with pipx)."""
    found = paths.which(BINARY)
    if found is not None:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), BINARY)
    return paths.which(beside)


def offer(scope: Scope) -> tuple[Offer | None, str]:
    """The Taskfile offered for `scope`, or None and why it is not (for the instructions)."""
    from start import trust

    try:
        seen = rules.view(scope)
    except StartError as error:
        return None, f"the configuration cannot be loaded: {error}"
    config = seen.config
    root = config.root
    taskfile = paths.taskfile(root)
    if taskfile is None:
        return None, f"{root} has no {' or '.join(PLACES)}"
    name = os.path.relpath(taskfile, root)
    if not scope.use_project:
        return None, f"{name} is ignored (--no-project)"
    if not seen.use_project:
        return None, f"{name} is not used: {seen.note}"
    vouched, why = trust.vouched(config)
    if not vouched:
        return None, f"{name} is not used: {why}"
    program = binary()
    if program is None:
        return None, (
            f"{name} is not used: the `task` program (go-task) is not on PATH; install it, "
            "or add start's taskfile extra: pipx inject start-agent go-task-bin"
        )
    settings = config.settings
    level, level_from = rules.allowed(config)
    return Offer(
        root,
        taskfile,
        program,
        settings.command_timeout,
        settings.command_output_limit,
        level,
        level_from,
    ), ""


def instructions(scope: Scope) -> str:
    """What the server's instructions say of the Taskfile tools: offered, or why not."""
    found, why = offer(scope)
    if found is None:
        return f" No Taskfile tools ({LIST}, {RUN}): {why}."
    words = ""
    if found.level != FULL:
        words = f" (each word of {PLAIN_NAMED} only, as the user allows '{found.level}')"
    return (
        f" The project's Taskfile ({found.name}, run by go-task) is offered too: {LIST} lists its "
        f"tasks and {RUN}(task_name, args) runs one, with args in its {{{{.CLI_ARGS}}}}{words}."
    )


def _task(found: Offer, words: list[str], label: str, owner: Owner | None) -> shell.CommandResult:
    """`task --taskfile FILE WORDS...` in the project root, through start's command runner."""
    argv = (found.binary, "--taskfile", found.taskfile, "--color=false", *words)
    spec = shell.CommandSpec(
        _EXEC,
        None,
        found.timeout,
        found.root,
        found.limit,
        separate=True,
        label=label,
        args=argv,
    )
    (result,) = shell.run_all([spec], owner=owner)
    return result


def tasks(found: Offer, owner: Owner | None = None) -> list[dict[str, str]]:
    """The tasks `task --list` shows (not internal, with a description), by name.

    `--no-status` keeps `task` from running the tasks' `status` commands to list them.
    """
    result = _task(found, ["--list", "--json", "--no-status"], f"task --list {found.name}", owner)
    if not result.ok:
        said = (result.stderr or result.stdout).strip()
        raise StartError(
            f"cannot list the tasks of {found.name}: `task --list` {result.status}"
            + (f": {said}" if said else "")
        )
    try:
        listed = json.loads(result.stdout)["tasks"]
        return [{"name": str(t["name"]), "description": str(t["desc"])} for t in listed]
    except (ValueError, KeyError, TypeError) as error:
        raise StartError(f"cannot read what `task --list --json` printed: {error}") from None


def listing(found: Offer, owner: Owner | None = None) -> dict[str, Any]:
    """list_user_tasks' structured content: the tasks and a status message."""
    listed = tasks(found, owner)
    count = f"{len(listed)} user-defined task{'' if len(listed) == 1 else 's'}"
    return {"tasks": listed, "message": f"Successfully listed {count} from {found.name}."}


def run(found: Offer, name: str, args: str, owner: Owner | None = None) -> Run:
    """run_user_task: the task run with `args` as its CLI_ARGS; its stdout, stderr and exit code.

    Raises RequestError, before any `task` runs, for args that cannot be split into words or
    hold a word that the caller's level does not allow (`plain`); then for a task that is not
    listed (or no name). Every failure of the task itself is a Run that is not ok.
    """
    import shlex

    try:
        words = [fs.arg_text(word) for word in shlex.split(args)]
    except ValueError as error:
        raise RequestError(
            f"args cannot be split into words: {error}; quote as a shell does"
        ) from None
    plain(found, words)
    known = [task["name"] for task in tasks(found, owner)]
    if not name.strip():
        raise RequestError(f"no task name given; known tasks: {', '.join(known) or 'none'}")
    if name not in known:
        raise RequestError(f"{UnknownNameError('task', name, known)} (in {found.name})")
    # --exit-code: the exit code is the failed command's, not task's own 201.
    result = _task(
        found, ["--exit-code", name, *(["--", *words] if words else [])], f"task {name}", owner
    )
    if result.ok:
        return Run(name, True, result.stdout, result.stderr, 0, "", "")
    stderr, said = _said(result.stderr)
    if result.error is not None or result.timed_out:
        said = f"`task {name}` {result.status}" + (
            " (settings.command_timeout)" if result.timed_out else ""
        )
    elif not said:
        said = f"`task {name}` {result.status}"
    return Run(name, False, result.stdout, stderr, result.returncode, said, "")


def plain(found: Offer, words: list[str]) -> None:
    """Refuse, below FULL, a word with a character outside PLAIN: where a Taskfile puts
    {{.CLI_ARGS}} inside quotes of its own, `task`'s quotes are text (double quotes) or end them
    (single quotes), and such a word would reach a shell that the caller may not run.

    A word starting with `-` passes: options for the task's command are what {{.CLI_ARGS}} is
    for. So does an empty word: go-task quotes it (''), as it quotes a shell keyword such as
    `if`, and in every context those quotes hold or close around nothing a shell expands.
    """
    if found.level == FULL:
        return
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


class Tools:
    """The Taskfile tools of one server, checked afresh on every request."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def offers(self, name: str) -> bool:
        return name in INPUTS

    async def listed(self) -> list[types.Tool]:
        """The two tools when the Taskfile is offered now; none otherwise."""
        import anyio.to_thread
        import mcp.types as types

        found, _ = await anyio.to_thread.run_sync(offer, self.scope)
        if found is None:
            return []
        return [
            types.Tool(
                name=name,
                description=DESCRIPTIONS[name],
                input_schema=INPUTS[name],
                output_schema=OUTPUTS[name],
                annotations=types.ToolAnnotations(read_only_hint=name == LIST),
            )
            for name in INPUTS
        ]

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        commands: Callable[[Callable[[Owner], Any]], Awaitable[Any]],
    ) -> types.CallToolResult:
        """One tool call, its `task` processes run by `commands` (the server's Commands.run,
        which owns their process groups); a refusal or a failed task is a result with isError."""
        from start.mcp import tools

        def work(owner: Owner) -> tuple[str, dict[str, Any], bool]:
            found, why = offer(self.scope)
            if found is None:
                raise RequestError(f"{name} is not offered: {why}")
            if name == LIST:
                data = listing(found, owner)
                return json.dumps(data, ensure_ascii=False), data, False
            done = run(found, arguments["task_name"], arguments.get("args") or "", owner)
            return report.outcome(done), report.run_data(done), not done.ok

        try:
            tools.check(name, INPUTS[name], arguments)
            text, data, failed = await commands(work)
        except StartError as error:
            return _result(str(error), None, True)
        return _result(text, data, failed)


def _result(text: str, data: dict[str, Any] | None, failed: bool) -> types.CallToolResult:
    import mcp.types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=data,
        is_error=failed,
    )
