"""The board: work items that people and agents create, claim and finish (docs/board.md).

Its records, its errors, and who may act on it: a person by name, an MCP session or a run of
`start board run` by the process that holds the claim. start.board.store keeps the board in SQLite,
start.board.runner runs its ready items headless. Nothing here prints, and nothing imports sqlite3.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

from start.base.errors import ExitCode, StartError
from start.base.inputs import ITEM_PREFIX, METADATA_DEPTH, item_number, item_ref, readable
from start.base.record import Record, Text
from start.compose.ask import Ask
from start.compose.ask import data as ask_data
from start.config.schema import LEVELS

PENDING: Final = "pending"
IN_PROGRESS: Final = "in_progress"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
STATUSES: Final = (PENDING, IN_PROGRESS, COMPLETED, FAILED)
FINISHED: Final = (COMPLETED, FAILED)
# An item's id is this prefix and its number; the number alone is accepted where an id is read.
PREFIX: Final = ITEM_PREFIX
# How many times an item goes back to pending because its holder's process ended without
# finishing it; the next time, it fails with the reason.
MOST_RELEASES: Final = 3
# The placeholder of an item's text that its run gets the answers of its dependencies in.
ANSWERS: Final = "answers"


class BoardError(StartError):
    """The board cannot be read or written (its file, its directory, its format)."""


class NoSuchItemError(StartError):
    """An id names no item of the board."""

    exit_code = ExitCode.UNKNOWN_NAME


class RefusedError(StartError):
    """The board's rules refuse the change now: the item is another's, blocked, finished, or
    was reassigned since the caller's claim (fenced); or nothing is ready to claim."""

    exit_code = ExitCode.REFUSED


class BadRequestError(StartError):
    """A change that no state of the board allows: an item waiting on itself or in a cycle, a
    status set by hand that only a claim sets, a name that is not one."""

    exit_code = ExitCode.USAGE


# The level of the user's own words: a person on the command line, and `start board run`, which
# the user started.
USER_LEVEL: Final = LEVELS[-1]


class Holder(Record):
    """Who acts on the board. `name` is what the item's assignee shows; `pid` and `started`
    bind a claim to a live process (an MCP session's server, or `start board run`), so that
    the claim ends when the process does; a person's claim (no pid) lasts until released.
    `level` is the most its words may run at (docs/board.md, "Who shaped it"): the user's own
    for a person and for `start board run`; settings.mcp_permissions for an MCP session."""

    name: str
    pid: int | None = None
    started: str | None = None  # the process's start (start.board.process_start)
    level: str = USER_LEVEL

    @property
    def agent(self) -> bool:
        """An agent's session (`mcp:...`), not the user: it finishes only what it holds."""
        return self.name.startswith("mcp:")


class Item(Record):
    """One work item, as read from the board."""

    id: str
    title: Text
    description: Text
    status: str
    assignee: str | None  # who holds it (in_progress) or finished it; None when pending
    blocked_by: tuple[str, ...]  # the ids it waits on: each must be completed
    blocked: tuple[str, ...]  # why it waits, one reason per dependency not completed
    metadata: Mapping[str, Any]
    created_by: str
    # What `start board run` runs for it: a prompt, or a task with the item's description as its
    # instructions (start.compose.ask); None: work to claim by hand.
    run: Ask | None
    answer: Text | None  # what it completed with
    reason: Text | None  # why it failed, or why its last holder let it go
    history: int | None  # the run in the history (start log show ID) that finished it
    epoch: int  # counts its claims and reassignments; a holder's writes carry the epoch it got
    releases: int  # times its holder's process ended without finishing it
    created: str  # ISO 8601, with the UTC offset
    updated: str
    # The most its run may get: the lowest level among who wrote its title, description, run
    # and dependencies (Holder.level), and who brought it that low.
    level: str
    level_by: str
    answer_level: str | None  # the level of whoever wrote its answer; None without one
    # When it was archived (ISO 8601): hidden from listings and claims, kept whole; None: it is not.
    archived: str | None
    # Which ready item goes first: 0 the highest, 4 the lowest (start.base.inputs.PRIORITIES);
    # among equals, the oldest.
    priority: int
    labels: tuple[str, ...]  # its labels, sorted
    parent: str | None  # the item it is part of (an epic's id); None: it is part of none
    # Its children (the items it is the parent of), an archived one only when it was completed,
    # and how many of them are completed: an epic's progress.
    children: int
    children_done: int

    @property
    def ready(self) -> bool:
        """Pending, and every dependency completed: what a claim can take."""
        return self.status == PENDING and not self.blocked

    @property
    def runs_at(self) -> str | None:
        """The highest level its run can get (None: it runs nothing): what it asks for (a task
        without `permissions` may ask for its own), never above `level`."""
        if self.run is None:
            return None
        asked = self.run.permissions
        if asked is None:
            asked = LEVELS[0] if self.run.task is None else USER_LEVEL
        return lowest(asked, self.level)


class Change(Record):
    """A partial update of an item: None leaves a field as it is."""

    status: str | None = None
    description: str | None = None
    blocked_by: tuple[str, ...] | None = None
    metadata: Mapping[str, Any] | None = None  # merged as RFC 7396 says: a null deletes a key
    answer: str | None = None  # with status completed
    reason: str | None = None  # with status failed
    history: int | None = None  # with status completed or failed, by a run
    # With status completed: the level of whoever wrote the answer, when not the one who acts
    # (a run of `start board run`: the level it ran at). None: the actor's level.
    answer_level: str | None = None
    title: str | None = None
    run: Ask | None = None  # what it runs now, whole (a person's edit merges into the old one)
    # These four never reach a run (as metadata does not): anyone may change them, under the
    # other rules, a finished item's too.
    priority: int | None = None
    add_labels: tuple[str, ...] | None = None
    remove_labels: tuple[str, ...] | None = None
    parent: str | None = None  # its parent now; NO_PARENT: none
    # Dependencies to add, and to remove, beside `blocked_by`'s whole list (`start board dep`).
    add_blocked_by: tuple[str, ...] | None = None
    remove_blocked_by: tuple[str, ...] | None = None

    @property
    def shapes(self) -> bool:
        """Whether it changes what shapes the item's run (docs/board.md, "Who shaped it"): its
        title, description, run or dependencies."""
        shaping = (self.title, self.description, self.run, self.blocked_by, self.add_blocked_by)
        return any(value is not None for value in (*shaping, self.remove_blocked_by))


# Change.parent for an item that is to be part of none.
NO_PARENT: Final = ""


# --- ids and names --------------------------------------------------------------------------


def item_id(number: int) -> str:
    return f"{PREFIX}{number}"


def number(text: str) -> int:
    """The number of an item id (`item-3`, or `3`); start.base.inputs.InputError (a usage error) for
    anything else, a number of more digits than any id has included. The number only: an id
    of another machine's item (`item-k3f9.12`) is the board's to resolve (start.board.ids)."""
    return item_number(text)


def spelled(text: str) -> str:
    """An item id as the board spells it: `3` as item-3, `item-k3f9.12` as it is;
    start.base.inputs.InputError for anything that is no id. (The board's own form of an id it
    holds is start.board.store.Board.shown's: a sync may make a prefix longer.)"""
    prefix, found = item_ref(text)
    return item_id(found) if prefix is None else f"{PREFIX}{prefix}.{found}"


# A name a person acts under: no colon, which the names start mints (mcp:..., run:...) have.
NAME_CHARACTERS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@+-"
)
NAME_LENGTH: Final = 64


def person(name: str) -> Holder:
    """A person acting by name (`--as NAME`, `reassign ID NAME`); BadRequestError for a name
    that is empty, too long, or has characters other than letters, digits and `._@+-`."""
    if not name or len(name) > NAME_LENGTH or not set(name) <= NAME_CHARACTERS:
        raise BadRequestError(
            f"'{name}' is not a name to act under: use 1 to {NAME_LENGTH} letters, digits and "
            "._@+- (names with a colon are those start gives MCP sessions and runs)"
        )
    return Holder(name)


def login() -> str:
    """The user's login name, from the system's user database (not the environment)."""
    import pwd

    try:
        found = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid{os.getuid()}"
    return found if found and set(found) <= NAME_CHARACTERS else f"uid{os.getuid()}"


def session(client: str | None, level: str) -> Holder:
    """An MCP session: `mcp:CLIENT:PID`, the client's name (as it gave it in `initialize`) and
    this server process, whose life the session's claims last; acting at `level`, the most the
    user lets agents run at (settings.mcp_permissions)."""
    kept = "".join(c for c in (client or "").lower() if c in NAME_CHARACTERS and c != "@")
    pid = os.getpid()
    return Holder(f"mcp:{kept[:32] or 'client'}:{pid}", pid, process_start(pid), level)


def run_holder(token: str) -> Holder:
    """A run of `start board run`: `run:TOKEN`, held by this process, which owns the run's
    process group."""
    pid = os.getpid()
    return Holder(f"run:{token}", pid, process_start(pid))


# --- processes ------------------------------------------------------------------------------


def process_start(pid: int) -> str | None:
    """When process `pid` started, as text that a later process of the same pid cannot have:
    the boot's id and the start time in clock ticks, from /proc (elsewhere, `ps`). None when no
    such process runs, a zombie included."""
    if not os.path.isdir("/proc/self"):
        return _ps_start(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        with open("/proc/sys/kernel/random/boot_id", "rb") as boot:
            booted = boot.read().strip().decode("ascii", "replace")
    except OSError:
        return None
    # After the command's closing parenthesis: field 3 (the state) onwards; 22 is the start.
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return f"{booted}:{fields[19].decode('ascii', 'replace')}"


def _ps_start(pid: int) -> str | None:
    """process_start where there is no /proc (macOS): the state and start time `ps` shows."""
    import subprocess

    try:
        found = subprocess.run(
            ["ps", "-o", "stat=,lstart=", "-p", str(pid)],
            capture_output=True,
            text=True,
            env={**os.environ, "LC_ALL": "C"},
            check=False,
        )
    except OSError:
        return None
    state, _, started = found.stdout.strip().partition(" ")
    if found.returncode != 0 or not started or state.startswith("Z"):
        return None
    return "ps:" + " ".join(started.split())


def alive(holder: Holder) -> bool:
    """Whether a claim of `holder` still has its process (a person's claim always has)."""
    return holder.pid is None or process_start(holder.pid) == holder.started


# --- who shaped it -------------------------------------------------------------------------


def lowest(*levels: str) -> str:
    """The lowest of permission levels (schema.LEVELS)."""
    return min(levels, key=LEVELS.index)


def above(level: str, other: str) -> bool:
    """Whether `level` is higher than `other`."""
    return LEVELS.index(level) > LEVELS.index(other)


class Cap(Record):
    """The most a run of an item may get, and why, when that is below the user's own level."""

    level: str
    why: str


def cap(item: Item, fed: Sequence[Item]) -> Cap | None:
    """What bounds the run of `item`, whose text is fed the answers (and titles) of `fed`: the
    lowest level among who wrote its own fields and who wrote theirs, the first named when
    several are as low. None: nothing below the user's level shaped it."""
    found = [Cap(item.level, f"{item.id} was written by {item.level_by} at '{item.level}'")]
    for other in fed:
        answered = other.answer_level or LEVELS[0]
        found += [
            Cap(other.level, f"{other.id}, fed to it, was written by {other.level_by} at "
                f"'{other.level}'"),
            Cap(answered, f"{other.id}'s answer, fed to it, was written by {other.assignee} at "
                f"'{answered}'"),
        ]  # fmt: skip
    least = min(found, key=lambda each: LEVELS.index(each.level))
    return least if above(USER_LEVEL, least.level) else None


def shaping(item: Item, by: Holder, what: str) -> str | None:
    """Why `by` may not `what` (change, claim, finish) `item`: it runs above the level of `by`
    (docs/board.md, "Who shaped it"); None when it may."""
    runs_at = item.runs_at
    if runs_at is None or not above(runs_at, by.level):
        return None
    return (
        f"{item.id} runs at up to '{runs_at}', and {by.name} acts at '{by.level}' "
        f"(settings.mcp_permissions): it may not {what} an item that runs above its level. "
        "Make an item of your own, or ask the user"
    )


# --- why an item waits ----------------------------------------------------------------------


def waiting(dependency: str, status: str | None, archived: bool = False) -> str | None:
    """Why an item waits on `dependency`, whose status is `status` (None: there is no such
    item) and which may be archived; None when it does not wait (completed, archived or not:
    archiving finished work does not undo it)."""
    if status == COMPLETED:
        return None
    if status is None:
        return f"{dependency} does not exist: remove it from blocked_by"
    if archived:
        return (
            f"{dependency} is archived ({status}), and it blocks until it is unarchived and "
            f"completed: start board unarchive {dependency}, or remove it from blocked_by"
        )
    if status == FAILED:
        return (
            f"{dependency} failed, and only a completed item satisfies a dependency: reopen it "
            "(status pending) or remove it from blocked_by"
        )
    return f"waiting for {dependency} ({status})"


# --- views ----------------------------------------------------------------------------------


def item_data(item: Item) -> dict[str, Any]:
    """An item as JSON data: `start board show --json`, and `board_tasks_get`."""
    data = dict(zip(Item._fields, item, strict=True))
    data["blocked_by"] = list(item.blocked_by)
    data["blocked"] = list(item.blocked)
    data["labels"] = list(item.labels)
    data["metadata"] = dict(item.metadata)
    data["run"] = ask_data(item.run) if item.run else None
    # Valid JSON whatever a board of an earlier start kept (a lone surrogate, NaN): the doors
    # refuse such values now, and the store keeps what it was given.
    result: dict[str, Any] = readable(data, METADATA_DEPTH + 1)
    return result


def comment_data(comment: Record) -> dict[str, Any]:
    """A comment (start.board.store.Comment) as JSON data (`show --json`, `board_tasks_get`):
    valid Unicode whatever the store kept."""
    found: dict[str, Any] = readable(dict(zip(comment._fields, comment, strict=True)))
    return found


# The fields of a listing's row: small enough for a list of many items, and the rest by id.
ROW: Final = (
    "id", "title", "status", "assignee", "blocked_by", "blocked", "archived", "priority", "labels",
    "parent",
)  # fmt: skip


def row_data(item: Item, confirmed: bool = True) -> dict[str, Any]:
    """An item as one compact row of a listing (`start board --json`, `board_tasks_list`).
    `confirmed`: false only for an item held under a claim not yet pushed (sync on: Board.
    unconfirmed), which another machine's earlier claim may still take."""
    data = item_data(item)
    return {field: data[field] for field in ROW} | {
        "runs": item.run is not None,
        "confirmed": confirmed,
    }


# JSON Schema of each annotation an Item's fields have: the schema of `item_data` is derived
# from the record, so a new field is one line there and one here (tests/board/test_board.py).
_TYPES: Final[Mapping[str, Mapping[str, Any]]] = {
    "str": {"type": "string"},
    "str | None": {"type": ["string", "null"]},
    "Text": {"type": "string"},
    "Text | None": {"type": ["string", "null"]},
    "int": {"type": "integer"},
    "int | None": {"type": ["integer", "null"]},
    "tuple[str, ...]": {"type": "array", "items": {"type": "string"}},
    "Mapping[str, Any]": {"type": "object"},
    "Ask | None": {"type": ["object", "null"]},
}


def item_schema() -> dict[str, Any]:
    """The JSON Schema of `item_data`."""
    hints: Mapping[str, str] = Item.__annotations__
    return {
        "type": "object",
        "properties": {field: dict(_TYPES[hints[field]]) for field in Item._fields},
        "required": list(Item._fields),
    }


def row_schema() -> dict[str, Any]:
    """The JSON Schema of `row_data`."""
    fields = item_schema()["properties"]
    return {
        "type": "object",
        "properties": {field: fields[field] for field in ROW}
        | {"runs": {"type": "boolean"}, "confirmed": {"type": "boolean"}},
        "required": [*ROW, "runs", "confirmed"],
    }
