"""The store's side of the log (start.board.journal): with sync off a board writes no operation;
with sync on every change writes its operation in the transaction of its rows, a refused one
none; and the board rebuilt from the operations (replay) is the same board whatever order they
arrived in, down to `start board export`'s every byte."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from start.base import sqlite
from start.board import Change, Holder, RefusedError, ids, journal
from start.board import file as boardfile
from start.board.oplog import decode
from start.board.replay import Entry
from start.board.store import Board
from tests.board.test_replay import logs
from tests.conftest import run_start

ANN = Holder("ann")
BOB = Holder("bob")


def project(root: Path, name: str) -> Path:
    made = root / name
    made.mkdir()
    subprocess.run(["git", "init", "-q", str(made)], check=True)
    return made


def kinds(opened: Board) -> list[str]:
    found = opened.connection.execute("SELECT bytes FROM ops ORDER BY rowid").fetchall()
    return [decode(bytes(raw), "test").kind for (raw,) in found]


def turned_on(opened: Board) -> journal.Sync:
    with sqlite.writing(opened.connection) as connection:
        return journal.turn_on(connection)


def test_a_board_without_sync_writes_no_operation(isolated: Path) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("Plan", ANN)
        opened.claim("item-1", ANN)
        opened.update("item-1", ANN, Change("completed", answer="done"))
        opened.comment("item-1", BOB, "thanks")
        opened.archive(["item-1"], ANN)
        assert kinds(opened) == []
        assert journal.state(opened.connection) is None


def test_with_sync_on_each_change_writes_its_operation_with_its_rows_and_a_refused_one_none(
    isolated: Path,
) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("Made before sync", ANN)
        opened.claim("item-1", ANN)
        opened.comment("item-1", BOB, "before")
        sync = turned_on(opened)
        # Turning sync on writes what was there: the create, the claim, the comment.
        assert kinds(opened) == ["create", "claim", "comment"]
        assert opened.get("item-1").epoch == 1
        # Its history is its own, not doubled by the operations that sum it up, rebuilt or not.
        assert [e.op for e in opened.events("item-1")] == ["create", "claim"]
        with sqlite.writing(opened.connection) as connection:
            journal.rebuild(connection)
        assert [e.op for e in opened.events("item-1")] == ["create", "claim"]
        assert [c.text for c in opened.comments("item-1")] == ["before"]
        opened.create("Review", BOB, labels=["x"], blocked_by=["item-1"])
        with pytest.raises(RefusedError):
            opened.claim("item-1", BOB)  # ann holds it: no operation
        opened.update("item-1", ANN, Change("completed", answer="done", metadata={"k": 1}))
        opened.claim("item-2", BOB)
        opened.reassign("item-2", "cat", ANN)
        opened.update("item-2", Holder("cat"), Change("pending"))
        opened.comment("item-2", ANN, "why?")
        opened.archive(["item-2"], ANN)
        opened.archive(["item-2"], ANN, archived=False)
        assert kinds(opened)[3:] == [
            "create", "update", "finish", "claim", "reassign", "release", "comment", "archive",
            "unarchive",
        ]  # fmt: skip
        names = [n for (n,) in opened.connection.execute("SELECT name FROM ops ORDER BY rowid")]
        assert names == [f"{sync.origin}/{n}" for n in range(1, 13)]
        # The item's epoch is replay's: one more a transition.
        assert (opened.get("item-1").epoch, opened.get("item-2").epoch) == (2, 5)


def test_with_sync_on_the_watchdogs_release_and_an_import_write_their_operations(
    isolated: Path,
) -> None:
    from tests.board.test_board import exited

    with boardfile.opened(str(isolated)) as opened:
        turned_on(opened)
        opened.create("Plan", ANN)
        for _ in range(3):  # MOST_RELEASES: the third release fails it
            opened.claim("item-1", exited())
            opened.sweep()
        assert kinds(opened) == ["create", *(["claim", "release"] * 3), "finish"]
        item = opened.get("item-1")
        made = _comparable(opened)
        with sqlite.writing(opened.connection) as connection:
            assert journal.rebuild(connection).lost == ()
        assert _comparable(opened) == made
        assert (item.status, item.releases, item.epoch) == ("failed", 3, 7)
    plan = isolated / "plan.jsonl"
    plan.write_text(
        '{"key": "one", "title": "One", "labels": ["a"]}\n{"title": "Two", "after": ["one"]}\n'
    )
    done = run_start("-d", str(isolated), "board", "add", "--file", str(plan), "--as", "ann")
    assert done.returncode == 0, done.stderr
    with boardfile.opened(str(isolated)) as opened:
        assert kinds(opened)[8:] == ["create", "create"]
        made = _comparable(opened)
        with sqlite.writing(opened.connection) as connection:
            assert journal.rebuild(connection).lost == ()
        assert _comparable(opened) == made
        assert opened.get("item-3").blocked_by == ("item-2",)


def _comparable(opened: Board) -> list[dict[str, Any]]:
    """Each item as export writes it, without the times (the store's clock and the log's are
    read a moment apart)."""
    from start.board import transfer
    from start.board.rows import Filter

    found, _ = opened.items(Filter(archived=None))
    kept = []
    for item in found:
        line = transfer.exported(item, opened.comments(item.id), opened.events(item.id))
        for name in ("created", "updated", "archived"):
            line[name] = bool(line[name])
        line["comments"] = [c | {"at": ""} for c in line["comments"]]
        line["events"] = [e | {"at": ""} for e in line["events"]]
        kept.append(line)
    return kept


def test_the_board_rebuilt_from_its_own_log_is_the_board_as_the_store_made_it(
    isolated: Path,
) -> None:
    with boardfile.opened(str(isolated)) as opened:
        turned_on(opened)
        opened.create("Plan", ANN, metadata={"a": {"b": 1}}, labels=["x", "y"])
        opened.create("Build", ANN, blocked_by=["item-1"], parent="item-1", priority=1)
        opened.claim("item-1", BOB)
        opened.update("item-1", BOB, Change(metadata={"a": {"c": 2}}, remove_labels=("x",)))
        opened.update("item-1", BOB, Change("completed", answer="planned"))
        opened.comment("item-2", ANN, "go")
        opened.update("item-2", ANN, Change(title="Build it", add_labels=("z",)))
        opened.claim("item-2", ANN)
        opened.update("item-2", ANN, Change("failed", reason="no"))
        opened.update("item-2", ANN, Change("pending"))
        opened.archive(["item-2"], ANN)
        made = _comparable(opened)
        with sqlite.writing(opened.connection) as connection:
            replayed = journal.rebuild(connection)
        assert replayed.lost == ()
        assert _comparable(opened) == made


def _export(root: Path) -> str:
    done = run_start("-d", str(root), "board", "export")
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout


def test_two_boards_given_the_same_operations_in_other_orders_export_the_same_bytes(
    tmp_path: Path,
) -> None:
    # Two machines write a log: ann's makes items, bob's (having ann's create) claims one, and
    # ann claims it too; ann's claim is pushed first, so it wins everywhere.
    ann, bob = project(tmp_path, "ann"), project(tmp_path, "bob")
    with boardfile.opened(str(ann)) as a, boardfile.opened(str(bob)) as b:
        anns = turned_on(a).origin  # on bob's board ann's items are item-ORIGIN.N
        bobs = turned_on(b).origin
        a.create("Plan", ANN, labels=["x"], metadata={"owner": "ann"})
        a.create("Build", ANN, blocked_by=["item-1"])
        a.comment("item-1", ANN, "first")
        with sqlite.writing(b.connection) as connection:
            journal.take(connection, _entries(a, {}), "t")
            journal.rebuild(connection)
        b.claim(f"item-{anns}.1", BOB)
        b.comment(f"item-{anns}.1", BOB, "mine?")
        a.claim("item-1", ANN)
        a.update("item-1", ANN, Change("completed", answer="done"))
        b.create("Ship", BOB, blocked_by=[f"item-{anns}.2"])
        order = [*_names(a), *_names(b)]
        claims = {n: p for p, n in enumerate(order, 1)}
        log = _entries(a, claims) + _entries(b, claims)
    # Two other machines take that log: one at once, one in pieces in another order.
    one, two = project(tmp_path, "one"), project(tmp_path, "two")
    with boardfile.opened(str(one)) as first, boardfile.opened(str(two)) as second:
        ones = turned_on(first).origin
        turned_on(second)
        with sqlite.writing(first.connection) as connection:
            journal.take(connection, log, "t")
            journal.rebuild(connection)
        for piece in (log[5:], log[2:5][::-1], log[:2]):
            with sqlite.writing(second.connection) as connection:
                journal.take(connection, piece, "t")
                journal.rebuild(connection)
        held = first.get(f"item-{anns}.1")
    assert (held.status, held.assignee) == ("completed", "ann")
    exported = _export(one)
    assert exported == _export(two)
    lines = [json.loads(line) for line in exported.splitlines()[1:]]
    # Neither machine made them: each is shown by its origin's shortest prefix (4 characters,
    # unless two of the three origins share 4).
    short = ids.prefix_lengths({anns, bobs, ones})
    of_ann, of_bob = anns[: short[anns]], bobs[: short[bobs]]
    assert [(each["id"], each["title"], each["status"]) for each in lines] == [
        (f"item-{of_ann}.1", "Plan", "completed"),
        (f"item-{of_ann}.2", "Build", "pending"),
        (f"item-{of_bob}.1", "Ship", "pending"),
    ]
    assert [c["text"] for c in lines[0]["comments"]] == ["first", "mine?"]
    assert lines[2]["blocked_by"] == [f"item-{of_ann}.2"]


def _names(opened: Board) -> list[str]:
    return [n for (n,) in opened.connection.execute("SELECT name FROM ops ORDER BY rowid")]


def _entries(opened: Board, positions: dict[str, int]) -> list[Entry]:
    found = opened.connection.execute("SELECT name, bytes FROM ops ORDER BY rowid").fetchall()
    return [Entry(decode(bytes(raw), name), positions.get(name)) for name, raw in found]


def test_an_items_number_stays_once_pushed_when_an_item_made_before_it_arrives_later(
    tmp_path: Path,
) -> None:
    early, late, here = (project(tmp_path, name) for name in ("early", "late", "here"))
    with (
        boardfile.opened(str(early)) as a,
        boardfile.opened(str(late)) as b,
        boardfile.opened(str(here)) as c,
    ):
        for each in (a, b, c):
            turned_on(each)
        a.create("Made first, pushed second", ANN)  # an earlier clock
        b.create("Made second, pushed first", BOB)
        pushed_first = _entries(b, {_names(b)[0]: 1})
        pushed_second = _entries(a, {_names(a)[0]: 2})
        for log in (pushed_first, pushed_second):
            with sqlite.writing(c.connection) as connection:
                journal.take(connection, log, "t")
                journal.rebuild(connection)
            assert c.items()[0][0].title == "Made second, pushed first"
        # Listed in the order of their rows (their ids, with sync on, are their keys).
        assert [each.title for each in c.items()[0]] == [
            "Made second, pushed first",
            "Made first, pushed second",
        ]


def test_with_sync_on_text_the_log_cannot_carry_is_refused_and_nothing_is_written(
    isolated: Path,
) -> None:
    from start.board.oplog import OperationError

    with boardfile.opened(str(isolated)) as opened:
        sync = turned_on(opened)
        with pytest.raises(OperationError) as caught:
            opened.create("bytes \udcff not UTF-8", ANN)
        assert str(caught.value) == (
            f"operation {sync.origin}/1: its text holds bytes that are not UTF-8 (or a number "
            "not finite), which the log across machines cannot carry; write it as UTF-8 text"
        )
        assert (opened.items()[1], kinds(opened)) == (0, [])


def _rows(opened: Board) -> list[tuple[Any, ...]]:
    """The rows of every item as the board keeps them, its times and local parts aside."""
    found = opened.connection.execute(
        "SELECT i.seq, k.key, k.made, i.title, i.description, i.status, i.assignee, i.parent, "
        "i.metadata, i.run, i.answer, i.reason, i.epoch, i.releases, i.level, i.level_by, "
        "i.answer_level, i.archived IS NULL, i.priority, "
        "(SELECT group_concat(d.blocked_by || ':' || d.position) FROM deps d WHERE d.item = i.seq), "
        "(SELECT group_concat(l.name) FROM labels l WHERE l.item = i.seq) "
        "FROM items i JOIN keys k ON k.seq = i.seq ORDER BY i.seq"
    )
    return [tuple(row) for row in found.fetchall()]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(log=logs(), cuts=st.lists(st.integers(0, 30), max_size=3), late=st.integers(0, 30))
def test_a_rebuild_of_the_items_a_sync_touched_is_the_rebuild_of_every_item(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    log: list[Entry],
    cuts: list[int],
    late: int,
) -> None:
    """A board that takes a log in pieces, replaying at each only the items the piece touched
    (and what hangs on them), is the board that takes it at once and replays every item; some
    operations arrive before their place on the remote is known, as this machine's own do."""
    monkeypatch.setattr(journal, "_MOST_IN_PART", 0)  # in part, however many are touched
    root = tmp_path_factory.mktemp("boards")
    one, two = project(root, "one"), project(root, "two")
    unplaced = log[:late]
    with boardfile.opened(str(one)) as first, boardfile.opened(str(two)) as second:
        turned_on(first)
        turned_on(second)
        with sqlite.writing(first.connection) as connection:
            journal.take(connection, log, "t")
            everything = journal.rebuild(connection)
        edges = sorted({0, *(min(cut, len(log)) for cut in cuts), len(log)})
        pieces = [log[start:end] for start, end in itertools.pairwise(edges)]
        for piece in [*pieces, []]:
            placed = {e.op.name: e.position for e in unplaced if e.position is not None}
            if not piece:  # at last the places of those that came unplaced
                unplaced, placed_now = [], placed
            else:
                placed_now = {}
            taken = [e._replace(position=None) if e in unplaced else e for e in piece]
            with sqlite.writing(second.connection) as connection:
                touched = journal.take(connection, taken, "t", placed_now)
                journal.rebuild(connection, touched=touched)
        assert _rows(second) == _rows(first)
        assert _comparable(second) == _comparable(first)
        assert len(everything.items) == len(_rows(first))


def test_a_rebuild_replays_only_the_touched_items_and_those_that_hang_on_them(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "_MOST_IN_PART", 0)
    with boardfile.opened(str(isolated)) as opened:
        sync = turned_on(opened)
        for n in range(1, 7):
            opened.create(f"Item {n}", ANN)
        opened.update("item-3", ANN, Change(add_blocked_by=("item-2",)))
        opened.create("Part of 3", ANN, parent="item-3")
        with sqlite.writing(opened.connection) as connection:
            journal.rebuild(connection, touched=journal.take(connection, [], "t"))
            nothing = journal.rebuild(connection, touched=set())
            assert nothing.items == {}
            part = journal.rebuild(connection, touched={f"{sync.origin}.2"})
        # item-2, item-3 that waits on it, and item-7 that is part of item-3.
        assert sorted(part.items) == [f"{sync.origin}.{n}" for n in (2, 3, 7)]
        made = _comparable(opened)
        with sqlite.writing(opened.connection) as connection:
            journal.rebuild(connection)
        assert _comparable(opened) == made


@pytest.mark.parametrize("place", [1, 3])
def test_a_dependency_or_parent_that_has_not_arrived_is_left_out_of_the_rows_until_it_does(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, place: int
) -> None:
    """Pushed before the item that names it (place 1), the dependency takes the first number,
    and every item is replayed; pushed after it (3), the item that names it is replayed with it
    (and only they)."""
    monkeypatch.setattr(journal, "_MOST_IN_PART", 0)
    from start.board.oplog import Clock, Op

    other = "bbbbbbbbbbbb"
    theirs = Op(other, 1, Clock(1), "bob", "full", "create", f"{other}.1", 0, {"title": "Theirs"})
    mine = Op(other, 2, Clock(2), "bob", "full", "create", f"{other}.2", 0,
              {"title": "Waits", "blocked_by": [f"{other}.1"], "parent": f"{other}.1"})  # fmt: skip
    with boardfile.opened(str(isolated)) as opened:
        turned_on(opened)
        with sqlite.writing(opened.connection) as connection:
            journal.rebuild(connection, touched=journal.take(connection, [Entry(mine, 2)], "t"))
        first = opened.get("item-bbbb.2")  # another origin's item, as the board shows it
        assert (first.title, first.blocked_by, first.parent) == ("Waits", (), None)
        with sqlite.writing(opened.connection) as connection:
            touched = journal.take(connection, [Entry(theirs, place)], "t")
            assert touched == {f"{other}.1"}
            made = journal.rebuild(connection, touched=touched)
        assert len(made.items) == 2
        found = opened.get("item-bbbb.2")
        assert (found.title, found.blocked_by, found.parent) == (
            "Waits", ("item-bbbb.1",), "item-bbbb.1"
        )  # fmt: skip


def test_turning_sync_on_with_an_item_whose_text_the_log_cannot_carry_names_it(
    isolated: Path,
) -> None:
    from start.board.oplog import OperationError

    with boardfile.opened(str(isolated)) as opened:
        opened.create("Fine", ANN)
        opened.create("bytes \udcff not UTF-8", ANN)  # kept as it is while sync is off
        with pytest.raises(OperationError) as caught:
            turned_on(opened)
        said = str(caught.value)
        assert said.startswith(
            "item-2 cannot be written to the log across machines, so sync is not turned on: "
            "operation "
        )
        assert said.endswith(
            ": its text holds bytes that are not UTF-8 (or a number not finite), which the log "
            "across machines cannot carry; write it as UTF-8 text (start board update item-2 "
            "--title/--description sets its text again); nothing was written"
        )
        assert (journal.state(opened.connection), kinds(opened)) == (None, [])
        opened.update("item-2", ANN, Change(title="now UTF-8"))
        assert turned_on(opened).items == 2
