"""Every command-file parser is linear on hostile text (issue 22): a 1 MiB command file that made a
regular expression backtrack, or a line count start again from the top at every match, took
minutes. Each case here took over a minute before. Linear is checked by comparing a mebibyte's
CPU time with an eighth of one's (tests/growth.py), never by a wall clock."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.config.interop import claude, codex, gemini, opencode
from start.config.interop.common import Lines, UnusableError
from start.config.interop.model import Snippet
from tests.growth import FACTOR, assert_linear

MIB = 1 << 20


def _parsing(parse: Callable[[str], object], text: str) -> Callable[[], None]:
    def work() -> None:
        with contextlib.suppress(UnusableError):  # refused is fine; hanging is not
            parse(text)

    return work


def _gemini_toml(text: str) -> object:
    return gemini.parse_toml(text, "x.toml")


# Each case: its parser, and its hostile text of about n bytes.
CASES: dict[str, tuple[Callable[[str], object], Callable[[int], str]]] = {
    "claude: opening fences that never close": (claude.parse, lambda n: "```!\n" * (n // 5)),
    "claude: many references": (claude.parse, lambda n: "$ARGUMENTS\n" * (n // 11)),
    "claude: at-signs": (claude.parse, lambda n: "@." * (n // 2)),
    "opencode: many references": (opencode.parse, lambda n: "$1\n" * (n // 3)),
    "opencode: backticks": (opencode.parse, lambda n: "!`" * (n // 2)),
    "codex: many references": (codex.parse, lambda n: "$ARGUMENTS\n" * (n // 11)),
    "gemini: blank lines": (_gemini_toml, lambda n: 'prompt = "x"\n' + "\n" * n),
    "gemini: many keys": (
        _gemini_toml,
        lambda n: 'prompt = "x"\n' + "".join(f"k{i} = 1\n" for i in range(n // 13)),
    ),
    "gemini: many args": (
        _gemini_toml,
        lambda n: 'prompt = """' + "{{args}}\n" * (n // 9) + '"""\n',
    ),
    "qwen: many args": (gemini.parse_markdown, lambda n: "$ARGUMENTS {{args}}\n" * (n // 20)),
}


@pytest.mark.parametrize("case", CASES)
def test_each_parser_is_linear_on_a_mebibyte_of_hostile_text(case: str) -> None:
    parse, text = CASES[case]
    assert_linear(lambda n: _parsing(parse, text(n)), MIB // FACTOR)


_OLD_FENCE = re.compile(r"^```![ \t]*\n(?P<script>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@given(st.lists(st.sampled_from(["```!\n", "```\n", "``` \n", "```!x\n", "echo a\n", "\n", "x"])))
def test_fences_are_found_as_the_lazy_pattern_found_them(pieces: list[str]) -> None:
    """The old pattern is the oracle: each opening line closes at the first closing line after
    it, and an opening line that none follows is text."""
    body = "".join(pieces)
    expected = [
        (m.group(0).rstrip(), m.group("script").rstrip("\n")) for m in _OLD_FENCE.finditer(body)
    ]
    found = [
        (segment.literal.rstrip(), "".join(p for p in segment.parts if isinstance(p, str)))
        for segment in claude.parse(body).segments
        if isinstance(segment, Snippet)
    ]
    assert found == expected


def test_lines_numbers_offsets_like_counting_newlines() -> None:
    text = "a\nbb\n\nccc\n"
    lines = Lines(text, first=3)
    for offset in range(len(text) + 1):
        assert lines.of(offset) == 3 + text.count("\n", 0, offset)
