"""The texts and data `start mcp`'s tools return, in the fixed formats of seed 000."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from start import runs as records
from start.config import finding
from start.config.model import Task
from start.mcp.library import Run

if TYPE_CHECKING:
    from start.config.finding import Match
    from start.runs import Run as Result


def outcome(run: Run) -> str:
    """`Task 'NAME' completed successfully. Output:` ... or `Task 'NAME' failed. Output:` ...

    Each stream loses its final newline, so its lines stand exactly between the headings.
    """
    stdout, stderr = run.stdout.removesuffix("\n"), run.stderr.removesuffix("\n")
    head = f"Output:\n{stdout}\nError Output:\n{stderr}"
    if run.ok:
        return f"Task '{run.task}' completed successfully. {head}"
    code = "none" if run.exit_code is None else str(run.exit_code)
    return f"Task '{run.task}' failed. {head}\nExit Code: {code}\nError: {run.error}"


def run_data(run: Run) -> dict[str, Any]:
    """A task's run as data (TASK_RUN_SCHEMA): what `outcome` says, field by field."""
    return {
        "task": run.task,
        "ok": run.ok,
        "exit_code": run.exit_code,
        "stdout": run.stdout,
        "stderr": run.stderr,
        "error": run.error,
    }


def outcome_data(run: Run) -> dict[str, Any]:
    """`run_task`'s structured content (RUN_SCHEMA): the run, and the prompt it composed."""
    return {**run_data(run), "prompt": run.message}


def listing(
    tasks: list[Task],
    workdir: str,
    note: str | None,
    agents: Sequence[str] = (),
    closed: str | None = None,
) -> dict[str, Any]:
    """`list_tasks`: `{"tasks": [{"name", "description"}], "agents": [...], "message": "..."}`:
    the tasks, and the agents ask_agent may run (none, and `closed` says why, when it may not)."""
    count = "1 task" if len(tasks) == 1 else f"{len(tasks)} tasks"
    message = f"Successfully listed {count} for {workdir}."
    if note is not None:
        message += f" Only built-in and global tasks are offered: {note}."
    if agents:
        message += f" Agents that ask_agent can ask: {', '.join(agents)}."
    elif closed is not None:
        message += f" {closed[0].upper()}{closed[1:]}."
    return {
        "tasks": [{"name": task.name, "description": task.description or ""} for task in tasks],
        "agents": list(agents),
        "message": message,
    }


def answer(result: Result) -> str:
    """ask_agent's text: the answer; or, for a failed run, why, with the output's last lines
    and the exit code (as `start task NAME --print` reports a failure)."""
    if result.ok:
        return result.answer or ""
    code = "none (it did not exit by itself)" if result.exit_code is None else result.exit_code
    return (
        f"agent '{result.agent}' failed: {result.error}\nOutput:\n{result.stdout}\n"
        f"Error Output:\n{result.stderr}\nExit Code: {code}"
    )


def answers(results: Sequence[Result]) -> str:
    """ask_agents' text: each agent's answer under a heading, in the order asked."""
    parts = []
    for result in results:
        model = f" ({result.model})" if result.model else ""
        body = (result.answer or "").rstrip("\n") if result.ok else f"(no answer: {result.error})"
        parts.append(f"## {result.agent}{model}\n\n{body}")
    return "\n\n".join(parts)


def found(matches: Sequence[Match], text: str) -> dict[str, Any]:
    """`find_tasks`: `{"tasks": [{"name", "kind", "score", "why", "description"}], "message":
    "..."}`, best first (start.config.finding); `kind` a task's (task, or where it was imported
    from) or "workflow"; `why` as `start find` shows it."""
    if matches:
        count = "1 task matches" if len(matches) == 1 else f"{len(matches)} tasks match"
        message = f"{count} '{text}', best first. Run one with run_task."
        if any(match.kind == finding.WORKFLOW for match in matches):
            count = "1 matches" if len(matches) == 1 else f"{len(matches)} match"
            message = (
                f"{count} '{text}', best first. Run a task with run_task, a workflow with "
                "run_workflow."
            )
    else:
        message = f"No task matches '{text}'; try other words, or list_tasks for every task."
    return {
        "tasks": [
            {
                "name": match.name,
                "kind": match.kind,
                "score": match.score,
                "why": finding.why(match),
                "description": match.description or "",
            }
            for match in matches
        ],
        "message": message,
    }


# find_tasks' structured content (found).
FOUND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tasks": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "kind": {"type": "string"},
                    "score": {"type": "number"},
                    "why": {"type": "string"},
                    "description": {"type": "string"},
                },
                "required": ["name", "kind", "score", "why", "description"],
            },
        },
        "message": {"type": "string"},
    },
    "required": ["tasks", "message"],
}


# The tasks a listing names (list_tasks, and list_user_tasks of a Taskfile).
TASKS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
        "required": ["name", "description"],
    },
}

LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tasks": TASKS_SCHEMA,
        "agents": {"type": "array", "items": {"type": "string"}},
        "message": {"type": "string"},
    },
    "required": ["tasks", "agents", "message"],
}

# A task's run (run_data): run_user_task's structured content, and run_task's with the prompt.
TASK_RUN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string"},
        "ok": {"type": "boolean"},
        "exit_code": {"type": ["integer", "null"]},
        "stdout": {"type": "string"},
        "stderr": {"type": "string"},
        "error": {"type": "string"},
    },
    "required": ["task", "ok", "exit_code", "stdout", "stderr", "error"],
}

RUN_SCHEMA: dict[str, Any] = {
    **TASK_RUN_SCHEMA,
    "properties": {**TASK_RUN_SCHEMA["properties"], "prompt": {"type": "string"}},
    "required": [*TASK_RUN_SCHEMA["required"], "prompt"],
}

# One run as `--print --json-fields all` prints it: start.runs.data, whose schema start.runs
# derives.
RESULT_SCHEMA: dict[str, Any] = records.json_schema()

RESULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"results": {"type": "array", "items": RESULT_SCHEMA}},
    "required": ["results"],
}

# An asynchronous run (ask_start, ask_result, ask_cancel): its id and state, with the results
# once it has ended.
STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "state": {"type": "string", "enum": ["running", "done", "cancelled", "failed"]},
        "elapsed": {"type": "number"},
        "agents": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"agent": {"type": "string"}, "state": {"type": "string"}},
                "required": ["agent", "state"],
            },
        },
        "error": {"type": ["string", "null"]},
        "results": {"type": "array", "items": RESULT_SCHEMA},
    },
    "required": ["id", "state", "elapsed", "agents", "error", "results"],
}
