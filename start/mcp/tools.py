"""`start mcp`'s task and asking tools: their definitions, with the input and output schemas
they declare (rebuilt for every request from the tasks and agents offered), and their results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from start.config import schema
from start.mcp import library, report
from start.params import TASK_NAME_ARGUMENT

if TYPE_CHECKING:
    import mcp.types as types

    from start.config.model import Task

LIST_TASKS: Final = "list_tasks"
RUN_TASK: Final = "run_task"
ASK_AGENT: Final = "ask_agent"
ASK_AGENTS: Final = "ask_agents"
ASK_START: Final = "ask_start"
ASK_RESULT: Final = "ask_result"
ASK_CANCEL: Final = "ask_cancel"
# The most seconds ask_result waits for a run, under the shortest client timeout (Codex: 60 s).
WAIT_MOST: Final = 50

# --- the task tools ---------------------------------------------------------------------------


def list_input() -> dict[str, Any]:
    """list_tasks' input schema: no arguments."""
    return _object({})


def task_input(tasks: Sequence[Task]) -> dict[str, Any]:
    """run_task's input schema, from the offered tasks: each argument of any task a string."""
    properties: dict[str, Any] = {
        TASK_NAME_ARGUMENT: {
            "type": "string",
            "enum": [task.name for task in tasks],
            "description": "The task to run: one of the names list_tasks returns.",
        }
    }
    for task in tasks:
        for argument in library.arguments(task):
            properties.setdefault(
                argument.name, {"type": "string", "description": argument.description}
            )
    return _object(properties, TASK_NAME_ARGUMENT)


def task_tools(tasks: Sequence[Task]) -> list[types.Tool]:
    """list_tasks and run_task, for the tasks offered."""
    import mcp.types as types

    return [
        types.Tool(
            name=LIST_TASKS,
            description=(
                "List the user's start tasks for this project: each name with its description, "
                "and a status message. Run one with run_task."
            ),
            input_schema=list_input(),
            output_schema=report.LIST_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name=RUN_TASK,
            description=(
                "Run one of the user's start tasks: compose it as `start task NAME INSTRUCTIONS` "
                "does, which runs the task's command. The first text is the command's result: "
                "\"Task 'NAME' completed successfully. Output:\\n[stdout]\\nError Output:\\n"
                "[stderr]\" or \"Task 'NAME' failed. Output:\\n[stdout]\\nError Output:\\n"
                '[stderr]\\nExit Code: [code]\\nError: [message]". On success the second text '
                "is the composed prompt: follow it."
            ),
            input_schema=task_input(tasks),
            output_schema=report.RUN_SCHEMA,
        ),
    ]


# --- the asking tools -------------------------------------------------------------------------


def ask_input(agents: Sequence[str], *, several: bool) -> dict[str, Any]:
    """The input schema of ask_agent (`agent`), or of ask_agents and ask_start (`agents`)."""
    what: dict[str, Any] = {
        "prompt": {
            "type": "string",
            "description": "The text to ask, composed as `start prompt TEXT` does (with the "
            "user's required contexts and default role). Give this or task.",
        },
        "task": {
            "type": "string",
            "description": "One of the user's tasks, as list_tasks names them, composed as "
            "`start task NAME INSTRUCTIONS` does (its command runs). Give this or prompt.",
        },
        "instructions": {
            "type": "string",
            "description": "With task: the task's {instructions}.",
        },
        "params": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "With task: values of the task's parameters, by name.",
        },
        "model": {
            "type": "string",
            "description": "A model alias or id of the agent; default: the agent's default.",
        },
        "permissions": {
            "type": "string",
            "enum": list(schema.LEVELS),
            "description": "What the agent may do; default: the task's level, else read-only. "
            "A level above what the user's config allows is refused.",
        },
    }
    who: dict[str, Any]
    if not several:
        who = {
            "agent": {"type": "string", "enum": list(agents), "description": "The agent to ask."}
        }
    else:
        who = {
            "agents": {
                "type": "array",
                "items": {"type": "string", "enum": list(agents)},
                "minItems": 1,
                "description": "The agents to ask, at once; the same agent twice runs twice.",
            }
        }
    return _object({**who, **what}, *who)


RUN_ID: Final = {"type": "string", "description": "The id ask_start returned."}


def result_input() -> dict[str, Any]:
    """ask_result's input schema."""
    wait = {
        "type": "integer",
        "minimum": 0,
        "maximum": WAIT_MOST,
        "description": f"How long to wait for the end (default and most: {WAIT_MOST}).",
    }
    return _object({"id": RUN_ID, "wait_seconds": wait}, "id")


def cancel_input() -> dict[str, Any]:
    """ask_cancel's input schema."""
    return _object({"id": RUN_ID}, "id")


def asking_tools(agents: Sequence[str]) -> list[types.Tool]:
    """ask_agent, ask_agents, ask_start, ask_result and ask_cancel, for the agents offered."""
    import mcp.types as types

    return [
        types.Tool(
            name=ASK_AGENT,
            description=(
                "Ask another coding agent: run it headless on a prompt or one of the user's "
                "tasks, as `start task NAME --print` does, and return its answer. The structured "
                "content is `start --print --json`'s object. Runs take minutes; where the client "
                "may cut a call off sooner, use ask_start."
            ),
            input_schema=ask_input(agents, several=False),
            output_schema=report.RESULT_SCHEMA,
        ),
        types.Tool(
            name=ASK_AGENTS,
            description=(
                "Ask several agents the same prompt or task at once, and return every answer, "
                "each under a heading with the agent's name. Structured content: {results: "
                "[one `start --print --json` object per agent]}."
            ),
            input_schema=ask_input(agents, several=True),
            output_schema=report.RESULTS_SCHEMA,
        ),
        types.Tool(
            name=ASK_START,
            description=(
                "Start asking one or more agents, as ask_agents does, without waiting: returns "
                "the run's id at once. Then call ask_result with the id until its state is not "
                "running, or ask_cancel to stop it."
            ),
            input_schema=ask_input(agents, several=True),
            output_schema=report.STATUS_SCHEMA,
        ),
        types.Tool(
            name=ASK_RESULT,
            description=(
                "The state of a run ask_start started; waits up to wait_seconds for it to end, "
                "and returns the answers once it has."
            ),
            input_schema=result_input(),
            output_schema=report.STATUS_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name=ASK_CANCEL,
            description="Stop a run that ask_start started: its agents' processes are killed.",
            input_schema=cancel_input(),
            output_schema=report.STATUS_SCHEMA,
        ),
    ]


# --- results ----------------------------------------------------------------------------------


def text(value: str) -> types.TextContent:
    import mcp.types as types

    return types.TextContent(type="text", text=value)


def failed(message: str) -> types.CallToolResult:
    """A tool result with isError: the call was refused or failed, and `message` says why."""
    import mcp.types as types

    return types.CallToolResult(content=[text(message)], is_error=True)


def _object(properties: Mapping[str, Any], *required: str) -> dict[str, Any]:
    """An input schema: an object of `properties`, `required` ones, and no others."""
    found: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if required:
        found["required"] = list(required)
    found["additionalProperties"] = False
    return found
