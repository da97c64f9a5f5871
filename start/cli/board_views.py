"""What `start board` shows people: the listing (once, or live), one item whole, and the steps
of `start board run`; start.cli.board parses and calls the core."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from start import board
from start.base import inputs
from start.board import COMPLETED, FAILED, IN_PROGRESS, STATUSES, Item
from start.compose.ask import AGENT, Ask
from start.ui import console
from start.ui.console import Styled

if TYPE_CHECKING:
    from start.board.rows import Filter
    from start.board.runner import Report
    from start.board.store import Board, Comment, Event
    from start.ui.status import StatusLine

HEADERS = ("id", "pri", "status", "title", "assignee", "blocked by")
CUT = (3, 5)  # the columns cut to the page's width: the title and the ids it waits for
_STYLE = {COMPLETED: "green", FAILED: "red", IN_PROGRESS: "cyan"}


def rows(items: Sequence[Item], unconfirmed: Collection[str] = ()) -> list[list[console.Part]]:
    """The table's rows; an item of `unconfirmed` (held under a claim not yet pushed) says so."""
    found: list[list[console.Part]] = []
    for item in items:
        status = item.status + (" (unconfirmed)" if item.id in unconfirmed else "")
        status += " (blocked)" if item.blocked else ""
        status += " (archived)" if item.archived is not None else ""
        status += f" ({progress(item)})" if item.children else ""
        found.append(
            [
                item.id,
                f"P{item.priority}",
                Styled(status, _STYLE.get(item.status, "yellow" if item.blocked else "")),
                console.printable(item.title),
                item.assignee or "",
                ", ".join(blocking(item)),
            ]
        )
    return found


def progress(item: Item) -> str:
    """An epic's progress: how many of its children are completed (`3/5 done`)."""
    return f"{item.children_done}/{item.children} done"


def blocking(item: Item) -> list[str]:
    """The ids of the items `item` waits for now (a dependency completed blocks nothing): those
    whose sentence, board.waiting's, is among its reasons to wait."""
    if not item.blocked:
        return []
    reasons = set(item.blocked)
    return [
        found
        for found in item.blocked_by
        if any(board.waiting(found, status) in reasons for status in (*STATUSES, None))
    ]


def whose(root: str, workdir: str) -> None:
    """Which board a listing shows, on stderr: its project's root; and where there is no
    project, that the directory has a board of its own."""
    from start.base import paths

    found = paths.find_project(workdir)
    shown = console.printable(root)
    if found.start_dir is None and found.git_root is None:
        console.err(
            f"start: the board of {shown}, a directory in no git repository and without "
            ".start/: each such directory has a board of its own"
        )
    else:
        console.err(f"start: the board of {shown}")


def listing(
    items: Sequence[Item],
    *,
    as_json: bool,
    no_color: bool,
    empty: bool = True,
    unconfirmed: Collection[str] = (),
) -> None:
    """The items as compact JSON rows, or a table on stdout; `empty`: say so when there are
    none (the caller says what was left out otherwise); `unconfirmed`: the ids of the items
    held under a claim not yet pushed (`"confirmed": false`, and marked in the table)."""
    if as_json:
        console.print_json([board.row_data(i, i.id not in unconfirmed) for i in items])
        return
    if not items:
        if empty:
            console.err("No items. Add one with: start board add TITLE")
        return
    from start.ui import display

    display.print_table(HEADERS, rows(items, unconfirmed), no_color=no_color, cut=CUT)


def left_out(opened: Board, wider: Filter | None, shown: int, total: int) -> str | None:
    """What a listing of `shown` of the `total` items that match left out, and how to see it
    (`4 more: --all, or --limit N`); None when nothing. `wider`: the items --all would match
    (None: the listing has --all)."""
    hidden = 0 if wider is None else opened.items(wider, limit=0)[1] - total
    hints = [hint for hint, left in (("--all", hidden), ("--limit N", total - shown)) if left]
    return f"{hidden + total - shown} more: {', or '.join(hints)}" if hints else None


def live_listing(
    opened: Board,
    found: Filter,
    limit: int | None,
    wider: Filter | None,
    *,
    as_json: bool,
    no_color: bool,
) -> None:
    """The listing again at every change of the board, until Ctrl-C: redrawn in place on a
    terminal; off one (or with --json, a JSON array a line), printed again; each time with
    what it left out (`left_out`), below the table or on stderr."""
    import sys
    import time
    from contextlib import nullcontext

    from start.board import store as boarddb
    from start.ui import display

    tty = console.is_tty() and not as_json
    with display.LivePage(no_color=no_color) if tty else nullcontext() as live:
        seen: int | None = None
        while True:
            opened.sweep()
            version = opened.version()
            if version != seen:
                seen = version
                ready = found.ready
                items, total = opened.items(found, limit, newest=not ready, by_priority=ready)
                more = left_out(opened, wider, len(items), total)
                unconfirmed = opened.unconfirmed()
                if as_json:
                    data = [board.row_data(i, i.id not in unconfirmed) for i in items]
                    console.print_json(data, indent=None)
                elif live is not None:
                    page = display.Page()
                    width = display.table_width(sys.stdout)
                    page.table(HEADERS, rows(items, unconfirmed), cut=CUT, width=width)
                    if more:
                        page.line(Styled(more, "dim"))
                    live.show(page)
                else:
                    listing(
                        items, as_json=False, no_color=no_color, empty=not more,
                        unconfirmed=unconfirmed,
                    )  # fmt: skip
                if more and live is None:
                    console.err(f"start: {more}")
                if live is None and not as_json:
                    console.out()
                sys.stdout.flush()
            time.sleep(boarddb.POLL * 2)


def _made(when: str) -> float:
    """A time the board shows (ISO 8601, with its offset) as seconds, to order by."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(when).timestamp()
    except ValueError:
        return 0.0


def nested(items: Sequence[Item]) -> list[tuple[int, Item]]:
    """The items in a tree's order, each with its depth: every item under its parent (one not
    among `items` is a root), siblings by priority, then age. Iterative, and each item once, so
    neither a deep chain nor a loop of parents (which the board refuses) can break it."""
    known = {item.id for item in items}
    # Siblings by age: an item-N's number says it; with sync on an item of another machine
    # (item-PREFIX.N) has no number to compare, and its time made says it (then where it is).
    plain = all("." not in item.id for item in items)
    age = {
        item.id: (board.number(item.id),) if plain else (_made(item.created), index)
        for index, item in enumerate(items)
    }
    children: dict[str | None, list[Item]] = {}
    for item in items:
        parent = item.parent if item.parent in known else None
        children.setdefault(parent, []).append(item)
    for siblings in children.values():
        siblings.sort(key=lambda item: (item.priority, *age[item.id]))
    order: list[tuple[int, Item]] = []
    seen: set[str] = set()
    stack = [(0, item) for item in reversed(children.get(None, []))]
    while stack:
        depth, item = stack.pop()
        if item.id in seen:
            continue
        seen.add(item.id)
        order.append((depth, item))
        stack += [(depth + 1, child) for child in reversed(children.get(item.id, []))]
    # An item in a loop of parents has no root: each is shown at the top.
    order += [(0, item) for item in items if item.id not in seen]
    return order


def tree_rows(order: Sequence[tuple[int, Item]], shown: set[str]) -> list[list[console.Part]]:
    """The rows of `start board tree`: the id under its parent's with the lines of a tree, its
    priority, status (with an epic's progress) and title; an item not in `shown` is there only
    as the parent of some that are, and is dimmed."""
    later = _later_siblings(order)
    found: list[list[console.Part]] = []
    going: list[bool] = []  # for each depth, whether its line goes on below this row
    for index, (depth, item) in enumerate(order):
        del going[depth:]
        lead = "".join("│  " if on else "   " for on in going[1:])
        if depth:
            lead += "├─ " if later[index] else "└─ "
        going.append(later[index])
        status = item.status + (" (blocked)" if item.blocked else "")
        status += " (archived)" if item.archived is not None else ""
        status += f" ({progress(item)})" if item.children else ""
        style = _STYLE.get(item.status, "yellow" if item.blocked else "")
        style = "dim" if item.id not in shown else style
        found.append(
            [
                lead + item.id,
                f"P{item.priority}",
                Styled(status, style),
                console.printable(item.title),
            ]
        )
    return found


def _later_siblings(order: Sequence[tuple[int, Item]]) -> list[bool]:
    """For each item of a tree's order, whether a sibling comes after it: in one pass from the
    end, where an item at a depth forgets what was seen deeper (another parent's)."""
    later = [False] * len(order)
    seen: list[bool] = []
    for index in reversed(range(len(order))):
        depth = order[index][0]
        del seen[depth + 1 :]
        seen += [False] * (depth + 1 - len(seen))
        later[index] = seen[depth]
        seen[depth] = True
    return later


def tree_data(
    order: Sequence[tuple[int, Item]], unconfirmed: Collection[str] = ()
) -> list[dict[str, Any]]:
    """The tree as JSON: each item's row (board.row_data) with its `children`, nested."""
    roots: list[dict[str, Any]] = []
    path: list[dict[str, Any]] = []
    for depth, item in order:
        data = board.row_data(item, item.id not in unconfirmed) | {"children": []}
        del path[depth:]
        (path[-1]["children"] if path else roots).append(data)
        path.append(data)
    return roots


def describe(ask: Ask) -> str:
    """What an item runs, in one line."""
    what = f"task {ask.task}" if ask.task is not None else f"prompt {ask.prompt!r}"
    parts = [what, f"agent {ask.agent or '(the default)'}"]
    if ask.model:
        parts.append(f"model {ask.model}")
    parts.append(f"permissions {ask.permissions or '(the task’s, else read-only)'}")
    if ask.by == AGENT:
        parts.append("asked for over MCP")
    return ", ".join(parts)


def item_page(
    item: Item,
    events: Sequence[Event],
    statuses: Mapping[str, str],
    children: Sequence[Item] = (),
    *,
    comments: Sequence[Comment] = (),
    no_color: bool,
) -> None:
    """One item whole on stdout; `statuses` has the status of each item it waits on,
    `children` are the items that are part of it, and `comments` its comments, oldest first."""
    from start.ui import display

    page = display.Page()
    page.line(Styled(item.id, "bold"), "  ", console.printable(item.title))
    held = f", held by {item.assignee}" if item.status == IN_PROGRESS else ""
    done = f", by {item.assignee}" if item.status in (COMPLETED, FAILED) and item.assignee else ""
    lines = [
        ("status", f"{item.status}{held}{done} (epoch {item.epoch})"),
        ("created", f"{console.local_time(item.created, seconds=True)} by {item.created_by}"),
        ("priority", f"P{item.priority}"),
    ]
    if item.labels:
        lines.append(("labels", ", ".join(item.labels)))
    if item.parent is not None:
        lines.append(("part of", item.parent))
    if item.children:
        lines.append(("children", progress(item)))
    if item.blocked_by:
        waited = (f"{d} ({statuses.get(d, 'missing')})" for d in item.blocked_by)
        lines.append(("blocked by", ", ".join(waited)))
    lines += [("waits", reason) for reason in item.blocked]
    if item.run is not None:
        lines.append(("runs", describe(item.run)))
    if item.level != board.USER_LEVEL:
        lines.append(("shaped", f"at '{item.level}' by {item.level_by}: it runs at that at most"))
    if item.answer_level is not None and item.answer_level != board.USER_LEVEL:
        lines.append(("answered", f"at '{item.answer_level}': what it feeds runs at that at most"))
    if item.history is not None:
        lines.append(("run", f"{item.history} in the history (start log show {item.history})"))
    if item.archived is not None:
        when = console.local_time(item.archived, seconds=True)
        lines.append(("archived", f"{when}: start board unarchive {item.id} brings it back"))
    if item.reason:
        lines.append(("reason", item.reason))
    if item.metadata:
        shown = inputs.readable(dict(item.metadata))  # no NaN, as --json has none
        lines.append(("metadata", json.dumps(shown, ensure_ascii=False)))
    for label, value in lines:
        page.row([label, console.printable(value)], [10], indent=2, gaps=[2])
    if children:
        page.blank()
        page.line(Styled("──── children ────", "bold"))
        statuses_ = [c.status + (", archived" if c.archived else "") for c in children]
        widths = [max(len(c.id) for c in children), 2, max(map(len, statuses_))]
        for child, status in zip(children, statuses_, strict=True):
            cells = [child.id, f"P{child.priority}", status, console.printable(child.title)]
            page.row(cells, widths, indent=2, gaps=[2, 2, 2])

    def text_block(text: str, indent: str = "") -> None:
        for line in console.printable(text.rstrip("\n"), multiline=True).split("\n"):
            page.line(indent + line)

    if item.description:
        page.blank()
        page.line(Styled("──── description ────", "bold"))
        text_block(item.description)
    if comments:
        page.blank()
        page.line(Styled("──── comments ────", "bold"))
        for note in comments:
            when = console.local_time(note.at, seconds=True)
            page.line(f"  {when}  ", Styled(console.printable(note.author), "bold"))
            text_block(note.text, "    ")
    if item.answer:
        page.blank()
        page.line(Styled("──── answer ────", "bold"))
        text_block(item.answer)
    page.blank()
    page.line(Styled("──── history ────", "bold"))
    for event in events:
        # (an earlier release wrote a person's claim with pid=None)
        detail = ", ".join(f"{k}={_value(v)}" for k, v in event.detail.items() if v is not None)
        said = console.printable(f"{event.actor} {event.op} {detail}".rstrip())
        page.row([console.local_time(event.at, seconds=True), said], [19], indent=2, gaps=[2])
    page.show(no_color=no_color)


def _value(value: Any) -> str:
    """A value of an event's detail as a person reads it: a list as its items with commas
    between (`item-1, item-2`, `[]` when empty), an object as JSON, anything else as it is."""
    if isinstance(value, list):
        return ", ".join(map(_value, value)) if value else "[]"
    if isinstance(value, dict):
        return json.dumps(inputs.readable(value), ensure_ascii=False)
    return str(value)


def reporter(*, no_color: bool, quiet: bool) -> Callable[[Report], None]:
    """How `start board run` tells each step: one line on stderr (none with -q)."""
    printer = console.Printer("stderr", no_color=no_color, quiet=quiet)

    def told(report: Report) -> None:
        item, outcome = report.item, report.outcome
        title = console.printable(item.title)
        if report.step == "claimed":
            printer.line(
                "start ▸ ", Styled(item.id, "bold"), f" claimed by {item.assignee}: {title}"
            )
        elif report.step == "completed":
            run = f", run {item.history} in the history" if item.history is not None else ""
            agent = f" by {outcome.agent}" if outcome is not None and outcome.agent else ""
            printer.line(Styled(f"start ✓ {item.id} completed", "green"), f"{agent}{run}: {title}")
        elif report.step == "failed":
            first, *rest = (item.reason or "").split("\n")
            printer.line(Styled(f"start ✗ {item.id} failed", "red"), f": {first}")
            printer.lines([line] for line in rest)
        elif report.step == "capped":
            printer.line(Styled(f"start ⚠ {item.id}", "yellow"), f" {report.note}")
        elif report.step == "released":
            why = f": {report.note}" if report.note else " (the run was stopped)"
            printer.line(f"start · {item.id} released, pending again{why}")
        elif report.step == "lost":
            printer.line(f"start · {item.id} not run, its claim lost: {report.note}")
        else:
            note = Styled(f"start ⚠ {item.id}: its run's outcome was not kept", "yellow")
            printer.line(note, f": {report.note}")

    return told


class RunView:
    """What `start board run` shows on stderr while it runs: a line for each step (`reporter`),
    the live line of the items running (on a terminal: the status line --print has), a note
    each time it starts waiting for ready items, and at the end a tally. Without `live` (off a
    terminal, or -q) there is no live line; with `quiet`, no note and no tally either.

    The steps are told from the runner's threads: one at a time here (the live line's own
    thread only redraws it)."""

    def __init__(self, *, no_color: bool, quiet: bool, live: StatusLine | None) -> None:
        import threading

        self.step = reporter(no_color=no_color, quiet=quiet)
        self.quiet = quiet
        self.live = live
        self.running: dict[str, str] = {}  # each item running: its id and how the line names it
        self.counts = {COMPLETED: 0, FAILED: 0, "released": 0}
        self.lock = threading.Lock()

    def told(self, report: Report) -> None:
        item = report.item
        with self.lock:
            if report.step == "claimed":
                self.running[item.id] = f"{item.id} ({console.printable(item.title)})"
            elif report.step != "capped":
                self.running.pop(item.id, None)
            if report.step in self.counts:
                self.counts[report.step] += 1
            self._above(lambda: self.step(report))

    def idle(self) -> None:
        """The runner has nothing to run and waits (once each time it starts to)."""
        if not self.quiet:
            with self.lock:
                self._above(lambda: console.err("start: waiting for ready items (Ctrl-C to stop)"))

    def tally(self, seconds: float) -> str:
        """What its runs came to: `3 completed, 1 failed in 6.7 s` (and how many were released,
        when any was)."""
        counts = self.counts
        released = f", {counts['released']} released" if counts["released"] else ""
        ran = f"{counts[COMPLETED]} completed, {counts[FAILED]} failed{released}"
        return f"{ran} in {seconds:.1f} s"

    def close(self) -> None:
        """Clear the live line."""
        if self.live is not None:
            with self.lock:
                self.live([])

    def _above(self, write: Callable[[], None]) -> None:
        if self.live is None:
            write()
            return
        self.live(list(self.running.values()))  # as it is now: cleared when nothing runs
        self.live.above(write)


def as_json(value: Any) -> None:
    console.print_json(value)
