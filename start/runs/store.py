"""The history's database: SQLite in the history directory, which `start log` and `start again`
read (through `opened`), and into which every pending file that start.runs.history wrote is moved.

A run is recorded one way, by every door: as a pending file (start.runs.recording.record), which a
launch writes without importing this module, under the id reserved for it then
(start.runs.history.reserve), which it keeps in the database. Opening the database moves the
pending runs in and trims the oldest runs to the size limit. It is opened through
start.base.sqlite (WAL, a busy timeout, writers that take the write lock at once, named
migrations), and a pending file is moved in once only (its name is a unique key), so runs that
end together never lose or corrupt a record.
"""

from __future__ import annotations

import marshal
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

from start import runs
from start.base import sqlite
from start.base.errors import ExitCode, StartError
from start.runs import Run, history, tokens
from start.runs.history import (
    DATABASE,
    FORMAT,
    PENDING,
    HistoryError,
    database,
    directory,
    open_dir,
    private_directory,
)

if TYPE_CHECKING:
    import sqlite3

# A pending temp file this old belongs to a writer that died.
_STALE: Final = 3600.0
# How long a writer waits for another to finish with the database, in seconds.
BUSY_TIMEOUT: Final = sqlite.BUSY_TIMEOUT
# How long a run's own flush waits: a run never waits on its history (what it could not move
# stays pending, for the next flush, or `start log`).
FLUSH_TIMEOUT: Final = 0.2


class HistoryBusyError(HistoryError):
    """Another process held the database for longer than the wait allowed."""


class NoSuchRunError(StartError):
    """No recorded run has that id."""

    exit_code = ExitCode.UNKNOWN_NAME


# The history's migrations (start.base.sqlite). m001 is the schema start 0.1.0 made (its
# `CREATE TABLE IF NOT EXISTS` leaves such a database as it is); m002 makes its rows start.runs'
# records. The columns of fields added to start.runs.Run since are added when a database is
# opened (`_COLUMNS`): a new field is one line in start.runs.
MIGRATIONS: Final[tuple[sqlite.Migration, ...]] = (
    (
        "m001_runs",
        (
            """CREATE TABLE IF NOT EXISTS runs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                pending TEXT UNIQUE,
                time TEXT NOT NULL,
                at REAL NOT NULL,
                cwd TEXT NOT NULL,
                workdir TEXT NOT NULL,
                project TEXT NOT NULL,
                args TEXT,
                mode TEXT NOT NULL,
                task TEXT,
                agent TEXT NOT NULL,
                model TEXT,
                role TEXT,
                contexts TEXT NOT NULL,
                params TEXT NOT NULL,
                instructions BLOB,
                prompt BLOB NOT NULL,
                role_text BLOB NOT NULL,
                command TEXT NOT NULL,
                headless INTEGER NOT NULL,
                permissions TEXT,
                answer BLOB,
                error BLOB,
                exit_code INTEGER,
                timed_out INTEGER NOT NULL,
                duration REAL,
                usage TEXT,
                size INTEGER NOT NULL
            )""",
            "CREATE INDEX IF NOT EXISTS runs_at ON runs (at)",
        ),
    ),
    (
        "m002_one_record",
        (
            "ALTER TABLE runs RENAME COLUMN command TO argv",
            "ALTER TABLE runs ADD COLUMN state TEXT",
            # 0.1.0 kept the answer of a run out of format, and only of those that failed.
            """UPDATE runs SET state = CASE
                WHEN headless = 0 THEN 'launched'
                WHEN error IS NULL THEN 'ok'
                WHEN timed_out = 1 THEN 'timed out'
                WHEN answer IS NOT NULL AND length(answer) > 0 THEN 'out of format'
                ELSE 'failed' END""",
            "ALTER TABLE runs DROP COLUMN timed_out",
        ),
    ),
)


# The record's fields the database stores in columns of their own (its `id` is the row's), and
# their columns: that of a field added to start.runs.Run since a database was made is added when
# it is opened; NULL in the rows before it reads as the field's default.
_FIELDS: Final = tuple(name for name in runs.Run._fields if name != "id")
_COLUMNS: Final = {name: runs.kind_of(name).column for name in _FIELDS}


def _encode(name: str, value: Any) -> Any:
    """A field's value as its column holds it (start.runs.KINDS)."""
    import json

    encoding = runs.kind_of(name).encoding
    if value is None:
        return None
    if encoding == "bytes":
        return sqlite.blob(value)
    if encoding == "json":
        # ASCII: a surrogate escape (a byte that was not UTF-8) is kept as its JSON escape.
        return json.dumps(runs.plain(value))
    if encoding == "bool":
        return int(bool(value))
    return sqlite.bound(value) if isinstance(value, str) else value


def _decode(name: str, value: Any) -> Any:
    """A column's value as the field holds it; NULL is the field's default."""
    import json

    if value is None:
        return runs.Run._field_defaults.get(name)
    encoding = runs.kind_of(name).encoding
    if encoding == "bytes" or isinstance(value, bytes):
        return sqlite.text(value)
    if encoding == "bool":
        return bool(value)
    if encoding == "json":
        found = json.loads(value)
        return tuple(found) if isinstance(found, list) and name != "value" else found
    return value


class Store:
    """The open history database."""

    def __init__(self, connection: sqlite3.Connection, fd: int) -> None:
        self.connection = connection
        self.fd = fd  # the history directory, checked

    def insert(self, connection: sqlite3.Connection, data: dict[str, Any], pending: str) -> int:
        """Insert one run, as the pending file `pending` holds it (start.runs.history.fields),
        under the id reserved for it, unless it is in already; its id. A run without one (a
        pending file of an earlier release, or of a run that could not reserve one) gets the
        next. `ingest` moves pending files in with it (and benchmarks/recording.py measures it
        against the pending file)."""
        run_id = data.get("id")
        if not isinstance(run_id, int) or run_id <= 0:
            run_id = self.reserve()
        names = ("id", "pending", "size", *_FIELDS)
        values = [run_id, pending, history.size(data), *(_encode(n, data.get(n)) for n in _FIELDS)]
        marks = ", ".join("?" for _ in names)
        cursor = connection.execute(
            f"INSERT OR IGNORE INTO runs ({', '.join(names)}) VALUES ({marks})", values
        )
        if cursor.rowcount:
            return cursor.lastrowid or 0
        row = connection.execute("SELECT id FROM runs WHERE pending = ?", (pending,)).fetchone()
        if row is not None:
            return int(row[0])  # another process moved it in
        taken = connection.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone()
        if run_id is None or taken is None:
            return 0
        # Its id is another run's: an earlier release, which reserves none, gave it meanwhile.
        # The run is kept, under the next id.
        return self.insert(connection, {**data, "id": self.reserve()}, pending)

    def reserve(self) -> int | None:
        """The next id (start.runs.history.reserve); None: the database's next."""
        try:
            return history.reserve(self.fd, None)
        except OSError:
            return None

    def ingest(self) -> int:
        """Move every pending file into the database, and keep to the size limit the newest of
        them was recorded under; how many were moved."""
        if not os.path.lexists(os.path.join(directory(), PENDING)):
            self.raise_ids(None)
            return 0
        pending = open_dir(PENDING, self.fd)
        limit: int | None = None
        try:
            names = sorted(name for name in os.listdir(pending) if not name.startswith("."))
            _sweep(pending)
            self.raise_ids(pending)
            if not names:
                return 0
            with sqlite.writing(self.connection) as connection:
                for name in names:
                    data = _read_pending(pending, name)
                    if data is not None:
                        self.insert(connection, data, name)
                        limit = data["limit"]
            for name in names:
                # Another process may have moved it too: INSERT OR IGNORE kept one copy.
                with suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=pending)
        finally:
            os.close(pending)
        if limit is not None:
            self.trim(limit)
        return len(names)

    def raise_ids(self, pending: int | None) -> None:
        """Raise the counter of ids to the database's last, and to the pending files' (an
        earlier release may have given ids of its own, or the counter be lost), so that no id
        is given twice (start.runs.history.reserve). A history directory start cannot write is
        read as it is."""
        last = sqlite.last_id(self.connection, "runs")
        with suppress(OSError):
            history.reserve(self.fd, pending, last=last, take=False)

    def trim(self, limit: int) -> int:
        """Delete the oldest runs until the rest fit in `limit` bytes, and any run larger than
        `limit` on its own. How many were deleted."""
        with sqlite.writing(self.connection) as connection:
            rows = connection.execute("SELECT id, size FROM runs ORDER BY id DESC").fetchall()
            kept = 0
            full = False
            doomed: list[int] = []
            for run_id, size in rows:
                if size > limit:
                    doomed.append(run_id)
                elif full or kept + size > limit:
                    full = True
                    doomed.append(run_id)
                else:
                    kept += size
            if doomed:
                connection.executemany("DELETE FROM runs WHERE id = ?", [(i,) for i in doomed])
        return len(doomed)

    def runs(
        self,
        limit: int | None = None,
        *,
        task: str | None = None,
        agent: str | None = None,
        project: str | None = None,
        search: str | None = None,
        since: float | None = None,
        before: int | None = None,
    ) -> list[Run]:
        """The newest runs first, filtered; `search`: the runs whose words (instructions),
        prompt or answer hold it, in any case; `since`: those that ended at that moment or
        after (seconds since the epoch); `before`: those older than the run of that id (the
        next page of a listing)."""
        where, values = self._where(task, agent, project, search, since)
        if before is not None:
            where.append("id < ?")
            values.append(before)
        sql = "SELECT * FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            values.append(limit)
        return [_run(row) for row in self.connection.execute(sql, values)]

    def spent(
        self,
        *,
        task: str | None = None,
        agent: str | None = None,
        project: str | None = None,
        search: str | None = None,
        since: float | None = None,
    ) -> list[tokens.Spent]:
        """What the headless runs the filters keep (as for `runs`) spent, oldest first: their
        usage, whose tokens start.runs.tokens.totals sums, without their texts."""
        where, values = self._where(task, agent, project, search, since)
        where.append("headless = 1")
        sql = f"SELECT at, agent, model, usage FROM runs WHERE {' AND '.join(where)} ORDER BY id"
        return [
            tokens.Spent(
                row["at"],
                _decode("agent", row["agent"]),
                _decode("model", row["model"]),
                _decode("usage", row["usage"]),
            )
            for row in self.connection.execute(sql, values)
        ]

    def _where(
        self,
        task: str | None,
        agent: str | None,
        project: str | None,
        search: str | None,
        since: float | None,
    ) -> tuple[list[str], list[str | bytes | int | float]]:
        """The conditions of the filters of `runs`, and their values."""
        where: list[str] = []
        values: list[str | bytes | int | float] = []
        if search:
            self.connection.create_function("holds", 4, _holds, deterministic=True)
            where.append("holds(?, instructions, prompt, answer)")
            values.append(sqlite.bound(search.casefold()))
        for column, wanted in (("task", task), ("agent", agent)):
            if wanted is not None:
                where.append(f"{column} = ?")
                values.append(sqlite.bound(wanted))
        if project is not None:
            # A path (the project root) or a name (its last part), compared in Python: a path
            # may hold bytes that are not UTF-8, which SQLite's LIKE does not compare.
            self.connection.create_function("in_project", 3, _in_project, deterministic=True)
            where.append("in_project(project, ?, ?)")
            values += [sqlite.bound(project), sqlite.bound(os.path.realpath(project))]
        if since is not None:
            where.append("at >= ?")
            values.append(since)
        return where, values

    def get(self, run_id: int | None) -> Run:
        """The run of that id, or the latest (None); NoSuchRunError when there is none."""
        if run_id is None:
            found = self.runs(1)
            if not found:
                raise NoSuchRunError("no run is recorded yet ('start log' lists the runs)")
            return found[0]
        row = self.connection.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise NoSuchRunError(f"no run {run_id} in the history ('start log' lists the runs)")
        return _run(row)

    def clear(self, before: float | None = None) -> int:
        """Delete every run, or those older than `before` (seconds since the epoch); how many.

        secure_delete zeroes what was deleted; the WAL is checkpointed so that no copy of a
        deleted prompt stays behind in it.
        """
        with sqlite.writing(self.connection) as connection:
            if before is None:
                cursor = connection.execute("DELETE FROM runs")
            else:
                cursor = connection.execute("DELETE FROM runs WHERE at < ?", (before,))
            count = cursor.rowcount
        self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return count


def _holds(needle: bytes | str, *texts: bytes | str | None) -> bool:
    """Whether one of `texts` (as the database keeps them) holds `needle` (casefolded, as
    `sqlite.bound` binds it), casefolded."""
    wanted = sqlite.text(needle) or ""
    return any(
        text is not None and wanted in (sqlite.text(text) or "").casefold() for text in texts
    )


def _in_project(project: bytes | str, given: bytes | str, real: bytes | str) -> bool:
    """Whether a run's project is the root `given` (or its real path `real`), or its last
    parts are `given` (a name)."""
    found, wanted = sqlite.text(project) or "", sqlite.text(given) or ""
    return found in (wanted, sqlite.text(real)) or found.endswith("/" + wanted)


def _run(row: sqlite3.Row) -> Run:
    """A row as a start.runs.Run: the conversions of `Store.insert` undone."""
    values = {name: _decode(name, row[name]) for name in _FIELDS}
    return Run(**values, id=row["id"])


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A pending file of start 0.1.0 (format 1) as this release writes one (m002's rule)."""
    state = runs.LAUNCHED
    if data.get("headless"):
        if data.get("error") is None:
            state = runs.OK
        elif data.get("timed_out"):
            state = runs.TIMED_OUT
        else:
            state = runs.OUT_OF_FORMAT if data.get("answer") else runs.FAILED
    found = {k: v for k, v in data.items() if k not in ("command", "timed_out")}
    return {**found, "argv": data.get("command"), "state": state, "format": FORMAT}


def _read_pending(pending: int, name: str) -> dict[str, Any] | None:
    """A pending file's dict; None when it is not one this version wrote."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pending)
    except FileNotFoundError:
        return None
    try:
        with os.fdopen(fd, "rb") as stream:
            found = marshal.loads(stream.read())
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(found, dict) or found.get("format") not in (1, FORMAT):
        return None
    data: dict[str, Any] = found
    if data["format"] == 1:
        data = _upgrade(data)
    if not isinstance(data.get("limit"), int):
        return None
    # Each field of the record's kind (start.runs.KINDS); one it lacks takes its default.
    for name in _FIELDS:
        kind = runs.kind_of(name)
        if name not in data and name not in runs.Run._field_defaults:
            return None
        if name in data and not isinstance(data[name], kind.types):
            return None
    if not isinstance(data.get("id"), int | None) or isinstance(data.get("id"), bool):
        return None
    return data


def _sweep(pending: int) -> None:
    """Remove temp files whose writer died."""
    now = time.time()
    for name in os.listdir(pending):
        if not name.startswith("."):
            continue
        try:
            if now - os.stat(name, dir_fd=pending, follow_symlinks=False).st_mtime > _STALE:
                os.unlink(name, dir_fd=pending)
        except FileNotFoundError:
            pass


def flush() -> None:
    """Move every pending run into the database, and keep to the size limit; when another
    process holds the database past FLUSH_TIMEOUT, the runs stay pending (they are recorded)."""
    with suppress(HistoryBusyError), opened(timeout=FLUSH_TIMEOUT):
        pass  # opening moves the pending runs in, and trims the oldest


@contextmanager
def opened(*, create: bool = True, timeout: float = BUSY_TIMEOUT) -> Iterator[Store]:
    """The history database, with every pending run moved in. Without `create`, a history that
    does not exist yet is an empty one held in memory. Another process holding the database
    past `timeout` seconds raises HistoryBusyError."""
    import sqlite3

    fd = private_directory(create)
    connection: sqlite3.Connection | None = None
    try:
        if fd is not None:
            sqlite.private_file(fd, DATABASE, database(), create=True, error=HistoryError)
        connection = sqlite.connect(None if fd is None else database(), timeout=timeout)
        sqlite.configure(connection, secure_delete=True)
        try:
            sqlite.migrate(connection, MIGRATIONS)
        except sqlite.NewerError:
            raise HistoryError(
                f"{database()} was written by a newer start (its history has migrations this "
                "one does not know); upgrade start, or move the file away"
            ) from None
        sqlite.add_columns(connection, "runs", _COLUMNS)
        store = Store(connection, fd if fd is not None else -1)
        if fd is not None:
            store.ingest()
        yield store
    except sqlite3.Error as error:
        kind = HistoryBusyError if sqlite.busy(error) else HistoryError
        raise kind(_unusable(error)) from None
    finally:
        if connection is not None:
            connection.close()
        if fd is not None:
            os.close(fd)


def _unusable(error: sqlite3.Error) -> str:
    """Why the database cannot be used, and for a file that is no database (or a damaged one)
    how to start again: the runs recorded meanwhile wait in pending/ for a database to go in."""
    import shlex

    where = database()
    if not sqlite.damaged(error):
        return f"the history in {where} cannot be used: {error}"
    aside = shlex.join(["mv", where, f"{where}.broken"])
    return (
        f"{where} is not a history start can read ({error}); move it aside ({aside}), and the "
        "next command starts a new history with the runs kept meanwhile"
    )
