"""A listing a page at a time (start.board.store.Board.items, `after`): each page goes on after
the key of the last item of the one before (start.board.rows.key), by number or by priority,
and counts every item that matches, not only those after the key. The tool that hands out
cursors for it: tests/mcp/test_board_agents.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from start.board import Holder, rows
from start.board import file as boardfile
from start.board.rows import Filter
from start.board.store import Board

ALICE = Holder("alice")


@pytest.fixture
def opened(isolated: Path) -> Iterator[Board]:
    with boardfile.opened(str(isolated)) as found:
        yield found


def test_a_page_goes_on_after_the_key_and_counts_every_match(opened: Board) -> None:
    for n in range(1, 8):
        opened.create(f"item {n}", ALICE, priority=n % 3)
    first, total = opened.items(limit=3)
    after = rows.key(first[-1], False)
    opened.create("made since", ALICE, priority=0)
    rest, rest_total = opened.items(limit=10, after=after)
    assert (after, [item.id for item in first], total) == ((3,), ["item-1", "item-2", "item-3"], 7)
    assert ([item.id for item in rest], rest_total) == (
        ["item-4", "item-5", "item-6", "item-7", "item-8"],
        8,
    )


def test_by_priority_a_page_goes_on_after_its_priority_and_number(opened: Board) -> None:
    for n in range(1, 8):
        opened.create(f"item {n}", ALICE, priority=n % 3)
    first, _ = opened.items(Filter(ready=True), 3, by_priority=True)
    after = rows.key(first[-1], True)
    rest, total = opened.items(Filter(ready=True), None, by_priority=True, after=after)
    assert ([item.id for item in first], after) == (["item-3", "item-6", "item-1"], (1, 1))
    assert ([item.id for item in rest], total) == (["item-4", "item-7", "item-2", "item-5"], 7)
