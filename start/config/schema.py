"""The field table: which sections, kinds and fields exist, and their types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# The names of items, whole (`re.fullmatch`); compiled by validation, which a launch served from
# the cache never runs.
NAME_PATTERN: Final = r"[a-z0-9]+(-[a-z0-9]+)*"


# Field types. "timeout" is whole seconds from 1 to MAX_TIMEOUT; "size" is a positive integer;
# "models" is a table of string to string.
STR, BOOL, TIMEOUT, SIZE, MODELS = "string", "boolean", "timeout", "size", "models"
SHELL = "shell"  # one program: a name on PATH or a path, without arguments
MAX_TIMEOUT: Final = 86_400  # a day: validate and the launch agree on this range
PATHS = "paths"  # an array of absolute directory paths (`~` allowed)
PARAMS = "params"  # a table of parameter name = { default = "...", description = "..." }
SOURCES = "sources"  # an array of the names of other agents whose commands are imported
LEVEL = "level"  # a permission level of a headless run: one of LEVELS
# A task's answer format: "text", "json", or a table { schema = "FILE" } or { schema = {...} }.
OUTPUT = "output"
OUTPUTS: Final = ("text", "json")
NAMES = "names"  # an array of item names (`mcp_agents`: agents)
# What a headless run (`--print`) lets the agent do, least first; read-only is the default.
LEVELS: Final = ("read-only", "edit", "full")
# How each CLI's headless output carries its answer (an agent's `print_output`); docs/agents.md
# ("Headless runs") describes each.
ENVELOPES: Final = (
    "text",  # stdout is the answer (cn -p)
    "result",  # a JSON result object, alone, in an array or among JSON lines (claude, qwen, ...)
    "gemini",  # {"response": ..., "stats": ...} or {"error": {...}}
    "codex",  # JSON lines of events; the answer also in {answer_file}
    "opencode",  # JSON lines of events; the answer is the text parts joined
    "continue",  # cn --format json: {"response", "status", "note"} around text, or the JSON
    "cline",  # JSON lines of events, the last a run_result
    "droid",  # droid exec's stream-json: JSON lines of events, the answer in a completion
    "aider",  # text after aider's banner, before its token count
    "llm",  # llm prompt --json: an array of the records `llm logs --json` shows
    "copilot",  # copilot --output-format json: JSON lines of events, the last a result
)

_SOURCE: Final = {
    "file": STR,
    "command": STR,
    "prompt": STR,
    "shell": SHELL,
    "command_timeout": TIMEOUT,
}

# The fields of each item section.
ITEM_SECTIONS: Final[Mapping[str, Mapping[str, str]]] = {
    "agents": {
        "bin": STR,
        "command": STR,
        "description": STR,
        "url": STR,
        "models_url": STR,
        "default_model": STR,
        "models": MODELS,
        "large_prompt": STR,
        "large_prompt_stdin": BOOL,
        # The headless form (`start --print`): its command, how its answer is read, and the
        # options that give it each permission level (a table of level = "options").
        "print_command": STR,
        "print_output": STR,
        "print_permissions": MODELS,
        # The options that hold the answer to a task's output schema (start.config.output), and what
        # the CLI prints when the model refuses them (the run is asked again without them).
        "print_schema": STR,
        # The headless form that continues a conversation (`start continue`): print_command's
        # placeholders and {session}, the id its CLI reported (start.runs.Run.session_id).
        "resume_command": STR,
        "print_schema_refused": STR,
        # The options that hold a headless run to {max_turns} turns, for a CLI that has a limit.
        "print_max_turns": STR,
    },
    "roles": {"description": STR, **_SOURCE},
    "contexts": {"description": STR, "required": BOOL, **_SOURCE},
    "tasks": {
        "alias": STR,
        "description": STR,
        "role": STR,
        "agent": STR,
        "model": STR,
        "internal": BOOL,
        "if_no_output": STR,
        "permissions": LEVEL,
        "params": PARAMS,
        "output": OUTPUT,
        **_SOURCE,
    },
}

REQUIRED_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {"agents": ("bin", "command")}

SETTINGS: Final[Mapping[str, str]] = {
    "default_agent": STR,
    "default_role": STR,
    "shell": SHELL,
    "command_timeout": TIMEOUT,
    "command_output_limit": SIZE,
    "file_size_limit": SIZE,
    "print_timeout": TIMEOUT,
    # A Taskfile task (`start task taskfile:NAME --print`, start mcp's run_user_task): how long
    # its `task` may run (start.runs.taskfile), apart from command_timeout's quick commands.
    "taskfile_timeout": TIMEOUT,
    "print_agents": SIZE,
    # The most a headless agent may print (its answer, in its envelope): more fails the run.
    "print_answer_limit": SIZE,
    # `start mcp`'s asking tools (ask_agent, ...): the agents they may run (none listed: every
    # agent with a headless form on PATH), the highest permission level a caller may ask for,
    # and how many levels of `start mcp` may ask agents, one inside another's run.
    "mcp_agents": NAMES,
    "mcp_permissions": LEVEL,
    "mcp_depth": SIZE,
    # Trusted by the user's own layers only: a project's trust keys are dropped with a warning.
    "trusted_paths": PATHS,
    "import_commands": SOURCES,
    # The history of runs (start.runs.history): whether runs are recorded, and its size in bytes.
    "history": BOOL,
    "history_size_limit": SIZE,
    # The git remote (its name, such as "origin") the board syncs through (`start board sync`;
    # docs/board-sync-design.md); unset: the board is this machine's alone.
    "board_remote": STR,
    # The most another machine's board operations may set an item's level to (provenance:
    # docs/board-sync-design.md); a project may lower it only.
    "board_remote_level": LEVEL,
}

# The history belongs to the user: a project may turn recording off for its runs, but neither
# turn it on nor change the size (start.config.load drops such values with a warning).
HISTORY_SETTINGS: Final = ("history", "history_size_limit")

# What start mcp's callers may do belongs to the user: a project may tighten these bounds, never
# loosen them beyond the user's own layers (start.config.load drops such values with a warning).
MCP_BOUNDS: Final = ("mcp_permissions", "mcp_agents", "mcp_depth")

# What another machine's board operations may set an item to run at belongs to the user too: a
# project may lower it, never raise it (start.config.load drops a higher value with a warning).
BOARD_BOUNDS: Final = ("board_remote_level",)

SECTIONS: Final = ("settings", *ITEM_SECTIONS)
# The seed spells the contexts section `[context.<name>]`; both spellings are accepted.
SECTION_SYNONYMS: Final[Mapping[str, str]] = {"context": "contexts"}

# An item's kind is the singular of its section's name.
KIND_OF: Final[Mapping[str, str]] = {
    "agents": "agent",
    "roles": "role",
    "contexts": "context",
    "tasks": "task",
}
SECTION_OF: Final[Mapping[str, str]] = {kind: section for section, kind in KIND_OF.items()}


def expected(field_type: str) -> str:
    """What a value of a number type must be, in words."""
    if field_type == TIMEOUT:
        return f"a whole number of seconds from 1 to {MAX_TIMEOUT} (a day)"
    return "a positive integer"


def type_error(field_type: str, value: object) -> str | None:
    """Why `value` is not of field type `field_type`, or None when it is."""
    if field_type == STR:
        return None if isinstance(value, str) else f"must be a string, not {_describe(value)}"
    if field_type == BOOL:
        return None if isinstance(value, bool) else f"must be true or false, not {_describe(value)}"
    if field_type in (TIMEOUT, SIZE):
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be {expected(field_type)}, not {_describe(value)}"
        top = MAX_TIMEOUT if field_type == TIMEOUT else None
        fits = value >= 1 and (top is None or value <= top)
        return None if fits else f"must be {expected(field_type)}, not {value}"
    if field_type == SHELL:
        if not isinstance(value, str):
            return f"must be a string, not {_describe(value)}"
        if not value.strip():
            return 'must name a program, such as "bash" or "python3"'
        if len(value.split()) > 1 or value.strip() != value:
            return (
                f"'{value}' is not one program: a shell is a name on PATH or a path, without "
                'arguments; put options in the command instead (e.g. "set -e; ...")'
            )
        return None
    if field_type == PATHS:
        if not isinstance(value, list):
            return f"must be an array of absolute paths, not {_describe(value)}"
        for entry in value:
            if not isinstance(entry, str):
                return f"must be an array of absolute paths; {entry!r} is {_describe(entry)}"
            if not entry.startswith(("/", "~")):
                return f"must be an array of absolute paths; '{entry}' is relative"
        return None
    if field_type == PARAMS:
        if not isinstance(value, dict):
            return (
                "must be a table of parameters, such as [tasks.NAME.params] focus = "
                f'{{ default = "security", description = "..." }}, not {_describe(value)}'
            )
        return None
    if field_type == SOURCES:
        from start.config.interop import FORMATS

        if not isinstance(value, list):
            return f"must be an array of sources ({', '.join(FORMATS)}), not {_describe(value)}"
        for entry in value:
            if entry not in FORMATS:
                shown = repr(entry) if not isinstance(entry, str) else f"'{entry}'"
                return f"must be an array of sources; {shown} is not one of {', '.join(FORMATS)}"
        return None
    if field_type == NAMES:
        if not isinstance(value, list):
            return f"must be an array of names, not {_describe(value)}"
        for entry in value:
            if not isinstance(entry, str):
                return f"must be an array of names; {entry!r} is {_describe(entry)}"
        return None
    if field_type == LEVEL:
        if value in LEVELS:
            return None
        shown = f"'{value}'" if isinstance(value, str) else _describe(value)
        return f"must be one of {', '.join(LEVELS)}, not {shown}"
    if field_type == OUTPUT:
        if isinstance(value, dict) or value in OUTPUTS:
            return None
        shown = f"'{value}'" if isinstance(value, str) else _describe(value)
        return (
            'must be "text", "json", or a JSON Schema: { schema = "FILE.json" } or '
            f'{{ schema = {{ type = "object", ... }} }}, not {shown}'
        )
    if field_type == MODELS:
        if not isinstance(value, dict):
            return f'must be a table of alias = "model id", not {_describe(value)}'
        for alias, model in value.items():
            if not isinstance(model, str):
                return f"model '{alias}' must be a string, not {_describe(model)}"
        return None
    raise AssertionError(f"unknown field type {field_type}")


def describe_value(value: object) -> str:
    """What a TOML value is, in words: "an integer", "a table", ..."""
    return _describe(value)


def _describe(value: object) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
        dict: "a table",
    }
    return names.get(type(value), f"a {type(value).__name__}")
