"""Agent Skills: the `NAME/SKILL.md` folders of Claude Code, Codex, Gemini CLI, Qwen Code,
opencode and Copilot, as tasks named `skill:NAME`.

A skill is a folder: `SKILL.md` (YAML front matter and a Markdown body) and the files beside it
that the body points to (`scripts/check.sh`, `reference.md`). Each folder below a skill directory
(`start.config.interop.SKILL_PROJECT_DIRS`, `skill_user_dirs`) is one task:

- A skill of `.claude/skills` (Claude Code's) is expanded by Claude Code's rules, as a command of
  `.claude/commands` is (start.config.interop.claude): `$ARGUMENTS`, `$0`, named `arguments`,
  `` !`cmd` `` and `@file`; `${CLAUDE_SKILL_DIR}` is the folder. Any other skill is sent as
  written: the agents that read those directories expand nothing in it.
- The text starts with the line `Base directory for this skill: FOLDER`, as Claude Code starts
  it, so that the body's relative paths resolve. start.config.interop.skilltext reads the text.
- A project skill's files, every one of them, are project config: the trust approval covers
  each (start.trust.scan pins the project layer's files). Load keeps the bytes of SKILL.md, which
  it parses, and only the digest of each file beside it (a script, a font), read one at a time:
  the config cache's key holds those digests, not the files.

The walk is bounded like the command directories' (start.config.interop.dirs): MAX_DEPTH levels,
MAX_ENTRIES entries for each skill directory, FILE_LIMIT bytes a file; and a project skill
directory's files, MAX_BYTES bytes in all.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import Final

from start.base import fs, paths
from start.base.errors import Problem
from start.base.record import Record
from start.config.interop import SKILL_PROJECT_DIRS, frontmatter, skill_user_dirs
from start.config.interop.common import UnusableError
from start.config.interop.dirs import (
    FILE_LIMIT,
    MAX_DEPTH,
    MAX_ENTRIES,
    NOT_TEXT,
    PROJECT,
    USER,
    is_dir,
    outside,
)
from start.config.interop.library import IMPORTED, Layer, Library
from start.config.interop.model import Imported, segment_ok
from start.config.model import LayerFile, Origin, Task

SKILL_FILE: Final = "SKILL.md"
SOURCE: Final = "skill"  # the `import_commands` entry, and the names' prefix
CLAUDE_DIR: Final = os.path.join(".claude", "skills")
# The bytes of all the files of one project skill directory that a load reads (and hashes).
MAX_BYTES: Final = 64 * 1_048_576


class Folder(Record):
    """One skill folder as read: its SKILL.md's bytes, and the files beside it.

    `files` are paths below the folder; `digests` holds the SHA-256 of each but SKILL.md, for a
    project skill (the approval covers them), and is empty for a user's. `problem` says why it
    is not a task.
    """

    scope: str  # USER or PROJECT
    directory: str  # the skill directory it is in (`.claude/skills`)
    path: str  # the folder
    skill: bytes | None
    files: tuple[str, ...] = ()
    digests: tuple[tuple[str, str], ...] = ()
    problem: str | None = None

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def skill_path(self) -> str:
        return os.path.join(self.path, SKILL_FILE)

    @property
    def claude(self) -> bool:
        """Whether it is Claude Code's, expanded by Claude Code's rules."""
        return os.path.normpath(self.directory).endswith(os.sep + CLAUDE_DIR)


class Found(Record):
    folders: tuple[Folder, ...]
    problems: tuple[tuple[str, str, str], ...]  # (scope, directory, why): a directory not read

    @property
    def contents(self) -> dict[str, bytes]:
        """The SKILL.md files read, by path, for the config cache's key."""
        return {f.skill_path: f.skill for f in self.folders if f.skill is not None}

    @property
    def digests(self) -> dict[str, str]:
        """The digest of each file beside a project skill's SKILL.md, by path."""
        return {
            os.path.join(f.path, relative): digest
            for f in self.folders
            for relative, digest in f.digests
        }

    def keyed(self) -> list[str]:
        """What else the loaded config depends on: skills not read, the files of each, and the
        digests of a project skill's files beside SKILL.md."""
        parts = [f"skip:{f.path}:{f.problem}" for f in self.folders if f.problem is not None]
        parts.extend(f"files:{f.path}:{'/'.join(f.files)}" for f in self.folders)
        parts.extend(f"digest:{path}:{digest}" for path, digest in self.digests.items())
        parts.extend(f"refused:{directory}:{why}" for _, directory, why in self.problems)
        return parts


def places(root: str | None, *, user: bool) -> list[tuple[str, str]]:
    """The skill directories to read, as (scope, path)."""
    found = [(USER, paths.clean(path)) for path in skill_user_dirs()] if user else []
    if root is not None:
        found.extend((PROJECT, paths.join(root, relative)) for relative in SKILL_PROJECT_DIRS)
    return found


def in_skill_dir(path: str | None, root: str) -> bool:
    """Whether `path` is in (or is) a skill directory, user- or project-level."""
    if path is None:
        return False
    text = os.path.normpath(path)
    return any(
        fs.within(text, os.path.normpath(directory)) for _, directory in places(root, user=True)
    )


def discover(root: str | None, *, user: bool) -> Found:
    """Every skill folder of the user's skill directories (with `user`) and of the project's under
    `root`, read. A project directory that is the user's too (the root is the home) is read once.
    """
    listed = [(scope, path) for scope, path in places(root, user=user) if is_dir(path)]
    mine = {os.path.realpath(path) for scope, path in listed if scope == USER}
    real_root = os.path.realpath(root) if root is not None else ""
    folders: list[Folder] = []
    problems: list[tuple[str, str, str]] = []
    for scope, directory in listed:
        if scope == PROJECT:
            real = os.path.realpath(directory)
            if real in mine:
                continue
            if not fs.within(real, real_root):
                problems.append((scope, directory, outside(real)))
                continue
        walk = _Walk(scope, directory, real_root)
        try:
            walk.top()
        except _RefusedError as error:
            problems.append((scope, directory, str(error)))
            continue
        except OSError as error:
            problems.append((scope, directory, f"cannot be read: {error.strerror or error}"))
            continue
        folders.extend(walk.folders)
    return Found(tuple(folders), tuple(problems))


def build(found: Found, enabled: Iterable[str]) -> Library:
    """The skills as tasks, for the imported and project layers (none when `skill` is off)."""
    problems: list[Problem] = []
    layers = {USER: Layer({}, []), PROJECT: Layer({}, [])}
    if SOURCE not in set(enabled):
        return Library(layers[USER], layers[PROJECT], problems)
    for scope, directory, why in found.problems:
        severity = "error" if scope == PROJECT else "warning"
        message = f"{why}; turn skills off with [settings] import_commands, or move files out"
        problems.append(Problem(severity, directory, "", message))
    where: dict[tuple[str, str], str] = {}
    for folder in found.folders:
        layer = layers[folder.scope]
        task = _task(folder, problems)
        if folder.scope == PROJECT:
            if folder.skill is not None:
                digest = fs.sha256(folder.skill)
                layer.files.append(LayerFile(PROJECT, folder.skill_path, digest, bool(task)))
            for relative, digest in folder.digests:
                path = os.path.join(folder.path, relative)
                layer.files.append(LayerFile(PROJECT, path, digest, True))
        elif folder.skill is not None:
            layer.files.append(LayerFile(IMPORTED, folder.skill_path, "", bool(task)))
        if task is None:
            continue
        earlier = where.get((folder.scope, task.name))
        if earlier is not None:
            message = f"not used: {folder.skill_path} is also '{task.name}', and it is read later"
            problems.append(Problem("warning", earlier, "", message))
        where[(folder.scope, task.name)] = folder.skill_path
        layer.tasks[task.name] = task
    for name, task in layers[USER].tasks.items():
        shadow = layers[PROJECT].tasks.get(name)
        if shadow is not None:
            message = (
                f"'{name}' is shadowed by the project's {shadow.origin.path}: the project "
                "layer wins"
            )
            problems.append(Problem("warning", task.origin.path, "", message))
    return Library(layers[USER], layers[PROJECT], problems)


def _task(folder: Folder, problems: list[Problem]) -> Task | None:
    def warn(message: str, key: str = "", line: int | None = None) -> None:
        problems.append(Problem("warning", folder.skill_path, key, message, line=line))

    if folder.skill is None:
        if folder.problem is not None:
            warn(f"not imported: {folder.problem}")
        return None
    if not segment_ok(folder.name):
        warn(
            f"not imported: '{folder.name}' cannot be part of a task name (letters, digits, '_', "
            "'.' and '-', not starting with '.' or '-')"
        )
        return None
    # Its text is read only by a load that parses: one the config cache serves never gets here.
    from start.config.interop.skilltext import parse

    text = frontmatter.normalize(fs.text(folder.skill))
    try:
        parsed = parse(text, folder.path, claude=folder.claude)
    except UnusableError as error:
        warn(f"not imported: {error.message}", line=error.line)
        return None
    for note in parsed.notes:
        warn(note.message, note.key, note.line)
    name = f"{SOURCE}:{folder.name}"
    layer = PROJECT if folder.scope == PROJECT else IMPORTED
    imported = Imported(
        "claude",
        f"/{folder.name}",
        parsed.body,
        parsed.segments,
        parsed.hint,
        parsed.model,
        folder.path,
        folder.files,
    )
    origin = Origin(layer, folder.skill_path)
    return Task(name=name, origin=origin, description=parsed.description, imported=imported)


# --- the walk -------------------------------------------------------------------------------


class _RefusedError(Exception):
    """A skill directory over the walk's bounds: none of it is read."""


class _SkipError(Exception):
    """A skill folder that is not imported, and why."""


class _Walk:
    def __init__(self, scope: str, directory: str, real_root: str) -> None:
        self.scope = scope
        self.directory = directory
        self.real_root = real_root
        self.count = 0
        self.size = 0  # the bytes read, in a project directory
        self.folders: list[Folder] = []

    @property
    def project(self) -> bool:
        return self.scope == PROJECT

    def names(self, path: str) -> list[str]:
        with os.scandir(path) as entries:
            names = sorted(entry.name for entry in entries)
        self.count += len(names)
        if self.count > MAX_ENTRIES:
            raise _RefusedError(
                f"holds more than {MAX_ENTRIES} files and directories; start does not read it"
            )
        return names

    def top(self) -> None:
        for name in self.names(self.directory):
            if name.startswith("."):
                continue  # hidden, like Codex's `.system`: not a skill of the user's
            path = os.path.join(self.directory, name)
            if not is_dir(path) or not os.path.isfile(os.path.join(path, SKILL_FILE)):
                continue  # not a skill folder
            if self.project and not fs.within(os.path.realpath(path), self.real_root):
                real = os.path.realpath(path)
                problem = outside(real)
                self.folders.append(Folder(self.scope, self.directory, path, None, problem=problem))
                continue
            self.folder(path)

    def folder(self, path: str) -> None:
        files: list[str] = []
        digests: list[tuple[str, str]] = []
        try:
            self.tree(path, (), 0, files, digests)
            skill = self.read(os.path.join(path, SKILL_FILE))
        except _SkipError as error:
            self.folders.append(Folder(self.scope, self.directory, path, None, problem=str(error)))
            return
        if b"\0" in skill or not _utf8(skill):
            problem = f"{SKILL_FILE} {NOT_TEXT}"
            self.folders.append(Folder(self.scope, self.directory, path, None, problem=problem))
            return
        self.folders.append(
            Folder(self.scope, self.directory, path, skill, tuple(files), tuple(digests))
        )

    def tree(
        self,
        path: str,
        parts: tuple[str, ...],
        depth: int,
        files: list[str],
        digests: list[tuple[str, str]],
    ) -> None:
        if depth > MAX_DEPTH:
            raise _RefusedError(
                f"is nested more than {MAX_DEPTH} directories deep ({path}); start does not read it"
            )
        for name in self.names(path):
            child = os.path.join(path, name)
            relative = "/".join((*parts, name))
            info = os.lstat(child)
            if stat.S_ISLNK(info.st_mode):
                real = os.path.realpath(child)
                if self.project and not fs.within(real, self.real_root):
                    raise _SkipError(f"{relative} {outside(real)}")
                if is_dir(child):
                    if self.project:
                        raise _SkipError(
                            f"{relative} is a symlink to a directory, which start does not follow"
                        )
                    files.append(relative)
                    continue
            elif stat.S_ISDIR(info.st_mode):
                self.tree(child, (*parts, name), depth + 1, files, digests)
                continue
            files.append(relative)
            if self.project and relative != SKILL_FILE:
                # Read one at a time and kept as a digest: held whole by nothing.
                digests.append((relative, fs.sha256(self.read(child))))

    def read(self, path: str) -> bytes:
        try:
            read = fs.read(path, FILE_LIMIT)
        except fs.FileError as error:
            raise _SkipError(f"{path}: {error.reason}") from None
        if self.project and not fs.within(read.real, self.real_root):
            raise _SkipError(f"{path} {outside(read.real)}")
        if read.truncated:
            raise _SkipError(
                f"{path} is {read.size:,} bytes; start reads the files of a skill of at most "
                f"{FILE_LIMIT:,} bytes"
            )
        if self.project:
            self.size += len(read.data)
            if self.size > MAX_BYTES:
                raise _RefusedError(
                    f"holds more than {MAX_BYTES:,} bytes of files; start does not read it"
                )
        return read.data


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
