"""Temp files for `{role_file}` and `{prompt_file}`, kept after exec and swept by later runs."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence

from start import paths
from start.errors import StartError

STALE_SECONDS = 24 * 3600
KEPT_PREFIX = "dry-run-"
SWEEP_EVERY = 60  # seconds between two sweeps of the runtime directory
_STAMP = ".swept"  # its mtime is the time of the last sweep


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
            ours = paths.private_directory(directory)
        except OSError as error:
            raise StartError(
                f"cannot create the runtime directory {directory}: {error.strerror or error}; "
                "set XDG_RUNTIME_DIR to a private directory you can write"
            ) from None
        if not ours:
            raise StartError(
                f"runtime directory {directory} is not a directory owned by you; remove it "
                "or set XDG_RUNTIME_DIR to a private directory"
            )
        sweep(directory)
        if self.keep:
            name = f"{KEPT_PREFIX}{int(time.time())}-{os.urandom(4).hex()}"
            self.kept = os.path.join(directory, name)
            os.mkdir(self.kept, mode=0o700)
        self._ready = True

    def write(self, name: str, text: str, *, own_directory: bool = False) -> str:
        """A new file `name` holding `text`; with `own_directory`, alone in a new directory."""
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


def _remove_tree(path: str, *, ignore_errors: bool = False) -> None:
    """shutil.rmtree; shutil is imported only when a directory goes (it costs a launch ~3 ms)."""
    import shutil

    shutil.rmtree(path, ignore_errors=ignore_errors)


def sweep_due(directory: str, now: float | None = None) -> None:
    """Sweep `directory` if the last sweep was SWEEP_EVERY seconds ago or more.

    Every launch calls this, so the temp files of agents that have exited go away even when no
    launch writes one. It costs one stat when a sweep is not due (or nothing was ever written).
    """
    now = time.time() if now is None else now
    stamp = os.path.join(directory, _STAMP)
    try:
        last = os.stat(stamp).st_mtime
    except FileNotFoundError:
        last = None
    except OSError:
        return
    if last is not None and 0 <= now - last < SWEEP_EVERY:
        return
    try:
        fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return  # no runtime directory yet: nothing to sweep
    try:
        os.utime(fd, (now, now))
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        sweep(directory, now)


def sweep(directory: str, now: float | None = None) -> None:
    """Remove temp files whose process is gone or that are over a day old, and old dry runs."""
    now = time.time() if now is None else now
    for entry in os.scandir(directory):
        if entry.name == _STAMP:
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
            if entry.name.startswith(KEPT_PREFIX):
                if age > STALE_SECONDS and entry.is_dir(follow_symlinks=False):
                    _remove_tree(entry.path)
                continue
            pid_text = entry.name.split("-", 1)[0]
            stale = age > STALE_SECONDS or (pid_text.isdigit() and not _alive(int(pid_text)))
            if stale and entry.is_dir(follow_symlinks=False):
                _remove_tree(entry.path)
            elif stale:
                os.unlink(entry.path)
        except OSError:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
