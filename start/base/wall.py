"""The project root is a wall: what a launch may read from the files that items name.

A file is located by the descriptor it is read from (see `start.base.fs`), so the check and the read
are one step. For an item of the project layer:

- a file under `.start/` (whatever the spelling: `..`, repeated slashes, directory symlinks) gives
  the bytes approved by `start trust`, keyed by its canonical path, never what is on disk now;
- any other file inside the project root is read as it is (the repository changes all the time);
- a file outside the root is read only when the approval covers its real path.

An item of the user's own layers may name any file, but a relative path (resolved against the
project root) that a symlink in the repository leads outside the root is refused: the repository
does not get to choose what such a path reads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from start.base import fs
from start.base.errors import ExitCode, StartError
from start.base.record import Record

Where = Literal["start", "inside", "outside"]


class WallError(StartError):
    """A file that a symlink (or a path) leads outside what the user approved."""

    exit_code = ExitCode.UNTRUSTED


class Grant(Record):
    """What an approval lets a launch read: approved bytes by canonical path, outside paths."""

    root: str  # the real project root
    start_dir: str  # the project's `.start/` as found
    pinned: Mapping[str, bytes | None]  # real path -> approved bytes (None: approved as missing)
    outside: frozenset[str]  # real paths outside the root that the approval covers
    reason: str  # why the project is trusted, in a few words
    everything: bool = False  # trusted by a trusted prefix: no approved bytes, any path


def classify(
    path: str, real: str, real_root: str, start_dir: str, real_start: str | None = None
) -> Where:
    """Where a named file is: under `.start/` by spelling or by real path, else inside or
    outside the real project root. `real_start` is the real path of `start_dir`, when the
    caller classifies many files (the trust scan) and has it already."""
    real_root = real_root.rstrip(os.sep) or os.sep
    start = os.fspath(start_dir)
    if real_start is None:
        real_start = os.path.realpath(start)
    if fs.within(real, real_start) and fs.within(real, real_root):
        return "start"
    if fs.within(os.path.normpath(path), os.path.normpath(start)):
        return "start" if fs.within(real, real_root) else "outside"
    return "inside" if fs.within(real, real_root) else "outside"


def through(path: str, real_root: str) -> bool:
    """Whether `path` goes through the project root: it, or one of the directories it names on
    the way, is the root or inside it, however it is spelled (`$PWD/AGENTS.md` after a `cd`
    through a symlink, a symlinked `~/work`). Comparing the spelling with the real root alone
    would let such a spelling past the wall."""
    head = os.path.normpath(path)
    if fs.within(head, real_root):
        return True
    while True:
        parent = os.path.dirname(head)
        if parent == head:
            return False
        head = parent
        if fs.within(os.path.realpath(head), real_root):
            return True


class Reader:
    """Reads the files that items name, for one launch; the one door of `sources`."""

    def __init__(self, root: str, grant: Grant | None = None, limit: int = fs.DEFAULT_FILE_LIMIT):
        self.root = root
        self.real_root = os.path.realpath(root)
        self.grant = grant
        self.limit = limit

    def read(self, path: str, *, layer: str, relative: bool) -> fs.Read:
        """The bytes of `path` for an item of `layer`; `relative` when the item's own text named a
        relative path (resolved against the project root).

        Raises fs.FileError (missing or unreadable) or WallError (exit 5).
        """
        grant = self.grant
        if layer == "project" and grant is not None and not grant.everything:
            return self._project(path, grant)
        read = fs.read(path, self.limit)
        outside = relative and layer != "project" and not fs.within(read.real, self.real_root)
        if outside and through(path, self.real_root):
            # A path from the command line (start.compose.adhoc) is not in any config.
            where = "" if layer == "command line" else " in your config"
            raise WallError(
                f"{path} leads outside the project root (to {read.real}) through a symlink; "
                f"start does not follow it. Name the file by its real path{where} if you "
                "mean it."
            )
        return read

    def _project(self, path: str, grant: Grant) -> fs.Read:
        try:
            read = fs.read(path, self.limit)
        except fs.FileError as error:
            if error.missing:
                real = os.path.realpath(path)
                if real in grant.pinned and grant.pinned[real] is not None:
                    return self._pinned(real, grant)
            raise
        if read.real in grant.pinned:
            return self._pinned(read.real, grant)
        where = classify(path, read.real, grant.root, grant.start_dir)
        if where == "start":
            raise WallError(
                f"{path} changed since the project config was approved; "
                "run 'start trust' to review it"
            )
        if where == "inside" or read.real in grant.outside:
            return read
        raise WallError(
            f"{path} resolves to {read.real}, outside the project root, and the approval does not "
            "cover it; run 'start trust' to review it"
        )

    def _pinned(self, real: str, grant: Grant) -> fs.Read:
        data = grant.pinned[real]
        if data is None:
            raise fs.FileError(real, "no such file (as approved)", missing=True)
        kept = data[: self.limit]
        return fs.Read(kept, real, len(data))


class OutsideWriteError(StartError):
    """A write to project config that a symlink would carry outside the project root."""


def write_target(path: str, root: str) -> str:
    """The real file that writing `path` (project config) lands on; refused outside the root.

    A repository can ship `.start/config.toml` (or `.start/` itself) as a symlink, dangling or
    not; an edit must never create or change a file outside the project because of it.
    """
    real = os.path.realpath(path)
    real_root = os.path.realpath(root)
    if not fs.within(real, real_root):
        raise OutsideWriteError(
            f"refused to write {path}: it leads to {real}, outside the project root {real_root}, "
            f"through a symlink. Replace the symlink with a regular file, or edit {real} yourself."
        )
    return real
