"""Temp files for `{role_file}` and `{prompt_file}`, kept after exec and swept by later runs."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Sequence

from start.base import paths
from start.base.errors import StartError

STALE_SECONDS = 24 * 3600
KEPT_PREFIX = "dry-run-"
SWEEP_EVERY = 60  # seconds between two sweeps of the runtime directory
_STAMP = ".swept"  # its mtime is the time of the last sweep
# The NAMEs of `PID-NAME-HEX` files: launch.py writes "prompt", "role" and, for a headless run
# whose CLI writes its answer to a file, "answer"; for a CLI that reads a task's output schema
# from a file ({schema_file}), "schema".
_NAMES = frozenset({"prompt", "role", "answer", "schema"})


class TempFiles:
    """`{role_file}` and `{prompt_file}`: 0600 files in a private 0700 runtime directory.

    The prompt file is `prompt.md` in a 0700 directory of its own, `{prompt_dir}`: an agent that
    is granted that directory is granted nothing else.

    A dry run keeps its files in a directory of their own, `dry-run-TIME-RANDOM`, so that its
    command line can be pasted; a later run sweeps that directory once it is a day old.
    """

    def __init__(self, directory: str | None = None, *, keep: bool = False) -> None:
        self.directory = directory or paths.runtime_dir()
        self.keep = keep
        self.created: list[str] = []
        self.kept: str | None = None
        self._kept_files: dict[str, tuple[str, str]] = {}
        self._ready = False

    def _prepare(self) -> None:
        if self._ready:
            return
        directory = self.directory
        try:
            fd = paths.open_private(directory)
        except OSError as error:
            raise StartError(
                f"cannot create the runtime directory {directory}: {error.strerror or error}; "
                "set XDG_RUNTIME_DIR to a private directory you can write"
            ) from None
        if fd is None:
            raise StartError(
                f"runtime directory {directory} is not a directory owned by you; remove it "
                "or set XDG_RUNTIME_DIR to a private directory"
            )
        try:
            _sweep(fd, time.time())
        finally:
            os.close(fd)
        if self.keep:
            name = f"{KEPT_PREFIX}{int(time.time())}-{os.urandom(4).hex()}"
            self.kept = os.path.join(directory, name)
            os.mkdir(self.kept, mode=0o700)
        self._ready = True

    def write(self, name: str, text: str, *, own_directory: bool = False) -> str:
        """A new file `name` holding `text`; with `own_directory`, alone in a new directory."""
        if name not in _NAMES:
            raise ValueError(f"{name!r}: the sweep would not know it (see _NAMES)")
        self._prepare()
        if self.kept is not None:
            earlier = self._kept_files.get(name)
            if earlier is not None and earlier[0] == text:
                return earlier[1]
            path = os.path.join(self.kept, f"{name}-2.md" if earlier is not None else f"{name}.md")
        else:
            path = os.path.join(self.directory, f"{os.getpid()}-{name}-{os.urandom(4).hex()}")
            if own_directory:
                os.mkdir(path, mode=0o700)
                self.created.append(path)
                path = os.path.join(path, f"{name}.md")
            else:
                path += ".md"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, text.encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
        if self.kept is not None:
            self._kept_files.setdefault(name, (text, path))
        elif not own_directory:
            self.created.append(path)
        return path

    def remove(self) -> None:
        remove(self.created)
        if self.kept is not None:
            _remove_tree(self.kept, ignore_errors=True)


def remove(paths: Sequence[str]) -> None:
    """Remove temp files and directories; those already gone are fine."""
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            _remove_tree(path, ignore_errors=True)
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _remove_tree(path: str, *, ignore_errors: bool = False, dir_fd: int | None = None) -> None:
    """shutil.rmtree (which never follows a symlink); imported only when a directory goes."""
    import shutil

    shutil.rmtree(path, ignore_errors=ignore_errors, dir_fd=dir_fd)


def sweep_due(directory: str, now: float | None = None) -> None:
    """Sweep `directory` if the last sweep was SWEEP_EVERY seconds ago or more.

    Every launch calls this, so the temp files of agents that have exited go away even when no
    launch writes one. It costs an open and two stats when a sweep is not due. A directory that
    is missing, a symlink, another user's or not 0700 is left alone: it is not ours to sweep.
    """
    now = time.time() if now is None else now
    try:
        fd = paths.open_private(directory, create=False)
    except OSError:
        return
    if fd is None:
        return
    try:
        try:
            last: float | None = os.stat(_STAMP, dir_fd=fd, follow_symlinks=False).st_mtime
        except FileNotFoundError:
            last = None
        if last is not None and 0 <= now - last < SWEEP_EVERY:
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        stamp = os.open(_STAMP, flags, 0o600, dir_fd=fd)
        try:
            os.utime(stamp, (now, now))
        finally:
            os.close(stamp)
        _sweep(fd, now)
    except OSError:
        return
    finally:
        os.close(fd)


def sweep(directory: str, now: float | None = None) -> None:
    """Remove temp files whose process is gone or that are over a day old, and old dry runs.

    Only in a directory that `paths.open_private` verifies, and only names that TempFiles writes.
    """
    fd = paths.open_private(directory, create=False)
    if fd is None:
        return
    try:
        _sweep(fd, time.time() if now is None else now)
    finally:
        os.close(fd)


def _sweep(fd: int, now: float) -> None:
    """Sweep the verified directory open at `fd`; every name is taken relative to it."""
    for entry in os.scandir(fd):
        kind = written_by_us(entry.name)
        if kind is None:
            continue  # not a name start writes: never ours to delete
        try:
            info = entry.stat(follow_symlinks=False)
            age = now - info.st_mtime
            if kind == "kept":
                stale = age > STALE_SECONDS
            else:
                stale = age > STALE_SECONDS or not _alive(int(entry.name.split("-", 1)[0]))
            if not stale:
                continue
            if stat.S_ISDIR(info.st_mode):
                if kind != "file":
                    _remove_tree(entry.name, dir_fd=fd)
            elif kind == "file" or stat.S_ISLNK(info.st_mode):
                os.unlink(entry.name, dir_fd=fd)
        except OSError:
            continue


def written_by_us(name: str) -> str | None:
    """Which of TempFiles' names `name` is: "kept" (`dry-run-TIME-HEX`), "file"
    (`PID-NAME-HEX.md`) or "dir" (`PID-NAME-HEX`, holding NAME.md); None for any other name."""
    parts = name.split("-")
    if name.startswith(KEPT_PREFIX):
        if len(parts) == 4 and parts[2].isdigit() and _hex8(parts[3]):
            return "kept"
        return None
    if len(parts) != 3 or not parts[0].isdigit() or parts[1] not in _NAMES:
        return None
    last = parts[2]
    if last.endswith(".md"):
        return "file" if _hex8(last[:-3]) else None
    return "dir" if _hex8(last) else None


def _hex8(text: str) -> bool:
    return len(text) == 8 and all(c in "0123456789abcdef" for c in text)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
