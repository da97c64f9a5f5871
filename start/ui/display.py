"""Rich output, off the launch path: pages (rows with hanging indents, tables, highlighted TOML,
Markdown) shown at once or through the pager, tables on stdout, and the live board of jobs of a
headless run of several agents. The only importer of rich.

The plain-text output a launch needs (Printer, error, the colour rule, `printable`) is in
start.ui.console; every segment here is escaped with its `printable()` too.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any, Literal

from start.ui.console import (
    Line,
    Part,
    Stream,
    Styled,
    color_enabled,
    is_tty,
    printable,
    std_stream,
)

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

    from start.ui.progress import Progress


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
    stream: IO[str],
    *,
    no_color: bool = False,
    width: int | None = None,
    color: bool | None = None,
    terminal: bool | None = None,
) -> Console:
    """A rich Console made per run, so NO_COLOR and test capture work; prompts hold [brackets].

    With colour off, rich writes no SGR at all, not even bold. `terminal`: whether the stream
    is a terminal to draw on in place (a live view, which rich draws only at its end on what
    it takes for no terminal); by default, whether colour is on.
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
        force_terminal=color if terminal is None else terminal,
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

            self.blocks.append(Padding(grid, (0, 0, 0, indent), expand=False))
        else:
            self.blocks.append(grid)

    def table(
        self,
        headers: Sequence[str],
        rows: Iterable[Sequence[Part]],
        *,
        cut: Sequence[int] = (),
        width: int = 0,
    ) -> None:
        """Aligned columns by display width, headers in capitals (bold where colour is on); long
        cells fold within their column. With `cut` (the indexes of columns that may narrow), a
        row is a line `width` cells wide at most: the cells of those columns are cut with an
        ellipsis where it is too narrow for them, and the other columns keep their width."""
        from rich.table import Table

        table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
        texts = [[_text(cell) for cell in row] for row in rows]
        widths = _fitted(headers, texts, cut, width) if cut else []
        for header in headers:
            # With `cut`, the cells are cut to `widths` below and the column takes its cells'
            # width: a width given here is one cell more in rich 13.0 (its padding counted in).
            if cut:
                table.add_column(header.upper(), no_wrap=True)
            else:
                table.add_column(header.upper(), overflow="fold")
        for row in texts:
            for index in cut:
                row[index].truncate(widths[index], overflow="ellipsis")
            table.add_row(*row)
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
        stream = std_stream(to)
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


def _fitted(
    headers: Sequence[str], rows: Sequence[Sequence[Text]], cut: Sequence[int], width: int
) -> list[int]:
    """Each column's width in a row at most `width` cells wide (with two between columns): the
    columns not in `cut` as wide as their widest cell, and the rest of the width shared among
    those in `cut`, the narrowest first, none narrower than its header."""
    widths = [
        max([len(header), *(row[index].cell_len for row in rows)])
        for index, header in enumerate(headers)
    ]
    left = width - 2 * (len(headers) - 1) - sum(w for i, w in enumerate(widths) if i not in cut)
    narrowing = sorted(cut, key=lambda index: widths[index])
    for place, index in enumerate(narrowing):
        share = left // (len(narrowing) - place)
        widths[index] = max(len(headers[index]), min(widths[index], share))
        left -= widths[index]
    return widths


def table_width(stream: IO[str]) -> int:
    """How wide a table cut to its page is: the terminal's width; off a terminal, $COLUMNS, else
    PIPED_WIDTH (one long cell does not pad every row of a pipe to its length)."""
    if is_tty(stream):
        return _width(stream)
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH


def trim_end(line: str) -> str:
    """`line` without the spaces at its end, keeping the colour codes among them: each run of
    spaces goes in one `rstrip` (a line padded to a wide page is a long run), so it is linear
    however long the line."""
    body, kept = line, []
    while True:
        body = body.rstrip(" ")
        if not body.endswith("m"):
            break
        code = body.rfind("\x1b[")
        if code < 0 or not all(c in "0123456789;" for c in body[code + 2 : -1]):
            break
        kept.append(body[code:])
        body = body[:code]
    return body + "".join(reversed(kept))


# How wide a table cut to its page is off a terminal, without $COLUMNS.
PIPED_WIDTH = 80


def print_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Part]],
    *,
    no_color: bool = False,
    cut: Sequence[int] = (),
) -> None:
    """A table on stdout: headers in capitals, on a terminal or not (and bold where colour is
    on), so what a user sees is what a script reads; with `cut` (the columns that may narrow),
    a row a line, no wider than `table_width`."""
    page = Page()
    page.table(headers, rows, cut=cut, width=table_width(sys.stdout))
    page.show(no_color=no_color)


def pager_command() -> str | None:
    """`$START_PAGER`, else `$PAGER`, else `less` if installed; None when it is empty or `cat`."""
    from start.base import paths

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
    # In stdout's encoding, as the text would be printed without a pager (console.setup_streams).
    data = text.encode(getattr(sys.stdout, "encoding", None) or "utf-8", "backslashreplace")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result = subprocess.run(["/bin/sh", "-c", command], input=data, env=env, check=False)
        shown = result.returncode != 127  # 127: the shell did not find the pager
    except OSError:
        shown = False
    finally:
        signal.signal(signal.SIGINT, previous)
    if not shown:
        sys.stdout.write(text)
        sys.stdout.flush()


class LivePage:
    """A page redrawn in place on a terminal (`start board --watch`): `show` replaces it."""

    def __init__(self, *, no_color: bool = False) -> None:
        self.no_color = no_color
        self.live: Any = None

    def show(self, page: Page) -> None:
        from rich.console import Group

        self.live.update(Group(*page.blocks), refresh=True)

    def __enter__(self) -> LivePage:
        from rich.live import Live

        # On a terminal (the caller's check), drawn in place with colour or without.
        console = rich_console(sys.stdout, no_color=self.no_color, terminal=True)
        self.live = Live(console=console, auto_refresh=False, vertical_overflow="visible")
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()


class Board:
    """One line per job, redrawn in place by rich on a terminal: its name, its state and the
    seconds it has run, read from the run's record of its jobs (start.ui.progress). `update` may be
    called from any thread; `with` shows it."""

    def __init__(
        self,
        names: Sequence[str],
        stream: IO[str] | None = None,
        *,
        progress: Progress | None = None,
        no_color: bool = False,
    ) -> None:
        from start.ui.progress import Progress

        self.no_color = no_color
        self.stream = stream if stream is not None else sys.stderr
        self.progress = progress if progress is not None else Progress(names)
        self.live: Any = None

    def update(self, index: int, state: str, elapsed: float) -> None:
        self.progress.update(index, state, elapsed)

    def render(self) -> Any:
        from rich.text import Text

        jobs = self.progress.jobs()
        width = max(len(job.name) for job in jobs) if jobs else 0
        lines = []
        for job in jobs:
            seconds = "" if job.seconds is None else f"{job.seconds:5.0f} s"
            style = {"done": "green", "failed": "red", "timed out": "red"}.get(job.state, "")
            lines.append(
                Text.assemble(f"  {job.name:<{width}}  ", (f"{job.state:<9}", style), seconds)
            )
        return Text("\n").join(lines)

    def __enter__(self) -> Board:
        from rich.live import Live

        self.live = Live(
            get_renderable=self.render,
            # Shown only on a terminal (the caller's check): drawn in place, coloured or not.
            console=rich_console(self.stream, no_color=self.no_color, terminal=True),
            refresh_per_second=4,
            transient=True,
        )
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()
