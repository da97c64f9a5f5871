"""`start board export | import`, and the file of `start board add --file`: a board in and out as
files (start.board.transfer reads and checks them; the store writes them in one transaction)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

import click

from start.base import inputs
from start.base.errors import ExitCode, StartError, UsageError
from start.board import Item, item_data
from start.cli.board_options import OK, USAGE, as_option, epilog, open_board, person
from start.cli.commands import Choice, command
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options
from start.cli.state import get_options
from start.config import schema
from start.ui import console

if TYPE_CHECKING:
    from start.board.transfer import Incoming

# What `import --from` names: start's own export, beads' issues.jsonl, Backlog.md's folder.
SOURCES = ("start", "beads", "backlog")


@command(
    examples=[
        ("The whole board as JSON Lines, to keep or to move", "start board export -o board.jsonl"),
        ("Into another project's board", "start board export | start -d ../other board import -"),
    ],
    epilog=epilog(OK, USAGE),
    json=False,
)
@click.option("-o", "--output", metavar="FILE", help="Write to FILE (default: stdout).")
@common_options(DIRECTORY, QUIET)
def export(output: str | None) -> int:
    """Write every item of the board as JSON Lines: a header line naming the format and its
    version, then one item a line (archived and finished ones too), with its dependencies,
    comments and history; docs/board.md has every field."""
    from start.board import transfer

    options = get_options()
    from start.board.rows import Filter

    with open_board(sweep=False) as opened:
        found, _ = opened.items(Filter(archived=None))
        written = [transfer.line(transfer.header())] + [
            transfer.line(transfer.exported(item, opened.comments(item.id), opened.events(item.id)))
            for item in found
        ]
    if output is None or output == "-":
        console.out("".join(written), end="")
    else:
        from start.base import atomic

        try:
            atomic.replace(output, "".join(written).encode("ascii"), mode=0o600)
        except OSError as error:
            raise UsageError(f"cannot write {output}: {error.strerror or error}") from None
    if not options.quiet and output not in (None, "-"):
        console.err(f"start: exported {_items(len(written) - 1)} to {output}")
    return ExitCode.OK


@command(
    "import",
    examples=[
        ("A board that start exported", "start board import board.jsonl"),
        (
            "What beads' issues would become, changing nothing",
            "start board import .beads/issues.jsonl --dry-run",
        ),
        ("Backlog.md's tasks", "start board import backlog"),
    ],
    epilog=epilog(
        "0 ok (each old id -> its new id on stdout)",
        "2 usage, or a line of FILE that cannot be imported (nothing is)",
        "4 a run's agent or task does not exist",
    ),
)
@click.argument("file", metavar="FILE")
@click.option(
    "--from",
    "source",
    type=Choice(SOURCES),
    help="Read FILE as this (default: told by its content; a directory is Backlog.md's).",
)
@click.option("--dry-run", is_flag=True, help="Say what it would create, and change nothing.")
@as_option
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def import_(file: str, source: str | None, dry_run: bool, name: str | None) -> int:
    """Bring the items of FILE onto the board, all in one transaction or none: start's own
    export, beads' issues.jsonl, or Backlog.md's task folder (backlog/tasks/*.md). FILE - is
    stdin.

    Ids are mapped, not trusted: each item gets a new id here, its old one is kept in its
    metadata (imported_from), and the references between the items are rewritten. An item
    that runs something is checked as add checks it; none runs above your level.
    """
    from start.board import transfer

    options = get_options()
    found, source = _read(file, source)
    records = [_with_run(each) for each in transfer.resolved(found, board_ids=False)]
    holder = person(name)
    with open_board() as opened:
        ids = opened.bring(records, holder, source, dry_run=dry_run)
    if options.json:
        console.print_json([_summary(each, new) for each, new in zip(records, ids, strict=True)])
    else:
        for each, new in zip(records, ids, strict=True):
            console.out(f"{_shown(each.key)} -> {new}{_runs(each)}")
    if not options.quiet:
        what = f"{_items(len(ids))} from {file} ({source})"
        console.err(
            f"start: dry run: would import {what}; nothing changed"
            if dry_run
            else f"start: imported {what}"
        )
    return ExitCode.OK


def _read(file: str, source: str | None) -> tuple[list[Any], str]:
    """The lines of FILE, read as `source` (or as its content says), and the source."""
    from start.board import foreign, transfer

    if file != "-" and os.path.isdir(file):
        if source not in (None, "backlog"):
            raise UsageError(f"{file} is a directory: --from {source} reads a file")
        return foreign.read_backlog(file), "backlog"
    if source == "backlog":
        raise UsageError(f"--from backlog reads a directory (backlog/tasks), not {file}")
    stream = _opened(file)
    name = "stdin" if file == "-" else file
    try:
        reader = foreign.Peeked(stream)
        found = source or foreign.detect(reader.first, name)
        if found == "start":
            return transfer.read_start(reader, name), found
        return foreign.read_beads(reader, name), found
    finally:
        if file != "-":
            stream.close()


def _opened(file: str) -> IO[bytes]:
    import sys

    if file == "-":
        return sys.stdin.buffer
    try:
        return open(file, "rb")  # closed by the caller
    except OSError as error:
        raise UsageError(f"cannot read {file}: {error.strerror or error}") from None


def _with_run(each: Incoming) -> Incoming:
    """The record with what it runs as an ask, checked as `add` checks one (start.cli.
    board_options.checked_run): an agent that is not there, a task that is not, a level above what
    is allowed are refused, naming the line."""
    if each.run is None:
        return each
    from start.board.transfer import ImportFileError
    from start.cli.board_options import checked_run
    from start.compose.ask import AGENT, BOARD, USER, Ask

    run: Mapping[str, Any] = each.run

    def field(key: str, most: int = 200) -> str | None:
        value = run.get(key)
        if value is not None and (not isinstance(value, str) or not 1 <= len(value) <= most):
            raise ImportFileError(f"{each.where}: run.{key}: give text of 1 to {most} characters")
        return value

    prompt, task = field("prompt", inputs.TEXT_LIMIT), field("task")
    agents = run.get("agents", [run["agent"]] if run.get("agent") else [])
    if (
        not isinstance(agents, list)
        or len(agents) > 1
        or not all(isinstance(agent, str) and agent for agent in agents)
    ):
        raise ImportFileError(f"{each.where}: run.agents: give at most one agent's name")
    permissions = field("permissions")
    if permissions is not None and permissions not in schema.LEVELS:
        raise ImportFileError(
            f"{each.where}: run.permissions: {inputs.quoted(permissions)}; give one of "
            f"{', '.join(schema.LEVELS)}"
        )
    if (prompt is None) == (task is None):
        raise ImportFileError(f"{each.where}: run: give a prompt or a task, one of them")
    by = AGENT if run.get("by") == AGENT else USER  # an agent's run stays an agent's
    ask = Ask(
        "task" if task is not None else "prompt",
        prompt,
        task,
        agents=tuple(agents),
        model=field("model"),
        headless=True,
        permissions=permissions,
        door=BOARD,
        by=by,
    )
    try:
        return each._replace(run=checked_run(ask, each.description))
    except StartError as error:
        refused = ImportFileError(f"{each.where}: run: {error}")
        refused.exit_code = error.exit_code
        raise refused from None


def _runs(each: Incoming) -> str:
    """What an item runs, as the summary shows it: its agent and permissions."""
    if each.run is None:
        return ""
    ask = each.run
    # The prompt itself (quoted, cut short, escaped): what the person consents to run.
    what = (
        f"task {_shown(ask.task)}"
        if ask.task is not None
        else f"prompt {inputs.quoted(ask.prompt)}"
    )
    agent = _shown(ask.agents[-1]) if ask.agents else "the default agent"
    permissions = ask.permissions or ("the task's" if ask.task is not None else "read-only")
    return f"  runs {what} with {agent} at {permissions}"


def _summary(each: Incoming, new: str) -> dict[str, Any]:
    runs = None
    if each.run is not None:
        ask = each.run
        runs = {
            "agent": ask.agents[-1] if ask.agents else None,
            "prompt": ask.prompt is not None,
            "task": ask.task,
            "permissions": ask.permissions,
        }
    return {"from": each.key, "id": new, "runs": runs}


def _items(count: int) -> str:
    return f"{count:,} item" + ("" if count == 1 else "s")


def _shown(text: str) -> str:
    """A name from a file as one safe line: quoted and escaped unless it is plain."""
    return text if text.isprintable() and " " not in text else inputs.quoted(text)


# --- add --file ---------------------------------------------------------------------------------


def add_file(file: str, name: str | None) -> list[Item]:
    """The items of `add --file FILE` (`-`: stdin), made in one transaction."""
    from start.board import transfer

    stream = _opened(file)
    try:
        found = transfer.read_plan(stream, "stdin" if file == "-" else file)
    finally:
        if file != "-":
            stream.close()
    records = [_with_run(each) for each in transfer.resolved(found, board_ids=True)]
    with open_board() as opened:
        ids = opened.bring(records, person(name), transfer.PLAN)
        return [opened.get(new) for new in ids]


def added(items: Sequence[Item]) -> None:
    """What `add --file` prints: each new id a line (--json: the items)."""
    if get_options().json:
        console.print_json([item_data(item) for item in items])
        return
    for item in items:
        console.out(item.id)
