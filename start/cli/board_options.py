"""What the `start board` commands take: the ID argument, --as, --epoch, --meta, their board,
and the epilog of their help."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from start import board
from start.base import inputs
from start.base.errors import UsageError
from start.board import Holder
from start.board import file as boardfile
from start.board.store import Board
from start.cli.inputs import ITEM_ID, count
from start.cli.options import F, completer
from start.cli.state import get_options

if TYPE_CHECKING:
    from start.compose.ask import Ask

# The exit codes that most board commands share (docs/board.md has them all).
OK, USAGE, NO_ITEM = "0 ok", "2 usage", "4 no such item"


def epilog(*codes: str) -> str:
    """A board command's epilog: its own exit codes ("CODE what it means"), then its docs."""
    import textwrap

    # A code stays on the line of the first word of its meaning (NUL holds them together).
    text = "Exit codes: " + "; ".join(code.replace(" ", "\0", 1) for code in codes) + "."
    lines = textwrap.wrap(text, 79, break_on_hyphens=False)
    return "\n".join(
        [*(line.replace("\0", " ") for line in lines), "", "Docs: start help --topic board"]
    )


def item_id(required: bool = True) -> Callable[[F], F]:
    """The ID argument, completed by the shell with the board's ids."""
    return click.argument(
        "id_",
        metavar="ID",
        type=ITEM_ID,
        required=required,
        shell_complete=completer("complete_items"),
    )


def as_option(function: F) -> F:
    return click.option(
        "--as",
        "name",
        metavar="NAME",
        help="Act as NAME (default: your login name). Agents get their own identity from start "
        "mcp and start board run.",
    )(function)


def epoch_option(function: F) -> F:
    return click.option(
        "--epoch",
        type=count(),
        metavar="N",
        help="The epoch your claim got: refused if the item was reassigned since.",
    )(function)


def structure_options(*, update: bool) -> Callable[[F], F]:
    """An item's priority, labels and parent (`add` and `update`; `update` removes them too)."""
    from start.cli.inputs import LABEL, PRIORITY

    options = [
        click.option(
            "--priority",
            type=PRIORITY,
            default=None if update else inputs.DEFAULT_PRIORITY,
            show_default=not update,
            metavar="0-4",
            help="Its priority: 0 the highest, 4 the lowest; the ready go by it, then by age.",
        ),
        click.option(
            "--label",
            "labels",
            type=LABEL,
            multiple=True,
            metavar="NAME",
            help="Add the label NAME; repeatable.",
        ),
        click.option(
            "--parent",
            type=ITEM_ID,
            metavar="ID",
            help="Make it part of item ID (an epic).",
            shell_complete=completer("complete_items"),
        ),
    ]
    if update:  # each beside what it undoes
        options.insert(
            2,
            click.option(
                "--unlabel",
                "unlabels",
                type=LABEL,
                multiple=True,
                metavar="NAME",
                help="Remove the label NAME; repeatable.",
            ),
        )
        options.append(click.option("--no-parent", is_flag=True, help="Make it part of no item."))

    def decorate(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def person(name: str | None) -> Holder:
    return board.person(name if name is not None else board.login())


@contextmanager
def open_board(sweep: bool = True) -> Iterator[Board]:
    with boardfile.opened(get_options().workdir, sweep=sweep) as opened:
        yield opened


def description_file_option(function: F) -> F:
    return click.option(
        "--description-file",
        metavar="FILE",
        help="The description: the text of FILE (-d - reads stdin).",
    )(function)


def description(given: str | None, file: str | None) -> str | None:
    """The description `-d TEXT` gives, or `-d -` (stdin, to its end) or `--description-file
    FILE` (a file): `read_text`'s."""
    return read_text(given, file, ("-d", "--description-file"))


def read_text(
    given: str | None, file: str | None, flags: tuple[str, str], *, least: int = 0
) -> str | None:
    """The text `given` on the command line, or `-` (stdin, to its end) or a FILE (`flags`: the
    names of the two, for the errors): text longer than a command line's argument may be (128
    KiB), of `least` characters up to the text's limit, with bytes that are not UTF-8 as U+FFFD."""
    from start.base import fs

    if file is not None and given is not None:
        raise UsageError(f"give {flags[0]} or {flags[1]}, not both")
    if file is None and given != "-":
        return given
    # Up to four bytes a character: enough bytes for the longest text the limit allows, and one.
    most = 4 * inputs.TEXT_LIMIT + 1
    if file is None:
        import sys

        data = sys.stdin.buffer.read(most)
        where = f"{flags[0]} - (stdin)"
    else:
        data = fs.read(file, most).data
        where = f"{flags[1]} {file}"
    try:
        return inputs.text(fs.text(data), inputs.TEXT_LIMIT, least=least)
    except inputs.InputError as error:
        raise UsageError(f"{where}: {error}") from None


def metadata(words: tuple[str, ...]) -> dict[str, Any] | None:
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


def checked_run(ask: Ask, description: str) -> Ask:
    """An item's run, its agent and task checked against the config (names only: nothing is
    read from an untrusted project but its names); an agent's run (made over MCP) also as the
    ask rules hold an agent's (start.runs.rules.vet: an agent that can be asked, on PATH, a
    level within settings.mcp_permissions), as when it was made and before it runs."""
    from start.base.errors import UnknownNameError
    from start.board import runner as boardrun
    from start.compose import resolve
    from start.config.load import load
    from start.runs import rules

    options = get_options()
    config = load(options.workdir, use_project=not options.no_project)
    if ask.task is not None:
        ask = ask._replace(task=resolve.find_task(config.tasks, ask.task).name)
    if ask.agent is not None and ask.agent not in config.agents:
        raise UnknownNameError("agent", ask.agent, config.agents)
    scope = rules.Scope(options.workdir, not options.no_project, rules.depth())
    text = ask.prompt if ask.prompt is not None else description
    rules.vet(scope, boardrun.with_text(ask, text))
    return ask
