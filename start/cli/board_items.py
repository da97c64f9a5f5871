"""`start board add | claim | update | done | fail | reassign`: making and changing items."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from start import board
from start.base import inputs
from start.base.errors import ExitCode, UsageError
from start.board import COMPLETED, FAILED, NO_PARENT, PENDING, Change, Item, RefusedError
from start.board.rows import Filter
from start.cli import board_sync
from start.cli.board_options import (
    NO_ITEM,
    OK,
    USAGE,
    as_option,
    description_file_option,
    epilog,
    epoch_option,
    item_id,
    metadata,
    open_board,
    person,
    read_text,
    structure_options,
)
from start.cli.board_options import checked_run as _checked
from start.cli.board_options import description as read_description
from start.cli.commands import Choice, command, group
from start.cli.inputs import COMMENT, ITEM_ID, LABEL, TEXT, TITLE
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, F, common_options, completer
from start.cli.state import get_options
from start.config import schema
from start.ui import console

if TYPE_CHECKING:
    from start.board.store import Board
    from start.compose.ask import Ask


def _told(item: Item, what: str) -> int:
    """An item as --json, or one line on stderr (none with -q)."""
    options = get_options()
    if options.json:
        console.print_json(board.item_data(item))
    elif not options.quiet:
        console.err(f"start: {item.id} {what}")
    return ExitCode.OK


def run_options(function: F) -> F:
    """What an item runs: --prompt or --task, -a, -m, --permissions (`add` and `update`)."""
    for option in reversed(
        [
            click.option(
                "--prompt",
                metavar="TEXT",
                type=TEXT,
                help="Run: ask an agent TEXT ({answers}: the answers of the items waited on).",
            ),
            click.option(
                "--task",
                metavar="NAME",
                help="Run: the task NAME, with the description as its instructions.",
                shell_complete=completer("complete_tasks"),
            ),
            click.option(
                "-a",
                "--agent",
                metavar="NAME",
                help="Run it with agent NAME (default: as --print chooses).",
                shell_complete=completer("complete_agents"),
            ),
            click.option("-m", "--model", metavar="MODEL", help="Run it with MODEL."),
            click.option(
                "--permissions",
                type=Choice(schema.LEVELS),
                help="Run it with these permissions (default: the task's, else read-only).",
            ),
        ]
    ):
        function = option(function)
    return function


@command(
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
        (
            "Urgent work, labelled, part of the epic item-1",
            'start board add "Fix the login crash" --priority 0 --label bug --parent 1',
        ),
        ("Many items from a plan, a line each, all or none", "start board add --file plan.jsonl"),
    ],
    epilog=epilog(
        "0 ok (the item's id on stdout)",
        USAGE,
        "4 an item of --after or --parent, the task or the agent does not exist",
    ),
)
@click.argument("title", type=TITLE, required=False)
@click.option(
    "--file",
    metavar="FILE",
    help="Add the items of FILE (-: stdin), one JSON object a line, all or none.",
)
@click.option(
    "-d",
    "--description",
    metavar="TEXT",
    type=TEXT,
    help="What the work is (-: read it from stdin).",
)
@description_file_option
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
@structure_options(update=False)
@run_options
@as_option
@common_options(NO_PROJECT, directory=False)
def add(
    title: str | None,
    file: str | None,
    description: str | None,
    description_file: str | None,
    after: tuple[str, ...],
    meta: tuple[str, ...],
    priority: int,
    labels: tuple[str, ...],
    parent: str | None,
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
    With --file, the items of FILE, each line with these fields of its own.
    """
    options = get_options()
    if file is not None:
        return _add_file(file, name, locals())
    if title is None:
        raise UsageError("give the item's TITLE, or --file FILE for many items")
    text = read_description(description, description_file) or ""
    run = _run_spec(prompt, task, agent, model, permissions, text)
    with open_board() as opened:
        item = opened.create(
            title,
            person(name),
            text,
            after,
            metadata(meta),
            run,
            priority,
            labels,
            parent,
        )
    if options.json:
        console.print_json(board.item_data(item))
    else:
        console.out(item.id)
    return ExitCode.OK


def _add_file(file: str, name: str | None, given: dict[str, object]) -> int:
    """`add --file`: the items of FILE, each with its own fields (docs/board.md, "add --file")."""
    from start.cli import board_transfer

    others = [key for key in ("title", "description", "description_file", "prompt", "task",
              "agent", "model", "permissions", "parent") if given[key] is not None]  # fmt: skip
    others += [key for key in ("after", "meta", "labels") if given[key]]
    if others or given["priority"] != inputs.DEFAULT_PRIORITY:
        shown = (others or ["priority"])[0].replace("_", "-")
        raise UsageError(
            f"--file takes each item's fields from its line: give {shown} there, not beside it"
        )
    board_transfer.added(board_transfer.add_file(file, name))
    return ExitCode.OK


def _run_spec(
    prompt: str | None,
    task: str | None,
    agent: str | None,
    model: str | None,
    permissions: str | None,
    description: str,
) -> Ask | None:
    """What a new item runs, checked (`_checked`)."""
    from start.compose.ask import BOARD, Ask

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
    ask = Ask(
        "task" if task is not None else "prompt",
        prompt,
        task,
        agents=(agent,) if agent is not None else (),
        model=model,
        headless=True,
        permissions=permissions,
        door=BOARD,
    )
    return _checked(ask, description)


def _run_change(
    item: Item,
    prompt: str | None,
    task: str | None,
    agent: str | None,
    model: str | None,
    permissions: str | None,
    description: str | None,
) -> Ask | None:
    """What an item runs after `update`: its run with what is given in its place, checked as
    `add` checks a run (`_checked`); None when nothing of it is given. An item that ran nothing
    gets a run as `add` makes one; an agent's run stays the agent's (docs/board.md)."""
    text = item.description if description is None else description
    given = (prompt, task, agent, model, permissions)
    if all(value is None for value in given):
        return None
    if item.run is None:
        return _run_spec(*given, text)
    if prompt is not None and task is not None:
        raise UsageError("give --prompt or --task, not both")
    ask = item.run
    if prompt is not None:
        ask = ask._replace(mode="prompt", prompt=prompt, task=None)
    elif task is not None:
        ask = ask._replace(mode="task", prompt=None, task=task)
    if agent is not None:
        ask = ask._replace(agents=(agent,))
    return _checked(
        ask._replace(model=model or ask.model, permissions=permissions or ask.permissions), text
    )


@command(
    examples=[
        ("Take item 3", "start board claim item-3"),
        ("Take the first ready item, as a script would", "ID=$(start board claim --next --as ci)"),
        ("The first ready item labelled bug", "start board claim --next --label bug"),
    ],
    epilog=epilog(
        OK,
        "1 lost: another machine's claim was pushed first (board_remote set)",
        USAGE,
        NO_ITEM,
        "75 refused: the item is another's, blocked or finished; with --next, nothing is ready",
    ),
)
@item_id(required=False)
@click.option(
    "--next",
    "next_",
    is_flag=True,
    help="Claim the first ready item: the highest priority, then the oldest.",
)
@click.option(
    "--label",
    "labels",
    type=LABEL,
    multiple=True,
    metavar="NAME",
    help="With --next: only an item labelled NAME; repeatable (all of them).",
)
@as_option
@common_options(DIRECTORY, QUIET)
def claim(id_: str | None, next_: bool, labels: tuple[str, ...], name: str | None) -> int:
    """Take an item: it is in progress and yours; its id goes to stdout.

    Refused (exit 75) when it is another's, blocked or finished, or with --next when nothing is
    ready. Claiming an item you hold again changes nothing.
    """
    if (id_ is None) == (not next_):
        raise UsageError("give an item ID or --next")
    if labels and not next_:
        raise UsageError("--label goes with --next (an ID names the item itself)")
    options = get_options()
    holder = person(name)
    with open_board() as opened:
        if id_ is not None:
            item = opened.claim(id_, holder)
        else:
            found = opened.claim_next(holder, labels=labels)
            if found is None:
                _, waiting = opened.items(Filter((PENDING,), labels=labels), limit=0)
                found_blocked = Filter((PENDING,), blocked=True, labels=labels)
                _, blocked = opened.items(found_blocked, limit=0)
                labelled = f" labelled {', '.join(labels)}" if labels else ""
                why = "each blocked"
                if blocked != waiting:  # a pending item not blocked is a workflow run's
                    why = (
                        f"{blocked} blocked, the rest a workflow run's (start workflow resume "
                        "ID runs its steps)"
                    )
                raise RefusedError(
                    f"nothing{labelled} is ready to claim on the board of {opened.root}: "
                    + (
                        f"{waiting} pending item(s){labelled}, {why}"
                        if waiting
                        else f"no item{labelled} is pending"
                    )
                )
            item = found
        # With board_remote set the claim is pushed now: confirmed, lost (exit 1), or kept
        # here unconfirmed when the remote is out of reach.
        item, confirmed = board_sync.claimed(opened, item, holder.name)
    if options.json:
        data = board.item_data(item)
        console.print_json(data if confirmed is None else data | {"confirmed": confirmed})
    else:
        console.out(item.id)
        if not options.quiet:
            title = console.printable(item.title)
            console.err(f"start: {item.id} is yours, {holder.name} (epoch {item.epoch}): {title}")
    return ExitCode.OK


@command(
    examples=[
        (
            "Merge metadata (null deletes a key)",
            "start board update item-3 --meta priority=1 --meta owner=null",
        ),
        ("Wait for other items instead", "start board update 4 --after 2 --after 3"),
        ("Make it urgent, and part of item-1", "start board update 4 --priority 0 --parent 1"),
        ("Relabel it", "start board update 4 --label ui --unlabel backend"),
        ("Run it with another agent", "start board update item-3 -a codex -m gpt-5"),
        (
            "Reopen a failed item with another agent",
            "start board update 5 --status pending -a claude",
        ),
        ("Let go of an item you hold", "start board update item-3 --status pending"),
        ("Reopen a failed item", "start board update item-5 --status pending"),
    ],
    epilog=epilog(
        OK,
        "2 usage, or a change no state allows (waiting on itself or in a cycle)",
        "4 no such item (or in --after), or the task or the agent does not exist",
        "75 refused: the item is another's, finished or (to complete it) blocked, or was "
        "reassigned since --epoch",
    ),
)
@item_id()
@click.option(
    "--status",
    type=Choice((PENDING, COMPLETED, FAILED)),
    help="The new status (in_progress comes from a claim).",
)
@click.option("--title", metavar="TEXT", type=TITLE, help="The new title.")
@click.option(
    "-d",
    "--description",
    metavar="TEXT",
    type=TEXT,
    help="The new description (-: read it from stdin).",
)
@description_file_option
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
@structure_options(update=True)
@click.option("--answer", metavar="TEXT", type=TEXT, help="With --status completed: the answer.")
@click.option("--reason", metavar="TEXT", type=TEXT, help="With --status failed: why.")
@run_options
@epoch_option
@as_option
@common_options(QUIET, NO_PROJECT, directory=False)
def update(
    id_: str,
    status: str | None,
    title: str | None,
    description: str | None,
    description_file: str | None,
    after: tuple[str, ...],
    no_after: bool,
    meta: tuple[str, ...],
    priority: int | None,
    labels: tuple[str, ...],
    parent: str | None,
    unlabels: tuple[str, ...],
    no_parent: bool,
    answer: str | None,
    reason: str | None,
    prompt: str | None,
    task: str | None,
    agent: str | None,
    model: str | None,
    permissions: str | None,
    epoch: int | None,
    name: str | None,
) -> int:
    """Change an item: its status, title, description, what it runs, dependencies or metadata.

    An item in progress changes only by its holder; a completed one only in its metadata; an
    item cannot complete while blocked. What it runs is checked as add checks it; -a, -m and
    --permissions alone change only that of its run.
    """
    if after and no_after:
        raise UsageError("give --after or --no-after, not both")
    if parent is not None and no_parent:
        raise UsageError("give --parent or --no-parent, not both")
    if answer is not None and status != COMPLETED:
        raise UsageError("--answer goes with --status completed")
    if reason is not None and status != FAILED:
        raise UsageError("--reason goes with --status failed")
    text = read_description(description, description_file)
    change = Change(
        status,
        text,
        () if no_after else (after or None),
        metadata(meta),
        answer,
        reason,
        title=title,
        priority=priority,
        add_labels=labels or None,
        remove_labels=unlabels or None,
        parent=NO_PARENT if no_parent else parent,
    )
    runs = (prompt, task, agent, model, permissions)
    if change == Change() and all(value is None for value in runs):
        raise UsageError(
            "nothing to change: give --status, --title, -d, --after, --no-after, --meta, "
            "--priority, --label, --unlabel, --parent, --no-parent, or what it runs (--prompt, "
            "--task, -a, -m, --permissions)"
        )
    with open_board() as opened:
        if any(value is not None for value in runs):
            run = _run_change(opened.get(id_), *runs, text)
            change = change._replace(run=run)
        item = opened.update(id_, person(name), change, epoch)
        said = _completed(opened, item) if status == COMPLETED else f"is {item.status}"
        if status is not None:  # a change of status (a finish, a release): pushed now
            board_sync.pushed(opened, item)
    return _told(item, said)


@command(
    examples=[
        ("Finish an item you hold", "start board done item-3"),
        (
            "With its answer, for the items that wait on it",
            'start board done 3 --answer "Use a jittered backoff"',
        ),
    ],
    epilog=epilog(
        OK,
        USAGE,
        NO_ITEM,
        "75 refused: the item is another's, blocked or finished, or was reassigned since --epoch",
    ),
)
@item_id()
@click.option(
    "--answer",
    metavar="TEXT",
    type=TEXT,
    help="What it was done with: {answers} of the items that wait on it.",
)
@epoch_option
@as_option
@common_options(DIRECTORY, QUIET)
def done(id_: str, answer: str | None, epoch: int | None, name: str | None) -> int:
    """Mark an item completed (yours, or a pending one); refused while it is blocked.

    Says which items it unblocked: those that waited for it and are ready now."""
    with open_board() as opened:
        item = opened.update(id_, person(name), Change(COMPLETED, answer=answer), epoch)
        said = _completed(opened, item)
        board_sync.pushed(opened, item)
    return _told(item, said)


def _completed(opened: Board, item: Item) -> str:
    """What `done` and `update --status completed` say of the item: that it is completed, and
    which items it unblocked (those that waited on it and are ready now)."""
    freed, _ = opened.items(Filter(ready=True, waiting_on=item.id))
    return "is completed" + (f"; unblocked {', '.join(i.id for i in freed)}" if freed else "")


@command(
    examples=[
        ("Give up on an item you hold", 'start board fail item-3 --reason "the API is gone"'),
    ],
    epilog=epilog(
        OK,
        USAGE,
        NO_ITEM,
        "75 refused: the item is another's or finished, or was reassigned since --epoch",
    ),
)
@item_id()
@click.option("--reason", metavar="TEXT", type=TEXT, help="Why it failed.")
@epoch_option
@as_option
@common_options(DIRECTORY, QUIET)
def fail(id_: str, reason: str | None, epoch: int | None, name: str | None) -> int:
    """Mark an item failed (yours, or a pending one); the items waiting on it stay blocked."""
    text = reason if reason is not None else "failed by hand"
    with open_board() as opened:
        item = opened.update(id_, person(name), Change(FAILED, reason=text), epoch)
        board_sync.pushed(opened, item)
    return _told(item, "failed")


@command(
    examples=[
        (
            "Hand item 3 to bob; its old holder's writes are refused from now on",
            "start board reassign item-3 bob",
        ),
    ],
    epilog=epilog(OK, USAGE, NO_ITEM, "75 refused: the item is blocked or finished"),
)
@item_id()
@click.argument("new", metavar="NAME")
@as_option
@common_options(DIRECTORY, QUIET)
def reassign(id_: str, new: str, name: str | None) -> int:
    """Give an unfinished item to NAME: in progress, held by NAME, the old holder fenced out."""
    target = board.person(new)
    with open_board() as opened:
        item = opened.reassign(id_, target.name, person(name))
        board_sync.pushed(opened, item)
    return _told(item, f"is held by {item.assignee} (epoch {item.epoch})")


@group(
    examples=[
        ("item-4 waits for item-2 too", "start board dep add item-4 item-2"),
        ("and no longer for item-3", "start board dep rm 4 3"),
    ],
    epilog=epilog(OK, "2 usage, or a cycle", NO_ITEM, "75 refused: the item is another's"),
)
@common_options()
def dep() -> None:
    """Add or remove what an item waits for, one dependency at a time (update --after
    replaces the whole list)."""


# The arguments of `dep add` and `dep rm`: the item, and the items it waits for.
_blockers = click.argument(
    "blockers",
    metavar="BLOCKER...",
    nargs=-1,
    required=True,
    type=ITEM_ID,
    shell_complete=completer("complete_items"),
)


@dep.command(
    "add",
    examples=[("item-4 waits for item-2 and item-3 too", "start board dep add 4 2 3")],
    epilog=epilog(
        OK,
        "2 usage, or a cycle (a BLOCKER waits on ID)",
        "4 no such item",
        "75 refused: the item is another's or finished",
    ),
)
@item_id()
@_blockers
@epoch_option
@as_option
@common_options(DIRECTORY, QUIET)
def dep_add(id_: str, blockers: tuple[str, ...], epoch: int | None, name: str | None) -> int:
    """Make item ID wait for each BLOCKER too (one it waits for already stays as it is)."""
    with open_board() as opened:
        item = opened.update(id_, person(name), Change(add_blocked_by=blockers), epoch)
    return _told(item, _waits(item))


@dep.command(
    "rm",
    examples=[("item-4 no longer waits for item-2", "start board dep rm item-4 item-2")],
    epilog=epilog(
        OK,
        "2 usage, or ID does not wait for a BLOCKER",
        NO_ITEM,
        "75 refused: the item is another's or finished",
    ),
)
@item_id()
@_blockers
@epoch_option
@as_option
@common_options(DIRECTORY, QUIET)
def dep_rm(id_: str, blockers: tuple[str, ...], epoch: int | None, name: str | None) -> int:
    """Make item ID no longer wait for each BLOCKER."""
    with open_board() as opened:
        item = opened.update(id_, person(name), Change(remove_blocked_by=blockers), epoch)
    return _told(item, _waits(item))


@command(
    examples=[
        ("A note on item 3, for people and agents", 'start board comment 3 "Repro: run it twice"'),
        ("A longer one, from a command's output", "git log -3 | start board comment 3 -"),
        ("From a file", "start board comment 3 --file notes.md --as ci"),
    ],
    epilog=epilog(OK, USAGE, NO_ITEM),
)
@item_id()
@click.argument("text", metavar="TEXT", type=COMMENT, required=False)
@click.option(
    "--file",
    metavar="FILE",
    help="The comment: the text of FILE (TEXT - reads stdin).",
)
@as_option
@common_options(DIRECTORY, QUIET)
def comment(id_: str, text: str | None, file: str | None, name: str | None) -> int:
    """Add a comment to an item: kept with its author and time, never changed, shown by show.

    Anyone may comment on any item, held, finished or archived: a comment changes nothing the
    item runs, and never reaches its run. TEXT - reads the comment from stdin.
    """
    if text is None and file is None:
        raise UsageError("give the comment: TEXT (- reads stdin) or --file FILE")
    said = read_text(text, file, ("TEXT", "--file"), least=1)
    assert said is not None
    options = get_options()
    with open_board() as opened:
        kept = opened.comment(id_, person(name), said)
        id_ = opened.shown(id_)
    if options.json:
        console.print_json({"item": id_, **board.comment_data(kept)})
    elif not options.quiet:
        console.err(f"start: {id_}: comment added by {kept.author}")
    return ExitCode.OK


def _waits(item: Item) -> str:
    return f"waits for {', '.join(item.blocked_by)}" if item.blocked_by else "waits for nothing"


def register(group_: click.Group) -> None:
    """Add the commands that make and change items to the `board` group."""
    for each in (add, claim, update, done, fail, reassign, comment, dep):
        group_.add_command(each)
