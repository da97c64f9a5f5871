"""Config editing: what `start config set | unset | add | remove` change in a layer's file.

The text changes themselves are in `splice`; start.setup.layerfile finds the file and writes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from start.base.errors import ExitCode, StartError, UsageError, suggest
from start.config import files, schema
from start.config.load import load
from start.config.model import Item
from start.config.splice import (
    EditError,
    Layout,
    with_block,
    with_fields,
    with_item,
    with_setting,
    without_field,
    without_item,
    without_setting,
)
from start.setup.layerfile import Outcome, Scope, apply, item_target, setting_target


class NotInLayerError(StartError):
    """The item to remove is not in the layer being edited."""

    exit_code = ExitCode.UNKNOWN_NAME


# --- the commands' operations -----------------------------------------------------------------


def setting_key(key: str) -> str:
    """A key of `start config set` and `unset` as they look it up: a setting may be spelled as
    its file has it, in its table (`settings.command_timeout`), or alone (`command_timeout`)."""
    table, dot, name = key.partition(".")
    return name if dot and table == "settings" and name and "." not in name else key


def setting_type(key: str) -> str:
    field = schema.SETTINGS.get(key)
    if field is None:
        close = suggest(key, schema.SETTINGS)
        hint = (
            f"; did you mean '{close}'?" if close else f"; settings: {', '.join(schema.SETTINGS)}"
        )
        raise UsageError(f"unknown setting '{key}'{hint}")
    return field


def parse_setting(key: str, text: str) -> Any:
    """The typed value of setting `key` given as text on the command line."""
    field = setting_type(key)
    value: Any = text
    if field == schema.PATHS:
        value = [part for part in text.split(os.pathsep) if part]  # like START_TRUSTED_PATHS
    elif field in (schema.SOURCES, schema.NAMES):
        value = [part.strip() for part in text.split(",") if part.strip()]  # "claude,gemini"
    return _typed(key, field, text, value)


def _typed(name: str, field_type: str, text: str, value: Any) -> Any:
    """`text` as a number or a boolean when `field_type` is one, else `value` (the caller's
    reading of it), checked against the type; an error names `name`."""
    if field_type in (schema.TIMEOUT, schema.SIZE):
        try:
            value = int(text)
        except ValueError:
            raise UsageError(
                f"{name} must be {schema.expected(field_type)}, not '{text}'"
            ) from None
    elif field_type == schema.BOOL:
        value = {"true": True, "false": False}.get(text.lower(), text)
    wrong = schema.type_error(field_type, value)
    if wrong:
        raise UsageError(f"{name} {wrong}")
    return value


def set_setting(scope: Scope, key: str, text: str) -> Outcome:
    value = parse_setting(key, text)
    if scope.layer == "project" and key == "trusted_paths":
        raise UsageError(
            "trusted_paths cannot be set in project config: a repository must not vouch for "
            "itself. Set it in your global config (without --project)."
        )
    if scope.layer == "project" and key in schema.HISTORY_SETTINGS and value is not False:
        raise UsageError(
            f"{key} = {text} cannot be set in project config: the history is yours, and a "
            "project may only turn it off (history = false). Set it in your global config "
            "(without --project)."
        )
    target = setting_target(scope, key)
    return apply(target, lambda source: with_setting(source, key, value))


def unset_setting(scope: Scope, key: str) -> Outcome:
    """Remove a setting from the layer; unchanged when the layer does not set it."""
    setting_type(key)
    target = setting_target(scope, key)
    return apply(target, lambda source: without_setting(source, key))


def unset_field(scope: Scope, key: str) -> Outcome:
    """Remove one field of an item (`SECTION.NAME.FIELD`, or `.FIELD.KEY` of a table field) from
    the layer; unchanged when the layer's item does not set it, or the layer has no such item."""
    section, name, field, sub = item_field(key)
    target, spelling, exists = item_target(scope, section, name)
    if not exists:
        return apply(target, lambda source: source)
    return apply(target, lambda source: without_field(source, spelling, name, field, sub))


def add_item(scope: Scope, section: str, name: str, fields: Mapping[str, Any]) -> Outcome:
    """Define a new agent, role, context or task in the layer; refused if the layer has it."""
    target, spelling, exists = item_target(scope, section, name)
    if exists:
        kind = schema.KIND_OF[section]
        raise EditError(
            f"{kind} '{name}' already exists in {target.path}; remove it first "
            f"('start config remove {kind} {name}') or change it with 'start config edit'"
        )
    return apply(target, lambda source: with_item(source, spelling, name, fields))


@dataclass(frozen=True, slots=True)
class Copied:
    """An item copied whole, with its comments, from a lower layer's file into the layer being
    edited, so that one field of it could be set there (items replace each other whole)."""

    layer: str
    path: str


# The layers an item can be copied from into each layer you edit: those below it.
_BELOW: Final[Mapping[str, tuple[str, ...]]] = {
    "global": ("built-in",),
    "project": ("built-in", "global"),
}


def item_field(key: str) -> tuple[str, str, str, str | None]:
    """`SECTION.NAME.FIELD` (or `.FIELD.KEY` of a table field such as models) as its parts.

    SECTION may be spelled as a section (`agents`) or a kind (`agent`).
    """
    parts = key.split(".")
    first = schema.SECTION_SYNONYMS.get(parts[0], schema.SECTION_OF.get(parts[0], parts[0]))
    if first not in schema.ITEM_SECTIONS or len(parts) not in (3, 4) or not all(parts):
        close = suggest(parts[-1], schema.SETTINGS) if len(parts) == 2 else None
        raise UsageError(
            f"unknown setting '{key}'; did you mean '{close}'?"
            if close
            else f"unknown setting '{key}'; an item's field is SECTION.NAME.FIELD, such as "
            "agents.llm.default_model"
        )
    section, name, field = first, parts[1], parts[2]
    fields = schema.ITEM_SECTIONS[section]
    if field not in fields:
        close = suggest(field, fields)
        kind = schema.KIND_OF[section]
        article = "an" if kind == "agent" else "a"
        hint = f"did you mean '{close}'?" if close else f"{article} {kind} has: "
        raise UsageError(
            f"unknown field '{field}' of {schema.KIND_OF[section]} '{name}'; "
            + (hint if close else hint + ", ".join(fields))
        )
    sub = parts[3] if len(parts) == 4 else None
    if (sub is not None) != (fields[field] in (schema.MODELS, schema.PARAMS)):
        form = f"{first}.{name}.{field}.KEY" if sub is None else f"{first}.{name}.{field}"
        raise UsageError(f"'{key}' is not a field to set; use {form}")
    return section, name, field, sub


def parse_field(section: str, field: str, sub: str | None, text: str) -> Any:
    """The typed value of an item's field given as text on the command line."""
    field_type = schema.ITEM_SECTIONS[section][field]
    if sub is not None:
        return {sub: {"default": text}} if field_type == schema.PARAMS else {sub: text}
    value: Any = text
    if field_type == schema.OUTPUT and text not in schema.OUTPUTS:
        value = {"schema": text}  # a JSON Schema file, beside the config file
    return _typed(field, field_type, text, value)


def set_fields(
    scope: Scope, section: str, name: str, fields: Mapping[str, Any]
) -> tuple[Outcome, Copied | None]:
    """Set fields of an item in the layer. An item the layer does not define yet is first copied
    whole, with its comments, from the lower layer that defines it (a built-in agent, say); a
    table field (models, params) gains the keys given and keeps the rest."""
    target, spelling, exists = item_target(scope, section, name)
    block: str | None = None
    copied: Copied | None = None
    if not exists:
        copied, spelling, block, data = _copy_source(scope, section, name)

    def change(source: str) -> str:
        text = source
        if block is not None:
            text = with_block(text, spelling, name, block, data)
        return with_fields(text, spelling, name, fields)

    return apply(target, change), copied


def in_lower_layer(scope: Scope, section: str, name: str) -> bool:
    """Whether the layer lacks the item that a layer below it defines (a built-in agent, say)."""
    if item_target(scope, section, name)[2]:
        return False
    config = load(scope.workdir, use_project=scope.use_project)
    item: Item | None = getattr(config, section).get(name)
    return item is not None and item.origin.layer in _BELOW[scope.layer]


def _copy_source(scope: Scope, section: str, name: str) -> tuple[Copied, str, str, dict[str, Any]]:
    """The item's definition in a lower layer: where, its section's spelling, its lines with
    their comments, and its data."""
    config = load(scope.workdir, use_project=scope.use_project)
    items: Mapping[str, Item] = getattr(config, section)
    kind = schema.KIND_OF[section]
    item = items.get(name)
    if item is None:
        close = suggest(name, items)
        hint = (
            f"did you mean '{close}'?"
            if close
            else f"to define a new one, run 'start config add {kind} {name} ...'"
        )
        raise NotInLayerError(f"unknown {kind} '{name}'; {hint}")
    layer, path = item.origin.layer, str(item.origin.path)
    if layer not in _BELOW[scope.layer]:
        raise NotInLayerError(
            f"{kind} '{name}' is defined in the {layer} layer ({path}), which the "
            f"{scope.layer} config cannot change"
            + ("; use --project to edit the project's config" if layer == "project" else "")
        )
    read = files.read(path)
    if read.table is None:
        raise EditError(f"cannot copy {kind} '{name}': {path} cannot be read")
    text = read.data.decode("utf-8")
    spellings = [section, *(s for s, c in schema.SECTION_SYNONYMS.items() if c == section)]
    for spelling in spellings:
        body = read.table.get(spelling)
        if isinstance(body, dict) and isinstance(body.get(name), dict):
            span = Layout(text).item_span(spelling, name)
            if span is None:
                break
            lines = Layout(text).lines[span[0] : span[1]]
            block = "".join(lines).rstrip("\n") + "\n"
            return Copied(layer, path), spelling, block, body[name]
    raise EditError(
        f"cannot copy {kind} '{name}' from {path}: it is not written as tables of its own; "
        "copy it by hand with 'start config edit'"
    )


def find_item(scope: Scope, section: str, name: str) -> str:
    """The layer file defining the item, else an error that names the layer that has it."""
    target, _, exists = item_target(scope, section, name)
    if not exists:
        raise _missing(scope, section, name)
    return target.path


def remove_item(scope: Scope, section: str, name: str) -> Outcome:
    target, spelling, exists = item_target(scope, section, name)
    if not exists:
        raise _missing(scope, section, name)
    return apply(target, lambda source: without_item(source, spelling, name))


def _missing(scope: Scope, section: str, name: str) -> StartError:
    config = load(scope.workdir, use_project=scope.use_project)
    items: Mapping[str, Item] = getattr(config, section)
    kind = schema.KIND_OF[section]
    message = f"{kind} '{name}' is not defined in the {scope.layer} config"
    item = items.get(name)
    owner = next((t for t in config.tasks.values() if t.alias == name), None)
    if item is None and section == "tasks" and owner is not None:
        where = owner.origin.layer
        return NotInLayerError(f"{message}; it is the alias of task '{owner.name}' ({where})")
    if item is None:
        here = [n for n, i in items.items() if i.origin.layer == scope.layer]
        close = suggest(name, here)
        if close:
            message += f"; did you mean '{close}'?"
        elif here:
            message += f"; it defines: {', '.join(here)}"
        return NotInLayerError(message)
    hints = {
        "project": "; use --project to edit the project's config",
        "global": "; drop --project to edit the global config",
        "built-in": "; a built-in one cannot be removed, but one you add with its name wins",
    }
    where = f"{item.origin.layer} layer ({item.origin.path})"
    return NotInLayerError(f"{message}; it is defined in the {where}{hints[item.origin.layer]}")
