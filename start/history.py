"""The history of runs: what each launch and headless run sent, to which agent, and what came
back, kept in SQLite in the user's state directory.

    record(prepared)          a launch, just before the exec
    record(prepared, result)  a headless run (--print), once it has ended

Recording pays for no SQLite: a run's record goes to a file of its own in `pending/` (the marshal
of a dict, written to a temp name and renamed), and the next command that opens the database
(`start log`, `start again`, or every PENDING_LIMIT-th run) moves every pending file into it,
then trims the oldest runs to the size limit. Opening, writing and closing the database costs
milliseconds that a launch, which execs at once, should not pay (docs/performance.md). The
database is in WAL mode with a busy timeout, writers take the write lock at once, and a pending
file is moved in once only (its name is a unique key), so runs that end together never lose or
corrupt a record. Everything lives in one directory, mode 0700, made and checked by
`paths.open_private`; the files are 0600.
"""

from __future__ import annotations

import marshal
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

from start import paths
from start.errors import ExitCode, StartError
from start.record import Record

if TYPE_CHECKING:
    import sqlite3

    from start.headless import Result
    from start.pipeline import Prepared

DIRECTORY: Final = "history"
DATABASE: Final = "history.db"
PENDING: Final = "pending"
# A launch moves the pending records into the database itself once there are this many, so
# that `pending/` stays small for a user who never runs `start log`.
PENDING_LIMIT: Final = 64
# The version of a pending file's dict and of the database's schema (PRAGMA user_version).
FORMAT: Final = 1
# A pending temp file this old belongs to a writer that died.
_STALE: Final = 3600.0
# How long a writer waits for another to finish with the database, in seconds.
BUSY_TIMEOUT: Final = 30.0


class HistoryError(StartError):
    """The history cannot be read or written."""


class NoSuchRunError(StartError):
    """No recorded run has that id."""

    exit_code = ExitCode.UNKNOWN_NAME


class Run(Record):
    """One recorded run: a launch, or a headless run (`headless`) with its outcome."""

    id: int
    time: str  # ISO 8601 with the UTC offset: the run's {date}
    at: float  # the same moment, seconds since the epoch
    cwd: str  # the directory `start` was started in
    workdir: str  # the directory it ran as (-d DIR)
    project: str  # the project root
    args: tuple[str, ...] | None  # start's arguments (`--` and the agent's included); None: mcp
    mode: str  # session, prompt or task
    task: str | None
    agent: str
    model: str | None
    role: str | None
    contexts: tuple[str, ...]
    params: Mapping[str, str]
    instructions: str | None
    prompt: str
    role_text: str
    command: tuple[str, ...]  # the agent's argv
    headless: bool
    permissions: str | None
    answer: str | None
    error: str | None
    exit_code: int | None
    timed_out: bool
    duration: float | None
    usage: Mapping[str, Any] | None
    size: int  # bytes this record counts against settings.history_size_limit

    @property
    def outcome(self) -> str:
        """`launched`, `ok`, `timed out` or `failed`."""
        if not self.headless:
            return "launched"
        if self.error is None:
            return "ok"
        return "timed out" if self.timed_out else "failed"


def directory() -> str:
    """Where the history lives: `history/` in the state directory."""
    return paths.join(paths.state_dir(), DIRECTORY)


def database() -> str:
    return paths.join(directory(), DATABASE)


def fields(
    prepared: Prepared,
    result: Result | None = None,
    *,
    args: Sequence[str] | None = None,
    cwd: str | None = None,
) -> dict[str, Any]:
    """A run as plain values (what a pending file holds)."""
    plan, composition, launch = prepared.plan, prepared.composition, prepared.launch
    role = composition.role
    data: dict[str, Any] = {
        "format": FORMAT,
        "time": prepared.date,
        "at": time.time(),
        "cwd": cwd or prepared.config.project.workdir,
        "workdir": prepared.config.project.workdir,
        "project": prepared.config.root,
        "args": list(args) if args is not None else None,
        "mode": plan.mode,
        "task": plan.task.name if plan.task is not None else None,
        "agent": plan.agent.name,
        "model": plan.model,
        "role": plan.role.name if plan.role is not None else None,
        "contexts": [part.name for part in composition.contexts],
        "params": dict(plan.params),
        # The user's own words: a task's instructions, a prompt's text.
        "instructions": plan.text if plan.mode == "prompt" else plan.instructions,
        "prompt": composition.prompt,
        "role_text": role.text if role is not None else "",
        "command": list(result.argv if result is not None else launch.argv),
        "headless": result is not None,
        "permissions": launch.permissions,
        "answer": None,
        "error": None,
        "exit_code": None,
        "timed_out": False,
        "duration": None,
        "usage": None,
        "limit": prepared.config.settings.history_size_limit,
    }
    if result is not None:
        data.update(
            answer=result.answer,
            error=result.error,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            duration=result.duration,
            usage=dict(result.usage) if result.usage is not None else None,
        )
    return data


def record(
    prepared: Prepared,
    result: Result | None = None,
    *,
    args: Sequence[str] | None = None,
    cwd: str | None = None,
) -> None:
    """Record one run, unless `settings.history` is off: a launch (no `result`), or a headless
    run with the `headless.Result` of its run.

    `args` is the command line that `start again` repeats (None for a run that has none, such
    as one that `start mcp` started), and `cwd` the directory it was given in (default: the
    workdir). The record is a pending file until the database is next opened. Raises
    HistoryError when the history cannot be written.
    """
    if not prepared.config.settings.history:
        return
    data = fields(prepared, result, args=args, cwd=cwd)
    try:
        if _spool(data) >= PENDING_LIMIT:
            with opened():
                pass  # opening moves the pending runs in, and keeps to the size limit
    except OSError as error:
        raise HistoryError(f"cannot record the run in {directory()}: {_reason(error)}") from None


def _reason(error: BaseException) -> str:
    return (error.strerror if isinstance(error, OSError) else None) or str(error)


def _private(create: bool) -> int | None:
    """A descriptor of the history directory, checked by `paths.open_private`."""
    where = directory()
    fd = paths.open_private(where, create=create)
    if fd is None and (create or os.path.lexists(where)):
        raise HistoryError(f"{where} is not a directory owned by you; remove it")
    return fd


def _spool(data: dict[str, Any]) -> int:
    """Write `data` as a new pending file; the number of pending files, this one included."""
    fd = _private(create=True)
    assert fd is not None
    try:
        with suppress(FileExistsError):
            os.mkdir(PENDING, mode=0o700, dir_fd=fd)
        pending = _open_dir(PENDING, fd)
        try:
            name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}"
            temp = f".{name}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            out = os.open(temp, flags, 0o600, dir_fd=pending)
            try:
                _write_all(out, marshal.dumps(data))
            finally:
                os.close(out)
            os.rename(temp, name, src_dir_fd=pending, dst_dir_fd=pending)
            return sum(1 for entry in os.listdir(pending) if not entry.startswith("."))
        finally:
            os.close(pending)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _open_dir(name: str, parent: int) -> int:
    """A directory in `parent`, never through a symlink, and ours."""
    import stat

    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=parent)
    except OSError as error:
        raise HistoryError(f"{paths.join(directory(), name)}: {_reason(error)}") from None
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        raise HistoryError(f"{paths.join(directory(), name)} is not a directory owned by you")
    return fd


_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS runs (
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
);
CREATE INDEX IF NOT EXISTS runs_at ON runs (at);
"""

# The columns a record fills, in order (id is the database's).
_COLUMNS: Final = (
    "pending", "time", "at", "cwd", "workdir", "project", "args", "mode", "task", "agent",
    "model", "role", "contexts", "params", "instructions", "prompt", "role_text", "command",
    "headless", "permissions", "answer", "error", "exit_code", "timed_out", "duration", "usage",
    "size",
)  # fmt: skip
# Text kept as bytes (BLOB): a prompt may hold any byte a file held (surrogate escapes).
_BYTES: Final = ("instructions", "prompt", "role_text", "answer", "error")
_JSON: Final = ("args", "contexts", "params", "command", "usage")


def _blob(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogateescape")


def _text(blob: bytes | str | None) -> str | None:
    if blob is None or isinstance(blob, str):
        return blob
    return blob.decode("utf-8", "surrogateescape")


class Store:
    """The open history database."""

    def __init__(self, connection: sqlite3.Connection, fd: int) -> None:
        self.connection = connection
        self.fd = fd  # the history directory, checked

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

    def _insert(
        self, connection: sqlite3.Connection, data: Mapping[str, Any], pending: str | None
    ) -> int:
        import json

        row: dict[str, Any] = {column: data.get(column) for column in _COLUMNS}
        row["pending"] = pending
        for column in _BYTES:
            row[column] = _blob(row[column])
        for column in _JSON:
            if row[column] is not None or column not in ("args", "usage"):
                row[column] = json.dumps(row[column])
        row["headless"] = int(bool(row["headless"]))
        row["timed_out"] = int(bool(row["timed_out"]))
        row["size"] = sum(len(value) for value in row.values() if isinstance(value, (bytes, str)))
        names = ", ".join(_COLUMNS)
        marks = ", ".join("?" for _ in _COLUMNS)
        cursor = connection.execute(
            f"INSERT OR IGNORE INTO runs ({names}) VALUES ({marks})",
            [row[column] for column in _COLUMNS],
        )
        return cursor.lastrowid or 0

    def ingest(self) -> int:
        """Move every pending file into the database, and keep to the size limit the newest of
        them was recorded under; how many were moved."""
        if not os.path.lexists(os.path.join(directory(), PENDING)):
            return 0
        pending = _open_dir(PENDING, self.fd)
        limit: int | None = None
        try:
            names = sorted(name for name in os.listdir(pending) if not name.startswith("."))
            _sweep(pending)
            if not names:
                return 0
            with self._writing() as connection:
                for name in names:
                    data = _read_pending(pending, name)
                    if data is not None:
                        self._insert(connection, data, name)
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

    def trim(self, limit: int) -> int:
        """Delete the oldest runs until the rest fit in `limit` bytes; the newest is always kept.
        How many were deleted."""
        with self._writing() as connection:
            rows = connection.execute("SELECT id, size FROM runs ORDER BY id DESC").fetchall()
            kept = 0
            doomed: list[int] = []
            for index, (run_id, size) in enumerate(rows):
                kept += size
                if kept > limit and index > 0:
                    doomed.append(run_id)
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
    ) -> list[Run]:
        """The newest runs first, filtered."""
        where: list[str] = []
        values: list[str | int] = []
        for column, wanted in (("task", task), ("agent", agent)):
            if wanted is not None:
                where.append(f"{column} = ?")
                values.append(wanted)
        if project is not None:
            # A path (the project root) or a name (its last part).
            where.append("(project = ? OR project = ? OR project LIKE ? ESCAPE '\\')")
            escaped = project.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            values += [project, os.path.realpath(project), f"%/{escaped}"]
        sql = "SELECT * FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            values.append(limit)
        return [_run(row) for row in self.connection.execute(sql, values)]

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

    def ids(self) -> list[int]:
        return [row[0] for row in self.connection.execute("SELECT id FROM runs ORDER BY id DESC")]

    def clear(self, before: float | None = None) -> int:
        """Delete every run, or those older than `before` (seconds since the epoch); how many.

        secure_delete zeroes what was deleted; the WAL is checkpointed so that no copy of a
        deleted prompt stays behind in it.
        """
        with self._writing() as connection:
            if before is None:
                cursor = connection.execute("DELETE FROM runs")
            else:
                cursor = connection.execute("DELETE FROM runs WHERE at < ?", (before,))
            count = cursor.rowcount
        self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return count


def _run(row: sqlite3.Row) -> Run:
    import json

    def loaded(column: str) -> Any:
        value = row[column]
        return None if value is None else json.loads(value)

    args = loaded("args")
    return Run(
        id=row["id"],
        time=row["time"],
        at=row["at"],
        cwd=row["cwd"],
        workdir=row["workdir"],
        project=row["project"],
        args=tuple(args) if args is not None else None,
        mode=row["mode"],
        task=row["task"],
        agent=row["agent"],
        model=row["model"],
        role=row["role"],
        contexts=tuple(loaded("contexts")),
        params=loaded("params"),
        instructions=_text(row["instructions"]),
        prompt=_text(row["prompt"]) or "",
        role_text=_text(row["role_text"]) or "",
        command=tuple(loaded("command")),
        headless=bool(row["headless"]),
        permissions=row["permissions"],
        answer=_text(row["answer"]),
        error=_text(row["error"]),
        exit_code=row["exit_code"],
        timed_out=bool(row["timed_out"]),
        duration=row["duration"],
        usage=loaded("usage"),
        size=row["size"],
    )


# The keys and types a pending file must have: the shape checked where it is read back.
_SHAPE: Final[Mapping[str, tuple[type, ...]]] = {
    "format": (int,),
    "time": (str,),
    "at": (float, int),
    "cwd": (str,),
    "workdir": (str,),
    "project": (str,),
    "args": (list, type(None)),
    "mode": (str,),
    "task": (str, type(None)),
    "agent": (str,),
    "model": (str, type(None)),
    "role": (str, type(None)),
    "contexts": (list,),
    "params": (dict,),
    "instructions": (str, type(None)),
    "prompt": (str,),
    "role_text": (str,),
    "command": (list,),
    "headless": (bool,),
    "permissions": (str, type(None)),
    "limit": (int,),
}


def _read_pending(pending: int, name: str) -> dict[str, Any] | None:
    """A pending file's dict; None when it is not one this version wrote."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pending)
    except FileNotFoundError:
        return None
    try:
        with os.fdopen(fd, "rb") as stream:
            data = marshal.loads(stream.read())
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    for key, types in _SHAPE.items():
        if not isinstance(data.get(key), types):
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


@contextmanager
def opened(*, create: bool = True) -> Iterator[Store]:
    """The history database, with every pending run moved in. Without `create`, a history that
    does not exist yet is an empty one held in memory."""
    import sqlite3

    fd = _private(create)
    connection: sqlite3.Connection | None = None
    try:
        if fd is None:
            connection = sqlite3.connect(":memory:", isolation_level=None)
        else:
            _check_database(fd)
            connection = sqlite3.connect(
                database(), timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
            )
        connection.row_factory = sqlite3.Row
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA secure_delete = ON")
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > FORMAT:
            raise HistoryError(
                f"{database()} was written by a newer start (history format {version}); "
                "upgrade start, or move the file away"
            )
        if version < FORMAT:
            script = f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {FORMAT};\nCOMMIT;"
            connection.executescript(script)
        store = Store(connection, fd if fd is not None else -1)
        if fd is not None:
            store.ingest()
        yield store
    except sqlite3.Error as error:
        raise HistoryError(f"the history in {database()} cannot be used: {error}") from None
    finally:
        if connection is not None:
            connection.close()
        if fd is not None:
            os.close(fd)


def _check_database(fd: int) -> None:
    """Make the database file 0600 if it is missing; refuse one that is a link or not ours."""
    import stat

    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        file = os.open(DATABASE, flags, 0o600, dir_fd=fd)
    except OSError as error:
        raise HistoryError(f"{database()}: {_reason(error)}") from None
    try:
        info = os.fstat(file)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise HistoryError(f"{database()} is not a file owned by you; remove it")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(file, 0o600)
    finally:
        os.close(file)
