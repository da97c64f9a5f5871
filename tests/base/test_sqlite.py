"""The one door to SQLite (start.base.sqlite): the only connect site, the text codec every store
keeps, the write transaction and named migrations."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.base import sqlite
from start.base.errors import StartError
from tests.conftest import REPO


def test_the_door_is_the_only_place_start_connects_to_sqlite() -> None:
    found = []
    for path in sorted((REPO / "start").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bsqlite3\.connect\b", line):
                found.append(f"{path.relative_to(REPO)}:{number}")
    assert [place.split(":")[0] for place in found] == ["start/base/sqlite.py"]


@given(st.binary())
def test_bytes_read_are_kept_as_those_bytes_and_read_back_as_the_same_text(data: bytes) -> None:
    """What a path, a command line or a command's output gave (bytes read with surrogate
    escapes) is stored as its very bytes, and reads back as the text it was."""
    read = data.decode("utf-8", "surrogateescape")
    assert sqlite.blob(read) == data
    assert sqlite.text(sqlite.blob(read)) == read


@given(st.text(alphabet=st.characters(codec=None)))
def test_any_text_is_stored_and_reads_back_as_it_was_or_with_u_fffd(text: str) -> None:
    """Any string is stored; it reads back as it was, unless it held a surrogate that stands for
    no byte of its own (the doors refuse one), which reads back as U+FFFD."""
    back = sqlite.text(sqlite.blob(text))
    assert back is not None and len(back) == len(text)
    for was, now in zip(text, back, strict=True):
        assert now in (was, "\ufffd")
        assert now == was or "\ud800" <= was <= "\udfff"
    assert sqlite.text(sqlite.blob(back)) == back


def test_the_codec_of_text_that_cannot_be_kept() -> None:
    assert sqlite.blob("x\ud800y\udc80") == b"x\xef\xbf\xbdy\x80"  # the escape kept
    # Escapes that spell UTF-8 together would read back as "é": every surrogate is U+FFFD.
    assert sqlite.blob("\udcc3\udca9") == "\ufffd\ufffd".encode()
    assert (sqlite.blob(None), sqlite.text(None), sqlite.text("as is")) == (None, None, "as is")
    assert sqlite.bound("caf\u00e9") == "caf\u00e9"
    assert sqlite.bound("caf\udce9") == b"caf\xe9"


def test_a_write_transaction_commits_or_rolls_back_whole() -> None:
    connection = sqlite.connect(None)
    connection.execute("CREATE TABLE t (x INTEGER)")
    with sqlite.writing(connection) as writing:
        writing.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(ZeroDivisionError), sqlite.writing(connection) as writing:
        writing.execute("INSERT INTO t VALUES (2)")
        _ = 1 / 0
    assert [tuple(row) for row in connection.execute("SELECT x FROM t")] == [(1,)]
    assert connection.in_transaction is False


def _insert(connection: sqlite3.Connection) -> None:
    connection.execute("INSERT INTO t VALUES (2)")


MIGRATIONS: list[sqlite.Migration] = [
    ("m001_t", ("CREATE TABLE t (x INTEGER)",)),
    ("m002_u", (_insert,)),
]


def test_migrations_apply_once_each_and_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    connection = sqlite.connect(path)
    assert sqlite.migrate(connection, MIGRATIONS[:1]) == 1
    assert sqlite.migrate(connection, MIGRATIONS) == 1
    assert sqlite.migrate(connection, MIGRATIONS) == 0
    assert [tuple(row) for row in connection.execute("SELECT x FROM t")] == [(2,)]
    with pytest.raises(sqlite.NewerError):
        sqlite.migrate(connection, MIGRATIONS[:1])
    connection.execute("INSERT INTO migrations VALUES ('m999_later', 'then')")
    connection.execute("PRAGMA user_version = 1")
    with pytest.raises(sqlite.NewerError):
        sqlite.migrate(connection, MIGRATIONS)


def test_a_missing_column_is_added_and_the_rows_before_it_hold_null() -> None:
    connection = sqlite.connect(None)
    connection.execute("CREATE TABLE t (x INTEGER)")
    connection.execute("INSERT INTO t VALUES (1)")
    sqlite.add_columns(connection, "t", {"x": "INTEGER", "y": "TEXT"})
    assert sqlite.columns(connection, "t") == {"x", "y"}
    assert [tuple(row) for row in connection.execute("SELECT x, y FROM t")] == [(1, None)]


class _Refused(StartError):
    pass


def test_the_file_is_made_private_and_a_link_or_a_directory_is_refused(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert not sqlite.private_file(fd, "db", "P", create=False, error=_Refused)
        assert sqlite.private_file(fd, "db", "P", create=True, error=_Refused)
        assert (tmp_path / "db").stat().st_mode & 0o777 == 0o600
        (tmp_path / "db").chmod(0o644)
        assert sqlite.private_file(fd, "db", "P", create=False, error=_Refused)
        assert (tmp_path / "db").stat().st_mode & 0o777 == 0o600
        (tmp_path / "link").symlink_to(tmp_path / "db")
        with pytest.raises(_Refused) as refused:
            sqlite.private_file(fd, "link", "P", create=True, error=_Refused)
        assert str(refused.value) == "P: Too many levels of symbolic links"
        (tmp_path / "dir").mkdir()
        with pytest.raises(_Refused) as refused:
            sqlite.private_file(fd, "dir", "P", create=True, error=_Refused)
        assert str(refused.value) == "P: Is a directory"
    finally:
        os.close(fd)


# Another process's connection: it commits a row, and closes, as `start board add` does.
_COMMIT = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("INSERT INTO t VALUES (1)")
connection.close()
"""


def test_checking_the_file_again_keeps_the_locks_of_a_connection_this_process_has_open(
    tmp_path: Path,
) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it. So the
    check of a database file that a connection of this process already holds (a second open of
    the board, as each request of `start board serve` makes) must not open the file: else
    another process's close believes it is the last, takes the WAL away, and the connection
    left open sees no commit after (the page's live updates stopped after its first read)."""
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert sqlite.private_file(fd, "db", "P", create=True, error=_Refused)
        held = sqlite.connect(str(tmp_path / "db"))
        sqlite.configure(held)
        held.execute("CREATE TABLE t (x)")
        for rows in (1, 2, 3):
            assert sqlite.private_file(fd, "db", "P", create=True, error=_Refused)
            subprocess.run([sys.executable, "-c", _COMMIT, str(tmp_path / "db")], check=True)
            assert held.execute("SELECT count(*) FROM t").fetchone()[0] == rows
        held.close()
    finally:
        os.close(fd)


def test_busy_and_damaged_errors_are_told_apart(tmp_path: Path) -> None:
    path = tmp_path / "db"
    path.write_bytes(b"not a database\n" * 300)
    connection = sqlite.connect(str(path))
    with pytest.raises(sqlite3.Error) as caught:
        sqlite.configure(connection)
    assert sqlite.damaged(caught.value) and not sqlite.busy(caught.value)
