"""start.ui.plain's table is the table display.print_table prints off a terminal (rich's layout),
without loading rich: `start find` piped to a script reads the same as on a page."""

from __future__ import annotations

import pytest

from start.ui import display, plain

HEADERS = ("name", "score", "why", "description")
ROWS = [
    ["git-diff-review", "1.00", "name: review, diff", "Review the staged git diff"],
    ["gate", "0.50", "description: review, diff", "Review the staged diff: a verdict " * 3],
    ["wide", "0.10", "", "日本語のテキストです" * 4],
    ["e\u0301", "0.10", "name: e\u0301", "a\tb"],
]


@pytest.mark.parametrize("columns", ["50", "80", "200"])
def test_plain_table_is_rich_tables_layout(
    columns: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    display.print_table(HEADERS, ROWS, cut=(2, 3))
    expected = capsys.readouterr().out
    plain.table(HEADERS, ROWS, cut=(2, 3))
    assert capsys.readouterr().out == expected
