"""How a board names its items, both ways: the id a caller types to the item's row, and the row
to the id every output shows (docs/board.md, "Limits"; docs/board-sync-design.md, §2).

With sync off an item's id is its row's number: `item-N`. With sync on every item has a key,
`ORIGIN.N` (start.board.journal's `keys` table), and is named by it: `item-N` for an item of
this machine's origin (an item made before sync was on got N its number, so it keeps its id),
`item-PREFIX.N` for another origin's, PREFIX the shortest start of that origin (at least
start.base.inputs.ORIGIN_LEAST characters) that no other origin on this board shares. A typed
prefix that two origins share is refused, naming each full id; the full origin always works.
Row numbers are the store's own (a rebuild may renumber rows); they never leave it with sync on.
"""

from __future__ import annotations

from typing import Any, Final

from start.base.errors import ExitCode, StartError
from start.base.inputs import ITEM_PREFIX, ORIGIN_LEAST, item_ref
from start.board import item_id


class AmbiguousIdError(StartError):
    """An id's prefix starts the origins of several machines on the board."""

    exit_code = ExitCode.USAGE


def prefix_lengths(origins: set[str] | list[str]) -> dict[str, int]:
    """Each origin's shortest prefix, at least ORIGIN_LEAST characters, that no other of
    `origins` starts with. Sorted, an origin shares the most with a neighbour: only those count."""
    ordered = sorted(set(origins))
    found: dict[str, int] = {}
    for index, origin in enumerate(ordered):
        shared = 0
        for other in ordered[max(index - 1, 0) : index] + ordered[index + 1 : index + 2]:
            common = 0
            while common < min(len(origin), len(other)) and origin[common] == other[common]:
                common += 1
            shared = max(shared, common)
        found[origin] = min(max(ORIGIN_LEAST, shared + 1), len(origin))
    return found


class Names:
    """The ids of one board as it is when made: make one for each reading or change, since a
    sync may bring new origins (a prefix shown may then grow) and renumber rows. What it reads
    it reads by the `keys` table's indexes, a row or an origin's neighbours at a time, so that
    naming one item costs the same on a board of any size."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        row = connection.execute("SELECT origin FROM sync WHERE one = 1").fetchone()
        self.origin: str | None = None if row is None else str(row[0])
        self._keys: dict[int, str | None] = {}  # row to key, as read
        self._lengths: dict[str, int] = {}  # origin to its prefix's length, as worked out

    @property
    def on(self) -> bool:
        """Whether sync is on: items are named by their keys."""
        return self.origin is not None

    def _key(self, seq: int) -> str | None:
        if seq not in self._keys:
            row = self.connection.execute("SELECT key FROM keys WHERE seq = ?", (seq,)).fetchone()
            self._keys[seq] = None if row is None else str(row[0])
        return self._keys[seq]

    def _length(self, origin: str) -> int:
        """How much of `origin` its ids show: its shortest unique prefix, which only its
        neighbours in sorted order bound. A key is ORIGIN.N, every origin as long, and `/` comes
        right after `.`: the keys of `origin` lie between ORIGIN. and ORIGIN/."""
        if origin not in self._lengths:
            near = {origin} | ({self.origin} if self.origin else set())
            for sql, bound in (
                ("SELECT key FROM keys WHERE key < ? ORDER BY key DESC LIMIT 1", f"{origin}."),
                ("SELECT key FROM keys WHERE key >= ? ORDER BY key LIMIT 1", f"{origin}/"),
            ):
                row = self.connection.execute(sql, (bound,)).fetchone()
                if row is not None:
                    near.add(str(row[0]).partition(".")[0])
            self._lengths[origin] = prefix_lengths(near)[origin]
        return self._lengths[origin]

    def show(self, seq: int) -> str:
        """The id of the item in row `seq`, as every output shows it."""
        if self.origin is None:
            return item_id(seq)
        key = self._key(seq)
        if key is None:  # a row sync has no key for (none is made so): its number
            return item_id(seq)
        return self.short(key)

    def short(self, key: str) -> str:
        """The id a key `ORIGIN.N` is shown as: `item-N` for this machine's origin, else
        `item-PREFIX.N`."""
        origin, _, number = key.partition(".")
        if origin == self.origin:
            return f"{ITEM_PREFIX}{number}"
        return f"{ITEM_PREFIX}{origin[: self._length(origin)]}.{number}"

    def seq(self, id_: str) -> int | None:
        """The row of the item `id_` names (start.base.inputs.item_ref reads it: InputError
        when it is no id); None when it names none. AmbiguousIdError for a prefix that several
        origins on the board start with."""
        prefix, number = item_ref(id_)
        if self.origin is None:
            return None if prefix is not None else number
        if prefix is None:
            origin = self.origin
        else:
            matched = self.origins(prefix)
            if len(matched) > 1:
                named = ", ".join(f"{ITEM_PREFIX}{each}.{number}" for each in matched)
                raise AmbiguousIdError(
                    f"{id_} is ambiguous: the origins of {len(matched)} machines on this board "
                    f"start with '{prefix}' ({named}); give more of the origin, or all of it"
                )
            if not matched:
                return None
            origin = matched[0]
        row = self.connection.execute(
            "SELECT seq FROM keys WHERE key = ?", (f"{origin}.{number}",)
        ).fetchone()
        return None if row is None else int(row[0])

    def origins(self, prefix: str) -> list[str]:
        """The origins on this board (this machine's, and those of its items) that start with
        `prefix`, sorted: each found by the keys' index, the next after the last one's keys."""
        found = {self.origin} if self.origin and self.origin.startswith(prefix) else set()
        at = prefix
        while len(found) <= MOST_NAMED:
            row = self.connection.execute(
                "SELECT key FROM keys WHERE key >= ? ORDER BY key LIMIT 1", (at,)
            ).fetchone()
            if row is None or not str(row[0]).startswith(prefix):
                break
            origin = str(row[0]).partition(".")[0]
            found.add(origin)
            at = f"{origin}/"
        return sorted(found)

    def others(self, id_: str) -> list[str]:
        """For an id that names no item: the ids of items of that number that other origins
        made, as shown (what the caller may have meant), sorted; empty with sync off. (It reads
        every key: only a refusal asks.)"""
        if self.origin is None:
            return []
        _, number = item_ref(id_)
        ending = f".{number}"
        found = self.connection.execute("SELECT key FROM keys").fetchall()
        return sorted(self.short(str(key)) for (key,) in found if str(key).endswith(ending))[
            :MOST_NAMED
        ]


# The most origins an ambiguous prefix's refusal names, and ids a did-you-mean offers.
MOST_NAMED: Final = 10
