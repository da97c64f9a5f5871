"""Terminal output: the door for what `start` prints, in plain text. A launch uses only this.

What a launch does not need is in modules of their own, imported where used: start.ui.display (rich:
pages, tables, the pager, the board of jobs; the only importer of rich) and start.ui.status (the
status line of what is still running).

Two things reach the terminal another way: the questions of `click.prompt` and `click.confirm`
(`start init`, `start config`), and the log lines of `start mcp` (logging, on stderr).

Human output is built from text segments and style names, never from pre-styled strings. Each
segment is escaped with `printable()` before its style is applied, so text from a config file can
never carry a terminal control sequence to the screen, whichever command prints it. Data (JSON,
completion scripts) is written exactly, with `out()` and `print_json()`; data from others (an
agent's answer, an item's text) passes `for_stdout()` first, which escapes it on a terminal.

Every stream takes any text: `setup_streams()` makes stdout write a character its encoding cannot
hold (ASCII, Latin-1) as a backslash escape, as Python's stderr always does, and JSON is then all
ASCII, in its own `\\u` escapes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any, Literal

from start.base.record import Record

Stream = Literal["stdout", "stderr"]


class Styled(Record):
    """A text segment and its style: style names joined by spaces, such as "bold red"."""

    text: str
    style: str


Part = str | Styled
Line = Sequence[Part]


# Unicode categories that can hide or reorder text on a terminal: controls, bidi and zero-width
# format characters, line separators, surrogates (undecodable file names) and private use.
_HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co"}


def printable(text: str, *, multiline: bool = False) -> str:
    """Text with every character that could disguise it on a terminal shown as an escape."""
    if text.isprintable():
        # Every hidden category is unprintable, so the common case needs no unicodedata.
        return text
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


_SGR = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}


def std_stream(to: Stream) -> IO[str]:
    """sys.stdout or sys.stderr, looked up at each call, so that test capture works."""
    return sys.stdout if to == "stdout" else sys.stderr


def is_tty(stream: IO[str] | None = None) -> bool:
    isatty = getattr(stream if stream is not None else sys.stdout, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def color_enabled(stream: IO[str], no_color: bool = False) -> bool:
    """Whether to style output on `stream`; docs/usage.md#colour states the rule.

    `--no-color` and `NO_COLOR` turn every style off; else `FORCE_COLOR` or `CLICOLOR_FORCE`,
    set to anything but empty or `0`, turns styles on; else styles appear only on a terminal that
    is not `TERM=dumb`.
    """
    if no_color or os.environ.get("NO_COLOR"):
        return False
    if any(os.environ.get(name, "") not in ("", "0") for name in ("FORCE_COLOR", "CLICOLOR_FORCE")):
        return True
    return os.environ.get("TERM") != "dumb" and is_tty(stream)


class Printer:
    """Line-by-line human output on one stream, without rich: the launch path uses this."""

    def __init__(
        self,
        to: Stream = "stderr",
        *,
        no_color: bool = False,
        quiet: bool = False,
        stream: IO[str] | None = None,
    ) -> None:
        self.stream = stream if stream is not None else std_stream(to)
        self.color = color_enabled(self.stream, no_color)
        self.quiet = quiet

    def render(self, parts: Iterable[Part]) -> str:
        """The parts as one string: each escaped, then styled."""
        rendered = []
        for part in parts:
            if isinstance(part, Styled):
                text = printable(part.text)
                if self.color and part.style and text:
                    codes = ";".join(_SGR[name] for name in part.style.split())
                    text = f"\x1b[{codes}m{text}\x1b[0m"
                rendered.append(text)
            else:
                rendered.append(printable(part))
        return "".join(rendered)

    def line(self, *parts: Part) -> None:
        self.stream.write(self.render(parts) + "\n")

    def lines(self, lines: Iterable[Line]) -> None:
        for line in lines:
            self.line(*line)

    def wrapped(self, lines: Iterable[Line]) -> None:
        """Lines that, on a terminal too narrow for them, wrap between words, with a hanging
        indent under their value (the text after the first run of two spaces). A word wider than
        the line, such as a long path, is never cut by `start`."""
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns if is_tty(self.stream) else 0
        except (OSError, ValueError, AttributeError):
            width = 0
        for line in lines:
            for row in wrap_line(line, width) if width else [line]:
                self.line(*row)

    def note(self, *parts: Part) -> None:
        """A line that reports what was done: `-q` silences it."""
        if not self.quiet:
            self.line(*parts)

    def block(self, text: str, style: str = "") -> None:
        """Text of several lines (a prompt, a message), escaped but for its newlines and tabs."""
        for line in text.split("\n"):
            self.line(Styled(line, style))

    def prompt(self, *parts: Part) -> None:
        """A question, left on its line for the answer."""
        self.stream.write(self.render(parts))
        self.stream.flush()

    def flush(self) -> None:
        self.stream.flush()


def _cells(text: str) -> int:
    """Terminal cells of `text` once escaped, by the stdlib's East Asian widths: the launch
    summary measures its lines without loading rich (start.ui.display.display_width is rich's
    count)."""
    shown = printable(text)
    if shown.isascii():
        return len(shown)
    import unicodedata

    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in shown
    )


def wrap_line(line: Line, width: int) -> list[list[Part]]:
    """`line` as rows at most `width` cells wide where it can be: broken only at spaces, each
    row after the first indented to the line's value column. Styles carry over the breaks."""
    import re

    texts = [part.text if isinstance(part, Styled) else part for part in line]
    plain = "".join(texts)
    if _cells(plain) <= width:
        return [list(line)]
    lead = re.match(r" *\S+(?: \S+)*  +", plain)
    indent = _cells(lead.group()) if lead else len(plain) - len(plain.lstrip(" ")) + 4
    if indent > width // 2:
        indent = len(plain) - len(plain.lstrip(" ")) + 4
    # The runs of spaces to break at: a greedy fill, word by word.
    breaks: list[tuple[int, int]] = []
    value = lead.end() if lead else 0  # a label keeps the first word of its value
    column, gap, words = 0, None, 0
    for token in re.finditer(r" +|[^ ]+", plain):
        if token.group()[0] == " ":
            gap = token
            continue
        cells = _cells(token.group())
        spaces = len(gap.group()) if gap is not None else 0
        if words and gap is not None and gap.end() > value and column + spaces + cells > width:
            breaks.append(gap.span())
            column = indent + cells
        else:
            column += spaces + cells
        gap, words = None, words + 1
    rows: list[list[Part]] = [[]]
    offset = 0
    for part, text in zip(line, texts, strict=True):
        start, end = offset, offset + len(text)
        offset = end
        cut = start
        for first, last in breaks:
            if last <= start or first >= end:
                continue
            if first > cut:
                rows[-1].append(_like(part, text[cut - start : first - start]))
            rows.append([" " * indent])
            cut = max(cut, min(last, end))
        if cut < end:
            rows[-1].append(_like(part, text[cut - start :]))
    return rows


def _like(part: Part, text: str) -> Part:
    return Styled(text, part.style) if isinstance(part, Styled) else text


def error(message: str, hints: Sequence[str] = (), *, no_color: bool = False) -> None:
    """`start: MESSAGE` on stderr, then a `hint:` line for each hint; the one error format.

    When stderr cannot take it (its terminal hung up), the message is dropped: the exit status
    still says what happened, and a failed write must not turn into another error.
    """
    printer = Printer("stderr", no_color=no_color)
    first, *rest = message.split("\n")
    try:
        printer.line("start: ", first)
        printer.lines([line] for line in rest)
        for hint in hints:
            printer.line(Styled("hint:", "bold"), " ", hint)
        printer.flush()
    except OSError:
        gone(sys.stderr)


def gone(stream: IO[str]) -> None:
    """Point a stream whose reader or terminal went away at /dev/null, so that what is still
    buffered for it, flushed at exit, cannot fail and change the exit status."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
    os.close(devnull)


def warning(message: str, *, no_color: bool = False) -> None:
    printer = Printer("stderr", no_color=no_color)
    first, *rest = message.split("\n")
    printer.line("start: ", Styled("warning:", "yellow"), " ", first)
    printer.lines([line] for line in rest)


def err(*parts: Part) -> None:
    """One human line on stderr, unstyled (a Printer knows about --no-color and -q)."""
    Printer("stderr", no_color=True).line(*parts)


def err_through(text: str, *, raw: bool = False) -> None:
    """Another program's stderr passed on to ours, as it came: with `raw` exactly, otherwise
    with its control characters and escape sequences shown escaped."""
    sys.stderr.write(text if raw else printable(text, multiline=True))


def setup_streams() -> None:
    """Let stdout take any text: a character its encoding cannot hold (`PYTHONIOENCODING=ascii`,
    a Latin-1 locale) is written as a backslash escape (`caf\\xe9`), as Python's stderr writes
    it, instead of ending the command with a UnicodeEncodeError. An error handler the user chose
    in PYTHONIOENCODING is kept."""
    import io

    stream = sys.stdout
    if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
        stream.reconfigure(errors="backslashreplace")


def local_time(stamp: str, *, seconds: bool = False) -> str:
    """A recorded time (ISO 8601 with its UTC offset: a run's, an item's, an approval's) as every
    human view shows a time: in this machine's local time zone, `YYYY-MM-DD HH:MM` (`:SS` with
    `seconds`). Each is recorded in the zone of the process that wrote it (`start mcp` under an
    editor, a CI job in UTC), so it is shown in one zone, this one's. Data (--json) keeps the
    recorded text. A stamp that is no ISO time is shown as it is."""
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if moment.tzinfo is not None:  # without an offset, it is local time already
        moment = moment.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def for_stdout(text: str, *, raw: bool = False) -> str:
    """Data from others (an agent's answer, an item's text) as it goes to stdout: on a terminal,
    with its control characters and escape sequences shown escaped (an answer could set the
    clipboard or the window title, or hide text); piped, or with `raw`, exactly."""
    if raw or not is_tty(sys.stdout):
        return text
    return printable(text, multiline=True)


def out(text: str = "", *, end: str = "\n") -> None:
    """Write data to stdout exactly: a completion script, a value for another program."""
    sys.stdout.write(text + end)


def print_json(value: Any, *, indent: int | None = 2) -> None:
    """JSON on stdout (with no `indent`, on one line); strings are exact. They hold only JSON's
    own escapes where stdout can take them; where it cannot (an ASCII or Latin-1 stdout, a lone
    surrogate), or where the text would hide a control character on a terminal (a C1 control, a
    bidi override), every character beyond ASCII is a `\\u` escape instead."""
    import json

    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if not text.isascii() and (not _encodable(text, sys.stdout) or _hides(text, sys.stdout)):
        text = json.dumps(value, indent=indent)
    out(text)


def _encodable(text: str, stream: IO[str]) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _hides(text: str, stream: IO[str]) -> bool:
    """Whether `text`, shown on `stream`, holds a character `printable()` would escape."""
    return is_tty(stream) and not all(line.isprintable() for line in text.split("\n"))
