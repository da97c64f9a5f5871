"""`start mcp`'s Taskfile tools: a trusted project's go-task Taskfile for the agent (seed 000).

    list_user_tasks  run_user_task(task_name, args)

The Taskfile, its trust, the `task` program and the runs are start.runs.taskfile's, which
`start task taskfile:NAME` shares; here are the tools' schemas and texts. The tools are
registered only when the Taskfile is offered (runs.taskfile.offer), and the server's
instructions say why it is not. The caller is an agent: `args` is split into words as a shell
splits them, nothing expanded, and below `full` permissions a word may hold only
runs.taskfile.PLAIN characters. Nothing here imports the SDK before a tool is listed or called.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from start.base import fs
from start.base.errors import StartError
from start.compose.ask import AGENT
from start.mcp import report
from start.mcp.library import Run
from start.runs import taskfile
from start.runs.rules import RequestError, Scope
from start.runs.taskfile import FULL, PLAIN_NAMED, Taskfile

if TYPE_CHECKING:
    import mcp.types as types

    from start.proc.shell import Owner

LIST: Final = "list_user_tasks"
RUN: Final = "run_user_task"

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


def offer(scope: Scope) -> tuple[Taskfile | None, str]:
    """The Taskfile offered to this server's caller, an agent, or None and why not."""
    return taskfile.offer(scope, by=AGENT)


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


def listing(found: Taskfile, owner: Owner | None = None) -> dict[str, Any]:
    """list_user_tasks' structured content: the tasks and a status message."""
    listed = taskfile.tasks(found, owner)
    count = f"{len(listed)} user-defined task{'' if len(listed) == 1 else 's'}"
    return {"tasks": listed, "message": f"Successfully listed {count} from {found.name}."}


def run(found: Taskfile, name: str, args: str, owner: Owner | None = None) -> Run:
    """run_user_task: the task run with `args` as its CLI_ARGS; its stdout, stderr and exit code.

    Raises RequestError, before any `task` runs, for args that cannot be split into words, and
    runs.taskfile.check's errors (a word the caller's level does not allow, a task that is not
    listed, no name). Every failure of the task itself is a Run that is not ok.
    """
    import shlex

    try:
        words = [fs.arg_text(word) for word in shlex.split(args)]
    except ValueError as error:
        raise RequestError(
            f"args cannot be split into words: {error}; quote as a shell does"
        ) from None
    done = taskfile.run(found, name, words, owner)
    return Run(name, done.ok, done.stdout, done.stderr, done.exit_code, done.error, "")


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
