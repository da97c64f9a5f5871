"""How the board keeps its items in SQLite: the columns of an Item and the conversions between a
row and the record, derived from the record's annotations (start.board.Item) as the history's
are from Run's (start.runs.KINDS), and the listings' filters.

Adding a field to Item is one line there: its column is added to the `items` table of a board
that lacks it when the board is opened (start.board.file), NULL in the rows before it, and every
read and write of the board converts it by its annotation (KINDS).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from start.base import sqlite
from start.base.record import Record
from start.board import PENDING, Item, item_id, number, waiting
from start.compose.ask import data as ask_data
from start.compose.ask import from_data

if TYPE_CHECKING:
    import sqlite3


def _as_is(value: Any) -> Any:
    return value


def dumps(value: object) -> str:
    """JSON as the board keeps it: metadata, a run, an event's detail."""
    return json.dumps(value, sort_keys=True)


class Kind(Record):
    """How the values of one annotation of Item are kept: the column's type, and a value (never
    None: NULL is None both ways) as the column holds it and back."""

    column: str
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


_TEXT = Kind("BLOB", sqlite.blob, sqlite.text)
_STRING = Kind("TEXT", _as_is, _as_is)
_INTEGER = Kind("INTEGER", _as_is, _as_is)
# Every annotation a stored field of Item may have (tests/board/test_board.py holds Item to it).
KINDS: Final[Mapping[str, Kind]] = {
    "str": _STRING,
    "str | None": _STRING,
    "Text": _TEXT,
    "Text | None": _TEXT,
    "int": _INTEGER,
    "int | None": _INTEGER,
    "Mapping[str, Any]": Kind("TEXT", lambda value: dumps(dict(value)), json.loads),
    # What an item runs: an ask, kept as its data (start.compose.ask).
    "Ask | None": Kind(
        "TEXT", lambda ask: dumps(ask_data(ask)), lambda text: from_data(json.loads(text))
    ),
}

# The fields of Item that are no column of `items`: its id is the row's `seq`, what it waits on
# (and why) is read from `deps`, its labels from `labels`, its parent from the column `parent`
# (its number), and its children from the items whose parent it is.
DERIVED: Final = ("id", "blocked_by", "blocked", "labels", "parent", "children", "children_done")
FIELDS: Final = tuple(name for name in Item._fields if name not in DERIVED)
# Each stored field's column and its type.
STORED: Final = {name: KINDS[Item.__annotations__[name]].column for name in FIELDS}
# What a read of an item selects: the row's number, its fields, and the process that holds its
# claim (start.board.refusals.holds), which is no field of the record.
COLUMNS: Final = ", ".join(("seq", *FIELDS, "holder_pid", "holder_started", "parent"))


def encode(name: str, value: Any) -> Any:
    """The value of Item's field `name` as its column holds it."""
    return None if value is None else KINDS[Item.__annotations__[name]].encode(value)


def _decode(name: str, value: Any) -> Any:
    return None if value is None else KINDS[Item.__annotations__[name]].decode(value)


# Whether an item (the row `i` of an UPDATE or a SELECT) waits on a dependency that is not
# completed, or not there at all.
BLOCKED: Final = (
    "EXISTS (SELECT 1 FROM deps d LEFT JOIN items b ON b.seq = d.blocked_by "
    "WHERE d.item = {row}.seq AND (b.status IS NULL OR b.status <> 'completed'))"
)
# Each dependency of an item as `POSITION ID STATUS`, STATUS `-` for a missing one, and ` a`
# after it when it is archived.
DEPS: Final = (
    "(SELECT group_concat(d.position || ' ' || d.blocked_by || ' ' || COALESCE(b.status, '-') "
    "|| CASE WHEN b.archived IS NULL THEN '' ELSE ' a' END, ',') "
    "FROM deps d LEFT JOIN items b ON b.seq = d.blocked_by WHERE d.item = i.seq)"
)
# An item's labels, sorted, a space between two (a label has none).
LABELS: Final = (
    "(SELECT group_concat(name, ' ') FROM (SELECT l.name FROM labels l WHERE l.item = i.seq "
    "ORDER BY l.name))"
)
# An item's children as `COUNT DONE`: those not archived, and archived ones that completed.
CHILDREN: Final = (
    "(SELECT count(*) || ' ' || count(CASE WHEN c.status = 'completed' THEN 1 END) FROM items c "
    "WHERE c.parent = i.seq AND (c.archived IS NULL OR c.status = 'completed'))"
)
# What a read of items selects, before its WHERE.
SELECT: Final = (
    f"SELECT {COLUMNS}, {DEPS} AS deps, {LABELS} AS labels, {CHILDREN} AS children FROM items i"
)


def item(row: sqlite3.Row, show: Callable[[int], str] = item_id) -> Item:
    """A row of SELECT as an Item; `show`: the id of a row's number as the board shows it
    (start.board.ids.Names.show; with sync off, item-N)."""
    found = []
    for part in (row["deps"] or "").split(","):
        if part:
            position, dependency, status, *archived = part.split(" ")
            found.append(
                (
                    int(position),
                    show(int(dependency)),
                    None if status == "-" else status,
                    bool(archived),
                )
            )
    found.sort()
    reasons = (waiting(dependency, status, archived) for _, dependency, status, archived in found)
    children, done = row["children"].split(" ")
    return Item(
        id=show(row["seq"]),
        blocked_by=tuple(each[1] for each in found),
        blocked=tuple(reason for reason in reasons if reason is not None),
        labels=tuple((row["labels"] or "").split()),
        parent=None if row["parent"] is None else show(row["parent"]),
        children=int(children),
        children_done=int(done),
        **{name: _decode(name, row[name]) for name in FIELDS},
    )


# The columns that order a listing, as a page's key: the oldest first, or (by_priority) the
# highest priority first, then the oldest. An item's number never changes, so a page that ends at
# a key goes on after it whatever is made meanwhile (start.board.store.Board.items, `after`).
KEY: Final = ("i.seq",)
KEY_BY_PRIORITY: Final = ("i.priority", "i.seq")


def key(item: Item, by_priority: bool, seq: int | None = None) -> tuple[int, ...]:
    """Where `item` is in a listing's order: the key a page that ends with it goes on after;
    `seq`: its row's number (start.board.store.Board.page_key), its id's number unless given."""
    seq = number(item.id) if seq is None else seq
    return (item.priority, seq) if by_priority else (seq,)


class Filter(Record):
    """Which items a listing shows; None (and False) leave a dimension open."""

    statuses: tuple[str, ...] = ()
    assignee: str | None = None
    blocked: bool | None = None
    # Pending, not blocked, and no workflow run's own (STEP_MARK): what a claim of the next
    # item may take; with `steps`, a run's steps too, as its runner claims them.
    ready: bool = False
    steps: bool = False
    runnable: bool = False  # with something for `start board run` to run
    ids: tuple[str, ...] = ()  # only these items (those that are there)
    archived: bool | None = False  # only archived items (True), those that are not, or both
    labels: tuple[str, ...] = ()  # only items with every one of these labels
    parent: str | None = None  # only the children of this item
    waiting_on: str | None = None  # only the items that wait on this one
    within: str | None = None  # only this item and the items part of it, at any depth
    above: tuple[str, ...] = ()  # only the parents of these items, theirs, and so on to the roots
    # Only the items in whose title, description or comments each word of this begins a word
    # (start.board.search, which Board.items asks for the items that match).
    search: str | None = None


EVERY: Final = Filter()

# A workflow run's items are its own: start.board.workflow marks its parent item with metadata
# `workflow.definition` and each step's item (an element of a for_each step too) with
# `workflow.step`, from when it makes them. No item of a run is ready to anyone but its runner
# (`Filter(ready=True, steps=True)`), which claims its steps, never its parent: a step's run is
# filled from the steps it reads, and its end is the run's bookkeeping (its value, its retries,
# what it unblocks), which `start board run`, a person's `claim --next` or an agent's claim of
# the next item would skip, running it as a board item.
PARENT_MARK, STEP_MARK = "$.workflow.definition", "$.workflow.step"


def where(
    found: Filter,
    matched: Sequence[int] | None = None,
    seq: Callable[[str], int | None] = number,
) -> tuple[str, list[Any]]:
    """The WHERE clause (with its leading space) of a listing, and its values; `matched`: the
    numbers of the items its search matches (None: it has none, or it matches every item);
    `seq`: the row's number of an id (None: it names no item, which matches nothing;
    start.board.ids.Names.seq with sync on)."""

    def number(id_: str) -> int:
        row = seq(id_)
        return 0 if row is None else row  # no row has number 0

    clauses: list[str] = []
    values: list[Any] = []
    if matched is not None:
        clauses.append("i.seq IN (SELECT value FROM json_each(?))")
        values.append(json.dumps(list(matched)))
    statuses = list(found.statuses)
    if found.ready:
        statuses = [PENDING] if not statuses or PENDING in statuses else ["-"]
    if statuses:
        clauses.append(f"i.status IN ({', '.join('?' for _ in statuses)})")
        values += statuses
    if found.assignee is not None:
        clauses.append("i.assignee = ?")
        values.append(found.assignee)
    blocked = False if found.ready else found.blocked
    if blocked is not None:
        clauses.append(("" if blocked else "NOT ") + BLOCKED.format(row="i"))
    if found.ready:
        for mark in (PARENT_MARK,) if found.steps else (PARENT_MARK, STEP_MARK):
            clauses.append("json_extract(i.metadata, ?) IS NULL")
            values.append(mark)
    if found.runnable:
        clauses.append("i.run IS NOT NULL")
    if found.archived is not None:
        clauses.append(f"i.archived IS {'NOT ' if found.archived else ''}NULL")
    for label in found.labels:
        clauses.append("i.seq IN (SELECT l.item FROM labels l WHERE l.name = ?)")
        values.append(label)
    if found.parent is not None:
        clauses.append("i.parent = ?")
        values.append(number(found.parent))
    if found.within is not None:
        # (UNION, not UNION ALL: each item once, so that even a loop of parents ends)
        clauses.append(
            "i.seq IN (WITH RECURSIVE down(seq) AS (SELECT ? UNION "
            "SELECT c.seq FROM items c JOIN down ON c.parent = down.seq) SELECT seq FROM down)"
        )
        values.append(number(found.within))
    if found.waiting_on is not None:
        clauses.append("i.seq IN (SELECT d.item FROM deps d WHERE d.blocked_by = ?)")
        values.append(number(found.waiting_on))
    if found.above:
        # (UNION: each item once, so that even a loop of parents ends)
        clauses.append(
            "i.seq IN (WITH RECURSIVE up(seq) AS ("
            "SELECT parent FROM items WHERE seq IN (SELECT value FROM json_each(?)) UNION "
            "SELECT p.parent FROM items p JOIN up ON p.seq = up.seq) SELECT seq FROM up)"
        )
        values.append(json.dumps([number(id_) for id_ in found.above]))
    if found.ids:
        # (one value however many ids: SQLite bounds the number of variables of a statement)
        clauses.append("i.seq IN (SELECT value FROM json_each(?))")
        values.append(json.dumps([number(id_) for id_ in found.ids]))
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), values
