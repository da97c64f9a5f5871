"""The board in its SQLite database (start.board has its records, start.board.rows how an item
is kept in a row, start.board.refusals why a change is refused; start.board.file opens it).

Every mutation is one short write transaction, begun at once (start.base.sqlite.writing) so that
writers queue rather than deadlock, and decided by one conditional UPDATE whose row count says
whether the board's rules allowed it; only when they did not is the row read again, in the same
transaction, to say why. Claiming the next ready item selects and claims in one transaction.
WAL mode lets readers go on while a writer writes. Every opening of the board releases the
claims whose process has ended (`sweep`). With sync on for the board (`start board sync`), each
mutation also writes its operation of the log in its transaction (start.board.journal).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from start.base import inputs, sqlite
from start.base.record import Record
from start.board import (
    COMPLETED,
    FAILED,
    FINISHED,
    IN_PROGRESS,
    MOST_RELEASES,
    PENDING,
    USER_LEVEL,
    BadRequestError,
    Change,
    Holder,
    Item,
    NoSuchItemError,
    RefusedError,
    above,
    alive,
    ids,
    item_id,
    journal,
    lowest,
    rows,
    shaping,
)
from start.board.oplog import (
    ARCHIVE,
    CLAIM,
    COMMENT,
    FINISH,
    REASSIGN,
    RELEASE,
    UNARCHIVE,
    split_key,
)
from start.board.refusals import holds, may, refusal, why_not
from start.board.rows import EVERY, Filter
from start.board.transfer import IMPORTED_FROM, PLAN, Incoming, Ref

if TYPE_CHECKING:
    from start.compose.ask import Ask

# How often a watch looks for a change (PRAGMA data_version), and for ended holders, in seconds.
POLL: Final = 0.1
SWEEP_EVERY: Final = 1.0


class Event(Record):
    """One change of an item, as the board keeps it: who did what, and when."""

    at: str
    actor: str
    op: str  # create, claim, update, reassign, release, fail, archive, unarchive
    detail: Mapping[str, Any]


class Comment(Record):
    """One comment on an item: appended, never changed (docs/board.md, "Comments")."""

    at: str
    author: str
    text: str


def now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


class Board:
    """One project's board, open."""

    def __init__(self, connection: sqlite3.Connection, root: str, path: str) -> None:
        self.connection = connection
        self.root = root  # the project root's real path
        self.path = path
        self.swept = 0.0  # time.monotonic() of the last sweep

    def close(self) -> None:
        self.connection.close()

    # --- reads --------------------------------------------------------------------------------

    def _row(self, seq: int) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.connection.execute(
            f"{rows.SELECT} WHERE seq = ?", (seq,)
        ).fetchone()
        return row

    def get(self, id_: str) -> Item:
        """The item of that id; NoSuchItemError when there is none."""
        names = self._names()
        row = self._row(self._seq(id_, names))
        if row is None:
            raise self._no_such(id_, names)
        return rows.item(row, names.show)

    def _get(self, seq: int, names: ids.Names | None = None) -> Item:
        """The item in row `seq` (one that is there), its ids as the board shows them."""
        names = self._names() if names is None else names
        row = self._row(seq)
        if row is None:
            raise self._no_such(names.show(seq), names)
        return rows.item(row, names.show)

    def _names(self) -> ids.Names:
        """How the board names its items now (start.board.ids): made again for each reading
        or change, since a sync may bring origins and renumber rows."""
        return ids.Names(self.connection)

    def _seq(self, id_: str, names: ids.Names) -> int:
        """The row of the item `id_` names; NoSuchItemError when it names none (a row number
        with sync off is not checked here: the caller reads the row)."""
        seq = names.seq(id_)
        if seq is None:
            raise self._no_such(id_, names)
        return seq

    def _no_such(self, id_: str, names: ids.Names | None = None) -> NoSuchItemError:
        names = self._names() if names is None else names
        if names.on:
            others = names.others(id_)
            known = f"did you mean {' or '.join(others)}? " if others else ""
            return NoSuchItemError(
                f"no item {id_} on the board of {self.root} ({known}'start board' lists them)"
            )
        last = self.connection.execute("SELECT max(seq) FROM items").fetchone()[0]
        known = f"ids go from {item_id(1)} to {item_id(last)}" if last else "the board is empty"
        return NoSuchItemError(
            f"no item {id_} on the board of {self.root} ({known}; 'start board' lists them)"
        )

    def shown(self, id_: str) -> str:
        """`id_` as the board shows it (`3` as item-3; with sync on, another machine's item by
        its shortest prefix); spelled as an id (start.board.spelled) when it names no item."""
        names = self._names()
        seq = names.seq(id_)
        if seq is None or self._row(seq) is None:
            from start.board import spelled

            return spelled(id_)
        return names.show(seq)

    def shown_key(self, item_key: str) -> str:
        """The id an item's key (ORIGIN.N, as operations carry it) is shown by now."""
        return self._names().short(item_key)

    def page_key(self, item: Item, by_priority: bool) -> tuple[int, ...]:
        """Where `item` is in a listing's order, as a page's key (rows.key, `after`)."""
        return rows.key(item, by_priority, self._seq(item.id, self._names()))

    def items(
        self,
        found: Filter = EVERY,
        limit: int | None = None,
        *,
        newest: bool = False,
        by_priority: bool = False,
        after: tuple[int, ...] | None = None,
    ) -> tuple[list[Item], int]:
        """The items that match, in the order they were made (`newest`: the latest changed
        first; `by_priority`: the highest priority first, then the oldest, as claims take
        them), at most `limit` of them; and how many match in all.

        `after` is a page's key (rows.key): only the items that come after it in the order,
        whatever was made or changed since (newest, whose key changes, has none)."""
        matched = None
        if found.search is not None:
            from start.board import search

            matched = search.matching(self.connection, found.search)
        names = self._names()
        clause, values = rows.where(found, matched, names.seq)
        counted, counted_values = clause, values
        # The latest change first: `updated`, and within its second the item's latest event.
        latest = "(SELECT max(e.seq) FROM events e WHERE e.item = i.seq) DESC"
        order = f"i.updated DESC, {latest}" if newest else "seq"
        if by_priority:
            order = "i.priority, seq"
        if after is not None:
            assert not newest, "the latest changed first has no key to page by"
            columns = rows.KEY_BY_PRIORITY if by_priority else rows.KEY
            assert len(after) == len(columns), "a key has a value for each of its columns"
            marks = ", ".join("?" for _ in columns)
            keyset = f"({', '.join(columns)}) > ({marks})"
            clause = f"{clause} AND {keyset}" if clause else f" WHERE {keyset}"
            values = [*values, *after]
        sql = f"{rows.SELECT}{clause} ORDER BY {order}"
        if after is not None:  # a later page: how many match in all, not after the key
            count = f"SELECT count(*) FROM items i{counted}"
            total = self.connection.execute(count, counted_values).fetchone()[0]
            suffix, more = ("", []) if limit is None else (" LIMIT ?", [limit])
            found_rows = self.connection.execute(sql + suffix, [*values, *more]).fetchall()
            return [rows.item(row, names.show) for row in found_rows], total
        if limit is None:
            found_rows = self.connection.execute(sql, values).fetchall()
            return [rows.item(row, names.show) for row in found_rows], len(found_rows)
        found_rows = self.connection.execute(sql + " LIMIT ?", [*values, limit]).fetchall()
        total = len(found_rows)
        if total == limit:
            count = f"SELECT count(*) FROM items i{clause}"
            total = self.connection.execute(count, values).fetchone()[0]
        return [rows.item(row, names.show) for row in found_rows], total

    def events(self, id_: str) -> list[Event]:
        """What happened to an item, oldest first."""
        names = self._names()
        seq = self._seq(id_, names)
        if self._row(seq) is None:
            raise self._no_such(id_, names)
        found = self.connection.execute(
            "SELECT at, actor, op, detail FROM events WHERE item = ? ORDER BY seq", (seq,)
        )
        return [
            Event(at, actor, op, _keys_shown(json.loads(detail), names))
            for at, actor, op, detail in found
        ]

    def comments(self, id_: str) -> list[Comment]:
        """The item's comments, oldest first."""
        names = self._names()
        seq = self._seq(id_, names)
        if self._row(seq) is None:
            raise self._no_such(id_, names)
        found = self.connection.execute(
            "SELECT at, author, text FROM comments WHERE item = ? ORDER BY seq", (seq,)
        )
        return [Comment(at, author, sqlite.text(text) or "") for at, author, text in found]

    def answers(self, ids: Sequence[str]) -> list[tuple[Item, str]]:
        """The completed items of `ids`, each with its answer ("" when it has none), in order."""
        kept = []
        names = self._names()
        for id_ in ids:
            seq = names.seq(id_)
            row = None if seq is None else self._row(seq)
            if row is not None and row["status"] == COMPLETED:
                kept.append((rows.item(row, names.show), sqlite.text(row["answer"]) or ""))
        return kept

    def sync(self) -> journal.Sync | None:
        """This board's sync: its origin and when it last synced; None while sync is off."""
        return journal.state(self.connection)

    def unconfirmed(self) -> set[str]:
        """The ids of the items held under a claim not yet pushed (none while sync is off):
        provisional until `start board sync` pushes it (docs/board-sync-design.md)."""
        names = self._names()
        return {names.show(seq) for seq in journal.unconfirmed(self.connection)}

    def key(self, id_: str) -> str | None:
        """The key (ORIGIN.N) of the item `id_` names; None while sync is off."""
        seq = self._names().seq(id_)
        return None if seq is None else journal.key_of(self.connection, seq)

    def by_key(self, item_key: str) -> Item | None:
        """The item whose key is `item_key`, under its number now; None when there is none."""
        seq = journal.numbered(self.connection, item_key)
        return None if seq is None else self._get(seq)

    def version(self) -> int:
        """A number that changes whenever another connection commits (PRAGMA data_version)."""
        found: int = self.connection.execute("PRAGMA data_version").fetchone()[0]
        return found

    # --- writes -------------------------------------------------------------------------------

    def _event(
        self, connection: sqlite3.Connection, seq: int, actor: str, op: str, **detail: Any
    ) -> None:
        if journal.on(connection):  # the history is the log's (start.board.journal writes it)
            return
        connection.execute(
            "INSERT INTO events (at, item, actor, op, detail) VALUES (?, ?, ?, ?, ?)",
            (now(), seq, actor, op, rows.dumps(detail)),
        )

    def _dependencies(
        self, connection: sqlite3.Connection, ids: Sequence[str], seq: int | None
    ) -> list[int]:
        """The numbers of `ids`, once each, checked: each names an item, none is `seq` itself,
        and none waits (through others) on `seq`, which would make a cycle."""
        names = self._names()
        show = names.show
        wanted: list[int] = []
        for id_ in ids:
            found = names.seq(id_)
            if found is None:
                raise NoSuchItemError(
                    f"blocked_by names {id_}, which is not on the board ('start board' lists "
                    "the items)"
                )
            if found not in wanted:
                wanted.append(found)
        if seq is not None and seq in wanted:
            raise BadRequestError(f"{show(seq)} cannot wait on itself (blocked_by)")
        for found in wanted:
            if connection.execute("SELECT 1 FROM items WHERE seq = ?", (found,)).fetchone() is None:
                raise NoSuchItemError(
                    f"blocked_by names {show(found)}, which is not on the board "
                    "('start board' lists the items)"
                )
        if seq is not None and wanted:
            cycle = connection.execute(
                "WITH RECURSIVE up(seq) AS (SELECT value FROM json_each(?) "
                "UNION SELECT d.blocked_by FROM deps d JOIN up ON d.item = up.seq) "
                "SELECT 1 FROM up WHERE seq = ? LIMIT 1",
                (json.dumps(wanted), seq),
            ).fetchone()
            if cycle is not None:
                raise BadRequestError(
                    f"{show(seq)} cannot wait on {', '.join(map(show, wanted))}: one of "
                    f"them waits on {show(seq)}, which would be a cycle that never ends"
                )
        return wanted

    def create(
        self,
        title: str,
        by: Holder,
        description: str = "",
        blocked_by: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        run: Ask | None = None,
        priority: int = inputs.DEFAULT_PRIORITY,
        labels: Sequence[str] = (),
        parent: str | None = None,
    ) -> Item:
        """A new item: pending, unassigned, created by `by`."""
        if not title.strip():
            raise BadRequestError("an item needs a title")
        if metadata is not None:
            inputs.metadata(metadata)
        inputs.priority(priority)
        named = _labels(labels)
        stamp = now()
        with sqlite.writing(self.connection) as connection:
            deps = self._dependencies(connection, blocked_by, None)
            up = None if parent is None else self._parent(connection, parent, None)
            cursor = connection.execute(
                "INSERT INTO items (title, description, status, metadata, created_by, run, "
                "created, updated, level, level_by, priority, parent) "
                "VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (rows.encode("title", title), rows.encode("description", description),
                 rows.encode("metadata", metadata or {}), by.name, rows.encode("run", run),
                 stamp, stamp, by.level, by.name, priority, up),
            )  # fmt: skip
            seq = cursor.lastrowid
            assert seq is not None
            connection.executemany(
                "INSERT INTO deps (item, blocked_by, position) VALUES (?, ?, ?)",
                [(seq, dep, index) for index, dep in enumerate(deps)],
            )
            self._label(connection, seq, named, ())
            shaped: dict[str, Any] = {"level": by.level} if above(USER_LEVEL, by.level) else {}
            if priority != inputs.DEFAULT_PRIORITY:
                shaped["priority"] = priority
            if named:
                shaped["labels"] = list(named)
            if up is not None:
                shaped["parent"] = item_id(up)  # sync off: with sync on the log is the history
                self._nested(connection, [seq])
            self._event(connection, seq, by.name, "create", title=title, **shaped)
            if journal.on(connection):
                journal.as_it_is(connection, seq, by.name)
        return self._get(seq)

    def bring(
        self, incoming: Sequence[Incoming], by: Holder, source: str, *, dry_run: bool = False
    ) -> list[str]:
        """Create the items of a file (an import from `source`, or a plan of `add --file`: source
        "plan"), all or none, in one transaction, so that a reader (a claim) sees none of them
        or all; the new ids, in the file's order. References between the records are rewritten
        to the new ids; one to an item on the board must name one. Nothing a record says raises
        it above `by`: its level is the lower of the file's and the importer's. With `dry_run`
        every check and write is made and then rolled back: the ids are those it would get.

        The records come checked (start.board.transfer): each text within its limit, no cycle
        among them; what it runs is an Ask the caller checked as `add` checks one."""
        stamp = now()
        made: list[int] = []
        shown: list[str] = []
        try:
            with sqlite.writing(self.connection) as connection:
                for each in incoming:
                    made.append(self._brought(connection, each, by, source, stamp))
                for seq, each in zip(made, incoming, strict=True):
                    self._linked(connection, seq, each, made)
                self._nested(connection, made, where=[each.where for each in incoming])
                if journal.on(connection):
                    for seq in made:
                        journal.as_it_is(connection, seq, by.name)
                # Named while their keys are there (a dry run's are rolled back).
                shown = [self._names().show(seq) for seq in made]
                if dry_run:
                    raise _DryRun
        except _DryRun:
            pass
        return shown

    def _brought(
        self, connection: sqlite3.Connection, each: Incoming, by: Holder, source: str, stamp: str
    ) -> int:
        """Insert one record's item, its labels, comments and history: its references wait."""
        level, level_by = by.level, by.name
        if each.level is not None and not above(each.level, by.level):
            level, level_by = each.level, each.level_by or by.name
        answer_level = None
        if each.status == COMPLETED:  # as `done` sets it, with an answer or without
            answer_level = lowest(each.answer_level or by.level, by.level)
        metadata = dict(each.metadata)
        if source != PLAN:
            metadata[IMPORTED_FROM] = {"format": source, "id": each.key}
            try:
                inputs.metadata(metadata)
            except inputs.InputError as error:
                raise inputs.InputError(f"{each.where}: {error}") from None
        cursor = connection.execute(
            "INSERT INTO items (title, description, status, assignee, metadata, created_by, run, "
            "answer, reason, epoch, releases, created, updated, level, level_by, answer_level, "
            "archived, priority) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (rows.encode("title", each.title), rows.encode("description", each.description),
             each.status, each.assignee, rows.encode("metadata", metadata),
             each.created_by or by.name, rows.encode("run", each.run),
             rows.encode("answer", each.answer), rows.encode("reason", each.reason),
             each.epoch, each.releases, each.created or stamp, each.updated or stamp, level,
             level_by, answer_level, each.archived, each.priority),
        )  # fmt: skip
        seq = cursor.lastrowid
        assert seq is not None
        self._label(connection, seq, each.labels, ())
        connection.executemany(
            "INSERT INTO comments (item, at, author, text) VALUES (?, ?, ?, ?)",
            [(seq, at, author, sqlite.blob(text)) for at, author, text in each.comments],
        )
        connection.executemany(
            "INSERT INTO events (at, item, actor, op, detail) VALUES (?, ?, ?, ?, ?)",
            [(at, seq, actor, op, rows.dumps(detail)) for at, actor, op, detail in each.events],
        )
        if source == PLAN:
            shaped: dict[str, Any] = {"level": by.level} if above(USER_LEVEL, by.level) else {}
            if each.priority != inputs.DEFAULT_PRIORITY:
                shaped["priority"] = each.priority
            if each.labels:
                shaped["labels"] = list(each.labels)
            self._event(connection, seq, by.name, "create", title=each.title, **shaped)
        else:
            self._event(connection, seq, by.name, "import", format=source, id=each.key)
        return seq

    def _linked(
        self, connection: sqlite3.Connection, seq: int, each: Incoming, made: Sequence[int]
    ) -> None:
        """A record's dependencies and parent, as the new ids or the board's."""

        def number(ref: Ref, what: str) -> int:
            if ref.new:
                return made[ref.number]
            # item-N: this machine's N-th item (with sync on, its key's; start.board.ids).
            seq = self._names().seq(item_id(ref.number))
            found = connection.execute("SELECT 1 FROM items WHERE seq = ?", (seq,))
            if seq is None or found.fetchone() is None or seq in made:
                raise NoSuchItemError(
                    f"{each.where}: {what} names {item_id(ref.number)}, which is not on the "
                    "board ('start board --all' lists the items)"
                )
            return seq

        deps = [number(ref, "after") for ref in each.blocked_by]
        connection.executemany(
            "INSERT INTO deps (item, blocked_by, position) VALUES (?, ?, ?)",
            [(seq, dep, index) for index, dep in enumerate(deps)],
        )
        if each.parent is not None:
            connection.execute(
                "UPDATE items SET parent = ? WHERE seq = ?", (number(each.parent, "parent"), seq)
            )

    def _label(
        self, connection: sqlite3.Connection, seq: int, add: Sequence[str], remove: Sequence[str]
    ) -> None:
        """Add and remove labels of an item; BadRequestError when it would have too many."""
        connection.executemany(
            "DELETE FROM labels WHERE item = ? AND name = ?", [(seq, name) for name in remove]
        )
        connection.executemany(
            "INSERT OR IGNORE INTO labels (item, name) VALUES (?, ?)", [(seq, name) for name in add]
        )
        if add:
            found = connection.execute("SELECT count(*) FROM labels WHERE item = ?", (seq,))
            count = found.fetchone()[0]
            if count > inputs.LABELS:
                raise BadRequestError(
                    f"{self._names().show(seq)} would have {count} labels, over the limit of "
                    f"{inputs.LABELS}; remove some (--unlabel NAME)"
                )

    def _nested(
        self,
        connection: sqlite3.Connection,
        seqs: Sequence[int],
        *,
        below: bool = False,
        where: Sequence[str] = (),
    ) -> None:
        """BadRequestError when one of these items (`below`: or an item part of one, at any
        depth) is more than inputs.DEPTH levels deep; `where`: each one's place in a file."""
        part = "UNION SELECT c.seq FROM items c JOIN given ON c.parent = given.seq" if below else ""
        found = connection.execute(
            f"""WITH RECURSIVE
                given(seq) AS (SELECT value FROM json_each(:seqs) {part}),
                up(first, seq, depth) AS (SELECT seq, seq, 1 FROM given
                    UNION ALL SELECT up.first, i.parent, up.depth + 1 FROM up
                    JOIN items i ON i.seq = up.seq
                    WHERE i.parent IS NOT NULL AND up.depth <= :most)
            SELECT first FROM up WHERE depth > :most LIMIT 1""",
            {"seqs": json.dumps(list(seqs)), "most": inputs.DEPTH},
        ).fetchone()
        if found is None:
            return
        item_id = self._names().show
        if where:
            place, fix = f"{where[seqs.index(found[0])]}: ", "nest the file's items less deeply"
        elif below:
            place, fix = "", f"make {item_id(seqs[0])} part of an item nearer the top, or of none"
        else:
            place, fix = "", "make it part of an item nearer the top (--parent ID)"
        raise BadRequestError(
            f"{place}{item_id(found[0])} would be more than {inputs.DEPTH} levels deep under "
            f"its parents, the limit; {fix}"
        )

    def _parent(self, connection: sqlite3.Connection, id_: str, seq: int | None) -> int:
        """The number of the parent `id_` for the item `seq` (None: a new item), checked: it
        names an item, and not `seq` or one of its descendants, which would be a loop."""
        names = self._names()
        item_id = names.show
        given = names.seq(id_)
        found = 0 if given is None else given
        if connection.execute("SELECT 1 FROM items WHERE seq = ?", (found,)).fetchone() is None:
            raise NoSuchItemError(
                f"--parent names {id_ if given is None else item_id(found)}, which is not on "
                "the board ('start board' lists the items)"
            )
        if seq is None:
            return found
        if found == seq:
            raise BadRequestError(f"{item_id(seq)} cannot be its own parent")
        # The parent's ancestors, nearest first: `seq` among them would make it its own.
        chain = [found]
        while chain[-1] != seq:
            up = connection.execute("SELECT parent FROM items WHERE seq = ?", (chain[-1],))
            above_ = up.fetchone()
            if above_ is None or above_[0] is None or above_[0] in chain:
                return found
            chain.append(above_[0])
        path = " > ".join(item_id(each) for each in reversed(chain))
        raise BadRequestError(
            f"{item_id(seq)} cannot be part of {item_id(found)}: {item_id(found)} is part of "
            f"{item_id(seq)} ({path}), and an item cannot be its own descendant"
        )

    def claim(self, id_: str, holder: Holder) -> Item:
        """Take a pending item whose dependencies are completed: it is in progress, held by
        `holder`, its epoch one more. Claiming it again as its holder is no change. Raises
        RefusedError when it is another's, blocked or finished, or runs above the level of
        `holder` (board.shaping)."""
        with sqlite.writing(self.connection) as connection:
            names = self._names()
            seq = self._seq(id_, names)
            row = self._row(seq)
            if row is None:
                raise self._no_such(id_, names)
            item = rows.item(row, names.show)
            if holds(row, holder):
                return item
            why = shaping(item, holder, "claim")
            if why is not None:
                raise RefusedError(why)
            if self._take(connection, seq, holder):
                return self._get(seq)
            raise RefusedError(refusal(item, "claim"))

    def _take(self, connection: sqlite3.Connection, seq: int, holder: Holder) -> bool:
        cursor = connection.execute(
            "UPDATE items SET status = 'in_progress', assignee = ?, holder_pid = ?, "
            "holder_started = ?, epoch = epoch + 1, updated = ? "
            "WHERE seq = ? AND status = 'pending' AND archived IS NULL AND NOT "
            + rows.BLOCKED.format(row="items"),
            (holder.name, holder.pid, holder.started, now(), seq),
        )
        if cursor.rowcount != 1:
            return False
        # A person's claim has no process: its history says nothing of one (not pid=None).
        held = {"pid": holder.pid} if holder.pid is not None else {}
        self._event(connection, seq, holder.name, "claim", **held)
        journal.write(connection, seq, holder.name, holder.level, CLAIM, {}, moved=True)
        return True

    def claim_next(
        self,
        holder: Holder,
        *,
        runnable: bool = False,
        labels: tuple[str, ...] = (),
        steps: bool = False,
    ) -> Item | None:
        """Claim the first ready item (with something to run, if `runnable`; with every one of
        `labels`; a workflow run's step only with `steps`, as the run's runner claims: see
        rows.STEP_MARK), by priority, then age: chosen and claimed in one transaction, so no
        two callers get the same one. None when none is ready."""
        found = Filter(ready=True, runnable=runnable, labels=labels, steps=steps)
        clause, values = rows.where(found)
        with sqlite.writing(self.connection) as connection:
            # Below the user's level, the first ready item that runs at its level, or nothing.
            restricted = above(USER_LEVEL, holder.level)
            show = self._names().show
            first = "" if restricted else " LIMIT 1"
            sql = f"SELECT seq FROM items i{clause} ORDER BY i.priority, seq{first}"
            for (seq,) in connection.execute(sql, values).fetchall():
                if restricted:
                    row = self._row(seq)
                    if row is None or shaping(rows.item(row, show), holder, "claim") is not None:
                        continue
                taken = self._take(connection, seq, holder)
                assert taken, "the write lock is held: the ready item cannot have changed"
                break
            else:
                return None
        return self._get(seq)

    def update(self, id_: str, by: Holder, change: Change, epoch: int | None = None) -> Item:
        """Apply a partial change, as the board's rules allow `by` (docs/board.md, "Rules"):
        an item in progress changes only by its holder, whose writes carry the epoch of its
        claim when it knows it (`epoch`); a completed item keeps everything but its metadata;
        an item cannot complete while blocked; `in_progress` comes only from a claim.

        Who shaped an item bounds how it runs (board.shaping): a change of what an item runs
        (its text, its dependencies, its status) by a caller below the level it runs at is
        refused; a caller's text or dependencies lower the item's level to the caller's; an
        agent's session finishes an item that runs something only when it holds it.

        Raises RefusedError, NoSuchItemError or BadRequestError, and changes nothing then."""
        to = change.status
        if to == IN_PROGRESS:
            raise BadRequestError(
                f"an item goes in progress only by a claim: start board claim {id_} "
                "(board_tasks_claim over MCP)"
            )
        fields = change.shapes
        if change.title is not None and not change.title.strip():
            raise BadRequestError("an item needs a title")
        if to is None:
            free = [PENDING] if fields else [PENDING, COMPLETED, FAILED]
        elif to == PENDING:
            free = [PENDING, FAILED]
        else:
            free = [PENDING]
        patch = None
        if change.metadata is not None:
            patch = rows.encode("metadata", inputs.metadata(change.metadata))
        if change.priority is not None:
            inputs.priority(change.priority)
        added, removed = _labels(change.add_labels or ()), _labels(change.remove_labels or ())
        stamp = now()
        with sqlite.writing(self.connection) as connection:
            names = self._names()
            seq = self._seq(id_, names)
            row = self._row(seq)
            if row is None:
                raise self._no_such(id_, names)
            item = rows.item(row, names.show)
            may(item, row, by, change)
            level, level_by = item.level, item.level_by
            if fields and above(level, by.level):
                level, level_by = by.level, by.name
            wanted = _edited(item, change, names)
            if wanted is not None:
                deps = self._dependencies(connection, wanted, seq)
                connection.execute("DELETE FROM deps WHERE item = ?", (seq,))
                connection.executemany(
                    "INSERT INTO deps (item, blocked_by, position) VALUES (?, ?, ?)",
                    [(seq, dep, index) for index, dep in enumerate(deps)],
                )
            self._label(connection, seq, added, removed)
            reparent, up = change.parent is not None, None
            if change.parent:
                up = self._parent(connection, change.parent, seq)
            if patch is not None:
                self._merged(connection, seq, patch)
            # The statuses in which anyone may make this change: constants, not input.
            marks = ", ".join(f"'{status}'" for status in free)
            cursor = connection.execute(
                f"""UPDATE items SET
                    status = COALESCE(:to, status),
                    assignee = CASE WHEN :to = 'pending' THEN NULL
                        WHEN :to IN ('completed', 'failed') AND status = 'pending' THEN :name
                        ELSE assignee END,
                    holder_pid = CASE WHEN :to IS NULL THEN holder_pid END,
                    holder_started = CASE WHEN :to IS NULL THEN holder_started END,
                    title = COALESCE(:title, title),
                    description = COALESCE(:description, description),
                    run = COALESCE(:run, run),
                    priority = COALESCE(:priority, priority),
                    parent = CASE WHEN :reparent THEN :parent ELSE parent END,
                    metadata = CASE WHEN :patch IS NULL THEN metadata
                        ELSE json_patch(metadata, :patch) END,
                    answer = CASE WHEN :to = 'completed' THEN :answer
                        WHEN :to = 'pending' THEN NULL ELSE answer END,
                    answer_level = CASE WHEN :to = 'completed' THEN :answer_level
                        WHEN :to = 'pending' THEN NULL ELSE answer_level END,
                    level = :level,
                    level_by = :level_by,
                    reason = CASE WHEN :to = 'failed' THEN :reason
                        WHEN :to = 'pending' THEN NULL ELSE reason END,
                    history = CASE WHEN :to IN ('completed', 'failed') THEN :history
                        WHEN :to = 'pending' THEN NULL ELSE history END,
                    releases = CASE WHEN :to = 'pending' AND status = 'failed' THEN 0
                        ELSE releases END,
                    updated = :stamp
                WHERE seq = :seq
                    AND ((status = 'in_progress' AND assignee = :name
                            AND (:epoch IS NULL OR epoch = :epoch)
                            AND (holder_pid IS NULL
                                OR (holder_pid IS :pid AND holder_started IS :started)))
                        OR status IN ({marks}))
                    AND (:to IS NOT 'completed' OR NOT {rows.BLOCKED.format(row="items")})""",
                {
                    "to": to,
                    "name": by.name,
                    "pid": by.pid,
                    "started": by.started,
                    "epoch": epoch,
                    "title": rows.encode("title", change.title),
                    "description": rows.encode("description", change.description),
                    "run": rows.encode("run", change.run),
                    "patch": patch,
                    "answer": rows.encode("answer", change.answer),
                    "answer_level": change.answer_level or by.level,
                    "level": level,
                    "level_by": level_by,
                    "reason": rows.encode("reason", change.reason),
                    "history": change.history,
                    "priority": change.priority,
                    "reparent": reparent,
                    "parent": up,
                    "stamp": stamp,
                    "seq": seq,
                },
            )
            if cursor.rowcount == 1:
                if up is not None:
                    self._nested(connection, [seq], below=True)
                detail = {
                    key: value
                    for key, value in zip(Change._fields, change, strict=True)
                    if value is not None and key not in ("answer", "reason")
                }
                if change.reason is not None:
                    detail["reason"] = change.reason
                for key in ("add_blocked_by", "remove_blocked_by"):
                    if key in detail:  # the ids as the board names them
                        detail[key] = [_shown(names, id_) for id_ in detail[key]]
                if change.parent is not None:
                    del detail["parent"]
                    detail.update({"parent": names.show(up)} if up else {"no_parent": True})
                if change.run is not None:  # what a person sees of it, as `run` over MCP
                    ask = change.run
                    named = (("agent", ask.agent), ("prompt", ask.prompt), ("task", ask.task),
                             ("model", ask.model), ("permissions", ask.permissions))  # fmt: skip
                    detail["run"] = {key: value for key, value in named if value is not None}
                if to == COMPLETED and above(USER_LEVEL, change.answer_level or by.level):
                    detail["answer_level"] = change.answer_level or by.level
                if fields and above(USER_LEVEL, by.level):
                    detail["level"] = by.level
                self._event(connection, seq, by.name, "update", **_plain(detail))
                if journal.on(connection):
                    after = self._row(seq)
                    assert after is not None
                    journal.changed(connection, seq, by.name, by.level, item,
                                    rows.item(after, names.show),
                                    change.answer_level or by.level)  # fmt: skip
            else:
                row = self._row(seq)
                if row is None:
                    raise self._no_such(id_, names)
                raise RefusedError(why_not(rows.item(row, names.show), row, by, change, epoch))
        return self._get(seq)

    def _merged(self, connection: sqlite3.Connection, seq: int, patch: str) -> None:
        """Refuse a metadata patch that would leave the item's metadata over its limit.

        Metadata that an earlier start stored with NaN or Infinity, which SQLite's JSON does not
        read, is first stored as it is shown (start.base.inputs.readable), so that it can change."""
        row = connection.execute("SELECT metadata FROM items WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            return
        kept = row[0]
        try:
            merged = connection.execute("SELECT json_patch(?, ?)", (kept, patch)).fetchone()[0]
        except sqlite3.OperationalError:  # malformed JSON: NaN, Infinity
            kept = rows.dumps(inputs.readable(json.loads(kept)))
            connection.execute("UPDATE items SET metadata = ? WHERE seq = ?", (kept, seq))
            merged = connection.execute("SELECT json_patch(?, ?)", (kept, patch)).fetchone()[0]
        inputs.merged_metadata(json.loads(merged), self._names().show(seq))

    def reassign(self, id_: str, name: str, by: Holder) -> Item:
        """Hand an unfinished, unblocked item to `name`: it is in progress, held by that name
        (not by a process), and its epoch one more, which fences out the old holder: its writes
        that carry the old epoch are refused."""
        with sqlite.writing(self.connection) as connection:
            names = self._names()
            seq = self._seq(id_, names)
            cursor = connection.execute(
                "UPDATE items SET status = 'in_progress', assignee = ?, holder_pid = NULL, "
                "holder_started = NULL, epoch = epoch + 1, updated = ? WHERE seq = ? "
                "AND status IN ('pending', 'in_progress') AND archived IS NULL AND NOT "
                + rows.BLOCKED.format(row="items"),
                (name, now(), seq),
            )
            if cursor.rowcount == 1:
                self._event(connection, seq, by.name, "reassign", to=name)
                journal.write(connection, seq, by.name, by.level, REASSIGN, {"to": name},
                              moved=True)  # fmt: skip
            else:
                row = self._row(seq)
                if row is None:
                    raise self._no_such(id_, names)
                raise RefusedError(refusal(rows.item(row, names.show), "reassign"))
        return self._get(seq)

    def comment(self, id_: str, by: Holder, text: str) -> Comment:
        """Append `text` (1 to TEXT_LIMIT characters) to the item's comments, as `by`. Anyone
        who may see the board may comment on any item, held or finished: a comment changes
        nothing that runs. The comment as kept."""
        inputs.text(text, least=1)
        kept = Comment(now(), by.name, text)
        with sqlite.writing(self.connection) as connection:
            seq = self._seq(id_, self._names())
            cursor = connection.execute(
                "INSERT INTO comments (item, at, author, text) SELECT seq, ?, ?, ? FROM items "
                "WHERE seq = ?",
                (kept.at, kept.author, sqlite.blob(text), seq),
            )
            if cursor.rowcount != 1:
                raise self._no_such(id_)
            connection.execute("UPDATE items SET updated = ? WHERE seq = ?", (kept.at, seq))
            journal.write(connection, seq, by.name, by.level, COMMENT, {"text": text})
        return kept

    def archive(self, ids: Sequence[str], by: Holder, *, archived: bool = True) -> list[Item]:
        """Archive the items (or, not `archived`, bring them back), all or none: an archived
        item is left out of listings, of `--ready` and of claims, and keeps everything else. An
        item in progress cannot be archived: RefusedError, and nothing changes. An item that is
        so already stays as it is. The items as they are now."""
        stamp = now()
        with sqlite.writing(self.connection) as connection:
            names = self._names()
            item_id = names.show
            seqs = list(dict.fromkeys(self._seq(id_, names) for id_ in ids))
            for seq in seqs:
                if archived:
                    cursor = connection.execute(
                        "UPDATE items SET archived = ?, updated = ? WHERE seq = ? "
                        "AND archived IS NULL AND status <> 'in_progress'",
                        (stamp, stamp, seq),
                    )
                else:
                    cursor = connection.execute(
                        "UPDATE items SET archived = NULL, updated = ? WHERE seq = ? "
                        "AND archived IS NOT NULL",
                        (stamp, seq),
                    )
                if cursor.rowcount == 1:
                    self._event(connection, seq, by.name, "archive" if archived else "unarchive")
                    kind = ARCHIVE if archived else UNARCHIVE
                    journal.write(connection, seq, by.name, by.level, kind, {})
                    continue
                row = self._row(seq)
                if row is None:
                    raise self._no_such(item_id(seq), names)
                if archived and row["archived"] is None:
                    raise RefusedError(
                        f"{item_id(seq)} is held by {row['assignee']} (in_progress): an item in "
                        "progress cannot be archived; its holder finishes it or lets it go "
                        f"first (start board done {item_id(seq)}, or start board update "
                        f"{item_id(seq)} --status pending)"
                    )
            shown = [self._get(seq, names) for seq in seqs]
        return shown

    def sweep(self) -> list[Item]:
        """Release every claim whose process has ended (a reused pid does not count): the item
        is pending again, or failed once released MOST_RELEASES times. The items let go of."""
        self.swept = time.monotonic()
        held = self.connection.execute(
            "SELECT seq, assignee, holder_pid, holder_started, epoch, releases FROM items "
            "WHERE status = 'in_progress' AND holder_pid IS NOT NULL"
        ).fetchall()
        ended = [row for row in held if not alive(Holder(row[1], row[2], row[3]))]
        if not ended:
            return []
        released = []
        with sqlite.writing(self.connection) as connection:
            for seq, name, pid, _, epoch, releases in ended:
                count = releases + 1
                gone = f"its holder {name} (pid {pid}) ended without finishing it"
                if count >= MOST_RELEASES:
                    status = FAILED
                    reason = (
                        f"released {count} times: each time its holder's process ended without "
                        f"finishing it (the last: {name}, pid {pid})"
                    )
                else:
                    status = PENDING
                    reason = f"released ({count} of {MOST_RELEASES - 1} before it fails): {gone}"
                cursor = connection.execute(
                    "UPDATE items SET status = ?, assignee = CASE WHEN ? = 'failed' THEN "
                    "assignee END, holder_pid = NULL, holder_started = NULL, releases = ?, "
                    "reason = ?, updated = ? WHERE seq = ? AND epoch = ? AND status = "
                    "'in_progress' AND holder_pid IS ?",
                    (status, status, count, rows.encode("reason", reason), now(), seq, epoch, pid),
                )
                if cursor.rowcount == 1:
                    op = "fail" if status == FAILED else "release"
                    self._event(connection, seq, "start", op, holder=name, pid=pid)
                    self._logged_release(connection, seq, name, status, reason)
                    released.append(seq)
        names = self._names()
        return [self._get(seq, names) for seq in released]

    def _logged_release(
        self, connection: sqlite3.Connection, seq: int, name: str, status: str, reason: str
    ) -> None:
        """The log's side of the watchdog's release (sync on): this machine lets go of its
        holder's claim (a release replay takes from the holder's origin), and an item released
        MOST_RELEASES times is then failed, as if by its holder."""
        said = {"counted": True, "reason": reason}
        if journal.write(connection, seq, journal.BOARD_AUTHOR, USER_LEVEL, RELEASE, said) is None:
            return
        if status == FAILED:
            finish = {"status": FAILED, "reason": reason}
            journal.write(connection, seq, journal.author(name), USER_LEVEL, FINISH, finish)

    def poll(self, id_: str, since: int | None) -> tuple[Item | None, int]:
        """For a watch: the item when the board changed since version `since` (always, when
        `since` is None), else None; and the version now. Sweeps every SWEEP_EVERY seconds."""
        swept = []
        if time.monotonic() - self.swept >= SWEEP_EVERY:
            swept = self.sweep()
        version = self.version()
        if since is None or version != since or swept:
            return self.get(id_), version
        return None, version

    def watch(
        self,
        id_: str,
        timeout: float | None,
        told: Callable[[Item], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Item:
        """Wait until the item is completed or failed, or `timeout` seconds pass (None: no
        limit); the item as last read. `told` is given the item each time it changes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        item, version = self.poll(id_, None)
        assert item is not None
        if told is not None:
            told(item)
        while item.status not in FINISHED:
            if deadline is not None and time.monotonic() >= deadline:
                break
            sleep(POLL)
            changed, version = self.poll(id_, version)
            if changed is not None:
                if told is not None and changed != item:
                    told(changed)
                item = changed
        return item


class _DryRun(Exception):
    """Rolls back the transaction of a dry run (Board.bring)."""


def _labels(given: Sequence[str]) -> tuple[str, ...]:
    """Labels, each checked (start.base.inputs.label), once each, in order."""
    return tuple(dict.fromkeys(inputs.label(label) for label in given))


def _keys_shown(detail: dict[str, Any], names: ids.Names) -> dict[str, Any]:
    """An event's detail with the keys its operation carries (`parent`, `blocked_by`: ORIGIN.N)
    as the ids the board shows; with sync off, as it is."""
    if not names.on:
        return detail

    def shown(value: Any) -> Any:
        if isinstance(value, str):
            return value if split_key(value) is None else names.short(value)
        if isinstance(value, list):
            return [shown(each) for each in value]
        if isinstance(value, dict):
            return {part: shown(each) for part, each in value.items()}
        return value

    return {
        name: shown(value) if name in ("parent", "blocked_by") else value
        for name, value in detail.items()
    }


def _shown(names: ids.Names, id_: str) -> str:
    """`id_` as the board shows it (`3` as item-3); as given when it names no item."""
    seq = names.seq(id_)
    return id_ if seq is None else names.show(seq)


def _edited(item: Item, change: Change, names: ids.Names) -> list[str] | None:
    """What `item` waits on after `change`: its whole `blocked_by`, or its own with
    `add_blocked_by` added at the end and `remove_blocked_by` taken out; None: no change.
    Removing what it does not wait on is refused: the id is likely mistyped."""
    if change.blocked_by is not None:
        return list(change.blocked_by)
    if change.add_blocked_by is None and change.remove_blocked_by is None:
        return None
    kept = list(item.blocked_by)
    for id_ in change.add_blocked_by or ():
        if _shown(names, id_) not in kept:
            kept.append(_shown(names, id_))
    for id_ in change.remove_blocked_by or ():
        if _shown(names, id_) not in kept:
            waits = ", ".join(item.blocked_by) or "nothing"
            raise BadRequestError(
                f"{item.id} does not wait on {_shown(names, id_)} (it waits on {waits}): "
                "nothing to remove"
            )
        kept.remove(_shown(names, id_))
    return kept


def _plain(detail: Mapping[str, Any]) -> dict[str, Any]:
    """A change's fields as JSON values (tuples as lists, mappings as objects)."""
    return {
        key: list(value) if isinstance(value, tuple) else dict(value)
        if isinstance(value, Mapping) else value
        for key, value in detail.items()
    }  # fmt: skip
