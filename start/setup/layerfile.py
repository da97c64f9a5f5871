"""A layer's config file, edited: the file that holds a setting or an item, and each write.

Each write is checked by loading the whole config with the file's would-be bytes, and is refused
when that brings new errors; it is written atomically, under a lock.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import Any, Literal

from start.base import atomic, fs, paths
from start.base.errors import ConfigError, Problem
from start.base.wall import write_target
from start.config import files, schema
from start.config.load import load
from start.config.splice import EditError

Layer = Literal["global", "project"]
MAIN_FILE = "config.toml"
CONFIG_LIMIT = files.CONFIG_LIMIT


@dataclass(frozen=True, slots=True)
class Scope:
    """The layer to edit, and where the config is seen from (validation loads every layer)."""

    layer: Layer
    workdir: str
    use_project: bool = True

    def directory(self) -> str:
        """The layer's directory; a project's `.start/` may not exist yet."""
        if self.layer == "global":
            return paths.global_config_dir()
        project = paths.find_project(self.workdir)
        return project.start_dir or os.path.join(project.root, paths.PROJECT_DIR_NAME)


@dataclass(frozen=True, slots=True)
class Target:
    """One layer file, as the loader names it (a symlink stays a symlink; its target is written)."""

    scope: Scope
    path: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """The file edited, whether its bytes changed, and the problems the change brought."""

    path: str
    changed: bool
    problems: tuple[Problem, ...] = ()


def file_target(scope: Scope, name: str = MAIN_FILE) -> Target:
    return Target(scope, os.path.join(scope.directory(), name))


def current_bytes(target: Target) -> bytes:
    """The file's bytes now (empty when it does not exist), for an editor to start from.

    Refused, like a write, when project config leads outside the project through a symlink.
    """
    if target.scope.layer == "project":
        write_target(target.path, paths.find_project(target.scope.workdir).root)
    return _read(target.path) or b""


def _read(path: str) -> bytes | None:
    """A config file's whole bytes, None when it does not exist; anything else is refused."""
    try:
        read = fs.read(path, CONFIG_LIMIT)
    except fs.FileError as error:
        if error.missing and not os.path.lexists(path):
            return None
        raise EditError(f"cannot edit {path}: {error.reason}") from None
    if read.truncated:
        raise EditError(
            f"cannot edit {path}: it is {read.size:,} bytes, more than a config file may be "
            f"({CONFIG_LIMIT:,})"
        )
    return read.data


def check(target: Target, data: bytes) -> tuple[Problem, ...]:
    """Problems the file would have with `data`: every one in the file, and new ones elsewhere."""
    return _problems(target, data, whole_file=True)


def replace_file(target: Target, data: bytes, expected: bytes) -> Outcome:
    """Write `data` (from an editor) even if invalid, unless the file no longer holds `expected`."""

    def change(current: str) -> str:
        if current.encode("utf-8", "surrogateescape") != expected:
            raise EditError("it was changed by something else while being edited")
        return data.decode("utf-8", "surrogateescape")

    return apply(target, change, keep_invalid=True)


# --- locating the file in a layer ---------------------------------------------------------------


def _layer_tables(scope: Scope, directory: str) -> list[tuple[str, dict[str, Any]]]:
    tables: list[tuple[str, dict[str, Any]]] = []
    # A project file that a symlink leads out of the root is never read; writing it is refused.
    root = os.path.realpath(os.path.dirname(directory)) if scope.layer == "project" else None
    for path in files.layer_paths(directory, root):
        if files.is_dangling(path) or files.outside(path, root):
            continue  # it holds no items; writing it goes through the link, or is refused
        read = files.read(path)
        if read.problem is not None:
            what = "is not valid TOML" if read.problem.line is not None else "cannot be read"
            raise ConfigError(
                [read.problem],
                headline=f"cannot edit {directory}: {os.path.basename(path)} {what}; fix it first",
            )
        assert read.table is not None
        tables.append((path, read.table))
    return tables


def setting_target(scope: Scope, key: str) -> Target:
    """The layer file that sets `key`, else the one with [settings], else config.toml."""
    directory = scope.directory()
    tables = _layer_tables(scope, directory)
    for must_have_key in (True, False):
        for path, table in tables:
            settings = table.get("settings")
            if isinstance(settings, dict) and (key in settings or not must_have_key):
                return Target(scope, path)
    return Target(scope, os.path.join(directory, MAIN_FILE))


def item_target(scope: Scope, section: str, name: str) -> tuple[Target, str, bool]:
    """The file and section spelling holding the item (True), else where a new one goes."""
    directory = scope.directory()
    tables = _layer_tables(scope, directory)
    spellings = [section, *(s for s, c in schema.SECTION_SYNONYMS.items() if c == section)]
    for has_item in (True, False):
        for path, table in tables:
            for spelling in spellings:
                body = table.get(spelling)
                if isinstance(body, dict) and (name in body or not has_item):
                    return Target(scope, path), spelling, has_item
    return Target(scope, os.path.join(directory, MAIN_FILE)), section, False


# --- validating and writing ---------------------------------------------------------------------


def _problems(target: Target, data: bytes, *, whole_file: bool) -> tuple[Problem, ...]:
    scope = target.scope
    before = set(load(scope.workdir, use_project=scope.use_project).problems)
    after = load(scope.workdir, use_project=scope.use_project, replaced={target.path: data})
    return tuple(
        p
        for p in after.problems
        if p not in before or (whole_file and p.is_error and p.file == target.path)
    )


def apply(target: Target, change: Callable[[str], str], *, keep_invalid: bool = False) -> Outcome:
    """Under the lock: read, change, validate, then write atomically (the symlink's target)."""
    directory = os.path.dirname(target.path)
    root = paths.find_project(target.scope.workdir).root
    if target.scope.layer == "project":
        write_target(target.path, root)  # before anything is created
    created = not os.path.exists(directory)
    written = False
    try:
        os.makedirs(directory, mode=0o755, exist_ok=True)
        if target.scope.layer == "project":
            real = write_target(target.path, root)
        else:
            real = os.path.realpath(target.path)
        with _locked(os.path.dirname(real)):
            old = _read(real)
            try:
                source = (old or b"").decode("utf-8", "surrogateescape")
                new = change(source).encode("utf-8", "surrogateescape")
            except EditError as error:
                raise EditError(f"{target.path}: {error}") from None
            except tomllib.TOMLDecodeError as error:
                raise EditError(f"cannot edit {target.path}: {error}") from None
            except RecursionError:
                raise EditError(
                    f"cannot edit {target.path}: it is nested too deeply to edit; "
                    "edit it with 'start config edit' or an editor"
                ) from None
            if new == (old or b""):
                return Outcome(target.path, changed=False)
            problems = _problems(target, new, whole_file=keep_invalid)
            if not keep_invalid and any(p.is_error for p in problems):
                raise ConfigError(
                    problems,
                    headline=f"refused: the change would make the config invalid, so "
                    f"{target.path} was not changed",
                )
            with _self_edit(target):
                atomic.replace(real, new)
            written = True
            return Outcome(target.path, changed=True, problems=problems)
    except OSError as error:
        raise EditError(f"cannot write {target.path}: {error.strerror or error}") from error
    finally:
        if created and not written:
            with suppress(OSError):
                os.rmdir(directory)


@contextmanager
def _locked(directory: str) -> Iterator[int]:
    """An exclusive flock on the directory itself, held while reading, checking and writing.

    Locking the directory rather than a lock file adds no file to `.start/`, all of which trust
    covers, and survives the rename that replaces the config file.
    """
    import fcntl

    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def _self_edit(target: Target) -> AbstractContextManager[None]:
    """Project files stay approved across the edit only if they were approved before it."""
    if target.scope.layer != "project":
        return nullcontext()
    from start import trust

    return trust.self_edit(os.path.dirname(os.path.dirname(target.path)))
