"""What `start board` shows people: the listing (once, or live), one item whole, and the steps
of `start board run`; start.cli.board parses and calls the core."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
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


def rows(items: Sequence[Item]) -> list[list[console.Part]]:
    found: list[list[console.Part]] = []
    for item in items:
        status = item.status + (" (blocked)" if item.blocked else "")
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


def listing(items: Sequence[Item], *, as_json: bool, no_color: bool, empty: bool = True) -> None:
    """The items as compact JSON rows, or a table on stdout; `empty`: say so when there are
    none (the caller says what was left out otherwise)."""
    if as_json:
        console.print_json([board.row_data(item) for item in items])
        return
    if not items:
        if empty:
            console.err("No items. Add one with: start board add TITLE")
        return
    from start.ui import display

    display.print_table(HEADERS, rows(items), no_color=no_color, cut=CUT)


def live_listing(
    opened: Board, found: Filter, limit: int | None, *, as_json: bool, no_color: bool
) -> None:
    """The listing again at every change of the board, until Ctrl-C: redrawn in place on a
    terminal; off one (or with --json, a JSON array a line), printed again."""
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
                items, _ = opened.items(found, limit, newest=not ready, by_priority=ready)
                if as_json:
                    console.print_json([board.row_data(i) for i in items], indent=None)
                elif live is not None:
                    page = display.Page()
                    page.table(HEADERS, rows(items), cut=CUT, width=display.table_width(sys.stdout))
                    live.show(page)
                else:
                    listing(items, as_json=False, no_color=no_color)
                    console.out()
                sys.stdout.flush()
            time.sleep(boarddb.POLL * 2)


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
        detail = ", ".join(f"{k}={v}" for k, v in event.detail.items() if v is not None)
        said = console.printable(f"{event.actor} {event.op} {detail}".rstrip())
        page.row([console.local_time(event.at, seconds=True), said], [19], indent=2, gaps=[2])
    page.show(no_color=no_color)


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
