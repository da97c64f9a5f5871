"""An item's priority, labels and parent, and its dependencies added and removed one at a time
(start.board.store, docs/board.md "Priority, labels and parents"); m006 from an m005 board."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from start.base.inputs import InputError
from start.board import NO_PARENT, BadRequestError, Change, Holder, NoSuchItemError
from start.board import file as boardfile
from start.board.rows import Filter
from start.board.store import Board
from tests.board.test_board import ALICE, BOB, _old_board, spec

AGENT = Holder("mcp:claude:4242", level="read-only")


@pytest.fixture
def opened(isolated: Path) -> Iterator[Board]:
    with boardfile.opened(str(isolated)) as found:
        yield found


def test_ready_items_and_claim_next_go_by_priority_then_age(opened: Board) -> None:
    for title, priority in (("low", 4), ("normal", 2), ("urgent", 0), ("normal too", 2)):
        opened.create(title, ALICE, priority=priority)
    ready, _ = opened.items(Filter(ready=True), by_priority=True)
    assert [(i.id, i.priority) for i in ready] == [
        ("item-3", 0), ("item-2", 2), ("item-4", 2), ("item-1", 4)
    ]  # fmt: skip
    taken = [opened.claim_next(BOB) for _ in range(4)]
    assert [item.id for item in taken if item is not None] == [
        "item-3", "item-2", "item-4", "item-1"
    ]  # fmt: skip
    assert opened.claim_next(BOB) is None


def test_the_runner_takes_the_highest_priority_runnable_item_first(opened: Board) -> None:
    opened.create("later", ALICE, run=spec(prompt="a"), priority=3)
    opened.create("by hand", ALICE, priority=0)
    opened.create("first", ALICE, run=spec(prompt="b"), priority=1)
    found = opened.claim_next(Holder("run:x"), runnable=True)
    assert found is not None and found.id == "item-3"


def test_priority_is_0_to_4_and_2_unless_given(opened: Board) -> None:
    assert opened.create("plain", ALICE).priority == 2
    with pytest.raises(InputError) as caught:
        opened.create("x", ALICE, priority=5)
    assert str(caught.value) == "5 is not a whole number from 0 to 4"
    changed = opened.update("1", BOB, Change(priority=0))
    assert changed.priority == 0
    assert opened.events("1")[-1].detail == {"priority": 0}


def test_labels_are_added_removed_and_filter_with_all_of_them(opened: Board) -> None:
    opened.create("a", ALICE, labels=["ui", "bug", "ui"])
    opened.create("b", ALICE, labels=["bug"])
    opened.create("c", ALICE)
    assert opened.get("1").labels == ("bug", "ui")
    both, _ = opened.items(Filter(labels=("bug", "ui")))
    bugs, _ = opened.items(Filter(labels=("bug",)))
    assert ([i.id for i in both], [i.id for i in bugs]) == (["item-1"], ["item-1", "item-2"])
    changed = opened.update("1", BOB, Change(add_labels=("p1",), remove_labels=("ui",)))
    assert changed.labels == ("bug", "p1")
    assert opened.events("1")[-1].detail == {"add_labels": ["p1"], "remove_labels": ["ui"]}
    taken = opened.claim_next(BOB, labels=("p1",))
    assert taken is not None and taken.id == "item-1"
    assert opened.claim_next(BOB, labels=("nothing",)) is None
    with pytest.raises(InputError) as caught:
        opened.create("x", ALICE, labels=["a,b"])
    assert str(caught.value) == (
        "'a,b' is not a label: a label is 1 to 50 characters, without spaces or commas"
    )
    with pytest.raises(BadRequestError) as many:
        opened.update("3", BOB, Change(add_labels=tuple(f"l{n}" for n in range(21))))
    assert str(many.value) == (
        "item-3 would have 21 labels, over the limit of 20; remove some (--unlabel NAME)"
    )
    assert opened.get("3").labels == ()


def test_an_epic_counts_its_completed_children_and_lists_them(opened: Board) -> None:
    opened.create("Epic", ALICE)
    for title in ("one", "two", "three", "mistake"):
        opened.create(title, ALICE, parent="1")
    opened.update("2", ALICE, Change("completed"))
    opened.archive(["5"], ALICE)  # an archived child that did not complete counts for nothing
    epic = opened.get("1")
    assert (epic.children, epic.children_done) == (3, 1)
    children, _ = opened.items(Filter(parent="item-1", archived=None))
    assert [(i.id, i.parent) for i in children] == [
        ("item-2", "item-1"), ("item-3", "item-1"), ("item-4", "item-1"), ("item-5", "item-1")
    ]  # fmt: skip
    # A finished item may be moved, as its metadata may: neither reaches a run.
    moved = opened.update("2", BOB, Change(parent=NO_PARENT))
    assert (moved.parent, opened.events("2")[-1].detail) == (None, {"no_parent": True})
    assert opened.update("2", BOB, Change(parent="1")).parent == "item-1"
    assert opened.events("2")[-1].detail == {"parent": "item-1"}


def test_a_parent_cannot_be_the_item_itself_or_under_it(opened: Board) -> None:
    opened.create("Epic", ALICE)
    opened.create("Story", ALICE, parent="1")
    opened.create("Task", ALICE, parent="item-2")
    with pytest.raises(BadRequestError) as loop:
        opened.update("1", ALICE, Change(parent="3"))
    assert str(loop.value) == (
        "item-1 cannot be part of item-3: item-3 is part of item-1 (item-1 > item-2 > item-3), "
        "and an item cannot be its own descendant"
    )
    with pytest.raises(BadRequestError) as itself:
        opened.update("1", ALICE, Change(parent="1"))
    assert str(itself.value) == "item-1 cannot be its own parent"
    with pytest.raises(NoSuchItemError) as missing:
        opened.create("x", ALICE, parent="9")
    assert str(missing.value) == (
        "--parent names item-9, which is not on the board ('start board' lists the items)"
    )
    assert opened.get("1").parent is None


def test_dependencies_are_added_and_removed_one_at_a_time(opened: Board) -> None:
    for title in ("a", "b", "c"):
        opened.create(title, ALICE)
    opened.create("d", ALICE, blocked_by=["1"])
    added = opened.update("4", BOB, Change(add_blocked_by=("3", "item-1", "2")))
    assert added.blocked_by == ("item-1", "item-3", "item-2")
    assert opened.events("4")[-1].detail == {"add_blocked_by": ["item-3", "item-1", "item-2"]}
    removed = opened.update("4", BOB, Change(remove_blocked_by=("1",)))
    assert removed.blocked_by == ("item-3", "item-2")
    with pytest.raises(BadRequestError) as absent:
        opened.update("4", BOB, Change(remove_blocked_by=("1",)))
    assert str(absent.value) == (
        "item-4 does not wait on item-1 (it waits on item-3, item-2): nothing to remove"
    )
    with pytest.raises(BadRequestError) as cycle:
        opened.update("3", BOB, Change(add_blocked_by=("4",)))
    assert str(cycle.value) == (
        "item-3 cannot wait on item-4: one of them waits on item-3, which would be a cycle that "
        "never ends"
    )
    # A dependency shapes a run: an agent's lowers the item's level, as --after does.
    lowered = opened.update("4", AGENT, Change(add_blocked_by=("1",)))
    assert (lowered.level, lowered.level_by) == ("read-only", AGENT.name)


def test_m006_gives_an_m005_board_priority_2_no_labels_and_no_parent(isolated: Path) -> None:
    connection = _old_board(isolated, 5)
    for title in ("Plan", "Build"):
        connection.execute(
            "INSERT INTO items (title, description, status, metadata, created_by, created, "
            "updated) VALUES (?, '', 'pending', '{}', 'alice', 't', 't')",
            (title,),
        )
    connection.close()
    with boardfile.opened(str(isolated)) as opened:
        found = [(i.id, i.priority, i.labels, i.parent, i.children) for i in opened.items()[0]]
        assert found == [("item-1", 2, (), None, 0), ("item-2", 2, (), None, 0)]
        names = opened.connection.execute("SELECT name FROM migrations ORDER BY name")
        assert "m006_structure" in [row[0] for row in names]
        indexes = {row[1] for row in opened.connection.execute("PRAGMA index_list(labels)")}
        assert "labels_name" in indexes
        opened.update("2", ALICE, Change(priority=0, add_labels=("x",), parent="1"))
        taken = opened.claim_next(ALICE)
        assert taken is not None and (taken.id, taken.labels, taken.parent) == (
            "item-2", ("x",), "item-1"
        )  # fmt: skip
