"""Other trackers' files as the records of an import (start.board.transfer): beads' issues.jsonl
(one issue a JSON line) and Backlog.md's task folder (one Markdown file a task, its fields in a
YAML front matter). How each of their statuses, priorities and links maps to the board's is in
docs/board.md, "Import"."""

from __future__ import annotations

import json
import os
from typing import Any, Final

from start.base import inputs
from start.board import COMPLETED, FAILED, PENDING
from start.board.transfer import (
    DEPTH,
    KEY_LENGTH,
    LINE_LIMIT,
    MOST_ITEMS,
    Fields,
    ImportFileError,
    Lines,
    lines,
    when,
)

# --- telling a file by its content -------------------------------------------------------------


class Peeked:
    """A stream whose first line is read ahead (to tell its format) and read again."""

    def __init__(self, stream: Lines) -> None:
        self.stream = stream
        self.first = stream.readline(LINE_LIMIT + 1)
        self.kept: bytes | None = self.first

    def readline(self, size: int = -1, /) -> bytes:
        if self.kept is not None:
            found, self.kept = self.kept, None
            return found
        return self.stream.readline(size)


def detect(first: bytes, name: str) -> str:
    """Which format a file is, by its first line: start's export names its format; a line of
    beads' issues.jsonl is an issue with an id, a title and a status."""
    from start.base import jsontext

    try:
        found = jsontext.loads(first.decode("utf-8"), DEPTH) if len(first) <= LINE_LIMIT else None
    except ValueError:
        found = None
    if isinstance(found, dict):
        if "format" in found:
            return "start"
        if {"id", "title", "status"} <= found.keys():
            return "beads"
    raise ImportFileError(
        f"{name}:1: cannot tell what this file is: its first line is neither the header of "
        "start's export nor an issue of beads; give --from start, --from beads, or a "
        "Backlog.md folder"
    )


# --- beads -----------------------------------------------------------------------------------

# How beads' statuses come onto the board: an issue it has in progress or hooked comes pending
# (no process here holds it), a blocked one pending (its dependencies say what blocks it), a
# closed one completed, a deleted one (tombstone) failed and archived.
BEADS_STATUSES: Final = {
    "open": PENDING,
    "in_progress": PENDING,
    "blocked": PENDING,
    "deferred": PENDING,
    "pinned": PENDING,
    "hooked": PENDING,
    "closed": COMPLETED,
    "tombstone": FAILED,
}
# beads' text fields beside the description, added to it each under its heading.
BEADS_TEXTS: Final = (
    ("design", "Design"),
    ("acceptance_criteria", "Acceptance criteria"),
    ("notes", "Notes"),
)


def read_beads(stream: Lines, name: str) -> list[tuple[Fields, dict[str, Any]]]:
    """The issues of beads' issues.jsonl. A dependency of type blocks is a dependency; of type
    parent-child, the issue's parent; any other link, and any on an issue not in the file, is
    kept in the metadata (beads_links)."""
    found = []
    for number, value in lines(stream, name):
        fields = Fields(value, f"{name}:{number}")
        found.append((fields, _issue(fields)))
    known = {values["key"] for _, values in found}
    for _, values in found:
        links = values["metadata"].get("beads_links", [])
        for kept in ("blocked_by", "parent"):
            refs = values[kept] if kept == "blocked_by" else [values[kept]] * bool(values[kept])
            gone = [ref for ref in refs if ref not in known]
            links += [{"type": "blocks" if kept == "blocked_by" else "parent-child", "id": ref}
                      for ref in gone]  # fmt: skip
            if kept == "blocked_by":
                values[kept] = [ref for ref in refs if ref in known]
            elif gone:
                values[kept] = None
        if links:
            values["metadata"]["beads_links"] = links
    return found


def _issue(fields: Fields) -> dict[str, Any]:
    key = fields.string("id", KEY_LENGTH, empty=False)
    if key is None:
        raise fields.bad("id", "missing; each issue of beads has its id")
    status = fields.string("status", 32) or "open"
    if status not in BEADS_STATUSES:
        raise fields.bad(
            "status",
            f"{inputs.quoted(status)} is no status of beads start knows; the known are "
            f"{', '.join(BEADS_STATUSES)}: edit the line to one of them",
        )
    description = fields.text("description") or ""
    for text_key, heading in BEADS_TEXTS:
        extra = fields.text(text_key)
        if extra:
            description += f"\n\n## {heading}\n\n{extra}"
    if len(description) > inputs.TEXT_LIMIT:
        raise fields.bad("description", "with design, acceptance criteria and notes, over "
                         f"{inputs.TEXT_LIMIT:,} characters; shorten them")  # fmt: skip
    metadata: dict[str, Any] = {}
    issue_type = fields.string("issue_type", 64)
    if issue_type:
        metadata["issue_type"] = issue_type
    assignee = fields.string("assignee")
    if assignee and status != "closed":
        metadata["assignee"] = assignee
    blocked_by: list[str] = []
    parent = None
    links: list[dict[str, str]] = []
    deps = fields.found.get("dependencies") or []
    if not isinstance(deps, list):
        raise fields.bad("dependencies", "give a list of objects")
    for dep in deps:
        if not isinstance(dep, dict) or not isinstance(dep.get("depends_on_id"), str):
            raise fields.bad("dependencies", "each needs depends_on_id, an issue's id")
        target, kind = dep["depends_on_id"], dep.get("type", "blocks")
        if dep.get("issue_id", key) != key:
            raise fields.bad("dependencies", f"issue_id {inputs.quoted(dep['issue_id'])} is "
                             "not this issue's id; a line lists its own dependencies")  # fmt: skip
        if not target or len(target) > KEY_LENGTH or not isinstance(kind, str):
            raise fields.bad("dependencies", f"depends_on_id is 1 to {KEY_LENGTH} characters")
        if target == key:
            raise fields.bad("dependencies", "the issue depends on itself; remove that one")
        if kind == "blocks":
            blocked_by.append(target)
        elif kind == "parent-child" and parent is None:
            parent = target
        else:
            links.append({"type": kind[:64], "id": target})
    if links:
        metadata["beads_links"] = links
    comments = []
    for comment in fields.found.get("comments") or []:
        if not isinstance(comment, dict) or not isinstance(comment.get("text"), str):
            raise fields.bad("comments", "each needs its text")
        text = comment["text"]
        if not 1 <= len(text) <= inputs.TEXT_LIMIT:
            raise fields.bad("comments", inputs.not_in_length(text, 1, inputs.TEXT_LIMIT))
        author = comment.get("author")
        at = comment.get("created_at")
        comments.append(
            (
                when(at, fields, "comments") if isinstance(at, str) else _now(),
                author[:200] if isinstance(author, str) and author else "beads",
                text,
            )
        )
    closed = status == "closed"
    return {
        "key": key,
        "title": fields.title(),
        "description": description,
        "status": BEADS_STATUSES[status],
        "assignee": (assignee or None) if closed else None,
        "answer": (fields.text("close_reason") or "") if closed else None,
        "reason": "deleted in beads (tombstone)" if status == "tombstone" else None,
        "archived": _now() if status == "tombstone" else None,
        "labels": fields.labels(),
        "priority": fields.priority(),
        "metadata": _checked(fields, metadata),
        "created": fields.time("created_at"),
        "updated": fields.time("updated_at"),
        "comments": tuple(comments),
        "blocked_by": blocked_by,
        "parent": parent,
    }


def _now() -> str:
    from datetime import datetime

    return datetime.now().astimezone().isoformat(timespec="seconds")


def _checked(fields: Fields, metadata: dict[str, Any]) -> dict[str, Any]:
    try:
        inputs.metadata(metadata)
    except inputs.InputError as error:
        raise fields.bad("metadata", str(error)) from None
    return metadata


# --- Backlog.md -------------------------------------------------------------------------------

# How Backlog.md's statuses (its default ones, in any case) come onto the board: what is in
# progress comes pending (no process here holds it).
BACKLOG_STATUSES: Final = {"to do": PENDING, "in progress": PENDING, "done": COMPLETED}
# Its priorities, as the board's 0 (highest) to 4.
BACKLOG_PRIORITIES: Final = {"high": 1, "medium": 2, "low": 3}
# The most bytes a task's file may take: its body is the description (TEXT_LIMIT characters).
FILE_LIMIT: Final = 4 * inputs.TEXT_LIMIT + (64 << 10)


def read_backlog(directory: str) -> list[tuple[Fields, dict[str, Any]]]:
    """The tasks of a Backlog.md folder: `DIR/backlog/tasks`, `DIR/tasks` or `DIR` itself, each
    `*.md` a task, in the order of their ids' numbers. The body (below the front matter) is the
    description, as it is written."""
    from start.base import fs

    for tasks in (os.path.join(directory, "backlog", "tasks"), os.path.join(directory, "tasks"),
                  directory):  # fmt: skip
        if os.path.isdir(tasks):
            break
    try:
        names = sorted(name for name in os.listdir(tasks) if name.endswith(".md"))
    except OSError as error:
        raise ImportFileError(f"cannot read {tasks}: {error.strerror or error}") from None
    if len(names) > MOST_ITEMS:
        raise ImportFileError(f"{tasks}: more than {MOST_ITEMS:,} tasks; split the folder")
    found = []
    for name in names:
        path = os.path.join(tasks, name)
        if os.path.islink(path):
            raise ImportFileError(
                f"{path}: a symlink; start reads a task's own file, never what a link points "
                "to (in a cloned repository it could be a file of yours): copy the task there"
            )
        try:
            data = fs.read(path, FILE_LIMIT + 1, follow=False).data
        except fs.FileError as error:
            raise ImportFileError(str(error)) from None
        if len(data) > FILE_LIMIT:
            raise ImportFileError(f"{path}: over {FILE_LIMIT:,} bytes; shorten the task")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ImportFileError(f"{path}: byte {error.start + 1} is not UTF-8") from None
        front, body = _front_matter(text, path)
        if "id" not in front:
            continue  # a file of the folder that is no task (a README)
        fields = Fields(front, path)
        found.append((fields, _task(fields, body)))
    found.sort(key=lambda each: _order(each[1]["key"]))
    for _, values in found:  # Backlog.md's ids are one in any case (TASK-1 is task-1)
        values["key"] = values["key"].lower()
        values["blocked_by"] = [ref.lower() for ref in values["blocked_by"]]
        values["parent"] = values["parent"].lower() if values["parent"] else None
    return found


def _order(key: str) -> tuple[int, ...]:
    digits = "".join(c if c.isdigit() else " " for c in key).split()
    return tuple(int(each[:18]) for each in digits)


def _task(fields: Fields, body: str) -> dict[str, Any]:
    key = fields.string("id", KEY_LENGTH, empty=False)
    if key is None:
        raise fields.bad("id", "missing; each task has its id")
    status = (fields.string("status", 64) or "To Do").strip()
    if status.lower() not in BACKLOG_STATUSES:
        raise fields.bad(
            "status",
            f"{inputs.quoted(status)} is no status start knows of Backlog.md; the known are "
            "To Do, In Progress and Done: edit the task to one of them",
        )
    priority = (fields.string("priority", 32) or "medium").strip().lower()
    if priority not in BACKLOG_PRIORITIES:
        raise fields.bad("priority", f"{inputs.quoted(priority)}; give high, medium or low")
    metadata: dict[str, Any] = {}
    assignee = fields.found.get("assignee")
    if assignee:
        metadata["assignee"] = assignee if isinstance(assignee, list) else [str(assignee)]
    if fields.found.get("milestone"):
        metadata["milestone"] = str(fields.found["milestone"])
    if len(body) > inputs.TEXT_LIMIT:
        raise fields.bad("description", inputs.not_in_length(body, 0, inputs.TEXT_LIMIT))
    parent = fields.string("parent_task_id", KEY_LENGTH) or fields.string("parent", KEY_LENGTH)
    return {
        "key": key,
        "title": fields.title(),
        "description": body,
        "status": BACKLOG_STATUSES[status.lower()],
        "answer": "" if BACKLOG_STATUSES[status.lower()] == COMPLETED else None,
        "labels": fields.labels(),
        "priority": BACKLOG_PRIORITIES[priority],
        "metadata": _checked(fields, metadata),
        "created": fields.time("created_date"),
        "updated": fields.time("updated_date"),
        "blocked_by": fields.strings("dependencies", KEY_LENGTH),
        "parent": parent or None,
    }


def _front_matter(text: str, path: str) -> tuple[dict[str, Any], str]:
    """The front matter of a task (the YAML between its first two `---` lines) and its body.

    Backlog.md writes a small part of YAML: `key: value`, a value quoted ('...' or "..."), a
    list inline (`[a, b]`) or as `- item` lines below its key. That part is read here; anything
    else (a block scalar, a nested mapping, an anchor) is refused naming the line: nothing in
    it is evaluated."""
    rows = text.split("\n")
    if not rows or rows[0].strip() != "---":
        return {}, text
    found: dict[str, Any] = {}
    last: str | None = None
    for number, row in enumerate(rows[1:], start=2):
        row = row.rstrip("\r")
        if row.strip() == "---":
            return found, "\n".join(rows[number:]).strip("\n")
        stripped = row.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("- ") or stripped == "-":
            if last is None or not isinstance(found[last], list):
                raise ImportFileError(f"{path}:{number}: a list item without its key above")
            found[last].append(_scalar(stripped[1:].strip(), path, number))
            continue
        key, colon, value = row.partition(":")
        if not colon or row[0].isspace() or not key.replace("_", "").isalnum():
            raise ImportFileError(
                f"{path}:{number}: not a line of front matter start reads (KEY: VALUE, or a "
                "list); edit it as Backlog.md writes it"
            )
        value = value.strip()
        found[key] = [] if not value else _value(value, path, number)
        last = key
    raise ImportFileError(f"{path}: the front matter has no closing '---' line")


def _value(text: str, path: str, number: int) -> Any:
    if text.startswith("["):
        if not text.endswith("]"):
            raise ImportFileError(f"{path}:{number}: a list that does not end on its line")
        inner = text[1:-1].strip()
        return [_scalar(each.strip(), path, number) for each in _split(inner)] if inner else []
    if text[0] in "|>&*!{":
        raise ImportFileError(
            f"{path}:{number}: YAML start does not read here ({text[0]}); write the value on "
            "its line, quoted"
        )
    return _scalar(text, path, number)


def _split(text: str) -> list[str]:
    """An inline list's items, split at the commas outside quotes."""
    found, current, quote = [], "", ""
    for c in text:
        if quote:
            current += c
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote, current = c, current + c
        elif c == ",":
            found.append(current)
            current = ""
        else:
            current += c
    return [*found, current]


def _scalar(text: str, path: str, number: int) -> str:
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            found = json.loads(text)
        except ValueError:
            raise ImportFileError(f"{path}:{number}: a quoted value start cannot read") from None
        return str(found)
    return text.partition(" #")[0].strip()
