"""`start board sync`: the board through the project's git remote (start.board.syncing; the
design is docs/board-sync-design.md). The remote is the setting board_remote."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from start.base.errors import ExitCode
from start.cli.board_options import OK, epilog, open_board
from start.cli.commands import command
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options
from start.cli.state import get_options
from start.ui import console

if TYPE_CHECKING:
    from start.board import Item
    from start.board.store import Board
    from start.board.syncing import Report, Setting


@command(
    examples=[
        ("Sync through the remote board_remote names", "start board sync"),
        ("What arrived and what was pushed", "start board sync --json"),
    ],
    epilog=epilog(
        OK,
        "1 the remote could not be reached, refused the push, or holds a log start does not "
        "take (nothing here is lost; the next sync goes on)",
        "3 board_remote is not set, or names no remote of the repository",
    ),
)
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def sync() -> int:
    """Fetch the board's log from the git remote board_remote names, replay it into this board,
    and push this machine's operations: a claim is confirmed once its push is taken.

    The first sync turns sync on for this board (every item is written to the log); the log
    lives on refs/start/board, never on a branch, the index or the work tree.
    """
    from start.board import syncing

    options = get_options()
    remote, remote_level = _remote()
    with open_board() as opened:
        report = syncing.sync(opened, remote, remote_level)
    if options.json:
        console.print_json(_data(report))
    elif not options.quiet:
        console.err(
            f"start: synced with '{remote}': {len(report.arrived)} operation(s) arrived, "
            f"{len(report.pushed)} pushed"
        )
        for lost in report.lost:
            console.err(f"start: {lost.why}")
        for refused in report.refused:
            console.err(f"start: refused {refused.why}")
    return ExitCode.OK


def _remote() -> tuple[str, str]:
    """The settings board_remote and board_remote_level; syncing.NoRemoteError naming the fix
    when board_remote is not set."""
    from start.config.load import load

    options = get_options()
    config = load(options.workdir, use_project=not options.no_project, strict=True)
    remote = config.settings.board_remote
    if not remote:
        from start.board.syncing import no_remote

        raise no_remote()
    return str(remote), config.settings.board_remote_level


def _data(report: Report) -> dict[str, Any]:
    return {
        "arrived": list(report.arrived),
        "pushed": list(report.pushed),
        "refused": [{"name": r.name, "why": r.why} for r in report.refused],
        "lost": [{"name": lost.name, "item": lost.item, "why": lost.why} for lost in report.lost],
        "last_sync": report.last_sync,
    }


# --- automatic sync, as the commands that claim and finish say it --------------------------------


def setting(opened: Board) -> Setting | None:
    """board_remote and board_remote_level, as automatic sync follows them (syncing.automatic);
    None, with nothing of sync imported, where no remote can concern this board (may_sync):
    a claim's speed needs it."""
    from start.board import file as boardfile

    if not boardfile.may_sync(opened):
        return None
    from start.board import syncing

    options = get_options()
    return syncing.automatic(opened, options.workdir, not options.no_project)


def claimed(opened: Board, item: Item, holder: str) -> tuple[Item, bool | None]:
    """A claim of `item` by `holder`, pushed at once with board_remote set (syncing.confirm):
    the item and whether its claim is confirmed (None: board_remote is not set). A claim that
    another machine's beat raises syncing.ClaimLostError (exit 1), after --json printed the item
    with "confirmed": false and "lost"; one no sync could push is told on stderr and stays."""
    given = setting(opened)
    if given is None:
        return item, None
    from start.board import item_data as board_data
    from start.board import syncing

    claim = syncing.confirm(opened, item, holder, given)
    if claim.lost is not None:
        if get_options().json:
            console.print_json(board_data(claim.item) | {"confirmed": False, "lost": claim.lost})
        raise syncing.lost(claim)
    if claim.error is not None:
        console.err(f"start: warning: {syncing.unconfirmed(claim.item, claim.error)}")
    return claim.item, claim.confirmed


def pushed(opened: Board, item: Item) -> None:
    """Push a change of `item`'s holder or status (a finish, a release, a reassignment) with
    board_remote set (syncing.pushed); one no sync could push is told on stderr (a warning: it
    stays here)."""
    from start.board import file as boardfile

    if not boardfile.may_sync(opened):  # nothing to push, and nothing of sync imported
        return
    from start.board import syncing

    options = get_options()
    warning = syncing.pushed(opened, item, options.workdir, not options.no_project)
    if warning is not None:
        console.err(f"start: warning: {warning}")
