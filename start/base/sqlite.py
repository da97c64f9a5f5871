"""The one door to SQLite for start's stores, the history (start.runs.store) and the board
(start.board.file): the private file, the connection and its pragmas, named migrations, the write
transaction, and the one codec of free text. (The private directory a store's file is in is
`paths.owned_directory`'s, which the history's pending files share without SQLite.)

A store names what is its own (its file, its migrations, its errors and their words); how a
database is opened, brought up to date and written is here, once. Nothing here prints, and a
launch never imports it (it records a run as a pending file: start.runs.history).

Migrations are named, as llm's migrations.py does for its logs: a database made by any release is
brought up to this one's schema when it is opened, one transaction per migration, each recorded by
name in its `migrations` table. A name is never reused or changed once released; a change to a
schema is a new migration at the end of its list. `PRAGMA user_version` counts the migrations
applied, so that an open of an up-to-date database costs one pragma, and a database with more (or
with a name this release does not know) was made by a newer start, which the store refuses.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Final

from start.base.errors import StartError

# How long a writer waits for another to finish with the database, in seconds.
BUSY_TIMEOUT: Final = 30.0
# SQLite's primary result codes for a database that another connection holds.
_BUSY: Final = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
# And for a file that is no database, or a damaged one.
_DAMAGED: Final = (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT)

# A migration's step: SQL statements, or a function that changes the database itself.
Step = str | Callable[[sqlite3.Connection], None]
Migration = tuple[str, Sequence[Step]]


class NewerError(Exception):
    """The database was made by a newer release: it has migrations this one does not know."""


# --- the file ------------------------------------------------------------------------------


def private_file(
    directory: int, name: str, path: str, *, create: bool, error: type[StartError]
) -> bool:
    """Make the database file `name` in `directory` 0600 if it is missing (with `create`); refuse
    one that is a link, not a regular file or not ours (`error`, naming `path`); narrow a wider
    mode to 0600. False when it is missing and not to be made.

    A file that exists is looked at, never opened: closing any descriptor of a file drops every
    POSIX lock this process holds on it, SQLite's too, and another process's close of the
    database would then believe itself the last, take the WAL away, and leave the connections
    this process holds reading what was (a second open of the board while one is open, as
    `start board serve` makes with each request). `directory` is the store's own, 0700
    (paths.owned_directory): no one else can put a link where the file was looked at.
    """
    import errno
    import stat

    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        if not create:
            return False
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            # A file made now: no connection of this process holds a lock on it yet.
            os.close(os.open(name, flags, 0o600, dir_fd=directory))
            return True
        except FileExistsError:  # another process made it meanwhile: look at it
            return private_file(directory, name, path, create=create, error=error)
        except OSError as failed:
            raise error(f"{path}: {failed.strerror or failed}") from None
    except OSError as failed:
        raise error(f"{path}: {failed.strerror or failed}") from None
    if stat.S_ISLNK(info.st_mode):  # as opening it without following it says
        raise error(f"{path}: {os.strerror(errno.ELOOP)}")
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{path}: {os.strerror(errno.EISDIR)}")
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        raise error(f"{path} is not a file owned by you; remove it")
    if stat.S_IMODE(info.st_mode) & 0o077:
        try:
            os.chmod(name, 0o600, dir_fd=directory)
        except OSError as failed:
            raise error(f"{path}: {failed.strerror or failed}") from None
    return True


# --- the connection -------------------------------------------------------------------------


def connect(path: str | None, *, timeout: float = BUSY_TIMEOUT) -> sqlite3.Connection:
    """A connection to the database at `path` (None: an empty one in memory), in autocommit mode
    (the write transaction is `writing`'s), whose rows read by column name too. Another process
    holding the database makes a statement wait `timeout` seconds before it fails. Raises
    sqlite3.Error; nothing is read from the file until the first statement (`configure`)."""
    connection = sqlite3.connect(
        ":memory:" if path is None else path,
        timeout=timeout,
        isolation_level=None,
        check_same_thread=False,
    )
    connection.row_factory = sqlite3.Row
    return connection


def configure(connection: sqlite3.Connection, *, secure_delete: bool = False) -> None:
    """The pragmas of every store: WAL, so that readers go on while a writer writes, with NORMAL
    sync, which WAL keeps consistent; `secure_delete` zeroes what is deleted (the history's
    prompts). Raises sqlite3.Error, for a file that is no database too."""
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    if secure_delete:
        connection.execute("PRAGMA secure_delete = ON")


def last_id(connection: sqlite3.Connection, table: str) -> int:
    """The last id an AUTOINCREMENT `table` gave: its sequence's, which a deleted row keeps, or
    its largest, whichever is more."""
    row = connection.execute(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0),"
        f" coalesce((SELECT max(id) FROM {table}), 0))",
        (table,),
    ).fetchone()
    return int(row[0])


def peek_last_id(path: str, table: str, *, timeout: float) -> int | None:
    """`last_id` of the database at `path`, which is read, never changed; None when it cannot
    be read within `timeout` seconds (another connection holds it) or at all (no such table, a
    damaged file)."""
    connection: sqlite3.Connection | None = None
    try:
        connection = connect(path, timeout=timeout)
        return last_id(connection, table)
    except sqlite3.Error:
        return None
    finally:
        if connection is not None:
            connection.close()


def busy(error: sqlite3.Error) -> bool:
    """Whether `error` says that another connection held the database past the wait."""
    return getattr(error, "sqlite_errorcode", 0) & 0xFF in _BUSY


def damaged(error: sqlite3.Error) -> bool:
    """Whether `error` says that the file is no database, or a damaged one."""
    return getattr(error, "sqlite_errorcode", None) in _DAMAGED


@contextmanager
def writing(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, begun at once (BEGIN IMMEDIATE) so that writers queue rather than
    deadlock; rolled back when its body raises."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


# --- migrations -----------------------------------------------------------------------------


def migrate(connection: sqlite3.Connection, migrations: Sequence[Migration]) -> int:
    """Apply the migrations the database lacks, in order, one transaction each; how many were
    applied. Raises NewerError for a database of a newer release."""
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version == len(migrations):
        return 0
    if version > len(migrations):
        raise NewerError
    connection.execute(
        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)"
    )
    known = {name for name, _ in migrations}
    done = 0
    for index, (name, steps) in enumerate(migrations):
        with writing(connection):
            applied = {row[0] for row in connection.execute("SELECT name FROM migrations")}
            if applied - known:
                raise NewerError
            if name not in applied:
                for step in steps:
                    if isinstance(step, str):
                        connection.execute(step)
                    else:
                        step(connection)
                stamp = datetime.now(UTC).isoformat(timespec="seconds")
                connection.execute(
                    "INSERT INTO migrations (name, applied) VALUES (?, ?)", (name, stamp)
                )
                done += 1
            connection.execute(f"PRAGMA user_version = {index + 1}")
    return done


def columns(connection: sqlite3.Connection, table: str) -> set[str]:
    """The names of a table's columns."""
    return {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}


def add_columns(connection: sqlite3.Connection, table: str, wanted: dict[str, str]) -> None:
    """Add each column of `wanted` (its name and its type) that `table` lacks: the column of a
    field added to a store's record since the database was made, NULL in the rows before it."""
    if set(wanted) <= columns(connection, table):
        return
    with writing(connection):
        have = columns(connection, table)  # another process may have added them meanwhile
        for name, kind in wanted.items():
            if name not in have:
                connection.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


# --- text -----------------------------------------------------------------------------------


def blob(text: str | None) -> bytes | None:
    """Free text as every store keeps it: UTF-8, with each surrogate escape (a byte that was not
    UTF-8 in a path, a command line or a command's output, which Python reads as one of
    U+DC80..U+DCFF) as the very byte it stands for, so that the database holds the bytes that
    were read and `text` gives back the same string.

    A lone surrogate that stands for no byte (the doors refuse one: start.base.inputs) cannot be
    kept: it is U+FFFD; and where escapes would read back as other characters than they are
    (they spell UTF-8 together, which no decoder leaves as escapes), every surrogate is."""
    if text is None:
        return None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    kept = "".join("\ufffd" if _surrogate(c) and not _escape(c) else c for c in text)
    data = kept.encode("utf-8", "surrogateescape")
    if data.decode("utf-8", "surrogateescape") == kept:
        return data
    return "".join("\ufffd" if _surrogate(c) else c for c in text).encode("utf-8")


def _surrogate(c: str) -> bool:
    return "\ud800" <= c <= "\udfff"


def _escape(c: str) -> bool:
    """Whether `c` is a surrogate escape: a byte 0x80..0xFF that was not UTF-8."""
    return "\udc80" <= c <= "\udcff"


def text(value: bytes | str | None) -> str | None:
    """What `blob` stored, as the text it was: a TEXT value (a name, a path that is UTF-8) as
    it is."""
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", "surrogateescape")


def bound(value: str) -> str | bytes:
    """A name or a path as a TEXT column holds it, and as a filter compares it: text when it is
    UTF-8, else its bytes (`blob`): a directory or an argument may hold bytes that are not UTF-8,
    which Python reads as surrogate escapes and SQLite's text cannot bind."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return blob(value) or b""
    return value
