"""`start board`: the project's board of work items for people and agents (start.board), and
`start board run`, which runs its ready items headless (start.board.runner). Docs: docs/board.md.

The commands that make and change items are in start.cli.board_items."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import click

from start import board
from start.base import inputs
from start.base.errors import ExitCode
from start.board import COMPLETED, FAILED, IN_PROGRESS, PENDING, STATUSES, Item
from start.board.rows import Filter
from start.cli import board_items, board_serve, board_sync, board_transfer, board_views
from start.cli.board_options import (
    NO_ITEM,
    OK,
    USAGE,
    as_option,
    epilog,
    item_id,
    open_board,
    person,
)
from start.cli.commands import Choice, group
from start.cli.inputs import ITEM_ID, LABEL, SECONDS, TEXT, count
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options, completer
from start.cli.state import get_options
from start.config import schema
from start.ui import console

# --- the listing --------------------------------------------------------------------------------

# How many items a listing shows unless told (gh's default).
LIMIT = 30
# What a listing shows unless told: the items not completed (failed ones wait for a person).
OPEN = (PENDING, IN_PROGRESS, FAILED)


def shown(
    statuses: tuple[str, ...],
    assignee: str | None,
    ready: bool,
    *,
    all_: bool,
    labels: tuple[str, ...] = (),
    parent: str | None = None,
    search: str | None = None,
) -> Filter:
    """Which items a listing shows: those of `statuses` (default: the open ones; with `all_`,
    every one), archived ones only with `all_`; with every one of `labels`; of `parent`; with
    every word of `search`."""
    if not statuses and not ready and not all_:
        statuses = OPEN
    archived = None if all_ else False
    return Filter(
        statuses,
        assignee,
        None,
        ready,
        archived=archived,
        labels=labels,
        parent=parent,
        search=search,
    )


@group(
    invoke_without_command=True,
    examples=[
        ("The open items of this project's board, the latest changed first", "start board"),
        ("Every item, finished and archived ones too", "start board --all --limit 0"),
        ("What can be claimed now, the highest priority first", "start board --ready"),
        ("The open bugs of the epic item-1", "start board --label bug --parent 1"),
        ("Every item that mentions a login crash", 'start board --search "login crash" --all'),
        (
            "A plan, then its implementation by another agent",
            'start board add "Plan" --prompt "Plan the retry fix" -a claude',
        ),
        ("Run the ready items until none is left", "start board run --until-empty"),
    ],
    epilog=epilog(OK, USAGE, "130 Ctrl-C ends --watch"),
    # What beads and gh users type: a hint naming ours, not a second name for each.
    other_words={"list": (), "ready": ("--ready",), "create": ("add",), "close": ("done",)},
)
@click.option(
    "--ready",
    is_flag=True,
    help="Only items that can be claimed now, as claims take them: by priority, then age.",
)
@click.option(
    "--status",
    "statuses",
    type=Choice(STATUSES),
    multiple=True,
    help="Only items of this status (default: every one but completed); repeatable.",
)
@click.option("--assignee", metavar="NAME", type=TEXT, help="Only items NAME holds or finished.")
@click.option(
    "--label",
    "labels",
    type=LABEL,
    multiple=True,
    metavar="NAME",
    help="Only items labelled NAME; repeatable (all of them).",
)
@click.option(
    "--parent",
    type=ITEM_ID,
    metavar="ID",
    help="Only the items that are part of item ID.",
    shell_complete=completer("complete_items"),
)
@click.option(
    "--search",
    metavar="TEXT",
    type=TEXT,
    help="Only items with each word of TEXT in the title, description or a comment (as a "
    "word's start: fix finds fixes).",
)
@click.option(
    "--all", "all_", is_flag=True, help="Completed and archived items too (archived ones marked)."
)
@click.option(
    "--limit",
    type=count(0),
    default=LIMIT,
    show_default=True,
    metavar="N",
    help="At most N items, the latest changed first (0: no limit).",
)
@click.option("--watch", is_flag=True, help="Show the list again whenever the board changes.")
@common_options(DIRECTORY, QUIET)
@click.pass_context
def board_(
    ctx: click.Context,
    ready: bool,
    statuses: tuple[str, ...],
    assignee: str | None,
    labels: tuple[str, ...],
    parent: str | None,
    search: str | None,
    all_: bool,
    limit: int,
    watch: bool,
) -> int:
    """List the open items of this project's board, the latest changed first: what people and
    agents do, what waits, and what failed (--ready: by priority, then age).

    Each project (the directory holding .start/, else the git root) has its own board, kept in
    start's state directory, never in the repository. People use these commands; agents use
    the board_tasks_* tools of start mcp; start board run runs the items that say what to run.
    """
    if ctx.invoked_subcommand is not None:
        return ExitCode.OK
    options = get_options()
    found = shown(statuses, assignee, ready, all_=all_, labels=labels, parent=parent, search=search)
    most = limit or None
    # What --all would show besides: the same statuses, archived items too.
    wider = None if all_ else found._replace(statuses=statuses, archived=None)
    with open_board() as opened:
        if watch:
            board_views.live_listing(
                opened, found, most, wider, as_json=options.json, no_color=options.no_color
            )
        items, total = opened.items(found, most, newest=not ready, by_priority=ready)
        more = board_views.left_out(opened, wider, len(items), total)
        root = opened.root
        synced = opened.sync()
        unconfirmed = opened.unconfirmed()
    empty = not more and search is None
    board_views.listing(
        items, as_json=options.json, no_color=options.no_color, empty=empty,
        unconfirmed=unconfirmed,
    )  # fmt: skip
    if search is not None and not items and not more and not options.json:
        console.err(f"No item has each word of {inputs.quoted(search)}")
    if more:
        console.err(f"start: {more}")
    if synced is not None and not options.quiet:  # sync is on (start board sync)
        console.err(f"start: last synced {synced.last_sync or 'never'} (start board sync)")
    if not options.json and not options.quiet:
        board_views.whose(root, options.workdir)
    return ExitCode.OK


# add, claim, update, done, fail and reassign: start.cli.board_items.
board_items.register(board_)
# export and import: start.cli.board_transfer.
board_.add_command(board_transfer.export)
board_.add_command(board_transfer.import_)
board_.add_command(board_sync.sync)
board_.add_command(board_serve.serve)


@board_.command(
    examples=[
        (
            "One item: its dependencies, its run, its comments, its answer and its history",
            "start board show item-3",
        ),
        ("The same as data", "start board show 3 --json"),
    ],
    epilog=epilog(OK, USAGE, NO_ITEM),
)
@item_id()
@common_options(DIRECTORY)
def show(id_: str) -> int:
    """Show one item whole: why it waits, who holds it, what it runs, its comments, its answer,
    its history, and the items that are part of it."""
    options = get_options()
    with open_board() as opened:
        item = opened.get(id_)
        events = opened.events(id_)
        comments = opened.comments(id_)
        waited: list[Item] = []
        if item.blocked_by:
            waited, _ = opened.items(Filter(ids=item.blocked_by, archived=None))
        children: list[Item] = []
        if item.children:
            children, _ = opened.items(Filter(parent=item.id, archived=None))
    if options.json:
        data = board.item_data(item)
        events_data = [dict(zip(e._fields, e, strict=True)) for e in events]
        data["events"] = inputs.readable(events_data, inputs.METADATA_DEPTH + 3)
        data["comments"] = [board.comment_data(found) for found in comments]
        console.print_json(data)
        return ExitCode.OK
    statuses = {
        found.id: found.status + (", archived" if found.archived is not None else "")
        for found in waited
    }
    board_views.item_page(
        item, events, statuses, children, comments=comments, no_color=options.no_color
    )
    return ExitCode.OK


@board_.command(
    examples=[
        ("The open items under their parents, with each epic's progress", "start board tree"),
        ("One epic and everything part of it, finished items too", "start board tree 1 --all"),
        ("The same as nested data", "start board tree 1 --json"),
    ],
    epilog=epilog(OK, USAGE, NO_ITEM),
)
@item_id(required=False)
@click.option(
    "--all", "all_", is_flag=True, help="Completed and archived items too (archived ones marked)."
)
@common_options(DIRECTORY)
def tree(id_: str | None, all_: bool) -> int:
    """Show items under their parents: each epic with the items part of it, at any depth, and
    how many of its children are done.

    Without ID, every open item (as the listing shows them) under its parent; a finished
    parent of an open item is shown dimmed. With ID, that item and everything part of it."""
    options = get_options()
    found = shown((), None, False, all_=all_)
    root = None  # with ID: that item, which the tree does not go above
    with open_board() as opened:
        if id_ is not None:
            root = opened.get(id_)  # NoSuchItemError for an item that is not there
            found = found._replace(within=id_)
        items, _ = opened.items(found)
        listed = {item.id for item in items}
        # The parents that the filter left out of the shown items, up to their roots (or up to
        # ID, itself there even when left out), there for the tree's shape.
        context: list[Item] = []
        if listed:
            above, _ = opened.items(Filter(above=tuple(listed), within=id_, archived=None))
            context = [item for item in above if item.id not in listed]
        if root is not None and root.id not in listed | {item.id for item in context}:
            context.append(root)
        unconfirmed = opened.unconfirmed()
    order = board_views.nested([*items, *context])
    if options.json:
        board_views.as_json(board_views.tree_data(order, unconfirmed))
        return ExitCode.OK
    if not order:
        console.err("No items. Add one with: start board add TITLE")
        return ExitCode.OK
    from start.ui import display

    rows = board_views.tree_rows(order, listed)
    display.print_table(("id", "pri", "status", "title"), rows, no_color=options.no_color, cut=(3,))
    return ExitCode.OK


# The items archive and unarchive take: one or more.
_item_ids = click.argument(
    "ids",
    metavar="ID...",
    nargs=-1,
    required=True,
    type=ITEM_ID,
    shell_complete=completer("complete_items"),
)


@board_.command(
    examples=[
        ("Put finished items out of the listings", "start board archive item-3 item-4"),
        ("Every archived item", "start board --all --json | jq '.[] | select(.archived)'"),
    ],
    epilog=epilog(OK, USAGE, NO_ITEM, "75 refused: an item is in progress (nothing changed)"),
)
@_item_ids
@as_option
@common_options(DIRECTORY, QUIET)
def archive(ids: tuple[str, ...], name: str | None) -> int:
    """Archive items: left out of listings, --ready and claims, kept whole (show shows them).

    Nothing is deleted: an archived item keeps its history and answer, start board --all lists
    it, and start board unarchive brings it back. An item in progress cannot be archived; all
    or none of the items are.
    """
    return _archived(ids, name, archived=True)


@board_.command(
    examples=[("Bring an archived item back", "start board unarchive item-3")],
    epilog=epilog(OK, USAGE, NO_ITEM),
)
@_item_ids
@as_option
@common_options(DIRECTORY, QUIET)
def unarchive(ids: tuple[str, ...], name: str | None) -> int:
    """Bring archived items back into the listings, as they were."""
    return _archived(ids, name, archived=False)


def _archived(ids: tuple[str, ...], name: str | None, *, archived: bool) -> int:
    options = get_options()
    with open_board() as opened:
        items = opened.archive(ids, person(name), archived=archived)
    if options.json:
        console.print_json([board.item_data(item) for item in items])
    elif not options.quiet:
        for item in items:
            state = "archived" if item.archived is not None else "not archived"
            console.err(f"start: {item.id} is {state} ({item.status})")
    return ExitCode.OK


@board_.command(
    examples=[
        ("Wait for item 3, then print its answer", "start board watch item-3"),
        ("At most a minute", "start board watch 3 --timeout 60 || echo not yet"),
    ],
    epilog=epilog(
        "0 the item completed", "1 it failed", USAGE, NO_ITEM, "124 --timeout passed", "130 Ctrl-C"
    ),
)
@item_id()
@click.option(
    "--timeout",
    type=SECONDS,
    metavar="SECONDS",
    help="Stop waiting after SECONDS (exit 124).",
)
@common_options(DIRECTORY, QUIET)
def watch(id_: str, timeout: float | None) -> int:
    """Wait until an item is completed (exit 0, its answer on stdout) or failed (exit 1)."""
    options = get_options()

    def told(item: Item) -> None:
        if not options.quiet and not options.json:
            holder = f", held by {item.assignee}" if item.status == "in_progress" else ""
            console.err(f"start: {item.id} is {item.status}{holder}")

    with open_board() as opened, _pacing() as sleep:
        item = opened.watch(id_, timeout, told, sleep)
    if options.json:
        console.print_json(board.item_data(item))
    elif item.status == COMPLETED and item.answer:
        answer = console.for_stdout(item.answer)
        console.out(answer, end="" if answer.endswith("\n") else "\n")
    elif item.status == FAILED and not options.quiet:
        first, *rest = (item.reason or "(no reason given)").split("\n")
        console.err(f"start: {item.id} failed: {first}")
        for line in rest:
            console.err(line)
    if item.status == COMPLETED:
        return ExitCode.OK
    if item.status == FAILED:
        return ExitCode.ERROR
    if not options.quiet and not options.json:
        holder = f", held by {item.assignee}" if item.status == "in_progress" else ""
        since = console.local_time(item.updated, seconds=True)
        console.err(
            f"start: gave up after {timeout:g} s: {item.id} is still {item.status}{holder} "
            f"since {since}"
        )
    return ExitCode.TIMED_OUT


@contextlib.contextmanager
def _pacing() -> Iterator[Callable[[float], None]]:
    """How `start board watch` sleeps between its looks at the item: with board_remote set, it
    syncs too, at most once every syncing.EVERY seconds (start.board.syncing.Pacer), through a
    connection of its own, so that what the sync brings is a change the watch sees; a sync
    that fails is a warning, once a reason."""
    import time

    from start.board import file as boardfile
    from start.board import syncing

    options = get_options()
    given = syncing.setting(options.workdir, not options.no_project)  # a watch waits: read it
    if given.remote is None:
        yield time.sleep
        return
    pacer = syncing.Pacer(given, lambda message: console.err(f"start: warning: {message}"))
    with boardfile.opened(get_options().workdir, sweep=False) as syncing_board:

        def sleep(seconds: float) -> None:
            time.sleep(seconds)
            pacer.tick(syncing_board)

        yield sleep


@board_.command(
    "run",
    examples=[
        (
            "Run what is ready now and what becomes ready, then stop",
            "start board run --until-empty",
        ),
        ("Keep running items as they are added, until Ctrl-C", "start board run"),
    ],
    epilog=epilog(
        "0 every item it ran completed",
        "1 one failed, or a claim was not confirmed by a push (sync on: the item let go)",
        USAGE,
        "3 the config is invalid, or sync is on and board_remote is not set",
        "5 the project is not trusted",
        "130 Ctrl-C (the runs are stopped, their items pending again)",
    ),
)
@click.option("--until-empty", is_flag=True, help="Stop once nothing is ready and nothing runs.")
@click.option(
    "--timeout",
    type=click.IntRange(min=1, max=schema.MAX_TIMEOUT),
    metavar="SECONDS",
    help="Stop each agent after SECONDS (default: settings.print_timeout).",
)
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def run_(until_empty: bool, timeout: int | None) -> int:
    """Run the items that say what to run, headless, as their dependencies complete.

    Each ready item is claimed for its run before the agent starts, run as --print runs it (at
    most settings.print_agents at once), and finished from the run's evidence: completed with
    the answer and the run's id in the history, or failed with the reason.
    """
    import time

    from start.board import runner as boardrun
    from start.runs import rules

    options = get_options()
    config = _trusted_config()
    scope = rules.Scope(options.workdir, not options.no_project, rules.depth())
    view = board_views.RunView(
        no_color=options.no_color, quiet=options.quiet, live=_live_line(options.quiet)
    )
    runner = boardrun.Runner(
        scope,
        cap=config.settings.print_agents,
        timeout=timeout,
        told=view.told,
        idle=view.idle,
        remote=config.settings.board_remote or None,
        remote_level=config.settings.board_remote_level,
        warned=lambda message: console.err(f"start: warning: {message}"),
    )
    began = time.monotonic()

    def tally() -> None:
        view.close()
        if runner.claimed and not options.quiet:
            console.err(f"start: {view.tally(time.monotonic() - began)}")

    try:
        ended = runner.run(until_empty)
    except BaseException:  # Ctrl-C too: what its runs came to, then the stop
        tally()
        raise
    view.close()
    if not runner.claimed and not options.quiet and not options.json:
        console.err(
            "start: no item was ready to run (an item runs once it is ready and says what to "
            "run: start board add TITLE --prompt TEXT)"
        )
    if options.json:
        console.print_json([board.item_data(item) for item in ended])
    if until_empty and not options.quiet:
        with open_board() as opened:
            stuck, _ = opened.items(Filter((PENDING,), blocked=True, runnable=True))
        for item in stuck:
            console.err(f"start: {item.id} stays blocked: {'; '.join(item.blocked)}")
    tally()
    return ExitCode.ERROR if any(item.status == FAILED for item in ended) else ExitCode.OK


def _live_line(quiet: bool) -> Any:
    """The status line --print shows, on a terminal and without -q only: the items running."""
    import sys

    if quiet or not console.is_tty(sys.stderr):
        return None
    from start.ui.status import StatusLine

    return StatusLine(sys.stderr, elapsed=True)


def _trusted_config() -> Any:
    """The config, after asking on a terminal to trust the project when it has to be: the runs
    compose through the pipeline, which refuses an untrusted project (exit 5)."""
    from start.cli.run import _trusted
    from start.compose import pipeline
    from start.config.load import load

    options = get_options()

    def checked() -> Any:
        config = load(options.workdir, use_project=not options.no_project, strict=True)
        pipeline.grant_for(config)
        return config

    return _trusted(checked)
