"""The store's side of the log across machines (docs/board-sync-design.md, "The store's cache of
the log"): with sync on for a board, each change start.board.store makes writes its operation
(start.board.oplog) into the board's `ops` table in the same transaction as the rows, and
`rebuild` makes the items again from every operation (start.board.replay), so that the same
operations make the same board whatever order they arrived in.

Sync is off until `start board sync` turns it on (`turn_on`: the `sync` table gets its one row);
while it is off nothing here writes, and the board is as it always was. Everything here runs
inside the caller's write transaction (start.base.sqlite.writing).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from start.base import sqlite
from start.base.record import Record
from start.board import COMPLETED, FAILED, IN_PROGRESS, PENDING, Item
from start.board.oplog import (
    ARCHIVE,
    AUTHOR_CHARACTERS,
    AUTHOR_LENGTH,
    CLAIM,
    COMMENT,
    CREATE,
    FINISH,
    RELEASE,
    REOPEN,
    TRANSITIONS,
    UPDATE,
    Clock,
    Op,
    OperationError,
    encode,
    key,
    new_origin,
    observe,
    parsed,
    split_key,
    tick,
)
from start.board.replay import Entry, Replayed, replay
from start.config.schema import LEVELS

# Who acts for the board itself (the watchdog's release), as the store's history names it.
BOARD_AUTHOR: Final = "start"


class Sync(Record):
    """A board's sync, as its `sync` row keeps it: its origin, the latest clock it wrote or saw,
    its last operation's number, its count of items made, and when it last synced."""

    origin: str
    clock: Clock
    seq: int
    items: int
    last_sync: str | None


def state(connection: Any) -> Sync | None:
    """The board's sync; None while sync is off (the default)."""
    row = connection.execute(
        "SELECT origin, wall, logical, seq, items, last_sync FROM sync WHERE one = 1"
    ).fetchone()
    if row is None:
        return None
    origin, wall, logical, seq, items, last_sync = tuple(row)
    return Sync(origin, Clock(wall, logical), seq, items, last_sync)


def on(connection: Any) -> bool:
    """Whether sync is on for this board: its changes are written to the log."""
    return connection.execute("SELECT 1 FROM sync WHERE one = 1").fetchone() is not None


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def stamp(clock: Clock) -> str:
    """A clock's wall time as the board shows a time (ISO 8601, this machine's offset)."""
    return datetime.fromtimestamp(clock.wall / 1000).astimezone().isoformat(timespec="seconds")


def author(name: str | None, fallback: str = BOARD_AUTHOR) -> str:
    """`name` as an operation's author; `fallback` for a name an operation cannot carry (an
    imported item's creator of another tracker: spaces, or too long)."""
    if name and len(name) <= AUTHOR_LENGTH and set(name) <= AUTHOR_CHARACTERS:
        return name
    return fallback


# --- turning sync on ---------------------------------------------------------------------------


def turn_on(connection: Any) -> Sync:
    """Turn sync on for this board: a new origin, and every item written to the log as it is
    now (its create, the transitions to its state, its comments) under the key ORIGIN.N, N its
    number, so that item-N keeps naming it. The sync as it now is."""
    found = state(connection)
    if found is not None:
        return found
    last = connection.execute("SELECT COALESCE(max(seq), 0) FROM items").fetchone()[0]
    connection.execute(
        "INSERT INTO sync (one, origin, wall, logical, seq, items) VALUES (1, ?, 0, 0, 0, ?)",
        (new_origin(), last),
    )
    for (seq,) in connection.execute("SELECT seq FROM items ORDER BY seq").fetchall():
        try:
            as_it_is(connection, seq, BOARD_AUTHOR, seq)
        except OperationError as error:  # text the log cannot carry: say which item holds it
            raise OperationError(
                f"item-{seq} cannot be written to the log across machines, so sync is not "
                f"turned on: {error} (start board update item-{seq} --title/--description "
                "sets its text again); nothing was written"
            ) from None
    # The operations that sum up the items made before: here their history stands for them.
    connection.execute("UPDATE sync SET summed = seq WHERE one = 1")
    made = state(connection)
    assert made is not None
    return made


def as_it_is(connection: Any, seq: int, by: str, numbered: int | None = None) -> None:
    """Write item `seq` to the log as it is now: a create of its fields (its key made now:
    ORIGIN.`numbered`, or the origin's next), the transitions that bring it to its status and
    archive, and its comments. Its epoch is then theirs (replay's count of transitions)."""
    sync = state(connection)
    assert sync is not None, "sync is on"
    summing = numbered is not None  # turning sync on: the item has a history of its own
    if numbered is None:
        numbered = sync.items + 1
        connection.execute("UPDATE sync SET items = ? WHERE one = 1", (numbered,))
    connection.execute(
        "INSERT OR REPLACE INTO keys (seq, key) VALUES (?, ?)", (seq, key(sync.origin, numbered))
    )
    row = connection.execute(
        "SELECT title, description, run, priority, metadata, created_by, level, status, "
        "assignee, answer, reason, answer_level, archived, created, updated FROM items "
        "WHERE seq = ?",
        (seq,),
    ).fetchone()
    (title, description, run, priority, metadata, created_by, level, status, assignee, answer,
     reason, answer_level, archived, created, updated) = tuple(row)  # fmt: skip
    # Summing up an item made before sync, its operations take its own times (their clocks
    # never go back all the same: tick), so that every machine shows when it was made.
    made_at = _ms(created) if summing else None
    changed_at = _ms(updated) if summing else None
    creator = author(created_by, by)
    fields: dict[str, Any] = {"title": sqlite.text(title)}
    if sqlite.text(description):
        fields["description"] = sqlite.text(description)
    if run is not None:
        fields["run"] = json.loads(run)
    if priority != _default_priority():
        fields["priority"] = priority
    if json.loads(metadata):
        fields["metadata"] = json.loads(metadata)
    labels = _labels(connection, seq)
    if labels:
        fields["labels"] = labels
    deps = _dependencies(connection, seq)
    if deps:
        fields["blocked_by"] = deps
    parent = _parent(connection, seq)
    if parent is not None:
        fields["parent"] = parent
    write(connection, seq, creator, level, CREATE, fields, epoch=0, event=not summing, at=made_at)
    epoch = 0
    holder = author(assignee, creator)
    if status == IN_PROGRESS:
        write(connection, seq, holder, level, CLAIM, {}, epoch=epoch, event=not summing,
              at=changed_at)  # fmt: skip
        epoch += 1
    elif status in (COMPLETED, FAILED):
        finish: dict[str, Any] = {"status": status}
        said = sqlite.text(answer if status == COMPLETED else reason)
        if said is not None:
            finish["answer" if status == COMPLETED else "reason"] = said
        if status == COMPLETED and answer_level is not None:
            finish["answer_level"] = answer_level
        write(connection, seq, holder, level, FINISH, finish, epoch=epoch, event=not summing,
              at=changed_at)  # fmt: skip
        epoch += 1
    if archived is not None:
        write(connection, seq, creator, level, ARCHIVE, {}, epoch=epoch, event=not summing,
              at=_ms(archived) if summing else None)  # fmt: skip
        epoch += 1
    for at_author, text, when in connection.execute(
        "SELECT author, text, at FROM comments WHERE item = ? ORDER BY seq", (seq,)
    ).fetchall():
        write(connection, seq, author(at_author, creator), level, COMMENT,
              {"text": sqlite.text(text)}, epoch=epoch, event=not summing,
              at=_ms(when) if summing else None)  # fmt: skip
    connection.execute("UPDATE items SET epoch = ? WHERE seq = ?", (epoch, seq))


def _ms(when: object) -> int | None:
    """A time the board kept (ISO 8601) in milliseconds; None when it is none (now, then)."""
    try:
        return int(datetime.fromisoformat(str(when)).timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None


def _default_priority() -> int:
    from start.base.inputs import DEFAULT_PRIORITY

    return DEFAULT_PRIORITY


# --- writing operations -----------------------------------------------------------------------


def write(
    connection: Any,
    seq: int,
    by: str,
    level: str,
    kind: str,
    fields: Mapping[str, Any],
    *,
    epoch: int | None = None,
    moved: bool = False,
    event: bool = True,
    at: int | None = None,
) -> Op | None:
    """Write the operation of a change the store just made to item `seq`, and its event; None
    (nothing written) while sync is off. Its epoch is the item's as the author saw it: the
    row's (one less when the store's own UPDATE `moved` it: a claim, a reassign), unless given.
    A transition makes the item's epoch one more, as replay counts them. Without `event` it
    is not written to the item's history (an item made before sync has its own); `at`: the
    wall time its clock takes (ms), when not now."""
    sync = state(connection)
    if sync is None:
        return None
    row = connection.execute(
        "SELECT k.key, i.epoch FROM items i JOIN keys k ON k.seq = i.seq WHERE i.seq = ?", (seq,)
    ).fetchone()
    item_key, seen = row[0], row[1] - (1 if moved else 0)
    if epoch is not None:
        seen = epoch
    clock = tick(sync.clock, now_ms() if at is None else at)
    op = Op(sync.origin, sync.seq + 1, clock, by, level, kind, item_key, seen, dict(fields))
    raw = encode(op)
    connection.execute(
        "INSERT INTO ops (name, bytes, position, logged) VALUES (?, ?, NULL, 0)", (op.name, raw)
    )
    connection.execute(
        "UPDATE sync SET wall = ?, logical = ?, seq = ? WHERE one = 1",
        (clock.wall, clock.logical, op.seq),
    )
    if kind in TRANSITIONS:
        connection.execute("UPDATE items SET epoch = ? WHERE seq = ?", (seen + 1, seq))
        connection.execute("UPDATE keys SET made = ? WHERE seq = ?", (op.name, seq))
    if event:
        _event(connection, seq, op)
    return op


def _events(
    connection: sqlite3.Connection,
    ops: Iterable[Entry],
    made: Replayed,
    origin: str,
    numbers: Mapping[str, int],
    items: Collection[str],
) -> None:
    """Each operation of `ops` that took effect on one of `items` written as its item's event,
    in the log's order; but those of `origin` that sum up the items made before sync was on
    (their own history stands for them)."""
    lost = {entry.name for entry in made.lost}
    summed = connection.execute("SELECT summed FROM sync WHERE one = 1").fetchone()[0]
    for entry in sorted(ops, key=lambda e: e.op.order):
        op = entry.op
        if op.origin == origin and op.seq <= summed:
            continue
        if op.item in items and op.name not in lost:
            _event(connection, numbers[op.item], op)


def _event(connection: Any, seq: int, op: Op) -> None:
    """The item's history of an operation (the log is its history with sync on)."""
    connection.execute(
        "INSERT INTO events (at, item, actor, op, detail, name) VALUES (?, ?, ?, ?, ?, ?)",
        (stamp(op.clock), seq, op.author, op.kind, json.dumps(dict(op.fields), sort_keys=True),
         op.name),
    )  # fmt: skip


def changed(
    connection: Any, seq: int, by: str, level: str, before: Item, after: Item, answer_level: str
) -> None:
    """Write what an update made of item `seq` (read `before` and `after` it): an update of the
    fields that changed, then the transition its status took (a finish, a release, a reopen)."""
    if not on(connection):
        return
    fields: dict[str, Any] = {}
    for name in ("title", "description", "priority"):
        if getattr(before, name) != getattr(after, name):
            fields[name] = getattr(after, name)
    if before.run != after.run:
        from start.compose.ask import data

        fields["run"] = None if after.run is None else data(after.run)
    if before.parent != after.parent:
        fields["parent"] = None if after.parent is None else _key(connection, after.parent)
    meta = {
        name: after.metadata.get(name)
        for name in sorted(set(before.metadata) | set(after.metadata))
        if (name in before.metadata) != (name in after.metadata)
        or before.metadata.get(name) != after.metadata.get(name)
    }
    if meta:
        fields["metadata"] = meta
    for name, old, new in (
        ("labels", set(before.labels), set(after.labels)),
        ("blocked_by", {_key(connection, i) for i in before.blocked_by},
         {_key(connection, i) for i in after.blocked_by}),
    ):  # fmt: skip
        edit = {"add": sorted(new - old), "remove": sorted(old - new)}
        edit = {part: values for part, values in edit.items() if values}
        if edit:
            fields[name] = edit
    epoch = connection.execute("SELECT epoch FROM items WHERE seq = ?", (seq,)).fetchone()[0]
    if fields:
        write(connection, seq, by, level, UPDATE, fields, epoch=epoch)
    if before.status == after.status:
        return
    if after.status in (COMPLETED, FAILED):
        finish: dict[str, Any] = {"status": after.status}
        said = after.answer if after.status == COMPLETED else after.reason
        if said is not None:
            finish["answer" if after.status == COMPLETED else "reason"] = str(said)
        if after.status == COMPLETED:
            finish["answer_level"] = answer_level
        write(connection, seq, by, level, FINISH, finish, epoch=epoch)
    elif before.status == IN_PROGRESS and after.status == PENDING:
        write(connection, seq, by, level, RELEASE, {"counted": False}, epoch=epoch)
    elif before.status == FAILED and after.status == PENDING:
        write(connection, seq, by, level, REOPEN, {}, epoch=epoch)


def _key(connection: Any, id_: str) -> str:
    """The key of the item that `id_`, an id as the board shows it (start.board.ids), names:
    every item has one with sync on."""
    from start.board.ids import Names

    row = connection.execute(
        "SELECT key FROM keys WHERE seq = ?", (Names(connection).seq(id_),)
    ).fetchone()
    assert row is not None and row[0] is not None, f"{id_} has a key with sync on"
    found: str = row[0]
    return found


def _labels(connection: Any, seq: int) -> list[str]:
    found = connection.execute("SELECT name FROM labels WHERE item = ? ORDER BY name", (seq,))
    return [name for (name,) in found.fetchall()]


def _dependencies(connection: Any, seq: int) -> list[str]:
    found = connection.execute(
        "SELECT k.key FROM deps d JOIN keys k ON k.seq = d.blocked_by WHERE d.item = ?", (seq,)
    )
    return sorted(each for (each,) in found.fetchall() if each is not None)


def _parent(connection: Any, seq: int) -> str | None:
    found = connection.execute(
        "SELECT k.key FROM items i JOIN keys k ON k.seq = i.parent WHERE i.seq = ?", (seq,)
    ).fetchone()
    return None if found is None else str(found[0])


# --- taking a remote's operations, and the board they make --------------------------------------


def take(
    connection: Any,
    entries: Iterable[Entry],
    when: str,
    positions: Mapping[str, int] = {},
    tip: str | None = None,
) -> set[str]:
    """Keep every operation of `entries` (those of this machine's log the board did not hold,
    as gitlog read them, each with its place on the remote) in the `ops` table, and the place of
    each of `positions` (by name: known, now pushed; a place, once given, never changes); this
    machine's clock observes the others' clocks. `when`: the time of this sync, its
    `last_sync`; `tip`: the tip of this machine's log whose every operation the board now
    holds (the next sync reads nothing of it again). The items (by key) a rebuild must
    replay: those of the operations taken, and of every operation that was not yet on the
    remote (this machine's, written since)."""
    sync = state(connection)
    assert sync is not None, "sync is on"
    clock, moment = sync.clock, now_ms()
    touched = {
        item
        for (item,) in connection.execute(
            "SELECT json_extract(CAST(bytes AS TEXT), '$.item') FROM ops WHERE position IS NULL"
        ).fetchall()
    }
    for entry in entries:
        touched.add(entry.op.item)
        op = entry.op
        connection.execute(
            "INSERT OR IGNORE INTO ops (name, bytes, position, logged) VALUES (?, ?, ?, 1)",
            (op.name, encode(op), entry.position),
        )
        connection.execute(
            "UPDATE ops SET logged = 1, position = COALESCE(position, ?) WHERE name = ?",
            (entry.position, op.name),
        )
        if op.origin != sync.origin:
            clock = observe(clock, op.clock, moment)
    connection.executemany(
        "UPDATE ops SET position = COALESCE(position, ?) WHERE name = ?",
        [(position, name) for name, position in sorted(positions.items())],
    )
    connection.execute(
        "UPDATE sync SET wall = ?, logical = ?, last_sync = ?, taken = ? WHERE one = 1",
        (clock.wall, clock.logical, when, tip),
    )
    return touched


def taken(connection: Any) -> str | None:
    """The tip of this machine's log whose every operation the board holds (`take`)."""
    found = connection.execute("SELECT taken FROM sync WHERE one = 1").fetchone()
    return None if found is None else found[0]


def known(connection: Any) -> dict[str, int | None]:
    """Every operation the board holds, by name, with its place on the remote (None: not
    pushed): what a sync neither reads nor decodes again."""
    found = connection.execute("SELECT name, position FROM ops").fetchall()
    return {name: position for name, position in found}


def renamed(connection: Any, names: Sequence[str], used: Iterable[int]) -> dict[str, str]:
    """Write this machine's operations `names` (not yet pushed, their names taken on the remote
    by others: forged) again under the next numbers of its origin that neither it nor the
    remote's log (`used`) has given: the same operations under new names, to be logged and
    pushed. Each old name to its new one."""
    sync = state(connection)
    assert sync is not None, "sync is on"
    taken = set(used)
    seq = sync.seq
    done: dict[str, str] = {}
    for name in names:
        row = connection.execute(
            "SELECT bytes FROM ops WHERE name = ? AND position IS NULL", (name,)
        ).fetchone()
        if row is None:
            continue
        seq += 1
        while seq in taken:
            seq += 1
        op = parsed(bytes(row[0]))._replace(seq=seq)
        connection.execute("DELETE FROM ops WHERE name = ?", (name,))
        connection.execute(
            "INSERT INTO ops (name, bytes, position, logged) VALUES (?, ?, NULL, 0)",
            (op.name, encode(op)),
        )
        connection.execute("UPDATE keys SET made = ? WHERE made = ?", (op.name, name))
        connection.execute("UPDATE events SET name = ? WHERE name = ?", (op.name, name))
        done[name] = op.name
    connection.execute("UPDATE sync SET seq = ? WHERE one = 1", (seq,))
    return done


def unconfirmed(connection: Any) -> set[int]:
    """The items (by number) held under a claim (or a reassign) not yet on the remote: the
    operation that made their present epoch has no place there. Empty while sync is off."""
    found = connection.execute(
        "SELECT i.seq FROM items i JOIN keys k ON k.seq = i.seq JOIN ops o ON o.name = k.made "
        "WHERE i.status = ? AND o.position IS NULL",
        (IN_PROGRESS,),
    )
    return {seq for (seq,) in found.fetchall()}


def key_of(connection: Any, seq: int) -> str | None:
    """Item `seq`'s key (ORIGIN.N); None while sync is off, or for no such item."""
    found = connection.execute("SELECT key FROM keys WHERE seq = ?", (seq,)).fetchone()
    return None if found is None else str(found[0])


def numbered(connection: Any, item_key: str) -> int | None:
    """The number of the item whose key is `item_key` (a rebuild may renumber it)."""
    found = connection.execute("SELECT seq FROM keys WHERE key = ?", (item_key,)).fetchone()
    return None if found is None else int(found[0])


def unlogged(connection: Any) -> dict[str, bytes]:
    """This machine's operations not yet in its git log (refs/start/board), by name."""
    found = connection.execute("SELECT name, bytes FROM ops WHERE logged = 0 ORDER BY rowid")
    return {name: bytes(raw) for name, raw in found.fetchall()}


def logged(connection: Any, names: Sequence[str]) -> None:
    connection.executemany("UPDATE ops SET logged = 1 WHERE name = ?", [(n,) for n in names])


def entries(connection: Any) -> list[Entry]:
    """Every operation of the `ops` table, each with its place on the remote: parsed, not
    checked again (each was checked when it was written or taken)."""
    found = connection.execute("SELECT bytes, position FROM ops").fetchall()
    return [Entry(parsed(bytes(raw)), position) for raw, position in found]


def ceiling(ours: str, remote_level: str) -> Callable[[str], str]:
    """The most each origin's operations may set (provenance): this machine's as written,
    another's at most `remote_level` (the setting board_remote_level)."""

    def most(origin: str) -> str:
        return LEVELS[-1] if origin == ours else remote_level

    return most


def rebuild(
    connection: Any, remote_level: str = LEVELS[0], touched: Collection[str] | None = None
) -> Replayed:
    """Make every item of the board again from the `ops` table (replay): the same operations
    make the same rows, numbers, dependencies, labels, comments and history on every board,
    whatever order they arrived in; another machine's operations set a level at most
    `remote_level` (the setting board_remote_level). What only this machine knows (the
    process that holds a claim, the run that finished an item) is kept when the item is still
    as it was; history this board kept before sync was on stays with its item. What replay
    made of the log.

    Items are numbered by where their creates are on the remote, then by clock: an item's
    number (item-N) stays once its create is pushed, and one not yet pushed may move up when
    a sync brings items pushed before it (until ids are keys: docs/board-sync-design.md).

    `touched`: the items (by key) whose operations changed since the last rebuild (`take`
    says which): only they and what hangs on them (their dependents and children, at any
    depth) are replayed and written again, and the rows are the ones a rebuild of every item
    makes (none touched: nothing is); the whole board when the rows are not known to be
    replay's at `remote_level`, when an item's number would move, or when most items are
    touched. None: every item. What replay made of the items it replayed."""
    sync = state(connection)
    assert sync is not None, "sync is on"
    replayed = connection.execute("SELECT replayed FROM sync WHERE one = 1").fetchone()[0]
    made = None
    if touched is not None and replayed == remote_level:
        if not touched:
            return Replayed({}, ())  # the rows are replay's already
        made = _rebuilt_in_part(connection, sync, remote_level, touched)
    if made is None:
        made = _rebuilt(connection, sync, remote_level)
    connection.execute("UPDATE sync SET replayed = ? WHERE one = 1", (remote_level,))
    return made


def _rebuilt(connection: Any, sync: Sync, remote_level: str) -> Replayed:
    """Every item made again from every operation (see `rebuild`)."""
    ops = entries(connection)
    made = replay(ops, ceiling(sync.origin, remote_level))
    by_name = {entry.op.name: entry.op for entry in ops}
    kept = {
        row[0]: tuple(row[1:])
        for row in connection.execute(
            "SELECT k.key, i.seq, status, assignee, epoch, holder_pid, holder_started, history "
            "FROM items i JOIN keys k ON k.seq = i.seq"
        ).fetchall()
    }
    # Numbered by the place of their creates on the remote, then (not yet pushed) by clock: an
    # item's number stays once its create is pushed, since what arrives later is pushed later.
    places = {entry.op.name: entry.position for entry in ops}

    def place(each: Any) -> tuple[bool, int, Clock, tuple[str, int]]:
        at = places.get(each.transitions[0])
        return (at is None, at or 0, each.created, split_key(each.key) or ("", 0))

    order = sorted(made.items.values(), key=place)
    base = connection.execute(
        "SELECT COALESCE(max(seq), 0) FROM items WHERE seq NOT IN (SELECT seq FROM keys)"
    ).fetchone()[0]
    numbers = {each.key: base + index for index, each in enumerate(order, 1)}
    connection.execute("CREATE TEMP TABLE IF NOT EXISTS renumbered (old INTEGER, new INTEGER)")
    connection.execute("DELETE FROM renumbered")
    connection.executemany(
        "INSERT INTO renumbered (old, new) VALUES (?, ?)",
        [(old[0], numbers[k]) for k, old in kept.items() if k in numbers],
    )
    keyed = "SELECT seq FROM keys"
    for table in ("deps", "labels", "comments"):
        connection.execute(f"DELETE FROM {table} WHERE item IN ({keyed})")
    connection.execute(f"DELETE FROM events WHERE name IS NOT NULL OR item NOT IN "
                       f"(SELECT old FROM renumbered) AND item IN ({keyed})")  # fmt: skip
    connection.execute(
        "UPDATE events SET item = (SELECT new FROM renumbered WHERE old = events.item) "
        "WHERE item IN (SELECT old FROM renumbered)"
    )
    connection.execute(f"DELETE FROM items WHERE seq IN ({keyed})")
    connection.execute("DELETE FROM keys")
    for each in order:
        _insert(connection, numbers[each.key], each, kept.get(each.key), by_name)
    for each in order:
        _linked(connection, numbers, each)
    _events(connection, ops, made, sync.origin, numbers, set(numbers))
    connection.execute(
        "UPDATE sqlite_sequence SET seq = ? WHERE name = 'items'", (base + len(order),)
    )
    # The search index is made again from the rows (start.board.search); none yet (or no
    # FTS5): nothing to forget.
    with contextlib.suppress(sqlite3.OperationalError):
        connection.execute("DELETE FROM search_index")
    return made


# The share of a board's items above which a sync replays every item: a rebuild of them all
# costs about what replaying and writing so many one by one does.
_MOST_IN_PART: Final = 4


class _Indexed(Record):
    """What the `ops` table says of its items without parsing any operation whole (SQLite's
    JSON reads each): each item's operations, the items each names as a dependency or parent,
    and the place of each item's create (its number)."""

    names: Mapping[str, list[str]]  # an item's operations, by key
    names_up: Mapping[str, set[str]]  # the items an item's operations name (blocked_by, parent)
    names_down: Mapping[str, set[str]]  # the items that name it
    created: Mapping[str, tuple[bool, int, Clock, tuple[str, int]]]  # its place, by key


def _indexed(connection: Any) -> _Indexed:
    names: dict[str, list[str]] = defaultdict(list)
    up: dict[str, set[str]] = defaultdict(set)
    down: dict[str, set[str]] = defaultdict(set)
    first: dict[str, tuple[bool, int, tuple[int, int, str, int]]] = {}
    found = connection.execute(
        "SELECT name, position, json_extract(t, '$.item'), json_extract(t, '$.kind'), "
        "json_extract(t, '$.clock[0]'), json_extract(t, '$.clock[1]'), "
        "json_extract(t, '$.fields.blocked_by'), json_extract(t, '$.fields.parent') "
        "FROM (SELECT name, position, CAST(bytes AS TEXT) AS t FROM ops)"
    )
    for name, position, item, kind, wall, logical, deps, parent in found.fetchall():
        names[item].append(name)
        named: set[str] = set()
        if deps is not None:  # a create's list, an update's {"add", "remove"}
            listed = json.loads(deps)
            named |= set(listed if isinstance(listed, list) else listed.get("add", ()))
        if isinstance(parent, str):
            named.add(parent)
        for each in named:
            up[item].add(each)
            down[each].add(item)
        if kind == CREATE:
            origin, _, seq = name.partition("/")
            rank = (position is None, position or 0, (wall, logical, origin, int(seq)))
            if item not in first or rank < first[item]:
                first[item] = rank
    created = {
        item: (unpushed, at, Clock(order[0], order[1]), split_key(item) or ("", 0))
        for item, (unpushed, at, order) in first.items()
    }
    return _Indexed(names, up, down, created)


def _closure(start: Iterable[str], edges: Mapping[str, set[str]]) -> set[str]:
    """`start` and every item reached from it along `edges`."""
    found = set(start)
    stack = list(found)
    while stack:
        for each in edges.get(stack.pop(), ()):
            if each not in found:
                found.add(each)
                stack.append(each)
    return found


def _rebuilt_in_part(
    connection: Any, sync: Sync, remote_level: str, touched: Collection[str]
) -> Replayed | None:
    """The items `touched` and those that hang on them made again (see `rebuild`); None when
    the whole board must be."""
    index = _indexed(connection)
    order = sorted(index.created, key=lambda item: index.created[item])
    base = connection.execute(
        "SELECT COALESCE(max(seq), 0) FROM items WHERE seq NOT IN (SELECT seq FROM keys)"
    ).fetchone()[0]
    numbers = {item: base + place for place, item in enumerate(order, 1)}
    held = dict(connection.execute("SELECT key, seq FROM keys").fetchall())
    if any(numbers.get(item) != seq for item, seq in held.items()):
        return None  # an item moves: every number is made again
    # A dependency's or a parent's change reaches whatever names it, at any depth.
    again = _closure(touched, index.names_down)
    if len(again) * _MOST_IN_PART > len(order):
        return None
    # Replay reads what those name too (what they wait on, what they are part of).
    read = _closure(again, index.names_up)
    wanted = json.dumps(sorted(name for item in read for name in index.names.get(item, ())))
    ops = [
        Entry(parsed(bytes(raw)), position)
        for raw, position in connection.execute(
            "SELECT bytes, position FROM ops WHERE name IN (SELECT value FROM json_each(?))",
            (wanted,),
        ).fetchall()
    ]
    made = replay(ops, ceiling(sync.origin, remote_level))
    items = sorted((made.items[k] for k in again if k in made.items), key=lambda e: numbers[e.key])
    seqs = json.dumps([numbers[each.key] for each in items])
    inside = "IN (SELECT value FROM json_each(?))"
    kept = {
        row[0]: tuple(row[1:])
        for row in connection.execute(
            "SELECT k.key, i.seq, status, assignee, epoch, holder_pid, holder_started, history "
            f"FROM items i JOIN keys k ON k.seq = i.seq WHERE i.seq {inside}",
            (seqs,),
        ).fetchall()
    }
    for table in ("deps", "labels", "comments"):
        connection.execute(f"DELETE FROM {table} WHERE item {inside}", (seqs,))
    connection.execute(f"DELETE FROM events WHERE name IS NOT NULL AND item {inside}", (seqs,))
    connection.execute(f"DELETE FROM items WHERE seq {inside}", (seqs,))
    connection.execute(f"DELETE FROM keys WHERE seq {inside}", (seqs,))
    by_name = {entry.op.name: entry.op for entry in ops}
    for each in items:
        _insert(connection, numbers[each.key], each, kept.get(each.key), by_name)
    for each in items:
        _linked(connection, numbers, each)
    _events(connection, ops, made, sync.origin, numbers, {each.key for each in items})
    connection.execute(
        "UPDATE sqlite_sequence SET seq = ? WHERE name = 'items'", (base + len(order),)
    )
    # The search index takes these items again (start.board.search), and looks at the board's
    # stamp again (its row 0); none yet (or no FTS5): nothing to forget.
    with contextlib.suppress(sqlite3.OperationalError):
        connection.execute(f"DELETE FROM search_index WHERE rowid = 0 OR rowid {inside}", (seqs,))
    return Replayed(
        {each.key: each for each in items},
        tuple(each for each in made.lost if each.item in again),
    )


def _insert(
    connection: Any, seq: int, each: Any, was: tuple[Any, ...] | None, ops: Mapping[str, Op]
) -> None:
    """Insert the row of replayed item `each` as number `seq`; `was`: its row before (status,
    assignee, epoch, holder's pid and start, history), whose local parts it keeps while it is
    as it was."""
    pid = started = history = None
    if was is not None and (was[1], was[2], was[3]) == (each.status, each.holder, each.epoch):
        pid, started, history = was[4], was[5], was[6]
    archived = None
    if each.archived:
        last = [ops[name] for name in each.transitions if ops[name].kind == ARCHIVE]
        archived = stamp(last[-1].clock if last else each.updated)
    connection.execute(
        "INSERT INTO items (seq, title, description, status, assignee, holder_pid, "
        "holder_started, metadata, created_by, run, answer, reason, history, epoch, releases, "
        "created, updated, level, level_by, answer_level, archived, priority) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (seq, sqlite.blob(each.title), sqlite.blob(each.description), each.status,
         each.holder if each.status != PENDING else None, pid, started,
         json.dumps(dict(each.metadata), sort_keys=True), each.created_by,
         None if each.run is None else json.dumps(dict(each.run), sort_keys=True),
         None if each.answer is None else sqlite.blob(each.answer),
         None if each.reason is None else sqlite.blob(each.reason), history, each.epoch,
         each.releases, stamp(each.created), stamp(each.updated), each.level, each.level_by,
         each.answer_level, archived, each.priority),
    )  # fmt: skip
    connection.execute(
        "INSERT INTO keys (seq, key, made) VALUES (?, ?, ?)",
        (seq, each.key, each.transitions[-1]),
    )
    connection.executemany(
        "INSERT INTO labels (item, name) VALUES (?, ?)", [(seq, n) for n in each.labels]
    )
    connection.executemany(
        "INSERT INTO comments (item, at, author, text) VALUES (?, ?, ?, ?)",
        [(seq, stamp(said.clock), said.author, sqlite.blob(said.text)) for said in each.comments],
    )


def _linked(connection: Any, numbers: Mapping[str, int], each: Any) -> None:
    """The dependencies and parent of a replayed item, as the rows' numbers. A key of an item
    this board has not received yet is left out until it arrives."""
    seq = numbers[each.key]
    deps = [numbers[k] for k in each.blocked_by if k in numbers]
    connection.executemany(
        "INSERT INTO deps (item, blocked_by, position) VALUES (?, ?, ?)",
        [(seq, dep, index) for index, dep in enumerate(deps)],
    )
    if each.parent is not None and each.parent in numbers:
        connection.execute("UPDATE items SET parent = ? WHERE seq = ?", (numbers[each.parent], seq))
