"""TOML text edits that keep every other byte of the file.

New tables and keys are spliced in as whole lines; a removed item is cut out as whole lines with its
own comments (the comment block directly above it and the comments directly below it). New values
are written by tomlkit. Each result is re-parsed and compared with the data it should hold; a
splice that does not match falls back to tomlkit's own edit, and an edit that cannot be made safely
is refused.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from start.base.errors import StartError
from start.config.scanner import line_types


class EditError(StartError):
    """An edit that cannot be made, or a file that changed under it."""


def split_lines(text: str) -> list[str]:
    """Lines with their endings; only "\\n" ends a line in TOML (unlike str.splitlines)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _header_key(line: str) -> tuple[str, ...] | None:
    """The dotted key of a `[table]` header line; None for `[[array]]` headers."""
    node: object = tomllib.loads(line)
    key: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        name, node = next(iter(node.items()))
        key.append(name)
    return tuple(key) if isinstance(node, dict) else None


@dataclass(frozen=True, slots=True)
class Header:
    line: int
    key: tuple[str, ...] | None


class Layout:
    """The lines of a document, their types and its table headers."""

    def __init__(self, text: str) -> None:
        self.lines = split_lines(text)
        self.types = line_types(text)
        assert len(self.lines) == len(self.types)
        self.headers = [
            Header(number, _header_key(self.lines[number]))
            for number, line_type in enumerate(self.types)
            if line_type == "header"
        ]

    def lead(self, line: int) -> int:
        """The first line of the comment block directly above `line` (no blank line between)."""
        while line > 0 and self.types[line - 1] == "comment":
            line -= 1
        return line

    def _block_end(self, index: int) -> int:
        following = index + 1
        return self.headers[following].line if following < len(self.headers) else len(self.lines)

    def content_end(self, index: int) -> int:
        """Just past the last key line of the table opened by header `index`."""
        start = self.headers[index].line
        end = self._block_end(index)
        last = start
        for number in range(start + 1, end):
            if self.types[number] in ("key", "more"):
                last = number
        return last + 1

    def attached_end(self, index: int) -> int:
        """Past the table's content and the comments directly below it.

        A comment block directly above the next header belongs to that header instead.
        """
        end = self.content_end(index)
        limit = self._block_end(index)
        if index + 1 < len(self.headers):
            limit = self.lead(limit)
        while end < limit and self.types[end] == "comment":
            end += 1
        return end

    def item_span(self, section: str, name: str) -> tuple[int, int] | None:
        """Lines to delete to remove `[section.name]` (and its sub-tables) with its own comments.

        None when the item is not a run of its own table headers (inline, dotted or split up).
        """
        own = [i for i, h in enumerate(self.headers) if h.key and h.key[:2] == (section, name)]
        if not own or own != list(range(own[0], own[-1] + 1)):
            return None
        start = self.lead(self.headers[own[0]].line)
        end = self.attached_end(own[-1])
        while end < len(self.lines) and self.types[end] == "blank":
            end += 1
        if end == len(self.lines):
            while start > 0 and self.types[start - 1] == "blank":
                start -= 1
        return start, end

    def _last(self, match: tuple[str, ...], *, prefix: bool) -> int | None:
        found = [
            i
            for i, h in enumerate(self.headers)
            if h.key is not None and (h.key[: len(match)] if prefix else h.key) == match
        ]
        return found[-1] if found else None

    def section_end(self, section: str) -> int | None:
        """Where a new `[section.name]` table goes: after the section's last table."""
        last = self._last((section,), prefix=True)
        return None if last is None else self.attached_end(last)

    def keys_end(self, key: tuple[str, ...]) -> int | None:
        """Where a new key of table `[key]` goes: after its last key."""
        last = self._last(key, prefix=False)
        return None if last is None else self.content_end(last)


def with_setting(source: str, key: str, value: Any) -> str:
    table = tomllib.loads(source)
    settings = table.get("settings")
    expected = copy.deepcopy(table)
    expected.setdefault("settings", {})[key] = value
    layout = Layout(source)
    end = layout.keys_end(("settings",))
    ways: list[Callable[[], str]] = []
    if isinstance(settings, dict) and key in settings:
        ways.append(lambda: _tomlkit_change(source, ("settings", key), value))
    elif end is not None:
        ways.append(lambda: _splice(layout, end, end, _toml_pair(key, value)))
    elif "settings" not in table:
        ways.append(lambda: _append(source, _toml_table(("settings",), {key: value})))
    ways.append(lambda: _tomlkit_change(source, ("settings", key), value))
    return _first_matching(ways, expected)


def without_setting(source: str, key: str) -> str:
    table = tomllib.loads(source)
    settings = table.get("settings")
    if not isinstance(settings, dict) or key not in settings:
        return source
    expected = copy.deepcopy(table)
    del expected["settings"][key]
    return _first_matching([lambda: _tomlkit_change(source, ("settings", key), None)], expected)


def with_item(source: str, section: str, name: str, fields: Mapping[str, Any]) -> str:
    table = tomllib.loads(source)
    expected = copy.deepcopy(table)
    body = expected.setdefault(section, {})
    if not isinstance(body, dict):
        raise EditError(f"'{section}' is not a table")
    body[name] = dict(fields)
    layout = Layout(source)
    end = layout.section_end(section)
    text = _toml_table((section, name), fields)
    ways: list[Callable[[], str]] = []
    if end is not None:
        ways.append(lambda: _splice(layout, end, end, "\n" + text))
    ways.append(lambda: _append(source, text))
    ways.append(lambda: _tomlkit_change(source, (section, name), fields))
    return _first_matching(ways, expected)


def with_block(source: str, section: str, name: str, block: str, data: Mapping[str, Any]) -> str:
    """`block`, the lines of item `[section.name]` (its comments included) from another file,
    after the section's last table, else at the end; `data` is what the item must then hold."""
    table = tomllib.loads(source)
    expected = copy.deepcopy(table)
    body = expected.setdefault(section, {})
    if not isinstance(body, dict):
        raise EditError(f"'{section}' is not a table")
    body[name] = copy.deepcopy(dict(data))
    layout = Layout(source)
    end = layout.section_end(section)
    ways: list[Callable[[], str]] = []
    if end is not None:
        ways.append(lambda: _splice(layout, end, end, "\n" + block))
    ways.append(lambda: _append(source, block))
    return _first_matching(ways, expected)


def with_fields(source: str, section: str, name: str, fields: Mapping[str, Any]) -> str:
    """Set fields of item `[section.name]`, keeping its other fields and comments; a table value
    (models, params) adds its keys to the table the item has."""
    import tomlkit

    table = tomllib.loads(source)
    expected = copy.deepcopy(table)
    item = expected.get(section, {}).get(name)
    if not isinstance(item, dict):
        raise EditError(f"[{section}.{name}] is not a table")
    for field, value in fields.items():
        if isinstance(value, Mapping) and isinstance(item.get(field), dict):
            item[field].update(copy.deepcopy(dict(value)))
        else:
            item[field] = copy.deepcopy(value)

    def tomlkit_edit() -> str:
        document = tomlkit.parse(source)
        container: Any = document[section][name]
        for field, value in fields.items():
            if isinstance(value, Mapping) and field in container:
                for key, sub in value.items():
                    container[field][key] = _tomlkit_value(sub)
            else:
                container[field] = _tomlkit_value(value)
        return document.as_string()

    return _first_matching([tomlkit_edit], expected)


def without_field(source: str, section: str, name: str, field: str, sub: str | None) -> str:
    """Item `[section.name]` without `field` (or without key `sub` of a table field), keeping
    everything else; the source as it is when the item does not set it."""
    import tomlkit

    table = tomllib.loads(source)
    item = table.get(section, {}).get(name)
    held = item.get(field) if isinstance(item, dict) else None
    if held is None or (sub is not None and not (isinstance(held, dict) and sub in held)):
        return source
    # A table field left without keys goes too: `[agents.a.models]` alone says nothing.
    whole = sub is None or len(held) == 1
    expected = copy.deepcopy(table)
    if whole:
        del expected[section][name][field]
    else:
        del expected[section][name][field][sub]

    def tomlkit_edit() -> str:
        document = tomlkit.parse(source)
        container: Any = document[section][name]
        if whole:
            del container[field]
        else:
            del container[field][sub]
        return document.as_string()

    return _first_matching([tomlkit_edit], expected)


def without_item(source: str, section: str, name: str) -> str:
    table = tomllib.loads(source)
    expected = copy.deepcopy(table)
    del expected[section][name]
    layout = Layout(source)
    span = layout.item_span(section, name)
    ways: list[Callable[[], str]] = []
    if span is not None:
        ways.append(lambda: _splice(layout, span[0], span[1], ""))
    ways.append(lambda: _tomlkit_change(source, (section, name), None))
    return _first_matching(ways, expected)


def _splice(layout: Layout, start: int, end: int, text: str) -> str:
    before = "".join(layout.lines[:start])
    if text and before and not before.endswith("\n"):
        before += "\n"
    return before + text + "".join(layout.lines[end:])


def _append(source: str, block: str) -> str:
    if not source.strip():
        return block
    if source.endswith("\n\n"):
        return source + block
    return source + ("\n" if source.endswith("\n") else "\n\n") + block


def _tomlkit_value(value: Any) -> Any:
    import tomlkit
    from tomlkit.exceptions import InvalidStringError

    if isinstance(value, Mapping):
        table = tomlkit.table()
        for key, item in value.items():
            table[key] = _tomlkit_value(item)
        return table
    # A parser may turn "\r\n" in a multi-line string into "\n", so text with "\r" stays escaped.
    if isinstance(value, str) and "\n" in value and "\r" not in value:
        from tomlkit.items import String, StringType, Trivia

        string_type = StringType.MLL
        try:
            text = tomlkit.string(value, literal=True, multiline=True)
        except InvalidStringError:
            string_type = StringType.MLB
            text = tomlkit.string(value, multiline=True)
        body = text.as_string()[3:-3]
        # tomlkit >= 0.15.1 already writes a value that starts with a newline on its own line (the
        # body then has one more leading newline than the value); older versions lose that newline.
        if len(body) - len(body.lstrip("\n")) > len(value) - len(value.lstrip("\n")):
            return text
        # Start the text on its own line, as people write prompts; the parser drops that newline.
        # (Not `text.type`: tomlkit added that property in 0.14, and pyproject allows 0.12.)
        return String(string_type, value, "\n" + body, Trivia())
    return tomlkit.item(value)


def _toml_pair(key: str, value: Any) -> str:
    import tomlkit

    document = tomlkit.document()
    document[key] = _tomlkit_value(value)
    return document.as_string()


def _toml_table(key: tuple[str, ...], fields: Mapping[str, Any]) -> str:
    """`[a.b]` and its fields (sub-tables such as models follow as `[a.b.models]`)."""
    import tomlkit

    table: Any = tomlkit.table()
    for field, value in fields.items():
        table[field] = _tomlkit_value(value)
    for part in reversed(key[1:]):
        outer = tomlkit.table(is_super_table=True)
        outer[part] = table
        table = outer
    document = tomlkit.document()
    document[key[0]] = table
    return document.as_string()


def _tomlkit_change(source: str, key: tuple[str, str], value: Any) -> str:
    """tomlkit's own edit: set `key` to `value`, or delete it when `value` is None."""
    import tomlkit

    document = tomlkit.parse(source)
    if key[0] not in document:
        document[key[0]] = tomlkit.table(is_super_table=True)
    container: Any = document[key[0]]
    if value is None:
        del container[key[1]]
    else:
        container[key[1]] = _tomlkit_value(value)
    return document.as_string()


def _pruned(value: Any) -> Any:
    """Tables without empty sub-tables: `[tasks]` with nothing in it means no tasks."""
    if not isinstance(value, dict):
        return value
    pruned = {k: _pruned(v) for k, v in value.items()}
    return {k: v for k, v in pruned.items() if v != {}}


def _first_matching(ways: list[Callable[[], str]], expected: dict[str, Any]) -> str:
    from tomlkit.exceptions import TOMLKitError

    want = _pruned(expected)
    for way in ways:
        try:
            text = way()
            if _pruned(tomllib.loads(text)) == want:
                return text
        except (TOMLKitError, ValueError, KeyError, TypeError):
            continue  # tomlkit cannot express this layout; try the next way
    raise EditError(
        "this change cannot be made without disturbing the file's layout; "
        "make it by hand with 'start config edit'"
    )
