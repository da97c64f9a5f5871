"""The board in its SQLite database (start.board has its records; start.board.file opens it).

Every mutation is one short write transaction, begun at once (BEGIN IMMEDIATE) so that writers
queue rather than deadlock, and decided by one conditional UPDATE whose row count says whether the
board's rules allowed it; only when they did not is the row read again, in the same transaction,
to say why. Claiming the next ready item selects and claims in one transaction. WAL mode lets
readers go on while a writer writes. Every opening of the board releases the claims whose
process has ended (`sweep`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Final

from start.base import inputs
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
    item_id,
    number,
    shaping,
    waiting,
)
from start.compose.ask import Ask, from_data
from start.compose.ask import data as ask_data

# How often a watch looks for a change (PRAGMA data_version), and for ended holders, in seconds.
POLL: Final = 0.1
SWEEP_EVERY: Final = 1.0

# Whether an item (the row `i` of an UPDATE or a SELECT) waits on a dependency that is not
# completed, or not there at all.
_BLOCKED: Final = (
    "EXISTS (SELECT 1 FROM deps d LEFT JOIN items b ON b.seq = d.blocked_by "
    "WHERE d.item = {row}.seq AND (b.status IS NULL OR b.status <> 'completed'))"
)
# Each dependency of an item as `POSITION ID STATUS`, STATUS `-` for a missing one.
_DEPS: Final = (
    "(SELECT group_concat(d.position || ' ' || d.blocked_by || ' ' || COALESCE(b.status, '-'), "
    "',') FROM deps d LEFT JOIN items b ON b.seq = d.blocked_by WHERE d.item = i.seq)"
)
_COLUMNS: Final = (
    "seq, title, description, status, assignee, holder_pid, holder_started, metadata, "
    "created_by, run, answer, reason, history, epoch, releases, created, updated, level, "
    "level_by, answer_level"
)


class Event(Record):
    """One change of an item, as the board keeps it: who did what, and when."""

    at: str
    actor: str
    op: str  # create, claim, update, reassign, release, fail
    detail: Mapping[str, Any]


class Filter(Record):
    """Which items a listing shows; None (and False) leave a dimension open."""

    statuses: tuple[str, ...] = ()
    assignee: str | None = None
    blocked: bool | None = None
    ready: bool = False  # pending and not blocked
    runnable: bool = False  # with something for `start board run` to run
    ids: tuple[str, ...] = ()  # only these items (those that are there)


EVERY: Final = Filter()


def now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def _blob(text: str | None) -> bytes | None:
    """Free text as stored: any Python string, lone surrogates included, round-trips."""
    return None if text is None else text.encode("utf-8", "surrogatepass")


def _text(value: bytes | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", "surrogatepass")


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def _run(text: str | None) -> Ask | None:
    if text is None:
        return None
    data = json.loads(text)
    return from_data(data)


def _item(row: sqlite3.Row) -> Item:
    """A row of `_COLUMNS` and `deps` as an Item."""
    found = []
    for part in (row["deps"] or "").split(","):
        if part:
            position, dependency, status = part.split(" ")
            found.append(
                (int(position), item_id(int(dependency)), None if status == "-" else status)
            )
    found.sort()
    reasons = (waiting(dependency, status) for _, dependency, status in found)
    return Item(
        id=item_id(row["seq"]),
        title=_text(row["title"]) or "",
        description=_text(row["description"]) or "",
        status=row["status"],
        assignee=row["assignee"],
        blocked_by=tuple(dependency for _, dependency, _ in found),
        blocked=tuple(reason for reason in reasons if reason is not None),
        metadata=json.loads(row["metadata"]),
        created_by=row["created_by"],
        run=_run(row["run"]),
        answer=_text(row["answer"]),
        reason=_text(row["reason"]),
        history=row["history"],
        epoch=row["epoch"],
        releases=row["releases"],
        created=row["created"],
        updated=row["updated"],
        level=row["level"],
        level_by=row["level_by"],
        answer_level=row["answer_level"],
    )


class Board:
    """One project's board, open."""

    def __init__(self, connection: sqlite3.Connection, root: str, path: str) -> None:
        self.connection = connection
        self.root = root  # the project root's real path
        self.path = path
        self.swept = 0.0  # time.monotonic() of the last sweep

    def close(self) -> None:
        self.connection.close()

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, begun at once so that writers queue rather than deadlock."""
        connection = self.connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    # --- reads --------------------------------------------------------------------------------

    def _row(self, seq: int) -> sqlite3.Row | None:
        sql = f"SELECT {_COLUMNS}, {_DEPS} AS deps FROM items i WHERE seq = ?"
        row: sqlite3.Row | None = self.connection.execute(sql, (seq,)).fetchone()
        return row

    def get(self, id_: str) -> Item:
        """The item of that id; NoSuchItemError when there is none."""
        row = self._row(number(id_))
        if row is None:
            raise self._no_such(id_)
        return _item(row)

    def _no_such(self, id_: str) -> NoSuchItemError:
        last = self.connection.execute("SELECT max(seq) FROM items").fetchone()[0]
        known = f"ids go from {item_id(1)} to {item_id(last)}" if last else "the board is empty"
        return NoSuchItemError(
            f"no item {id_} on the board of {self.root} ({known}; 'start board' lists them)"
        )

    def items(self, found: Filter = EVERY, limit: int | None = None) -> tuple[list[Item], int]:
        """The items that match, in the order they were made, at most `limit` of them; and how
        many match in all."""
        where, values = _where(found)
        sql = f"SELECT {_COLUMNS}, {_DEPS} AS deps FROM items i{where} ORDER BY seq"
        if limit is None:
            rows = self.connection.execute(sql, values).fetchall()
            return [_item(row) for row in rows], len(rows)
        rows = self.connection.execute(sql + " LIMIT ?", [*values, limit]).fetchall()
        total = len(rows)
        if total == limit:
            count = f"SELECT count(*) FROM items i{where}"
            total = self.connection.execute(count, values).fetchone()[0]
        return [_item(row) for row in rows], total

    def events(self, id_: str) -> list[Event]:
        """What happened to an item, oldest first."""
        self.get(id_)  # NoSuchItemError for an item that is not there
        rows = self.connection.execute(
            "SELECT at, actor, op, detail FROM events WHERE item = ? ORDER BY seq",
            (number(id_),),
        )
        return [Event(at, actor, op, json.loads(detail)) for at, actor, op, detail in rows]

    def answers(self, ids: Sequence[str]) -> list[tuple[Item, str]]:
        """The completed items of `ids`, each with its answer ("" when it has none), in order."""
        kept = []
        for id_ in ids:
            row = self._row(number(id_))
            if row is not None and row["status"] == COMPLETED:
                kept.append((_item(row), _text(row["answer"]) or ""))
        return kept

    def version(self) -> int:
        """A number that changes whenever another connection commits (PRAGMA data_version)."""
        found: int = self.connection.execute("PRAGMA data_version").fetchone()[0]
        return found

    # --- writes -------------------------------------------------------------------------------

    def _event(
        self, connection: sqlite3.Connection, seq: int, actor: str, op: str, **detail: Any
    ) -> None:
        connection.execute(
            "INSERT INTO events (at, item, actor, op, detail) VALUES (?, ?, ?, ?, ?)",
            (now(), seq, actor, op, _json(detail)),
        )

    def _dependencies(
        self, connection: sqlite3.Connection, ids: Sequence[str], seq: int | None
    ) -> list[int]:
        """The numbers of `ids`, once each, checked: each names an item, none is `seq` itself,
        and none waits (through others) on `seq`, which would make a cycle."""
        wanted: list[int] = []
        for id_ in ids:
            found = number(id_)
            if found not in wanted:
                wanted.append(found)
        if seq is not None and seq in wanted:
            raise BadRequestError(f"{item_id(seq)} cannot wait on itself (blocked_by)")
        for found in wanted:
            if connection.execute("SELECT 1 FROM items WHERE seq = ?", (found,)).fetchone() is None:
                raise NoSuchItemError(
                    f"blocked_by names {item_id(found)}, which is not on the board "
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
                    f"{item_id(seq)} cannot wait on {', '.join(map(item_id, wanted))}: one of "
                    f"them waits on {item_id(seq)}, which would be a cycle that never ends"
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
    ) -> Item:
        """A new item: pending, unassigned, created by `by`."""
        if not title.strip():
            raise BadRequestError("an item needs a title")
        if metadata is not None:
            inputs.metadata(metadata)
        stamp = now()
        with self._writing() as connection:
            deps = self._dependencies(connection, blocked_by, None)
            spec = _json(ask_data(run)) if run else None
            cursor = connection.execute(
                "INSERT INTO items (title, description, status, metadata, created_by, run, "
                "created, updated, level, level_by) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)",
                (_blob(title), _blob(description), _json(dict(metadata or {})), by.name, spec,
                 stamp, stamp, by.level, by.name),
            )  # fmt: skip
            seq = cursor.lastrowid
            assert seq is not None
            connection.executemany(
                "INSERT INTO deps (item, blocked_by, position) VALUES (?, ?, ?)",
                [(seq, dep, index) for index, dep in enumerate(deps)],
            )
            shaped = {"level": by.level} if above(USER_LEVEL, by.level) else {}
            self._event(connection, seq, by.name, "create", title=title, **shaped)
        return self.get(item_id(seq))

    def claim(self, id_: str, holder: Holder) -> Item:
        """Take a pending item whose dependencies are completed: it is in progress, held by
        `holder`, its epoch one more. Claiming it again as its holder is no change. Raises
        RefusedError when it is another's, blocked or finished, or runs above the level of
        `holder` (board.shaping)."""
        seq = number(id_)
        with self._writing() as connection:
            row = self._row(seq)
            if row is None:
                raise self._no_such(id_)
            item = _item(row)
            if _holds(row, holder):
                return item
            why = shaping(item, holder, "claim")
            if why is not None:
                raise RefusedError(why)
            if self._take(connection, seq, holder):
                return self.get(id_)
            raise RefusedError(_refusal(item, "claim"))

    def _take(self, connection: sqlite3.Connection, seq: int, holder: Holder) -> bool:
        cursor = connection.execute(
            "UPDATE items SET status = 'in_progress', assignee = ?, holder_pid = ?, "
            "holder_started = ?, epoch = epoch + 1, updated = ? "
            f"WHERE seq = ? AND status = 'pending' AND NOT {_BLOCKED.format(row='items')}",
            (holder.name, holder.pid, holder.started, now(), seq),
        )
        if cursor.rowcount != 1:
            return False
        self._event(connection, seq, holder.name, "claim", pid=holder.pid)
        return True

    def claim_next(self, holder: Holder, *, runnable: bool = False) -> Item | None:
        """Claim the first ready item (with something to run, if `runnable`): chosen and claimed
        in one transaction, so no two callers get the same one. None when none is ready."""
        where, values = _where(Filter(ready=True, runnable=runnable))
        with self._writing() as connection:
            # Below the user's level, the first ready item that runs at its level, or nothing.
            restricted = above(USER_LEVEL, holder.level)
            sql = f"SELECT seq FROM items i{where} ORDER BY seq{'' if restricted else ' LIMIT 1'}"
            for (seq,) in connection.execute(sql, values).fetchall():
                if restricted:
                    row = self._row(seq)
                    if row is None or shaping(_item(row), holder, "claim") is not None:
                        continue
                taken = self._take(connection, seq, holder)
                assert taken, "the write lock is held: the ready item cannot have changed"
                break
            else:
                return None
        return self.get(item_id(seq))

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
        seq = number(id_)
        to = change.status
        if to == IN_PROGRESS:
            raise BadRequestError(
                f"an item goes in progress only by a claim: start board claim {id_} "
                "(board_tasks_claim over MCP)"
            )
        fields = change.description is not None or change.blocked_by is not None
        if to is None:
            free = [PENDING] if fields else [PENDING, COMPLETED, FAILED]
        elif to == PENDING:
            free = [PENDING, FAILED]
        else:
            free = [PENDING]
        patch = None
        if change.metadata is not None:
            patch = _json(dict(inputs.metadata(change.metadata)))
        stamp = now()
        with self._writing() as connection:
            row = self._row(seq)
            if row is None:
                raise self._no_such(id_)
            item = _item(row)
            _may(item, row, by, change)
            level, level_by = item.level, item.level_by
            if fields and above(level, by.level):
                level, level_by = by.level, by.name
            if change.blocked_by is not None:
                deps = self._dependencies(connection, change.blocked_by, seq)
                connection.execute("DELETE FROM deps WHERE item = ?", (seq,))
                connection.executemany(
                    "INSERT INTO deps (item, blocked_by, position) VALUES (?, ?, ?)",
                    [(seq, dep, index) for index, dep in enumerate(deps)],
                )
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
                    description = COALESCE(:description, description),
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
                    AND (:to IS NOT 'completed' OR NOT {_BLOCKED.format(row="items")})""",
                {
                    "to": to,
                    "name": by.name,
                    "pid": by.pid,
                    "started": by.started,
                    "epoch": epoch,
                    "description": _blob(change.description),
                    "patch": patch,
                    "answer": _blob(change.answer),
                    "answer_level": change.answer_level or by.level,
                    "level": level,
                    "level_by": level_by,
                    "reason": _blob(change.reason),
                    "history": change.history,
                    "stamp": stamp,
                    "seq": seq,
                },
            )
            if cursor.rowcount == 1:
                detail = {
                    key: value
                    for key, value in zip(Change._fields, change, strict=True)
                    if value is not None and key not in ("answer", "reason")
                }
                if change.reason is not None:
                    detail["reason"] = change.reason
                if to == COMPLETED and above(USER_LEVEL, change.answer_level or by.level):
                    detail["answer_level"] = change.answer_level or by.level
                if fields and above(USER_LEVEL, by.level):
                    detail["level"] = by.level
                self._event(connection, seq, by.name, "update", **_plain(detail))
            else:
                row = self._row(seq)
                if row is None:
                    raise self._no_such(id_)
                raise RefusedError(_why_not(_item(row), row, by, change, epoch))
        return self.get(id_)

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
            kept = _json(inputs.readable(json.loads(kept)))
            connection.execute("UPDATE items SET metadata = ? WHERE seq = ?", (kept, seq))
            merged = connection.execute("SELECT json_patch(?, ?)", (kept, patch)).fetchone()[0]
        inputs.merged_metadata(json.loads(merged), item_id(seq))

    def reassign(self, id_: str, name: str, by: Holder) -> Item:
        """Hand an unfinished, unblocked item to `name`: it is in progress, held by that name
        (not by a process), and its epoch one more, which fences out the old holder: its writes
        that carry the old epoch are refused."""
        seq = number(id_)
        with self._writing() as connection:
            cursor = connection.execute(
                "UPDATE items SET status = 'in_progress', assignee = ?, holder_pid = NULL, "
                "holder_started = NULL, epoch = epoch + 1, updated = ? WHERE seq = ? "
                f"AND status IN ('pending', 'in_progress') AND NOT {_BLOCKED.format(row='items')}",
                (name, now(), seq),
            )
            if cursor.rowcount == 1:
                self._event(connection, seq, by.name, "reassign", to=name)
            else:
                row = self._row(seq)
                if row is None:
                    raise self._no_such(id_)
                raise RefusedError(_refusal(_item(row), "reassign"))
        return self.get(id_)

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
        with self._writing() as connection:
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
                    (status, status, count, _blob(reason), now(), seq, epoch, pid),
                )
                if cursor.rowcount == 1:
                    op = "fail" if status == FAILED else "release"
                    self._event(connection, seq, "start", op, holder=name, pid=pid)
                    released.append(seq)
        return [self.get(item_id(seq)) for seq in released]

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


def _plain(detail: Mapping[str, Any]) -> dict[str, Any]:
    """A change's fields as JSON values (tuples as lists, mappings as objects)."""
    return {
        key: list(value) if isinstance(value, tuple) else dict(value)
        if isinstance(value, Mapping) else value
        for key, value in detail.items()
    }  # fmt: skip


def _holds(row: sqlite3.Row, holder: Holder) -> bool:
    """Whether `holder` holds the item of `row` (its process too, for a process's claim)."""
    return (
        row["status"] == IN_PROGRESS
        and row["assignee"] == holder.name
        and (row["holder_pid"] is None or (row["holder_pid"], row["holder_started"])
             == (holder.pid, holder.started))
    )  # fmt: skip


def _may(item: Item, row: sqlite3.Row, by: Holder, change: Change) -> None:
    """Refuse a change that `by` may not make for who it is (docs/board.md, "Who shaped it"):
    of what runs above its level, or (an agent) the end of a run it does not hold. Metadata
    never reaches a run: anyone may merge it, under the other rules."""
    if change.status is None and change.description is None and change.blocked_by is None:
        return
    finishing = change.status in FINISHED
    why = shaping(item, by, "finish" if finishing else "change")
    if why is not None:
        raise RefusedError(why)
    if by.agent and finishing and item.run is not None and not _holds(row, by):
        raise RefusedError(
            f"{item.id} says what start board run runs: an agent finishes it only while it holds "
            f"it (board_tasks_claim), so that its end is its run's or its holder's work"
        )


def _refusal(item: Item, what: str) -> str:
    """Why a claim or a reassign of `item` was refused."""
    if item.status in FINISHED:
        return (
            f"{item.id} is {item.status}: a finished item cannot be taken (reopen a failed one: "
            f"start board update {item.id} --status pending)"
        )
    if item.status == IN_PROGRESS and what == "claim":
        return (
            f"{item.id} is held by {item.assignee}; it is theirs until they finish or release "
            f"it, or it is reassigned (start board reassign {item.id} NAME)"
        )
    return f"{item.id} is blocked: {'; '.join(item.blocked)}"


def _why_not(item: Item, row: sqlite3.Row, by: Holder, change: Change, epoch: int | None) -> str:
    """Why `update` changed nothing, in the order its conditions are tried."""
    if item.status == IN_PROGRESS:
        if item.assignee != by.name:
            return (
                f"{item.id} is held by {item.assignee}: only its holder changes it (start board "
                f"reassign {item.id} NAME hands it over)"
            )
        if epoch is not None and epoch != item.epoch:
            return (
                f"{item.id} was reassigned since your claim (epoch {epoch}; it is now at "
                f"epoch {item.epoch}): this write is fenced out; claim it again to act on it"
            )
        if not _holds(row, by):
            return (
                f"{item.id} is held by another process of {item.assignee} (pid {row['holder_pid']})"
            )
    if item.status == COMPLETED:
        return f"{item.id} is completed: only its metadata can change now"
    if item.status == FAILED:
        if change.status in FINISHED:
            return f"{item.id} failed already; reopen it first (status pending)"
        return f"{item.id} failed: reopen it (status pending) to change more than its metadata"
    return (
        f"{item.id} cannot complete while it is blocked: {'; '.join(item.blocked)}"
        if item.blocked
        else f"{item.id} cannot change that way now ({item.status})"
    )


def _where(found: Filter) -> tuple[str, list[Any]]:
    """The WHERE clause (with its leading space) of a listing, and its values."""
    clauses: list[str] = []
    values: list[Any] = []
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
        clauses.append(("" if blocked else "NOT ") + _BLOCKED.format(row="i"))
    if found.runnable:
        clauses.append("i.run IS NOT NULL")
    if found.ids:
        clauses.append(f"i.seq IN ({', '.join('?' for _ in found.ids)})")
        values += [number(id_) for id_ in found.ids]
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), values
