"""Ids across machines (start.board.ids, start.base.inputs.item_ref): with sync off an id is a
row's number as ever; with sync on `item-N` names this machine's N-th item (an item made before
sync keeps its id), `item-PREFIX.N` another origin's by the shortest prefix no other origin on
the board shares (at least 4 characters), a prefix two origins share is refused naming both full
ids, and every output shows the short form."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from start.base import inputs, sqlite
from start.base.errors import ExitCode
from start.board import Change, Holder, NoSuchItemError, ids, journal
from start.board import file as boardfile
from start.board.oplog import decode
from start.board.replay import Entry
from start.board.store import Board

ANN = Holder("ann")
BOB = Holder("bob")


def project(root: Path, name: str) -> Path:
    made = root / name
    made.mkdir()
    subprocess.run(["git", "init", "-q", str(made)], check=True)
    return made


def synced(opened: Board, origin: str | None = None) -> str:
    """Turn sync on for `opened`, its origin `origin` when given (an empty board: no operation
    names it yet); the origin."""
    with sqlite.writing(opened.connection) as connection:
        made = journal.turn_on(connection)
        if origin is not None:
            connection.execute("UPDATE sync SET origin = ? WHERE one = 1", (origin,))
    return origin or made.origin


def brought(into: Board, *others: Board) -> None:
    """Give `into` every operation of `others` (as a sync would), and rebuild it."""
    for other in others:
        found = other.connection.execute("SELECT name, bytes FROM ops ORDER BY rowid").fetchall()
        entries = [Entry(decode(bytes(raw), name), None) for name, raw in found]
        with sqlite.writing(into.connection) as connection:
            journal.take(connection, entries, "t")
            journal.rebuild(connection)


# --- the rule of every door ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "read"),
    [
        ("3", (None, 3)),
        ("item-3", (None, 3)),
        ("item-k3f9.12", ("k3f9", 12)),
        ("item-k3f9m2x7q1ab.12", ("k3f9m2x7q1ab", 12)),
        (f"item-0123456789ab.{'9' * 18}", ("0123456789ab", 10**18 - 1)),
    ],
)
def test_an_id_reads_as_its_prefix_and_number(given: str, read: tuple[str | None, int]) -> None:
    assert inputs.item_ref(given) == read
    assert re.fullmatch(inputs.ITEM_ID_PATTERN, given)


@pytest.mark.parametrize(
    "given",
    [
        "item-k3f.1",  # a prefix shorter than 4: too many origins would share it
        "item-k3f9m2x7q1abc.1",  # longer than an origin
        "item-" + "k" * 10_000 + ".1",  # huge
        "item-k3fi.1",  # i, l, o, u are no characters of an origin
        "item-k3f9.0",
        "item-k3f9." + "9" * 19,  # above what SQLite keeps
        "item-k3f9." + "9" * 10_000,
        "ITEM-3",  # ids are lowercase: not folded
        "item-K3F9.12",
        "k3f9.12",  # a prefix only after item-
        "item-k3f9.",
        "item-.12",
        "item-k3f9.12\n",
        "item-k3f9 .12",
    ],
)
def test_an_id_outside_the_rule_is_refused_alike_by_the_rule_and_the_schema(given: str) -> None:
    with pytest.raises(inputs.InputError) as caught:
        inputs.item_ref(given)
    assert str(caught.value) == inputs.not_an_item_id(given)
    assert caught.value.exit_code == ExitCode.USAGE
    # The MCP door's schema states the same rule (JSON Schema's pattern: search, anchored; in
    # Python `$` also matches before a last newline, which the rule behind it then refuses).
    assert re.search(inputs.ITEM_ID_PATTERN, given.removesuffix("\n")) is None or given.endswith(
        "\n"
    )


def test_the_message_says_both_forms() -> None:
    assert inputs.not_an_item_id("ITEM-3") == (
        "'ITEM-3' is not an item id: ids read item-N (or N), and item-PREFIX.N for another "
        "machine's item (as the board shows it), N a number of 1 to 18 digits that does not "
        "start with 0"
    )


def test_the_shortest_unique_prefix_is_at_least_four_and_grows_with_a_neighbour() -> None:
    assert ids.prefix_lengths({"k3f9aaaaaaaa"}) == {"k3f9aaaaaaaa": 4}
    assert ids.prefix_lengths({"k3f9aaaaaaaa", "zzzzzzzzzzzz"}) == {
        "k3f9aaaaaaaa": 4,
        "zzzzzzzzzzzz": 4,
    }
    assert ids.prefix_lengths({"k3f9aaaaaaaa", "k3f9abaaaaaa", "k3000000000a"}) == {
        "k3f9aaaaaaaa": 6,
        "k3f9abaaaaaa": 6,
        "k3000000000a": 4,
    }


# --- on a board ------------------------------------------------------------------------------

A, B, C = "k3f9aaaaaaaa", "k3f9bbbbbbbb", "zzzzcccccccc"


def test_with_sync_off_ids_are_row_numbers_and_a_prefix_names_nothing(isolated: Path) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("One", ANN)
        assert opened.get("1").id == opened.get("item-1").id == "item-1"
        with pytest.raises(NoSuchItemError) as caught:
            opened.get("item-k3f9.1")
        assert str(caught.value) == (
            f"no item item-k3f9.1 on the board of {opened.root} (ids go from item-1 to item-1; "
            "'start board' lists them)"
        )


def test_an_item_made_before_sync_keeps_its_id_and_new_ones_follow(isolated: Path) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("One", ANN)
        opened.create("Two", ANN, blocked_by=["item-1"])
        synced(opened)
        opened.create("Three", ANN, parent="2")
        assert [(i.id, i.title, i.blocked_by, i.parent) for i in opened.items()[0]] == [
            ("item-1", "One", (), None),
            ("item-2", "Two", ("item-1",), None),
            ("item-3", "Three", (), "item-2"),
        ]
        assert opened.get("2").title == "Two"
        assert opened.key("item-3") == f"{opened.sync().origin}.3"  # type: ignore[union-attr]


def test_another_origins_item_is_named_by_its_shortest_prefix_and_taken_by_it(
    tmp_path: Path,
) -> None:
    with (
        boardfile.opened(str(project(tmp_path, "a"))) as a,
        boardfile.opened(str(project(tmp_path, "c"))) as c,
    ):
        synced(a, A)
        synced(c, C)
        a.create("A's", ANN)
        c.create("C's", BOB)
        c.create("C waits", BOB, blocked_by=["item-1"])
        brought(a, c)
        assert [(i.id, i.title, i.blocked_by) for i in a.items()[0]] == [
            ("item-1", "A's", ()),
            ("item-zzzz.1", "C's", ()),
            ("item-zzzz.2", "C waits", ("item-zzzz.1",)),
        ]
        # Its history names items as the board shows them, not by the keys operations carry.
        (made,) = a.events("item-zzzz.2")
        assert made.detail == {"blocked_by": ["item-zzzz.1"], "title": "C waits"}
        for given in ("item-zzzz.1", "item-zzzzc.1", f"item-{C}.1"):
            assert a.get(given).title == "C's"
        a.claim("item-zzzz.1", ANN)
        a.comment(f"item-{C}.1", ANN, "on it")
        done = a.update("item-zzzzcc.1", ANN, Change("completed", answer="done"))
        assert (done.id, done.status) == ("item-zzzz.1", "completed")
        assert [each.text for each in a.comments("item-zzzz.1")] == ["on it"]
        assert a.get("item-zzzz.2").blocked == ()
        # item-N is this machine's own N-th item, never another's of that number; its long
        # form (how other machines show it) works here too.
        assert a.get("item-1").title == a.get("item-k3f9.1").title == "A's"
        assert a.shown(f"item-{A}.1") == "item-1"
        with pytest.raises(NoSuchItemError) as caught:
            a.get("item-2")
        assert str(caught.value) == (
            f"no item item-2 on the board of {a.root} (did you mean item-zzzz.2? 'start board' "
            "lists them)"
        )
        with pytest.raises(NoSuchItemError):
            a.get("item-wwww.1")  # an origin this board does not know
        # Naming an item reads the keys it needs by their indexes, never every key.
        read: list[str] = []
        a.connection.set_trace_callback(read.append)
        assert a.get("item-zzzz.2").blocked_by == ("item-zzzz.1",)
        a.connection.set_trace_callback(None)
        assert read
        assert all("FROM keys" not in sql or "WHERE" in sql for sql in read), read


def test_a_prefix_two_origins_share_is_refused_naming_both_and_the_shown_one_grows(
    tmp_path: Path,
) -> None:
    with (
        boardfile.opened(str(project(tmp_path, "a"))) as a,
        boardfile.opened(str(project(tmp_path, "b"))) as b,
        boardfile.opened(str(project(tmp_path, "c"))) as c,
    ):
        synced(a, A)
        synced(b, B)
        synced(c, C)
        a.create("A's", ANN)
        b.create("B's", BOB)
        brought(c, a)
        assert [i.id for i in c.items()[0]] == ["item-k3f9.1"]
        brought(c, b)  # B's origin starts as A's does: both are shown longer now
        assert [i.id for i in c.items()[0]] == ["item-k3f9a.1", "item-k3f9b.1"]
        with pytest.raises(ids.AmbiguousIdError) as caught:
            c.claim("item-k3f9.1", ANN)
        assert str(caught.value) == (
            f"item-k3f9.1 is ambiguous: the origins of 2 machines on this board start with "
            f"'k3f9' (item-{A}.1, item-{B}.1); give more of the origin, or all of it"
        )
        assert caught.value.exit_code == ExitCode.USAGE
        assert c.get("item-k3f9a.1").status == "pending"  # nothing was claimed
        # The longer forms keep working, the full one always.
        assert c.get("item-k3f9b.1").title == c.get(f"item-{B}.1").title == "B's"
        assert c.shown(f"item-{B}.1") == "item-k3f9b.1"
        assert c.unconfirmed() == set()
        c.claim("item-k3f9b.1", BOB)
        assert c.unconfirmed() == {"item-k3f9b.1"}
