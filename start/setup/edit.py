"""Config editing: change a layer's file, validate the result, then write it atomically, locked.

The text changes themselves are in `splice`. Each write is checked by loading the whole config with
the file's would-be bytes, and is refused when that brings new errors.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import Any, Final, Literal

from start.base import atomic, fs, paths
from start.base.errors import ConfigError, ExitCode, Problem, StartError, UsageError, suggest
from start.base.wall import write_target
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

Layer = Literal["global", "project"]
MAIN_FILE = "config.toml"
CONFIG_LIMIT = files.CONFIG_LIMIT


class NotInLayerError(StartError):
    """The item to remove is not in the layer being edited."""

    exit_code = ExitCode.UNKNOWN_NAME


@dataclass(frozen=True, slots=True)
class Scope:
    """The layer to edit, and where the config is seen from (validation loads every layer)."""

    layer: Layer
    workdir: str
    use_project: bool = True

    def directory(self) -> str:
        """The layer's directory; a project's `.start/` may not exist yet."""
        if self.layer == "global":
            return paths.global_config_dir()
        project = paths.find_project(self.workdir)
        return project.start_dir or os.path.join(project.root, paths.PROJECT_DIR_NAME)


@dataclass(frozen=True, slots=True)
class Target:
    """One layer file, as the loader names it (a symlink stays a symlink; its target is written)."""

    scope: Scope
    path: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """The file edited, whether its bytes changed, and the problems the change brought."""

    path: str
    changed: bool
    problems: tuple[Problem, ...] = ()


# --- the commands' operations -----------------------------------------------------------------


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
    target = _setting_target(scope, key)
    return apply(target, lambda source: with_setting(source, key, value))


def unset_setting(scope: Scope, key: str) -> Outcome:
    """Remove a setting from the layer; unchanged when the layer does not set it."""
    setting_type(key)
    target = _setting_target(scope, key)
    return apply(target, lambda source: without_setting(source, key))


def unset_field(scope: Scope, key: str) -> Outcome:
    """Remove one field of an item (`SECTION.NAME.FIELD`, or `.FIELD.KEY` of a table field) from
    the layer; unchanged when the layer's item does not set it, or the layer has no such item."""
    section, name, field, sub = item_field(key)
    target, spelling, exists = _item_target(scope, section, name)
    if not exists:
        return apply(target, lambda source: source)
    return apply(target, lambda source: without_field(source, spelling, name, field, sub))


def add_item(scope: Scope, section: str, name: str, fields: Mapping[str, Any]) -> Outcome:
    """Define a new agent, role, context or task in the layer; refused if the layer has it."""
    target, spelling, exists = _item_target(scope, section, name)
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
        raise UsageError(
            f"unknown setting '{key}'; an item's field is SECTION.NAME.FIELD, such as "
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
    target, spelling, exists = _item_target(scope, section, name)
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
    if _item_target(scope, section, name)[2]:
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
    target, _, exists = _item_target(scope, section, name)
    if not exists:
        raise _missing(scope, section, name)
    return target.path


def remove_item(scope: Scope, section: str, name: str) -> Outcome:
    target, spelling, exists = _item_target(scope, section, name)
    if not exists:
        raise _missing(scope, section, name)
    return apply(target, lambda source: without_item(source, spelling, name))


def file_target(scope: Scope, name: str = MAIN_FILE) -> Target:
    return Target(scope, os.path.join(scope.directory(), name))


def current_bytes(target: Target) -> bytes:
    """The file's bytes now (empty when it does not exist), for an editor to start from.

    Refused, like a write, when project config leads outside the project through a symlink.
    """
    if target.scope.layer == "project":
        write_target(target.path, paths.find_project(target.scope.workdir).root)
    return _read(target.path) or b""


def _read(path: str) -> bytes | None:
    """A config file's whole bytes, None when it does not exist; anything else is refused."""
    try:
        read = fs.read(path, CONFIG_LIMIT)
    except fs.FileError as error:
        if error.missing and not os.path.lexists(path):
            return None
        raise EditError(f"cannot edit {path}: {error.reason}") from None
    if read.truncated:
        raise EditError(
            f"cannot edit {path}: it is {read.size:,} bytes, more than a config file may be "
            f"({CONFIG_LIMIT:,})"
        )
    return read.data


def check(target: Target, data: bytes) -> tuple[Problem, ...]:
    """Problems the file would have with `data`: every one in the file, and new ones elsewhere."""
    return _problems(target, data, whole_file=True)


def replace_file(target: Target, data: bytes, expected: bytes) -> Outcome:
    """Write `data` (from an editor) even if invalid, unless the file no longer holds `expected`."""

    def change(current: str) -> str:
        if current.encode("utf-8", "surrogateescape") != expected:
            raise EditError("it was changed by something else while being edited")
        return data.decode("utf-8", "surrogateescape")

    return apply(target, change, keep_invalid=True)


# --- locating the file in a layer ---------------------------------------------------------------


def _layer_tables(scope: Scope, directory: str) -> list[tuple[str, dict[str, Any]]]:
    tables: list[tuple[str, dict[str, Any]]] = []
    # A project file that a symlink leads out of the root is never read; writing it is refused.
    root = os.path.realpath(os.path.dirname(directory)) if scope.layer == "project" else None
    for path in files.layer_paths(directory, root):
        if files.is_dangling(path) or files.outside(path, root):
            continue  # it holds no items; writing it goes through the link, or is refused
        read = files.read(path)
        if read.problem is not None:
            what = "is not valid TOML" if read.problem.line is not None else "cannot be read"
            raise ConfigError(
                [read.problem],
                headline=f"cannot edit {directory}: {os.path.basename(path)} {what}; fix it first",
            )
        assert read.table is not None
        tables.append((path, read.table))
    return tables


def _setting_target(scope: Scope, key: str) -> Target:
    """The layer file that sets `key`, else the one with [settings], else config.toml."""
    directory = scope.directory()
    tables = _layer_tables(scope, directory)
    for must_have_key in (True, False):
        for path, table in tables:
            settings = table.get("settings")
            if isinstance(settings, dict) and (key in settings or not must_have_key):
                return Target(scope, path)
    return Target(scope, os.path.join(directory, MAIN_FILE))


def _item_target(scope: Scope, section: str, name: str) -> tuple[Target, str, bool]:
    """The file and section spelling holding the item (True), else where a new one goes."""
    directory = scope.directory()
    tables = _layer_tables(scope, directory)
    spellings = [section, *(s for s, c in schema.SECTION_SYNONYMS.items() if c == section)]
    for has_item in (True, False):
        for path, table in tables:
            for spelling in spellings:
                body = table.get(spelling)
                if isinstance(body, dict) and (name in body or not has_item):
                    return Target(scope, path), spelling, has_item
    return Target(scope, os.path.join(directory, MAIN_FILE)), section, False


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


# --- validating and writing ---------------------------------------------------------------------


def _problems(target: Target, data: bytes, *, whole_file: bool) -> tuple[Problem, ...]:
    scope = target.scope
    before = set(load(scope.workdir, use_project=scope.use_project).problems)
    after = load(scope.workdir, use_project=scope.use_project, replaced={target.path: data})
    return tuple(
        p
        for p in after.problems
        if p not in before or (whole_file and p.is_error and p.file == target.path)
    )


def apply(target: Target, change: Callable[[str], str], *, keep_invalid: bool = False) -> Outcome:
    """Under the lock: read, change, validate, then write atomically (the symlink's target)."""
    directory = os.path.dirname(target.path)
    root = paths.find_project(target.scope.workdir).root
    if target.scope.layer == "project":
        write_target(target.path, root)  # before anything is created
    created = not os.path.exists(directory)
    written = False
    try:
        os.makedirs(directory, mode=0o755, exist_ok=True)
        if target.scope.layer == "project":
            real = write_target(target.path, root)
        else:
            real = os.path.realpath(target.path)
        with _locked(os.path.dirname(real)):
            old = _read(real)
            try:
                source = (old or b"").decode("utf-8", "surrogateescape")
                new = change(source).encode("utf-8", "surrogateescape")
            except EditError as error:
                raise EditError(f"{target.path}: {error}") from None
            except tomllib.TOMLDecodeError as error:
                raise EditError(f"cannot edit {target.path}: {error}") from None
            except RecursionError:
                raise EditError(
                    f"cannot edit {target.path}: it is nested too deeply to edit; "
                    "edit it with 'start config edit' or an editor"
                ) from None
            if new == (old or b""):
                return Outcome(target.path, changed=False)
            problems = _problems(target, new, whole_file=keep_invalid)
            if not keep_invalid and any(p.is_error for p in problems):
                raise ConfigError(
                    problems,
                    headline=f"refused: the change would make the config invalid, so "
                    f"{target.path} was not changed",
                )
            with _self_edit(target):
                atomic.replace(real, new)
            written = True
            return Outcome(target.path, changed=True, problems=problems)
    except OSError as error:
        raise EditError(f"cannot write {target.path}: {error.strerror or error}") from error
    finally:
        if created and not written:
            with suppress(OSError):
                os.rmdir(directory)


@contextmanager
def _locked(directory: str) -> Iterator[int]:
    """An exclusive flock on the directory itself, held while reading, checking and writing.

    Locking the directory rather than a lock file adds no file to `.start/`, all of which trust
    covers, and survives the rename that replaces the config file.
    """
    import fcntl

    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def _self_edit(target: Target) -> AbstractContextManager[None]:
    """Project files stay approved across the edit only if they were approved before it."""
    if target.scope.layer != "project":
        return nullcontext()
    from start import trust

    return trust.self_edit(os.path.dirname(os.path.dirname(target.path)))
