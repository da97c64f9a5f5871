"""Comments on an item (start.board.store, docs/board.md "Comments"): appended with their
author and time, read oldest first, kept byte for byte; m007 gives an m006 board none."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from start.base.inputs import InputError
from start.board import NoSuchItemError
from start.board import file as boardfile
from start.board.store import Board
from tests.board.test_board import ALICE, BOB, _old_board


@pytest.fixture
def opened(isolated: Path) -> Iterator[Board]:
    with boardfile.opened(str(isolated)) as found:
        yield found


def test_comments_are_appended_with_author_and_read_oldest_first(opened: Board) -> None:
    item = opened.create("Plan", ALICE)
    first = opened.comment(item.id, ALICE, "first")
    opened.comment("1", BOB, "a byte that is not UTF-8: \udcff")
    found = opened.comments(item.id)
    assert [(c.author, c.text) for c in found] == [
        ("alice", "first"), ("bob", "a byte that is not UTF-8: \udcff")
    ]  # fmt: skip
    assert found[0] == first
    assert opened.get(item.id).updated == found[1].at


def test_a_comment_needs_text_and_an_item_that_is_there(opened: Board) -> None:
    item = opened.create("Plan", ALICE)
    with pytest.raises(InputError, match=r"^empty; give at least one character$"):
        opened.comment(item.id, ALICE, "")
    with pytest.raises(NoSuchItemError, match=r"^no item item-7 on the board of "):
        opened.comment("item-7", ALICE, "x")
    with pytest.raises(NoSuchItemError):
        opened.comments("7")
    assert opened.comments(item.id) == []


def test_m007_gives_an_m006_board_an_empty_comments_table(isolated: Path) -> None:
    connection = _old_board(isolated, 6)
    connection.execute(
        "INSERT INTO items (title, description, status, metadata, created_by, created, updated) "
        "VALUES ('Plan', '', 'pending', '{}', 'alice', 't', 't')"
    )
    connection.close()
    with boardfile.opened(str(isolated)) as opened:
        assert opened.comments("1") == []
        names = [row[0] for row in opened.connection.execute("SELECT name FROM migrations")]
        assert "m007_comments" in names
        opened.comment("1", ALICE, "kept")
        assert [c.text for c in opened.comments("1")] == ["kept"]
