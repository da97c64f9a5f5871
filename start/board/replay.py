"""The board of a set of operations (docs/board-sync-design.md, "Replay"): every machine that
holds the same operations, each with its place on the remote, makes the same board from them,
whatever order they arrived in.

Each item's status, holder and archive go from epoch to epoch: of the transitions made at an
epoch, the first on the remote wins (then the first by clock among those not yet pushed), so a
confirmed claim is never overturned. Its fields are last-writer-wins registers by clock, each
write judged by the state at the epoch its author saw. Nothing here prints or reads a file.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from start.base.inputs import DEFAULT_PRIORITY, DEPTH
from start.base.record import Record
from start.board import COMPLETED, FAILED, IN_PROGRESS, PENDING, lowest
from start.board.oplog import (
    ARCHIVE,
    CLAIM,
    COMMENT,
    CREATE,
    FINISH,
    REASSIGN,
    RELEASE,
    REOPEN,
    UNARCHIVE,
    UPDATE,
    Clock,
    Op,
    data,
)
from start.config.schema import LEVELS

# The fields a completed item still takes (docs/board.md, "The rules"); they never reach a run.
KEPT_WHEN_COMPLETED: Final = frozenset({"metadata", "priority", "labels", "parent"})
# The fields that shape what an item runs, and so bring its level down to their writer's.
SHAPING: Final = frozenset({"title", "description", "run", "blocked_by"})


class Entry(Record):
    """An operation, and its place on the remote: the number of the first commit of the remote
    log's linear history that carried it (1 the oldest); None while it is not pushed."""

    op: Op
    position: int | None = None


class Lost(Record):
    """An operation that took no effect, and why: a transition another won the epoch of, or a
    change its author could not make at the epoch it saw."""

    name: str  # the operation's
    item: str
    why: str


class Said(Record):
    """A comment on an item, as its operation wrote it: appended, never lost."""

    name: str  # the operation's
    clock: Clock
    author: str
    text: str


class State(Record):
    """One item, as the operations make it."""

    key: str
    title: str
    description: str
    run: Mapping[str, Any] | None
    priority: int
    parent: str | None
    labels: tuple[str, ...]  # sorted
    blocked_by: tuple[str, ...]  # sorted
    metadata: Mapping[str, Any]
    status: str
    holder: str | None  # who holds it (in progress) or finished it
    archived: bool
    epoch: int
    releases: int
    answer: str | None
    reason: str | None
    answer_level: str | None
    level: str
    level_by: str
    created_by: str
    created: Clock
    updated: Clock
    # The operations that made each epoch, the create first: where its state came from.
    transitions: tuple[str, ...]
    # Whether the operation that made its present epoch is on the remote: a claim is confirmed.
    confirmed: bool
    # Its comments, in the order every machine gives operations (Op.order).
    comments: tuple[Said, ...] = ()


class Replayed(Record):
    """What replay makes of a log: each item by key, and the operations that took no effect."""

    items: Mapping[str, State]
    lost: tuple[Lost, ...]


def everyone(origin: str) -> str:
    """The ceiling that leaves every operation's level as its origin wrote it."""
    del origin
    return LEVELS[-1]


def replay(entries: Iterable[Entry], ceiling: Callable[[str], str] = everyone) -> Replayed:
    """The board of `entries`: the same for the same set, in any order, an operation given
    twice counted once. `ceiling` bounds the level of each origin's operations (provenance:
    another machine's operations at most what this machine lets them set).

    An item's claim, reassign or completion waits on its dependencies as the store's do: each
    must be completed by a finish that comes before it in the order of the log (`_rank`: the
    first on the remote, then by clock), so that what a confirmed transition needed is itself
    confirmed; the items are replayed dependencies first (`_dependencies_first`)."""
    by_item: dict[str, list[Entry]] = defaultdict(list)
    for entry in _once(entries):
        by_item[entry.op.item].append(entry)
    replaying = _Replaying(by_item, ceiling)
    for group in _dependencies_first(by_item):
        for item in group:
            replaying.item(item)
    items = {k: s for k in sorted(by_item) if (s := replaying.states[k]) is not None}
    lost = [each for k in by_item for each in replaying.lost[k]]
    return Replayed(_parents(items), tuple(sorted(lost)))


def _named(entries: Sequence[Entry]) -> set[str]:
    """Every item an item's operations name as a dependency, whether it holds or not."""
    found: set[str] = set()
    for entry in entries:
        listed = entry.op.fields.get("blocked_by") if entry.op.kind in (CREATE, UPDATE) else None
        if isinstance(listed, list):
            found |= set(listed)
        elif isinstance(listed, Mapping):
            found |= set(listed.get("add", ()))
    return found


def _dependencies_first(by_item: Mapping[str, Sequence[Entry]]) -> list[list[str]]:
    """The items as groups that wait on one another (a cycle of dependencies, which only
    concurrent changes or a hostile log make; most groups are one item), each after every
    group it waits on, each sorted: the strongly connected components of the items' named
    dependencies (Tarjan's, without recursion), so the order depends on the set alone."""
    edges = {k: sorted(d for d in _named(v) if d in by_item) for k, v in by_item.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(by_item):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, at = work.pop()
            if at == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if at < len(edges[node]):
                work.append((node, at + 1))
                nxt = edges[node][at]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    each = stack.pop()
                    on_stack.discard(each)
                    group.append(each)
                    if each == node:
                        break
                groups.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return groups


def _parents(items: Mapping[str, State]) -> dict[str, State]:
    """The items, each part of its parent as the store allows one: an item on a loop of
    parents (two machines' concurrent changes make one) is part of none, nor is one that would
    be more than inputs.DEPTH levels deep (it is at the top, and what is part of it below
    it). A parent that has not arrived stays named: the rows leave it out until it does."""
    depth: dict[str, int] = {}
    dropped: set[str] = set()
    for start in sorted(items):
        chain: list[str] = []
        seen: set[str] = set()
        at: str | None = start
        while at is not None and at in items and at not in depth and at not in seen:
            chain.append(at)
            seen.add(at)
            at = items[at].parent
        if at is not None and at in seen:  # a loop: each item on it is part of none
            loop = chain[chain.index(at) :]
            for each in loop:
                dropped.add(each)
                depth[each] = 1
            chain = chain[: chain.index(at)]
        for each in reversed(chain):
            up = items[each].parent
            below = depth.get(up, 0) + 1 if up is not None and up in items else 1
            if below > DEPTH:
                dropped.add(each)
                below = 1
            depth[each] = below
    return {k: (s._replace(parent=None) if k in dropped else s) for k, s in items.items()}


def _once(entries: Iterable[Entry]) -> list[Entry]:
    """Each operation once, at its first place on the remote: an operation's name is its own,
    and should two differ under one name (the union refuses that), one is kept by its bytes."""
    kept: dict[str, Entry] = {}
    for entry in entries:
        name = entry.op.name
        if name not in kept or _first(entry) < _first(kept[name]):
            kept[name] = entry
    return list(kept.values())


def _first(entry: Entry) -> tuple[bool, int, str]:
    return (
        entry.position is None,
        entry.position or 0,
        json.dumps(data(entry.op), sort_keys=True, ensure_ascii=True),
    )


def _rank(entry: Entry) -> tuple[bool, int, tuple[int, int, str, int]]:
    """Which of two transitions of one epoch wins: the first on the remote, then by clock."""
    return (entry.position is None, entry.position or 0, entry.op.order)


class _Phase(Record):
    """An item's status, holder and archive at one epoch."""

    status: str
    holder: str | None
    origin: str | None  # the origin of the transition that gave the holder the item
    archived: bool
    releases: int


_Rank = tuple[bool, int, tuple[int, int, str, int]]


class _Replaying:
    """The items of a log being replayed, each once, dependencies first: what each dependency
    of a transition says (was it completed before it?) is read from the item it names."""

    def __init__(
        self, by_item: Mapping[str, Sequence[Entry]], ceiling: Callable[[str], str]
    ) -> None:
        self.by_item = by_item
        self.ceiling = ceiling
        self.states: dict[str, State | None] = {}
        self.lost: dict[str, list[Lost]] = {}
        # The transitions that won so far, of each item being replayed or replayed.
        self.made: dict[str, list[Entry]] = {}

    def item(self, key: str) -> None:
        if key in self.states or key in self.made:
            return
        self.made[key] = []
        self.states[key], self.lost[key] = _item(key, self.by_item[key], self)

    def completed_before(self, key: str, rank: _Rank) -> bool:
        """Whether item `key` was completed by a finish that comes before `rank`. Every item it
        names is replayed before it (`_dependencies_first`), but for those of a cycle of
        dependencies: one replayed after it (in the order of their keys) counts as not
        completed, and one being replayed answers by the transitions it has so far (a finish
        before `rank` would be among them in any log a store wrote). Nothing here recurses:
        a hostile cycle of a million items is replayed as any other."""
        if key not in self.made:
            return False  # not arrived (nothing completed it), or of the cycle, after it
        finished = None
        for entry in self.made[key]:
            if entry.op.kind == FINISH:
                finished = entry
            elif entry.op.kind == REOPEN:
                finished = None
        return (
            finished is not None
            and finished.op.fields.get("status") == COMPLETED
            and _rank(finished) < rank
        )


def _item(
    key: str, entries: Sequence[Entry], replaying: _Replaying
) -> tuple[State | None, list[Lost]]:
    ceiling = replaying.ceiling
    lost: list[Lost] = []
    creates = sorted((e for e in entries if e.op.kind == CREATE), key=_rank)
    if not creates:
        return None, [
            Lost(e.op.name, key, f"{e.op.name}: no operation creates {key}: it is not replayed")
            for e in entries
        ]
    create = creates[0]
    lost += [
        Lost(e.op.name, key, f"{e.op.name}: {key} was created by {create.op.name} first")
        for e in creates[1:]
    ]
    phases, made, finished, more = _transitions(key, entries, create, replaying)
    lost += more
    changes, more = _changes(key, entries, phases)
    lost += more
    state = _fields(create, changes, ceiling)
    last = phases[-1]
    finish = finished.op.fields if finished is not None else {}
    answer_level = None
    if finished is not None and finish.get("status") == COMPLETED:
        written = finish.get("answer_level", finished.op.level)
        answer_level = lowest(written, ceiling(finished.op.origin))
    updated = max([create.op.clock, *(c.op.clock for c in changes), *(m.op.clock for m in made)])
    return State(
        key=key,
        status=last.status,
        holder=last.holder,
        archived=last.archived,
        epoch=len(made),
        releases=last.releases,
        answer=finish.get("answer"),
        reason=_reason(made),
        answer_level=answer_level,
        created_by=create.op.author,
        created=create.op.clock,
        updated=updated,
        transitions=(create.op.name, *(m.op.name for m in made)),
        confirmed=(made[-1] if made else create).position is not None,
        comments=tuple(
            Said(e.op.name, e.op.clock, e.op.author, e.op.fields["text"])
            for e in sorted(entries, key=lambda e: e.op.order)
            if e.op.kind == COMMENT
        ),
        **state,
    ), lost


def _reason(made: Sequence[Entry]) -> str | None:
    """Why it failed, or why its last holder let it go: the reason of the last finish or release
    that won an epoch since it was last reopened."""
    for entry in reversed(made):
        if entry.op.kind == REOPEN:  # reopened: the reason it failed is behind it
            return None
        if entry.op.kind in (FINISH, RELEASE):
            found = entry.op.fields.get("reason")
            return found if isinstance(found, str) else None
    return None


def _transitions(
    key: str, entries: Sequence[Entry], create: Entry, replaying: _Replaying
) -> tuple[list[_Phase], list[Entry], Entry | None, list[Lost]]:
    """The item's state at each epoch, the transition that made each, the finish that holds
    (None: it is not finished), and the transitions that lost."""
    updates = sorted((e for e in entries if e.op.kind == UPDATE), key=lambda e: e.op.order)
    by_epoch: dict[int, list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.op.kind not in (CREATE, UPDATE, COMMENT):
            by_epoch[entry.op.epoch].append(entry)
    phases = [_Phase(PENDING, None, None, False, 0)]
    made = replaying.made[key]
    finished: Entry | None = None
    lost: list[Lost] = []
    while by_epoch.get(len(made)):
        epoch = len(made)
        phase = phases[-1]
        valid = []
        for entry in sorted(by_epoch.pop(epoch), key=_rank):
            why = _invalid(entry.op, phase)
            if why is None:
                why = _waiting(entry, create, updates, phases, replaying)
            if why is None:
                valid.append(entry)
            else:
                lost.append(Lost(entry.op.name, key, f"{_what(entry.op)} at epoch {epoch}: {why}"))
        if not valid:
            break
        winner, *others = valid
        how = "first on the remote" if winner.position is not None else "first by clock"
        lost += [
            Lost(e.op.name, key, (f"{_what(e.op)} at epoch {epoch}: lost to {winner.op.author}'s "
                                  f"{winner.op.kind} ({winner.op.name}), {how}"))
            for e in others
        ]  # fmt: skip
        phases.append(_after(winner.op, phase))
        made.append(winner)
        if winner.op.kind == FINISH:
            finished = winner
        elif winner.op.kind == REOPEN:
            finished = None
    for epoch in sorted(by_epoch):
        lost += [
            Lost(e.op.name, key, (f"{_what(e.op)} at epoch {epoch}: {key} never reached that "
                                  f"epoch (it is at {len(made)})"))
            for e in sorted(by_epoch[epoch], key=_rank)
        ]  # fmt: skip
    return phases, made, finished, lost


def _waiting(
    entry: Entry,
    create: Entry,
    updates: Sequence[Entry],
    phases: Sequence[_Phase],
    replaying: _Replaying,
) -> str | None:
    """Why transition `entry` waits (a claim, a reassign, a completion, as the store refuses
    them while the item is blocked): a dependency, as the create and the updates before it
    (in the log's order, at an epoch it had reached) make them, that no finish before it
    completed. None when it does not wait."""
    op = entry.op
    if op.kind not in (CLAIM, REASSIGN) and not (
        op.kind == FINISH and op.fields.get("status") == COMPLETED
    ):
        return None
    rank = _rank(entry)
    deps = set(create.op.fields.get("blocked_by", ()))
    for update in updates:  # in the order of their clocks: the last writer of each
        edit = update.op.fields.get("blocked_by")
        if (
            edit is None
            or _rank(update) >= rank
            or update.op.epoch > op.epoch
            or _unheld(update.op, phases) is not None
        ):
            continue
        deps |= set(edit.get("add", ()))
        deps -= set(edit.get("remove", ()))
    for dep in sorted(deps):
        if not replaying.completed_before(dep, rank):
            return (
                f"it waits on {dep}, which no finish before it completed (an item is claimed, "
                "reassigned or completed once its dependencies are)"
            )
    return None


def _unheld(op: Op, phases: Sequence[_Phase]) -> str | None:
    """Why update `op` takes no effect, judged by the item's state at the epoch it saw."""
    if op.epoch >= len(phases):
        return f"{op.item} never reached that epoch (it is at {len(phases) - 1})"
    phase = phases[op.epoch]
    if phase.status == IN_PROGRESS and op.author != phase.holder:
        return (f"it was held by {phase.holder} then, and an item in progress changes only by "
                "its holder")  # fmt: skip
    if phase.status == COMPLETED and set(op.fields) - KEPT_WHEN_COMPLETED:
        return ("it was completed then, and a completed item keeps all but its metadata, "
                "priority, labels and parent")  # fmt: skip
    return None


def _what(op: Op) -> str:
    return f"{op.author}'s {op.kind} of {op.item} ({op.name})"


def _invalid(op: Op, phase: _Phase) -> str | None:
    """Why transition `op` cannot be made at `phase`; None when it can."""
    held = f"it is held by {phase.holder}"
    if op.kind == CLAIM:
        if phase.status != PENDING:
            return f"it is {phase.status}, and only a pending item is claimed"
        return "it is archived" if phase.archived else None
    if op.kind == REASSIGN:
        if phase.status not in (PENDING, IN_PROGRESS):
            return f"it is {phase.status}, and a finished item is not reassigned"
        return "it is archived" if phase.archived else None
    if op.kind == RELEASE:
        if phase.status != IN_PROGRESS:
            return f"it is {phase.status}: nothing holds it"
        if op.author != phase.holder and op.origin != phase.origin:
            return f"{held}, and only its holder (or its holder's machine) lets it go"
        return None
    if op.kind == FINISH:
        if phase.status == IN_PROGRESS and op.author != phase.holder:
            return f"{held}: an item in progress is finished by its holder"
        if phase.status in (COMPLETED, FAILED):
            return f"it is {phase.status} already, and a finish holds"
        return None
    if op.kind == REOPEN:
        return (
            None if phase.status == FAILED else f"it is {phase.status}: only a failed item reopens"
        )
    if op.kind == ARCHIVE:
        if phase.status == IN_PROGRESS:
            return f"{held}: an item in progress cannot be archived"
        return "it is archived already" if phase.archived else None
    if op.kind == UNARCHIVE:
        return None if phase.archived else "it is not archived"
    return f"{op.kind} is no transition"


def _after(op: Op, phase: _Phase) -> _Phase:
    """The state transition `op` makes of `phase`."""
    if op.kind == CLAIM:
        return phase._replace(status=IN_PROGRESS, holder=op.author, origin=op.origin)
    if op.kind == REASSIGN:
        return phase._replace(status=IN_PROGRESS, holder=op.fields["to"], origin=op.origin)
    if op.kind == RELEASE:
        counted = 1 if op.fields.get("counted") else 0
        return _Phase(PENDING, None, None, phase.archived, phase.releases + counted)
    if op.kind == FINISH:
        return phase._replace(status=op.fields["status"], holder=op.author, origin=op.origin)
    if op.kind == REOPEN:
        return _Phase(PENDING, None, None, phase.archived, 0)
    return phase._replace(archived=op.kind == ARCHIVE)


def _changes(
    key: str, entries: Sequence[Entry], phases: Sequence[_Phase]
) -> tuple[list[Entry], list[Lost]]:
    """The updates that hold, judged each by the state at the epoch its author saw."""
    kept: list[Entry] = []
    lost: list[Lost] = []
    for entry in entries:
        op = entry.op
        if op.kind != UPDATE:
            continue
        why = _unheld(op, phases)
        if why is None:
            kept.append(entry)
        else:
            lost.append(Lost(op.name, key, f"{_what(op)} at epoch {op.epoch}: {why}"))
    return kept, lost


def _fields(
    create: Entry, changes: Sequence[Entry], ceiling: Callable[[str], str]
) -> dict[str, Any]:
    """The item's fields: the create's, then each change that holds in the order of their
    clocks, so that each field (each metadata key, each label and dependency) is its last
    writer's; and its level, the lowest among who shaped it."""
    fields: dict[str, Any] = {
        "title": "",
        "description": "",
        "run": None,
        "priority": DEFAULT_PRIORITY,
        "parent": None,
    }
    meta: dict[str, Any] = {}
    sets: dict[str, set[str]] = {"labels": set(), "blocked_by": set()}
    level = lowest(create.op.level, ceiling(create.op.origin))
    level_by = create.op.author
    for entry in sorted([create, *changes], key=lambda e: e.op.order):
        op = entry.op
        for name, value in op.fields.items():
            if name == "metadata":
                for each, new in value.items():
                    if new is None:
                        meta.pop(each, None)
                    else:
                        meta[each] = new
            elif name in sets:
                if op.kind == CREATE:
                    sets[name] |= set(value)
                else:
                    sets[name] |= set(value.get("add", ()))
                    sets[name] -= set(value.get("remove", ()))
            else:
                fields[name] = value
        if op.kind == UPDATE and SHAPING & set(op.fields):
            written = lowest(op.level, ceiling(op.origin))
            if LEVELS.index(written) < LEVELS.index(level):
                level, level_by = written, op.author
    return fields | {
        "metadata": meta,
        "labels": tuple(sorted(sets["labels"])),
        "blocked_by": tuple(sorted(sets["blocked_by"])),
        "level": level,
        "level_by": level_by,
    }
