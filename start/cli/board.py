"""`start board`: the project's board of work items for people and agents (start.board), and
`start board run`, which runs its ready items headless (start.board.runner). Docs: docs/board.md."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from start import board
from start.base import inputs
from start.base.errors import ExitCode, UsageError
from start.board import COMPLETED, FAILED, PENDING, STATUSES, Change, Holder, Item, RefusedError
from start.board import file as boardfile
from start.board.rows import Filter
from start.board.store import Board
from start.cli import board_views
from start.cli.commands import Choice, group
from start.cli.inputs import ITEM_ID, TEXT, TITLE, count
from start.cli.options import F, common_options, common_options_but_directory, completer
from start.cli.state import get_options
from start.config import schema
from start.ui import console

if TYPE_CHECKING:
    from start.compose.ask import Ask

_EPILOG = """
Exit codes: 0 ok; 1 a watched item failed; 2 usage; 4 no such item; 75 refused (the item is
another's, blocked, finished or reassigned since your claim; nothing ready for claim --next);
124 a watch timed out.

Docs: start help --topic board
"""


def _id(required: bool = True) -> Callable[[F], F]:
    """The ID argument, completed by the shell with the board's ids."""
    return click.argument(
        "id_",
        metavar="ID",
        type=ITEM_ID,
        required=required,
        shell_complete=completer("complete_items"),
    )


def _as_option(function: F) -> F:
    return click.option(
        "--as",
        "name",
        metavar="NAME",
        help="Act as NAME (default: your login name). Agents get their own identity from start "
        "mcp and start board run.",
    )(function)


def _epoch_option(function: F) -> F:
    return click.option(
        "--epoch",
        type=count(),
        metavar="N",
        help="The epoch your claim got: refused if the item was reassigned since.",
    )(function)


def _person(name: str | None) -> Holder:
    return board.person(name if name is not None else board.login())


@contextmanager
def _opened(sweep: bool = True) -> Iterator[Board]:
    with boardfile.opened(get_options().workdir, sweep=sweep) as opened:
        yield opened


def _meta(words: tuple[str, ...]) -> dict[str, Any] | None:
    """--meta KEY=VALUE: VALUE as JSON when it is JSON (2, true, null), else as text
    (start.base.inputs.metadata_value); the board holds the whole to the metadata's rule."""
    from start.base import fs

    if not words:
        return None
    found: dict[str, Any] = {}
    for word in words:
        key, equals, value = fs.arg_text(word).partition("=")
        if not equals or not key:
            raise UsageError(f"--meta takes KEY=VALUE, not {inputs.quoted(word)}")
        found[key] = inputs.metadata_value(value)
    return found


def _told(item: Item, what: str) -> int:
    """An item as --json, or one line on stderr (none with -q)."""
    options = get_options()
    if options.json:
        console.print_json(board.item_data(item))
    elif not options.quiet:
        console.err(f"start: {item.id} {what}")
    return ExitCode.OK


# --- the listing --------------------------------------------------------------------------------


@group(
    invoke_without_command=True,
    examples=[
        ("The items of this project's board", "start board"),
        ("What can be claimed now, as data", "start board --ready --json"),
        (
            "A plan, then its implementation by another agent",
            'start board add "Plan" --prompt "Plan the retry fix" -a claude',
        ),
        ("Run the ready items until none is left", "start board run --until-empty"),
    ],
    epilog=_EPILOG,
)
@click.option("--ready", is_flag=True, help="Only items that can be claimed now.")
@click.option(
    "--status",
    "statuses",
    type=Choice(STATUSES),
    multiple=True,
    help="Only items of this status; repeatable.",
)
@click.option("--assignee", metavar="NAME", type=TEXT, help="Only items NAME holds or finished.")
@click.option("--watch", is_flag=True, help="Show the list again whenever the board changes.")
@common_options
@click.pass_context
def board_(
    ctx: click.Context,
    ready: bool,
    statuses: tuple[str, ...],
    assignee: str | None,
    watch: bool,
) -> int:
    """List the items of this project's board: what people and agents do, and what waits.

    Each project (the directory holding .start/, else the git root) has its own board, kept in
    start's state directory, never in the repository. People use these commands; agents use
    the board_tasks_* tools of start mcp; start board run runs the items that say what to run.
    """
    if ctx.invoked_subcommand is not None:
        return ExitCode.OK
    options = get_options()
    found = Filter(statuses, assignee, None, ready)
    with _opened() as opened:
        if watch:
            board_views.live_listing(opened, found, as_json=options.json, no_color=options.no_color)
        items, _ = opened.items(found)
    board_views.listing(items, as_json=options.json, no_color=options.no_color)
    return ExitCode.OK


# --- making and changing items ----------------------------------------------------------------


@board_.command(
    examples=[
        (
            "An item for a person or an agent to claim",
            'start board add "Fix the flaky test" -d "tests/test_net.py"',
        ),
        (
            "An item start board run runs, after item-1",
            'start board add Implement --after 1 --prompt "Do this plan: {answers}" -a codex',
        ),
        (
            "A task of yours, with the item's description as its instructions",
            'start board add "Review" --task gdr -d "focus on security" --after 2',
        ),
    ],
    epilog="The item's id goes to stdout. Docs: start help --topic board",
)
@click.argument("title", type=TITLE)
@click.option(
    "-d", "--description", default="", metavar="TEXT", type=TEXT, help="What the work is."
)
@click.option(
    "--after",
    multiple=True,
    metavar="ID",
    type=ITEM_ID,
    help="Wait for item ID to complete; repeatable.",
    shell_complete=completer("complete_items"),
)
@click.option(
    "--meta",
    multiple=True,
    metavar="KEY=VALUE",
    help="Metadata; VALUE is JSON when it is JSON; repeatable.",
)
@click.option(
    "--prompt",
    metavar="TEXT",
    type=TEXT,
    help="Run: ask an agent TEXT ({answers}: the answers of the items waited on).",
)
@click.option(
    "--task",
    metavar="NAME",
    help="Run: the task NAME, with the description as its instructions.",
    shell_complete=completer("complete_tasks"),
)
@click.option(
    "-a",
    "--agent",
    metavar="NAME",
    help="Run it with agent NAME (default: as --print chooses).",
    shell_complete=completer("complete_agents"),
)
@click.option("-m", "--model", metavar="MODEL", help="Run it with MODEL.")
@click.option(
    "--permissions",
    type=Choice(schema.LEVELS),
    help="Run it with these permissions (default: the task's, else read-only).",
)
@_as_option
@common_options_but_directory
def add(
    title: str,
    description: str,
    after: tuple[str, ...],
    meta: tuple[str, ...],
    prompt: str | None,
    task: str | None,
    agent: str | None,
    model: str | None,
    permissions: str | None,
    name: str | None,
) -> int:
    """Add an item to the board: pending, waiting for the items given with --after.

    With --prompt or --task the item says what to run, and start board run runs it headless
    once every item it waits for is completed. Without, it is work for someone to claim.
    """
    options = get_options()
    run = _run_spec(prompt, task, agent, model, permissions)
    with _opened() as opened:
        item = opened.create(
            title,
            _person(name),
            description,
            after,
            _meta(meta),
            run,
        )
    if options.json:
        console.print_json(board.item_data(item))
    else:
        console.out(item.id)
    return ExitCode.OK


def _run_spec(
    prompt: str | None,
    task: str | None,
    agent: str | None,
    model: str | None,
    permissions: str | None,
) -> Ask | None:
    """What the item runs, its agent and task checked against the config (names only: nothing
    is read from an untrusted project but its names)."""
    from start.base.errors import UnknownNameError
    from start.compose import resolve
    from start.compose.ask import BOARD, Ask
    from start.config.load import load

    if prompt is None and task is None:
        given = [
            flag
            for flag, value in (("-a", agent), ("-m", model), ("--permissions", permissions))
            if value
        ]
        if given:
            raise UsageError(
                f"{given[0]} says how to run the item: give --prompt TEXT or --task NAME too"
            )
        return None
    if prompt is not None and task is not None:
        raise UsageError("give --prompt or --task, not both")
    options = get_options()
    config = load(options.workdir, use_project=not options.no_project)
    if task is not None:
        task = resolve.find_task(config.tasks, task).name
    if agent is not None and agent not in config.agents:
        raise UnknownNameError("agent", agent, config.agents)
    return Ask(
        "task" if task is not None else "prompt",
        prompt,
        task,
        agents=(agent,) if agent is not None else (),
        model=model,
        headless=True,
        permissions=permissions,
        door=BOARD,
    )


@board_.command(
    examples=[
        (
            "One item: its dependencies, its run, its answer and its history",
            "start board show item-3",
        ),
        ("The same as data", "start board show 3 --json"),
    ]
)
@_id()
@common_options
def show(id_: str) -> int:
    """Show one item whole: why it waits, who holds it, what it runs, its answer, its history."""
    options = get_options()
    with _opened() as opened:
        item = opened.get(id_)
        events = opened.events(id_)
        waited, _ = opened.items(Filter(ids=item.blocked_by)) if item.blocked_by else ([], 0)
    if options.json:
        data = board.item_data(item)
        events_data = [dict(zip(e._fields, e, strict=True)) for e in events]
        data["events"] = inputs.readable(events_data, inputs.METADATA_DEPTH + 3)
        console.print_json(data)
        return ExitCode.OK
    statuses = {found.id: found.status for found in waited}
    board_views.item_page(item, events, statuses, no_color=options.no_color)
    return ExitCode.OK


@board_.command(
    examples=[
        ("Take item 3", "start board claim item-3"),
        ("Take the first ready item, as a script would", "ID=$(start board claim --next --as ci)"),
    ],
    epilog=_EPILOG,
)
@_id(required=False)
@click.option("--next", "next_", is_flag=True, help="Claim the first ready item.")
@_as_option
@common_options
def claim(id_: str | None, next_: bool, name: str | None) -> int:
    """Take an item: it is in progress and yours; its id goes to stdout.

    Refused (exit 75) when it is another's, blocked or finished, or with --next when nothing is
    ready. Claiming an item you hold again changes nothing.
    """
    if (id_ is None) == (not next_):
        raise UsageError("give an item ID or --next")
    options = get_options()
    holder = _person(name)
    with _opened() as opened:
        if id_ is not None:
            item = opened.claim(id_, holder)
        else:
            found = opened.claim_next(holder)
            if found is None:
                _, waiting = opened.items(Filter((PENDING,)), limit=0)
                raise RefusedError(
                    f"nothing is ready to claim on the board of {opened.root}: "
                    + (
                        f"{waiting} pending item(s), each blocked"
                        if waiting
                        else "no item is pending"
                    )
                )
            item = found
    if options.json:
        console.print_json(board.item_data(item))
    else:
        console.out(item.id)
        if not options.quiet:
            title = console.printable(item.title)
            console.err(f"start: {item.id} is yours, {holder.name} (epoch {item.epoch}): {title}")
    return ExitCode.OK


@board_.command(
    examples=[
        (
            "Merge metadata (null deletes a key)",
            "start board update item-3 --meta priority=1 --meta owner=null",
        ),
        ("Wait for other items instead", "start board update 4 --after 2 --after 3"),
        ("Let go of an item you hold", "start board update item-3 --status pending"),
        ("Reopen a failed item", "start board update item-5 --status pending"),
    ],
    epilog=_EPILOG,
)
@_id()
@click.option(
    "--status",
    type=Choice((PENDING, COMPLETED, FAILED)),
    help="The new status (in_progress comes from a claim).",
)
@click.option("-d", "--description", metavar="TEXT", type=TEXT, help="The new description.")
@click.option(
    "--after",
    multiple=True,
    metavar="ID",
    type=ITEM_ID,
    help="Wait for these items instead; repeatable.",
    shell_complete=completer("complete_items"),
)
@click.option("--no-after", is_flag=True, help="Wait for no item.")
@click.option(
    "--meta",
    multiple=True,
    metavar="KEY=VALUE",
    help="Merge metadata; VALUE null deletes KEY; repeatable.",
)
@click.option("--answer", metavar="TEXT", type=TEXT, help="With --status completed: the answer.")
@click.option("--reason", metavar="TEXT", type=TEXT, help="With --status failed: why.")
@_epoch_option
@_as_option
@common_options_but_directory
def update(
    id_: str,
    status: str | None,
    description: str | None,
    after: tuple[str, ...],
    no_after: bool,
    meta: tuple[str, ...],
    answer: str | None,
    reason: str | None,
    epoch: int | None,
    name: str | None,
) -> int:
    """Change an item: its status, description, dependencies or metadata.

    An item in progress changes only by its holder; a completed one only in its metadata; an
    item cannot complete while blocked.
    """
    if after and no_after:
        raise UsageError("give --after or --no-after, not both")
    if answer is not None and status != COMPLETED:
        raise UsageError("--answer goes with --status completed")
    if reason is not None and status != FAILED:
        raise UsageError("--reason goes with --status failed")
    change = Change(
        status, description, () if no_after else (after or None), _meta(meta), answer, reason
    )
    if change == Change():
        raise UsageError("nothing to change: give --status, -d, --after, --no-after or --meta")
    with _opened() as opened:
        item = opened.update(id_, _person(name), change, epoch)
    return _told(item, f"is {item.status}")


@board_.command(
    examples=[
        ("Finish an item you hold", "start board done item-3"),
        (
            "With its answer, for the items that wait on it",
            'start board done 3 --answer "Use a jittered backoff"',
        ),
    ],
    epilog=_EPILOG,
)
@_id()
@click.option(
    "--answer",
    metavar="TEXT",
    type=TEXT,
    help="What it was done with: {answers} of the items that wait on it.",
)
@_epoch_option
@_as_option
@common_options
def done(id_: str, answer: str | None, epoch: int | None, name: str | None) -> int:
    """Mark an item completed (yours, or a pending one); refused while it is blocked."""
    with _opened() as opened:
        item = opened.update(id_, _person(name), Change(COMPLETED, answer=answer), epoch)
    return _told(item, "is completed")


@board_.command(
    examples=[
        ("Give up on an item you hold", 'start board fail item-3 --reason "the API is gone"'),
    ],
    epilog=_EPILOG,
)
@_id()
@click.option("--reason", metavar="TEXT", type=TEXT, help="Why it failed.")
@_epoch_option
@_as_option
@common_options
def fail(id_: str, reason: str | None, epoch: int | None, name: str | None) -> int:
    """Mark an item failed (yours, or a pending one); the items waiting on it stay blocked."""
    text = reason if reason is not None else "failed by hand"
    with _opened() as opened:
        item = opened.update(id_, _person(name), Change(FAILED, reason=text), epoch)
    return _told(item, "failed")


@board_.command(
    examples=[
        (
            "Hand item 3 to bob; its old holder's writes are refused from now on",
            "start board reassign item-3 bob",
        ),
    ],
    epilog=_EPILOG,
)
@_id()
@click.argument("new", metavar="NAME")
@_as_option
@common_options
def reassign(id_: str, new: str, name: str | None) -> int:
    """Give an unfinished item to NAME: in progress, held by NAME, the old holder fenced out."""
    target = board.person(new)
    with _opened() as opened:
        item = opened.reassign(id_, target.name, _person(name))
    return _told(item, f"is held by {item.assignee} (epoch {item.epoch})")


@board_.command(
    examples=[
        ("Wait for item 3, then print its answer", "start board watch item-3"),
        ("At most a minute", "start board watch 3 --timeout 60 || echo not yet"),
    ],
    epilog=_EPILOG,
)
@_id()
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Stop waiting after SECONDS (exit 124).",
)
@common_options
def watch(id_: str, timeout: float | None) -> int:
    """Wait until an item is completed (exit 0, its answer on stdout) or failed (exit 1)."""
    options = get_options()

    def told(item: Item) -> None:
        if not options.quiet and not options.json:
            holder = f", held by {item.assignee}" if item.status == "in_progress" else ""
            console.err(f"start: {item.id} is {item.status}{holder}")

    with _opened() as opened:
        item = opened.watch(id_, timeout, told)
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
    return ExitCode.ERROR if item.status == FAILED else ExitCode.TIMED_OUT


@board_.command(
    "run",
    examples=[
        (
            "Run what is ready now and what becomes ready, then stop",
            "start board run --until-empty",
        ),
        ("Keep running items as they are added, until Ctrl-C", "start board run"),
    ],
    epilog="Exit codes: 0 every item run completed; 1 one failed; 5 the project is not trusted; "
    "130 Ctrl-C (the runs are stopped, their items pending again). Docs: start help --topic "
    "board",
)
@click.option("--until-empty", is_flag=True, help="Stop once nothing is ready and nothing runs.")
@click.option(
    "--timeout",
    type=click.IntRange(min=1, max=schema.MAX_TIMEOUT),
    metavar="SECONDS",
    help="Stop each agent after SECONDS (default: settings.print_timeout).",
)
@common_options
def run_(until_empty: bool, timeout: int | None) -> int:
    """Run the items that say what to run, headless, as their dependencies complete.

    Each ready item is claimed for its run before the agent starts, run as --print runs it (at
    most settings.print_agents at once), and finished from the run's evidence: completed with
    the answer and the run's id in the history, or failed with the reason.
    """
    from start.board import runner as boardrun
    from start.runs import rules

    options = get_options()
    config = _trusted_config()
    scope = rules.Scope(options.workdir, not options.no_project, rules.depth())
    runner = boardrun.Runner(
        scope,
        cap=config.settings.print_agents,
        timeout=timeout,
        told=board_views.reporter(no_color=options.no_color, quiet=options.quiet),
    )
    ended = runner.run(until_empty)
    if not runner.claimed and not options.quiet and not options.json:
        console.err(
            "start: no item was ready to run (an item runs once it is ready and says what to "
            "run: start board add TITLE --prompt TEXT)"
        )
    if options.json:
        console.print_json([board.item_data(item) for item in ended])
    if until_empty and not options.quiet:
        with _opened() as opened:
            stuck, _ = opened.items(Filter((PENDING,), blocked=True, runnable=True))
        for item in stuck:
            console.err(f"start: {item.id} stays blocked: {'; '.join(item.blocked)}")
    return ExitCode.ERROR if any(item.status == FAILED for item in ended) else ExitCode.OK


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
