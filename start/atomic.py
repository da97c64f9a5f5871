"""Atomic file replacement: the one way `start` writes config and state files."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

# `.NAME.8HEX.tmp`: the temp file `replace` writes beside NAME (debris if its writer was killed).
_TEMP = re.compile(r"^\..+\.[0-9a-f]{8}\.tmp$")


def is_temp_name(name: str) -> bool:
    """Whether a file name is one of `replace`'s temp files."""
    return _TEMP.match(name) is not None


def replace(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write `data` over `path` so that readers see the old bytes or the new, never a mix.

    The bytes go to a temp file beside `path`, which is fsynced, given `mode` (by default the
    mode `path` has now, else 0644 less the umask: never writable by group or others), and
    renamed over `path`; then the directory is fsynced.
    """
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o644 & ~mask
    while True:
        temp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
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
