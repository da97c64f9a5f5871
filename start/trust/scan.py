"""What an approval covers: the project's `.start/` and role files, and the bytes of this run."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from start import paths
from start.config import files
from start.config.model import Config
from start.errors import UntrustedError

if TYPE_CHECKING:
    from start.trust.store import Copy

FILE, SYMLINK, MISSING, OTHER = "file", "symlink", "missing", "other"


class Entry(NamedTuple):
    """One thing an approval covers: a file's bytes, a symlink's target, or a file's absence."""

    label: str  # the path relative to the project root, or absolute when outside it
    kind: str
    digest: str
    path: Path
    data: bytes | None = None  # the bytes read for this run; None for config files (load read them)
    target: str | None = None  # a symlink's target
    outside: bool = False  # the symlink resolves outside the project root, so it is not followed


class Scan(NamedTuple):
    """The project layer as it is now: what an approval would cover, and unsafe permissions."""

    root: Path
    start_dir: Path
    entries: tuple[Entry, ...]
    fingerprint: str
    unsafe: tuple[str, ...]


def sha(data: bytes) -> str:
    return files.sha256(data)


def within(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


# --- scanning -------------------------------------------------------------------------------


def _raise(error: OSError) -> None:
    raise error


class _Scanner:
    def __init__(self, root: Path, layer: Mapping[Path, str]) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.layer = layer
        self.entries: dict[tuple[str, str], Entry] = {}
        self.unsafe: list[str] = []

    def label(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def inside(self, path: Path) -> bool:
        return within(os.path.realpath(path), self.real_root)

    def add(self, entry: Entry) -> None:
        self.entries[(entry.label, entry.kind)] = entry

    def check(self, path: Path, info: os.stat_result) -> None:
        # Root can change any file anyway, so a root-owned file adds no risk.
        if info.st_uid not in (os.getuid(), 0):
            self.unsafe.append(f"{path}: owned by another user (uid {info.st_uid})")
        if info.st_mode & 0o022:
            self.unsafe.append(f"{path}: writable by group or others (run: chmod go-w {path})")

    def tree(self, start_dir: Path) -> None:
        if not self.inside(start_dir):
            # `.start` links outside the project: its config files are covered, nothing else.
            self.symlink(start_dir)
        else:
            self.check(start_dir, os.stat(start_dir))
            for dirpath, dirnames, filenames in os.walk(start_dir, onerror=_raise):
                for name in (*dirnames, *filenames):
                    self.node(Path(dirpath) / name)
        for path, digest in self.layer.items():
            if (self.label(path), FILE) not in self.entries:
                self.check(path, os.stat(path))
                self.add(Entry(self.label(path), FILE, digest, path))

    def node(self, path: Path) -> None:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            inside = self.symlink(path)
            if path in self.layer:
                self.check(path, os.stat(path))
                self.add(Entry(self.label(path), FILE, self.layer[path], path))
            elif inside and os.path.isfile(path):
                self.file(path, follow=True)
        elif stat.S_ISDIR(info.st_mode):
            self.check(path, info)
        elif stat.S_ISREG(info.st_mode):
            if path in self.layer:
                self.check(path, info)
                self.add(Entry(self.label(path), FILE, self.layer[path], path))
            else:
                self.file(path, follow=False)
        else:
            self.add(Entry(self.label(path), OTHER, sha(b""), path))

    def symlink(self, path: Path) -> bool:
        target = os.readlink(path)
        inside = self.inside(path)
        digest = sha(os.fsencode(target))
        self.add(Entry(self.label(path), SYMLINK, digest, path, target=target, outside=not inside))
        return inside

    def file(self, path: Path, *, follow: bool) -> None:
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        if not follow:
            flags |= getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags)
        except (FileNotFoundError, NotADirectoryError):
            self.add(Entry(self.label(path), MISSING, sha(b""), path))
            return
        except OSError as error:
            raise UntrustedError(f"cannot read {path}: {error.strerror}") from error
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                self.add(Entry(self.label(path), OTHER, sha(b""), path))
                return
            self.check(path, info)
            data = handle.read()
        self.add(Entry(self.label(path), FILE, sha(data), path, data=data))

    def role_file(self, path: Path) -> None:
        label = self.label(path)
        if any((label, kind) in self.entries for kind in (FILE, SYMLINK, MISSING, OTHER)):
            return
        if not self.inside(path):
            return  # outside the project: never read before approval; the review marks it
        self.file(path, follow=True)


def fingerprint(entries: tuple[Entry, ...] | tuple[Copy, ...]) -> str:
    rows = sorted([e.kind, e.label, e.digest] for e in entries)
    return sha(json.dumps(rows, separators=(",", ":")).encode("ascii"))


def scan(config: Config) -> Scan | None:
    """What approving this config's project layer covers; None when it has no config files."""
    start_dir = config.layer_dirs.get("project")
    layer = {f.path: f.digest for f in config.files if f.layer == "project"}
    if start_dir is None or not layer:
        return None
    scanner = _Scanner(config.root, layer)
    try:
        scanner.tree(start_dir)
        for role in config.roles.values():
            if role.origin.layer == "project" and role.file is not None:
                scanner.role_file(paths.expand(role.file, config.root))
    except UntrustedError:
        raise
    except OSError as error:
        raise UntrustedError(f"cannot read {start_dir}: {error}") from error
    entries = tuple(sorted(scanner.entries.values(), key=lambda e: (e.label, e.kind)))
    return Scan(config.root, start_dir, entries, fingerprint(entries), tuple(scanner.unsafe))


def current_bytes(entry: Entry) -> bytes:
    """The bytes an entry covers; a config file is re-read and must still match its digest."""
    if entry.data is not None:
        return entry.data
    data = entry.path.read_bytes()
    if sha(data) != entry.digest:
        raise UntrustedError(
            f"{entry.path} changed while start was reading it; run the command again"
        )
    return data


# --- the bytes of this run ------------------------------------------------------------------

_pinned: dict[Path, bytes | None] = {}


def pin(found: Scan | None) -> None:
    _pinned.clear()
    if found is not None:
        for entry in found.entries:
            if entry.kind == FILE and entry.data is not None:
                _pinned[entry.path] = entry.data
            elif entry.kind == MISSING:
                _pinned[entry.path] = None


def read_bytes(path: Path) -> bytes:
    """A file's bytes: the approved ones when trust read it for this run, else from disk."""
    if path in _pinned:
        data = _pinned[path]
        if data is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        return data
    return path.read_bytes()


def unsafe_message(found: Scan) -> str:
    lines = [f"{found.start_dir} is not safe to use; fix its permissions:"]
    lines.extend(f"  {problem}" for problem in found.unsafe)
    return "\n".join(lines)
