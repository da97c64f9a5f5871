"""`start mcp`'s board tools: the project's board (start.board) for the agent on the other end.

    board_tasks_create  board_tasks_list  board_tasks_get
    board_tasks_claim   board_tasks_update  board_tasks_watch

The caller acts as its session, which start names: `mcp:CLIENT:PID`, the client's name from
`initialize` and this server's process, whose life its claims last; no argument names who acts.
Each tool's arguments are checked against the input schema it declares, as every tool's are
(start.mcp.tools.check), the one statement of their shape; the board's rules are the board's
(start.board.store). A run an item asks for is held to what the user allows agents
(start.board.runner.request_for). Nothing here imports the SDK before a tool is listed or called:
the server (start.mcp.server) hands its requests here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from start import board
from start.base import inputs
from start.base.errors import StartError
from start.base.inputs import DIGITS
from start.board import (
    FINISHED,
    IN_PROGRESS,
    NO_PARENT,
    PENDING,
    STATUSES,
    USER_LEVEL,
    BadRequestError,
    Change,
    Holder,
    Item,
)
from start.compose.ask import AGENT, BOARD, Ask
from start.config import schema
from start.mcp import tools
from start.runs import rules
from start.runs.rules import Scope

if TYPE_CHECKING:
    import mcp.types as types

CREATE: Final = "board_tasks_create"
LIST: Final = "board_tasks_list"
GET: Final = "board_tasks_get"
CLAIM: Final = "board_tasks_claim"
UPDATE: Final = "board_tasks_update"
WATCH: Final = "board_tasks_watch"
# How many rows a listing returns unless asked for fewer, and at most.
LISTED: Final = 50
MOST_LISTED: Final = 200
# The arguments of a listing that a cursor belongs to: a page goes on only the listing it ends.
_LISTING: Final = ("status", "assignee", "blocked", "ready", "label")
# A cursor's version: a cursor of another one is refused as not one of ours.
_CURSOR: Final = "1"
# The comments board_tasks_get returns: the latest, each cut to so many characters (the rest
# is in `start board show`), so that an item of many long comments stays one bounded result.
COMMENTS_GIVEN: Final = 20
COMMENT_CHARACTERS: Final = 4000

# Each argument's rule is start.base.inputs', as the command line's is.
_ID: Final = inputs.ITEM_ID_SCHEMA
_IDS: Final = {"type": "array", "items": _ID, "maxItems": 100}
_TEXT: Final = inputs.TEXT_SCHEMA
_METADATA: Final = inputs.METADATA_SCHEMA
_LABEL: Final = inputs.LABELS_SCHEMA["items"]
_LABELS: Final = inputs.LABELS_SCHEMA
_RUN: Final = {
    "type": "object",
    "description": (
        "What `start board run` runs once the item is ready: a prompt, or one of the user's "
        "tasks (list_tasks) with the item's description as its instructions; {answers} in the "
        "text is the answers of the items it waited on. Read-only unless the user allows more "
        "(settings.mcp_permissions)."
    ),
    "properties": {
        "agent": {"type": "string", "description": "The agent that runs it."},
        "prompt": _TEXT,
        "task": {"type": "string"},
        "model": tools.MODEL,
        "permissions": {"type": "string", "enum": list(schema.LEVELS)},
    },
    "required": ["agent"],
    "oneOf": [{"required": ["prompt"]}, {"required": ["task"]}],
    "additionalProperties": False,
}


def _input(properties: Mapping[str, Any], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


INPUTS: Final[Mapping[str, dict[str, Any]]] = {
    CREATE: _input(
        {
            "title": inputs.TITLE_SCHEMA,
            "description": _TEXT,
            "blocked_by": {**_IDS, "description": "Items that must complete before this one."},
            "metadata": _METADATA,
            "run": _RUN,
            "priority": inputs.PRIORITY_SCHEMA,
            "labels": inputs.LABELS_SCHEMA,
            "parent": {**_ID, "description": "The item it is part of (an epic)."},
        },
        "title",
    ),
    LIST: _input(
        {
            "status": {"type": "string", "enum": list(STATUSES)},
            "assignee": {"type": "string"},
            "blocked": {"type": "boolean", "description": "Only blocked (true) or unblocked."},
            "ready": {"type": "boolean", "description": "Only pending, unblocked items."},
            "label": _LABEL,
            "limit": inputs.count_schema(1, MOST_LISTED),
            "cursor": {"type": "string", "maxLength": 200, "description": "The last page's next."},
        }
    ),
    GET: _input({"id": _ID}, "id"),
    # Without id: the next ready item, with label if given (the tool's description says so).
    CLAIM: _input({"id": _ID, "label": _LABEL}),
    UPDATE: _input(
        {
            "id": _ID,
            "status": {
                "type": "string",
                "enum": ["pending", "completed", "failed"],
                "description": "completed or failed finishes it; pending lets it go (or "
                "reopens a failed one). in_progress comes from board_tasks_claim.",
            },
            "title": inputs.TITLE_SCHEMA,
            "priority": inputs.PRIORITY_SCHEMA,
            "labels": {**_LABELS, "description": "Labels to add."},
            "unlabel": {**_LABELS, "description": "Labels to remove."},
            "parent": {**_ID, "description": "The item it is part of now."},
            "no_parent": {"type": "boolean", "description": "true: part of none."},
            "description": _TEXT,
            "blocked_by": _IDS,
            "metadata": _METADATA,
            "answer": {**_TEXT, "description": "With status completed: the result."},
            "reason": {**_TEXT, "description": "With status failed: why."},
            "comment": {**_TEXT, "minLength": 1, "description": "A note to append; any item."},
        },
        "id",
    ),
    WATCH: _input(
        {
            "id": _ID,
            "wait_seconds": inputs.count_schema(0, inputs.MOST),
        },
        "id",
    ),
}

# What a caller is told instead of a schema's message (tools.check): by argument and keyword.
HINTS: Final[Mapping[tuple[str, str], str]] = {
    **tools.HINTS,
    ("run", "oneOf"): "'run' takes either 'prompt' or 'task'",
}
# What a caller who gives an argument that a tool does not take is told too, by tool.
_STARTS = "an item starts pending and unassigned: claim it to take it"
NOTES: Final[Mapping[str, Mapping[str, str]]] = {CREATE: {"assignee": _STARTS, "status": _STARTS}}

DESCRIPTIONS: Final[Mapping[str, str]] = {
    CREATE: (
        "Create a work item on this project's shared board (people, other agents and `start "
        "board run` see it): pending, unassigned, waiting for blocked_by. With `run`, `start "
        "board run` runs it headless once ready. Returns the item."
    ),
    LIST: (
        "List the board's items, compactly (id, title, status, assignee, blocked_by, why "
        "an item is blocked, priority, labels, parent), oldest first, a page at a time: pass "
        "a result's next as cursor for the next page. ready=true: what can be claimed now, by "
        "priority (0 first), then age."
    ),
    GET: (
        "One item whole: description, metadata, what it runs, its answer or why it failed, and "
        "its latest comments (comments_total counts all)."
    ),
    CLAIM: (
        "Claim an item before working on it: atomic, so two agents never both get it. Without "
        "id, the next ready item (with label, if given), or item null and a message saying what "
        "waits. Refused when it is blocked, finished or another's. The claim lasts while this "
        "session does."
    ),
    UPDATE: (
        "Change an item you hold (or a pending one): status completed with an answer when done, "
        "failed with a reason, pending to let it go; title, description, blocked_by, priority, "
        "labels, parent, and metadata (merged). An item cannot complete while blocked; a "
        "reassigned item refuses you, and so does one that runs above the level the user lets "
        "agents run at. A comment alone goes on any item."
    ),
    WATCH: (
        "Wait until an item is completed or failed, for at most wait_seconds; returns "
        "{done, item}. When done is false, call it again."
    ),
}


class Tools:
    """The board tools of one server: its session's claims remember the epoch they got, so
    that a write after a reassignment is fenced out."""

    def __init__(self, scope: Scope, *, wait_most: int, progress_every: float) -> None:
        self.scope = scope
        self.wait_most = wait_most
        self.progress_every = progress_every
        self.epochs: dict[str, int] = {}
        # The input schemas as listed and as checked: one statement of each tool's arguments.
        self.inputs = dict(INPUTS)
        watch = self.inputs[WATCH]
        wait = {
            **watch["properties"]["wait_seconds"],
            "maximum": wait_most,
            "description": f"How long to wait at most (default and most: {wait_most}).",
        }
        self.inputs[WATCH] = {**watch, "properties": {**watch["properties"], "wait_seconds": wait}}

    def offers(self, name: str) -> bool:
        return name in INPUTS

    def listed(self) -> list[types.Tool]:
        import mcp.types as types

        item = board.item_schema()
        outputs: dict[str, dict[str, Any]] = {
            GET: _with_comments(item),
            LIST: {
                "type": "object",
                "properties": {
                    "items": {"type": "array", "items": board.row_schema()},
                    "total": {"type": "integer"},
                    "next": {"type": "string"},
                },
                "required": ["items", "total"],
            },
            # The item claimed, or none and why (_nothing).
            CLAIM: {"type": "object", "anyOf": [item, _NOTHING]},
            WATCH: {
                "type": "object",
                "properties": {"done": {"type": "boolean"}, "item": item},
                "required": ["done", "item"],
            },
        }
        reads = (LIST, GET, WATCH)
        return [
            types.Tool(
                name=name,
                description=DESCRIPTIONS[name],
                input_schema=self.inputs[name],
                output_schema=outputs.get(name, item),
                annotations=types.ToolAnnotations(read_only_hint=name in reads),
            )
            for name in INPUTS
        ]

    async def call(self, ctx: Any, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """One tool call; a refusal or a bad argument is a result with isError."""
        import anyio.to_thread

        try:
            self._check(name, arguments)
            if name == WATCH:
                data = await self._watch(ctx, arguments)
            else:
                client = client_name(ctx)
                data = await anyio.to_thread.run_sync(self._handle, name, arguments, client)
        except StartError as error:
            return _result(str(error), None)
        return _result(json.dumps(data, ensure_ascii=False), data)

    def _check(self, name: str, arguments: Mapping[str, Any]) -> None:
        """The arguments against the tool's input schema (tools.check)."""
        tools.check(name, self.inputs[name], arguments, hints=HINTS, notes=NOTES.get(name, {}))

    def _level(self) -> str:
        """The level this session acts at: the most the user lets agents run at
        (settings.mcp_permissions), read afresh; the least when the config cannot be read."""

        try:
            return rules.allowed(rules.view(self.scope).config)[0]
        except StartError:
            return schema.LEVELS[0]

    def _handle(
        self, name: str, arguments: Mapping[str, Any], client: str | None
    ) -> dict[str, Any]:
        from start.board import file as boardfile

        me = board.session(client, self._level())
        run = self._run(arguments) if name == CREATE else None
        with boardfile.opened(self.scope.workdir) as opened:
            if name == CREATE:
                item = opened.create(
                    arguments["title"],
                    me,
                    arguments.get("description", ""),
                    arguments.get("blocked_by", ()),
                    arguments.get("metadata"),
                    run,
                    arguments.get("priority", inputs.DEFAULT_PRIORITY),
                    arguments.get("labels", ()),
                    arguments.get("parent"),
                )
            elif name == LIST:
                return self._list(opened, arguments)
            elif name == GET:
                return _with_comments_data(opened, arguments["id"])
            elif name == CLAIM:
                if "id" not in arguments:
                    return self._next(opened, arguments.get("label"), me)
                if "label" in arguments:
                    raise BadRequestError(
                        "label chooses the next item, and id names the item: give one of them"
                    )
                item = opened.claim(arguments["id"], me)
                self.epochs[item.id] = item.epoch
                return self._confirmed(opened, item, me)
            else:
                if arguments.get("no_parent") and "parent" in arguments:
                    raise BadRequestError("give parent or no_parent, not both")
                blocked_by = arguments.get("blocked_by")
                change = Change(
                    arguments.get("status"),
                    arguments.get("description"),
                    tuple(blocked_by) if blocked_by is not None else None,
                    arguments.get("metadata"),
                    arguments.get("answer"),
                    arguments.get("reason"),
                    title=arguments.get("title"),
                    priority=arguments.get("priority"),
                    add_labels=_some(arguments.get("labels")),
                    remove_labels=_some(arguments.get("unlabel")),
                    parent=NO_PARENT if arguments.get("no_parent") else arguments.get("parent"),
                )
                id_ = opened.shown(arguments["id"])
                # A comment changes nothing that runs: any session puts one on any item. With
                # other fields, those are held to the rules first, and a refusal keeps it out.
                if change != Change() or "comment" not in arguments:
                    opened.update(id_, me, change, self.epochs.get(id_))
                if "comment" in arguments:
                    opened.comment(id_, me, arguments["comment"])
                item = opened.get(id_)
                if change.status is not None:  # a finish or a release: pushed now
                    return self._pushed(opened, item)
        return board.item_data(item)

    def _setting(self, opened: Any) -> Any:
        """board_remote and board_remote_level, read afresh where they can concern the board
        (start.board.syncing.automatic)."""
        from start.board import syncing

        return syncing.automatic(opened, self.scope.workdir, self.scope.use_project)

    def _confirmed(self, opened: Any, item: Item, me: Holder) -> dict[str, Any]:
        """A claim, pushed at once with board_remote set (start.board.syncing.confirm): the
        item with "confirmed"; ClaimLostError when another machine's claim was first on the
        remote; "warning" when no sync could push it (it stays here, provisional)."""
        from start.board import syncing

        given = self._setting(opened)
        if given is None:
            return board.item_data(item)
        claim = syncing.confirm(opened, item, me.name, given)
        if claim.lost is not None:
            self.epochs.pop(item.id, None)
            raise syncing.lost(claim)
        self.epochs[claim.item.id] = claim.item.epoch
        data = board.item_data(claim.item) | {"confirmed": claim.confirmed}
        if claim.error is not None:
            data["warning"] = syncing.unconfirmed(claim.item, claim.error)
        return data

    def _pushed(self, opened: Any, item: Item) -> dict[str, Any]:
        """A change of status, pushed at once with board_remote set (syncing.pushed); "warning"
        when no sync could push it (it stays here, and the next sync pushes it)."""
        from start.board import syncing

        data = board.item_data(item)
        warning = syncing.pushed(opened, item, self.scope.workdir, self.scope.use_project)
        if warning is not None:
            data["warning"] = warning
        return data

    def _run(self, arguments: Mapping[str, Any]) -> Ask | None:
        """The run an item asks for, the agent's, checked now by the ask rules as it will be
        again before it runs (start.runs.rules.vet)."""
        given = arguments.get("run")
        if given is None:
            return None
        task = given.get("task")
        ask = Ask(
            "task" if task is not None else "prompt",
            given.get("prompt"),
            task,
            agents=(given["agent"],),
            model=given.get("model"),
            headless=True,
            permissions=given.get("permissions"),
            door=BOARD,
            by=AGENT,
        )
        from start.board import runner as boardrun

        text = ask.prompt if ask.prompt is not None else arguments.get("description", "")
        rules.vet(self.scope, boardrun.with_text(ask, text))
        return ask

    def _next(self, opened: Any, label: str | None, me: Holder) -> dict[str, Any]:
        """Claim the first ready item (with `label`), as `claim --next` does; or, when none is
        ready, say what there is instead (_nothing)."""
        labels = () if label is None else (inputs.label(label),)
        item = opened.claim_next(me, labels=labels)
        if item is None:
            return _nothing(opened, labels, me)
        self.epochs[item.id] = item.epoch
        return self._confirmed(opened, item, me)

    def _list(self, opened: Any, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A page of the listing: after the cursor's key, when given, and the next page's
        cursor when there are more (_cursor)."""
        from start.board.rows import Filter

        status = arguments.get("status")
        label = arguments.get("label")
        found = Filter(
            (status,) if status else (),
            arguments.get("assignee"),
            arguments.get("blocked"),
            bool(arguments.get("ready")),
            labels=() if label is None else (inputs.label(label),),
        )
        ready = bool(arguments.get("ready"))
        listing = _listing(opened.root, arguments)
        cursor = arguments.get("cursor")
        after = None if cursor is None else _key(cursor, listing, 2 if ready else 1)
        limit = arguments.get("limit", LISTED)
        # One more than the page: whether there is a next one.
        items, total = opened.items(found, limit + 1, by_priority=ready, after=after)
        unconfirmed = opened.unconfirmed()
        listed: dict[str, Any] = {
            "items": [board.row_data(i, i.id not in unconfirmed) for i in items[:limit]],
            "total": total,
        }
        if len(items) > limit:
            listed["next"] = _cursor(listing, opened.page_key(items[limit - 1], ready))
        return listed

    async def _watch(self, ctx: Any, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Poll the item until it ends or wait_seconds pass, telling the client its state now
        and then (when it asked for progress)."""
        import anyio
        import anyio.to_thread

        from start.board import file as boardfile
        from start.board import store as boarddb

        wait = arguments.get("wait_seconds", self.wait_most)
        began = time.monotonic()
        opened = await anyio.to_thread.run_sync(boardfile.open_board, self.scope.workdir)
        assert opened is not None
        try:
            item, version = await anyio.to_thread.run_sync(opened.poll, arguments["id"], None)
            assert item is not None
            told, last = -1.0, -self.progress_every
            while True:
                elapsed = time.monotonic() - began
                if item.status in FINISHED or elapsed >= wait:
                    break
                if elapsed - last >= self.progress_every:
                    told = max(round(elapsed, 1), round(told + 0.1, 1))  # it must grow
                    last = elapsed
                    holder = f", held by {item.assignee}" if item.assignee else ""
                    message = f"{item.id}: {item.status}{holder} ({int(elapsed)} s)"
                    await ctx.session.report_progress(told, message=message)
                await anyio.sleep(boarddb.POLL)
                changed, version = await anyio.to_thread.run_sync(
                    opened.poll, arguments["id"], version
                )
                if changed is not None:
                    if changed.status != item.status:
                        last = -self.progress_every  # tell the change at once
                    item = changed
        finally:
            opened.close()
        return {"done": item.status in FINISHED, "item": board.item_data(item)}


# What board_tasks_claim without an id returns when nothing is ready (_nothing).
_NOTHING: Final = {
    "type": "object",
    "properties": {
        "item": {"type": "null"},
        "blocked": {"type": "integer"},
        "in_progress": {"type": "integer"},
        "message": {"type": "string"},
    },
    "required": ["item", "blocked", "in_progress", "message"],
}


def _nothing(opened: Any, labels: tuple[str, ...], me: Holder) -> dict[str, Any]:
    """What a session that found nothing ready to claim is told, as it can act on it: how many
    items (with `labels`) wait on others, how many are in progress, how many are ready but run
    above its level, how many are a workflow run's; or that there is no open one. Not an error:
    an empty queue is an answer. Counted just after the claim found none, so a change since may
    show."""
    from start.board.rows import Filter

    def count(found: Filter) -> int:
        total: int = opened.items(found, limit=0)[1]
        return total

    blocked = count(Filter((PENDING,), blocked=True, labels=labels))
    held = count(Filter((IN_PROGRESS,), labels=labels))
    # Ready items are left after a claim found none only when they run above its level.
    above = count(Filter(ready=True, labels=labels)) if board.above(USER_LEVEL, me.level) else 0
    # Pending and not blocked, yet not ready: a workflow run's items, which its run claims.
    runs = count(Filter((PENDING,), blocked=False, labels=labels)) - count(
        Filter(ready=True, labels=labels)
    )
    labelled = f" labelled {labels[0]}" if labels else ""
    said = []
    if blocked:
        said.append(f"{blocked} blocked (board_tasks_list blocked=true says on what)")
    if held:
        said.append(f"{held} in progress (board_tasks_watch ID waits for one to end)")
    if above:
        said.append(
            f"{above} ready but run above your level '{me.level}' (settings.mcp_permissions): "
            "the user runs those"
        )
    if runs:
        said.append(f"{runs} a workflow run's (its run claims them: start workflow resume ID)")
    if said:
        message = f"nothing{labelled} is ready to claim: " + "; ".join(said)
    elif labels:
        message = f"nothing to claim: no open item is labelled {labels[0]}"
    elif count(Filter(archived=None)):
        message = "nothing to claim: every item is completed, failed or archived"
    else:
        message = "nothing to claim: the board is empty (board_tasks_create adds an item)"
    return {"item": None, "blocked": blocked, "in_progress": held, "message": message}


def _listing(root: str, arguments: Mapping[str, Any]) -> str:
    """Which listing a call asks for: its board and its filters, as a short digest, so that a
    cursor of one is not taken for another's."""
    import hashlib

    asked = {name: arguments[name] for name in _LISTING if name in arguments}
    said = json.dumps([root, asked], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(inputs.valid(said).encode()).hexdigest()[:16]


def _cursor(listing: str, key: tuple[int, ...]) -> str:
    """The cursor of the page after `key` in `listing`: opaque to the caller."""
    import base64

    said = ".".join((_CURSOR, listing, *map(str, key)))
    return base64.urlsafe_b64encode(said.encode("ascii")).decode("ascii").rstrip("=")


def _key(cursor: str, listing: str, size: int) -> tuple[int, ...]:
    """The key a `cursor` of `listing` goes on after; BadRequestError naming the fix for one
    that is not a cursor start gave, or is another listing's."""
    import base64
    import binascii

    try:
        said = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        version, made_for, *key = said.split(".")
        # Numbers an id may have (a larger one would not fit SQLite's integers).
        found = tuple(int(value) for value in key if value.isdigit() and len(value) <= DIGITS)
    except (binascii.Error, ValueError):
        version, made_for, key, found = "", "", [], ()
    if version != _CURSOR or len(found) != size or len(key) != size:
        raise BadRequestError(
            "cursor is not one that board_tasks_list gave: pass the next of its last result "
            "as it is, or leave cursor out to list from the first page"
        )
    if made_for != listing:
        raise BadRequestError(
            "cursor is of another listing (other filters, or another board): give the filters "
            "of the call that returned it, or leave cursor out to list from the first page"
        )
    return found


def _some(labels: list[str] | None) -> tuple[str, ...] | None:
    """Labels given to add or remove; None for none given."""
    return tuple(labels) if labels else None


def _with_comments(item: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of board_tasks_get's result: the item, its latest comments, and their count."""
    comment = {
        "type": "object",
        "properties": {key: {"type": "string"} for key in ("at", "author", "text")},
        "required": ["at", "author", "text"],
    }
    return {
        **item,
        "properties": {
            **item["properties"],
            "comments": {"type": "array", "items": comment},
            "comments_total": {"type": "integer"},
        },
        "required": [*item["required"], "comments", "comments_total"],
    }


def _with_comments_data(opened: Any, id_: str) -> dict[str, Any]:
    """An item as board_tasks_get gives it: whole, with its latest COMMENTS_GIVEN comments (the
    oldest first), each cut to COMMENT_CHARACTERS, and how many it has."""
    data = board.item_data(opened.get(id_))
    comments = opened.comments(id_)
    given = []
    for comment in comments[-COMMENTS_GIVEN:]:
        shown = board.comment_data(comment)
        text = shown["text"]
        if len(text) > COMMENT_CHARACTERS:
            more = len(text) - COMMENT_CHARACTERS
            shown["text"] = f"{text[:COMMENT_CHARACTERS]}… [{more:,} more characters]"
        given.append(shown)
    return {**data, "comments": given, "comments_total": len(comments)}


def client_name(ctx: Any) -> str | None:
    """The client's name, as it gave it in `initialize` (None when it gave none)."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return name if isinstance(name, str) else None


def _result(text: str, data: dict[str, Any] | None) -> types.CallToolResult:
    import mcp.types as types

    return types.CallToolResult(
        # Valid Unicode, as JSON-RPC carries it: a refusal may name a path that is not.
        content=[types.TextContent(type="text", text=inputs.valid(text))],
        structured_content=data,
        is_error=data is None,
    )
