"""Named migrations of start's SQLite stores (the history, the board), as llm's migrations.py
does for its logs: a database made by any release is brought up to this one's schema when it is
opened, one transaction per migration, each recorded by name in its `migrations` table.

A name is never reused or changed once released; a change to a schema is a new migration at the
end of its list. `PRAGMA user_version` counts the migrations applied, so that an open of an
up-to-date database costs one pragma, and a database with more (or with a name this release does
not know) was made by a newer start, which the caller refuses.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

# A migration's step: SQL statements, or a function that changes the database itself.
Step = str | Callable[[sqlite3.Connection], None]
Migration = tuple[str, Sequence[Step]]


class NewerError(Exception):
    """The database was made by a newer release: it has migrations this one does not know."""


def apply(connection: sqlite3.Connection, migrations: Sequence[Migration]) -> int:
    """Apply the migrations the database lacks, in order, one transaction each; how many were
    applied. Raises NewerError for a database of a newer release. `connection` is in autocommit
    mode (isolation_level None)."""
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
        connection.execute("BEGIN IMMEDIATE")
        try:
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
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    return done


def columns(connection: sqlite3.Connection, table: str) -> set[str]:
    """The names of a table's columns."""
    return {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
