"""Terminal output: the door for what `start` prints, and the only importer of rich.

Two things reach the terminal another way: the questions of `click.prompt` and `click.confirm`
(`start init`, `start config`), and the log lines of `start mcp` (logging, on stderr).

Human output is built from text segments and style names, never from pre-styled strings. Each
segment is escaped with `printable()` before its style is applied, so text from a config file can
never carry a terminal control sequence to the screen, whichever command prints it. Data (JSON,
completion scripts) is written exactly, with `out()` and `print_json()`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any, Literal

from start.record import Record

if TYPE_CHECKING:
    import threading

    from rich.console import Console, RenderableType
    from rich.text import Text

Stream = Literal["stdout", "stderr"]


class Styled(Record):
    """A text segment and its style: style names joined by spaces, such as "bold red"."""

    text: str
    style: str


Part = str | Styled
Line = Sequence[Part]


def styled(text: str, *styles: str) -> Styled:
    return Styled(text, " ".join(styles))


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


def _stream(to: Stream) -> IO[str]:
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
        self.stream = stream if stream is not None else _stream(to)
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
    summary measures its lines without loading rich (display_width is rich's count)."""
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


def out(text: str = "", *, end: str = "\n") -> None:
    """Write data to stdout exactly: a completion script, a value for another program."""
    sys.stdout.write(text + end)


def print_json(value: Any) -> None:
    """JSON on stdout; strings are exact (only JSON's own escapes)."""
    import json

    out(json.dumps(value, indent=2, ensure_ascii=False))


# Off the launch path: rich renders tables, wrapped lines with hanging indents, TOML, Markdown,
# and feeds the pager.


def _text(parts: Part | Line, style: str = "") -> Text:
    from rich.text import Text

    text = Text(style=style)
    for part in [parts] if isinstance(parts, str | Styled) else parts:
        if isinstance(part, Styled):
            text.append(printable(part.text), style=part.style or None)
        else:
            text.append(printable(part))
    return text


def display_width(text: str) -> int:
    """Terminal cells that `text` takes once escaped: a CJK character takes two."""
    from rich.cells import cell_len

    return cell_len(printable(text))


def _width(stream: IO[str]) -> int:
    """The terminal's width; off a terminal, $COLUMNS, else no wrapping at all."""
    import shutil

    if is_tty(stream):
        return shutil.get_terminal_size().columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else 100_000


def rich_console(
    stream: IO[str], *, no_color: bool = False, width: int | None = None, color: bool | None = None
) -> Console:
    """A rich Console made per run, so NO_COLOR and test capture work; prompts hold [brackets].

    With colour off, rich writes no SGR at all, not even bold.
    """
    from rich.console import Console

    color = color_enabled(stream, no_color) if color is None else color
    system: Literal["auto", "standard"] | None = None
    if color:
        system = "auto" if is_tty(stream) and os.environ.get("TERM") != "dumb" else "standard"
    return Console(
        file=stream,
        markup=False,
        emoji=False,
        highlight=False,
        color_system=system,
        force_terminal=color,
        width=width or _width(stream),
        soft_wrap=False,
    )


class Page:
    """Human output assembled block by block, then shown at once (through a pager if asked)."""

    def __init__(self) -> None:
        self.blocks: list[RenderableType] = []

    def line(self, *parts: Part) -> None:
        from rich.text import Text

        text = _text(parts) if parts else Text()
        text.overflow = "fold"
        self.blocks.append(text)

    def blank(self) -> None:
        self.line()

    def row(
        self,
        cells: Sequence[Part | Line],
        widths: Sequence[int],
        indent: int = 0,
        gaps: Sequence[int] = (),
    ) -> None:
        """Cells padded to `widths` (wider content is never cut) and followed by their `gaps`
        (default 1 space), then a last cell that wraps under itself: a hanging indent."""
        from rich.table import Table

        grid = Table.grid(padding=0, pad_edge=False)
        leads = [_text(cell) for cell in cells[:-1]]
        for index, (width, lead) in enumerate(zip(widths, leads, strict=True)):
            gap = gaps[index] if index < len(gaps) else 1
            grid.add_column(width=max(width, lead.cell_len) + gap, no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row(*leads, _text(cells[-1]))
        if indent:
            from rich.padding import Padding

            self.blocks.append(Padding(grid, (0, 0, 0, indent)))
        else:
            self.blocks.append(grid)

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Part]]) -> None:
        """Aligned columns by display width, headers in capitals (bold where colour is on); long
        cells fold within their column."""
        from rich.table import Table

        table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
        for header in headers:
            table.add_column(header.upper(), overflow="fold")
        for row in rows:
            table.add_row(*(_text(cell) for cell in row))
        self.blocks.append(table)

    def syntax(self, text: str, lexer: str) -> None:
        """Highlighted in the terminal's own palette (no background slab); wrapped, not cropped."""
        from rich.syntax import Syntax

        code = printable(text, multiline=True).rstrip("\n")
        self.blocks.append(Syntax(code, lexer, theme="ansi_dark", word_wrap=True))

    def markdown(self, text: str) -> None:
        from rich.markdown import Markdown

        self.blocks.append(Markdown(printable(text, multiline=True), code_theme="ansi_dark"))

    def show(self, to: Stream = "stdout", *, no_color: bool = False, pager: bool = False) -> None:
        """Render every block; with `pager` on a terminal, through the pager (`pager_command`)."""
        stream = _stream(to)
        command = pager_command() if pager and is_tty(stream) else None
        text = self.render(stream, no_color=no_color)
        if command is None:
            # Line by line: a reader that goes away (`start task | head -1`) then always shows
            # as a BrokenPipeError, never as a partial write that is silently dropped.
            for line in text.splitlines(keepends=True):
                stream.write(line)
            stream.flush()
            return
        run_pager(command, text)

    def render(self, stream: IO[str], *, no_color: bool = False) -> str:
        import io

        buffer = io.StringIO()
        color = color_enabled(stream, no_color)
        console = rich_console(buffer, color=color, width=_width(stream))
        for block in self.blocks:
            console.print(block)
        # Table cells are padded to their column; trailing spaces are noise in a pipe or a diff.
        return "\n".join(trim_end(line) for line in buffer.getvalue().split("\n"))


def trim_end(line: str) -> str:
    """`line` without the spaces at its end, keeping the colour codes among them, in one pass
    from the end: linear however long the line (a regular expression here backtracked
    quadratically on a long run of spaces)."""
    body, end, kept = line, len(line), []
    while end:
        if body[end - 1] == " ":
            end -= 1
            continue
        if body[end - 1] == "m":
            code = body.rfind("\x1b[", 0, end)
            if code >= 0 and all(c in "0123456789;" for c in body[code + 2 : end - 1]):
                kept.append(body[code:end])
                end = code
                continue
        break
    return body[:end] + "".join(reversed(kept))


def print_table(
    headers: Sequence[str], rows: Iterable[Sequence[Part]], *, no_color: bool = False
) -> None:
    """A table on stdout: headers in capitals, on a terminal or not (and bold where colour is
    on), so what a user sees is what a script reads."""
    page = Page()
    page.table(headers, rows)
    page.show(no_color=no_color)


def pager_command() -> str | None:
    """`$START_PAGER`, else `$PAGER`, else `less` if installed; None when it is empty or `cat`."""
    from start import paths

    for variable in ("START_PAGER", "PAGER"):
        value = os.environ.get(variable)
        if value is not None:
            value = value.strip()
            return None if value in ("", "cat") else value
    return "less" if paths.which("less") else None


def run_pager(command: str, text: str) -> None:
    """Feed `text` to the pager, as git does: `less` quits on one screen and keeps colour.

    While the pager runs, Ctrl-C belongs to it: `start` ignores SIGINT until it exits.
    """
    import signal
    import subprocess

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result = subprocess.run(
            ["/bin/sh", "-c", command], input=text.encode("utf-8", "replace"), env=env, check=False
        )
        shown = result.returncode != 127  # 127: the shell did not find the pager
    except OSError:
        shown = False
    finally:
        signal.signal(signal.SIGINT, previous)
    if not shown:
        sys.stdout.write(text)
        sys.stdout.flush()


class StatusLine:
    """One line on a terminal saying what is still running, rewritten in place; `([])` clears it.

    With `elapsed`, the line also counts the whole seconds since it was first shown, as uv's
    does, redrawn each second by a thread of its own until it is cleared. Plain text and carriage
    returns only, so it works on any terminal, dumb ones included.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        prefix: str = "start: running ",
        *,
        elapsed: bool = False,
        clock: Callable[[], float] | None = None,
    ) -> None:
        import time

        self.stream = stream if stream is not None else sys.stderr
        self.prefix = prefix
        self.shown = 0  # characters on the line now
        self.elapsed = elapsed
        self.clock = clock or time.monotonic
        self.running: list[str] = []
        self.started: float | None = None
        self._stop: threading.Event | None = None
        self._lock: threading.Lock | None = None

    def __call__(self, running: list[str]) -> None:
        if not self.elapsed:
            self._draw(running)
            return
        import threading

        if self._lock is None:
            self._lock = threading.Lock()
        with self._lock:
            self.running = list(running)
            if running and self.started is None:
                self.started = self.clock()
            if not running:
                self.started = None
            self._draw(self.running)
        if running and self._stop is None:
            self._stop = threading.Event()
            threading.Thread(target=self._tick, args=(self._stop,), daemon=True).start()
        elif not running and self._stop is not None:
            self._stop.set()
            self._stop = None

    def _tick(self, stop: threading.Event) -> None:
        """Redraw at each whole second since the line was first shown, until stopped."""
        while True:
            started = self.started
            wait = 1.0 if started is None else 1.0 - (self.clock() - started) % 1.0
            if stop.wait(max(wait, 0.05)):
                return
            self.tick()

    def tick(self) -> None:
        """Redraw the line with the time elapsed now."""
        assert self._lock is not None
        with self._lock:
            if self.running:
                self._draw(self.running)

    def _draw(self, running: list[str]) -> None:
        text = ""
        if running:
            text = printable(self.prefix + ", ".join(running) + " …")
            seconds = int(self.clock() - self.started) if self.started is not None else 0
            clock = f" {seconds} s" if seconds >= 1 else ""
            try:
                width = os.get_terminal_size(self.stream.fileno()).columns
            except (OSError, ValueError, AttributeError):
                width = 0
            width = width or 80  # a new pty may report 0 columns
            if len(text + clock) > width - 1:  # the time stays in view; the names are cut
                text = text[: max(0, width - 2 - len(clock))] + "…"
            text += clock
        try:
            self.stream.write("\r" + text.ljust(self.shown) + ("\r" if not text else ""))
            self.stream.flush()
        except OSError:
            pass  # the terminal went away (SIGHUP): a status line is not worth an error
        self.shown = len(text)


class Board:
    """One line per job, redrawn in place by rich on a terminal: its name, its state and the
    seconds it has run. `update` may be called from any thread; `with` shows it."""

    def __init__(self, names: Sequence[str], stream: IO[str] | None = None) -> None:
        import threading
        import time

        self.stream = stream if stream is not None else sys.stderr
        self.names = list(names)
        self.states = ["waiting"] * len(self.names)
        self.started: list[float | None] = [None] * len(self.names)
        self.ended: list[float | None] = [None] * len(self.names)
        self.clock = time.monotonic
        self.lock = threading.Lock()
        self.live: Any = None

    def update(self, index: int, state: str, elapsed: float) -> None:
        with self.lock:
            self.states[index] = state
            now = self.clock()
            if state == "running":
                self.started[index] = now
            elif state not in ("waiting", "running"):
                self.ended[index] = now

    def render(self) -> Any:
        from rich.text import Text

        now = self.clock()
        width = max(len(name) for name in self.names) if self.names else 0
        lines = []
        with self.lock:
            for name, state, began, ended in zip(
                self.names, self.states, self.started, self.ended, strict=True
            ):
                seconds = "" if began is None else f"{(ended or now) - began:5.0f} s"
                style = {"done": "green", "failed": "red", "timed out": "red"}.get(state, "")
                lines.append(Text.assemble(f"  {name:<{width}}  ", (f"{state:<9}", style), seconds))
        return Text("\n").join(lines)

    def __enter__(self) -> Board:
        from rich.live import Live

        self.live = Live(
            get_renderable=self.render,
            console=rich_console(self.stream),
            refresh_per_second=4,
            transient=True,
        )
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()
