"""The user's text of `start prompt`, `start task` and `start continue`: exactly one of the words,
--instructions=TEXT or -i FILE (- reads stdin), after any text piped to stdin (start.ui.piped), and
the safe form that scripts use for text that starts with '-'."""

from __future__ import annotations

import sys

import click

from start.base import fs
from start.base.errors import UsageError
from start.cli.commands import Command, HintedUsageError
from start.cli.options import F
from start.ui import console

# Text read with -i FILE or -i - (and `start prompt -`) is capped, so memory stays bounded.
TEXT_LIMIT = 16 * 1_048_576

SAFE_FORM = """
\b
Words that look like options are read as options. In scripts, and for text that
starts with '-', pass the text with --instructions=TEXT (one argument, the '='
form) or -i FILE (- reads stdin). That text arrives exactly and never changes
start's own options:
  start task gdr --instructions="$TEXT"
  printf '%s' "$TEXT" | start task gdr -i -
  start prompt --instructions="$TEXT"

Docs: start help usage
"""


class TextCommand(Command):
    """A command taking free text: an unknown option names the safe form for text."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as error:
            if error.possibilities:  # a typo of a real option: "did you mean" is enough
                raise
            hint = "to send text that starts with '-', use --instructions=TEXT or -i FILE"
            raise HintedUsageError(f"no such option '{error.option_name}'", ctx, [hint]) from None


def text_options(function: F) -> F:
    function = click.option(
        "--no-stdin",
        is_flag=True,
        help="Leave stdin unread (by default, text piped in goes before the words).",
    )(function)
    function = click.option(
        "-i",
        "--instructions-file",
        "text_file",
        metavar="FILE",
        help="Read the text from FILE, exactly; - reads stdin.",
    )(function)
    function = click.option(
        "--instructions",
        "text_option",
        metavar="TEXT",
        help="The text as one argument, exactly; never read as an option. "
        'Scripts: --instructions="$TEXT".',
    )(function)
    return function


def _read_text(name: str) -> str:
    """The text of FILE, or of stdin for -, by the one text rule."""
    if name == "-":
        from start.ui import piped

        data = sys.stdin.buffer.read(TEXT_LIMIT + 1)
        return fs.text(piped.capped([data], len(data), TEXT_LIMIT))
    try:
        read = fs.read(name, TEXT_LIMIT)
    except fs.FileError as error:
        raise UsageError(f"cannot read the text from {error}") from None
    if read.truncated:
        raise UsageError(f"{name}: the text is larger than {TEXT_LIMIT:,} bytes")
    return fs.text(read.data)


def user_text(words: tuple[str, ...], option: str | None, file: str | None) -> str | None:
    """The user's text from exactly one of: words, --instructions, -i FILE; None if none."""
    given = [
        what
        for what, value in (("words", words or None), ("--instructions", option), ("-i", file))
        if value is not None
    ]
    if len(given) > 1:
        raise UsageError(
            "give the text one way: as words, with --instructions=TEXT, or with -i FILE"
        )
    if file is not None:
        return _read_text(file)
    if option is not None:
        return fs.arg_text(option)
    if words:
        return " ".join(fs.arg_text(word) for word in words)
    return None


def with_piped(text: str | None, file: str | None, no_stdin: bool, no_color: bool) -> str | None:
    """The user's text after what is piped to stdin (start.ui.piped); not with --no-stdin, nor when
    the text itself comes from stdin (-i -, `start prompt -`)."""
    if file == "-":
        if no_stdin:
            raise UsageError("--no-stdin leaves stdin unread, but -i - reads the text from it")
        return text
    if no_stdin:
        return text
    from start.ui import piped

    found = piped.read(sys.stdin.buffer if sys.stdin is not None else None, TEXT_LIMIT)
    if found.note is not None:
        console.warning(found.note, no_color=no_color)
    data = fs.text(found.data) if found.data is not None else ""
    return piped.join(data, text) if data.strip() else text


def required_text(
    words: tuple[str, ...], option: str | None, file: str | None, no_stdin: bool, no_color: bool
) -> str:
    """The TEXT of `start prompt` and `start continue`: `-` alone reads it from stdin; else the
    words, --instructions or -i FILE, after any piped text. UsageError when there is none."""
    if words == ("-",) and option is None and file is None:
        words, file = (), "-"
    text = with_piped(user_text(words, option, file), file, no_stdin, no_color)
    if text is None:
        raise UsageError("missing argument TEXT (or --instructions=TEXT, or -i FILE)")
    return text
