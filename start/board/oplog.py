"""The board's operations across machines (docs/board-sync-design.md): the record one machine
writes for each change, its one byte form, the hybrid logical clock that orders them, and the
union of a remote's operations with ours.

Operations arrive from other people's machines through a git remote, so everything here reads
them as untrusted: `decode` takes bytes and returns an `Op` or raises OperationError naming the
operation and the fix, whatever the bytes (never another exception). start.board.replay makes
the board of a set of them. Nothing here prints, touches git or imports sqlite3.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from start.base.errors import StartError
from start.base.inputs import (
    DIGITS,
    LABELS,
    PRIORITIES,
    TEXT_LIMIT,
    TITLE_LIMIT,
    InputError,
    label,
    metadata,
    quoted,
)
from start.base.record import Record
from start.config.schema import LEVELS

VERSION: Final = 1
# An origin: ORIGIN_LENGTH characters of Crockford's base32 (no i, l, o, u, which read as
# digits), 60 random bits: two machines' origins are one only by a 2^-60 chance.
ALPHABET: Final = "0123456789abcdefghjkmnpqrstvwxyz"
ORIGIN_LENGTH: Final = 12
# The most bytes an encoded operation takes: a description, an answer and a run's prompt of
# TEXT_LIMIT characters each fit, a remote's operation of a gigabyte does not.
MOST_OP_BYTES: Final = 8 << 20
MOST_RUN_BYTES: Final = 2 << 20
# The most dependencies an operation names: far more than any plan, few enough to replay fast.
MOST_DEPENDENCIES: Final = 1000
# How deep an operation's JSON nests: metadata's own limit (100) below its fields' two levels.
DEPTH: Final = 103
# The longest name an operation's author or a reassign's `to` has: a person's (64) or one that
# start gives a session or a run (mcp:CLIENT:PID, run:TOKEN).
AUTHOR_LENGTH: Final = 80
AUTHOR_CHARACTERS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@+-:"
)
# A clock's wall time in milliseconds stays below 2^47 (the year 6429), its count below 2^31:
# both fit any integer a store or a JSON reader holds exactly.
MOST_WALL: Final = (1 << 47) - 1
MOST_COUNT: Final = (1 << 31) - 1
# A clock seen in an arriving operation more than this far ahead of this machine's time is not
# taken on (observe): a broken or hostile clock does not carry every later operation with it.
DRIFT_MS: Final = 24 * 3600 * 1000

CREATE: Final = "create"
UPDATE: Final = "update"
CLAIM: Final = "claim"
REASSIGN: Final = "reassign"
RELEASE: Final = "release"
FINISH: Final = "finish"
REOPEN: Final = "reopen"
ARCHIVE: Final = "archive"
UNARCHIVE: Final = "unarchive"
# A comment: appended to the item, never changed or lost, whatever state the item is in.
COMMENT: Final = "comment"
# The kinds that change an item's status, holder or archive: one of them wins each epoch.
TRANSITIONS: Final = (CLAIM, REASSIGN, RELEASE, FINISH, REOPEN, ARCHIVE, UNARCHIVE)
KINDS: Final = (CREATE, UPDATE, COMMENT, *TRANSITIONS)
# The fields each kind takes, and those it must have.
FIELDS: Final[Mapping[str, frozenset[str]]] = {
    CREATE: frozenset(
        {"title", "description", "run", "priority", "labels", "parent", "blocked_by", "metadata"}
    ),
    UPDATE: frozenset(
        {"title", "description", "run", "priority", "labels", "parent", "blocked_by", "metadata"}
    ),
    COMMENT: frozenset({"text"}),
    CLAIM: frozenset(),
    REASSIGN: frozenset({"to"}),
    RELEASE: frozenset({"reason", "counted"}),
    FINISH: frozenset({"status", "answer", "reason", "answer_level"}),
    REOPEN: frozenset(),
    ARCHIVE: frozenset(),
    UNARCHIVE: frozenset(),
}
REQUIRED: Final[Mapping[str, frozenset[str]]] = {
    CREATE: frozenset({"title"}),
    COMMENT: frozenset({"text"}),
    REASSIGN: frozenset({"to"}),
    FINISH: frozenset({"status"}),
}
_KEYS: Final = frozenset(
    {"v", "origin", "seq", "clock", "author", "level", "kind", "item", "epoch", "fields"}
)


class OperationError(StartError):
    """An operation that is not one: bytes of another shape, a value outside its limits, a
    forged name. Its message names the operation (where it was read) and what is wrong."""


class Clock(Record):
    """A hybrid logical clock: milliseconds of wall time, and a count among operations of one
    millisecond (docs/board-sync-design.md, "The hybrid logical clock")."""

    wall: int
    logical: int = 0  # orders operations of one millisecond


class Op(Record):
    """One operation of the log, as written by its origin."""

    origin: str
    seq: int  # its number among its origin's operations, from 1
    clock: Clock
    author: str
    level: str  # the author's level, as its origin wrote it (start.board.replay caps it)
    kind: str
    item: str  # the item's key, ORIGIN.N
    epoch: int  # the item's epoch its author saw
    fields: Mapping[str, Any]

    @property
    def name(self) -> str:
        """Its name in the log, ORIGIN/SEQ: no two machines write the same one."""
        return f"{self.origin}/{self.seq}"

    @property
    def order(self) -> tuple[int, int, str, int]:
        """Its place in the order every machine gives operations: clock, then origin, then seq."""
        return (self.clock.wall, self.clock.logical, self.origin, self.seq)


# --- origins and keys -----------------------------------------------------------------------


def new_origin() -> str:
    """A new origin: random, so that no two machines make the same one."""
    import secrets  # here alone: hashlib and random cost every board command 5 ms

    return "".join(secrets.choice(ALPHABET) for _ in range(ORIGIN_LENGTH))


# The alphabet as a set, made once: a log's listing asks of every path.
_ALPHABET_SET: Final = frozenset(ALPHABET)


def is_origin(text: object) -> bool:
    return isinstance(text, str) and len(text) == ORIGIN_LENGTH and _ALPHABET_SET.issuperset(text)


def key(origin: str, number: int) -> str:
    """The key of the `number`-th item `origin` made: the same on every machine."""
    return f"{origin}.{number}"


def split_key(text: object) -> tuple[str, int] | None:
    """The origin and number of an item's key; None when `text` is no key."""
    if not isinstance(text, str):
        return None
    origin, dot, digits = text.partition(".")
    if not dot or not is_origin(origin) or not _number(digits):
        return None
    return origin, int(digits)


def _number(digits: str) -> bool:
    return 0 < len(digits) <= DIGITS and digits.isascii() and digits.isdigit() and digits[0] != "0"


# --- the hybrid logical clock ---------------------------------------------------------------


def tick(last: Clock, now_ms: int) -> Clock:
    """The clock of a new local operation, after `last` (the latest this machine wrote or
    observed), at wall time `now_ms`: never before `last`, whatever the wall clock did."""
    if now_ms > last.wall:
        return Clock(min(now_ms, MOST_WALL), 0)
    if last.logical >= MOST_COUNT:  # a full millisecond: take the next one
        return Clock(min(last.wall + 1, MOST_WALL), 0)
    return Clock(last.wall, last.logical + 1)


def observe(last: Clock, seen: Clock, now_ms: int) -> Clock:
    """This machine's clock after it saw `seen` in an arriving operation: at least `seen`, so
    that its next operation is ordered after it; unchanged when `seen` is more than DRIFT_MS
    ahead of `now_ms` (that operation is replayed all the same)."""
    if seen.wall > now_ms + DRIFT_MS:
        return last
    return max(last, seen)


# --- the byte form --------------------------------------------------------------------------


def data(op: Op) -> dict[str, Any]:
    """An operation as JSON data."""
    return {
        "v": VERSION,
        "origin": op.origin,
        "seq": op.seq,
        "clock": [op.clock.wall, op.clock.logical],
        "author": op.author,
        "level": op.level,
        "kind": op.kind,
        "item": op.item,
        "epoch": op.epoch,
        "fields": dict(op.fields),
    }


def encode(op: Op) -> bytes:
    """The one byte form of an operation: JSON, keys sorted, compact, UTF-8. It is checked as
    `decode` checks what arrives, so that nothing this machine writes is refused elsewhere."""
    try:
        encoded = _dumps(data(op))
    except (ValueError, UnicodeEncodeError):  # a lone surrogate (bytes not UTF-8), NaN
        raise OperationError(
            f"operation {op.name}: its text holds bytes that are not UTF-8 (or a number not "
            "finite), which the log across machines cannot carry; write it as UTF-8 text"
        ) from None
    decode(encoded, op.name)
    return encoded


def _dumps(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)  # fmt: skip
    return text.encode("utf-8")


def decode(raw: bytes, where: str) -> Op:
    """The operation of `raw`, read at `where` (its path in the log, or its name); OperationError
    for bytes that are not exactly the byte form of a valid operation."""
    from start.base import jsontext

    if len(raw) > MOST_OP_BYTES:
        raise OperationError(
            f"operation {where}: {len(raw):,} bytes, over the limit of {MOST_OP_BYTES:,}; it is "
            "not read"
        )
    try:
        found = jsontext.loads(raw.decode("utf-8"), DEPTH)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError, JSONDecodeError, too deep
        raise OperationError(
            f"operation {where}: not JSON in UTF-8 ({type(error).__name__}); it is not read"
        ) from None
    op = _checked(found, where)
    try:
        canonical = _dumps(data(op))
    except (ValueError, UnicodeEncodeError):  # caught by the checks; kept as a second wall
        canonical = b""
    if canonical != raw:
        raise OperationError(
            f"operation {where}: not in the one byte form start writes (keys sorted, compact, "
            "UTF-8, each number as start writes it); it is not read"
        )
    return op


def _checked(found: Any, where: str) -> Op:
    """`found` as an operation, every value held to its rule."""
    if not isinstance(found, dict):
        raise OperationError(f"operation {where}: not a JSON object; it is not read")
    if found.get("v") != VERSION:
        raise OperationError(
            f"operation {where}: format version {quoted(found.get('v'))}, and this start reads "
            f"version {VERSION}; it is not read (a later start reads it)"
        )
    unknown = sorted(set(found) - _KEYS)
    missing = sorted(_KEYS - set(found))
    if unknown or missing:
        said = "; ".join(
            part
            for part in (
                f"unknown {', '.join(map(quoted, unknown))}" if unknown else "",
                f"missing {', '.join(missing)}" if missing else "",
            )
            if part
        )
        raise OperationError(f"operation {where}: {said}; it is not read")

    def wrong(what: str) -> OperationError:
        return OperationError(f"operation {where}: {what}; it is not read")

    origin = found["origin"]
    if not is_origin(origin):
        raise wrong(f"origin {quoted(origin)} is not {ORIGIN_LENGTH} characters of {ALPHABET}")
    seq = found["seq"]
    if not _whole(seq, 1, 10**DIGITS - 1):
        raise wrong(f"seq {quoted(seq)} is not a whole number from 1 to {10**DIGITS - 1}")
    clock = found["clock"]
    if not (
        isinstance(clock, list)
        and len(clock) == 2
        and _whole(clock[0], 0, MOST_WALL)
        and _whole(clock[1], 0, MOST_COUNT)
    ):
        raise wrong(
            f"clock {quoted(clock)} is not [wall, count], wall 0 to {MOST_WALL} and count 0 to "
            f"{MOST_COUNT}"
        )
    author = found["author"]
    if not _name(author):
        raise wrong(
            f"author {quoted(author)} is not a name: 1 to {AUTHOR_LENGTH} letters, digits and "
            "._@+-:"
        )
    level = found["level"]
    if level not in LEVELS:
        raise wrong(f"level {quoted(level)} is none of {', '.join(LEVELS)}")
    kind = found["kind"]
    if kind not in KINDS:
        raise wrong(f"kind {quoted(kind)} is none of {', '.join(KINDS)}")
    item = found["item"]
    parts = split_key(item)
    if parts is None:
        raise wrong(f"item {quoted(item)} is not an item's key (ORIGIN.N)")
    if kind == CREATE and parts[0] != origin:
        raise wrong(
            f"it creates {quoted(item)}, an item of another origin: an origin creates only "
            f"items of its own ({origin}.N)"
        )
    epoch = found["epoch"]
    if not _whole(epoch, 0, 10**DIGITS - 1):
        raise wrong(f"epoch {quoted(epoch)} is not a whole number from 0 to {10**DIGITS - 1}")
    fields = found["fields"]
    if not isinstance(fields, dict):
        raise wrong("fields is not a JSON object")
    why = _fields_wrong(kind, fields)
    if why is not None:
        raise wrong(why)
    return Op(origin, seq, Clock(clock[0], clock[1]), author, level, kind, item, epoch, fields)


def _whole(value: object, least: int, most: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= most


def _name(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= AUTHOR_LENGTH
        and set(value) <= AUTHOR_CHARACTERS
    )


def _text(value: object, most: int, least: int = 0) -> bool:
    if not isinstance(value, str) or not least <= len(value) <= most:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 holds it
        return False
    return True


def _fields_wrong(kind: str, fields: Mapping[str, Any]) -> str | None:
    """Why `fields` are not those of an operation of `kind`; None when they are."""
    unknown = sorted(set(fields) - FIELDS[kind])
    if unknown:
        takes = ", ".join(sorted(FIELDS[kind])) or "none"
        return f"{kind} takes no field {quoted(unknown[0])} (it takes: {takes})"
    missing = sorted(REQUIRED.get(kind, frozenset()) - set(fields))
    if missing:
        return f"{kind} needs the field {missing[0]}"
    for name, value in sorted(fields.items()):
        why = _field_wrong(kind, name, value)
        if why is not None:
            return f"fields.{name}: {why}"
    if kind == FINISH:
        says = "answer" if fields["status"] == "completed" else "reason"
        other = "reason" if says == "answer" else "answer"
        if other in fields:
            return f"a finish {fields['status']} takes {says}, not {other}"
    return None


def _field_wrong(kind: str, name: str, value: Any) -> str | None:
    if name == "title":
        if not _text(value, TITLE_LIMIT, 1):
            return f"not text of 1 to {TITLE_LIMIT:,} characters"
    elif name == "text":
        if not _text(value, TEXT_LIMIT, 1):
            return f"not text of 1 to {TEXT_LIMIT:,} characters"
    elif name in ("description", "answer", "reason"):
        if not _text(value, TEXT_LIMIT):
            return f"not text of at most {TEXT_LIMIT:,} characters"
    elif name == "run":
        if value is not None and not isinstance(value, dict):
            return "not a JSON object (an ask) or null"
        if value is not None:
            try:
                size = len(_dumps(value))
            except (ValueError, UnicodeEncodeError):  # a lone surrogate, or NaN
                return "not JSON start can write (a lone surrogate, or a number not finite)"
            if size > MOST_RUN_BYTES:
                return f"over {MOST_RUN_BYTES:,} bytes as JSON"
    elif name == "priority":
        if not _whole(value, *PRIORITIES):
            return f"not a whole number from {PRIORITIES[0]} to {PRIORITIES[1]}"
    elif name == "parent":
        if value is not None and split_key(value) is None:
            return f"{quoted(value)} is not an item's key (ORIGIN.N) or null"
    elif name == "labels":
        return _set_wrong(kind, value, LABELS, _label)
    elif name == "blocked_by":
        return _set_wrong(kind, value, MOST_DEPENDENCIES, _dependency)
    elif name == "metadata":
        return _metadata_wrong(value)
    elif name == "to":
        if not _name(value):
            return f"{quoted(value)} is not a name to act under"
    elif name == "counted":
        if not isinstance(value, bool):
            return "not true or false"
    elif name == "status":
        if value not in ("completed", "failed"):
            return f"{quoted(value)} is neither completed nor failed"
    elif name == "answer_level" and value not in LEVELS:
        return f"{quoted(value)} is none of {', '.join(LEVELS)}"
    return None


def _label(value: object) -> str | None:
    try:
        label(value)
    except InputError as error:
        return str(error)
    return None


def _dependency(value: object) -> str | None:
    if split_key(value) is None:
        return f"{quoted(value)} is not an item's key (ORIGIN.N)"
    return None


def _set_wrong(kind: str, value: Any, most: int, each: Any) -> str | None:
    """Why `value` is not a set's field: a list on a create; `{"add": [...], "remove": [...]}`
    on an update, neither list naming an element the other does."""
    if kind == CREATE:
        lists = {"": value}
    elif isinstance(value, dict) and value and set(value) <= {"add", "remove"}:
        lists = {f"{part}: ": value[part] for part in ("add", "remove") if part in value}
    else:
        return 'not {"add": [...], "remove": [...]}'
    seen: set[str] = set()
    for part, found in lists.items():
        if not isinstance(found, list) or len(found) > most:
            return f"{part}not a list of at most {most}"
        for element in found:
            why: str | None = each(element)
            if why is not None:
                return f"{part}{why}"
        if found != sorted(set(found)):  # a set has one form: sorted, each once
            return f"{part}not sorted without repeats"
        if seen & set(found):
            return "adds and removes one element"
        seen |= set(found)
    return None


def _metadata_wrong(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "not a JSON object"
    try:
        metadata(value)
    except InputError as error:
        return str(error)
    return None


# --- the union of two logs ------------------------------------------------------------------


class Refused(Record):
    """An arriving operation that the union did not take, and why."""

    name: str
    why: str


def union(
    known: Mapping[str, bytes],
    arriving: Iterable[tuple[str, bytes]],
    ours: str,
    now_ms: int | None = None,
) -> tuple[dict[str, Op], list[Refused]]:
    """The operations of `arriving` (each as its name and bytes) that `known` (this machine's
    log, by name) does not hold, decoded, and those refused, each with why: bytes that do not
    decode, a name that is not the operation's own, a name known with other bytes (a name is
    never rewritten), one of this machine's origin `ours` that this machine did not write (a
    forged origin), and (given `now_ms`, this machine's time) one whose clock is more than
    DRIFT_MS ahead of it: held back, it is read again by each sync and taken once this
    machine's time is within DRIFT_MS of it, so that a broken or hostile clock never orders
    one change after every change made here. Nothing known is ever dropped."""
    new: dict[str, Op] = {}
    taken: dict[str, bytes] = {}
    refused: list[Refused] = []
    for name, raw in arriving:
        why = None
        if name in known or name in taken:
            if (known[name] if name in known else taken[name]) != raw:
                why = (
                    f"operation {name}: another operation of that name is read already, and a "
                    "name is never rewritten; this one is not read (a rewritten log)"
                )
        else:
            taken[name] = raw
            try:
                op = decode(raw, name)
            except OperationError as error:
                why = str(error)
            else:
                if op.name != name:
                    why = (
                        f"operation {name}: it says it is {op.name}; an operation is read only "
                        "under its own name"
                    )
                elif op.origin == ours:
                    why = (
                        f"operation {name}: it names this machine's origin ({ours}), and this "
                        "machine did not write it: a forged origin; it is not read"
                    )
                elif now_ms is not None and op.clock.wall > now_ms + DRIFT_MS:
                    why = ahead(op, now_ms)
                else:
                    new[name] = op
        if why is not None:
            refused.append(Refused(name, why))
    return new, refused


def ahead(op: Op, now_ms: int) -> str:
    """Why operation `op`, whose clock is more than DRIFT_MS ahead of `now_ms`, is held back."""
    from datetime import UTC, datetime

    def when(ms: int) -> str:
        try:
            return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")
        except (ValueError, OverflowError, OSError):  # beyond what a datetime holds
            return f"{ms:,} ms"

    hours = DRIFT_MS // 3_600_000
    return (
        f"operation {op.name}: its clock says {when(op.clock.wall)}, more than {hours} hours "
        f"ahead of this machine's {when(now_ms)}; it is held back, and taken by a sync once "
        "this machine's clock is within that of it (if the clock of the machine that wrote it "
        "is wrong, set it right there)"
    )


def parsed(raw: bytes) -> Op:
    """An operation this machine checked (`decode`) when it took it, as the board's own store
    keeps its bytes: parsed again without the checks, so that making the board again from
    10,000s of operations checks none of them twice."""
    found = json.loads(raw)
    wall, count = found["clock"]
    return Op(
        found["origin"], found["seq"], Clock(wall, count), found["author"], found["level"],
        found["kind"], found["item"], found["epoch"], found["fields"],
    )  # fmt: skip
