"""An ask: what a run is asked to do, and where the ask came from; the input twin of `Run`.

`Ask` is the only place a request's fields are spelled. Every door makes one (the command line,
`start again` and `start continue`, `start mcp`'s asking tools, an item of `start board run`),
start.runs.path runs it (start.compose.pipeline composes it), and every view of it is derived
from its fields' annotations: what a run records as its `request` (`data`, read back by
`from_data`, which `start again` repeats), the input schema of `start mcp`'s asking tools
(`input_schema`), and a board item's run. Adding a field is one line here, and the code that
reads it; it reaches all of them by itself.

Nothing here imports click, rich or the MCP SDK.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from start.base.record import Record

# What an ask asks for: a session ('start' alone), a prompt, a task, or a conversation's next turn.
MODES: Final = ("session", "prompt", "task", "continue")
# Where an ask came in.
CLI, MCP, BOARD, WORKFLOW = "cli", "mcp", "board", "workflow"
DOORS: Final = (CLI, MCP, BOARD, WORKFLOW)
# Who asked: the user, or an agent (an MCP session, or a board item an agent wrote), which the
# ask rules hold to what the user allows agents (start.runs.rules).
USER, AGENT = "user", "agent"

_EMPTY: Mapping[str, str] = MappingProxyType({})


class Ask(Record):
    """One ask, as a door made it."""

    mode: str = "prompt"  # session, prompt, task, or continue (a conversation's next turn)
    prompt: str | None = None  # the text of a prompt, or of a conversation's next turn
    task: str | None = None  # a task's name, alias, prefix or file
    instructions: str | None = None  # a task's {instructions}
    params: Mapping[str, str] = _EMPTY  # a task's parameters, by name
    agents: tuple[str, ...] = ()  # a launch runs the last; a headless run, each
    role: str | None = None
    no_role: bool = False
    model: str | None = None
    contexts: tuple[str, ...] = ()  # context names or file paths, in the order given
    headless: bool = False  # run the agent's headless form and read its answer (--print)
    permissions: str | None = None  # a headless run's level; None: the task's, else read-only
    permissions_from: str | None = None  # where that level comes from, when not --permissions
    timeout: int | None = None  # seconds; None: settings.print_timeout
    session: str | None = None  # the conversation a `continue` continues (its CLI's own id)
    output: str | None = None  # a directory for the answers as files, besides stdout
    agent_args: tuple[str, ...] = ()  # words for the agent's command line, after `--`
    directory: str | None = None  # where it runs (the real path); None: where start started
    no_project: bool = False  # leave the project's .start/ out
    door: str = CLI  # where it came in (DOORS)
    by: str = USER  # who asked (USER or AGENT)
    most: str | None = None  # the most it may run at, whatever it asks (start.board.cap)
    most_from: str | None = None  # why
    item: str | None = None  # the board item whose run it is (item-3), which `start log` names
    # A workflow step's own answer format, which wins over its task's: "text", "json", or a JSON
    # Schema as JSON text; None: the task's (start.compose.pipeline.answer_format).
    answer_format: str | None = None
    # The most bytes a workflow step's answer may hold; over it the run fails with the reason
    # (start.runs.headless), its answer kept. None: settings.print_answer_limit alone.
    answer_limit: int | None = None
    # The most turns a workflow step's agent may take (its print_max_turns); None: its CLI's own.
    max_turns: int | None = None

    @property
    def agent(self) -> str | None:
        """The agent of a launch: the last one named."""
        return self.agents[-1] if self.agents else None


# The fields an agent cannot give: what it may ask is the user's prompt or task, its agents, its
# model and a level within what the user allows (start.runs.rules). The door says the rest.
ONLY_THE_USER: Final = frozenset(
    {
        "mode",
        "role",
        "no_role",
        "contexts",
        "headless",
        "permissions_from",
        "timeout",
        "session",
        "output",
        "agent_args",
        "directory",
        "no_project",
        "door",
        "by",
        "most",
        "most_from",
        "item",
        "answer_format",
        "answer_limit",
        "max_turns",
    }
)

# The JSON Schema of each annotation a field of Ask may have (tests/compose/test_ask.py holds Ask to
# this table).
KINDS: Final[Mapping[str, Mapping[str, Any]]] = {
    "str": {"type": "string"},
    "str | None": {"type": "string"},
    "bool": {"type": "boolean"},
    "int | None": {"type": "integer"},
    "tuple[str, ...]": {"type": "array", "items": {"type": "string"}},
    "Mapping[str, str]": {"type": "object", "additionalProperties": {"type": "string"}},
}
# What an agent is told of the fields it may give, and the limits a schema states of them; a
# field that is not here is offered with its type alone.
DESCRIBED: Final[Mapping[str, Mapping[str, Any]]] = {
    "prompt": {
        "description": "The text to ask, composed as `start prompt TEXT` does (with the user's "
        "required contexts and default role). Give this or task."
    },
    "task": {
        "description": "One of the user's tasks, as list_tasks names them, composed as `start "
        "task NAME INSTRUCTIONS` does (its command runs). Give this or prompt."
    },
    "instructions": {"description": "With task: the task's {instructions}."},
    "params": {"description": "With task: values of the task's parameters, by name."},
    "agents": {"description": "The agents to ask, at once; the same agent twice runs twice."},
    "model": {
        "pattern": "^(?!-)",
        "description": "A model alias or id of the agent; default: the agent's default. It never "
        "starts with '-'.",
    },
    "permissions": {
        "description": "What the agent may do; default: the task's level, else read-only. A "
        "level above what the user's config allows is refused."
    },
}


def data(ask: Ask) -> dict[str, Any]:
    """The ask as JSON data: every field by name (a run's `request`, a board item's run)."""
    return {
        name: dict(value) if isinstance(value, Mapping) else list(value)
        if isinstance(value, tuple) else value
        for name, value in zip(Ask._fields, ask, strict=True)
    }  # fmt: skip


def upgraded(found: Mapping[str, Any]) -> dict[str, Any]:
    """A request as an earlier start recorded it, with the names and shapes of Ask's fields:
    the command line's parameters (`text`, `instructions` as words, `params` as pairs, `print`,
    and the presentation flags, which are not the ask's), or a board item's run (`agent`,
    `via`). A request of this start is returned as it is."""
    if not {"text", "print", "via", "agent", "quiet"} & found.keys() and not isinstance(
        found.get("instructions"), list
    ):
        return dict(found)
    fields = {key: value for key, value in found.items() if key not in _GONE}
    if "text" in found:
        fields["prompt"] = found["text"]
    words = found.get("instructions")
    if isinstance(words, list):
        fields["instructions"] = " ".join(str(word) for word in words) or None
    pairs = found.get("params")
    if isinstance(pairs, list):
        fields["params"] = {str(pair[0]): str(pair[1]) for pair in pairs if len(pair) == 2}
    if "print" in found:
        fields["headless"] = bool(found["print"])
    if "agent" in found:  # a board item's run
        fields["agents"] = [found["agent"]] if found["agent"] else []
        fields["mode"] = "task" if found.get("task") else "prompt"
        fields["headless"] = True
        fields["door"] = BOARD
        fields["by"] = AGENT if found.get("via") == "mcp" else USER
    return fields


# What an earlier start's requests held that an ask does not: renamed, or how it was shown.
_GONE: Final = frozenset(
    {"text", "print", "agent", "via", "quiet", "verbose", "json", "no_color", "raw"}
)


def from_data(found: Mapping[str, Any]) -> Ask:
    """An ask from `data` as stored (a run's `request`, a board item's run; an earlier start's,
    `upgraded`): a field it lacks takes its default, and a key that names no field (a newer
    start's) is left out."""
    found = upgraded(found)
    fields: dict[str, Any] = {}
    for name in Ask._fields:
        if name not in found:
            continue
        value = found[name]
        kind = Ask.__annotations__[name]
        if kind == "tuple[str, ...]" and isinstance(value, list | tuple):
            value = tuple(str(word) for word in value)
        elif kind == "Mapping[str, str]" and isinstance(value, Mapping):
            value = MappingProxyType({str(k): str(v) for k, v in value.items()})
        fields[name] = value
    return Ask(**fields)


def given(ask: Ask) -> dict[str, Any]:
    """The fields of `ask` that differ from their defaults, as data: what was asked."""
    defaults = Ask()
    found = data(ask)
    return {
        name: found[name] for name in Ask._fields if getattr(ask, name) != getattr(defaults, name)
    }


def asked_by_agents() -> tuple[str, ...]:
    """The fields an agent may give, in the order of Ask."""
    return tuple(name for name in Ask._fields if name not in ONLY_THE_USER)


def input_schema(fields: Iterable[str], extra: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of each of `fields`, from its annotation (KINDS), what DESCRIBED says of
    it, and `extra` (the door's own: which agents there are, say); by field."""
    found: dict[str, Any] = {}
    for name in fields:
        schema = dict(KINDS[Ask.__annotations__[name]])
        schema.update(DESCRIBED.get(name, {}))
        schema.update(extra.get(name, {}))
        found[name] = schema
    return found
