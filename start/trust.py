"""Project-config trust: a project's `.start/` runs nothing until the user approves its exact bytes.

An approval is keyed by the real path of the project root and a SHA-256 over every file in `.start/`
and every file a project role names inside the project. Records live one per approval under
`$XDG_STATE_HOME/start/trust/`. This module decides and records; it never prints or prompts: the
caller passes `ask` (show a review, return the answer) and `warn` callbacks.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from start import atomic, paths
from start.config import files
from start.config.model import Config
from start.errors import StartError, UntrustedError

ENV_TRUSTED_PATHS = "START_TRUSTED_PATHS"
RECORD_VERSION = 1
# Larger files are covered by their digest only; the record keeps no copy to diff against.
COPY_LIMIT = 1 << 20

FILE, SYMLINK, MISSING, OTHER = "file", "symlink", "missing", "other"


class _Options(Protocol):
    @property
    def no_project(self) -> bool: ...


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


class Copy(NamedTuple):
    kind: str
    label: str
    digest: str
    text: str | None


class Record(NamedTuple):
    """One stored approval."""

    path: Path
    root: str
    fingerprint: str
    approved: str
    copies: tuple[Copy, ...]


class Verdict(NamedTuple):
    trusted: bool
    reason: str
    scan: Scan | None
    record: Record | None = None
    warnings: tuple[str, ...] = ()


class Mention(NamedTuple):
    """A command, binary, path or setting the project config uses, for the review."""

    key: str
    value: str
    where: str = ""  # "outside project root", "inside the project", "on PATH" or ""


class Change(NamedTuple):
    label: str
    status: str  # "added", "changed", "removed" or "same"
    diff: tuple[str, ...] = ()


class Review(NamedTuple):
    """Everything approval allows, and how it differs from the last approval of this root."""

    scan: Scan
    commands: tuple[Mention, ...]
    binaries: tuple[Mention, ...]
    files: tuple[Mention, ...]
    settings: tuple[Mention, ...]
    previous: Record | None
    changes: tuple[Change, ...]
    errors: int
    warnings: tuple[str, ...]


Ask = Callable[[Review], bool | None]
Warn = Callable[[str], None]


def _sha(data: bytes) -> str:
    return files.sha256(data)


def _within(real: str, real_root: str) -> bool:
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
        return _within(os.path.realpath(path), self.real_root)

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
            self.add(Entry(self.label(path), OTHER, _sha(b""), path))

    def symlink(self, path: Path) -> bool:
        target = os.readlink(path)
        inside = self.inside(path)
        digest = _sha(os.fsencode(target))
        self.add(Entry(self.label(path), SYMLINK, digest, path, target=target, outside=not inside))
        return inside

    def file(self, path: Path, *, follow: bool) -> None:
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        if not follow:
            flags |= getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags)
        except (FileNotFoundError, NotADirectoryError):
            self.add(Entry(self.label(path), MISSING, _sha(b""), path))
            return
        except OSError as error:
            raise UntrustedError(f"cannot read {path}: {error.strerror}") from error
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                self.add(Entry(self.label(path), OTHER, _sha(b""), path))
                return
            self.check(path, info)
            data = handle.read()
        self.add(Entry(self.label(path), FILE, _sha(data), path, data=data))

    def role_file(self, path: Path) -> None:
        label = self.label(path)
        if any((label, kind) in self.entries for kind in (FILE, SYMLINK, MISSING, OTHER)):
            return
        if not self.inside(path):
            return  # outside the project: never read before approval; the review marks it
        self.file(path, follow=True)


def fingerprint(entries: tuple[Entry, ...] | tuple[Copy, ...]) -> str:
    rows = sorted([e.kind, e.label, e.digest] for e in entries)
    return _sha(json.dumps(rows, separators=(",", ":")).encode("ascii"))


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
    if _sha(data) != entry.digest:
        raise UntrustedError(
            f"{entry.path} changed while start was reading it; run the command again"
        )
    return data


# --- the bytes of this run ------------------------------------------------------------------

_pinned: dict[Path, bytes | None] = {}


def _pin(found: Scan | None) -> None:
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


# --- the store ------------------------------------------------------------------------------


def store_dir() -> Path:
    return paths.state_dir() / "trust"


def _root_key(root: str) -> str:
    return _sha(os.fsencode(root))[:16]


def _record_name(root: str, digest: str) -> str:
    return f"{_root_key(root)}-{digest[:40]}.json"


class _CorruptError(Exception):
    pass


def _store_problem(directory: Path) -> str | None:
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return f"ignoring trust records: {directory} is not a directory"
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        return f"ignoring trust records: {directory} is writable by another user"
    return None


def _load_record(path: Path) -> Record:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError as error:
        raise _CorruptError(error.strerror) from error
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _CorruptError("not a regular file")
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise _CorruptError("writable by another user")
        raw = handle.read()
    try:
        data = json.loads(raw)
        copies = tuple(
            Copy(c["kind"], c["label"], c["digest"], c.get("text")) for c in data["entries"]
        )
        record = Record(path, data["root"], data["fingerprint"], data["approved"], copies)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise _CorruptError("not a trust record") from error
    if data.get("version") != RECORD_VERSION:
        raise _CorruptError(f"unknown version {data.get('version')!r}")
    strings = [record.root, record.fingerprint, record.approved]
    for copy in copies:
        strings.extend((copy.kind, copy.label, copy.digest))
    if not all(isinstance(s, str) for s in strings):
        raise _CorruptError("not a trust record")
    for copy in copies:
        if copy.text is None:
            continue
        try:
            same = isinstance(copy.text, str) and _sha(copy.text.encode("utf-8")) == copy.digest
        except UnicodeError:
            same = False
        if not same:
            raise _CorruptError(f"the copy of {copy.label} does not match its digest")
    if fingerprint(copies) != record.fingerprint:
        raise _CorruptError("its digest does not match its files")
    return record


def records(root: Path | None = None) -> tuple[list[Record], list[str]]:
    """Stored approvals (of one root, or all), oldest first, and warnings for corrupt ones."""
    directory = store_dir()
    problem = _store_problem(directory)
    if problem is not None:
        return [], [problem]
    if not directory.is_dir():
        return [], []
    real = os.path.realpath(root) if root is not None else None
    pattern = f"{_root_key(real)}-*.json" if real is not None else "*.json"
    found: list[Record] = []
    warnings: list[str] = []
    for path in sorted(directory.glob(pattern)):
        try:
            record = _load_record(path)
        except _CorruptError as error:
            warnings.append(f"ignoring corrupt trust record {path}: {error}")
            continue
        if real is None or record.root == real:
            found.append(record)
    found.sort(key=lambda r: r.approved)
    return found, warnings


def _lookup(found: Scan) -> tuple[Record | None, list[str]]:
    directory = store_dir()
    problem = _store_problem(directory)
    if problem is not None:
        return None, [problem]
    real = os.path.realpath(found.root)
    path = directory / _record_name(real, found.fingerprint)
    if not os.path.lexists(path):
        return None, []
    try:
        record = _load_record(path)
    except _CorruptError as error:
        return None, [f"ignoring corrupt trust record {path}: {error}"]
    if record.root != real or record.fingerprint != found.fingerprint:
        return None, [f"ignoring trust record {path}: it is for another project or other files"]
    return record, []


def approve(found: Scan) -> Record:
    """Record an approval of exactly these bytes at this root."""
    if found.unsafe:
        raise UntrustedError(unsafe_message(found))
    copies: list[dict[str, Any]] = []
    for entry in found.entries:
        text = None
        if entry.kind == FILE:
            data = current_bytes(entry)
            if len(data) <= COPY_LIMIT:
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
        copies.append(
            {"kind": entry.kind, "label": entry.label, "digest": entry.digest, "text": text}
        )
    real = os.path.realpath(found.root)
    approved = datetime.now().astimezone().isoformat(timespec="seconds")
    body = {
        "version": RECORD_VERSION,
        "root": real,
        "fingerprint": found.fingerprint,
        "approved": approved,
        "entries": copies,
    }
    directory = store_dir()
    path = directory / _record_name(real, found.fingerprint)
    try:
        _write_private(directory, path, json.dumps(body, indent=1).encode("utf-8") + b"\n")
    except OSError as error:
        raise StartError(f"cannot record the approval in {directory}: {error.strerror}") from error
    kept = tuple(Copy(c["kind"], c["label"], c["digest"], c["text"]) for c in copies)
    return Record(path, real, found.fingerprint, approved, kept)


def _write_private(directory: Path, path: Path, data: bytes) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise StartError(f"{directory} is not a directory owned by you; remove it")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(directory, 0o700)
    atomic.replace(path, data, mode=0o600)


def revoke(root: Path) -> int:
    """Remove every approval of this project root; the number removed."""
    directory = store_dir()
    if _store_problem(directory) is not None or not directory.is_dir():
        return 0
    removed = 0
    for path in directory.glob(f"{_root_key(os.path.realpath(root))}-*.json"):
        path.unlink(missing_ok=True)
        removed += 1
    return removed


# --- deciding -------------------------------------------------------------------------------


def trusted_prefixes(environ: Mapping[str, str] | None = None) -> tuple[list[str], list[str]]:
    """`START_TRUSTED_PATHS` as real absolute prefixes, and warnings for entries ignored."""
    value = (os.environ if environ is None else environ).get(ENV_TRUSTED_PATHS, "")
    prefixes: list[str] = []
    warnings: list[str] = []
    for part in value.split(os.pathsep):
        if not part:
            continue
        if not os.path.isabs(part):
            warnings.append(f"{ENV_TRUSTED_PATHS}: ignoring '{part}': not an absolute path")
            continue
        prefixes.append(os.path.realpath(part))
    return prefixes, warnings


def check(config: Config) -> Verdict:
    """Whether the project layer of `config` may be used, and why. Never prompts."""
    found = scan(config)
    if found is None:
        ignored = config.layer_dirs.get("project") is None and config.project.start_dir is not None
        return Verdict(True, "project config ignored" if ignored else "no project config", None)
    if found.unsafe:
        return Verdict(False, f"not trusted: {found.unsafe[0]}", found)
    prefixes, warnings = trusted_prefixes()
    real = os.path.realpath(found.root)
    if any(_within(real, prefix) for prefix in prefixes):
        return Verdict(True, f"trusted by {ENV_TRUSTED_PATHS}", found, None, tuple(warnings))
    record, more = _lookup(found)
    warnings.extend(more)
    if record is not None:
        return Verdict(True, f"approved {record.approved[:10]}", found, record, tuple(warnings))
    earlier, more = records(found.root)
    warnings.extend(m for m in more if m not in warnings)
    if not earlier:
        return Verdict(False, "not trusted: never approved", found, None, tuple(warnings))
    statuses = [c.status for c in changes(found, earlier[-1], diff=False)]
    counts = [(s, statuses.count(s)) for s in ("changed", "added", "removed") if s in statuses]
    parts = [
        f"{n} file{'s' if n != 1 else ''} {status}" if i == 0 else f"{n} {status}"
        for i, (status, n) in enumerate(counts)
    ]
    reason = f"not trusted: {', '.join(parts) or 'files changed'} since approval"
    return Verdict(False, reason, found, None, tuple(warnings))


def describe(config: Config) -> tuple[bool, str]:
    """(trusted?, the reason in a few words), for `start doctor`."""
    try:
        verdict = check(config)
    except StartError as error:
        return False, f"not trusted: {error}"
    return verdict.trusted, verdict.reason


def unsafe_message(found: Scan) -> str:
    lines = [f"{found.start_dir} is not safe to use; fix its permissions:"]
    lines.extend(f"  {problem}" for problem in found.unsafe)
    return "\n".join(lines)


def require(
    config: Config, options: _Options, *, ask: Ask | None = None, warn: Warn | None = None
) -> Config:
    """The config to launch with, once its project layer is trusted; else UntrustedError (5).

    `ask` shows the review and returns the answer, or None when there is no terminal to ask on.
    """
    if options.no_project or os.environ.get("START_NO_PROJECT") == "1":
        if config.layer_dirs.get("project") is not None:
            from start.config.load import load

            config = load(config.project.workdir, use_project=False, strict=True)
        _pin(None)
        return config
    verdict = check(config)
    for message in verdict.warnings:
        if warn is not None:
            warn(message)
    found = verdict.scan
    if found is None or verdict.trusted:
        _pin(found)
        return config
    if found.unsafe:
        raise UntrustedError(unsafe_message(found))
    answer = ask(review(config, found, verdict.warnings)) if ask is not None else None
    if answer is None:
        raise UntrustedError(f"{found.start_dir} is not trusted; run 'start trust' to review it")
    if not answer:
        raise UntrustedError(f"{found.start_dir} was not approved; nothing was run")
    approve(found)
    _pin(found)
    return config


@contextmanager
def self_edit(root: Path) -> Iterator[None]:
    """Wrap a write by `start` to a project config file: keep it approved if it was before."""
    start_dir = Path(root).resolve() / paths.PROJECT_DIR_NAME
    try:
        if not os.path.lexists(start_dir) or (start_dir.is_dir() and not any(start_dir.iterdir())):
            approved = True
        else:
            before = _scan_at(root)
            approved = before is not None and not before.unsafe and _lookup(before)[0] is not None
    except (StartError, OSError):
        approved = False
    yield
    if not approved:
        return
    try:
        after = _scan_at(root)
        if after is not None and not after.unsafe:
            approve(after)
    except (StartError, OSError):
        return  # the edit stands; the next launch asks


def _scan_at(root: Path) -> Scan | None:
    from start.config.load import load

    start_dir = Path(root).resolve() / paths.PROJECT_DIR_NAME
    if not start_dir.is_dir():
        return None
    config = load(start_dir.parent, layers=("project",))
    if config.project.start_dir != start_dir:
        return None
    return scan(config)


# --- reviewing ------------------------------------------------------------------------------


def changes(found: Scan, previous: Record, *, diff: bool = True) -> list[Change]:
    """How the files now differ from an earlier approval, with a unified diff of text files."""
    import difflib

    old = {(c.label, c.kind): c for c in previous.copies}
    new = {(e.label, e.kind): e for e in found.entries}
    result: list[Change] = []
    for key in sorted(old.keys() | new.keys()):
        label, kind = key
        before, after = old.get(key), new.get(key)
        if after is None:
            result.append(Change(label, "removed"))
            continue
        if before is not None and before.digest == after.digest:
            result.append(Change(label, "same"))
            continue
        status = "added" if before is None else "changed"
        lines: tuple[str, ...] = ()
        if diff and kind == FILE:
            old_text = before.text if before is not None else ""
            new_text = _text(current_bytes(after))
            if old_text is not None and new_text is not None:
                lines = tuple(
                    line.rstrip("\n")
                    for line in difflib.unified_diff(
                        old_text.splitlines(keepends=True),
                        new_text.splitlines(keepends=True),
                        f"a/{label}" if before is not None else "/dev/null",
                        f"b/{label}",
                    )
                )
        elif diff and kind == SYMLINK and before is not None:
            lines = (f"symlink now points to {after.target}",)
        result.append(Change(label, status, lines))
    return result


def _text(data: bytes) -> str | None:
    if len(data) > COPY_LIMIT:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def review(config: Config, found: Scan, warnings: tuple[str, ...] = ()) -> Review:
    """What approving `found` allows: every command, binary, file path and setting it sets."""
    real_root = os.path.realpath(found.root)
    commands: list[Mention] = []
    binaries: list[Mention] = []
    files: list[Mention] = []

    def where(path: Path) -> str:
        real = os.path.realpath(path)
        return "inside the project" if _within(real, real_root) else "outside project root"

    for kind in ("agents", "roles", "contexts", "tasks"):
        items: Mapping[str, Any] = getattr(config, kind)
        for name, item in items.items():
            if item.origin.layer != "project":
                continue
            key = f"{kind}.{name}"
            if kind == "agents":
                bin_ = item.bin
                place = "on PATH"
                if os.sep in bin_:
                    place = where(paths.expand(bin_, found.root))
                binaries.append(Mention(f"{key}.bin", bin_, place))
                commands.append(Mention(f"{key}.command", item.command))
                continue
            if item.command is not None:
                commands.append(Mention(f"{key}.command", item.command))
            if item.shell is not None:
                binaries.append(Mention(f"{key}.shell", item.shell))
            if item.file is not None:
                path = paths.expand(item.file, found.root)
                files.append(Mention(f"{key}.file", str(path), where(path)))
    settings = []
    for name, origin in config.settings.origins.items():
        if origin.layer == "project":
            value = getattr(config.settings, name)
            settings.append(Mention(f"settings.{name}", json.dumps(value)))
            if name == "shell":
                binaries.append(Mention("settings.shell", str(value)))
    earlier, more = records(found.root)
    previous = earlier[-1] if earlier else None
    diff = tuple(changes(found, previous)) if previous is not None else ()
    return Review(
        found,
        tuple(commands),
        tuple(binaries),
        tuple(files),
        tuple(settings),
        previous,
        diff,
        len(config.errors),
        (*warnings, *(m for m in more if m not in warnings)),
    )
