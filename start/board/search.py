"""Search of the board's items, over their titles, descriptions and comments (docs/board.md,
"Search"): SQLite's FTS5 where this Python's SQLite has it, a scan of every item's text where it
has not, each giving the items in which every word of the query begins a word.

One board file may be opened by several Pythons on one machine (a pipx install, a 3.11 and a
3.13 venv), and the SQLite of some may lack FTS5. So no write of the board depends on the index:
it is no migration, no trigger writes it, and it is made, and brought up to date, only here, at
search time: an item is indexed again when its stamp (its `updated`, and its latest event and
comment, which change with every change of its text) is not the one indexed. A Python without
FTS5 never touches the index and scans; the next search of one with FTS5 indexes what changed.

A query is never FTS5's syntax: its words are read here (runs of letters and digits), and each
goes to FTS5 quoted, as a prefix, so that `"`, `*`, `AND` or `NEAR(` are words or nothing.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Final

from start.base import inputs, sqlite

# The index: FTS5, one row an item (its rowid the item's number): its text, and the stamp of the
# item when it was indexed. unicode61 without removing diacritics, as the scan reads words.
INDEX: Final = "search_index"
_MADE: Final = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {INDEX} USING fts5(body, stamp UNINDEXED, "
    "tokenize = 'unicode61 remove_diacritics 0')"
)
# Each item's stamp: what changes whenever its title, description or comments do (a change of
# the text of an item is an event of its history, or a comment), `updated` besides.
_STAMPS: Final = (
    "SELECT i.seq, i.updated || ' ' "
    "|| COALESCE((SELECT max(e.seq) FROM events e WHERE e.item = i.seq), 0) || ' ' "
    "|| COALESCE((SELECT max(c.seq) FROM comments c WHERE c.item = i.seq), 0) FROM items i"
)
# The board's stamp: what changes whenever any item's text may have (an item made, an event, a
# comment, a later `updated`), each read at an index's end; kept in the index's row 0 (no
# item's number) as of its last indexing, so that a search of a board that did not change
# since reads no item's stamp.
_BOARD: Final = 0
_BOARD_STAMP: Final = (
    "SELECT COALESCE((SELECT max(seq) FROM items), 0) || ' ' "
    "|| COALESCE((SELECT max(seq) FROM events), 0) || ' ' "
    "|| COALESCE((SELECT max(seq) FROM comments), 0) || ' ' "
    "|| COALESCE((SELECT max(updated) FROM items), '')"
)
# A word, as FTS5's unicode61 reads one for words of letters and digits: a run of them.
_WORD: Final = re.compile(r"[^\W_]+")
# How many items one statement indexes at once.
_BATCH: Final = 500


def words(query: str) -> list[str]:
    """The words of a query, lowercased, each once, in order."""
    return list(dict.fromkeys(_WORD.findall(query.lower())))


def matching(
    connection: sqlite3.Connection, query: str, *, indexed: bool = True
) -> list[int] | None:
    """The numbers of the items in whose title, description or comments each word of `query`
    begins a word (case aside), in order; None when `query` has no word (every item matches).
    Through the FTS5 index when `indexed` and SQLite has FTS5, else by a scan."""
    found = words(query)
    if not found:
        return None
    if indexed:
        try:
            return _searched(connection, found)
        except sqlite3.OperationalError as error:
            if not str(error).startswith("no such module"):
                raise
    return _scanned(connection, found)


def _searched(connection: sqlite3.Connection, found: Sequence[str]) -> list[int]:
    """Through the index, brought up to date first; sqlite3.OperationalError (no such module)
    when this SQLite has no FTS5."""
    index(connection)
    query = " AND ".join(f'"{word}"*' for word in found)  # a word holds no `"`
    rows = connection.execute(
        f"SELECT rowid FROM {INDEX} WHERE {INDEX} MATCH ? ORDER BY rowid", (query,)
    )
    return [row[0] for row in rows]


def _scanned(connection: sqlite3.Connection, found: Sequence[str]) -> list[int]:
    """By reading every item's text: each word at the start of one (no letter or digit before
    it), in the text lowercased."""
    patterns = [re.compile(r"(?<![^\W_])" + re.escape(word)) for word in found]
    kept = []
    for seq, body in _bodies(connection, None):
        folded = body.lower()
        if all(pattern.search(folded) for pattern in patterns):
            kept.append(seq)
    return kept


def index(connection: sqlite3.Connection) -> int:
    """Make the index if it is missing, and index each item whose stamp is not the one indexed;
    how many were. sqlite3.OperationalError (no such module) when this SQLite has no FTS5."""
    made = connection.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (INDEX,)).fetchone()
    if made is None:
        with sqlite.writing(connection):
            connection.execute(_MADE)
    kept = connection.execute(f"SELECT stamp FROM {INDEX} WHERE rowid = {_BOARD}").fetchone()
    if kept is not None and kept[0] == _board_stamp(connection):
        return 0  # reads only: no write, and no change another watcher would see
    with sqlite.writing(connection):
        stale = _stale(connection)  # as it is now that no other writes
        for start in range(0, len(stale), _BATCH):
            batch = dict(stale[start : start + _BATCH])
            connection.executemany(f"DELETE FROM {INDEX} WHERE rowid = ?", [(s,) for s in batch])
            connection.executemany(
                f"INSERT INTO {INDEX} (rowid, body, stamp) VALUES (?, ?, ?)",
                [(seq, body, batch[seq]) for seq, body in _bodies(connection, list(batch))],
            )
        connection.execute(f"DELETE FROM {INDEX} WHERE rowid = {_BOARD}")
        connection.execute(
            f"INSERT INTO {INDEX} (rowid, body, stamp) VALUES ({_BOARD}, '', ?)",
            (_board_stamp(connection),),
        )
    return len(stale)


def _board_stamp(connection: sqlite3.Connection) -> str:
    found: str | None = connection.execute(_BOARD_STAMP).fetchone()[0]
    return found or ""  # an empty board


def _stale(connection: sqlite3.Connection) -> list[tuple[int, str]]:
    """The items whose stamp is not the one indexed, each with its stamp now."""
    indexed = connection.execute(f"SELECT rowid, stamp FROM {INDEX} WHERE rowid <> {_BOARD}")
    kept = dict(indexed.fetchall())
    stamps = connection.execute(_STAMPS).fetchall()
    return [(seq, stamp) for seq, stamp in stamps if kept.get(seq) != stamp]


def _bodies(
    connection: sqlite3.Connection, seqs: Sequence[int] | None
) -> Iterator[tuple[int, str]]:
    """Each item's text (of `seqs`; None: of every item): its title, description and comments,
    a line between two, as valid Unicode (a byte that was not UTF-8 as U+FFFD)."""
    where, values = "", []
    if seqs is not None:
        where = " WHERE item IN (SELECT value FROM json_each(?))"
        values = [json.dumps(list(seqs))]
    comments: dict[int, list[str]] = {}
    for item, text in connection.execute(
        f"SELECT item, text FROM comments{where} ORDER BY seq", values
    ):
        comments.setdefault(item, []).append(sqlite.text(text) or "")
    items = connection.execute(
        f"SELECT seq, title, description FROM items{where.replace('item IN', 'seq IN')}", values
    )
    for seq, title, description in items:
        parts = [sqlite.text(title) or "", sqlite.text(description) or "", *comments.get(seq, ())]
        yield seq, inputs.valid("\n".join(parts))
