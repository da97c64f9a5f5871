"""The history of runs: what each launch and headless run sent, to which agent, and what came
back, kept in SQLite in the user's state directory (start.runs.store).

Recording pays for no SQLite: a run's record goes to a file of its own in `pending/` (the marshal
of a dict, written to a temp name and renamed: `spool`), and the next command that opens the
database (`start log`, `start again`, or every PENDING_LIMIT-th run) moves every pending file
into it. Inserting into the database instead costs more, in a fresh process and in one that
records again (benchmarks/recording.py measures both; docs/performance.md has the figures), and
so does importing the code that does it: this module is what a launch imports (through
start.runs.recording, the one way every door records a run), start.runs.store what reads the
history. Everything lives in one
directory, mode 0700, made and checked by `paths.open_private`; the files are 0600.

A run's id is reserved as its pending file is written (`reserve`: a counter in `ids`, under a lock
that a writer holds only to read and write that number), so that the door that recorded it can
name it at once (`--print --json`'s `id`, a board item's run) without waiting for the database.
"""

from __future__ import annotations

import marshal
import os
import time
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Final

from start.base import paths
from start.base.errors import StartError
from start.base.record import Record

if TYPE_CHECKING:
    from start.config.model import Settings
    from start.runs import Run

DIRECTORY: Final = "history"
DATABASE: Final = "history.db"
PENDING: Final = "pending"
# The last id given to a run (decimal text): every id the database holds comes from it.
IDS: Final = "ids"
# How long a run waits for another process to give up the lock of `ids`, in seconds. A writer
# holds it only to read and write a number: a longer wait means that one was stopped (SIGSTOP, a
# debugger), and the run is recorded without an id rather than wait (the database moves it in
# under the next one).
RESERVE_TIMEOUT: Final = 0.2
# A launch moves the pending records into the database itself once there are this many, so
# that `pending/` stays small for a user who never runs `start log`.
PENDING_LIMIT: Final = 64
# The version of a pending file's dict: 1, start 0.1.0's; 2, a start.runs.Run's fields.
FORMAT: Final = 2


class HistoryError(StartError):
    """The history cannot be read or written."""


def directory() -> str:
    """Where the history lives: `history/` in the state directory."""
    return paths.join(paths.state_dir(), DIRECTORY)


def database() -> str:
    return paths.join(directory(), DATABASE)


def fields(run: Run, limit: int) -> dict[str, Any]:
    """A run as a pending file holds it: its fields as plain values (start.runs), cut to fit
    `limit` (`fit`), with the format and the limit it was recorded under."""
    from start.runs import Run as Record
    from start.runs import plain

    data = {name: plain(value) for name, value in zip(Record._fields, run, strict=True)}
    data["id"] = None  # reserved as the file is written (`reserve`)
    return fit({"format": FORMAT, **data, "limit": limit}, limit)


# The marker that stands for what was cut of a text of a record larger than the history's limit.
_CUT: Final = (
    "\n[... {count} characters cut: the run was larger than settings.history_size_limit]\n"
)


def size(data: dict[str, Any]) -> int:
    """The bytes a record counts against settings.history_size_limit: each of its texts in
    UTF-8, as many times as fields hold it (the database stores each field apart)."""
    total = 0
    stack = list(data.values())
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            ascii_only = value.isascii()
            total += len(value if ascii_only else value.encode("utf-8", "surrogatepass"))
        elif isinstance(value, list | tuple):
            stack.extend(value)
            total += 2
        elif isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
            total += 2
        else:
            total += 8
    return total


def fit(data: dict[str, Any], limit: int) -> dict[str, Any]:
    """`data` within `limit` bytes (`size`): when it is larger, its longest texts keep their
    start and end with a marker between. A record whose other fields alone are larger stays
    so; the database never keeps it (`start.runs.store.Store.trim`)."""
    from start.runs import TEXTS

    over = size(data) - limit
    for key in sorted(TEXTS, key=lambda name: len(data[name] or ""), reverse=True):
        text: str | None = data[key]
        if over <= 0 or not text:
            break
        # A character is one byte or more: cutting `over` characters cuts `over` bytes at least.
        keep = max(0, len(text) - over - len(_CUT.format(count=len(text))))
        cut = _CUT.format(count=len(text) - keep)
        data[key] = text[: keep - keep // 2] + cut + text[len(text) - keep // 2 :]
        over = size(data) - limit
    return data


class Spooled(Record):
    """A run's pending file, written."""

    key: str  # its name, the database's unique key of the run
    id: int | None  # the run's id (`reserve`); None when none could be reserved
    # Whether the pending runs are to be moved into the database now (start.runs.store.flush).
    full: bool


def spool(run: Run, settings: Settings) -> Spooled | None:
    """Write one run's pending file (start.runs), with the id reserved for it, unless
    `settings.history` is off (None then). It says whether the pending runs are to be moved into
    the database now: `pending/` holds PENDING_LIMIT runs or more, or this run is large (over
    1/PENDING_LIMIT of the limit), so that `pending/` holds little more than the limit. A run
    larger than the history's limit is cut to fit (`fit`). start.runs.recording.record, the one
    way to record a run, calls it. Raises HistoryError when the history cannot be written.
    """
    if not settings.history:
        return None
    data = fields(run, settings.history_size_limit)
    try:
        key, count = _write(data)
    except OSError as error:
        raise HistoryError(f"cannot record the run in {directory()}: {reason(error)}") from None
    full = count >= PENDING_LIMIT or size(data) * PENDING_LIMIT > data["limit"]
    return Spooled(key, data["id"], full)


def reason(error: BaseException) -> str:
    return (error.strerror if isinstance(error, OSError) else None) or str(error)


def private_directory(create: bool) -> int | None:
    """A descriptor of the history directory, checked by `paths.owned_directory`."""
    return paths.owned_directory(directory(), create=create, error=HistoryError)


def _write(data: dict[str, Any]) -> tuple[str, int]:
    """Write `data` as a new pending file, with an id reserved for it (`reserve`) unless it has
    one; its name, and the number of pending files, this one included."""
    fd = private_directory(create=True)
    assert fd is not None
    try:
        with suppress(FileExistsError):
            os.mkdir(PENDING, mode=0o700, dir_fd=fd)
        pending = open_dir(PENDING, fd)
        try:
            if data.get("id") is None:
                data["id"] = reserve(fd, pending)
            name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}"
            if data["id"] is not None:
                name += f"-{data['id']}"  # a counter made anew starts above it (`reserve`)
            temp = f".{name}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            out = os.open(temp, flags, 0o600, dir_fd=pending)
            try:
                _write_all(out, marshal.dumps(data))
            finally:
                os.close(out)
            os.rename(temp, name, src_dir_fd=pending, dst_dir_fd=pending)
            return name, sum(1 for entry in os.listdir(pending) if not entry.startswith("."))
        finally:
            os.close(pending)
    finally:
        os.close(fd)


def reserve(
    fd: int, pending: int | None, *, last: int | None = None, take: bool = True
) -> int | None:
    """The next id of a run, reserved: the counter in `ids` (in the history directory `fd`), one
    up, under its lock. `pending`: the directory of pending files. A counter that is missing
    (a history of an earlier release, or a new one) or unreadable starts above the last id of
    the database and of every pending file (which names the id it holds: `_write`). `last`: the
    database's last id, from a caller that has it open (start.runs.store), which raises the
    counter to it (an earlier release may have given ids of its own meanwhile); without `take`,
    that is all, and this returns None.

    None, and nothing reserved, when another process holds the lock past RESERVE_TIMEOUT, or a
    counter to be made anew finds a database it cannot read: the run is recorded without an id
    then, and the database gives it one as it moves it in. Raises OSError when `ids` cannot be
    opened or written.
    """
    import fcntl

    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    counter = os.open(IDS, flags, 0o600, dir_fd=fd)
    try:
        deadline = time.monotonic() + RESERVE_TIMEOUT
        while True:
            try:
                # flock, not lockf: a lock of each open file, so that threads exclude each other
                # too (start mcp and start board run record from several).
                fcntl.flock(counter, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return None
                time.sleep(0.001)
        text = os.pread(counter, 32, 0).strip()
        given = int(text) if text.isdigit() else None
        if given is None or last is not None:
            found = last if last is not None else _database_last(fd)
            if found is None:
                return None
            given = max(given or 0, found, _pending_last(pending))
        if take:
            given += 1
        data = b"%d\n" % given
        os.pwrite(counter, data, 0)
        os.ftruncate(counter, len(data))
        return given if take else None
    finally:
        os.close(counter)  # which releases the lock


def _pending_last(pending: int | None) -> int:
    """The largest id a pending file holds, by its name (`_write`); 0 for none."""
    if pending is None:
        return 0
    found = 0
    for name in os.listdir(pending):
        tail = name.rsplit("-", 3)
        if not name.startswith(".") and len(tail) == 4 and tail[3].isdigit():
            found = max(found, int(tail[3]))
    return found


def _database_last(fd: int) -> int | None:
    """The last id the database gave (its AUTOINCREMENT's), 0 when there is no database yet,
    None when it cannot be read at once (another process holds it, it is damaged): read only
    when a counter is made anew, the first run after an upgrade."""
    try:
        os.stat(DATABASE, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return 0
    from start.base import sqlite

    return sqlite.peek_last_id(database(), "runs", timeout=0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def open_dir(name: str, parent: int) -> int:
    """A directory in `parent`, never through a symlink, and ours."""
    import stat

    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=parent)
    except OSError as error:
        raise HistoryError(f"{paths.join(directory(), name)}: {reason(error)}") from None
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        raise HistoryError(f"{paths.join(directory(), name)} is not a directory owned by you")
    return fd
