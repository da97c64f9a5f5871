"""The texts and data `start mcp`'s tools return, in the fixed formats of seed 000."""

from __future__ import annotations

from typing import Any

from start.config.model import Task
from start.mcp.library import Run


def outcome(run: Run) -> str:
    """`Task 'NAME' completed successfully. Output:` ... or `Task 'NAME' failed. Output:` ...

    Each stream loses its final newline, so its lines stand exactly between the headings.
    """
    head = f"Output:\n{_chomp(run.stdout)}\nError Output:\n{_chomp(run.stderr)}"
    if run.ok:
        return f"Task '{run.task}' completed successfully. {head}"
    code = "none" if run.exit_code is None else str(run.exit_code)
    return f"Task '{run.task}' failed. {head}\nExit Code: {code}\nError: {run.error}"


def outcome_data(run: Run) -> dict[str, Any]:
    """`run_task`'s structured content (RUN_SCHEMA)."""
    return {
        "task": run.task,
        "ok": run.ok,
        "exit_code": run.exit_code,
        "stdout": run.stdout,
        "stderr": run.stderr,
        "error": run.error,
        "prompt": run.message,
    }


def listing(tasks: list[Task], workdir: str, note: str | None) -> dict[str, Any]:
    """`list_tasks`: `{"tasks": [{"name", "description"}], "message": "..."}`."""
    count = "1 task" if len(tasks) == 1 else f"{len(tasks)} tasks"
    message = f"Successfully listed {count} for {workdir}."
    if note is not None:
        message += f" Only built-in and global tasks are offered: {note}."
    return {
        "tasks": [{"name": task.name, "description": task.description or ""} for task in tasks],
        "message": message,
    }


def _chomp(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tasks": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
                "required": ["name", "description"],
            },
        },
        "message": {"type": "string"},
    },
    "required": ["tasks", "message"],
}

RUN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string"},
        "ok": {"type": "boolean"},
        "exit_code": {"type": ["integer", "null"]},
        "stdout": {"type": "string"},
        "stderr": {"type": "string"},
        "error": {"type": "string"},
        "prompt": {"type": "string"},
    },
    "required": ["task", "ok", "exit_code", "stdout", "stderr", "error", "prompt"],
}
