"""The TOML scanner agrees with tomllib on where strings, comments, keys and headers are.

The documents are built from TOML's pieces, the awkward ones included: all four kinds of string
holding escaped quotes, backslashes, `#`, `key = value` and `[table]` lines, and quotes right
before the closing delimiter (four or five in a row); comments holding quotes; multi-line arrays
with comments and nested arrays; quoted and dotted keys. tomllib reads each document, and the
scanner must find exactly its keys and headers, the strings and comments the document was built
from, and the type of each line.
"""

from __future__ import annotations

import tomllib
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from start.config import positions, splice
from start.config.scanner import LineType, Span, line_types, spans, string_end

# Pieces of each kind of string body, none of which ends it early.
ANYWHERE = ["a", " ", "#", "=", "k = 1", "[t]", "]", "{"]
BASIC = [*ANYWHERE, "'", "'''", "\\\\", '\\"', "\\t", "\\u00e9", '\\"\\"\\"']
LITERAL = [*ANYWHERE, '"', '"""', "\\", '\\"']
NEWLINES = ["\n", "\n[t]\n", "\nk = 1\n", "\n# c\n"]
# Raw triple quotes are left out below, as they would end the string.
ML_BASIC = [*BASIC, *NEWLINES, '"', '""', "\\\n", "\\  \n"]
ML_LITERAL = [*LITERAL, *NEWLINES, "'", "''"]
COMMENT = [*ANYWHERE, '"', '"""', "'", "'''", "\\", '\\"', "#"]


def _body(pieces: list[str], size: int = 6) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), max_size=size).map("".join)


STRINGS = st.one_of(
    _body(BASIC).map(lambda body: f'"{body}"'),
    _body(LITERAL).map(lambda body: f"'{body}'"),
    _body(ML_BASIC, 8).filter(lambda body: '"""' not in body).map(lambda b: f'"""{b}"""'),
    _body(ML_LITERAL, 8).filter(lambda body: "'''" not in body).map(lambda b: f"'''{b}'''"),
)
COMMENTS = _body(COMMENT).map(lambda body: "#" + body)
SPACE = st.sampled_from(["", " ", "\t", "  "])

# A piece of text, and "string" or "comment" when it is a span of that kind.
Chunk = tuple[str, Literal["string", "comment"] | None]
Document = tuple[str, list[Span], list[LineType]]  # text, its strings and comments, line types


def _name(draw: st.DrawFn, stem: str) -> list[Chunk]:
    """One part of a key: bare, or quoted with awkward characters after a unique stem."""
    style = draw(st.sampled_from(["bare", "basic", "literal"]))
    if style == "bare":
        return [(stem, None)]
    if style == "basic":
        return [(f'"{stem}{draw(_body(BASIC, 3))}"', "string")]
    return [(f"'{stem}{draw(_body(LITERAL, 3))}'", "string")]


def _dotted(draw: st.DrawFn, stems: list[str]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for index, stem in enumerate(stems):
        if index:
            chunks.append((draw(SPACE) + "." + draw(SPACE), None))
        chunks += _name(draw, stem)
    return chunks


def _value(draw: st.DrawFn, depth: int = 0) -> list[Chunk]:
    kind = draw(st.sampled_from(["string", "string", "integer", "array"] if depth < 2 else ["1"]))
    if kind == "string":
        return [(draw(STRINGS), "string")]
    if kind != "array":
        return [("1", None)]
    chunks: list[Chunk] = [("[", None)]
    for _ in range(draw(st.integers(0, 3))):
        chunks.append((draw(st.sampled_from(["", " ", "\n", "\n  ", "\n\n"])), None))
        chunks += [*_value(draw, depth + 1), (",", None)]
        if draw(st.booleans()):
            chunks += [(" ", None), (draw(COMMENTS), "comment"), ("\n", None)]
    return [*chunks, ("]", None)]


def _comment(draw: st.DrawFn) -> list[Chunk]:
    return [(draw(SPACE) + " ", None), (draw(COMMENTS), "comment")] if draw(st.booleans()) else []


def _keys(draw: st.DrawFn) -> list[tuple[list[Chunk], LineType]]:
    """`key = value` statements with unique keys, and blank and comment lines between them."""
    statements: list[tuple[list[Chunk], LineType]] = []
    for index in range(draw(st.integers(0, 4))):
        stems = [f"k{index}_"] + (["x"] if draw(st.booleans()) else [])
        equals = draw(SPACE) + "=" + draw(SPACE)
        chunks = [(draw(SPACE), None), *_dotted(draw, stems), (equals, None), *_value(draw)]
        statements.append(([*chunks, *_comment(draw), ("\n", None)], "key"))
        other = draw(st.sampled_from(["", "blank", "comment"]))
        if other == "blank":
            statements.append(([(draw(SPACE) + "\n", None)], "blank"))
        elif other == "comment":
            chunks = [(draw(SPACE), None), (draw(COMMENTS), "comment"), ("\n", None)]
            statements.append((chunks, "comment"))
    return statements


@st.composite
def documents(draw: st.DrawFn) -> Document:
    """A document, with the spans of its strings and comments, and the type of each line."""
    statements = _keys(draw)
    tables = draw(st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=4, unique=True))
    for number, sub in tables:
        double = not sub and draw(st.booleans())  # [[a]]: an array of tables
        stems = [f"a{number}_" if double else f"t{number}_"] + (["s"] if sub else [])
        opening, closing = ("[[", "]]") if double else ("[", "]")
        header = [(draw(SPACE) + opening + draw(SPACE), None), *_dotted(draw, stems)]
        header += [(draw(SPACE) + closing, None), *_comment(draw), ("\n", None)]
        statements += [(header, "header"), *_keys(draw)]
    text = ""
    found: list[Span] = []
    types: list[LineType] = []
    for chunks, first in statements:
        lines = sum(chunk.count("\n") for chunk, _ in chunks)
        types += [first] + ["more"] * (lines - 1)
        for chunk, kind in chunks:
            if kind is not None:
                found.append(Span(kind, len(text), len(text) + len(chunk)))
            text += chunk
    if statements and statements[-1][1] != "blank" and draw(st.booleans()):
        text = text[:-1]  # no newline at the end
    return text, found, types


def tomllib_keys(table: dict[str, Any], prefix: str = "") -> set[str]:
    """Every table and key tomllib read, as a dotted path (each element of an array of tables
    under the array's own path)."""
    keys: set[str] = set()
    for key, value in table.items():
        path = prefix + key
        keys.add(path)
        elements = value if isinstance(value, list) else [value]
        for element in elements:
            if isinstance(element, dict):
                keys |= tomllib_keys(element, path + ".")
    return keys


def agrees(document: Document) -> None:
    text, found, types = document
    assert set(positions.scan(text)) == tomllib_keys(tomllib.loads(text))
    assert list(spans(text)) == found
    assert line_types(text) == types
    assert len(splice.split_lines(text)) == len(types)


@settings(max_examples=300, deadline=None)
@given(documents())
def test_the_scanner_agrees_with_tomllib(document: Document) -> None:
    agrees(document)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(documents())
def test_the_scanner_agrees_with_tomllib_on_many_more_documents(document: Document) -> None:
    """The same property, ten times as many documents: CI runs it with the slow tests."""
    agrees(document)


@pytest.mark.parametrize(
    "string",
    [
        '"""a\\\\"""',  # an escaped backslash, then the delimiter
        '"""a\\""""',  # an escaped quote, then the delimiter
        '""""a"""',  # a quote right after the opening delimiter
        '"""a""""',  # one quote right before the closing delimiter
        '"""a"""""',  # and two
        '""""""',
        '"""\\\n  """',  # a backslash that ends a line
        "'''a''''",
        "'''a'''''",
        "'''a\\'''",  # a backslash in a literal string escapes nothing
        "'a\\'",
        '"a\\"b"',
        '"a\\\\"',
        '""',
        "''",
    ],
)
def test_a_string_ends_where_tomllib_ends_it(string: str) -> None:
    tomllib.loads(f"v = {string}")  # valid on its own
    text = f'{string} # "\'""" \'\'\'\n"""'
    assert string_end(text, 0) == (len(string), True)
    assert list(spans(text))[:2] == [
        Span("string", 0, len(string)),
        Span("comment", len(string) + 1, text.index("\n", len(string))),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"abc\nx = 1', (4, False)),
        ('"abc\\\nx"', (5, False)),
        ("'abc", (4, False)),
        ('"""abc\n""', (9, False)),
        ('"""a\\"""', (8, False)),
        ("'''abc''", (8, False)),
    ],
)
def test_an_unclosed_string_is_marked(text: str, expected: tuple[int, bool]) -> None:
    assert string_end(text, 0) == expected


def test_the_scan_is_linear_on_hostile_text() -> None:
    """Megabytes of what makes a scanner look back or start over: each would hang one that
    does."""
    size = 100_000
    escaped = 'x = """' + '\\"' * size + '"""\n'
    assert list(spans(escaped)) == [Span("string", 4, len(escaped) - 1)]
    assert line_types(escaped) == ["key"]
    pairs = "x = '''" + "''x" * size
    assert list(spans(pairs)) == [Span("string", 4, len(pairs), closed=False)]
    backslashes = 'x = "' + "\\" * (2 * size) + '"\ny = 1\n'
    assert positions.scan(backslashes) == {
        "x": positions.Entry(1, 1, 3),
        "y": positions.Entry(2, 1, len(backslashes) - 3),
    }
    assert len(list(spans('"' * (8 * size)))) == size  # `""""""""`: two quotes in each
    assert line_types("[" * size + "\n" + "x\n" * size) == ["header"] + ["more"] * size
    lines = "k = '''\n" * size
    assert line_types(lines) == ["key", "more"] * (size // 2)
    assert len(positions.scan("a.b.c = 1\n" * (size // 10))) == 3
