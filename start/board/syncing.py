"""`start board sync`: this board's log through the project's git remote (docs/board-sync-design.md,
"Confirmed by a push"). Turn sync on (start.board.journal) the first time, add this machine's new
operations to its log ref, fetch and push through start.board.gitlog, keep what arrived with each
operation's place on the remote, and make the board again from the log (replay), in that order:
a sync killed between two steps leaves each step's work for the next sync to finish.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Final

from start.base import sqlite
from start.base.errors import ExitCode, StartError
from start.base.record import Record
from start.board import journal
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
        lost=tuple(each for each in made.lost if each.name.startswith(ours)),
        last_sync=when,
        origin=state.origin,
    )
