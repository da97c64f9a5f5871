"""Plain TOML: the part of TOML that config files are written in, read three to four times
faster than tomllib reads it.

`loads(text)` returns exactly what `tomllib.loads(text)` returns, or None when the text uses
anything outside the plain part. The caller then asks tomllib, which reads everything else and
words every syntax error, so this module never reports one.

The plain part:
- `[a.b]` table headers of bare keys (letters, digits, `_` and `-`);
- `key = value` lines with a bare key, a `# comment` and blank lines;
- values: basic and literal strings, one-line or multi-line (with the escapes `\\b \\t \\n \\f
  \\r \\" \\\\ \\uXXXX \\UXXXXXXXX`), decimal integers of up to 19 digits, booleans, arrays and
  inline tables of those.

Outside it, for tomllib: quoted or dotted keys, arrays of tables, floats, dates and times,
integers in other bases or with `_`, a backslash that ends a line, any control character but tab
and newline (so CRLF files too), and anything invalid. A key or table defined twice, or a header
that reaches into a value, is also left to tomllib, which rejects it.

Why: tomllib tests each character of a basic string in Python, so a config with 1,000 tasks took
35 ms to parse on every launch that could not use the config cache. Here one regular expression
matches a whole line; tests/config/test_plaintoml.py checks the answers against tomllib's.
"""

from __future__ import annotations

import re
from typing import Any

# The patterns are compiled on first use (re keeps them): a launch that reads no multi-line
# string or array does not pay for compiling theirs.

# Control characters TOML allows nowhere, and CR (tomllib accepts CRLF line ends: left to it).
_FORBIDDEN = r"[\x00-\x08\x0b-\x1f\x7f]"
_KEY = r"[A-Za-z0-9_-]+"
# A basic string's body: any escape passes here, and `_unescape` refuses all but TOML's.
_BODY = r'[^"\\\n]*(?:\\.[^"\\\n]*)*'

# One line: blank, a comment, a [table] header, or a key with a one-line string, boolean or
# integer value. Anything else goes to `_Reader.other_line`.
_LINE = (
    rf"[ \t]*(?:\[[ \t]*(?P<table>{_KEY}(?:\.{_KEY})*)[ \t]*\]|(?P<key>{_KEY})[ \t]*=[ \t]*"
    rf"""(?:"(?P<basic>{_BODY})"|'(?P<literal>[^'\n]*)'|(?P<true>true)|(?P<false>false)"""
    r"|(?P<integer>[+-]?(?:0|[1-9][0-9]*))))?[ \t]*(?:#[^\n]*)?(?:\n|\Z)"
)
_ASSIGN = rf"[ \t]*({_KEY})[ \t]*=[ \t]*"
_END = r"[ \t]*(?:#[^\n]*)?(?:\n|\Z)"
_BASIC = rf'"({_BODY})"'
_LITERAL = r"'([^'\n]*)'"
# Multi-line: a newline right after the opening quotes is dropped; one or two quotes may stand
# anywhere inside, but not right before the closing ones (that is left to tomllib).
_ML_BASIC = r'"""\n?((?:[^"\\]|"(?!"")|\\.)*)"""(?!")'
_ML_LITERAL = r"'''\n?((?:[^']|'(?!''))*)'''(?!')"
_SCALAR = r"(true|false)|[+-]?(?:0|[1-9][0-9]*)"
_BLANKS = r"(?:[ \t\n]|#[^\n]*)*"  # between the items of an array
_SPACES = r"[ \t]*"
_ESCAPE = r"\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)"
_SIMPLE_ESCAPES = {
    "\\b": "\b",
    "\\t": "\t",
    "\\n": "\n",
    "\\f": "\f",
    "\\r": "\r",
    '\\"': '"',
    "\\\\": "\\",
}
_MAX_DEPTH = 32  # arrays and inline tables within each other; deeper is tomllib's to refuse


class _NotPlain(Exception):
    """The text is outside the plain part (or not TOML at all): tomllib decides."""


def loads(text: str) -> dict[str, Any] | None:
    """`tomllib.loads(text)` when `text` is plain TOML, else None."""
    if re.compile(_FORBIDDEN).search(text):
        return None
    try:
        return _Reader(text).document()
    except _NotPlain:
        return None


def _integer(text: str) -> int:
    """A decimal integer; a longer one than an int64's 19 digits is tomllib's to read (or to
    refuse, past Python's limit on the digits int() converts)."""
    if len(text.lstrip("+-")) > 19:
        raise _NotPlain
    return int(text)


def _unescape(body: str) -> str:
    return re.compile(_ESCAPE).sub(_escaped_char, body) if "\\" in body else body


def _escaped_char(match: re.Match[str]) -> str:
    escape = match.group()
    simple = _SIMPLE_ESCAPES.get(escape)
    if simple is not None:
        return simple
    if len(escape) == 2:
        raise _NotPlain  # not an escape of TOML's, or \u without its four digits
    code = int(escape[2:], 16)
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        raise _NotPlain  # not a Unicode scalar value: an error, worded by tomllib
    return chr(code)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.root: dict[str, Any] = {}
        # Tables made by headers, by their dotted names: a header may only go through these.
        # A table a header named itself may not be named again.
        self.tables: dict[str, dict[str, Any]] = {"": self.root}
        self.named: set[str] = set()

    def document(self) -> dict[str, Any]:
        text, end = self.text, len(self.text)
        line = re.compile(_LINE).match
        table = self.root
        pos = 0
        while pos < end:
            found = line(text, pos)
            if found is None:
                pos = self.other_line(table, pos)
                continue
            pos = found.end()
            kind = found.lastgroup
            if kind is None:
                continue
            if kind == "table":
                table = self.header(found["table"])
                continue
            key = found["key"]
            if key in table:
                raise _NotPlain
            value: Any
            if kind == "basic":
                value = found[kind]
                if "\\" in value:
                    value = _unescape(value)
            elif kind == "literal":
                value = found[kind]
            elif kind == "integer":
                value = _integer(found[kind])
            else:
                value = kind == "true"
            table[key] = value
        return self.root

    def other_line(self, table: dict[str, Any], pos: int) -> int:
        """A `key = value` line whose value is multi-line, an array or an inline table."""
        assign = self.match(_ASSIGN, pos)
        if assign[1] in table:
            raise _NotPlain
        table[assign[1]], pos = self.value(assign.end(), 0)
        return self.match(_END, pos).end()

    def match(self, pattern: str, pos: int) -> re.Match[str]:
        """`pattern` matched at `pos`; where it does not match, the text is not plain."""
        found = re.compile(pattern).match(self.text, pos)
        if found is None:
            raise _NotPlain
        return found

    def header(self, dotted: str) -> dict[str, Any]:
        if dotted in self.named:
            raise _NotPlain  # the same [table] twice
        self.named.add(dotted)
        parent_name, _, last = dotted.rpartition(".")
        parent = self.tables.get(parent_name)
        if parent is None:
            parent = self.header_path(parent_name)
        return self.child(parent, last, dotted)

    def header_path(self, dotted: str) -> dict[str, Any]:
        """The table a header goes through (`a.b` of `[a.b.c]`), made when new."""
        table = self.root
        walked = ""
        for key in dotted.split("."):
            walked = f"{walked}.{key}" if walked else key
            table = self.child(table, key, walked)
        return table

    def child(self, table: dict[str, Any], key: str, dotted: str) -> dict[str, Any]:
        """The table `dotted` (`key` in `table`) that a header names or goes through."""
        found: dict[str, Any] | None = self.tables.get(dotted)
        if found is None:
            if key in table:
                raise _NotPlain  # a value, an array or an inline table
            found = table[key] = self.tables[dotted] = {}
        return found

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        text = self.text
        if text.startswith('"""', pos):
            found = self.match(_ML_BASIC, pos)
            return _unescape(found[1]), found.end()
        if text.startswith('"', pos):
            found = self.match(_BASIC, pos)
            return _unescape(found[1]), found.end()
        if text.startswith("'''", pos):
            found = self.match(_ML_LITERAL, pos)
            return found[1], found.end()
        if text.startswith("'", pos):
            found = self.match(_LITERAL, pos)
            return found[1], found.end()
        if depth >= _MAX_DEPTH:
            raise _NotPlain
        if text.startswith("[", pos):
            return self.array(pos + 1, depth + 1)
        if text.startswith("{", pos):
            return self.inline_table(pos + 1, depth + 1)
        found = self.match(_SCALAR, pos)
        word = found[1]
        return (word == "true" if word else _integer(found[0])), found.end()

    def array(self, pos: int, depth: int) -> tuple[list[Any], int]:
        text = self.text
        items: list[Any] = []
        pos = self.match(_BLANKS, pos).end()
        while not text.startswith("]", pos):
            item, pos = self.value(pos, depth)
            items.append(item)
            pos = self.match(_BLANKS, pos).end()
            if text.startswith(",", pos):
                pos = self.match(_BLANKS, pos + 1).end()
            elif not text.startswith("]", pos):
                raise _NotPlain
        return items, pos + 1

    def inline_table(self, pos: int, depth: int) -> tuple[dict[str, Any], int]:
        text = self.text
        table: dict[str, Any] = {}
        pos = self.match(_SPACES, pos).end()
        if text.startswith("}", pos):
            return table, pos + 1
        while True:
            assign = self.match(_ASSIGN, pos)
            if assign[1] in table:
                raise _NotPlain
            table[assign[1]], pos = self.value(assign.end(), depth)
            pos = self.match(_SPACES, pos).end()
            if text.startswith("}", pos):
                return table, pos + 1
            if not text.startswith(",", pos):
                raise _NotPlain
            pos += 1
