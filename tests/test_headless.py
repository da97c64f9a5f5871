"""start.headless beyond the envelope readers (tests/test_envelopes.py has those)."""

from __future__ import annotations

from start.headless import tail


def test_tail_keeps_the_last_non_empty_lines() -> None:
    assert tail("a\n\nb\nc\n", 2) == "b\nc"
