"""What the page shows, as JSON data read from the board and the history: never the whole of
either, a page of each at a time (PAGE), so a board of 10,000 items answers as fast as one of
ten.

Every text an agent or a person wrote goes out as text for the page to set as text; the few
that are Markdown (a description, an answer, a comment, a run's answer) go out rendered too, by
start.web.markdown, which lets no element through that runs or loads anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from start import board
from start.base import inputs
from start.base.errors import StartError
from start.board import COMPLETED, FAILED, IN_PROGRESS, PENDING, STATUSES, BadRequestError, Item
from start.board.rows import Filter
from start.web import markdown

if TYPE_CHECKING:
    from start.board.store import Board, Event
    from start.runs import Run
    from start.runs.store import Store

PAGE: Final = 50  # items of a column, runs of the history, sent at a time
GRAPH: Final = 200  # the most items the graph of dependencies draws
RUNNING: Final = 50  # the most items in progress the page lists with their time


class Query:
    """A listing's filters as the page's address gives them (`?q=&label=&holder=&archived=`)."""

    def __init__(self, given: Mapping[str, Sequence[str]]) -> None:
        def one(name: str) -> str | None:
            values = given.get(name) or [""]
            return values[-1].strip() or None

        self.search = one("q")
        labels = [label for value in given.get("label", []) for label in value.split(",")]
        self.labels = tuple(inputs.label(label.strip()) for label in labels if label.strip())
        self.holder = one("holder")
        archived = one("archived")
        if archived not in (None, "only", "also"):
            raise BadRequestError(f"archived is 'only' or 'also', not '{archived}'")
        self.archived: bool | None = {None: False, "only": True, "also": None}[archived]
        self.after = one("after")

    def filter(self, *statuses: str) -> Filter:
        if self.search is not None:
            inputs.text(self.search, inputs.TITLE_LIMIT)
        return Filter(
            statuses,
            assignee=self.holder,
            archived=self.archived,
            labels=self.labels,
            search=self.search,
        )


def card(item: Item, unconfirmed: bool = False) -> dict[str, Any]:
    """An item as a card of a column: its row (start.board.row_data) and what it runs."""
    data = board.row_data(item, not unconfirmed)
    data["waits_on"] = waiting_on(item)
    data["runs"] = item.run is not None
    data["children"] = item.children
    data["children_done"] = item.children_done
    return data


def waiting_on(item: Item) -> list[str]:
    """The ids of the items `item` waits for now: those not completed (their sentence, as
    board.waiting says it, is among its reasons to wait)."""
    reasons = set(item.blocked)
    return [dep for dep in item.blocked_by if any(dep in reason for reason in reasons)]


def _key(text: str | None) -> tuple[int, ...] | None:
    """A page's key as the page sends it back (`3.117`: a priority and a place)."""
    if text is None:
        return None
    try:
        key = tuple(int(part) for part in text.split("."))
    except ValueError:
        key = ()
    if len(key) != 2:
        raise BadRequestError(f"'{text}' is not a page's key: give back the `next` a page sent")
    return key


def column(opened: Board, status: str, query: Query) -> dict[str, Any]:
    """One column: its items of `status` that match, highest priority first, a page of them
    (after `query.after`), how many match in all, and the key of the next page."""
    if status not in STATUSES:
        raise BadRequestError(f"'{status}' is not a status: one of {', '.join(STATUSES)}")
    after = _key(query.after)
    items, total = opened.items(query.filter(status), PAGE, by_priority=True, after=after)
    unconfirmed = opened.unconfirmed()
    following = None
    if len(items) == PAGE:
        following = ".".join(map(str, opened.page_key(items[-1], True)))
    return {
        "status": status,
        "total": total,
        "items": [card(item, item.id in unconfirmed) for item in items],
        "next": following,
    }


def columns(opened: Board, query: Query) -> dict[str, Any]:
    """The board: a column for each status, each its first page."""
    query.after = None
    return {
        "root": opened.root,
        "columns": [column(opened, status, query) for status in STATUSES],
        "running": running(opened),
    }


def running(opened: Board) -> list[dict[str, Any]]:
    """The items in progress, the latest taken first, with when their holder took them (their
    last claim or reassignment): the page counts their time from it."""
    items, _ = opened.items(Filter((IN_PROGRESS,)), RUNNING, newest=True)
    found = []
    for item in items:
        taken = [e.at for e in opened.events(item.id) if e.op in ("claim", "reassign")]
        found.append(card(item) | {"since": taken[-1] if taken else item.updated})
    return found


def graph(opened: Board, query: Query) -> dict[str, Any]:
    """What the unfinished items that match wait on, as nodes and edges among them, at most
    GRAPH items: the highest priority first. A completed dependency waits for nothing more, so
    it is left out, as its edge is."""
    items, total = opened.items(query.filter(PENDING, IN_PROGRESS, FAILED), GRAPH, by_priority=True)
    shown = {item.id for item in items}
    edges = [
        {"from": dep, "to": item.id} for item in items for dep in item.blocked_by if dep in shown
    ]
    return {"nodes": [card(item) for item in items], "edges": edges, "total": total}


def _event(event: Event) -> dict[str, Any]:
    return {
        "at": event.at,
        "actor": inputs.valid(event.actor),
        "op": event.op,
        "detail": inputs.readable(dict(event.detail)),
    }


def item_page(opened: Board, id_: str, history: Store | None) -> dict[str, Any]:
    """One item whole: its data, its text rendered, its comments, history, children and the
    statuses of what it waits on; the run that finished it, from the history; and what a
    person may do to it now (`offers`)."""
    item = opened.get(id_)
    data = board.item_data(item)
    data["description_html"] = markdown.html(data["description"])
    data["answer_html"] = markdown.html(data["answer"]) if data["answer"] else None
    data["comments"] = [
        board.comment_data(note) | {"html": markdown.html(inputs.valid(note.text))}
        for note in opened.comments(item.id)
    ]
    data["events"] = [_event(event) for event in opened.events(item.id)]
    waited: list[Item] = []
    if item.blocked_by:
        waited, _ = opened.items(Filter(ids=item.blocked_by, archived=None))
    data["statuses"] = {dep.id: dep.status for dep in waited}
    data["waits_on"] = waiting_on(item)
    children: list[Item] = []
    if item.children:
        children, _ = opened.items(Filter(parent=item.id, archived=None), PAGE)
    data["child_items"] = [card(child) for child in children]
    data["record"] = None
    if item.history is not None and history is not None:
        try:
            data["record"] = run_row(history.get(item.history))
        except StartError:
            data["record"] = None  # trimmed from the history, or cleared
    data["offers"] = offers(item)
    return data


def offers(item: Item) -> list[str]:
    """What the page offers a person to do to `item`, as its status stands: what the board's
    rules (start.board.store) let a person who does not hold it do. The rules still decide: a
    change that crossed another is refused with their sentence."""
    if item.archived is not None:
        return ["comment", "unarchive"]
    found = ["comment"]
    if item.status == PENDING:
        found += ["edit", "archive"]
        if not item.blocked:
            found.append("reassign")
    elif item.status == IN_PROGRESS:
        found.append("reassign")
    elif item.status == FAILED:
        found += ["reopen", "archive"]
    elif item.status == COMPLETED:
        found.append("archive")
    return found


def run_row(run: Run) -> dict[str, Any]:
    """A run as a line of the history: who ran what, how it ended and what it cost."""
    from start import runs

    data = runs.summary(run)
    return {
        key: data.get(key)
        for key in (
            "id", "time", "mode", "task", "agent", "model", "permissions", "state", "exit_code",
            "duration", "input_tokens", "output_tokens", "cost_usd", "headless", "instructions",
        )
    }  # fmt: skip


def runs_page(
    history: Store, project: str, search: str | None, before: str | None
) -> dict[str, Any]:
    """The project's runs, newest first, a page of them (before run `before`), `search`: those
    whose words, prompt or answer hold it."""
    last = inputs.run_number(before) if before else None
    if search is not None:
        inputs.text(search, inputs.TITLE_LIMIT)
    found = history.runs(PAGE, project=project, search=search or None, before=last)
    following = str(found[-1].id) if len(found) == PAGE else None
    return {"runs": [run_row(run) for run in found], "next": following}


def run_page(history: Store, run_id: str) -> dict[str, Any]:
    """One run: its line, its prompt as the agent got it, and its answer rendered."""
    from start import runs

    run = history.get(inputs.run_number(run_id))
    data = runs.data(run)
    shown = inputs.readable({key: runs.plain(value) for key, value in data.items()})
    shown["answer_html"] = markdown.html(shown["answer"]) if shown.get("answer") else None
    return dict(shown)
