"""Where each source keeps its commands, and the bounded walk that finds and reads their files.

User-level directories form the imported layer (between built-in and global); project-level ones,
under the project root, belong to the project layer (same trust, same precedence). Without any of
them a load costs one stat per directory. The walk is bounded like the trust scan of `.start/`:
at most MAX_DEPTH levels, MAX_ENTRIES entries, FILE_LIMIT bytes a file and MAX_BYTES in all (each
file's bytes are held: they are the tasks' templates, and the cache key). Hidden names (`.x`)
are not read. A symlink to a folder is followed when it leads inside the project root (a project
directory) or inside the home directory (a user one), and once (a folder already read is not read
again); in a project directory, a file (or the command directory itself) that a symlink leads
outside the project root is not opened. A file that is not text (not UTF-8, or with a NUL byte)
is skipped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Final

from start.base import fs, paths
from start.base.record import Record
from start.config.interop import PROJECT_DIRS, user_dirs

MAX_DEPTH: Final = 16
MAX_ENTRIES: Final = 1000
FILE_LIMIT: Final = 1_048_576
# The bytes of one command directory's files, in all.
MAX_BYTES: Final = 16 * 1_048_576

USER, PROJECT = "user", "project"


class Place(Record):
    """One command directory of a source."""

    format: str
    scope: str  # USER or PROJECT
    directory: str
    suffixes: tuple[str, ...]  # the file names it reads, by suffix (any case for Codex)
    nested: bool  # whether subdirectories are read (Codex reads only the top level)


class Found(Record):
    """A command file as read: its bytes, or why it was not read (then `data` is None)."""

    place: Place
    path: str
    parts: tuple[str, ...]  # the path below the directory: ("git", "commit.md")
    data: bytes | None
    problem: str | None = None


class Discovery(Record):
    files: tuple[Found, ...]
    problems: tuple[tuple[Place, str], ...]  # a directory that was not read (whole), and why

    @property
    def contents(self) -> dict[str, bytes]:
        """The bytes of every file read, for the config cache's key."""
        return {found.path: found.data for found in self.files if found.data is not None}

    def keyed(self) -> list[str]:
        """What else the loaded config depends on: files not read and directories refused."""
        parts = [f"skip:{f.path}:{f.problem}" for f in self.files if f.data is None]
        parts.extend(f"refused:{p.directory}:{why}" for p, why in self.problems)
        return parts


# The files each source reads, by suffix; Codex reads only the top level of its directory.
SUFFIXES: Final = {
    "claude": (".md",),
    "gemini": (".toml",),
    "qwen": (".toml", ".md"),
    "codex": (".md",),
    "opencode": (".md",),
}


def user_places(environ: Mapping[str, str] | None = None) -> list[Place]:
    """The user-level command directories of every source."""
    return [
        Place(form, USER, paths.clean(path), SUFFIXES[form], form != "codex")
        for form, path in user_dirs(environ)
    ]


def project_places(root: str) -> list[Place]:
    """The project-level command directories under the project root (Codex has none)."""
    return [
        Place(form, PROJECT, paths.join(root, relative), SUFFIXES[form], True)
        for form, relative in PROJECT_DIRS
    ]


def in_command_dir(path: str | None, root: str) -> bool:
    """Whether `path` is in (or is) a command directory of a source, user- or project-level."""
    if path is None:
        return False
    text = os.path.normpath(path)
    return any(
        fs.within(text, os.path.normpath(place.directory))
        for place in (*user_places(), *project_places(root))
    )


def discover(root: str | None, *, user: bool) -> Discovery:
    """Every command file of the user-level directories (with `user`) and of the project-level
    ones under `root` (when not None), read. One stat for each directory that is not there.

    A project directory that is a user-level one too (the project root is the home directory)
    is read once, as the user's.
    """
    users = [place for place in user_places() if is_dir(place.directory)]
    places = users if user else []
    real_root = ""
    if root is not None:
        found = [place for place in project_places(root) if is_dir(place.directory)]
        if found:
            real_root = os.path.realpath(root)
            mine = {os.path.realpath(place.directory) for place in users}
            places = places + [p for p in found if os.path.realpath(p.directory) not in mine]
    files: list[Found] = []
    problems: list[tuple[Place, str]] = []
    for place in places:
        if place.scope == PROJECT:
            real = os.path.realpath(place.directory)
            if not fs.within(real, real_root):
                # `.claude/commands` (or `.claude`) is a link out of the repository: not listed.
                files.append(Found(place, place.directory, (), None, outside(real)))
                continue
        walk = _Walk(place, real_root)
        walk.seen.add(os.path.realpath(place.directory))
        try:
            walk.directory(place.directory, (), 0)
        except _RefusedError as error:
            problems.append((place, str(error)))
            continue
        except OSError as error:
            problems.append((place, f"cannot be read: {error.strerror or error}"))
            continue
        files.extend(walk.found)
    return Discovery(tuple(files), tuple(problems))


NOT_TEXT: Final = "is not a text file (it is not UTF-8, or holds a NUL byte)"


def outside(real: str) -> str:
    """The problem of a path that a symlink leads out of the project root (or home)."""
    return f"leads outside the project root (to {real}) through a symlink; start does not read it"


def _is_text(data: bytes) -> bool:
    """Whether a command file's bytes are text: UTF-8 without NUL bytes."""
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def is_dir(path: str) -> bool:
    """Whether `path` is a directory, through symlinks; False when it cannot be looked at."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


class _RefusedError(Exception):
    """A directory over the walk's bounds: none of it is read."""


class _Walk:
    def __init__(self, place: Place, real_root: str) -> None:
        self.place = place
        self.real_root = real_root
        self.count = 0
        self.size = 0
        self.found: list[Found] = []
        self.seen: set[str] = set()  # the real paths of the folders read, so a loop ends
        # Where a linked folder may lead: the project root, or for a user directory, the home.
        self.fence = real_root if place.scope == PROJECT else os.path.realpath(paths.home())

    def directory(self, path: str, parts: tuple[str, ...], depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _RefusedError(
                f"is nested more than {MAX_DEPTH} directories deep ({path}); start does not read it"
            )
        with os.scandir(path) as entries:
            names = sorted(entry.name for entry in entries)
        for name in names:
            self.count += 1
            if self.count > MAX_ENTRIES:
                raise _RefusedError(
                    f"holds more than {MAX_ENTRIES} files and directories; start does not read it"
                )
            self.entry(os.path.join(path, name), (*parts, name), depth)

    def entry(self, path: str, parts: tuple[str, ...], depth: int) -> None:
        info = os.lstat(path)
        base = os.path.basename(path)
        if base.startswith("."):
            return  # hidden: an editor's lock or backup file, never a command
        if stat.S_ISDIR(info.st_mode) or (stat.S_ISLNK(info.st_mode) and is_dir(path)):
            if self.place.nested:
                self.folder(path, parts, depth, linked=not stat.S_ISDIR(info.st_mode))
            return
        name = base.lower() if self.place.format == "codex" else base
        if not name.endswith(self.place.suffixes):
            return
        project = self.place.scope == PROJECT
        if project and stat.S_ISLNK(info.st_mode):
            real = os.path.realpath(path)
            if not fs.within(real, self.real_root):
                self.skip(path, parts, outside(real))  # not opened
                return
        try:
            read = fs.read(path, FILE_LIMIT)
        except fs.FileError as error:
            self.skip(path, parts, error.reason)
            return
        if project and not fs.within(read.real, self.real_root):
            self.skip(path, parts, outside(read.real))  # the link changed as it was opened
            return
        if read.truncated:
            self.skip(
                path, parts, f"is {read.size:,} bytes; start reads command files of at most "
                f"{FILE_LIMIT:,} bytes"
            )  # fmt: skip
            return
        if not _is_text(read.data):
            self.skip(path, parts, NOT_TEXT)
            return
        self.size += len(read.data)
        if self.size > MAX_BYTES:
            raise _RefusedError(
                f"holds more than {MAX_BYTES:,} bytes of command files; start does not read it"
            )
        self.found.append(Found(self.place, path, parts, read.data))

    def folder(self, path: str, parts: tuple[str, ...], depth: int, *, linked: bool) -> None:
        """A folder, read once; a symlink to one is read as a folder of the directory when it
        leads inside the fence (Claude Code follows it anywhere: `rg --follow`), else skipped
        with a warning."""
        real = os.path.realpath(path)
        if linked and not fs.within(real, self.fence):
            where = "the project root" if self.place.scope == PROJECT else "the home directory"
            self.skip(
                path,
                parts,
                f"leads outside {where} (to {real}) through a symlink; start does not read it",
            )
            return
        if real in self.seen:
            # A loop, or a second way to a folder (Claude Code keeps one copy of a file).
            self.skip(path, parts, f"is the folder {real}, which start already read")
            return
        self.seen.add(real)
        self.directory(path, parts, depth + 1)

    def skip(self, path: str, parts: tuple[str, ...], why: str) -> None:
        self.found.append(Found(self.place, path, parts, None, why))
