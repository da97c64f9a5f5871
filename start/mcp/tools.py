"""`start mcp`'s task and asking tools: their definitions, the input and output schemas they
declare, and the check of a call's arguments against the input schema, which the board's tools
(start.mcp.board) share: a tool's schema is the one statement of its arguments' shape.

A call is checked against the schema its tool would be listed with now (the tasks and agents
offered are read afresh for every request). What a schema cannot say is checked by the owner of
the rule: 'prompt' or 'task' (asking.check), a task's own arguments (rules.check).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from start.base import inputs
from start.base.errors import suggest
from start.compose.ask import Ask, asked_by_agents
from start.compose.ask import input_schema as ask_fields
from start.config import finding, schema
from start.config.params import TASK_NAME_ARGUMENT
from start.mcp import asking, report
from start.runs import rules
from start.runs.rules import RequestError, Scope

if TYPE_CHECKING:
    import mcp.types as types

    from start.config.model import Config, Task

LIST_TASKS: Final = "list_tasks"
FIND_TASKS: Final = "find_tasks"
# The most tasks find_tasks returns.
FIND_MOST: Final = 50
# The longest text find_tasks takes: a few words, not a document.
FIND_TEXT_MOST: Final = 1000
RUN_TASK: Final = "run_task"
ASK_AGENT: Final = "ask_agent"
ASK_AGENTS: Final = "ask_agents"
ASK_START: Final = "ask_start"
ASK_RESULT: Final = "ask_result"
ASK_CANCEL: Final = "ask_cancel"
# The most seconds ask_result waits for a run, under the shortest client timeout (Codex: 60 s).
WAIT_MOST: Final = 50

# Why a value is not in an argument's enum, from the owner of the list (None: nothing to add to
# the schema's own message); called with the argument's name and the value.
Explain = Callable[[str, object], str | None]

# A model's name or alias; the core refuses the same when it builds the command (start.proc.argv).
MODEL: Final = {
    "type": "string",
    "pattern": "^(?!-)",
    "description": "A model alias or id of the agent; default: the agent's default. It never "
    "starts with '-'.",
}
# What a caller is told instead of a schema's message: by the key that holds the refused value
# (an argument, or a key inside one), then by the keyword it fails.
HINTS: Final[Mapping[tuple[str, str], str]] = {
    ("model", "pattern"): "a model's name or alias never starts with '-': the agent's CLI would "
    "read it as an option",
    ("agents", "minItems"): "name at least one agent",
    ("agents", "maxItems"): f"at most {rules.MOST_AGENTS} agents at once",
}


def check(
    tool: str,
    declared: Mapping[str, Any],
    arguments: Mapping[str, Any],
    *,
    explain: Explain | None = None,
    hints: Mapping[tuple[str, str], str] = HINTS,
    notes: Mapping[str, str] | None = None,
) -> None:
    """`arguments` against the input schema `declared` of `tool` (jsonschema); RequestError
    naming the argument and what is wrong, with the tool's arguments for an unknown one.

    `explain` says why a value is not in an enum, given the argument (the top of the value's
    path); `hints` replace the schema's message, by the key that holds the value and keyword;
    `notes` add to the message for an unknown argument, by its name.
    """
    import jsonschema
    import jsonschema.exceptions

    validator = jsonschema.Draft202012Validator(declared)
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(arguments)))
    if error is None:
        return
    path = list(error.absolute_path)
    argument = str(path[0]) if path else ""
    where = f" at {'/'.join(str(part) for part in path)}" if path else ""
    keyword = str(error.validator)
    if keyword == "enum" and explain is not None:
        said = explain(argument, error.instance)
        if said is not None:
            raise RequestError(said)
    last = str(path[-1]) if path else ""
    ruled = _ruled(keyword, error.instance, error.schema)
    if (last, keyword) in hints:
        message = hints[last, keyword]
    elif ruled is not None:
        message = ruled
    elif keyword == "additionalProperties":
        known = list(error.schema.get("properties", ()))
        unknown = [name for name in error.instance if name not in known]
        close = suggest(unknown[0], known) if unknown else None
        who = f"'{last}'" if path else tool
        takes = f"did you mean '{close}'?" if close else f"{who} takes: {', '.join(known)}"
        message = f"{error.message}; {takes}"
        noted = [notes[name] for name in unknown if notes and name in notes and not path]
        if noted:
            message += f" ({noted[0]})"
    else:
        from start.proc.schemacheck import shorter

        message = shorter(error.message, error.instance)
    raise RequestError(f"invalid arguments{where}: {message}")


def _ruled(keyword: str, value: object, declared: Any) -> str | None:
    """What the command line says of a value outside a rule of start.base.inputs (an id, a count, a
    text's length), for the schema keyword it fails; None for any other."""
    if not isinstance(declared, Mapping):
        return None
    if keyword == "pattern" and declared.get("pattern") == inputs.ITEM_ID_PATTERN:
        return inputs.not_an_item_id(value)
    least, most = declared.get("minimum"), declared.get("maximum")
    if keyword in ("minimum", "maximum") and isinstance(least, int) and isinstance(most, int):
        return inputs.not_in_range(value, least, most)
    if keyword in ("minLength", "maxLength") and isinstance(value, str):
        return inputs.not_in_length(
            value, declared.get("minLength", 0), declared.get("maxLength", inputs.TEXT_LIMIT)
        )
    return None


def given(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a caller gave: a null one counts as left out, as agents often send null for
    an optional argument."""
    return {name: value for name, value in arguments.items() if value is not None}


# --- the task tools ---------------------------------------------------------------------------


def list_input() -> dict[str, Any]:
    """list_tasks' input schema: no arguments."""
    return _object({})


def find_input() -> dict[str, Any]:
    """find_tasks' input schema: the words, and how many tasks at most."""
    text = {
        "type": "string",
        "minLength": 1,
        "maxLength": FIND_TEXT_MOST,
        "description": "What the task should do, in a few words.",
    }
    limit = inputs.count_schema(1, FIND_MOST, f"At most this many tasks (default {finding.LIMIT}).")
    return _object({"text": text, "limit": limit}, "text")


class NoTaskOfferedError(Exception):
    """find_tasks called when no task is offered: its tool is not registered then."""


def find_call(
    config: Config, arguments: Mapping[str, Any], workflows: Callable[[], frozenset[str]]
) -> dict[str, Any]:
    """A find_tasks call: its arguments checked against its input schema (RequestError), then
    the offered tasks and workflows ranked by TEXT's words (start.config.finding), as
    structured content. NoTaskOfferedError when no task is offered.

    The ranking reads the index `start find` keeps beside the config cache's entry
    (finding.of_config), and keeps of its tasks those offered (rules.listed: with a
    description, not internal, which the index says without decoding a task), and of its
    workflows those list_workflows offers (`workflows`: start.mcp.workflows.offered, asked only
    when the config has a workflow)."""
    found = finding.of_config(config)
    kinds, descriptions = found.kinds, found.descriptions
    tasks = zip(kinds, descriptions, strict=True)
    if not any(kind != finding.WORKFLOW and said for kind, said in tasks):
        raise NoTaskOfferedError
    given_ = given(arguments)
    check(FIND_TASKS, find_input(), given_)
    text: str = given_["text"]
    if not finding.words(text):
        raise RequestError(f"invalid arguments: 'text' has no word to look for: {text!r}")
    flows = workflows() if finding.WORKFLOW in kinds else frozenset()

    def offered(at: int) -> bool:
        if kinds[at] == finding.WORKFLOW:
            return found.names[at] in flows
        return bool(descriptions[at])

    limit = given_.get("limit", finding.LIMIT)
    return report.found(finding.search(found, text, limit, offered), text)


def task_input(tasks: Sequence[Task]) -> dict[str, Any]:
    """run_task's input schema: rebuilt on every request from the offered tasks, their names and
    aliases (rules.find takes both), each argument of any task a string (which task takes
    which, a schema does not say: rules.check)."""
    names = [task.name for task in tasks]
    aliases = [task.alias for task in tasks if task.alias is not None]
    properties: dict[str, Any] = {
        TASK_NAME_ARGUMENT: {
            "type": "string",
            "enum": names + [alias for alias in dict.fromkeys(aliases) if alias not in names],
            "description": "The task to run: one of the names list_tasks returns (or a task's "
            "alias).",
        }
    }
    for task in tasks:
        for argument in rules.arguments(task):
            properties.setdefault(
                argument.name, {"type": "string", "description": argument.description}
            )
    return _object(properties, TASK_NAME_ARGUMENT)


def task_call(config: Config, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The task that a run_task call names, and its arguments, checked against run_task's input
    schema; RequestError saying what is wrong (and why a task is not offered)."""
    found = given(arguments)
    check(RUN_TASK, task_input(rules.listed(config)), found, explain=_why_not_task(config))
    return found.pop(TASK_NAME_ARGUMENT), found


def _why_not_task(config: Config) -> Explain:
    def explain(argument: str, value: object) -> str | None:
        if argument != TASK_NAME_ARGUMENT or not isinstance(value, str):
            return None
        try:
            rules.find(config, value)
        except RequestError as error:
            return str(error)
        return None

    return explain


def task_tools(tasks: Sequence[Task]) -> list[types.Tool]:
    """list_tasks, run_task and find_tasks, for the tasks offered."""
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
        types.Tool(
            name=FIND_TASKS,
            description=(
                "Find the user's start tasks that do what `text` says: the tasks whose names and "
                "descriptions hold its words, best first, each with a score (0 to 1) and why. "
                "Run one with run_task."
            ),
            input_schema=find_input(),
            output_schema=report.FOUND_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
    ]


# --- the asking tools -------------------------------------------------------------------------


def ask_input(agents: Sequence[str], *, several: bool) -> dict[str, Any]:
    """The input schema of ask_agent (`agent`, the one of `agents`), or of ask_agents and
    ask_start: the fields of an Ask an agent may give (start.compose.ask), by name."""
    fields = asked_by_agents()
    extra: dict[str, Any] = {
        "agents": {
            "items": {"type": "string", "enum": list(agents)},
            "minItems": 1,
            "maxItems": rules.MOST_AGENTS,
        },
        "permissions": {"enum": list(schema.LEVELS)},
    }
    properties = ask_fields(fields, extra)
    if not several:
        del properties["agents"]
        one = {
            "agent": {"type": "string", "enum": list(agents), "description": "The agent to ask."}
        }
        return _object({**one, **properties}, "agent")
    return _object({"agents": properties.pop("agents"), **properties}, "agents")


def ask_call(scope: Scope, tool: str, arguments: Mapping[str, Any]) -> Ask:
    """The ask that an ask_agent, ask_agents or ask_start call makes, its arguments checked
    against the tool's input schema as it would be listed now; RequestError saying what is wrong
    (and why an agent may not be asked), ConfigError for a broken config."""
    config = rules.view(scope).config
    agents, why = rules.offered(scope, config)
    if why is not None:
        raise RequestError(why)
    several = tool != ASK_AGENT
    found = given(arguments)

    def explain(argument: str, value: object) -> str | None:
        if argument not in ("agent", "agents") or not isinstance(value, str):
            return None
        return rules.not_askable(config, value, agents)

    check(tool, ask_input(agents, several=several), found, explain=explain)
    return asking.check(scope, found, several=several)


RUN_ID: Final = {"type": "string", "description": "The id ask_start returned."}


def result_input() -> dict[str, Any]:
    """ask_result's input schema."""
    wait = inputs.count_schema(
        0, WAIT_MOST, f"How long to wait for the end (default and most: {WAIT_MOST})."
    )
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
