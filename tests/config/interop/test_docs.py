"""docs/interop.md says what the code does: its examples validate and run as shown."""

from __future__ import annotations

import re
from pathlib import Path

from start.config.interop import claude, gemini
from start.config.interop.model import Snippet
from start.config.load import load
from tests.conftest import REPO, write_tree

PAGE = (REPO / "docs" / "interop.md").read_text(encoding="utf-8")


def test_the_toml_examples_validate(isolated: Path) -> None:
    blocks = re.findall(r"```toml\n(.*?)```", PAGE, re.S)
    assert len(blocks) == 2
    for block in blocks:
        write_tree(isolated.parent / "home/.config/start", {"config.toml": block})
        assert [str(p) for p in load().problems] == []


def test_the_rewritten_commands_are_the_ones_shown() -> None:
    shown = dict(re.findall(r"^(\S.*?)\s{2,}runs\s{3}(.*)$", PAGE, re.M))
    parsed = claude.parse("!`git log --grep='$ARGUMENTS' -5`\n").segments[0]
    assert isinstance(parsed, Snippet)
    assert shown["!`git log --grep='$ARGUMENTS' -5`"] == parsed.command
    parsed = gemini.parse_toml('prompt = "!{grep -rn {{args}} src}"', "x.toml").segments[0]
    assert isinstance(parsed, Snippet)
    assert shown["!{grep -rn {{args}} src}"] == parsed.command


def test_every_decision_of_the_specification_is_listed() -> None:
    """The format specification's section 9 asks these questions; the page answers each."""
    asked = [
        *(f"D-C{n}" for n in range(1, 9)),
        *(f"D-G{n}" for n in range(1, 8)),
        "D-Q1",
        *(f"D-X{n}" for n in range(1, 5)),
        *(f"D-O{n}" for n in range(1, 5)),
        "D-N1",
        *(f"D-S{n}" for n in range(1, 4)),
    ]
    answered = re.findall(r"^- \*\*(D-[A-Z]\d)\*\*", PAGE, re.M)
    assert answered == asked
