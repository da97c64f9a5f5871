"""`config show`: the merged configuration as data (--json) and as annotated TOML."""

from __future__ import annotations

import json
from typing import Any

from start.config import schema
from start.config.model import OUTPUT_JSON, Config, Item, Origin, Output, Param, non_defaults

# The fields that are tables of string = string, shown as sub-tables of their item.
_TABLES = frozenset({"models", "print_permissions"})


def _origin(origin: Origin) -> dict[str, str]:
    return {"layer": origin.layer, "file": str(origin.path)}


def item_fields(item: Item) -> dict[str, Any]:
    """The fields that differ from their defaults, in definition order."""
    values: dict[str, Any] = {}
    for name, value in non_defaults(item).items():
        if name in _TABLES:
            value = dict(value)
        elif name == "params":
            value = {param.name: param_fields(param) for param in value}
        elif name == "imported":
            values.update(imported_fields(value))
            continue
        elif name == "output":
            value = output_value(value)
        values[name] = value
    return values


def output_value(output: Output) -> str | dict[str, Any]:
    """A task's `output` as its config spells it: "json", or { schema = FILE or the schema }."""
    if output.format == OUTPUT_JSON:
        return OUTPUT_JSON
    if output.schema_file is not None:
        return {"schema": output.schema_file}
    return {"schema": json.loads(output.schema or "{}")}


def imported_fields(imported: Any) -> dict[str, str]:
    """What a task from another agent's command file carries (start.config.interop.model.Imported),
    as fields to show: the source, how that CLI calls it, its hint and model, its template."""
    fields = {"source": imported.source, "source_command": imported.command}
    if imported.hint is not None:
        fields["argument_hint"] = imported.hint
    if imported.model is not None:
        fields["source_model"] = imported.model
    if imported.folder is not None:
        fields["skill_folder"] = imported.folder
        fields["skill_files"] = "\n".join(imported.files)
    fields["template"] = imported.body
    return fields


def param_fields(param: Param) -> dict[str, str]:
    """A parameter's `default` and `description`, those that are set."""
    fields = {"default": param.default, "description": param.description}
    return {key: value for key, value in fields.items() if value is not None}


def _sections(section: str | None) -> tuple[str, ...]:
    """The sections to show: "settings" and the item sections, or just `section`."""
    return ("settings", *schema.ITEM_SECTIONS) if section is None else (section,)


def _items(config: Config, section: str, name: str | None) -> dict[str, Item]:
    items: dict[str, Item] = getattr(config, section)
    return items if name is None else {name: items[name]}


def data_with_origins(
    config: Config, section: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """Every setting and item with its provenance, ready for JSON; or one section, or one item."""
    data: dict[str, Any] = {}
    for table in _sections(section):
        if table == "settings":
            settings: dict[str, Any] = {}
            for setting in schema.SETTINGS:
                origin = config.settings.origins.get(setting)
                settings[setting] = {
                    "value": getattr(config.settings, setting),
                    "origin": _origin(origin) if origin else {"layer": "default", "file": None},
                }
            data["settings"] = settings
            continue
        data[table] = {
            item_name: {**item_fields(item), "origin": _origin(item.origin)}
            for item_name, item in _items(config, table, name).items()
        }
    return data


def toml_value(value: Any) -> str:
    """A TOML literal for the simple values config holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        if "\n" in value and "'''" not in value and not any(_hidden(c) for c in value if c != "\n"):
            return "'''\n" + value + "'''"
        return _basic_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # a task's output schema, written inline
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def inline_table(fields: dict[str, str]) -> str:
    """`{ key = "value", ... }`, or `{}`."""
    if not fields:
        return "{}"
    return "{ " + ", ".join(f"{toml_key(k)} = {_basic_string(v)}" for k, v in fields.items()) + " }"


def _basic_string(value: str) -> str:
    """A TOML basic string that shows every control and invisible character as an escape (TOML
    itself requires it only of C0 controls and DEL), so the text is safe on a terminal."""
    quoted = json.dumps(value, ensure_ascii=False)
    if quoted.isprintable():
        return quoted
    return "".join(
        (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}") if _hidden(c) else c
        for c in quoted
    )


def _hidden(char: str) -> bool:
    """A character start.ui.console.printable escapes (a tab is shown as it is)."""
    import unicodedata

    return char != "\t" and unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp", "Cs", "Co"}


def toml_key(name: str) -> str:
    """A TOML key: bare when it can be, else quoted."""
    if name and all(c.isascii() and (c.isalnum() or c in "-_") for c in name):
        return name
    return _basic_string(name)


def annotated_toml(config: Config, section: str | None = None, name: str | None = None) -> str:
    """Annotated TOML: each section says which layer and file it came from. With `section` (and
    `name`), only that section (or item)."""
    lines: list[str] = []
    if "settings" in _sections(section):
        lines.append("[settings]")
        for setting in schema.SETTINGS:
            origin = config.settings.origins.get(setting)
            value = getattr(config.settings, setting)
            where = f"# {origin}" if origin else "# default"
            if value is None:
                lines.append(f"# {setting} is not set")
            else:
                lines.append(f"{setting} = {toml_value(value)}  {where}")
    for table in _sections(section):
        if table == "settings":
            continue
        for item_name, item in _items(config, table, name).items():
            if lines:
                lines.append("")
            lines.append(f"# from {item.origin}")
            lines.append(f"[{table}.{toml_key(item_name)}]")
            tables: dict[str, dict[str, str]] = {}
            params: dict[str, dict[str, str]] = {}
            for field, value in item_fields(item).items():
                if field in _TABLES:
                    tables[field] = value
                    continue
                if field == "params":
                    params = value
                    continue
                lines.append(f"{field} = {toml_value(value)}")
            for field, entries in tables.items():
                lines.append(f"[{table}.{toml_key(item_name)}.{field}]")
                lines.extend(f"{_basic_string(k)} = {toml_value(v)}" for k, v in entries.items())
            if params:
                lines.append(f"[{table}.{toml_key(item_name)}.params]")
                lines.extend(f"{toml_key(k)} = {inline_table(v)}" for k, v in params.items())
    return "\n".join(lines) + "\n" if lines else ""
