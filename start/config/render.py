"""The merged configuration as data (for --json) and as annotated TOML (for people)."""

from __future__ import annotations

import json
from typing import Any

from start.config import schema
from start.config.model import Config, Item, Origin


def _origin(origin: Origin) -> dict[str, str]:
    return {"layer": origin.layer, "file": str(origin.path)}


def _fields(item: Item) -> dict[str, Any]:
    """The fields that differ from their defaults, in definition order."""
    values: dict[str, Any] = {}
    defaults = item._field_defaults
    for name in item._fields:
        if name in ("name", "origin"):
            continue
        value = getattr(item, name)
        if value is None or (name in defaults and value == defaults[name]) or value == {}:
            continue
        values[name] = dict(value) if name == "models" else value
    return values


def as_data(config: Config) -> dict[str, Any]:
    """Every setting and item with its provenance, ready for JSON."""
    settings: dict[str, Any] = {}
    for name in schema.SETTINGS:
        origin = config.settings.origins.get(name)
        settings[name] = {
            "value": getattr(config.settings, name),
            "origin": _origin(origin) if origin else {"layer": "default", "file": None},
        }
    data: dict[str, Any] = {"settings": settings}
    for kind in schema.KINDS:
        items: dict[str, Item] = getattr(config, kind)
        data[kind] = {
            name: {**_fields(item), "origin": _origin(item.origin)} for name, item in items.items()
        }
    return data


def toml_value(value: Any) -> str:
    """A TOML literal for the simple values config holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if (
            "\n" in value
            and "'''" not in value
            and all(c in "\t\n" or (ord(c) >= 0x20 and c != "\x7f") for c in value)
        ):
            return "'''\n" + value + "'''"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def as_toml(config: Config) -> str:
    """Annotated TOML: each section says which layer and file it came from."""
    lines: list[str] = ["[settings]"]
    for name in schema.SETTINGS:
        origin = config.settings.origins.get(name)
        value = getattr(config.settings, name)
        where = f"# {origin}" if origin else "# default"
        if value is None:
            lines.append(f"# {name} is not set")
        else:
            lines.append(f"{name} = {toml_value(value)}  {where}")
    for kind in schema.KINDS:
        items: dict[str, Item] = getattr(config, kind)
        for name, item in items.items():
            lines.append("")
            lines.append(f"# from {item.origin}")
            lines.append(f"[{kind}.{name}]")
            models: dict[str, str] = {}
            for field, value in _fields(item).items():
                if field == "models":
                    models = value
                    continue
                lines.append(f"{field} = {toml_value(value)}")
            if models:
                lines.append(f"[{kind}.{name}.models]")
                lines.extend(f"{json.dumps(k)} = {toml_value(v)}" for k, v in models.items())
    return "\n".join(lines) + "\n"
