"""Which asking runs of `start mcp` a process runs inside, read from the process tree: the loop
guard that an MCP client cannot strip.

`start mcp` marks an asked agent's environment with its depth (START_MCP_DEPTH), but MCP clients
start their stdio servers with a whitelisted environment (the Python and TypeScript SDKs keep
HOME, LOGNAME, PATH, SHELL, TERM and USER; Codex a list of its own), so the asked agent's own
`start mcp` may never see it. So while `start mcp` runs asked agents it records itself
(`registered`): its pid, its process start time, and the depth of the runs; and a `start mcp`
finds its depth (`depth`) by walking its ancestors and looking each one up.

A record is an empty file named `PID-START-DEPTH-RANDOM` in `asking/` of the runtime directory,
which, like the directory itself, is made and checked private (0700, this user's, not a symlink)
as temp files are: one create makes a record whole. The client may drop XDG_RUNTIME_DIR and
TMPDIR as well, so a record is written both in start's runtime directory and in the one that a
`start` without those two variables finds, and both are read.

A record counts only for an ancestor whose start time is the one recorded, so a process that
reuses a pid never inherits its depth; the records of processes that are gone are swept.
Ancestors and their start times come from /proc (Linux), else from one `ps -A -o pid=,ppid=,
lstart=` (macOS), in UTC, to the second.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Final

from start.base import paths
from start.base.errors import StartError

# The subdirectory of a runtime directory that holds the records.
DIRECTORY: Final = "asking"
# The most ancestors walked: a real chain is a few dozen long.
MOST_ANCESTORS: Final = 4096
_MONTHS: Final = (
    *("Jan", "Feb", "Mar", "Apr", "May", "Jun"),
    *("Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
)


class RegistryError(StartError):
    """A run cannot be recorded for the loop guard; the run does not start."""


def directories() -> list[str]:
    """Where records are written and read: start's runtime directory, and the one that a `start`
    whose client dropped XDG_RUNTIME_DIR and TMPDIR finds (often the same)."""
    return list(dict.fromkeys([paths.runtime_dir(), paths.runtime_dir({})]))


@contextlib.contextmanager
def registered(depth: int) -> Iterator[None]:
    """Record this process as running asked agents at `depth`, for the block.

    Raises RegistryError when a directory for the records cannot be made private: a run that is
    not recorded could ask again, so none starts. Records nothing where the process tree cannot
    be read, as nothing could then find the record.
    """
    table = _Table()
    me = os.getpid()
    mine = table.entry(me)
    if mine is None:
        yield
        return
    name = f"{me}-{mine[1]}-{depth}-{os.urandom(4).hex()}"
    made: list[int] = []
    try:
        for directory in directories():
            fd = _open(directory, create=True)
            assert fd is not None  # made if missing
            made.append(fd)
            _sweep(fd, table)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                os.close(os.open(name, flags, 0o600, dir_fd=fd))
            except OSError as error:
                where = paths.join(directory, DIRECTORY)
                raise RegistryError(_cannot(where, error.strerror or str(error))) from None
        yield
    finally:
        for fd in made:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=fd)
            os.close(fd)


def depth() -> int:
    """The depth of the runs this process runs inside: the deepest record of any of its
    ancestors (pid and start time both as recorded); 0 when none has one."""
    table = _Table()
    ancestors = table.ancestors(os.getpid())
    deepest = 0
    if not ancestors:
        return deepest
    for directory in directories():
        try:
            fd = _open(directory, create=False)
        except RegistryError:
            continue
        if fd is None:
            continue
        try:
            names = os.listdir(fd)
        except OSError:
            names = []
        finally:
            os.close(fd)
        for name in names:
            record = parse(name)
            if record is not None and ancestors.get(record[0]) == record[1]:
                deepest = max(deepest, record[2])
    return deepest


def parse(name: str) -> tuple[int, str, int] | None:
    """A record's name as (pid, start time, depth); None for any other name."""
    parts = name.split("-")
    if len(parts) != 4 or not all(_digits(part) for part in parts[:3]):
        return None
    last = parts[3]
    if len(last) != 8 or not all(c in "0123456789abcdef" for c in last):
        return None
    return int(parts[0]), parts[1], int(parts[2])


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _cannot(where: str, why: str) -> str:
    return (
        f"cannot record this run for the loop guard of start mcp in {where}: {why}; an "
        "unrecorded run could ask other agents in a loop, so it does not start. Remove it (ask "
        "an administrator if another user owns it): start makes it again, private"
    )


def _open(directory: str, *, create: bool) -> int | None:
    """A descriptor of `directory`/asking, both checked by paths.open_private. Without `create`,
    None when either is missing; RegistryError when either is not private."""
    fd: int | None = None
    for path in (directory, paths.join(directory, DIRECTORY)):
        if fd is not None:
            os.close(fd)
        try:
            fd = paths.open_private(path, create=create)
        except OSError as error:
            if not create and isinstance(error, FileNotFoundError):
                return None
            raise RegistryError(_cannot(path, error.strerror or str(error))) from None
        if fd is None:
            if not create and not os.path.lexists(path):
                return None
            raise RegistryError(_cannot(path, "it is not a directory owned by you"))
    return fd


def _sweep(fd: int, table: _Table) -> None:
    """Remove the records of processes that are gone (or whose pid another process now has)."""
    try:
        names = os.listdir(fd)
    except OSError:
        return
    for name in names:
        record = parse(name)
        if record is None:
            continue
        found = table.entry(record[0])
        if found is None or found[1] != record[1]:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=fd)


class _Table:
    """Each process's parent and start time, read as asked: /proc where there is one, else one
    listing from ps."""

    def __init__(self) -> None:
        self.proc = has_proc()
        self.listed: dict[int, tuple[int, str]] | None = None

    def entry(self, pid: int) -> tuple[int, str] | None:
        """(parent pid, start time) of `pid`; None when it is gone or cannot be read."""
        if self.proc:
            return proc_entry(pid)
        if self.listed is None:
            self.listed = ps_table()
        return self.listed.get(pid)

    def ancestors(self, pid: int) -> dict[int, str]:
        """The start time of each ancestor of `pid`, by pid."""
        found: dict[int, str] = {}
        entry = self.entry(pid)
        while entry is not None and len(found) < MOST_ANCESTORS:
            parent = entry[0]
            if parent <= 0 or parent in found or parent == pid:
                break
            entry = self.entry(parent)
            if entry is not None:
                found[parent] = entry[1]
        return found


def has_proc() -> bool:
    """Whether the process tree can be read from /proc (Linux), rather than from ps (macOS)."""
    return os.path.exists("/proc/self/stat")


def proc_entry(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time in clock ticks since boot) from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            data = file.read()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces and parentheses: the fields follow the
    # last ")". They are then state, ppid, ..., starttime (field 22 of the whole line).
    fields = data.rpartition(b")")[2].split()
    if len(fields) < 20 or not fields[1].isdigit() or not fields[19].isdigit():
        return None
    return int(fields[1]), fields[19].decode("ascii")


def ps_table() -> dict[int, tuple[int, str]]:
    """(parent pid, start time as YYYYMMDDHHMMSS in UTC) of every process, from ps; {} when ps
    cannot be run."""
    import subprocess

    program = "/bin/ps" if os.path.exists("/bin/ps") else "ps"
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "TZ": "UTC0"}
    try:
        listing = subprocess.run(
            [program, "-A", "-o", "pid=", "-o", "ppid=", "-o", "lstart="],
            env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
        ).stdout.decode("ascii", "replace")  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {}
    table: dict[int, tuple[int, str]] = {}
    for line in listing.splitlines():
        # `  812     1 Sat Nov 28 05:51:22 2026`
        words = line.split()
        if len(words) != 7 or words[3] not in _MONTHS:
            continue
        pid, parent, _, month, day, clock, year = words
        started = f"{year}{_MONTHS.index(month) + 1:02}{day:0>2}{clock.replace(':', '')}"
        if _digits(pid) and _digits(parent) and _digits(started) and len(started) == 14:
            table[int(pid)] = (int(parent), started)
    return table
