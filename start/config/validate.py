"""Validation: collect every problem of each item, each layer and the merged result."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from start.base import template
from start.base.errors import Problem, suggest
from start.config import model, params, schema
from start.config.model import (
    RECORDS,
    Agent,
    Item,
    Origin,
    Output,
    Param,
    Role,
    Settings,
    Task,
)
from start.config.schema import STR, type_error
from start.proc import shellwords

_NAME = re.compile(schema.NAME_PATTERN)


class Collector:
    """Problems of one file, with its path filled in.

    `lex`: whether agent command templates are lexed for problems (see `start.config.load`).
    """

    def __init__(self, origin: Origin, problems: list[Problem], lex: bool = True) -> None:
        self.origin = origin
        self.problems = problems
        self.lex = lex

    def error(self, key: str, message: str, suggestion: str | None = None) -> None:
        self.problems.append(Problem("error", self.origin.path, key, message, suggestion))

    def warning(self, key: str, message: str, suggestion: str | None = None) -> None:
        self.problems.append(Problem("warning", self.origin.path, key, message, suggestion))


def check_name(what: str, name: str) -> str | None:
    """Why `name` is not a valid name for `what` (an item kind, or \"alias\"), or None."""
    if _NAME.fullmatch(name):
        return None
    if what == "task" and ":" in name:
        # An imported command's name, `claude:review`: config may replace that task.
        from start.config.interop.model import name_problem

        return name_problem(name)
    return (
        f"invalid {what} name '{name}': use lowercase letters and digits in words joined by "
        "single hyphens, such as 'code-review'"
    )


def fields(
    table: Mapping[str, Any], known: Mapping[str, str], key: str, out: Collector
) -> dict[str, Any]:
    """The well-typed known fields of a table; unknown keys and type errors are reported."""
    good: dict[str, Any] = {}
    for field, value in table.items():
        field_type = known.get(field)
        if field_type is None:
            close = suggest(field, known)
            out.warning(f"{key}.{field}", f"unknown key '{field}'", close)
            continue
        # Most fields are strings: those skip the call (1,000 tasks have about 4,000 fields).
        wrong = None if field_type == STR and type(value) is str else type_error(field_type, value)
        if wrong:
            out.error(f"{key}.{field}", wrong)
            continue
        good[field] = value
    return good


def is_trust_key(key: str) -> bool:
    """Whether a key spells a trust setting: trusted_paths, START_TRUSTED_PATHS, [trust], ..."""
    return "trust" in "".join(c for c in key.lower() if c.isalpha())


def drop_trust_keys(table: Mapping[str, Any], out: Collector) -> dict[str, Any]:
    """A project file's table without trust settings, each reported: trust is never project config.

    Keys are checked at the top level, in [settings] and any other top-level table, and in each
    item's fields; item names and model aliases are not settings and are left alone.
    """

    def ignored(key: str, name: str) -> None:
        out.warning(
            key,
            f"'{name}' is a trust setting; trust cannot be set in project config, so it is "
            f"ignored (use START_TRUSTED_PATHS or 'start trust')",
        )

    def clean(body: Mapping[str, Any], prefix: str) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        for name, value in body.items():
            if is_trust_key(name):
                ignored(f"{prefix}{name}", name)
            else:
                kept[name] = value
        return kept

    result: dict[str, Any] = {}
    for section, body in table.items():
        if is_trust_key(section):
            ignored(section, section)
            continue
        canonical = schema.SECTION_SYNONYMS.get(section, section)
        if canonical in schema.ITEM_SECTIONS and isinstance(body, dict):
            body = {
                name: clean(item, f"{section}.{name}.") if isinstance(item, dict) else item
                for name, item in body.items()
            }
        elif isinstance(body, dict) and section != "workflows":  # a workflow's name is a name
            body = clean(body, f"{section}.")
        result[section] = body
    return result


def check_item(
    section: str, name: str, table: Mapping[str, Any], key: str, out: Collector
) -> Item | None:
    """Validate one agent, role, context or task table and build its record."""
    bad_name = check_name(schema.KIND_OF[section], name)
    if bad_name:
        out.error(key, bad_name)
    good = fields(table, schema.ITEM_SECTIONS[section], key, out)
    required = schema.REQUIRED_FIELDS.get(section)
    missing = [f for f in required if f not in table] if required else []
    for field in missing:
        out.error(key, f"missing required field '{field}'")
    if section == "tasks" and "params" in good:
        good["params"] = _check_params(good["params"], f"{key}.params", out)
    if section == "tasks" and "output" in good:
        output = _check_output(good.pop("output"), f"{key}.output", out)
        if output is not None:
            good["output"] = output
    if section == "agents":
        _check_agent(good, key, out)
        if missing:
            return None
    else:
        prompt = good.get("prompt")
        used = template.names(prompt) if prompt is not None else []
        _check_sources(section, good, table, key, out, used)
        if section == "tasks":
            _check_param_use(good, key, out, used)
    if section == "tasks" and "alias" in good:
        bad_alias = check_name("alias", good["alias"])
        if bad_alias:
            out.error(f"{key}.alias", bad_alias)
    good["name"] = name
    good["origin"] = out.origin
    return RECORDS[section]._from_fields(fields=good)


def _check_template(command: str, where: str, scope: frozenset[str], out: Collector) -> list[str]:
    """An agent's command template (`command` or `print_command`); the placeholders it uses."""
    used = template.names(command)
    if out.lex:
        for message in shellwords.problems(command):
            out.error(where, message)
    _check_placeholders(used, scope, where, out)
    if "prompt" not in used and "prompt_file" not in used:
        out.warning(
            where,
            "the command never uses {prompt} or {prompt_file}, so the composed prompt "
            "is not passed to the agent",
        )
    return used


def _check_agent(good: dict[str, Any], key: str, out: Collector) -> None:
    command = good.get("command")
    used = []
    if command is not None:
        used = _check_template(command, f"{key}.command", template.AGENT_COMMAND, out)
    large = good.get("large_prompt")
    if large is not None:
        where = f"{key}.large_prompt"
        large_used = template.names(large)
        _check_placeholders(large_used, template.LARGE_PROMPT, where, out)
        if "prompt_file" not in large_used and not good.get("large_prompt_stdin"):
            out.error(
                where,
                "large_prompt must name {prompt_file}: it replaces a prompt too large for the "
                "command line, so it has to tell the agent where the prompt is (or set "
                "large_prompt_stdin = true)",
            )
        elif command is not None and "prompt" not in used:
            out.warning(
                where,
                "the command never uses {prompt}, so large_prompt is never sent",
            )
    if good.get("large_prompt_stdin") and large is None:
        out.error(
            f"{key}.large_prompt_stdin",
            "large_prompt_stdin needs large_prompt: the text sent as {prompt} while the prompt "
            "goes to stdin (it may be empty)",
        )
    _check_headless(good, key, out)
    models = good.get("models", {})
    default = good.get("default_model")
    if default is not None and default not in models:
        out.error(
            f"{key}.default_model",
            f"'{default}' is not a key of {key}.models"
            + (f" (keys: {', '.join(models)})" if models else " (no models are defined)"),
            suggest(default, models),
        )


def _check_headless(good: dict[str, Any], key: str, out: Collector) -> None:
    """The headless form: print_command, print_output and print_permissions go together."""
    command, output = good.get("print_command"), good.get("print_output")
    levels = good.get("print_permissions", {})
    if command is not None:
        _check_template(command, f"{key}.print_command", template.PRINT_COMMAND, out)
    resume = good.get("resume_command")
    if resume is not None:
        where = f"{key}.resume_command"
        if "session" not in _check_template(resume, where, template.RESUME_COMMAND, out):
            out.error(where, "resume_command must name {session}: the conversation it continues")
        if command is None:
            out.error(
                where,
                "resume_command needs print_command: it continues what a headless run began, "
                "and its answer is read as print_output says",
            )
    if output is not None and output not in schema.ENVELOPES:
        out.error(
            f"{key}.print_output",
            f"'{output}' is not a known output: one of {', '.join(schema.ENVELOPES)}",
            suggest(output, schema.ENVELOPES),
        )
    present = [f for f in ("print_command", "print_output") if good.get(f) is not None]
    if len(present) == 1 or (levels and not present):
        missing = [f for f in ("print_command", "print_output") if f not in present]
        out.error(
            key,
            f"{', '.join(missing)} missing: a headless form needs print_command, print_output "
            'and print_permissions together (see docs/agents.md, "Headless runs")',
        )
    for level, options in levels.items():
        where = f"{key}.print_permissions.{level}"
        if level not in schema.LEVELS:
            out.error(
                where,
                f"'{level}' is not a permission level: one of {', '.join(schema.LEVELS)}",
                suggest(level, schema.LEVELS),
            )
            continue
        if out.lex:  # as for command templates: a launch splits the options of its level
            import shlex

            try:
                shlex.split(options)
            except ValueError as error:
                out.error(where, f"the options cannot be split into words: {error}")
    given = good.get("print_schema")
    if given is not None:
        _check_print_schema(given, f"{key}.print_schema", out)
    turns = good.get("print_max_turns")
    if turns is not None:
        _check_print_max_turns(turns, f"{key}.print_max_turns", out)
    refused = good.get("print_schema_refused")
    if refused is not None and not refused.strip():
        out.error(
            f"{key}.print_schema_refused",
            "must not be empty: it is the text a failed run prints when the model refuses "
            'print_schema, such as "does not support schemas"',
        )
    elif refused is not None and given is None:
        out.error(
            f"{key}.print_schema_refused",
            "goes with print_schema: it says when the CLI refused print_schema's options",
        )
    if present and not levels:
        out.error(
            f"{key}.print_permissions",
            "a headless form needs print_permissions: the options for read-only (the default), "
            "edit and full, each level the CLI can enforce",
        )


def _check_print_schema(options: str, where: str, out: Collector) -> None:
    if out.lex:  # as for command templates: a run with a schema splits them
        import shlex

        try:
            shlex.split(options)
        except ValueError as error:
            out.error(where, f"the options cannot be split into words: {error}")
            return
    used = template.names(options)
    _check_placeholders(used, template.PRINT_SCHEMA, where, out)
    if not template.PRINT_SCHEMA.intersection(used):
        out.error(
            where,
            "print_schema must name {schema} (the schema as JSON text) or {schema_file} "
            '(a file holding it), such as "--json-schema {schema}"',
        )


def _check_print_max_turns(options: str, where: str, out: Collector) -> None:
    if out.lex:  # as for command templates: a run with a turn limit splits them
        import shlex

        try:
            shlex.split(options)
        except ValueError as error:
            out.error(where, f"the options cannot be split into words: {error}")
            return
    used = template.names(options)
    _check_placeholders(used, template.PRINT_MAX_TURNS, where, out)
    if "max_turns" not in used:
        out.error(
            where,
            'print_max_turns must name {max_turns} (the number of turns), such as "--max-turns '
            '{max_turns}"',
        )


def _check_params(table: Mapping[str, Any], key: str, out: Collector) -> tuple[Param, ...]:
    """A task's `[params]` table as records; each problem is reported (see start.config.params)."""
    found: list[Param] = []
    for name, spec in table.items():
        where = f"{key}.{name}"
        bad_name = params.name_problem(name)
        if bad_name is not None:
            out.error(where, bad_name)
            continue
        if not isinstance(spec, dict):
            out.error(
                where,
                f"must be a table, such as {name} = "
                f'{{ default = "...", description = "..." }} (or {name} = {{}} for a parameter '
                f"that must be given), not {schema.describe_value(spec)}",
            )
            found.append(Param(name))  # declared all the same: no follow-up problems
            continue
        values: dict[str, str] = {}
        for field, value in spec.items():
            if field not in params.FIELDS:
                out.warning(
                    f"{where}.{field}", f"unknown key '{field}'", suggest(field, params.FIELDS)
                )
            elif not isinstance(value, str):
                quoted = ""
                if isinstance(value, bool | int | float):
                    text = str(value).lower() if isinstance(value, bool) else str(value)
                    quoted = f'; write it in quotes: {field} = "{text}"'
                out.error(
                    f"{where}.{field}",
                    f"must be a string, not {schema.describe_value(value)}{quoted}",
                )
            else:
                values[field] = value
        found.append(Param(name, values.get("default"), values.get("description")))
    return tuple(found)


def _check_output(value: str | dict[str, Any], key: str, out: Collector) -> Output | None:
    """A task's `output` as a record (None for text). The schema itself is checked by `start
    config validate` and before a run (start.config.output), which import a schema validator."""
    if isinstance(value, str):
        return None if value == model.OUTPUT_TEXT else Output(model.OUTPUT_JSON)
    for name in value:
        if name != "schema":
            out.error(f"{key}.{name}", f"unknown key '{name}': an output table has only 'schema'")
    if "schema" not in value:
        out.error(
            key,
            'an output table needs schema: { schema = "FILE.json" } or '
            '{ schema = { type = "object", ... } }',
        )
        return None
    given = value["schema"]
    where = f"{key}.schema"
    if isinstance(given, str):
        if not given.strip():
            out.error(where, "must name a JSON Schema file, not be empty")
            return None
        return Output(model.OUTPUT_SCHEMA, schema_file=given)
    if isinstance(given, dict):
        try:
            return Output(model.OUTPUT_SCHEMA, schema=_json_text(given))
        except ValueError as error:
            out.error(where, f"must be JSON: {error}")
            return None
    out.error(
        where,
        "must be the path of a JSON Schema file or a table (the schema itself), not "
        f"{schema.describe_value(given)}",
    )
    return None


def _json_text(value: dict[str, Any]) -> str:
    """A TOML table as JSON text; ValueError for a value JSON cannot hold (a date, nan)."""
    import json

    def plain(item: object) -> Any:
        if isinstance(item, dict):
            return {name: plain(v) for name, v in item.items()}
        if isinstance(item, list):
            return [plain(v) for v in item]
        if isinstance(item, str | int | float | bool):
            return item
        raise ValueError(f"{schema.describe_value(item)} has no JSON form")

    return json.dumps(plain(value), ensure_ascii=False, allow_nan=False)


def _check_param_use(good: dict[str, Any], key: str, out: Collector, used: list[str]) -> None:
    """Parameters no part of the task uses, and placeholders written where nothing fills them.

    `used`: the placeholder names of the task's prompt.
    """
    declared: tuple[Param, ...] = good.get("params", ())
    prompt = good.get("prompt")
    command = good.get("command")
    if command is not None:
        # A command is not a template: `{focus}` there stays as written (`${x}` is the shell's).
        names = {p.name for p in declared} | {"instructions"}
        for segment in template.scan(command):
            if not isinstance(segment, template.Placeholder) or segment.name not in names:
                continue
            if segment.start > 0 and command[segment.start - 1] == "$":
                continue
            variable = (
                params.INSTRUCTIONS_ENV
                if segment.name == "instructions"
                else params.env_name(segment.name)
            )
            out.warning(
                f"{key}.command",
                f"{{{segment.name}}} is not filled in a command, which is never a template; "
                f'use "${variable}" (the shell reads it, whatever the value holds)',
            )
    if prompt is None and good.get("file") is not None:
        return  # the file is the template: `start config validate` reads it (check_task_files)
    for param in declared:
        if param.name in used or (command is not None and params.env_name(param.name) in command):
            continue
        out.warning(
            f"{key}.params.{param.name}",
            f"parameter '{param.name}' is never used: put {{{param.name}}} in the prompt, or "
            f"${params.env_name(param.name)} in the command",
        )


# Each source field, and the placeholders of a prompt that use it.
_SOURCE_PLACEHOLDERS = (
    ("file", ("file", "file_contents")),
    ("command", ("command", "command_output")),
)


def _check_sources(
    section: str,
    good: dict[str, Any],
    table: Mapping[str, Any],
    key: str,
    out: Collector,
    used: list[str],
) -> None:
    """An item's sources (file, command, prompt) against the placeholders its prompt `used`."""
    if "file" not in table and "command" not in table and "prompt" not in table:
        out.error(key, "needs at least one of 'file', 'command' or 'prompt'")
        return
    gate = good.get("if_no_output")
    if gate is not None:
        if not gate.strip():
            out.error(f"{key}.if_no_output", "must be a message, not empty")
        if "command" not in table:
            out.warning(
                f"{key}.if_no_output",
                "'if_no_output' is set but the task has no 'command', so it never applies",
            )
    prompt = good.get("prompt")
    if prompt is None:
        return
    allowed = template.TASK_PROMPT if section == "tasks" else template.ITEM_PROMPT
    where = f"{key}.prompt"
    if not allowed.issuperset(used):  # most prompts use only names of their scope
        extra = frozenset(p.name for p in good.get("params", ()))
        _check_placeholders(used, allowed, where, out, extra)
    for source, wants in _SOURCE_PLACEHOLDERS:
        uses = [name for name in wants if name in used] if used else []
        if source not in table:
            for name in uses:
                out.warning(where, f"{{{name}}} is used but '{source}' is not set, so it is empty")
        elif not uses and not (source == "command" and gate is not None):
            out.warning(
                f"{key}.{source}",
                f"'{source}' is set but the prompt never uses "
                f"{{{wants[0]}}} or {{{wants[1]}}}, so it is ignored",
            )


def _check_placeholders(
    used: list[str],
    allowed: frozenset[str],
    where: str,
    out: Collector,
    extra: frozenset[str] = frozenset(),
) -> None:
    for finding in template.check_names(used, allowed, extra):
        if finding.severity == "error":
            out.error(where, finding.message, finding.suggestion)
        else:
            out.warning(where, finding.message, finding.suggestion)


def check_merged(
    settings: Settings,
    agents: Mapping[str, Agent],
    roles: Mapping[str, Role],
    tasks: Mapping[str, Task],
) -> list[Problem]:
    """References and aliases, checked on the merged result."""
    problems: list[Problem] = []

    def missing(
        origin: Origin | None, key: str, kind: str, name: str, known: Mapping[str, Any]
    ) -> None:
        path = origin.path if origin else None
        message = f"{kind} '{name}' is not defined"
        close = suggest(name, known)
        if close is None and known:
            message += f"; defined {kind}s: {', '.join(known)}"
        problems.append(Problem("error", path, key, message, close))

    for field, kind, known in (("default_agent", "agent", agents), ("default_role", "role", roles)):
        name = getattr(settings, field)
        if name is not None and name not in known:
            missing(settings.origins.get(field), f"settings.{field}", kind, name, known)
    for name in settings.mcp_agents:
        if name not in agents:
            origin = settings.origins.get("mcp_agents")
            missing(origin, "settings.mcp_agents", "agent", name, agents)

    alias_owner: dict[str, str] = {}
    for task in tasks.values():
        key = f"tasks.{task.name}"
        if task.role is not None and task.role not in roles:
            missing(task.origin, f"{key}.role", "role", task.role, roles)
        if task.agent is not None and task.agent not in agents:
            missing(task.origin, f"{key}.agent", "agent", task.agent, agents)
        if task.alias is None:
            continue
        if task.alias in tasks and task.alias != task.name:
            clash = f"alias '{task.alias}' is the name of another task; the name wins"
        elif task.alias in alias_owner:
            clash = (
                f"alias '{task.alias}' is already used by task '{alias_owner[task.alias]}', "
                "which comes first and keeps it"
            )
        else:
            alias_owner[task.alias] = task.name
            continue
        problems.append(Problem("warning", task.origin.path, f"{key}.alias", clash))
    return problems


def placed(problems: list[Problem]) -> list[Problem]:
    """The problems, each at its line in its config file (read again: an error path)."""
    from start.base import fs
    from start.config.positions import locate

    contents: dict[str, bytes] = {}
    for problem in problems:
        if problem.file is not None and problem.file.endswith(".toml"):
            try:
                contents[problem.file] = fs.read(problem.file, 1 << 24).data
            except fs.FileError:
                continue
    return list(locate(problems, contents))
