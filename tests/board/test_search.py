"""Search of the board (start.board.search, docs/board.md "Search"): through FTS5 and by a scan,
which agree; the index brought up to date lazily, rebuilt when missing, and never needed by a
write: a board whose index this SQLite cannot read (as a Python without FTS5 sees it) is written
as any other, and searched by the scan."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from start.base import sqlite as db
from start.board import Change, search
from start.board import file as boardfile
from start.board.rows import STORED, Filter
from start.board.store import Board
from tests.board.test_board import ALICE, BOB


@pytest.fixture
def opened(isolated: Path) -> Iterator[Board]:
    with boardfile.opened(str(isolated)) as found:
        yield found


def both(board: Board, query: str) -> list[int] | None:
    """The items `query` matches, through the index; held to be what the scan finds."""
    indexed = search.matching(board.connection, query)
    assert search.matching(board.connection, query, indexed=False) == indexed, query
    return indexed


def test_each_word_begins_a_word_of_the_title_description_or_a_comment(opened: Board) -> None:
    opened.create("Login crash on Safari", ALICE)
    opened.create("Other", ALICE, "The LOGIN page: fixes for Ünïcode, ΩMEGA and Кириллица")
    opened.create("Third", ALICE)
    opened.comment("3", BOB, "crashes sometimes; see login_form")
    assert [
        both(opened, query)
        for query in (
            "login", "LOGIN Crash", "crash login", "fix", "ogin", "ünï", "ωmega", "кирил",
            "safari crash", "form", "login form", "page crashes", "nothing",
        )
    ] == [
        [1, 2, 3], [1, 3], [1, 3], [2], [], [2], [2], [2],
        [1], [3], [3], [], [],
    ]  # fmt: skip


@pytest.mark.parametrize(
    "query", ['"', "*", "AND", "NEAR(", "a OR", "NOT x", "(", ")", "'", "^", ":", "-x", "{a b}",
              'x"*', "\\", "\x00", "\udcff", "a*b", "title:x", ""]
)  # fmt: skip
def test_no_query_is_fts5_syntax(opened: Board, query: str) -> None:
    opened.create("and near not or a x b title", ALICE)
    opened.create("nothing of it", ALICE)
    found = both(opened, query)
    if search.words(query):
        assert found is not None
    else:
        assert found is None  # no word: every item (the listing's other filters still apply)


def test_the_index_follows_every_change_lazily(opened: Board) -> None:
    opened.create("Alpha", ALICE)
    opened.create("Beta", ALICE)
    assert search.index(opened.connection) == 2  # made, and both indexed
    assert search.index(opened.connection) == 0  # nothing changed: nothing indexed again
    # Changes within one second (as a script makes them) are each seen: an event, a comment.
    opened.update("1", ALICE, Change(title="Gamma"))
    opened.update("1", ALICE, Change(description="delta"))
    opened.comment("2", BOB, "epsilon")
    opened.create("Zeta", ALICE)
    assert both(opened, "gamma delta") == [1]
    assert both(opened, "alpha") == []
    assert both(opened, "beta epsilon") == [2]
    assert both(opened, "zeta") == [3]
    assert search.index(opened.connection) == 0


def test_a_missing_index_is_made_again(opened: Board) -> None:
    opened.create("Alpha", ALICE)
    assert both(opened, "alpha") == [1]
    opened.connection.execute(f"DROP TABLE {search.INDEX}")
    opened.create("Alphabet", ALICE)
    assert both(opened, "alpha") == [1, 2]


def _unreadable(board: Board) -> None:
    """Make the index one this SQLite cannot read, as a Python whose SQLite lacks FTS5 sees an
    index another made: its module is one no SQLite has."""
    search.index(board.connection)
    connection = board.connection
    connection.execute("PRAGMA writable_schema = ON")
    connection.execute(
        "UPDATE sqlite_master SET sql = replace(sql, 'USING fts5(', 'USING nofts5(') "
        "WHERE name = ?",
        (search.INDEX,),
    )
    version = connection.execute("PRAGMA schema_version").fetchone()[0]
    connection.execute(f"PRAGMA schema_version = {version + 1}")
    connection.execute("PRAGMA writable_schema = OFF")


def test_a_board_whose_index_this_sqlite_cannot_read_is_written_and_scanned(
    isolated: Path,
) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("Alpha", ALICE)
        _unreadable(opened)
    with boardfile.opened(str(isolated)) as opened:
        with pytest.raises(sqlite3.OperationalError, match=r"^no such module: nofts5$"):
            opened.connection.execute(f"SELECT * FROM {search.INDEX}").fetchall()
        # Every write of the board goes on as before.
        opened.create("Beta", ALICE, "x", labels=("bug",))
        opened.update("2", ALICE, Change(title="Beta two", add_labels=("ui",)))
        opened.comment("1", BOB, "alphabet soup")
        opened.claim("2", BOB)
        opened.update("2", BOB, Change("completed", answer="done"))
        opened.archive(["2"], ALICE)
        opened.connection.execute("ALTER TABLE items ADD COLUMN later TEXT")  # a release's column
        items, total = opened.items(Filter(search="alpha", archived=None))
        assert ([i.id for i in items], total) == (["item-1"], 1)
        assert search.matching(opened.connection, "beta") == [2]  # by the scan


# Plain words: letters and digits of scripts both read alike, and what stands between them.
_LETTERS = "abcdefxyzABCXYZ019éèÉßñÑøΩωαβΓКкирЖж中文"
_BETWEEN = " \n\t.,;:!?-_\"'()*/[]{}<>@#"
_TEXT = st.text(st.sampled_from(_LETTERS + _BETWEEN), max_size=40)
_QUERY = st.text(st.sampled_from(_LETTERS + _BETWEEN), max_size=8)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(_TEXT, _TEXT, st.lists(_TEXT, max_size=2)), min_size=1, max_size=6),
       st.lists(_QUERY, min_size=1, max_size=5))  # fmt: skip
def test_fts5_and_the_scan_agree_on_plain_words(
    isolated: Path, items: list[tuple[str, str, list[str]]], queries: list[str]
) -> None:
    connection = db.connect(None)  # a board in memory: a fresh one for each example
    try:
        boardfile.migrate(connection, ":memory:")
        db.add_columns(connection, "items", STORED)
        board = Board(connection, str(isolated), ":memory:")
        for title, description, comments in items:
            made = board.create(f"t {title}", ALICE, description)
            for text in comments:
                if text:
                    board.comment(made.id, BOB, text)
        for query in queries:
            both(board, query)
    finally:
        connection.close()


def test_a_search_of_10000_items_stays_fast(opened: Board) -> None:
    """How the cost grows, by counting work rather than holding a wall clock: once indexed, a
    search indexes nothing again, and finds its items among 10,000."""
    words = ["login", "crash", "retry", "cache", "token", "parser", "flaky", "deploy"]
    with opened.connection:
        opened.connection.execute("BEGIN")
        opened.connection.executemany(
            "INSERT INTO items (title, description, status, metadata, created_by, created, "
            "updated) VALUES (?, ?, 'pending', '{}', 'alice', 't', 't')",
            [
                (f"{words[n % 8]} item {n}", f"about {words[(n * 3) % 8]} and more text " * 5)
                for n in range(10_000)
            ],
        )
    assert search.index(opened.connection) == 10_000
    assert search.index(opened.connection) == 0
    # Item n + 1 has words[n % 8] and words[3n % 8]: crash (1) and cache (3) for n 1 or 3 mod 8.
    found = [seq for seq in range(1, 10_001) if (seq - 1) % 8 in (1, 3)]
    assert both(opened, "crash cache") == found
    opened.comment("3", BOB, "a cache crash")
    assert search.index(opened.connection) == 1  # that item, and it alone
    assert both(opened, "crash cache") == sorted([3, *found])
    # Up to date, a search reads the board's stamp, not each item's, and no item's text.
    statements: list[str] = []
    opened.connection.set_trace_callback(statements.append)
    assert search.matching(opened.connection, "crash cache") == sorted([3, *found])
    opened.connection.set_trace_callback(None)
    read = [s for s in statements if "FROM items i" in s or "FROM comments " in s]
    assert read == [] and any(s.startswith("SELECT rowid FROM search_index") for s in statements)
