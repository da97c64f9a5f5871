"""Terminal output: the one module that writes to the terminal and the only importer of rich."""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# Unicode categories that can hide or reorder text on a terminal: controls, bidi and zero-width
# format characters, line separators, surrogates (undecodable file names) and private use.
_HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co"}


def printable(text: str, *, multiline: bool = False) -> str:
    """Text with every character that could disguise it on a terminal shown as an escape."""
    import unicodedata

    out = []
    for char in text:
        if char == "\t" or (multiline and char == "\n"):
            out.append(char)
        elif unicodedata.category(char) in _HIDDEN:
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    return "".join(out)


_COLORS = {
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
    "bold": "1",
    "dim": "2",
}


def color_enabled(stream: IO[str], no_color: bool = False) -> bool:
    """Colour only on a terminal, and never with `--no-color`, `NO_COLOR` or `TERM=dumb`."""
    if no_color or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Printer:
    """Plain, fast output with optional ANSI colour; used on the launch path instead of rich."""

    def __init__(self, stream: IO[str] | None = None, *, no_color: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.color = color_enabled(self.stream, no_color)

    def style(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        codes = ";".join(_COLORS[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def line(self, text: str = "") -> None:
        self.stream.write(text + "\n")

    def flush(self) -> None:
        self.stream.flush()


def out(text: str = "", *, end: str = "\n") -> None:
    """Write data to stdout."""
    sys.stdout.write(text + end)


def err(text: str = "") -> None:
    """Write a human message to stderr."""
    sys.stderr.write(text + "\n")


def rich_console(*, stderr: bool = False, no_color: bool = False) -> Console:
    """A rich Console made per run, so NO_COLOR and test capture work; prompts hold [brackets]."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(
        file=stream,
        markup=False,
        emoji=False,
        highlight=False,
        no_color=not color_enabled(stream, no_color),
        soft_wrap=True,
    )


def is_tty(stream: IO[str] | None = None) -> bool:
    isatty = getattr(stream if stream is not None else sys.stdout, "isatty", None)
    return bool(isatty and isatty())


def print_table(
    headers: list[str], rows: list[list[str]], *, no_color: bool = False, title: str | None = None
) -> None:
    """A table on stdout: rich on a terminal, tab-free aligned plain text otherwise."""
    if is_tty(sys.stdout):
        from rich.table import Table

        table = Table(title=title, show_edge=False, pad_edge=False, box=None, header_style="bold")
        for header in headers:
            table.add_column(header, overflow="fold")
        for row in rows:
            table.add_row(*row)
        rich_console(no_color=no_color).print(table)
        return
    if title:
        out(title)
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    out("  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in rows:
        out("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def print_syntax(text: str, lexer: str, *, no_color: bool = False) -> None:
    """Highlighted source on a terminal, the plain text otherwise."""
    if is_tty(sys.stdout) and color_enabled(sys.stdout, no_color):
        from rich.syntax import Syntax

        rich_console(no_color=no_color).print(Syntax(text, lexer, word_wrap=True))
        return
    out(text, end="" if text.endswith("\n") else "\n")


def print_json(data: Any) -> None:
    import json

    out(json.dumps(data, indent=2, ensure_ascii=False))


class StatusLine:
    """One line on a terminal saying what is still running, rewritten in place; `([])` clears it.

    Plain text and carriage returns only, so it works on any terminal, dumb ones included.
    """

    def __init__(self, stream: IO[str] | None = None, prefix: str = "start: running ") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.prefix = prefix
        self.shown = 0  # characters on the line now

    def __call__(self, running: list[str]) -> None:
        text = ""
        if running:
            text = printable(self.prefix + ", ".join(running) + " …")
            try:
                width = os.get_terminal_size(self.stream.fileno()).columns
            except (OSError, ValueError, AttributeError):
                width = 0
            width = width or 80  # a new pty may report 0 columns
            if len(text) > width - 1:
                text = text[: max(0, width - 2)] + "…"
        try:
            self.stream.write("\r" + text.ljust(self.shown) + ("\r" if not text else ""))
            self.stream.flush()
        except OSError:
            pass  # the terminal went away (SIGHUP): a status line is not worth an error
        self.shown = len(text)
