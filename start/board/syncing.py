"""`start board sync`: this board's log through the project's git remote (docs/board-sync-design.md,
"Confirmed by a push"). Turn sync on (start.board.journal) the first time, add this machine's new
operations to its log ref, fetch and push through start.board.gitlog, keep what arrived with each
operation's place on the remote, and make the board again from the log (replay), in that order:
a sync killed between two steps leaves each step's work for the next sync to finish.

Automatic sync (docs/board-sync-design.md, "Automatic sync"): with the setting board_remote set,
every door that changes an item's holder or status calls `after` (or, for a claim, `confirm`)
once its change is committed, and `start board watch` and `start board run` sync through a
`Pacer` while they wait, at most once every `EVERY` seconds. None of these raises for a sync
that failed: the change stays here, and the door says so (`unpushed`, `unconfirmed`).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from start.base import sqlite
from start.base.errors import ExitCode, StartError
from start.base.record import Record
from start.board import IN_PROGRESS, Item, journal
from start.board.gitlog import GitLogError
from start.board.oplog import Refused
from start.board.replay import Lost
from start.board.store import Board, now

# What a remote's name may be: git's own names of remotes, never an option (a leading `-`).
_NAME_CHARACTERS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/"
)


# How many times a sync writes again this machine's operations whose names a remote's log took
# (forged) before it gives up: each time a forger must have guessed every next name.
_RENAMES: Final = 3


class RemoteError(GitLogError):
    """board_remote names no remote of the project's repository: a setting to fix (exit 3)."""

    exit_code = ExitCode.CONFIG


class NoRemoteError(StartError):
    """board_remote is not set: the board has no remote to sync through (a setting: exit 3)."""

    exit_code = ExitCode.CONFIG


def no_remote() -> NoRemoteError:
    """The error of a sync, or of a run that must confirm its claim, without board_remote."""
    return NoRemoteError(
        "board_remote is not set: the board syncs through a git remote of the project; set "
        'it in the config (board_remote = "origin" under [settings], or start config set '
        "board_remote origin)"
    )


# At most how often `start board watch` and `start board run` sync while they wait, in seconds
# (with board_remote set): another machine's changes arrive within about this long, and a
# remote is asked at most this often by one waiting command.
EVERY: Final = 10.0


class ClaimLostError(StartError):
    """A claim that another machine's claim beat on the remote (exit 1): the item is not this
    holder's, whatever this machine showed before the sync."""


class Report(Record):
    """What a sync did: the operations that arrived and those it pushed (by name), those it
    refused (and why), this machine's that took no effect (and why), and when it ended."""

    arrived: tuple[str, ...]
    pushed: tuple[str, ...]
    refused: tuple[Refused, ...]
    lost: tuple[Lost, ...]
    last_sync: str
    origin: str


def checked_remote(repo: Path, remote: str) -> str:
    """`remote`, when it names a remote of the project's git repository; RemoteError else."""
    if (
        not remote
        or remote.startswith("-")
        or not set(remote) <= _NAME_CHARACTERS
        or len(remote) > 100
    ):
        raise RemoteError(
            f"board_remote {remote!r} is not a name of a git remote (letters, digits, ._-/, not "
            'starting with -); set it to one, such as board_remote = "origin"'
        )
    try:
        found = subprocess.run(
            ["git", "-C", str(repo), "config", "--get", f"remote.{remote}.url"],
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise RemoteError("git is not on PATH: the board syncs through your own git") from None
    if found.returncode != 0:
        raise RemoteError(
            f"board_remote names '{remote}', which is no remote of the git repository at {repo} "
            f"(git remote -v lists them); add it (git remote add {remote} URL), or set "
            "board_remote to one of them"
        )
    return remote


def sync(opened: Board, remote: str, remote_level: str) -> Report:
    """Sync `opened` with `remote`, turning sync on first when it is off (see the module);
    another machine's operations set a level at most `remote_level` (board_remote_level).
    GitLogError (OfflineError when the remote is out of reach or refused the push) leaves every
    local operation where it was, for the next sync."""
    from start.board import gitlog

    repo = Path(opened.root)
    checked_remote(repo, remote)
    with sqlite.writing(opened.connection) as connection:
        state = journal.turn_on(connection)
    rewritten: list[Refused] = []
    for attempt in range(_RENAMES + 1):
        new = journal.unlogged(opened.connection)
        if new:
            gitlog.append(repo, new)
            with sqlite.writing(opened.connection) as connection:
                journal.logged(connection, list(new))
        try:
            synced = gitlog.sync(repo, remote, state.origin)
            break
        except gitlog.ForgedNamesError as error:
            if attempt == _RENAMES:
                raise
            with sqlite.writing(opened.connection) as connection:
                done = journal.renamed(connection, error.names, error.used)
                held = journal.known(connection)
            if not done and all(name in held for name in error.names):
                raise  # pushed ones, changed on the remote since: nothing to write again
            # Out of this machine's log too, each name the board no longer holds (renamed now,
            # or by a sync killed before it dropped them).
            gitlog.drop(repo, [name for name in error.names if name not in held])
            rewritten += [
                Refused(old, (
                    f"operation {old}: the board's log on '{remote}' holds another operation "
                    "under this name, which this machine wrote and had not pushed (a forged "
                    f"name); it is written again as {done[old]}, and pushed under that name"))
                for old in sorted(done)
            ]  # fmt: skip
    taking = gitlog.taking(
        repo, journal.known(opened.connection), journal.taken(opened.connection), synced.log
    )
    when = now()
    with sqlite.writing(opened.connection) as connection:
        touched = journal.take(connection, taking.entries, when, taking.positions, taking.tip)
        made = journal.rebuild(connection, remote_level, touched)
    ours = f"{state.origin}/"
    return Report(
        arrived=synced.arrived,
        pushed=synced.pushed,
        refused=(*rewritten, *synced.refused, *taking.refused),
        lost=tuple(
            _named(each, opened.shown_key) for each in made.lost if each.name.startswith(ours)
        ),
        last_sync=when,
        origin=state.origin,
    )


def _named(lost: Lost, shown: Callable[[str], str]) -> Lost:
    """`lost` with its item (a key, as operations carry it) as the board shows it, in its words
    too (start.board.replay names it `... of KEY (NAME)`), for every door that says it."""
    return lost._replace(
        item=shown(lost.item),
        why=lost.why.replace(f" of {lost.item} (", f" of {shown(lost.item)} ("),
    )


# --- automatic sync: the doors' one way to it ------------------------------------------------


class Setting(Record):
    """The settings automatic sync follows: board_remote (None: no sync) and
    board_remote_level (the most another machine's operations may set)."""

    remote: str | None
    level: str


def setting(workdir: str, use_project: bool = True) -> Setting:
    """The settings board_remote and board_remote_level as the config seen from `workdir` has
    them (a config with errors is read as start reads it elsewhere, its errors left to the
    commands that check it)."""
    from start.config.load import load

    settings = load(workdir, use_project=use_project).settings
    return Setting(settings.board_remote or None, settings.board_remote_level)


def automatic(opened: Board, workdir: str, use_project: bool = True) -> Setting | None:
    """board_remote and board_remote_level as a door's automatic sync follows them (`setting`);
    None when board_remote is not set, or cannot concern this board (no remote it could name,
    start.board.file.may_sync: then the config is not read, which a claim's speed needs)."""
    from start.board import file as boardfile

    if not boardfile.may_sync(opened):
        return None
    given = setting(workdir, use_project)
    return given if given.remote is not None else None


class Synced(Record):
    """What an automatic sync came to: its report, or the error it stopped at (a GitLogError
    such as OfflineError, or a setting to fix), which left every local change where it was."""

    report: Report | None
    error: StartError | None


def after(opened: Board, given: Setting) -> Synced | None:
    """Sync `opened` after a change of an item's holder or status, when board_remote is set
    (None when it is not). A sync that fails raises nothing: the change stays here, and the
    next sync pushes it; the door says so (`unpushed`)."""
    if given.remote is None:
        return None
    try:
        return Synced(sync(opened, given.remote, given.level), None)
    except StartError as error:
        return Synced(None, error)


class Claim(Record):
    """A claim after its automatic sync: the item as it now is; `confirmed` when the push that
    carries the claim was taken and the claim won; `lost` (why) when another machine's claim
    was first on the remote; `error` when the sync failed (the claim stays, provisional)."""

    item: Item
    confirmed: bool
    lost: str | None = None
    error: StartError | None = None


def confirm(opened: Board, item: Item, holder: str, given: Setting) -> Claim:
    """Push the claim of `item` by `holder` (with board_remote set) and say whether it won: the
    operation that made the item's present epoch is this machine's and the item is in progress,
    held by `holder`, at a place on the remote. Without board_remote: the item as it is."""
    key = opened.key(item.id)
    synced = after(opened, given)
    if synced is None:
        return Claim(item, item.id not in opened.unconfirmed())
    key = key or opened.key(item.id)  # this sync turned sync on: item-N is now ORIGIN.N
    found = None if key is None else opened.by_key(key)
    if synced.report is None:
        return Claim(found or item, False, error=synced.error)
    now = found or item
    made = None if key is None else _made(opened, key)
    if (
        found is not None
        and (found.status, found.assignee) == (IN_PROGRESS, holder)
        and made is not None
        and made.startswith(f"{synced.report.origin}/")
        and found.id not in opened.unconfirmed()
    ):
        return Claim(found, True)
    shown = None if key is None else opened.shown_key(key)
    why = next((each.why for each in synced.report.lost if each.item == shown), None)
    return Claim(now, False, lost=why or "another machine's claim was first on the remote")


def _made(opened: Board, key: str) -> str | None:
    """The operation that made the present epoch of the item `key` (keys.made)."""
    found = opened.connection.execute("SELECT made FROM keys WHERE key = ?", (key,)).fetchone()
    return None if found is None or found[0] is None else str(found[0])


def lost(claim: Claim) -> ClaimLostError:
    """The error of a claim that lost on the remote, naming the item as the board shows it."""
    item = claim.item
    state = f"held by {item.assignee}" if item.status == IN_PROGRESS else f"{item.status}"
    return ClaimLostError(
        f"your claim of {item.id} lost: {claim.lost}; {item.id} is {state} (start board sync "
        "brought it); claim another item (start board claim --next)"
    )


def unconfirmed(item: Item, error: StartError) -> str:
    """The warning of a claim that no sync could push: it stays here, provisional."""
    return (
        f"{item.id}'s claim is not confirmed: {error}; it is yours on this machine only, and "
        "another machine's earlier claim may take it: start board sync confirms it"
    )


def unpushed(item: Item, error: StartError) -> str:
    """The warning of a change (a finish, a release) that no sync could push: it stays here,
    and the next sync pushes it."""
    return (
        f"{item.id} is {item.status} on this machine, not yet pushed: {error}; nothing is lost, "
        "and the next sync pushes it (start board sync)"
    )


def pushed(opened: Board, item: Item, workdir: str, use_project: bool = True) -> str | None:
    """Push a change of `item`'s holder or status (a finish, a release, a reassignment) at once
    where board_remote is set (`automatic`), as every door does: the warning to give when no
    sync could push it (it stays here: `unpushed`), else None."""
    given = automatic(opened, workdir, use_project)
    synced = None if given is None else after(opened, given)
    if synced is None or synced.error is None:
        return None
    return unpushed(item, synced.error)


class Pacer:
    """The syncs of a command that waits (`start board watch`, `start board run`): at most one
    every `every` seconds (by `clock`), each failure told (`warned`) once per distinct reason."""

    def __init__(
        self,
        given: Setting,
        warned: Callable[[str], None],
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.given = given
        self.warned = warned
        self.every = every
        self.clock = clock
        self.last: float | None = None  # when it last synced (or tried to)
        self.said: set[str] = set()

    def due(self) -> bool:
        """Whether a sync is due: board_remote is set and `every` seconds passed since the last."""
        if self.given.remote is None:
            return False
        return self.last is None or self.clock() - self.last >= self.every

    def tick(self, opened: Board) -> bool:
        """Sync `opened` when one is due (`due`); whether it tried."""
        if not self.due():
            return False
        self.now(opened)
        return True

    def now(self, opened: Board) -> Synced | None:
        """Sync `opened` now (a finish to push), and count it against the rate."""
        self.last = self.clock()
        synced = after(opened, self.given)
        if synced is not None and synced.error is not None:
            self.warn(
                f"the board could not sync with '{self.given.remote}': {synced.error}; what "
                "changed here is kept, and the next sync pushes it (start board sync)"
            )
        return synced

    def warn(self, message: str) -> None:
        """Tell `message` once: a reason told before is not told again."""
        if message not in self.said:
            self.said.add(message)
            self.warned(message)
