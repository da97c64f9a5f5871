"""Where things are in a TOML file: a line scanner that places problems at line and column.

tomllib keeps no positions, so a problem found after parsing (an unknown key, a placeholder)
would have none. The scanner reads table headers (`[a.b]`, `[[a.b]]`) and `key =` lines, skipping
multi-line strings, and runs only when a file has problems. It also turns tomllib's terse syntax
errors into plain ones for the common mistakes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from start.errors import Problem
from start.record import Record

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


def _lines(text: str) -> Iterator[_Line]:
    """The lines that are TOML statements: those inside multi-line strings are skipped."""
    offset = 0
    inside: str | None = None  # the delimiter of an open multi-line string
    for number, line in enumerate(text.split("\n"), 1):
        start = offset
        offset += len(line) + 1
        if inside is not None:
            if _closes(line, inside):
                inside = None
            continue
        yield _Line(number, start, line)
        inside = _opens(line)


def _opens(line: str) -> str | None:
    """The delimiter of a multi-line string that this line opens and leaves open, if any."""
    for delimiter in ('"""', "'''"):
        at = line.find(delimiter)
        if at >= 0 and "=" in line[:at] and not _closes(line[at + 3 :], delimiter):
            return delimiter
    return None


def _open_at_end(text: str) -> _Line | None:
    """The line that opens a multi-line string which is still open at the end of `text`."""
    last = None
    for line in _lines(text):
        last = line
    return last if last is not None and _opens(last.text) else None


def _closes(line: str, delimiter: str) -> bool:
    at = line.find(delimiter)
    while at > 0 and delimiter == '"""' and line[at - 1] == "\\":
        at = line.find(delimiter, at + 1)
    return at >= 0


def _key(text: str, at: int) -> tuple[list[str], int] | None:
    """A dotted key starting at `at`: its parts and the index after it, or None."""
    parts: list[str] = []
    index = at
    while True:
        while index < len(text) and text[index] in " \t":
            index += 1
        if index < len(text) and text[index] in "\"'":
            quote = text[index]
            end = text.find(quote, index + 1)
            if end < 0:
                return None
            parts.append(text[index + 1 : end])
            index = end + 1
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


def scan(text: str) -> dict[str, Entry]:
    """Every table header and key of `text` as a dotted path, with each prefix at its first use."""
    found: dict[str, Entry] = {}
    table: list[str] = []

    def record(parts: list[str], line: _Line, column: int, value: int) -> None:
        for size in range(1, len(parts) + 1):
            found.setdefault(".".join(parts[:size]), Entry(line.number, column + 1, value))

    for line in _lines(text):
        stripped = line.text.lstrip()
        indent = len(line.text) - len(stripped)
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
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
    placeholder = re.search(r"\{[a-z][a-z0-9_]*\}", message)
    if placeholder is None:
        return entry
    starts = sorted(e.value for e in entries.values() if e.value > entry.value)
    end = starts[0] if starts else len(text)
    at = text.find(placeholder.group(), entry.value, end)
    if at < 0:
        return entry
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return Entry(line, column, at)


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
    for statement in _lines(text):
        if statement.number > line:
            break
        stripped = statement.text.strip()
        body = stripped.split("#", 1)[0].rstrip()
        # A header, not a line of a multi-line array such as `[1, 2],`.
        if body.startswith("[") and not body.endswith("]") and "," not in body:
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
        opened = _open_at_end(text)
        if opened is not None:
            delimiter = _opens(opened.text) or '"""'
            at = opened.text.find(delimiter) + 1
            return opened.number, at, "unterminated multi-line string: it is never closed"
    if message.startswith("Expected newline or end of document"):
        return line, column, "unexpected text after the value: one key = value per line"
    return line, column, lowered or "invalid TOML"
