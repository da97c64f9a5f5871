"""`start help [COMMAND... | TOPIC]`: a command's help, or a docs page read offline."""

from __future__ import annotations

import os
from typing import Any

import click

from start.base.errors import ExitCode, StartError, UsageError, suggest
from start.cli import TOPICS
from start.cli.commands import command
from start.cli.options import DIRECTORY, NO_PROJECT, common_options, printer
from start.cli.state import get_options
from start.ui import console


def docs_dir() -> str:
    """The docs: inside the wheel as `start/_docs`, else the source checkout's `docs/`."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    packaged = os.path.join(here, "_docs")
    return packaged if os.path.isdir(packaged) else os.path.join(os.path.dirname(here), "docs")


def _complete_words(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """The next word: a subcommand of the words so far, or, first, a topic too."""
    from click.shell_completion import CompletionItem

    from start.cli.commands import summary

    words = tuple(ctx.params.get("words") or ())
    topics = [] if words else [(name, f"docs/{name}.md") for name in TOPICS]
    target: click.Command | None = ctx.find_root().command
    if ctx.params.get("topic"):
        target = None
    for word in words:
        if not isinstance(target, click.Group):
            return []
        target = target.get_command(ctx, word)
    commands: list[tuple[str, str]] = []
    if isinstance(target, click.Group):
        for name in target.list_commands(ctx):
            found = target.get_command(ctx, name)
            if found is not None and not found.hidden:
                commands.append((name, summary(found)))
    offered = dict([*topics, *commands])  # a command's summary wins over its topic's file
    return [
        CompletionItem(name, help=text)
        for name, text in sorted(offered.items())
        if name.startswith(incomplete)
    ]


@command(
    "help",
    json=False,
    examples=[
        ("The commands and flags", "start help"),
        ("One command", "start help config show"),
        ("The placeholders page of the docs, offline", "start help placeholders"),
    ],
)
@click.argument("words", nargs=-1, metavar="[COMMAND... | TOPIC]", shell_complete=_complete_words)
@click.option("--no-pager", is_flag=True, help="Print a topic instead of paging it.")
@click.option(
    "--topic",
    is_flag=True,
    help="Read the word as a topic even when it is a command (completion, mcp).",
)
@common_options(DIRECTORY, NO_PROJECT)
@click.pass_context
def help_(ctx: click.Context, words: tuple[str, ...], no_pager: bool, topic: bool) -> int:
    """Show help for a command, or a page of the docs.

    COMMAND is any command or subcommand (start help config show); TOPIC is a page of the docs,
    shown offline and named as its file: usage, configuration, placeholders, agents, interop,
    setup, editing, completion, security, performance, benchmark-results, mcp, board,
    board-sync-design, ci, architecture, workflows or workflows-design.
    completion, mcp and board are commands too: start help --topic mcp shows the page.
    """
    if topic:
        if len(words) != 1:
            raise UsageError("--topic takes one TOPIC")
        if words[0] not in TOPICS:
            raise _unknown_topic(words[0])
        return _topic(words[0], no_pager=no_pager)
    root = ctx.find_root()
    target: click.Command = root.command
    target_ctx = root
    for index, word in enumerate(words):
        found = None
        if isinstance(target, click.Group):
            found = target.get_command(target_ctx, word)
        if found is None:
            if index == 0 and word in TOPICS:
                return _topic(word, no_pager=no_pager)
            error = _unknown(target, target_ctx, words[: index + 1])
            if len(words) == 1:
                named = _items_named(word)
                if named:
                    error = UsageError(f"no such command or help topic '{word}'; {named}")
            raise error
        # The command's own context class, as a real run builds it: its formatter is start's.
        target_ctx = found.context_class(found, info_name=word, parent=target_ctx)
        target = found
    printer("stdout").block(target.get_help(target_ctx))
    return ExitCode.OK


def _unknown_topic(word: str) -> UsageError:
    close = suggest(word, TOPICS)
    if close:
        return UsageError(f"no such help topic '{word}'; did you mean '{close}'?")
    return UsageError(f"no such help topic '{word}'; topics: {', '.join(TOPICS)}")


def _unknown(group: click.Command, ctx: click.Context, words: tuple[str, ...]) -> UsageError:
    known = list(group.list_commands(ctx)) if isinstance(group, click.Group) else []
    if len(words) == 1:
        known += list(TOPICS)
    what = "command or help topic" if len(words) == 1 else "command"
    message = f"no such {what} '{' '.join(words)}'"
    close = suggest(words[-1], known)
    if close:
        return UsageError(f"{message}; did you mean '{close}'?")
    return UsageError(f"{message}; topics: {', '.join(TOPICS)}" if len(words) == 1 else message)


def _items_named(word: str) -> str | None:
    """What `start help gdr` meant when `gdr` is a task (name or alias), a role, an agent or a
    context: where to read about it. None when no item has that name."""
    from start.config import schema
    from start.config.load import load

    options = get_options()
    try:
        config = load(options.workdir, use_project=not options.no_project)
    except StartError:
        return None  # an error path: the config's own errors are for the commands that use it
    found = [
        (schema.KIND_OF[section], word)
        for section in schema.ITEM_SECTIONS
        if word in getattr(config, section)
    ]
    aliased = [t.name for t in config.tasks.values() if t.alias == word and t.name != word]
    found += [("task", name) for name in aliased]
    if not found:
        return None
    if len(found) == 1:
        kind, name = found[0]
        article = "an" if kind == "agent" else "a"
        what = f"the {kind} {name}" if name != word else f"{article} {kind}"
        return f"'{word}' names {what}: 'start show {word}' shows it"
    shows = ", ".join(f"'start show {kind} {name}'" for kind, name in found)
    return f"'{word}' names several items: {shows}"


def _topic(name: str, *, no_pager: bool) -> int:
    """The page as Markdown through the pager on a terminal; as plain text otherwise."""
    path = os.path.join(docs_dir(), f"{name}.md")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise UsageError(f"the docs page {path} is missing: {error.strerror}") from error
    if console.is_tty():
        from start.ui import display

        page = display.Page()
        page.markdown(text)
        page.show(no_color=get_options().no_color, pager=not no_pager)
    else:
        printer("stdout").block(text.rstrip("\n"))
    return ExitCode.OK
