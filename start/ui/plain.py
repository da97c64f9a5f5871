"""A table in plain text for stdout off a terminal, without rich: the layout of
`display.print_table` there (headers in capitals, two spaces between columns, the columns in
`cut` narrowed to the page with an ellipsis), for a command whose output scripts read often
(`start find`) and which should not pay for rich's import (docs/performance.md)."""

from __future__ import annotations

from collections.abc import Sequence

from start.ui import console

ELLIPSIS = "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, cut: Sequence[int]) -> None:
    """Write the table to stdout, each row a line no wider than `display.table_width`'s page
    where the columns in `cut` can narrow enough (rich squeezes the other columns too where
    they cannot; a page that narrow is left to the terminal's table)."""
    from start.ui.display import PIPED_WIDTH

    texts = [[console.printable(cell).expandtabs(8) for cell in row] for row in rows]
    names = [header.upper() for header in headers]
    widths = [
        max([len(name), *(console.cells(row[index]) for row in texts)])
        for index, name in enumerate(names)
    ]
    width = _width(PIPED_WIDTH)
    left = width - 2 * (len(names) - 1) - sum(w for i, w in enumerate(widths) if i not in cut)
    narrowing = sorted(cut, key=lambda index: widths[index])
    for place, index in enumerate(narrowing):
        share = left // (len(narrowing) - place)
        widths[index] = max(len(names[index]), min(widths[index], share))
        left -= widths[index]
    lines = [_line(names, widths)]
    lines += [_line([_cut(cell, widths[i]) for i, cell in enumerate(row)], widths) for row in texts]
    console.out("".join(line + "\n" for line in lines), end="")


def _width(default: int) -> int:
    import os

    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else default


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    padded = [
        cell + " " * (width - console.cells(cell))
        for cell, width in zip(cells, widths, strict=True)
    ]
    return "  ".join(padded).rstrip(" ")


def _cut(text: str, width: int) -> str:
    """`text` in `width` cells at most: cut with an ellipsis where it is wider."""
    if console.cells(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        size = console.cells(char)
        if used + size > width - 1:
            break
        kept.append(char)
        used += size
    # A wide character that does not fit leaves a space before the ellipsis, as rich does.
    return "".join(kept) + " " * (width - 1 - used) + ELLIPSIS
