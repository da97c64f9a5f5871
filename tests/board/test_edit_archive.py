"""Editing an item (its title and what it runs) under the board's rules, and archiving it: left
out of listings and claims, kept whole, and brought back (start.board.store, docs/board.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from start.board import BadRequestError, Change, Holder, RefusedError
from start.board import file as boardfile
from start.board.rows import Filter
from start.board.store import Board
from tests.board.test_board import ALICE, BOB, _old_board, spec

AGENT = Holder("mcp:claude:4242", level="read-only")


@pytest.fixture
def opened(isolated: Path) -> Iterator[Board]:
    with boardfile.opened(str(isolated)) as found:
        yield found


# --- editing --------------------------------------------------------------------------------


def test_the_title_and_the_run_change_and_the_history_says_so(opened: Board) -> None:
    opened.create("Plan", ALICE, run=spec(prompt="plan it", agent="a"))
    changed = opened.update(
        "1", BOB, Change(title="Plan the retry", run=spec(task="review", agent="b"))
    )
    assert (changed.title, changed.run, changed.level) == (
        "Plan the retry",
        spec(task="review", agent="b"),
        "full",
    )
    assert opened.events("1")[-1].detail == {
        "title": "Plan the retry",
        "run": {"agent": "b", "task": "review"},
    }
    with pytest.raises(BadRequestError) as caught:
        opened.update("1", BOB, Change(title="  "))
    assert str(caught.value) == "an item needs a title"


def test_a_held_item_is_edited_only_by_its_holder_at_its_epoch(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.claim("1", ALICE)
    with pytest.raises(RefusedError) as caught:
        opened.update("1", BOB, Change(title="mine now"))
    assert str(caught.value) == (
        "item-1 is held by alice: only its holder changes it (start board reassign item-1 NAME "
        "hands it over)"
    )
    with pytest.raises(RefusedError) as fenced:
        opened.update("1", ALICE, Change(run=spec(prompt="x")), epoch=0)
    assert str(fenced.value) == (
        "item-1 was reassigned since your claim (epoch 0; it is now at epoch 1): this write is "
        "fenced out; claim it again to act on it"
    )
    assert opened.update("1", ALICE, Change(title="Plan it", run=spec(prompt="x")), 1).title == (
        "Plan it"
    )


def test_an_agents_title_lowers_the_level_and_it_cannot_retitle_what_runs_above_it(
    opened: Board,
) -> None:
    """The title shapes a run (a task's heading, {answers}' headings): an agent's retitling
    of an item that runs nothing brings its level down to the agent's; of an item that runs
    at the user's level, it is refused."""
    opened.create("Notes", ALICE)
    retitled = opened.update("1", AGENT, Change(title="Notes, by an agent"))
    assert (retitled.level, retitled.level_by) == ("read-only", AGENT.name)
    opened.create("Fix", ALICE, run=spec(task="review", permissions="full"))
    with pytest.raises(RefusedError) as caught:
        opened.update("2", AGENT, Change(title="$(rm -rf ~)"))
    assert str(caught.value) == (
        "item-2 runs at up to 'full', and mcp:claude:4242 acts at 'read-only' "
        "(settings.mcp_permissions): it may not change an item that runs above its level. Make "
        "an item of your own, or ask the user"
    )
    assert opened.get("2").title == "Fix"
    # A person's edit never raises the level an agent brought down.
    assert opened.update("1", ALICE, Change(title="Notes")).level == "read-only"


def test_a_completed_item_keeps_its_title_and_run(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.update("1", ALICE, Change("completed"))
    with pytest.raises(RefusedError) as caught:
        opened.update("1", ALICE, Change(title="Other"))
    assert (
        str(caught.value)
        == "item-1 is completed: only its metadata, priority, labels and parent can change now"
    )


# --- archiving ------------------------------------------------------------------------------


def test_an_archived_item_is_left_out_of_listings_and_claims_and_kept_whole(
    opened: Board,
) -> None:
    opened.create("Old", ALICE)
    opened.create("New", ALICE)
    (archived,) = opened.archive(["item-1"], BOB)
    assert archived.archived is not None and archived.status == "pending"
    assert [item.id for item in opened.items()[0]] == ["item-2"]
    assert [item.id for item in opened.items(Filter(archived=None))[0]] == ["item-1", "item-2"]
    assert [item.id for item in opened.items(Filter(archived=True))[0]] == ["item-1"]
    assert [item.id for item in opened.items(Filter(ready=True))[0]] == ["item-2"]
    with pytest.raises(RefusedError) as caught:
        opened.claim("1", ALICE)
    assert str(caught.value) == (
        "item-1 is archived: an archived item cannot be taken (start board unarchive item-1 "
        "brings it back)"
    )
    with pytest.raises(RefusedError):
        opened.reassign("1", "carol", ALICE)
    assert opened.claim_next(ALICE) is not None  # item-2
    assert opened.claim_next(BOB) is None  # item-1 is archived, not ready
    assert opened.get("1").title == "Old"  # show still finds it
    assert [event.op for event in opened.events("1")] == ["create", "archive"]
    (back,) = opened.archive(["1"], BOB, archived=False)
    assert back.archived is None
    assert opened.claim("1", ALICE).status == "in_progress"
    assert [event.op for event in opened.events("1")][-2:] == ["unarchive", "claim"]


def test_archiving_is_all_or_none_and_refuses_an_item_in_progress(opened: Board) -> None:
    for title in ("a", "b", "c"):
        opened.create(title, ALICE)
    opened.claim("2", BOB)
    with pytest.raises(RefusedError) as caught:
        opened.archive(["1", "2", "3"], ALICE)
    assert str(caught.value) == (
        "item-2 is held by bob (in_progress): an item in progress cannot be archived; its "
        "holder finishes it or lets it go first (start board done item-2, or start board "
        "update item-2 --status pending)"
    )
    assert [item.id for item in opened.items()[0]] == ["item-1", "item-2", "item-3"]
    # Archiving an archived item again, or bringing back one that is not, changes nothing.
    opened.archive(["1", "1"], ALICE)
    opened.archive(["1"], ALICE)
    opened.archive(["3"], ALICE, archived=False)
    assert [event.op for event in opened.events("1")] == ["create", "archive"]
    assert [event.op for event in opened.events("3")] == ["create"]


def test_an_archived_dependency_satisfies_only_when_it_was_completed(opened: Board) -> None:
    opened.create("Done", ALICE)
    opened.update("1", ALICE, Change("completed", answer="the plan"))
    opened.create("Open", ALICE)
    opened.create("After both", ALICE, blocked_by=["1", "2"])
    opened.archive(["1", "2"], ALICE)
    assert opened.get("3").blocked == (
        "item-2 is archived (pending), and it blocks until it is unarchived and completed: "
        "start board unarchive item-2, or remove it from blocked_by",
    )
    assert [answer for _, answer in opened.answers(["1"])] == ["the plan"]


def test_m005_archives_nothing_of_an_earlier_board(isolated: Path) -> None:
    connection = _old_board(isolated, 4)
    connection.execute(
        "INSERT INTO items (title, description, status, metadata, created_by, created, updated)"
        " VALUES ('Plan', '', 'pending', '{}', 'alice', 't', 't')"
    )
    connection.close()
    with boardfile.opened(str(isolated)) as opened:
        assert opened.get("1").archived is None
        names = opened.connection.execute("SELECT name FROM migrations ORDER BY name")
        assert "m005_archive" in [row[0] for row in names]
        indexes = opened.connection.execute("PRAGMA index_list(items)").fetchall()
    assert "items_updated" in {row[1] for row in indexes}
