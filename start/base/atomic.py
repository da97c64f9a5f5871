"""Atomic file replacement: how `start` writes config files, the config cache and trust records.

Files that are new and never replaced are written directly: a config backup and the agent's temp
files with O_EXCL, the editor's working copy in a new private directory (mkdtemp).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import stat
import time

# `.NAME.8HEX.tmp`: the temp file `replace` writes beside NAME (debris if its writer was killed).
_TEMP = r"\..+\.[0-9a-f]{8}\.tmp"
# A temp file younger than this is never swept: its writer may not have locked it yet.
_GRACE = 10.0


def is_temp_name(name: str) -> bool:
    """Whether a file name is one of `replace`'s temp files."""
    # The pattern is compiled only for a name that could be one: the trust scan of a launch
    # asks of every file in `.start/`, and compiles nothing for config files.
    return name.startswith(".") and name.endswith(".tmp") and _temp().fullmatch(name) is not None


@functools.cache
def _temp() -> re.Pattern[str]:
    return re.compile(_TEMP)


def replace(path: str, data: bytes, *, mode: int | None = None, durable: bool = True) -> None:
    """Write `data` over `path` so that readers see the old bytes or the new, never a mix.

    The bytes go to a temp file beside `path`, which is fsynced, given `mode` (by default the
    mode `path` has now, else 0644 less the umask: never writable by group or others), and
    renamed over `path`; then the directory is fsynced. With `durable=False` (a cache, where a
    file lost in a crash is only a miss) neither is fsynced: readers still never see a mix.
    """
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o644 & ~mask
    directory, name = os.path.split(path)
    while True:
        temp = os.path.join(directory, temp_name(name))
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            break
        except FileExistsError:
            continue
    try:
        import fcntl  # only when writing

        # Held until the file is renamed or removed: a locked temp file belongs to a live writer.
        fcntl.flock(fd, fcntl.LOCK_EX)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            if durable:
                os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    if durable:
        sync_directory(directory or ".")
    sweep(directory or ".", writing=name)


def temp_name(name: str) -> str:
    """The name of a temp file for `name`: `.NAME.8HEX.tmp`, which `is_temp_name` knows."""
    return f".{name}.{os.urandom(4).hex()}.tmp"


def sweep(directory: str, now: float | None = None, *, writing: str = "") -> list[str]:
    """Remove the temp files that killed writers left in `directory`; the names removed.

    Only the temp files of `writing` or of a file that exists beside them are touched (a name
    like ours that belongs to nothing here is not ours to remove). Such a temp file is stale when
    no process holds its lock (every writer holds it until the file is renamed) and it is older
    than a few seconds (a writer locks it right after creating it).
    """
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    names = {entry.name for entry in entries} | {writing}
    for entry in entries:
        if not is_temp_name(entry.name) or _written(entry.name) not in names:
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # gone already, a symlink, or not ours to open
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or now - info.st_mtime < _GRACE:
                continue
            import fcntl  # only when a temp file is left

            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live writer holds it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def _written(temp: str) -> str:
    """The file a temp file `.NAME.8HEX.tmp` was writing: NAME."""
    return temp[1 : -len(".01234567.tmp")]


def sync_directory(directory: str) -> None:
    """Make a rename in `directory` durable, where the file system allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename has happened
    finally:
        os.close(fd)
