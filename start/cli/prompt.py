"""`start prompt`: send text to the agent with the required contexts.

Its own module, so that a launch defines the options of the command it runs and no other's.
"""

from __future__ import annotations

import click

from start.cli.options import launch_options
from start.cli.run import ask_of, headless, print_options, run
from start.cli.state import get_options
from start.cli.text import (
    SAFE_FORM,
    TextCommand,
    required_text,
    text_options,
)


@click.command(
    cls=TextCommand,
    epilog=SAFE_FORM,
    examples=[
        ("Ask with the required contexts", 'start prompt "explain the retry logic in client.go"'),
        ("Read the text from stdin", "git log -5 | start prompt -"),
        ("Piped text, then the words", 'git diff | start prompt --print "summarise"'),
        ("Another agent and model", 'start prompt -a gemini -m flash "summarise README.md"'),
    ],
)
@click.argument("words", metavar="TEXT...", nargs=-1)
@text_options
@print_options
@launch_options
def prompt(
    words: tuple[str, ...],
    text_option: str | None,
    text_file: str | None,
    no_stdin: bool,
    print_: bool,
    permissions: str | None,
    timeout: int | None,
    output_dir: str | None,
) -> int:
    """Send TEXT to the agent with the required contexts.

    The words of TEXT are joined by spaces; - reads TEXT from stdin. Text piped to stdin goes
    before the words, a blank line between (--no-stdin leaves it unread).
    """
    options = get_options()
    body = required_text(words, text_option, text_file, no_stdin, options.no_color)
    asked = headless(print_, permissions, timeout, output_dir)
    return run(options, ask_of(options, "prompt", prompt=body, **asked))
