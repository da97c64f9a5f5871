"""A board in and out as files (docs/board.md, "Export and import"): start's own JSON Lines
export, and the records an import or `add --file` makes from a file, checked line by line, with
references between its lines resolved and refused when they loop. start.board.foreign reads
beads' and Backlog.md's files into the same records; the store writes them in one transaction
(start.board.store.Board.bring). Nothing here prints, and nothing here writes the board.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Protocol

from start.base import inputs, jsontext
from start.base.errors import ExitCode, StartError
from start.base.record import Record
from start.board import COMPLETED, FAILED, IN_PROGRESS, PENDING, STATUSES, Item, item_data
from start.config.schema import LEVELS

# What the first line of an export names, and the version of its format: a later start reads
# every version up to its own, and refuses a newer one by name.
FORMAT: Final = "start.board"
VERSION: Final = 1
# The most bytes one line of a file may take: an item's title, description, answer and reason
# at their limits (TEXT_LIMIT characters, each up to 6 bytes as a JSON escape), with room for
# its comments and history. A longer line is refused before it is parsed.
LINE_LIMIT: Final = 64 << 20
# How deep a line's JSON may nest: an item's object, its metadata below (METADATA_DEPTH), and
# the events' details beside it.
DEPTH: Final = inputs.METADATA_DEPTH + 3
# The most items one file brings: ten times the board the benchmarks measure.
MOST_ITEMS: Final = 100_000
# The longest id of another tracker kept (metadata.imported_from, the summary's old -> new).
KEY_LENGTH: Final = 200
NAME_LENGTH: Final = 200
# The key of an imported item's metadata that names where it came from: {"format", "id"}.
IMPORTED_FROM: Final = "imported_from"
# The source of the records of `add --file`: made, not imported (their history says "create").
PLAN: Final = "plan"


class Lines(Protocol):
    """What a file is read through: a line at a time, at most `size` bytes of it."""

    def readline(self, size: int = -1, /) -> bytes: ...


class ImportFileError(StartError):
    """A file to import (or `add --file`) that cannot be read as it says: its message names the
    file, the line, the key and the fix. Nothing of the file is on the board then."""

    exit_code = ExitCode.USAGE


class Ref(Record):
    """A reference of one line to an item: another line of the file (`new`: its index among the
    records) or an item already on the board (its number)."""

    new: bool
    number: int


class Incoming(Record):
    """One item a file brings, checked: what the store writes for it."""

    key: str  # its id in the file (start's, beads', Backlog.md's; a plan's key), or ""
    where: str  # FILE:LINE, for the messages of the store's checks
    title: str
    description: str = ""
    status: str = PENDING
    assignee: str | None = None  # who finished it (a finished item's only)
    blocked_by: tuple[Ref, ...] = ()
    parent: Ref | None = None
    labels: tuple[str, ...] = ()
    priority: int = inputs.DEFAULT_PRIORITY
    metadata: Mapping[str, Any] = {}
    # What it runs: as the file says it (a mapping: agent, prompt | task, model, permissions),
    # then the ask the command line made of it and checked as `add` checks a run (an Ask).
    run: Any = None
    answer: str | None = None
    reason: str | None = None
    created: str | None = None  # None: now
    updated: str | None = None
    archived: str | None = None
    created_by: str | None = None  # None: who imports it
    level: str | None = None  # the level the file says shaped it (never above the importer's)
    level_by: str | None = None
    answer_level: str | None = None
    epoch: int = 0
    releases: int = 0
    comments: tuple[tuple[str, str, str], ...] = ()  # (at, author, text), oldest first
    events: tuple[tuple[str, str, str, Mapping[str, Any]], ...] = ()  # (at, actor, op, detail)


# --- export -----------------------------------------------------------------------------------


def header() -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION}


def exported(item: Item, comments: Iterable[Any], events: Iterable[Any]) -> dict[str, Any]:
    """An item as a line of an export: every field a person set or the board keeps, its
    comments and its history; text as it is kept (a lone surrogate escaped, read back the same)."""
    data = item_data(item)
    kept = {name: getattr(item, name) for name in ("title", "description", "answer", "reason")}
    for derived in ("blocked", "children", "children_done"):
        del data[derived]
    return (
        data
        | kept
        | {
            "comments": [{"at": c.at, "author": c.author, "text": c.text} for c in comments],
            "events": [
                {
                    "at": e.at,
                    "actor": e.actor,
                    "op": e.op,
                    "detail": inputs.readable(dict(e.detail)),
                }
                for e in events
            ],
        }
    )


def line(value: Mapping[str, Any]) -> str:
    """One line of JSON Lines: keys sorted, compact, ASCII (every other character escaped, a
    lone surrogate too, so that Python reads back the very text)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"


# --- reading lines ----------------------------------------------------------------------------


def lines(stream: Lines, name: str) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of `stream` as parsed JSON, with its number: one line at a time,
    never longer than LINE_LIMIT, nested at most DEPTH deep, UTF-8. ImportFileError names the
    line and what is wrong."""
    number = 0
    while True:
        raw = stream.readline(LINE_LIMIT + 1)
        if not raw:
            return
        number += 1
        if len(raw) > LINE_LIMIT:
            raise ImportFileError(
                f"{name}:{number}: the line is longer than {LINE_LIMIT >> 20} MiB, the most a "
                "line may take; split the item's text (its description holds at most "
                f"{inputs.TEXT_LIMIT:,} characters)"
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ImportFileError(
                f"{name}:{number}: byte {error.start + 1} is not UTF-8; save the file as UTF-8"
            ) from None
        if not text.strip():
            continue
        try:
            yield number, jsontext.loads(text, DEPTH)
        except jsontext.TooDeepError:
            raise ImportFileError(
                f"{name}:{number}: the JSON nests deeper than {DEPTH} levels of arrays and "
                f"objects; start reads at most {DEPTH}"
            ) from None
        except ValueError as error:
            raise ImportFileError(
                f"{name}:{number}: not JSON ({getattr(error, 'msg', error)} at column "
                f"{getattr(error, 'colno', '?')}); each line is one JSON object"
            ) from None


class Fields:
    """The keys of one line, read with their rules; each refusal names FILE:LINE and the key."""

    def __init__(self, found: Any, where: str) -> None:
        if not isinstance(found, dict):
            raise ImportFileError(f"{where}: the line is not a JSON object; each line is one item")
        self.found: dict[str, Any] = found
        self.where = where

    def bad(self, key: str, what: str) -> ImportFileError:
        return ImportFileError(f"{self.where}: {key}: {what}")

    def string(self, key: str, most: int = NAME_LENGTH, *, empty: bool = True) -> str | None:
        value = self.found.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.bad(key, f"{_kind(value)}, where text belongs; give a string")
        if not empty and not value.strip():
            raise self.bad(key, "empty; give some text")
        if len(value) > most:
            raise self.bad(key, inputs.not_in_length(value, 0, most) + "; shorten it")
        return value

    def title(self, key: str = "title") -> str:
        value = self.string(key, inputs.TITLE_LIMIT, empty=False)
        if value is None:
            raise self.bad(key, "missing; every item needs a title")
        return value

    def text(self, key: str) -> str | None:
        return self.string(key, inputs.TEXT_LIMIT)

    def strings(self, key: str, most: int = NAME_LENGTH) -> list[str]:
        value = self.found.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.bad(key, f"{_kind(value)}, where a list belongs; give a list of strings")
        for each in value:
            if not isinstance(each, str) or not each or len(each) > most:
                raise self.bad(key, f"holds {_kind(each)}; give strings of 1 to {most} characters")
        return value

    def labels(self, key: str = "labels") -> tuple[str, ...]:
        found = self.strings(key, inputs.LABEL_LENGTH)
        try:
            named = tuple(dict.fromkeys(inputs.label(each) for each in found))
        except inputs.InputError as error:
            raise self.bad(key, str(error)) from None
        if len(named) > inputs.LABELS:
            raise self.bad(key, f"{len(named)} labels, over the limit of {inputs.LABELS}")
        return named

    def priority(self, key: str = "priority") -> int:
        value = self.found.get(key)
        if value is None:
            return inputs.DEFAULT_PRIORITY
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 4:
            raise self.bad(key, f"{inputs.quoted(value)}; give a whole number from 0 to 4")
        return value

    def count(self, key: str) -> int:
        value = self.found.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= inputs.MOST:
            raise self.bad(key, f"{inputs.quoted(value)}; give a whole number from 0")
        return value

    def metadata(self, key: str = "metadata") -> dict[str, Any]:
        value = self.found.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.bad(key, f"{_kind(value)}, where an object belongs")
        try:
            inputs.metadata(value)
        except inputs.InputError as error:
            raise self.bad(key, str(error)) from None
        return value

    def time(self, key: str) -> str | None:
        value = self.string(key, 64)
        return None if value is None else when(value, self, key)

    def level(self, key: str) -> str | None:
        value = self.string(key, 64)
        if value is not None and value not in LEVELS:
            raise self.bad(key, f"{inputs.quoted(value)}; give one of {', '.join(LEVELS)}")
        return value


def when(value: str, fields: Fields, key: str) -> str:
    """A time as the board keeps it (ISO 8601, seconds, the UTC offset; a time without an offset
    is local): refused when it is no time."""
    try:
        found = datetime.fromisoformat(value.strip().replace(" ", "T", 1))
    except ValueError:
        raise fields.bad(key, f"{inputs.quoted(value)} is not an ISO 8601 time") from None
    return found.astimezone().isoformat(timespec="seconds")


def _kind(value: object) -> str:
    return {
        dict: "an object", list: "a list", str: "text", bool: "true or false", int: "a number",
        float: "a number", type(None): "null",
    }.get(type(value), "a value")  # fmt: skip


# --- start's own export -----------------------------------------------------------------------


def read_start(stream: Lines, name: str) -> list[tuple[Fields, dict[str, Any]]]:
    """The items of an export of start (its header first), each with what its line says."""
    found = []
    seen_header = False
    for number, value in lines(stream, name):
        fields = Fields(value, f"{name}:{number}")
        if not seen_header:
            if fields.found.get("format") != FORMAT:
                raise ImportFileError(
                    f"{name}:{number}: not an export of start: its first line names no "
                    f'"format": "{FORMAT}" (give --from beads or --from backlog for theirs)'
                )
            version = fields.found.get("version")
            if not isinstance(version, int) or isinstance(version, bool) or version < 1:
                raise fields.bad("version", "give the version of the format, a whole number")
            if version > VERSION:
                raise fields.bad(
                    "version",
                    f"{version} is newer than this start reads ({VERSION}); upgrade start",
                )
            seen_header = True
            continue
        found.append((fields, _started(fields)))
    return found


def _started(fields: Fields) -> dict[str, Any]:
    """An item of start's export as the fields of Incoming, but its references (still keys)."""
    key = fields.string("id", KEY_LENGTH, empty=False)
    if key is None:
        raise fields.bad("id", "missing; each item of an export has its id")
    status = fields.string("status", 32) or PENDING
    if status not in STATUSES:
        raise fields.bad(
            "status", f"{inputs.quoted(status)} is no status; give one of {', '.join(STATUSES)}"
        )
    finished = status in (COMPLETED, FAILED)
    run = fields.found.get("run")
    if run is not None and not isinstance(run, dict):
        raise fields.bad("run", f"{_kind(run)}, where an object (what it runs) belongs")
    comments = _listed(fields, "comments", ("at", "author", "text"))
    events = _listed(fields, "events", ("at", "actor", "op", "detail"))
    return {
        "key": key,
        "title": fields.title(),
        "description": fields.text("description") or "",
        # An item in progress comes in pending: no process here holds it.
        "status": PENDING if status == IN_PROGRESS else status,
        "assignee": fields.string("assignee") if finished else None,
        "labels": fields.labels(),
        "priority": fields.priority(),
        "metadata": fields.metadata(),
        "run": run,
        "answer": fields.text("answer") if status == COMPLETED else None,
        "reason": fields.text("reason"),
        "created": fields.time("created"),
        "updated": fields.time("updated"),
        "archived": fields.time("archived"),
        "created_by": fields.string("created_by"),
        "level": fields.level("level"),
        "level_by": fields.string("level_by"),
        "answer_level": fields.level("answer_level") if status == COMPLETED else None,
        "epoch": fields.count("epoch"),
        "releases": fields.count("releases"),
        "comments": tuple(
            (when(c["at"], fields, "comments"), c["author"], _comment(fields, c["text"]))
            for c in comments
        ),
        "events": tuple(_event(fields, e) for e in events),
        "blocked_by": fields.strings("blocked_by", KEY_LENGTH),
        "parent": fields.string("parent", KEY_LENGTH),
    }


def _listed(fields: Fields, key: str, names: tuple[str, ...]) -> list[dict[str, Any]]:
    value = fields.found.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(each, dict) for each in value):
        raise fields.bad(key, "give a list of objects")
    for each in value:
        for name in names:
            kind = dict if name == "detail" else str
            if not isinstance(each.get(name), kind):
                raise fields.bad(key, f"an entry's {name} is {_kind(each.get(name))}")
            if kind is str and name != "text" and len(each[name]) > NAME_LENGTH:
                raise fields.bad(key, f"an entry's {name} is over {NAME_LENGTH} characters")
    return value


def _comment(fields: Fields, text: str) -> str:
    if not 1 <= len(text) <= inputs.TEXT_LIMIT:
        what = inputs.not_in_length(text, 1, inputs.TEXT_LIMIT)
        raise fields.bad("comments", f"a comment's text: {what}")
    return text


def _event(fields: Fields, found: Mapping[str, Any]) -> tuple[str, str, str, Mapping[str, Any]]:
    return (when(found["at"], fields, "events"), found["actor"], found["op"], found["detail"])


# --- a plan: add --file -----------------------------------------------------------------------

# The keys of a line of `add --file`: those of `add`, and `key`, its name for the other lines.
PLAN_KEYS: Final = (
    "key", "title", "description", "priority", "labels", "parent", "after", "metadata",
    "prompt", "task", "agent", "model", "permissions",
)  # fmt: skip


def read_plan(stream: Lines, name: str) -> list[tuple[Fields, dict[str, Any]]]:
    """The items of `add --file`: one JSON object a line with `add`'s fields."""
    import difflib

    found = []
    for number, value in lines(stream, name):
        fields = Fields(value, f"{name}:{number}")
        for key in fields.found:
            if key not in PLAN_KEYS:
                near = difflib.get_close_matches(key, PLAN_KEYS, 1)
                hint = f"did you mean '{near[0]}'? " if near else ""
                raise fields.bad(
                    inputs.quoted(key)[1:-1],
                    f"not a field of an item; {hint}the fields are {', '.join(PLAN_KEYS)}",
                )
        run = {key: fields.string(key) for key in ("agent", "model", "permissions", "task")}
        prompt = fields.text("prompt")
        found.append(
            (
                fields,
                {
                    "key": fields.string("key", KEY_LENGTH, empty=False) or "",
                    "title": fields.title(),
                    "description": fields.text("description") or "",
                    "labels": fields.labels(),
                    "priority": fields.priority(),
                    "metadata": fields.metadata(),
                    "run": (
                        {**run, "prompt": prompt}
                        if prompt is not None or any(run.values())
                        else None
                    ),
                    "blocked_by": fields.strings("after", KEY_LENGTH),
                    "parent": fields.string("parent", KEY_LENGTH),
                },
            )
        )
    return found


# --- references between lines -----------------------------------------------------------------


def resolved(found: Sequence[tuple[Fields, dict[str, Any]]], *, board_ids: bool) -> list[Incoming]:
    """The records of a file's items, each reference to another line (by its key) or, with
    `board_ids`, to an item on the board (item-N or N) resolved; refused, naming the line: a
    key given twice, a reference to nothing, an item waiting on itself or its own parent, and a
    cycle of dependencies or of parents among the lines."""
    if len(found) > MOST_ITEMS:
        raise ImportFileError(
            f"{found[MOST_ITEMS][0].where}: more than {MOST_ITEMS:,} items, the most one file "
            "brings; split the file"
        )
    index: dict[str, int] = {}
    for position, (fields, values) in enumerate(found):
        key = values["key"]
        if key and key in index:
            first = found[index[key]][0].where
            raise fields.bad(
                "key" if "key" in fields.found else "id",
                f"{inputs.quoted(key)} is also the id of {first}; give each item its own",
            )
        if key:
            index[key] = position

    def ref(fields: Fields, name: str, key: str) -> Ref:
        if key in index:
            return Ref(True, index[key])
        if board_ids:
            try:
                prefix, number = inputs.item_ref(key)
            except inputs.InputError:
                prefix, number = "", 0
            if prefix is None:  # item-N: this machine's
                return Ref(False, number)
            if prefix:
                raise fields.bad(
                    name,
                    f"{inputs.quoted(key)} is another machine's item: a file names items on the "
                    "board by item-N, this machine's, only; give it the key of a line",
                )
        also = " or the id of an item on the board" if board_ids else ""
        raise fields.bad(
            name, f"{inputs.quoted(key)} is no item of the file{also}; give the key of a line"
        )

    made = []
    for position, (fields, values) in enumerate(found):
        after_key = "after" if "after" in fields.found else "blocked_by"
        refs = tuple(dict.fromkeys(ref(fields, after_key, key) for key in values["blocked_by"]))
        if Ref(True, position) in refs:
            raise fields.bad(after_key, "the item waits on itself; remove its own key")
        parent = None if values["parent"] is None else ref(fields, "parent", values["parent"])
        if parent == Ref(True, position):
            raise fields.bad("parent", "the item is its own parent; remove it")
        made.append(
            Incoming(where=fields.where, **{**values, "blocked_by": refs, "parent": parent})
        )
    _no_cycle(made, lambda each: [r.number for r in each.blocked_by if r.new], "dependencies")
    _no_cycle(made, lambda each: [each.parent.number] if each.parent and each.parent.new else [],
              "parent")  # fmt: skip
    return made


def _no_cycle(made: Sequence[Incoming], edges: Any, what: str) -> None:
    """Refuse a cycle among the records' `edges` (indices): named by its lines, in order. The
    walk keeps its own stack: no chain is too long for it."""
    state = [0] * len(made)  # 0 unseen, 1 on the path, 2 done
    for start in range(len(made)):
        if state[start]:
            continue
        path: list[int] = []
        stack: list[tuple[int, Iterator[int]]] = [(start, iter(edges(made[start])))]
        state[start] = 1
        path.append(start)
        while stack:
            node, ahead = stack[-1]
            step = next(ahead, None)
            if step is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state[step] == 1:
                loop = [*path[path.index(step) :], step]
                shown = " -> ".join(made[each].where for each in loop)
                raise ImportFileError(
                    f"{made[loop[0]].where}: {what}: the items of {shown} make a cycle, "
                    "which would never end; remove one of these references"
                )
            elif state[step] == 0:
                state[step] = 1
                path.append(step)
                stack.append((step, iter(edges(made[step]))))
