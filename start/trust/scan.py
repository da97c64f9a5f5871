"""What an approval covers: every byte under `.start/`, project role files, the real paths of the
files outside the project root that project items name, and the project's Taskfile.

The Taskfile (paths.taskfile, what `start mcp` offers to agents) is pinned apart from the rest:
its bytes are in the approval, but not in its fingerprint, so that a launch, which reads nothing
of it, is not asked again when only the Taskfile changes; the Taskfile tools are
(start.trust.vouched).

The scan is bounded: a `.start/` tree that is too deep or holds too many entries, or a file in it
that is larger than `FILE_LIMIT`, is refused (exit 5) rather than read whole.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Protocol

from start.base import atomic, fs, paths
from start.base.errors import UntrustedError
from start.base.record import Record
from start.base.wall import Grant, Where, classify
from start.config import memo
from start.config.model import Config, column, names_of_layer, of_layer

FILE, SYMLINK, MISSING, OTHER, OUTSIDE = "file", "symlink", "missing", "other", "outside"

# The bounds of a scan; docs/security.md states them.
FILE_LIMIT = 1_048_576  # bytes of one file under .start/ (or one project role file)
MAX_DEPTH = 16  # directory levels below .start/
MAX_ENTRIES = 1000  # files, directories and links under .start/


class Entry(Record):
    """One thing an approval covers: a file's bytes, a symlink's target, a file's absence, or the
    real path of a file outside the project root."""

    label: str  # the path relative to the project root, or absolute when outside it
    what: str  # FILE, SYMLINK, MISSING, OTHER or OUTSIDE
    digest: str
    path: str  # the path as named or found
    data: bytes | None = None  # the bytes read for this run; None for config files (load read them)
    target: str | None = None  # a symlink's target, or the real path of an OUTSIDE file
    outside: bool = False  # the symlink resolves outside the project root, so it is not followed
    real: str | None = None  # the canonical real path whose bytes `data` are


class Named(Record):
    """A file that a project item names, and where it really is now (for the review)."""

    key: str  # such as "contexts.guide.file"
    path: str  # the spelled path, expanded against the project root
    real: str  # its real path now (the path itself when it does not exist)
    where: str  # "start", "inside" or "outside" (see start.base.wall.classify)


class Scan(Record):
    """The project layer as it is now: what an approval would cover, and unsafe permissions."""

    root: str
    start_dir: str  # the project's `.start/`, or where it would be when there is none
    entries: tuple[Entry, ...]
    fingerprint: str
    unsafe: tuple[str, ...]
    named: tuple[Named, ...] = ()
    commands: tuple[str, ...] = ()  # other agents' command directories with files covered
    # The Taskfile: FILE with its bytes; OUTSIDE (by real path) or OTHER (not a regular file of
    # at most FILE_LIMIT bytes) when it cannot be pinned, and is then never offered.
    taskfile: Entry | None = None

    @property
    def subject(self) -> str:
        """What is trusted, for messages: `.start/`, or the command directories without it, or
        the Taskfile when it is all the project has."""
        has_start = os.path.isdir(self.start_dir)
        if not self.entries and not self.commands and self.taskfile is not None:
            return self.taskfile.path
        if not self.commands:
            return str(self.start_dir)
        if len(self.commands) == 1 and not has_start:
            return str(self.commands[0])
        names = [os.path.basename(self.start_dir)] if has_start else []
        names.extend(_below(path, self.root) or path for path in self.commands)
        return f"the project config of {self.root} ({', '.join(names)})"

    def grant(self, reason: str, *, everything: bool = False) -> Grant:
        """The launch's permission to read: these approved bytes, and these outside paths."""
        pinned: dict[str, bytes | None] = {}
        outside: set[str] = set()
        for entry in self.entries:
            if entry.what == FILE and entry.data is not None and entry.real is not None:
                pinned[entry.real] = entry.data
            elif entry.what == MISSING and entry.real is not None:
                pinned[entry.real] = None
            elif entry.what == OUTSIDE and entry.target is not None:
                outside.add(entry.target)
        return Grant(
            root=os.path.realpath(self.root),
            start_dir=str(self.start_dir),
            pinned=pinned,
            outside=frozenset(outside),
            reason=reason,
            everything=everything,
        )


within = fs.within


# --- scanning -------------------------------------------------------------------------------


class _Scanner:
    def __init__(
        self, root: str, start_dir: str, layer: dict[str, str], digests: memo.Memo
    ) -> None:
        self.root = root
        self.digests = digests
        self.real_root = os.path.realpath(root)
        self.start_dir = start_dir
        self.real_start = os.path.realpath(start_dir)
        self.start_name = os.path.basename(os.path.normpath(start_dir))
        self.layer = layer
        self.entries: dict[tuple[str, str], Entry] = {}
        self.unsafe: list[str] = []
        self.count = 0
        # Other agents' command files and skills: the project layer's files outside `.start/`.
        self.others = [path for path in layer if os.path.dirname(path) != start_dir]
        # Where each file named so far really is: items often name one file (200 tasks of a
        # large config read docs/notes.md), and resolving it once per scan is enough.
        self.found: dict[str, tuple[str, Where]] = {}
        # The real path of each directory of a named file, and where it lies (`resolve`).
        self.dirs: dict[str, tuple[str, Where]] = {}

    def label(self, path: str) -> str:
        return _below(path, self.root) or _below(path, self.real_root) or path

    def inside(self, path: str) -> bool:
        return within(os.path.realpath(path), self.real_root)

    def add(self, entry: Entry) -> None:
        self.entries[(entry.label, entry.what)] = entry

    def check(self, path: str, info: os.stat_result) -> None:
        # Root can change any file anyway, so a root-owned file adds no risk.
        if info.st_uid not in (os.getuid(), 0):
            self.unsafe.append(f"{path}: owned by another user (uid {info.st_uid})")
        if info.st_mode & 0o022:
            self.unsafe.append(f"{path}: writable by group or others (run: chmod go-w {path})")

    def tree(self) -> None:
        start_dir = self.start_dir
        if not os.path.lexists(start_dir):
            pass  # only other agents' command files (their bytes are covered below)
        elif not self.inside(start_dir):
            # `.start` links outside the project: load read none of it, so the link is covered
            # (beside the project's command files), and nothing in it.
            self.symlink(start_dir)
        else:
            self.check(start_dir, os.stat(start_dir))
            self.walk(start_dir, 0)
        for path, digest in self.layer.items():
            if (self.label(path), FILE) not in self.entries and digest:
                self.check(path, os.stat(path))
                self.add(Entry(self.label(path), FILE, digest, path, real=os.path.realpath(path)))
        for link in _linked_folders(self.root, self.others) if self.others else ():
            if (self.label(link), SYMLINK) not in self.entries:
                self.symlink(link)  # a retargeted link asks again, even to the same bytes

    def walk(self, directory: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise UntrustedError(
                f"{self.start_dir} is nested more than {MAX_DEPTH} directories deep "
                f"({directory}); start does not scan it. Flatten it, or run with --no-project"
            )
        with os.scandir(directory) as found:
            names = sorted(entry.name for entry in found)
        for name in names:
            self.count += 1
            if self.count > MAX_ENTRIES:
                raise UntrustedError(
                    f"{self.start_dir} holds more than {MAX_ENTRIES} files and directories; "
                    "start does not scan it. Remove what is not config, or run with --no-project"
                )
            if atomic.is_temp_name(name):
                continue  # a write in progress (or killed) by start itself; never read
            self.node(os.path.join(directory, name), depth)

    def node(self, path: str, depth: int) -> None:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            inside = self.symlink(path)
            if self.layer.get(path):  # a config file that load read: covered by its digest
                self.check(path, os.stat(path))
                real = os.path.realpath(path)
                self.add(Entry(self.label(path), FILE, self.layer[path], path, real=real))
            elif inside and os.path.isfile(path):
                self.file(path, follow=True)
        elif stat.S_ISDIR(info.st_mode):
            self.check(path, info)
            self.walk(path, depth + 1)
        elif stat.S_ISREG(info.st_mode):
            if self.layer.get(path):
                self.check(path, info)
                real = os.path.realpath(path)
                self.add(Entry(self.label(path), FILE, self.layer[path], path, real=real))
            else:
                self.file(path, follow=False)
        else:
            self.add(Entry(self.label(path), OTHER, self.digests.sha256(b""), path))

    def symlink(self, path: str) -> bool:
        target = os.readlink(path)
        inside = self.inside(path)
        digest = self.digests.sha256(os.fsencode(target))
        self.add(Entry(self.label(path), SYMLINK, digest, path, target=target, outside=not inside))
        return inside

    def file(self, path: str, *, follow: bool, label: str | None = None) -> None:
        """Cover a regular file's bytes, keyed by its canonical path."""
        try:
            read = fs.read(path, FILE_LIMIT + 1, follow=follow)
        except fs.FileError as error:
            if error.missing:
                real = os.path.realpath(path)
                empty = self.digests.sha256(b"")
                self.add(Entry(label or self.label(path), MISSING, empty, path, real=real))
                return
            if "not a regular file" in error.reason:
                empty = self.digests.sha256(b"")
                self.add(Entry(label or self.label(path), OTHER, empty, path))
                return
            raise UntrustedError(f"cannot read {path}: {error.reason}") from None
        if read.size > FILE_LIMIT:
            raise UntrustedError(
                f"{path} is {read.size:,} bytes; start covers files of at most {FILE_LIMIT:,} "
                "bytes in a project's config. Move it out of .start/, or run with --no-project"
            )
        self.check(path, os.stat(read.real))
        entry_label = label or self.label(path)
        digest = self.digests.sha256(read.data)
        self.add(Entry(entry_label, FILE, digest, path, data=read.data, real=read.real))

    def resolve(self, path: str) -> tuple[str, Where]:
        """`os.path.realpath(path)`, and where that lies (`classify`), with each directory
        resolved and classified once per scan. POSIX resolves a path component by component, so
        a name that is not a symlink is its directory's real path and the name, and lies where
        its directory does (`within` the root, or `.start`, alike), unless it is the project
        root or `.start` itself; a symlink is resolved from its directory's real path."""
        head, name = os.path.split(path)
        if not os.path.isabs(head) or name in ("", ".", "..", self.start_name):
            real = os.path.realpath(path)
            return real, self.classify(path, real)
        known = self.dirs.get(head)
        if known is None:
            real_head = os.path.realpath(head)
            known = self.dirs[head] = (real_head, self.classify(head, real_head))
        real = os.path.join(known[0], name)
        if os.path.islink(real):
            real = os.path.realpath(real)
        elif real not in (self.real_root, self.real_start):
            return real, known[1]
        return real, self.classify(path, real)

    def classify(self, path: str, real: str) -> Where:
        return classify(path, real, self.real_root, self.start_dir, self.real_start)

    def named(self, key: str, path: str, *, role: bool) -> Named:
        """A file a project item names: covered by bytes, by real path, or (a repository file that
        is not a role) left to the wall at read time."""
        return Named(key, path, *self.place(path, role=role))

    def place(self, path: str, *, role: bool) -> tuple[str, Where]:
        """Where a file that items name really is, covered as `named` says."""
        found = self.found.get(path)
        if found is None:
            found = self.found[path] = self.resolve(path)
        real, where = found
        if where == "outside":
            # Never read before approval; the approval covers the real path, not the bytes.
            digest = self.digests.sha256(os.fsencode(real))
            self.add(Entry(real, OUTSIDE, digest, path, target=real))
        elif where == "start" or role:
            label = self.label(real)
            if not any((label, what) in self.entries for what in (FILE, MISSING, OTHER)):
                self.file(path, follow=True, label=label)
        return found


class Covered(Protocol):
    """What a fingerprint reads of an entry, or of the stored copy of one (trust.store.Copy)."""

    @property
    def what(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def digest(self) -> str: ...


def fingerprint(entries: Sequence[Covered], digests: memo.Memo | None = None) -> str:
    """The SHA-256 of the entries' kinds, labels and digests, sorted, as JSON; remembered by
    `digests` by those strings, NUL-separated (no path holds a NUL; surrogatepass keeps an
    undecodable byte apart from the character it would spell)."""
    rows = sorted([e.what, e.label, e.digest] for e in entries)
    key = b""
    if digests is not None:
        key = "\0".join("\0".join(row) for row in rows).encode("utf-8", "surrogatepass")
        found = digests.get(memo.FINGERPRINT, key)
        if type(found) is str and len(found) == 64:
            return found
    import json  # only when computed

    computed = fs.sha256(json.dumps(rows, separators=(",", ":")).encode("ascii"))
    if digests is not None:
        digests.put(memo.FINGERPRINT, key, computed)
    return computed


def scan(config: Config) -> Scan | None:
    """What approving this config's project layer covers; None when it has no config files and
    no Taskfile.

    The project layer's files are its `.start/` config files and other agents' project command
    files (start.config.interop), whose bytes load read; a command file's includes are named files.
    Its Taskfile is pinned beside them (Scan.taskfile).
    """
    layer = {f.path: f.digest for f in config.files if f.layer == "project"}
    start_dir = config.layer_dirs.get("project") or os.path.join(
        config.root, paths.PROJECT_DIR_NAME
    )
    digests = memo.of(config.root)
    taskfile = _taskfile_entry(config.root, digests)
    if not layer:
        if taskfile is None:
            return None
        return Scan(config.root, start_dir, (), fingerprint((), digests), (), taskfile=taskfile)
    scanner = _Scanner(config.root, start_dir, layer, digests)
    named: list[Named] = []
    try:
        scanner.tree()
        # The files the project's items name, from a cached config's index: it decodes none of
        # the items to find them (model.column, model.names_of_layer). Each file is placed once
        # for the items of a section that name it (200 tasks of a large config read one).
        for section in ("roles", "contexts", "tasks"):
            table = getattr(config, section)
            files = column(table, "file")
            placed: dict[str, tuple[str, str, Where]] = {}
            for name in names_of_layer(table, "project"):
                file = files.get(name)
                if file is None:
                    continue
                found = placed.get(file)
                if found is None:
                    path = paths.expand(file, config.root)
                    found = placed[file] = (path, *scanner.place(path, role=section == "roles"))
                # The record is the tuple it is, built without its constructor's checks.
                named.append(tuple.__new__(Named, (f"{section}.{name}.file", *found)))
        # A task is imported only from other agents' files, which are project files outside
        # `.start/` when it is the project's: without any, no project task is decoded here.
        for task in of_layer(config.tasks, "project") if scanner.others else ():
            if task.imported is None:
                continue
            for include in dict.fromkeys(i.path for i in task.imported.includes()):
                path = paths.expand(include, config.root)
                named.append(scanner.named(f"tasks.{task.name}: @{include}", path, role=False))
    except UntrustedError:
        raise
    except RecursionError:
        raise UntrustedError(f"{start_dir} is nested too deeply to scan") from None
    except OSError as error:
        raise UntrustedError(f"cannot read {start_dir}: {error}") from error
    entries = tuple(sorted(scanner.entries.values(), key=lambda e: (e.label, e.what)))
    return Scan(
        config.root,
        start_dir,
        entries,
        fingerprint(entries, digests),
        tuple(scanner.unsafe),
        tuple(named),
        _command_dirs(config, scanner.others) if scanner.others else (),
        taskfile,
    )


def _taskfile_entry(root: str, digests: memo.Memo) -> Entry | None:
    """The project's Taskfile as an approval pins it: its bytes when it is a regular file of at
    most FILE_LIMIT bytes inside the project root; else what it is, unread. Its permissions are
    not checked: it is a repository file, and its bytes are compared whenever it is offered."""
    path = paths.taskfile(root)
    if path is None:
        return None
    label = os.path.relpath(path, root)
    real = os.path.realpath(path)
    if not within(real, os.path.realpath(root)):
        return Entry(label, OUTSIDE, digests.sha256(os.fsencode(real)), path, target=real)
    try:
        read = fs.read(path, FILE_LIMIT + 1)
    except fs.FileError:
        return Entry(label, OTHER, digests.sha256(b""), path)
    if read.size > FILE_LIMIT:
        return Entry(label, OTHER, digests.sha256(b""), path)
    return Entry(label, FILE, digests.sha256(read.data), path, data=read.data, real=read.real)


def _command_dirs(config: Config, layer: Sequence[str]) -> tuple[str, ...]:
    """The project's command directories of other agents that hold any of the files `layer`
    (the project's files that the approval covers)."""
    from start.config.interop import SKILL_PROJECT_DIRS
    from start.config.interop.dirs import project_places

    directories = [place.directory for place in project_places(config.root)]
    directories.extend(paths.join(config.root, relative) for relative in SKILL_PROJECT_DIRS)
    found = [
        directory
        for directory in directories
        if any(within(os.path.normpath(path), os.path.normpath(directory)) for path in layer)
    ]
    return tuple(dict.fromkeys(found))


def _linked_folders(root: str, layer: Sequence[str]) -> list[str]:
    """The symlinked folders below the project's command directories that the files of the layer
    were read through (start.config.interop.dirs follows those that stay inside the project
    root)."""
    from start.config.interop.dirs import project_places

    places = [os.path.normpath(place.directory) for place in project_places(root)]
    links: dict[str, None] = {}
    for path in layer:
        clean = os.path.normpath(path)
        for place in places:
            if not within(clean, place) or clean == place:
                continue
            folder = place
            for part in os.path.relpath(clean, place).split(os.sep)[:-1]:
                folder = os.path.join(folder, part)
                if os.path.islink(folder):
                    links[folder] = None
    return list(links)


def current_bytes(entry: Entry) -> bytes:
    """The bytes an entry covers; a config file is re-read and must still match its digest."""
    if entry.data is not None:
        return entry.data
    try:
        data = fs.read(entry.path, FILE_LIMIT * 4).data
    except fs.FileError as error:
        raise UntrustedError(f"cannot read {entry.path}: {error.reason}") from None
    if fs.sha256(data) != entry.digest:
        raise UntrustedError(
            f"{entry.path} changed while start was reading it; run the command again"
        )
    return data


def unsafe_message(found: Scan) -> str:
    lines = [f"{found.subject} is not safe to use; fix its permissions:"]
    lines.extend(f"  {problem}" for problem in found.unsafe)
    return "\n".join(lines)


def _below(path: str, root: str) -> str | None:
    """`path` relative to `root` (`.` for the root itself), or None when it is not below it."""
    path, root = paths.clean(path), paths.clean(root)
    if path == root:
        return "."
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None
