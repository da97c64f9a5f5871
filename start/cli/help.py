"""`start help [COMMAND... | TOPIC]`: a command's help, or a docs page read offline."""

from __future__ import annotations

import os

import click

from start import console
from start.cli.commands import command
from start.cli.options import common_options, printer
from start.cli.state import get_options
from start.errors import ExitCode, UsageError, suggest

# Topic name -> docs page. `completion` is a command, so its page is `shell-completion`.
PAGES = {
    "usage": "usage.md",
    "configuration": "configuration.md",
    "placeholders": "placeholders.md",
    "agents": "agents.md",
    "interop": "interop.md",
    "setup": "setup.md",
    "editing": "editing.md",
    "shell-completion": "completion.md",
    "security": "security.md",
    "performance": "performance.md",
    "benchmarks": "benchmark-results.md",
    "mcp-server": "mcp.md",
}


def docs_dir() -> str:
    """The docs: inside the wheel as `start/_docs`, else the source checkout's `docs/`."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    packaged = os.path.join(here, "_docs")
    return packaged if os.path.isdir(packaged) else os.path.join(os.path.dirname(here), "docs")


@command(
    "help",
    json=False,
    examples=[
        ("The commands and flags", "start help"),
        ("One command", "start help config show"),
        ("The placeholders page of the docs, offline", "start help placeholders"),
    ],
)
@click.argument("words", nargs=-1, metavar="[COMMAND... | TOPIC]")
@click.option("--no-pager", is_flag=True, help="Print a topic instead of paging it.")
@common_options
@click.pass_context
def help_(ctx: click.Context, words: tuple[str, ...], no_pager: bool) -> int:
    """Show help for a command, or a page of the docs.

    COMMAND is any command or subcommand (start help config show); TOPIC is a docs page, shown
    offline: usage, configuration, placeholders, agents, interop, setup, editing, shell-completion,
    security or performance.
    """
    root = ctx.find_root()
    target: click.Command = root.command
    target_ctx = root
    for index, word in enumerate(words):
        found = None
        if isinstance(target, click.Group):
            found = target.get_command(target_ctx, word)
        if found is None:
            if index == 0 and word in PAGES:
                return _topic(word, no_pager=no_pager)
            raise _unknown(target, target_ctx, words[: index + 1])
        target_ctx = click.Context(found, info_name=word, parent=target_ctx)
        target = found
    text = target.get_help(target_ctx)
    if not words:
        text += "\n\nHelp topics:\n" + "\n".join(
            f"  start help {name:<18} docs/{page}" for name, page in PAGES.items()
        )
    printer("stdout").block(text)
    return ExitCode.OK


def _unknown(group: click.Command, ctx: click.Context, words: tuple[str, ...]) -> UsageError:
    known = list(group.list_commands(ctx)) if isinstance(group, click.Group) else []
    if len(words) == 1:
        known += list(PAGES)
    what = "command or help topic" if len(words) == 1 else "command"
    message = f"no such {what} '{' '.join(words)}'"
    close = suggest(words[-1], known)
    if close:
        return UsageError(f"{message}; did you mean '{close}'?")
    return UsageError(f"{message}; topics: {', '.join(PAGES)}" if len(words) == 1 else message)


def _topic(name: str, *, no_pager: bool) -> int:
    """The page as Markdown through the pager on a terminal; as plain text otherwise."""
    path = os.path.join(docs_dir(), PAGES[name])
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise UsageError(f"the docs page {path} is missing: {error.strerror}") from error
    if console.is_tty():
        page = console.Page()
        page.markdown(text)
        page.show(no_color=get_options().no_color, pager=not no_pager)
    else:
        printer("stdout").block(text.rstrip("\n"))
    return ExitCode.OK
