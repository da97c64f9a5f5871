"""Every command-file parser is linear on hostile text (issue 22): a 1 MiB command file that made a
regular expression backtrack, or a line count start again from the top at every match, took
minutes. Each case here took over a minute before; the time limit only catches a hang."""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.interop import claude, codex, gemini, opencode
from start.interop.common import Lines, UnusableError
from start.interop.model import Snippet

MIB = 1 << 20


@contextmanager
def limit(seconds: int) -> Iterator[None]:
    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"over {seconds} s: not linear")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _toml(text: str) -> Callable[[], object]:
    return lambda: gemini.parse_toml(text, "x.toml")


CASES: dict[str, Callable[[], object]] = {
    "claude: opening fences that never close": lambda: claude.parse("```!\n" * (MIB // 5)),
    "claude: many references": lambda: claude.parse("$ARGUMENTS\n" * (MIB // 11)),
    "claude: at-signs": lambda: claude.parse("@." * (MIB // 2)),
    "opencode: many references": lambda: opencode.parse("$1\n" * (MIB // 3)),
    "opencode: backticks": lambda: opencode.parse("!`" * (MIB // 2)),
    "codex: many references": lambda: codex.parse("$ARGUMENTS\n" * (MIB // 11)),
    "gemini: blank lines": _toml('prompt = "x"\n' + "\n" * MIB),
    "gemini: many keys": _toml('prompt = "x"\n' + "".join(f"k{i} = 1\n" for i in range(80_000))),
    "gemini: many args": _toml('prompt = """' + "{{args}}\n" * (MIB // 9) + '"""\n'),
    "qwen: many args": lambda: gemini.parse_markdown("$ARGUMENTS {{args}}\n" * (MIB // 20)),
}


@pytest.mark.parametrize("case", CASES)
def test_each_parser_is_linear_on_a_mebibyte_of_hostile_text(case: str) -> None:
    with limit(20), contextlib.suppress(UnusableError):  # refused is fine; hanging is not
        CASES[case]()


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
