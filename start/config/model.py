"""Records of a validated and merged configuration.

The records are `start.base.record.Record`s, which cost every launch next to nothing to define (see
docs/performance.md); a record's fields cannot be reassigned. A mapping field (`models`,
`origins`, a config's item tables) is typed read-only but holds a plain dict that nothing changes
once the record is built, or a `Table` (a config from the cache); the shared empty default is a
read-only proxy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from start.base.errors import Problem
from start.base.fs import DEFAULT_FILE_LIMIT, DEFAULT_OUTPUT_LIMIT
from start.base.paths import ProjectLocation
from start.base.record import Record
from start.config.interop import FORMATS

if TYPE_CHECKING:
    from start.config.interop.model import Imported

# `imported` holds the tasks of other agents' user-level command directories (start.config.interop);
# their project-level directories belong to the project layer.
LAYERS = ("built-in", "imported", "global", "project")
# The origin layer of a role, context or task named by path on the command line
# (start.compose.adhoc).
COMMAND_LINE = "command line"
# The default of an empty mapping field: one object shared by every record, so it cannot change.
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class Origin(Record):
    """Where an item or setting was defined: its layer and file."""

    layer: str
    path: str

    def __str__(self) -> str:
        return f"{self.layer} ({self.path})"


class Agent(Record):
    """How to call an agent CLI."""

    name: str
    origin: Origin
    bin: str
    command: str
    description: str | None = None
    url: str | None = None
    models_url: str | None = None
    default_model: str | None = None
    models: Mapping[str, str] = _EMPTY
    large_prompt: str | None = None  # sent instead of a prompt too large for the command line
    large_prompt_stdin: bool = False  # and that prompt goes to the agent's stdin
    print_command: str | None = None  # the headless form, for --print (start.runs.headless)
    print_output: str | None = None  # how its answer is read: one of headless.ENVELOPES
    print_permissions: Mapping[str, str] = _EMPTY  # level -> the options that grant it
    # The options that hold a headless answer to a task's JSON Schema ({schema}, {schema_file}),
    # and the words a failed run prints when the model refused them (start.runs.headless asks again
    # with the schema in the prompt).
    print_schema: str | None = None
    # The headless form that continues a conversation by its session id (`start continue`).
    resume_command: str | None = None
    print_schema_refused: str | None = None
    # The options that hold a headless run to at most {max_turns} turns (a workflow step's
    # `max_turns`); None: its CLI has no turn limit.
    print_max_turns: str | None = None

    def runs(self, cli: str) -> bool:
        """Whether this agent is `cli`, the one a command was written for, whose `model` it may
        honour: the catalog's entry of that name (claude, gemini, qwen, codex, opencode), or any
        agent whose binary is that CLI."""
        import os

        return cli in (self.name, os.path.basename(os.path.expanduser(self.bin)))


class Role(Record):
    """A system prompt, built from `file`, `command` and `prompt` (the seed's UTD pattern)."""

    name: str
    origin: Origin
    description: str | None = None
    file: str | None = None
    command: str | None = None
    prompt: str | None = None
    shell: str | None = None
    command_timeout: int | None = None


class Context(Record):
    """A document for prompts; `required` ones go into every prompt."""

    name: str
    origin: Origin
    description: str | None = None
    file: str | None = None
    command: str | None = None
    prompt: str | None = None
    shell: str | None = None
    command_timeout: int | None = None
    required: bool = False


class Param(Record):
    """A task parameter: `{name}` in the task's template, START_PARAM_NAME for its command.

    `default` None means the parameter must be given (`-p name=VALUE`). Records are plain so a
    task can be built from anything, not only from TOML (see start.config.params.declare).
    """

    name: str
    default: str | None = None
    description: str | None = None


# A task's answer formats (`output`; start.config.output): text, any JSON value, or JSON matching
# a schema.
OUTPUT_TEXT, OUTPUT_JSON, OUTPUT_SCHEMA = "text", "json", "schema"


class Output(Record):
    """A task's declared answer format, as validated: the schema is not read until a run."""

    format: str  # OUTPUT_JSON or OUTPUT_SCHEMA (a text task has no Output)
    schema: str | None = None  # an inline schema, as JSON text
    schema_file: str | None = None  # a schema file, as written: relative to the config file


class Task(Record):
    """A reusable prompt template with its own role, agent and model choices."""

    name: str
    origin: Origin
    description: str | None = None
    file: str | None = None
    command: str | None = None
    prompt: str | None = None
    shell: str | None = None
    command_timeout: int | None = None
    alias: str | None = None
    role: str | None = None
    agent: str | None = None
    model: str | None = None
    internal: bool = False
    if_no_output: str | None = None  # when the command prints nothing: stop with this message
    permissions: str | None = None  # what a headless run may do (schema.LEVELS); None: read-only
    params: tuple[Param, ...] = ()  # in declaration order
    output: Output | None = None  # the answer format of a headless run; None: text
    # A task read from another agent's command file (start.config.interop): its template, instead of
    # `file`, `command` and `prompt`; `origin.path` is the command file.
    imported: Imported | None = None


# Roles, contexts and tasks share the source fields (`file`, `command`, `prompt`, `shell`,
# `command_timeout`); every kind has `name`, `origin` and `description`.
SourceItem = Role | Context | Task
Item = Agent | Role | Context | Task
# The record of the items of each section, in the order of schema.ITEM_SECTIONS.
RECORDS: Mapping[str, type[Item]] = {
    "agents": Agent,
    "roles": Role,
    "contexts": Context,
    "tasks": Task,
}

DEFAULT_COMMAND_TIMEOUT = 30
DEFAULT_PRINT_TIMEOUT = 900  # seconds a headless agent run (--print) may take
DEFAULT_TASKFILE_TIMEOUT = 600  # seconds a Taskfile task may take (a test suite, a build)
DEFAULT_PRINT_AGENTS = 4  # headless runs of several agents that run at once
DEFAULT_PRINT_ANSWER_LIMIT = 16 * 1_048_576  # bytes a headless agent may print (its answer)
DEFAULT_HISTORY_SIZE_LIMIT = 50 * 1_048_576  # bytes of recorded runs kept (start.runs.history)
DEFAULT_MCP_DEPTH = 1  # `start mcp` asks agents; the agents it runs do not ask further


class Settings(Record):
    """`[settings]` after merging, with the origin of every field that was set."""

    default_agent: str | None = None
    default_role: str | None = None
    shell: str | None = None
    command_timeout: int = DEFAULT_COMMAND_TIMEOUT
    command_output_limit: int = DEFAULT_OUTPUT_LIMIT
    file_size_limit: int = DEFAULT_FILE_LIMIT
    print_timeout: int = DEFAULT_PRINT_TIMEOUT
    taskfile_timeout: int = DEFAULT_TASKFILE_TIMEOUT
    print_agents: int = DEFAULT_PRINT_AGENTS
    print_answer_limit: int = DEFAULT_PRINT_ANSWER_LIMIT
    mcp_agents: tuple[str, ...] = ()  # empty: every agent with a headless form on PATH
    mcp_permissions: str = "read-only"  # the most a caller of start mcp's asking tools may ask
    mcp_depth: int = DEFAULT_MCP_DEPTH
    trusted_paths: tuple[str, ...] = ()
    import_commands: tuple[str, ...] = FORMATS  # the sources whose command files are tasks
    history: bool = True  # record each launch and headless run (start.runs.history)
    history_size_limit: int = DEFAULT_HISTORY_SIZE_LIMIT
    board_remote: str | None = None  # the git remote `start board sync` goes through
    board_remote_level: str = "read-only"  # the most another machine's operations may set
    origins: Mapping[str, Origin] = _EMPTY


class LayerFile(Record):
    """One config file as read: its bytes' SHA-256 (project files only) and whether it parsed."""

    layer: str
    path: str
    digest: str
    parsed: bool


class Config(Record):
    """The merged configuration, every problem found, and where it was found."""

    settings: Settings
    agents: Mapping[str, Agent]
    roles: Mapping[str, Role]
    contexts: Mapping[str, Context]
    tasks: Mapping[str, Task]
    project: ProjectLocation
    files: tuple[LayerFile, ...]
    layer_dirs: Mapping[str, str | None]
    problems: tuple[Problem, ...] = ()

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.is_error)

    @property
    def root(self) -> str:
        return self.project.root

    @property
    def has_project(self) -> bool:
        """Whether there is project config to trust: a `.start/`, or project command files."""
        return self.layer_dirs.get("project") is not None or any(
            f.layer == "project" for f in self.files
        )


_T = TypeVar("_T")


class Table(Mapping[str, _T]):
    """A read-only table of items kept in their stored form (start.config.cache's), each decoded
    on first access: looking up one name, or listing the names, decodes no other item.

    `index` holds a few fields' values by item name (see `column`), and `layers` the names of
    the items of each layer (see `of_layer`), so that a launch can choose its items, and trust
    find the project's, without decoding the rest. A row that does not decode makes the table
    `fallback()`'s (the same items, parsed from the bytes the load read); without one, it raises.
    """

    __slots__ = ("_decode", "_fallback", "_items", "_rows", "index", "layers")

    def __init__(
        self,
        rows: Mapping[str, Any],
        decode: Callable[[str, Any], _T],
        fallback: Callable[[], Mapping[str, _T]] | None,
        index: Mapping[str, Mapping[str, Any]],
        layers: Mapping[str, Sequence[str]],
    ) -> None:
        self._rows = rows
        self._decode = decode
        self._fallback = fallback
        self._items: dict[str, _T] = {}
        self.index: Mapping[str, Mapping[str, Any]] = index
        self.layers: Mapping[str, Sequence[str]] | None = layers

    def __getitem__(self, name: str) -> _T:
        item = self._items.get(name)
        if item is None:
            row = self._rows[name]
            try:
                item = self._items[name] = self._decode(name, row)
            except Exception:
                if self._fallback is None:
                    raise
                self._rows = self._items = dict(self._fallback())
                self._fallback, self.index, self.layers = None, {}, None
                return self._items[name]
        return item

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def __repr__(self) -> str:
        return f"Table({dict(self)!r})"


def column(table: Mapping[str, Item], field: str) -> Mapping[str, Any]:
    """The value of `field` of each item of `table` whose value is not the field's default, by
    name, in the table's order: from a Table's index without decoding an item, when it holds
    the field (the config cache's holds a task's `alias` and a context's `required`), else from
    every item."""
    if isinstance(table, Table) and field in table.index:
        found: Mapping[str, Any] = table.index[field]
        return found
    return {
        name: value
        for name, item in table.items()
        if (value := getattr(item, field)) != item._field_defaults.get(field)
    }


_I = TypeVar("_I", bound=Item)


def of_layer(table: Mapping[str, _I], layer: str) -> list[_I]:
    """The items of `table` defined in `layer`, in the table's order; a Table decodes no other."""
    if isinstance(table, Table) and table.layers is not None:
        return [table[name] for name in table.layers.get(layer, ())]
    return [item for item in table.values() if item.origin.layer == layer]


def names_of_layer(table: Mapping[str, Item], layer: str) -> Sequence[str]:
    """The names of the items of `table` defined in `layer`, in the table's order; a Table
    decodes none of them."""
    if isinstance(table, Table) and table.layers is not None:
        return table.layers.get(layer, ())
    return [name for name, item in table.items() if item.origin.layer == layer]


def non_defaults(record: Item | Settings) -> dict[str, Any]:
    """A record's fields whose values differ from their defaults, in definition order.

    `name`, `origin` and `origins` are left out: whoever shows or stores a record keeps them
    beside its fields.
    """
    defaults = record._field_defaults
    fields: dict[str, Any] = {}
    for name in record._fields:
        if name in ("name", "origin", "origins"):
            continue
        value = getattr(record, name)
        if name not in defaults or value != defaults[name]:
            fields[name] = value
    return fields
