"""A run: the one record of a launch or a headless run, from which every view of it is derived.

`Run` is the only place a run's fields are spelled. What `--print --json` prints, the entries of
`--output`'s summary.json, `start log show --json`, `--print --json-fields all` and the structured
content of `start mcp`'s asking tools are `data(run)`, with the same keys and values; `start log
--json` lists `summary(run)`, which is that without the long texts; `--print --json` prints
`brief(run)`, the keys a script reads first (BRIEF); the history's columns (start.runs.store),
the shape its pending files are checked against (start.runs.history), and the JSON Schema of MCP's
results (`json_schema`) all come from the fields' annotations, through KINDS. Adding a field is
one line here, and the code that fills it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from start.base.record import Record, Text

if TYPE_CHECKING:
    from start.compose.pipeline import Prepared

# How a run ended. A launch hands the terminal to its agent: `launched` is all that is known.
LAUNCHED, OK, FAILED, TIMED_OUT, OUT_OF_FORMAT, INTERRUPTED = (
    "launched",
    "ok",
    "failed",
    "timed out",
    "out of format",
    "interrupted",
)
STATES: Final = (LAUNCHED, OK, FAILED, TIMED_OUT, OUT_OF_FORMAT, INTERRUPTED)

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class Run(Record):
    """One launch or headless run: where and when, what was asked and composed, what ran, and
    how it ended."""

    time: str  # when it began: ISO 8601 with the UTC offset, the run's {date}
    at: float  # the same moment, seconds since the epoch
    cwd: str  # the directory `start` was started in
    workdir: str  # the directory it ran as (-d DIR)
    project: str  # the project root
    mode: str  # session, prompt or task
    agent: str
    prompt: Text  # the composed prompt, as the agent got it
    role_text: Text
    argv: tuple[str, ...]  # the agent's command line
    headless: bool
    # How the run was asked for, as parameters: what `start again` repeats (start.cli.again);
    # empty for a run that start mcp or start board run started.
    request: Mapping[str, Any] = _EMPTY
    args: tuple[str, ...] | None = None  # start's command line as typed, to show; None: mcp
    task: str | None = None
    model: str | None = None
    role: str | None = None
    contexts: tuple[str, ...] = ()
    params: Mapping[str, str] = _EMPTY
    # The user's own words: a task's instructions, a prompt, a conversation's next turn.
    instructions: Text | None = None
    permissions: str | None = None  # a headless run's level (schema.LEVELS)
    permissions_from: str | None = None  # where that level comes from (pipeline.level)
    state: str = LAUNCHED  # one of STATES
    exit_code: int | None = None  # the agent's; None when it did not exit by itself
    duration: float | None = None  # seconds
    answer: Text | None = None  # the answer as the agent gave it; kept when out of format
    value: Any = None  # a task with an `output` format: the answer's checked JSON value
    problems: tuple[str, ...] = ()  # why the answer is out of format, first first
    error: Text | None = None  # why the run failed, in the CLI's own words where it gave them
    stdout: Text = ""  # the last lines of what the agent printed, when it failed
    stderr: Text = ""  # the last lines of its error output
    usage: Mapping[str, Any] | None = None  # tokens and cost, as its CLI reported them
    denied: tuple[str, ...] = ()  # actions its CLI reports it refused for lack of permission
    session_id: str | None = None  # the CLI's own id of the conversation, which resumes it
    # Why the run was asked again with the task's schema in its prompt: its CLI refused the
    # schema option for its model (the agent's print_schema_refused). The prompt and argv are
    # the second run's.
    fallback: str | None = None
    id: int | None = None  # the history's id, once recorded

    @property
    def ok(self) -> bool:
        """Whether a headless run succeeded: it answered, in its task's format."""
        return self.state == OK

    @property
    def answered(self) -> bool:
        """Whether the agent's answer arrived: ok, or out of its task's format (its check failed
        or ran out of time); such an answer is kept, printed and recorded."""
        return self.ok or bool(self.problems)

    @property
    def mismatched(self) -> bool:
        """Whether the agent answered, but not in the task's output format."""
        return self.state == OUT_OF_FORMAT

    @property
    def timed_out(self) -> bool:
        return self.state == TIMED_OUT


class Kind(Record):
    """How the values of one annotation are stored and shown."""

    column: str  # its SQLite column type
    schema: Mapping[str, Any]  # its JSON Schema, as data() writes it
    types: tuple[type, ...]  # what a pending file's value may be (marshal's plain types)
    encoding: str = ""  # "json" (a JSON text column), "bytes" (Text as bytes), "bool", or ""


def _nullable(kind: Kind) -> Kind:
    schema = kind.schema
    if "type" in schema:
        schema = {**schema, "type": [schema["type"], "null"]}
    return kind._replace(types=(*kind.types, type(None)), schema=schema)


_STRING = Kind("TEXT", {"type": "string"}, (str,))
_TEXT = Kind("BLOB", {"type": "string"}, (str,), "bytes")
_INTEGER = Kind("INTEGER", {"type": "integer"}, (int,))
_NUMBER = Kind("REAL", {"type": "number"}, (float, int))
_WORDS = Kind("TEXT", {"type": "array", "items": {"type": "string"}}, (list, tuple), "json")
_STRINGS = Kind(
    "TEXT", {"type": "object", "additionalProperties": {"type": "string"}}, (dict,), "json"
)
_OBJECT = Kind("TEXT", {"type": "object"}, (dict,), "json")
# Every annotation a field of Run may have (tests/test_runs.py holds Run to this table).
KINDS: Final[Mapping[str, Kind]] = {
    "str": _STRING,
    "str | None": _nullable(_STRING),
    "Text": _TEXT,
    "Text | None": _nullable(_TEXT),
    "int | None": _nullable(_INTEGER),
    "float": _NUMBER,
    "float | None": _nullable(_NUMBER),
    "bool": Kind("INTEGER", {"type": "boolean"}, (bool,), "bool"),
    "tuple[str, ...]": _WORDS,
    "tuple[str, ...] | None": _nullable(_WORDS),
    "Mapping[str, str]": _STRINGS,
    "Mapping[str, Any]": _OBJECT,
    "Mapping[str, Any] | None": _nullable(_OBJECT),
    "Any": Kind("TEXT", {}, (object,), "json"),
}
# What data() adds to the fields: values derived from them, for scripts that test one key or sum
# one (the tokens and cost in `usage`, whichever CLI reported them: start.runs.tokens).
DERIVED: Final[Mapping[str, Mapping[str, Any]]] = {
    "success": {"type": "boolean"},
    "timed_out": {"type": "boolean"},
    "input_tokens": {"type": ["integer", "null"]},
    "output_tokens": {"type": ["integer", "null"]},
    "cost_usd": {"type": ["number", "null"]},
}
# What `--print --json` prints of a run (`brief`), in this order: what a script reads first.
# `--json-fields all` prints every key (`data`), `--json-fields A,B` those.
BRIEF: Final = (
    "id",
    "state",
    "success",
    "answer",
    "value",
    "problems",
    "error",
    "agent",
    "model",
    "exit_code",
    "duration",
    "session_id",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "denied",
)
# The fields that hold Text: kept as bytes, and cut to fit the history's limit (start.runs.history).
TEXTS: Final = tuple(
    name for name, kind in Run.__annotations__.items() if KINDS[kind].encoding == "bytes"
)
# Long texts, left out of the listing of runs (`summary`); the user's own words stay in it.
LONG: Final = frozenset({*TEXTS, "argv", "value"} - {"instructions"})


def kind_of(field: str) -> Kind:
    return KINDS[Run.__annotations__[field]]


def data(run: Run) -> dict[str, Any]:
    """The run as JSON data: every field, and the DERIVED values."""
    found: dict[str, Any] = {}
    for name, value in zip(Run._fields, run, strict=True):
        found[name] = plain(value)
    found["success"] = run.ok
    found["timed_out"] = run.timed_out
    found.update(spent(run))
    if isinstance(run.duration, float):
        found["duration"] = round(run.duration, 3)
    return found


def spent(run: Run) -> dict[str, Any]:
    """The tokens in and out and the cost of a run, as its CLI reported them (null where it
    reported none: start.runs.tokens)."""
    from start.runs import tokens

    found = tokens.read(run.usage) or tokens.Tokens()
    cost = round(found.cost, 6) if found.cost is not None else None  # to a millionth of a dollar
    return {"input_tokens": found.input, "output_tokens": found.output, "cost_usd": cost}


def keys() -> tuple[str, ...]:
    """Every key of `data(run)`, in its order."""
    return (*Run._fields, *DERIVED)


def brief(run: Run, fields: tuple[str, ...] = BRIEF) -> dict[str, Any]:
    """The run as `--print --json` prints it: the keys `fields` (of `keys()`) of its data."""
    found = data(run)
    return {name: found[name] for name in fields}


def summary(run: Run) -> dict[str, Any]:
    """The run as `start log --json` lists it: its data without the long texts."""
    return {key: value for key, value in data(run).items() if key not in LONG}


def plain(value: Any) -> Any:
    """A field's value as plain data: a mapping a dict, a tuple a list."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def json_schema() -> dict[str, Any]:
    """The JSON Schema of `data(run)`: MCP's output schema of a run."""
    properties = {name: dict(kind_of(name).schema) for name in Run._fields}
    properties.update({name: dict(schema) for name, schema in DERIVED.items()})
    properties["state"] = {"type": "string", "enum": list(STATES)}
    return {
        "type": "object",
        "properties": properties,
        "required": [*Run._fields, *DERIVED],
    }


def begun(prepared: Prepared, *, headless: bool) -> Run:
    """A run of a prepared launch, before it has run: where, when and what was composed. A
    launch is recorded as this; a headless run adds how it ended (start.runs.headless), and its
    `time` and `at` are still when it began (when it was composed), whenever this is called."""
    from datetime import datetime

    plan, composition, launch = prepared.plan, prepared.composition, prepared.launch
    project = prepared.config.project
    role = composition.role
    return Run(
        time=prepared.date,
        at=datetime.fromisoformat(prepared.date).timestamp(),
        cwd=project.workdir,
        workdir=project.workdir,
        project=prepared.config.root,
        mode=plan.mode,
        agent=plan.agent.name,
        prompt=composition.prompt,
        role_text=role.text if role is not None else "",
        argv=tuple(launch.argv),
        headless=headless,
        task=plan.task.name if plan.task is not None else None,
        model=plan.model,
        role=plan.role.name if plan.role is not None else None,
        contexts=tuple(part.name for part in composition.contexts),
        params=dict(plan.params),
        instructions=plan.text if plan.mode in ("prompt", "continue") else plan.instructions,
        permissions=launch.permissions,
        permissions_from=launch.permissions_from,
    )
