"""Where things are in a TOML file: problems placed at line and column.

tomllib keeps no positions, so a problem found after parsing (an unknown key, a placeholder)
would have none. `scan` reads the table headers (`[a.b]`, `[[a.b]]`) and `key =` lines, as the
TOML scanner (`scanner`) finds them outside strings and arrays, and runs only when a file has
problems. `explain` turns tomllib's terse syntax errors into plain ones for the common mistakes.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence

from start.base.errors import Problem
from start.base.record import Record
from start.config.scanner import LineType, line_types, spans, string_end

_BARE = re.compile(r"[A-Za-z0-9_-]+")


class Entry(Record):
    """A header or key: its 1-based line and column, and the offset where its value starts."""

    line: int
    column: int
    value: int


class _Line(Record):
    number: int
    offset: int  # of the line's first character in the text
    text: str
    type: LineType


def _statements(text: str) -> Iterator[_Line]:
    """The lines that start a table header or a key (not those inside strings or arrays)."""
    offset = 0
    # split() has a last, empty piece after a final "\n", which starts no line.
    lines = zip(text.split("\n"), line_types(text), strict=False)
    for number, (line, line_type) in enumerate(lines, 1):
        if line_type in ("header", "key"):
            yield _Line(number, offset, line, line_type)
        offset += len(line) + 1


def _place(text: str, at: int) -> tuple[int, int]:
    """The 1-based line and column of offset `at`."""
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)


def _key(text: str, at: int) -> tuple[list[str], int] | None:
    """A dotted key starting at `at`: its parts and the index after it, or None."""
    parts: list[str] = []
    index = at
    while True:
        while index < len(text) and text[index] in " \t":
            index += 1
        if index < len(text) and text[index] in "\"'":
            end, closed = string_end(text, index)
            name = _unquoted(text[index:end]) if closed else None
            if name is None:
                return None
            parts.append(name)
            index = end
        else:
            bare = _BARE.match(text, index)
            if bare is None:
                return None
            parts.append(bare.group())
            index = bare.end()
        while index < len(text) and text[index] in " \t":
            index += 1
        if index < len(text) and text[index] == ".":
            index += 1
            continue
        return parts, index


def _unquoted(quoted: str) -> str | None:
    """A quoted key's name, or None if it is not a valid one."""
    if quoted[0] == "'" or "\\" not in quoted:
        return quoted[1:-1]
    try:
        return str(tomllib.loads(f"k = {quoted}")["k"])  # a basic string's escapes
    except tomllib.TOMLDecodeError:
        return None


def scan(text: str) -> dict[str, Entry]:
    """Every table header and key of `text` as a dotted path, with each prefix at its first use."""
    found: dict[str, Entry] = {}
    table: list[str] = []

    def record(parts: list[str], line: _Line, column: int, value: int) -> None:
        for size in range(1, len(parts) + 1):
            found.setdefault(".".join(parts[:size]), Entry(line.number, column + 1, value))

    for line in _statements(text):
        stripped = line.text.lstrip()
        indent = len(line.text) - len(stripped)
        if line.type == "header":
            double = stripped.startswith("[[")
            parsed = _key(stripped, 2 if double else 1)
            if parsed is None:
                continue
            table = parsed[0]
            record(table, line, indent, line.offset + len(line.text))
            continue
        parsed = _key(stripped, 0)
        if parsed is None:
            continue
        parts, after = parsed
        if not stripped[after:].startswith("="):
            continue
        record([*table, *parts], line, indent, line.offset + indent + after + 1)
    return found


def position(text: str, entries: Mapping[str, Entry], key: str, message: str) -> Entry | None:
    """Where the problem `message` about `key` is: the key (or its nearest enclosing table); a
    placeholder named in the message is found inside the key's value."""
    parts = key.split(".")
    while parts and ".".join(parts) not in entries:
        parts.pop()
    if not parts:
        return None
    entry = entries[".".join(parts)]
    if len(parts) < len(key.split(".")):
        return entry
    # A workflow's binding is a dotted path too: {steps.plan.answer} (start.config.workflows).
    placeholder = re.search(r"\{[a-z][a-z0-9_.]*\}", message)
    if placeholder is None:
        return entry
    starts = sorted(e.value for e in entries.values() if e.value > entry.value)
    end = starts[0] if starts else len(text)
    at = text.find(placeholder.group(), entry.value, end)
    if at < 0:
        return entry
    return Entry(*_place(text, at), at)


def locate(problems: Sequence[Problem], contents: Mapping[str, bytes]) -> tuple[Problem, ...]:
    """The problems, each with the line and column of its key in its file where one is found."""
    scanned: dict[str, tuple[str, dict[str, Entry]]] = {}
    located: list[Problem] = []
    for problem in problems:
        data = contents.get(problem.file) if problem.file is not None else None
        if problem.line is not None or not problem.key or data is None:
            located.append(problem)
            continue
        assert problem.file is not None
        if problem.file not in scanned:
            text = data.decode("utf-8", "replace")
            scanned[problem.file] = (text, scan(text))
        text, entries = scanned[problem.file]
        found = position(text, entries, problem.key, problem.message)
        if found is None:
            located.append(problem)
        else:
            located.append(problem._replace(line=found.line, column=found.column))
    return tuple(located)


# Syntax errors: tomllib's message, in plain words for the common mistakes.


def explain(text: str, line: int, column: int, message: str) -> tuple[int, int, str]:
    """A syntax error's position and message, put plainly where the mistake is a common one."""
    lines = text.split("\n")
    for statement in _statements(text):
        if statement.number > line:
            break
        comment = next((s.start for s in spans(statement.text) if s.kind == "comment"), None)
        body = statement.text[:comment].strip()
        if statement.type == "header" and not body.endswith("]"):
            at = statement.text.index("[") + 1
            return statement.number, at, f"unclosed table header '{body}': add ']'"
    current = lines[line - 1] if 0 < line <= len(lines) else ""
    lowered = message[:1].lower() + message[1:]
    if message.startswith("Cannot declare") and message.endswith("twice"):
        header = current.strip()
        return line, 1, f"table {header} is declared twice; merge the two into one"
    if message == "Cannot overwrite a value":
        parsed = _key(current.strip(), 0)
        name = ".".join(parsed[0]) if parsed else "a key"
        start = len(current) - len(current.lstrip()) + 1
        return line, start, f"'{name}' is set twice in this table; keep one"
    if message == "Invalid value":
        word = re.match(r"[A-Za-z_][\w.-]*", current[column - 1 :])
        if word is not None and word.group() not in ("true", "false", "inf", "nan"):
            value = word.group()
            return line, column, f'invalid value {value}: a string needs quotes, as in "{value}"'
    if message == "Illegal character '\\n'":
        return line, column, 'unterminated string: end it on its line, or use """ for several lines'
    if message.startswith("Unterminated string"):
        opened = next((s for s in spans(text) if s.kind == "string" and not s.closed), None)
        if opened is not None and text.startswith(text[opened.start] * 3, opened.start):
            number, at = _place(text, opened.start)
            return number, at, "unterminated multi-line string: it is never closed"
    if message.startswith("Expected newline or end of document"):
        return line, column, "unexpected text after the value: one key = value per line"
    return line, column, lowered or "invalid TOML"
