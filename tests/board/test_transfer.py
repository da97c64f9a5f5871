"""Export and import in the core (start.board.transfer, Board.bring): any text an item holds
comes back from an export byte for byte, and a dry run or a refused file leaves the board as it
was."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from start.board import Holder, transfer
from start.board import file as boardfile
from start.board.rows import Filter
from start.board.store import Board

ME = Holder("me")
_COUNT = itertools.count()


def _export(board: Board) -> list[dict[str, Any]]:
    found, _ = board.items(Filter(archived=None))
    return [
        json.loads(transfer.line(transfer.exported(i, board.comments(i.id), board.events(i.id))))
        for i in found
    ]


def _imported(board: Board, items: list[dict[str, Any]], *, dry_run: bool = False) -> list[str]:
    text = "".join(transfer.line(each) for each in [transfer.header(), *items])
    found = transfer.read_start(io.BytesIO(text.encode("ascii")), "f")
    return board.bring(transfer.resolved(found, board_ids=False), ME, "start", dry_run=dry_run)


# Text as a command line or a file may bring it: any character, a byte that was not UTF-8 as
# its surrogate escape (U+DC80..U+DCFF) among them.
TEXT = st.text(st.characters(exclude_categories=["Cs"]) | st.sampled_from("\udc80\udcff"))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(title=TEXT.filter(lambda t: t.strip() and len(t) <= 1000), description=TEXT, comment=TEXT)
def test_any_text_comes_back_from_an_export_byte_for_byte(
    isolated: Path, title: str, description: str, comment: str
) -> None:
    source, target = (isolated / f"{name}{next(_COUNT)}" for name in ("a", "b"))
    source.mkdir()
    target.mkdir()
    with boardfile.opened(str(source)) as board:
        board.create(title, ME, description)
        if comment:
            board.comment("item-1", ME, comment)
        before = _export(board)
    with boardfile.opened(str(target)) as board:
        assert _imported(board, before) == ["item-1"]
        (after,) = _export(board)
    assert (after["title"], after["description"]) == (title, description)
    assert [c["text"] for c in after["comments"]] == ([comment] if comment else [])


def test_a_dry_run_and_a_refused_file_leave_the_board_as_it_was(isolated: Path) -> None:
    with boardfile.opened(str(isolated)) as board:
        board.create("kept", ME)
        items: list[dict[str, Any]] = [
            {"id": "a", "title": "A"},
            {"id": "b", "title": "B", "blocked_by": ["a"]},
        ]
        assert _imported(board, items, dry_run=True) == ["item-2", "item-3"]
        assert [i["title"] for i in _export(board)] == ["kept"]
        # A reference the store refuses (an item that is not on the board) undoes every write.
        records = transfer.resolved(
            [(transfer.Fields({"key": "x", "title": "X"}, "f:1"),
              {"key": "x", "title": "X", "blocked_by": ["item-99"], "parent": None})],
            board_ids=True,
        )  # fmt: skip
        with pytest.raises(Exception, match="item-99, which is not on the board"):
            board.bring(records, ME, transfer.PLAN)
        assert [i["title"] for i in _export(board)] == ["kept"]
        assert _imported(board, items) == ["item-2", "item-3"]
