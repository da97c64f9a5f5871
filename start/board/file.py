"""Where a project's board is, and opening it: a private file in start's state directory, keyed
by the project root's real path (never in the repository), brought up to date by named
migrations (start.board.store has the board itself).

The directory `boards/` is 0700 and the files 0600, as the history's are; both are opened, checked
and migrated through start.base.sqlite. A board made by any release is migrated to this one's
schema when it is opened, one transaction per migration, each recorded by name in its
`migrations` table.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from start.base import inputs, paths, sqlite
from start.board import BoardError
from start.board.rows import STORED
from start.board.store import Board

DIRECTORY: Final = "boards"
# How long a writer waits for another to finish, in seconds.
BUSY_TIMEOUT: Final = sqlite.BUSY_TIMEOUT

# The columns of free text that earlier releases kept with 'surrogatepass'.
_TEXTS: Final = ("title", "description", "answer", "reason")


def _text_as_kept(connection: sqlite3.Connection) -> None:
    """m003: each text an earlier release stored with 'surrogatepass' as `sqlite.blob` keeps it.
    Only a text that held a surrogate changes (UTF-8 has it as ED A0..ED BF); any other was
    UTF-8 as it is kept now."""
    marked = " OR ".join(f"instr({column}, X'ED')" for column in _TEXTS)
    rows = connection.execute(f"SELECT seq, {', '.join(_TEXTS)} FROM items WHERE {marked}")
    for seq, *values in rows.fetchall():
        kept = [_kept(value) for value in values]
        if kept != values:
            sets = ", ".join(f"{column} = ?" for column in _TEXTS)
            connection.execute(f"UPDATE items SET {sets} WHERE seq = ?", (*kept, seq))


def _kept(value: bytes | str | None) -> bytes | str | None:
    """One text as an earlier release kept it, as `sqlite.blob` keeps it."""
    if not isinstance(value, bytes):
        return value
    try:
        return sqlite.blob(value.decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError:  # not what an earlier release wrote: left as it is
        return value


def _asks(connection: sqlite3.Connection) -> None:
    """m004: each item's run, as an earlier start stored it, as the ask it is."""
    import json

    from start.compose.ask import data, from_data

    rows = connection.execute("SELECT seq, run FROM items WHERE run IS NOT NULL").fetchall()
    for seq, run in rows:
        asked = from_data(json.loads(run))
        connection.execute(
            "UPDATE items SET run = ? WHERE seq = ?", (json.dumps(data(asked), sort_keys=True), seq)
        )


# The board's migrations, by name, in order (start.base.sqlite). The columns of fields added to
# start.board.Item since are added when a board is opened (start.board.rows.STORED).
MIGRATIONS: Final[tuple[sqlite.Migration, ...]] = (
    (
        "m001_items",
        (
            "CREATE TABLE about (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            """CREATE TABLE items (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                title BLOB NOT NULL,
                description BLOB NOT NULL,
                status TEXT NOT NULL
                    CHECK (status IN ('pending', 'in_progress', 'completed', 'failed')),
                assignee TEXT,
                holder_pid INTEGER,
                holder_started TEXT,
                metadata TEXT NOT NULL,
                created_by TEXT NOT NULL,
                run TEXT,
                answer BLOB,
                reason BLOB,
                history INTEGER,
                epoch INTEGER NOT NULL DEFAULT 0,
                releases INTEGER NOT NULL DEFAULT 0,
                created TEXT NOT NULL,
                updated TEXT NOT NULL
            )""",
            "CREATE INDEX items_status ON items (status)",
            """CREATE TABLE deps (
                item INTEGER NOT NULL,
                blocked_by INTEGER NOT NULL,
                position INTEGER NOT NULL,
                PRIMARY KEY (item, blocked_by)
            ) WITHOUT ROWID""",
            "CREATE INDEX deps_blocked_by ON deps (blocked_by)",
            """CREATE TABLE events (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                at TEXT NOT NULL,
                item INTEGER NOT NULL,
                actor TEXT NOT NULL,
                op TEXT NOT NULL,
                detail TEXT NOT NULL
            )""",
            "CREATE INDEX events_item ON events (item)",
        ),
    ),
    (
        # Who shaped an item, and at which level (docs/board.md, "Who shaped it"). An item of an
        # older board that an agent's session made or changed, or whose answer it wrote, gets
        # the least level, as an answer of a run whose level the board did not keep does.
        "m002_levels",
        (
            "ALTER TABLE items ADD COLUMN level TEXT NOT NULL DEFAULT 'full'",
            "ALTER TABLE items ADD COLUMN level_by TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE items ADD COLUMN answer_level TEXT",
            "UPDATE items SET level_by = created_by",
            """UPDATE items SET level = 'read-only', level_by = (
                    SELECT e.actor FROM events e WHERE e.item = items.seq
                    AND e.op IN ('create', 'update') AND e.actor LIKE 'mcp:%' ORDER BY e.seq
                    LIMIT 1)
                WHERE EXISTS (SELECT 1 FROM events e WHERE e.item = items.seq
                    AND e.op IN ('create', 'update') AND e.actor LIKE 'mcp:%')""",
            """UPDATE items SET answer_level = CASE
                    WHEN assignee LIKE 'mcp:%' OR assignee LIKE 'run:%' THEN 'read-only'
                    ELSE 'full' END
                WHERE status = 'completed'""",
        ),
    ),
    (
        # Free text as every store keeps it (start.base.sqlite.blob): earlier releases kept it
        # with 'surrogatepass', which wrote a surrogate escape as three bytes of its own where
        # the history keeps the byte it stands for.
        "m003_text",
        (_text_as_kept,),
    ),
    # What an item runs is an ask (start.compose.ask), with the names of its fields, as every
    # door's is: an earlier board's run ({agent, prompt | task, model, permissions, via}).
    ("m004_asks", (_asks,)),
    (
        # Archive, not delete: an archived item keeps everything and is left out of listings
        # and claims (docs/board.md, "Archive"); a listing shows the newest activity first.
        "m005_archive",
        (
            "ALTER TABLE items ADD COLUMN archived TEXT",
            "CREATE INDEX items_updated ON items (updated)",
        ),
    ),
    (
        # Priority, labels and parents (docs/board.md, "Priority, labels and parents"): the
        # ready items go by priority, then age; a label filters through its own index, at
        # 10,000 items as at ten; an epic counts its children through theirs.
        "m006_structure",
        (
            "ALTER TABLE items ADD COLUMN priority INTEGER NOT NULL "
            f"DEFAULT {inputs.DEFAULT_PRIORITY}",
            "ALTER TABLE items ADD COLUMN parent INTEGER",
            "CREATE INDEX items_parent ON items (parent)",
            "CREATE INDEX items_ready ON items (status, priority, seq)",
            """CREATE TABLE labels (
                item INTEGER NOT NULL,
                name TEXT NOT NULL,
                PRIMARY KEY (item, name)
            ) WITHOUT ROWID""",
            "CREATE INDEX labels_name ON labels (name, item)",
        ),
    ),
    (
        # Comments (docs/board.md, "Comments"): appended, never changed, each with its author
        # and time; an item's are read in the order they were written.
        "m007_comments",
        (
            """CREATE TABLE comments (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                item INTEGER NOT NULL,
                at TEXT NOT NULL,
                author TEXT NOT NULL,
                text BLOB NOT NULL
            )""",
            "CREATE INDEX comments_item ON comments (item, seq)",
        ),
    ),
    (
        # The board across machines (docs/board-sync-design.md): `sync` has one row once sync
        # is turned on (`start board sync`), none before, so that a board that never syncs
        # writes nothing more; `ops` is this machine's log, each operation's bytes and its
        # place on the remote (NULL until pushed); an item's key (ORIGIN.N) names it on every
        # machine, and an event written from an operation names it.
        "m008_sync",
        (
            """CREATE TABLE sync (
                one INTEGER PRIMARY KEY CHECK (one = 1),
                origin TEXT NOT NULL,
                wall INTEGER NOT NULL,
                logical INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                items INTEGER NOT NULL,
                summed INTEGER NOT NULL DEFAULT 0,
                last_sync TEXT
            )""",
            """CREATE TABLE ops (
                name TEXT NOT NULL UNIQUE,
                bytes BLOB NOT NULL,
                position INTEGER,
                logged INTEGER NOT NULL DEFAULT 0
            )""",
            "CREATE INDEX ops_logged ON ops (logged)",
            """CREATE TABLE keys (
                seq INTEGER PRIMARY KEY,
                key TEXT NOT NULL UNIQUE
            )""",
            "ALTER TABLE events ADD COLUMN name TEXT",
        ),
    ),
    (
        # A claim is confirmed once its push is taken (docs/board-sync-design.md, "Confirmed by a
        # push"): each item's key names the operation that made its present epoch, whose place
        # on the remote (ops.position) says whether it is confirmed.
        "m009_confirmed",
        ("ALTER TABLE keys ADD COLUMN made TEXT",),
    ),
    (
        # A sync replays only the items its operations touch (docs/board-sync-design.md, "The
        # store's cache of the log"): the rows are replay's, as of the level the last rebuild
        # capped other origins at (NULL: not known to be, and the next sync rebuilds them all);
        # and reads only what is new of this machine's log: the tip of it the board took whole.
        "m010_replayed",
        ("ALTER TABLE sync ADD COLUMN replayed TEXT", "ALTER TABLE sync ADD COLUMN taken TEXT"),
    ),
)


def location(workdir: str) -> tuple[str, str]:
    """The project root's real path, and the board's file for it in the state directory."""
    root = os.path.realpath(paths.find_project(workdir).root)
    return root, paths.join(paths.state_dir(), DIRECTORY, file_name(root))


# The longest file name made of a root's path; a longer one is cut and given a digest.
_LONGEST: Final = 200
_KEPT: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._")


def file_name(root: str) -> str:
    """The board's file name for a root: its path with each `/` as `-` and every other byte but
    letters, digits, `.` and `_` as `%XX` (`/home/me/my-app` is `home-me-my%2Dapp.db`), so that
    two roots never share a name and a person can tell whose board it is. A name too long for a
    file system keeps its start and gets a digest of the whole path after a `~`."""
    path = os.fsencode(root)[1:]
    name = "".join(
        "-" if byte == 0x2F else chr(byte) if byte in _KEPT else f"%{byte:02X}" for byte in path
    )
    if len(name) > _LONGEST:
        import hashlib  # only for such a path: OpenSSL's binding costs a board command

        name = f"{name[:100]}~{hashlib.sha256(path).hexdigest()[:32]}"
    return f"{name or '-'}.db"


def directory() -> str:
    return paths.join(paths.state_dir(), DIRECTORY)


def may_sync(board: Board) -> bool:
    """Whether the setting board_remote can concern `board`, read from files alone: sync is on
    for it, or its project is in a git repository whose config may name a remote (a section
    `[remote "..."]` or an include in the repository's config, a `.git` that is a file, or a
    remote in the user's git config). A command that changes an item's holder or status reads
    start's config for board_remote only then: a board with no remote to reach pays nothing
    for sync (docs/performance.md, targets 10a and 10d)."""
    if board.sync() is not None:
        return True
    at = board.root
    while True:
        found = os.path.join(at, ".git")
        if os.path.lexists(found):
            break
        above = os.path.dirname(at)
        if above == at:
            return False  # no git repository: no remote
        at = above
    if not os.path.isdir(found):
        return True  # a worktree's or a submodule's: its config lies elsewhere
    home = os.path.expanduser("~")
    configs = (
        os.path.join(found, "config"),
        os.path.join(home, ".gitconfig"),
        os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"),
                     "git", "config"),
    )  # fmt: skip
    for each in configs:
        try:
            with open(each, "rb") as config:
                text = config.read().lower()
        except OSError:
            continue
        if b"[remote" in text or b"[include" in text:
            return True
    return False


def open_board(workdir: str, *, create: bool = True, sweep: bool = True) -> Board | None:
    """The board of the project `workdir` is in, migrated and swept (see the module). Without
    `create`, None when it does not exist yet. Raises BoardError when it cannot be used."""
    root, path = location(workdir)
    try:
        fd = paths.owned_directory(directory(), create=create, error=BoardError)
    except OSError as error:
        raise BoardError(f"cannot use {directory()}: {error.strerror or error}") from None
    if fd is None:
        return None
    try:
        name = os.path.basename(path)
        if not sqlite.private_file(fd, name, path, create=create, error=BoardError):
            return None
    finally:
        os.close(fd)
    try:
        connection = sqlite.connect(path, timeout=BUSY_TIMEOUT)
    except sqlite3.Error as error:
        raise BoardError(f"the board in {path} cannot be opened: {error}") from None
    try:
        sqlite.configure(connection)
        migrate(connection, path)
        sqlite.add_columns(connection, "items", STORED)
        _own(connection, root, path)
        board = Board(connection, root, path)
        if sweep:
            board.sweep()
    except sqlite3.Error as error:
        connection.close()
        raise BoardError(f"the board in {path} cannot be used: {error}") from None
    except BaseException:
        connection.close()
        raise
    return board


@contextmanager
def opened(workdir: str, *, sweep: bool = True) -> Iterator[Board]:
    """`open_board`, closed at the end; SQLite's errors as BoardError."""
    board = open_board(workdir, sweep=sweep)
    assert board is not None
    try:
        yield board
    except sqlite3.Error as error:
        raise BoardError(f"the board in {board.path} cannot be used: {error}") from None
    finally:
        board.close()


def migrate(connection: sqlite3.Connection, path: str) -> None:
    """Apply the migrations the database lacks (start.base.sqlite). A database with a migration
    this start does not know was made by a newer one: BoardError."""
    try:
        sqlite.migrate(connection, MIGRATIONS)
    except sqlite.NewerError:
        raise BoardError(
            f"{path} was made by a newer start (its board has migrations this one does not "
            "know); upgrade start, or move the file away"
        ) from None


def _own(connection: sqlite3.Connection, root: str, path: str) -> None:
    """Record the project root a new board belongs to; refuse a board of another root (two
    roots whose hashes meet)."""
    found = connection.execute("SELECT value FROM about WHERE key = 'root'").fetchone()
    if found is None:
        # A path may hold any byte but `/` and NUL, which Python reads as surrogate escapes,
        # and SQLite's text cannot: such a root is kept as its bytes.
        connection.execute(
            "INSERT OR IGNORE INTO about (key, value) VALUES ('root', ?)", (sqlite.bound(root),)
        )
        found = connection.execute("SELECT value FROM about WHERE key = 'root'").fetchone()
    other = sqlite.text(found[0])
    if other != root:
        raise BoardError(f"{path} is the board of {other}, not of {root}; move it away")
