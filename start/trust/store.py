"""The approval store: one record per approval, with a copy of the approved text for diffs.

A record names the Taskfile it approves (`taskfile`: a copy, or null for none) beside its files;
a record written before approvals pinned the Taskfile has no such key, and approves none.
"""

from __future__ import annotations

import contextlib
import os
import stat
from datetime import datetime
from typing import Any

from start.base import atomic, fs, paths
from start.base.errors import StartError, UntrustedError
from start.base.record import Record
from start.config import memo
from start.trust.scan import (
    FILE,
    Scan,
    current_bytes,
    fingerprint,
    unsafe_message,
)

RECORD_VERSION = 1
# Larger files are covered by their digest only; the record keeps no copy to diff against.
COPY_LIMIT = 1 << 20
# So are the files met once the copies hold this many bytes: every launch reads the record.
COPIES_LIMIT = 8 << 20


class Copy(Record):
    what: str  # the entry's scan.FILE, SYMLINK, ...; stored as "kind"
    label: str
    digest: str
    text: str | None


class Approval(Record):
    """One stored approval."""

    path: str
    root: str
    fingerprint: str
    approved: str
    copies: tuple[Copy, ...]
    taskfile: Copy | None = None  # the Taskfile approved with these files; None: none
    # False for a record written before approvals pinned the Taskfile: it says nothing of one.
    pins_taskfile: bool = True


# --- the store ------------------------------------------------------------------------------


def store_dir() -> str:
    return os.path.join(paths.state_dir(), "trust")


def _matching(directory: str, pattern: str) -> list[str]:
    """The files in `directory` whose names match `pattern` (fnmatch), sorted."""
    import fnmatch

    return [
        os.path.join(directory, name)
        for name in sorted(os.listdir(directory))
        if fnmatch.fnmatchcase(name, pattern)
    ]


def _root_key(root: str, digests: memo.Memo | None = None) -> str:
    data = os.fsencode(root)
    return (fs.sha256(data) if digests is None else digests.sha256(data))[:16]


def _record_name(root: str, digest: str, digests: memo.Memo | None = None) -> str:
    return f"{_root_key(root, digests)}-{digest[:40]}.json"


class _CorruptError(Exception):
    pass


def _store_problem(directory: str) -> str | None:
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return f"ignoring trust records: {directory} is not a directory"
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        return f"ignoring trust records: {directory} is writable by another user"
    return None


def _load_record(path: str, digests: memo.Memo | None = None) -> Approval:
    """The approval that the record at `path` holds. With `digests` (a launch's lookup, which
    decides by the approval and shows none of it), without the texts of its copies, and
    remembered so by the record's bytes, which were checked whole when it was parsed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise _CorruptError(error.strerror) from error
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _CorruptError("not a regular file")
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise _CorruptError("writable by another user")
        raw = handle.read()
    if digests is not None:
        remembered = _remembered(path, digests.get(memo.RECORD, raw))
        if remembered is not None:
            return remembered
    import json  # only when the record is parsed

    try:
        data = json.loads(raw)
        copies = tuple(_copy(c) for c in data["entries"])
        pinned = data.get("taskfile")
        taskfile = _copy(pinned) if pinned is not None else None
        record = Approval(
            path,
            data["root"],
            data["fingerprint"],
            data["approved"],
            copies,
            taskfile,
            "taskfile" in data,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise _CorruptError("not a trust record") from error
    if data.get("version") != RECORD_VERSION:
        raise _CorruptError(f"unknown version {data.get('version')!r}")
    strings = [record.root, record.fingerprint, record.approved]
    kept = (*copies, *([taskfile] if taskfile is not None else []))
    for copy in kept:
        strings.extend((copy.what, copy.label, copy.digest))
    if not all(isinstance(s, str) for s in strings):
        raise _CorruptError("not a trust record")
    for copy in kept:
        if copy.text is None:
            continue
        try:
            text = copy.text
            same = isinstance(text, str) and fs.sha256(text.encode("utf-8")) == copy.digest
        except UnicodeError:
            same = False
        if not same:
            raise _CorruptError(f"the copy of {copy.label} does not match its digest")
    if fingerprint(copies) != record.fingerprint:
        raise _CorruptError("its digest does not match its files")
    if digests is not None:
        record = _textless(record)
        rows = [tuple(copy) for copy in record.copies]
        row = tuple(record.taskfile) if record.taskfile is not None else None
        digests.put(memo.RECORD, raw, (*record[1:4], rows, row, record.pins_taskfile))
    return record


def _textless(record: Approval) -> Approval:
    """`record` without the texts of its copies: what it approves, not what it looked like."""
    copies = tuple(copy._replace(text=None) for copy in record.copies)
    taskfile = record.taskfile._replace(text=None) if record.taskfile is not None else None
    return record._replace(copies=copies, taskfile=taskfile)


def _remembered(path: str, found: object) -> Approval | None:
    """The approval a memo remembers for a record's bytes, if it has exactly the shape
    `_load_record` puts there: (root, fingerprint, approved, copies, taskfile, pins_taskfile)."""
    if type(found) is not tuple or len(found) != 6:
        return None
    root, digest, approved, kept, pinned, pins = found
    if not all(type(part) is str for part in (root, digest, approved)) or type(pins) is not bool:
        return None
    if type(kept) is not list or not all(map(_is_copy, kept)):
        return None
    if pinned is not None and not _is_copy(pinned):
        return None
    copies = tuple(Copy(*row) for row in kept)
    taskfile = None if pinned is None else Copy(*pinned)
    return Approval(path, root, digest, approved, copies, taskfile, pins)


def _is_copy(row: object) -> bool:
    """Whether `row` is a Copy's fields as a tuple: three strings and a string or None."""
    return (
        type(row) is tuple
        and len(row) == 4
        and all(type(part) is str for part in row[:3])
        and (row[3] is None or type(row[3]) is str)
    )


def _copy(data: Any) -> Copy:
    return Copy(data["kind"], data["label"], data["digest"], data.get("text"))


def records(root: str | None = None) -> tuple[list[Approval], list[str]]:
    """Stored approvals (of one root, or all), oldest first, and warnings for corrupt ones."""
    directory = store_dir()
    problem = _store_problem(directory)
    if problem is not None:
        return [], [problem]
    if not os.path.isdir(directory):
        return [], []
    real = os.path.realpath(root) if root is not None else None
    pattern = f"{_root_key(real)}-*.json" if real is not None else "*.json"
    found: list[Approval] = []
    warnings: list[str] = []
    for path in _matching(directory, pattern):
        try:
            record = _load_record(path)
        except _CorruptError as error:
            warnings.append(f"ignoring corrupt trust record {path}: {error}")
            continue
        if real is None or record.root == real:
            found.append(record)
    found.sort(key=lambda r: r.approved)
    return found, warnings


def lookup(found: Scan) -> tuple[Approval | None, list[str]]:
    """The approval of exactly `found` (its root and fingerprint), without the texts of its
    copies (`records` has them, for a diff), and warnings for a record that is not one."""
    directory = store_dir()
    problem = _store_problem(directory)
    if problem is not None:
        return None, [problem]
    real = os.path.realpath(found.root)
    digests = memo.of(found.root)
    path = os.path.join(directory, _record_name(real, found.fingerprint, digests))
    if not os.path.lexists(path):
        return None, []
    try:
        record = _load_record(path, digests)
    except _CorruptError as error:
        return None, [f"ignoring corrupt trust record {path}: {error}"]
    if record.root != real or record.fingerprint != found.fingerprint:
        return None, [f"ignoring trust record {path}: it is for another project or other files"]
    return record, []


def approve(found: Scan, *, taskfile: bool = True) -> Approval:
    """Record an approval of exactly these bytes at this root, and of its Taskfile as it is
    unless `taskfile` is false (a Taskfile that cannot be pinned is never approved)."""
    if found.unsafe:
        raise UntrustedError(unsafe_message(found))
    copies: list[dict[str, Any]] = []
    left = COPIES_LIMIT
    pinned = found.taskfile if taskfile else None
    if pinned is not None and pinned.what != FILE:
        pinned = None
    for entry in (*found.entries, *([pinned] if pinned is not None else [])):
        text = None
        if entry.what == FILE:
            data = current_bytes(entry)
            if len(data) <= min(COPY_LIMIT, left):
                try:
                    text = data.decode("utf-8")
                    left -= len(data)
                except UnicodeDecodeError:
                    text = None
        copies.append(
            {"kind": entry.what, "label": entry.label, "digest": entry.digest, "text": text}
        )
    kept_taskfile = copies.pop() if pinned is not None else None
    real = os.path.realpath(found.root)
    approved = datetime.now().astimezone().isoformat(timespec="seconds")
    body = {
        "version": RECORD_VERSION,
        "root": real,
        "fingerprint": found.fingerprint,
        "approved": approved,
        "entries": copies,
        "taskfile": kept_taskfile,
    }
    directory = store_dir()
    path = os.path.join(directory, _record_name(real, found.fingerprint))
    try:
        if not paths.private_directory(directory):
            raise StartError(f"{directory} is not a directory owned by you; remove it")
        import json  # only when approving

        atomic.replace(path, json.dumps(body, indent=1).encode("utf-8") + b"\n", mode=0o600)
    except OSError as error:
        raise StartError(f"cannot record the approval in {directory}: {error.strerror}") from error
    kept = tuple(_copy(c) for c in copies)
    approved_taskfile = _copy(kept_taskfile) if kept_taskfile is not None else None
    return Approval(path, real, found.fingerprint, approved, kept, approved_taskfile)


def revoke(root: str) -> int:
    """Remove every approval of this project root; the number removed."""
    directory = store_dir()
    if _store_problem(directory) is not None or not os.path.isdir(directory):
        return 0
    removed = 0
    for path in _matching(directory, f"{_root_key(os.path.realpath(root))}-*.json"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        removed += 1
    return removed
