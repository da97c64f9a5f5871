"""The plain-TOML reader answers exactly as tomllib does, or leaves the text to tomllib.

The property: for any text, `plaintoml.loads` is None, or tomllib reads the same text without an
error and returns the same tables, keys in the same order, values of the same types. The
documents are built from TOML's pieces, the awkward ones included (escapes, quotes next to
closing quotes, duplicate keys and tables, headers through values, CRLF, control characters).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from start.config import plaintoml

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import scenarios  # noqa: E402

FAILED = "tomllib raised TOMLDecodeError"


def typed(value: Any) -> Any:
    """`value` with its types and key order made part of equality (True is not 1 here)."""
    if isinstance(value, dict):
        return ("table", [(key, typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("array", [typed(item) for item in value])
    return (type(value).__name__, value)


def tomllib_reads(text: str) -> Any:
    try:
        return typed(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return FAILED


def agrees(text: str) -> bool:
    """Whether the reader gives tomllib's answer; True when it read `text` itself."""
    got = plaintoml.loads(text)
    if got is None:
        return False
    assert typed(got) == tomllib_reads(text), text
    return True


# The pieces: keys (few, so they repeat), string bodies with the characters that matter,
# scalars inside and outside the plain part. Plain pieces come up most, so that many documents
# are read by the reader itself and the rest near-miss.
ODD = 25  # one odd piece to about 25 plain ones: most documents are plain, some near-miss


def mostly(plain: list[str], odd: list[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(plain * ODD + odd)


keys = mostly(
    ["a", "b", "c", "d", "e", "f", "g", "1", "-", "true", "a-b_C"], ['"a"', "a.b", "é", "a b", ""]
)
TEXT = ["x", " ", "#", "=", "\t", "é", "[", "]", "{", "}", ",", "{x}", "$(id)"]
ESCAPES = ["\\n", "\\t", '\\"', "\\\\", "\\u00e9", "\\U0001F600"]
ODD_CHARS = ['"', "'", "\\", "\n", "\\uD800", "\\U00110000", "\\x41", "\\e", "\\ "]
ODD_CHARS += ["\r", "\x00", "\x7f"]
# Each kind of string with the characters it may hold, and now and then one it may not.
STRINGS = {
    '"{}"': mostly([*TEXT, *ESCAPES, "'"], ODD_CHARS),
    "'{}'": mostly([*TEXT, '"', "\\"], ODD_CHARS),
    '"""{}"""': mostly([*TEXT, *ESCAPES, "'", '"', '""', "\n"], ODD_CHARS),
    '"""\n{}"""': mostly([*TEXT, *ESCAPES, "'", '"', '""', "\n"], ODD_CHARS),
    "'''{}'''": mostly([*TEXT, '"', "\\", "'", "''", "\n"], ODD_CHARS),
    "'''\n{}'''": mostly([*TEXT, '"', "\\", "'", "''", "\n"], ODD_CHARS),
}
strings = st.one_of(
    [st.lists(chars, max_size=6).map("".join).map(form.format) for form, chars in STRINGS.items()]
)
words = mostly(["true", "false", "0", "-0", "+7", "42", "-123456789012345678901"], [])
odd_words = st.sampled_from(["True", "01", "1_000", "0x1f", "1.5", "1e3", "inf", "1979-05-27", "-"])
scalars = st.one_of(strings, strings, words, odd_words)
spaces = st.sampled_from(["", " ", "\t", "  "])


def values(depth: int = 0) -> st.SearchStrategy[str]:
    if depth >= 2:
        return scalars
    inner = values(depth + 1)
    separators = mostly([",", ", ", ",\n", " ,", ",# note\n", "\n,"], [" ", ",,"])
    arrays = st.tuples(st.lists(st.tuples(inner, separators), max_size=3), st.booleans()).map(
        lambda parts: (
            "[" + "".join(value + sep for value, sep in parts[0])[: None if parts[1] else -1] + "]"
        )
    )
    pairs = st.lists(st.tuples(keys, inner), max_size=3)
    tables = st.tuples(pairs, mostly([", ", ",", " , "], [", }", ",\n"])).map(
        lambda parts: "{ " + parts[1].join(f"{k} = {v}" for k, v in parts[0]) + " }"
    )
    return st.one_of(scalars, scalars, scalars, arrays, tables)


headers = st.tuples(
    st.lists(mostly(["a", "b", "t", "1"], ["a b", '"q"', ""]), min_size=1, max_size=3),
    mostly(["[{}]", "[ {} ]", "[{} ]"], ["[[{}]]", "[{}"]),
    mostly(["."], [" . ", ".."]),
).map(lambda parts: parts[1].format(parts[2].join(parts[0])))
assignments = st.tuples(keys, spaces, spaces, values(), spaces).map(
    lambda parts: f"{parts[1]}{parts[0]}{parts[2]}={parts[2]}{parts[3]}{parts[4]}"
)
comments = mostly(["", "", "# a comment", "#", "# é \"'"], ["#\x01"])
lines = st.tuples(st.one_of(headers, assignments, assignments, st.just("")), spaces, comments).map(
    lambda parts: parts[0] + parts[1] + parts[2]
)
documents = st.tuples(st.lists(lines, max_size=8), mostly(["\n"], ["\r\n"])).map(
    lambda parts: parts[1].join(parts[0])
)


@settings(max_examples=300)
@given(documents)
@example('a = "\\u00e9\\n"\n[t]\nb = [1, "x", {c = true}]')
@example('[a.b]\nx = 1\n[a]\ny = 2\n[a.c]\n[t]\ns = """\n"quoted" ""twice""\n"""')
def test_the_reader_agrees_with_tomllib_or_leaves_the_text_to_it(text: str) -> None:
    agrees(text)


@pytest.mark.slow
@settings(max_examples=3000)
@given(documents)
def test_the_reader_agrees_with_tomllib_on_many_more_documents(text: str) -> None:
    """The same property, ten times as many documents: CI runs it with the slow tests (`make test-slow`);
    some mistakes (a header through a value) show only after a few thousand documents."""
    agrees(text)


# Plain TOML that the reader must read itself: it is what configs are made of.
PLAIN = {
    "tables and keys": '[a]\nx = "1"\n[a.b]\n[c.d.e]\ny = true\n[c]\nz = false\n',
    "every one-line value": 's = "q \\" b \\\\ \\u00e9 \\U0001F600 \\t"\nl = \'C:\\x\'\ni = -12\n',
    "multi-line strings": (
        's = """\nline "one"\n  ""two""\n\\tend"""\nl = \'\'\'\nraw \\n \'quoted\'\n\'\'\'\n'
    ),
    "arrays": 'a = [\n  "x", # first\n  [1, 2],\n  {k = "v"},\n]\nb = []\nc = [ true ,false ]\n',
    "inline tables": 'p = { default = "main", description = "the branch" }\nq = {}\n',
    "comments and indentation": '# top\n\n  [t]   # header\n  k="v"#tight\n\n\t# end',
    "no newline at the end": '[t]\nk = "v"',
    "empty": "",
}


@pytest.mark.parametrize("text", PLAIN.values(), ids=PLAIN.keys())
def test_the_reader_reads_plain_toml_itself(text: str) -> None:
    assert agrees(text)


# Outside the plain part: valid TOML the reader leaves to tomllib, and invalid TOML, whose error
# tomllib words.
NOT_PLAIN = {
    "a quoted key": '"a b" = 1',
    "a dotted key": "a.b = 1",
    "an array of tables": "[[a]]\nx = 1",
    "a float": "x = 1.5",
    "a date": "x = 1979-05-27",
    "underscores in an integer": "x = 1_000",
    "a hex integer": "x = 0x1f",
    "a line-ending backslash": 's = """a \\\n  b"""',
    "CRLF line ends": 'a = "x"\r\nb = 1\r\n',
    "a key twice": "a = 1\na = 2",
    "a table twice": "[a]\n[a]",
    "a header through a value": "a = 1\n[a.b]",
    "a header through an inline table": "a = {}\n[a.b]",
    "a key over a table": "[a.b]\n[a]\nb = 1",
    "a surrogate escape": 'a = "\\uD800"',
    "an unknown escape": 'a = "\\x41"',
    "an escape of TOML 1.1": 'a = "\\e"',
    "a short unicode escape": 'a = "\\u12"',
    "a line-ending backslash in a basic string": 'a = "x\\\n"',
    "a control character": 'a = "\x01"',
    "a trailing comma in an inline table": "a = { b = 1, }",
    "an unclosed string": 'a = "x',
    "a leading zero": "a = 01",
    "text after a value": 'a = "x" y',
    "four closing quotes": 's = """x""""',
    "deep nesting": "a = " + "[" * 40 + "]" * 40,
    "an integer of 20 digits": "a = 12345678901234567890",
    "an integer past Python's limit on digits": "a = 1" + "0" * 4300,
    "such an integer in an array": "a = [1" + "0" * 4300 + "]",
}


@pytest.mark.parametrize("text", NOT_PLAIN.values(), ids=NOT_PLAIN.keys())
def test_the_reader_leaves_everything_else_to_tomllib(text: str) -> None:
    assert plaintoml.loads(text) is None


def test_the_shipped_config_and_the_benchmark_configs_are_plain(tmp_path: Path) -> None:
    # The reader earns its place only if real configs never reach tomllib.
    world = scenarios.World(tmp_path, tmp_path / "repo", tmp_path / "configs", tmp_path, tmp_path)
    scenarios.large(world)
    scenarios.small(world)
    files = sorted((REPO / "config").glob("*.toml")) + sorted(world.configs.rglob("*.toml"))
    assert len(files) == 10
    for path in files:
        assert agrees(path.read_text(encoding="utf-8")), path
