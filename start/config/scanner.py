"""The TOML scanner: where the strings and comments of a TOML text are, and what each line is.

`positions` (which places problems at line and column) and `splice` (which edits files line by
line) both need to know which characters are inside a string or a comment, so both read them
here. It reads all four kinds of string (basic, literal and their multi-line forms, with escapes
in the basic ones), and `#` comments; tests/config/test_scanner.py checks it against tomllib on
generated documents. Each character is looked at a bounded number of times, so the scan is linear
on any input; an invalid text gets an answer too, with its unclosed strings marked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

from start.base.record import Record

LineType = Literal["blank", "comment", "header", "key", "more"]

# Outside strings: what starts a string or a comment, ends a line, or opens or closes an array,
# an inline table or a table header.
_SPECIAL = re.compile(r"[\"'#\n\[\]{}]")
# Inside a string of each kind (quote, multi-line): an escape, or what may end the string.
_INSIDE = {
    ('"', False): re.compile(r'\\[^\n]|["\n]'),
    ('"', True): re.compile(r'\\.|"', re.DOTALL),
    ("'", False): re.compile(r"['\n]"),
    ("'", True): re.compile(r"'"),
}


class Span(Record):
    """A string (from its opening quote to past its closing one) or a comment (from `#` to the
    end of its line); `closed` is False for a string the text never closes."""

    kind: Literal["string", "comment"]
    start: int
    end: int
    closed: bool = True


def string_end(text: str, start: int) -> tuple[int, bool]:
    """Past the end of the string that opens at `start`, and whether it is closed."""
    quote = text[start]
    multi = text.startswith(quote * 3, start)
    inside = _INSIDE[quote, multi]
    index = start + (3 if multi else 1)
    while (found := inside.search(text, index)) is not None:
        at = found.start()
        if text[at] == "\\":
            index = found.end()
        elif text[at] == "\n":
            return at, False
        elif not multi:
            return at + 1, True
        elif text.startswith(quote * 3, at):
            # Up to two more quotes right before the delimiter belong to the string: `""""`.
            end = at + 3
            while end < at + 5 and text.startswith(quote, end):
                end += 1
            return end, True
        else:
            index = at + 1
    return len(text), False


def _tokens(text: str) -> Iterator[Span | tuple[str, int]]:
    """The strings and comments of `text` in order, and between them each newline and bracket
    with its offset."""
    index = 0
    while (found := _SPECIAL.search(text, index)) is not None:
        at = found.start()
        char = text[at]
        if char == "#":
            end = text.find("\n", at)
            index = len(text) if end < 0 else end
            yield Span("comment", at, index)
        elif char in "\"'":
            index, closed = string_end(text, at)
            yield Span("string", at, index, closed)
        else:
            index = at + 1
            yield char, at


def spans(text: str) -> Iterator[Span]:
    """The strings and comments of `text`, in order."""
    return (token for token in _tokens(text) if isinstance(token, Span))


def deepest_nest(text: str) -> int | None:
    """The offset of the outermost `[` or `{` of the most deeply nested value in `text` (outside
    strings and comments), or None when nothing is nested."""
    depth = deepest = 0
    outer = found = None
    for token in _tokens(text):
        if isinstance(token, Span):
            continue
        char, at = token
        if char in "[{":
            if depth == 0:
                outer = at
            depth += 1
            if depth > deepest:
                deepest, found = depth, outer
        elif char in "]}":
            depth = max(depth - 1, 0)
    return found


def line_types(text: str) -> list[LineType]:
    """What each line (ended by "\\n") starts with, judged outside strings, arrays and inline
    tables. A line that starts inside a multi-line string or array is "more" (it continues a key).
    """
    types: list[LineType] = []
    depth = 0

    def begin(at: int) -> None:
        while at < len(text) and text[at] in " \t\r":
            at += 1
        char = text[at] if at < len(text) else "\n"
        if depth > 0:
            types.append("more")
        elif char == "\n":
            types.append("blank")
        elif char == "#":
            types.append("comment")
        else:
            types.append("header" if char == "[" else "key")

    if text:
        begin(0)
    for token in _tokens(text):
        if isinstance(token, Span):
            # A newline that ends the text starts no line.
            types.extend(["more"] * text.count("\n", token.start, min(token.end, len(text) - 1)))
            continue
        char, at = token
        if char == "\n":
            if at + 1 < len(text):
                begin(at + 1)
        else:
            depth = depth + 1 if char in "[{" else max(depth - 1, 0)
    return types
