"""The changes a person makes in the page: add, edit, comment, archive and unarchive, reassign,
reopen. Each is the call the command line makes (start.board.store.Board), by the same person
(start.board.person of the login name, as `start board` without --as), with the same input
limits (start.base.inputs) and the same automatic sync (start.board.syncing.automatic); the
store's rules decide, and a refusal is their sentence, word for word.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from start import board
from start.base import inputs
from start.board import NO_PARENT, PENDING, BadRequestError, Change, Item

if TYPE_CHECKING:
    from start.board.store import Board

# Each action and the fields it takes; any other field is refused, by name.
FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "add": frozenset({"title", "description", "priority", "labels", "parent", "after"}),
    "edit": frozenset(
        {"title", "description", "priority", "add_labels", "remove_labels", "parent"}
    ),
    "comment": frozenset({"text"}),
    "archive": frozenset(),
    "unarchive": frozenset(),
    "reassign": frozenset({"to"}),
    "reopen": frozenset(),
}


def _fields(action: str, body: Mapping[str, Any]) -> None:
    wanted = FIELDS.get(action)
    if wanted is None:
        raise BadRequestError(f"'{action}' is no change the page makes: {', '.join(FIELDS)}")
    extra = sorted(set(body) - wanted)
    if extra:
        takes = ", ".join(sorted(wanted)) or "no field"
        raise BadRequestError(f"{action} takes {takes}, not '{extra[0]}'")


def _text(body: Mapping[str, Any], name: str, most: int, least: int = 0) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequestError(f"{name} is text, not {type(value).__name__}")
    try:
        return inputs.text(value, most, least=least)
    except inputs.InputError as error:
        raise BadRequestError(f"{name}: {error}") from None


def _ids(body: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = body.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequestError(f"{name} is a list of item ids")
    for given in value:
        inputs.item_ref(given)
    return tuple(value)


def _labels(body: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = body.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequestError(f"{name} is a list of labels")
    return tuple(inputs.label(label) for label in value)


def _priority(body: Mapping[str, Any]) -> int | None:
    value = body.get("priority")
    return None if value is None else inputs.priority(value)


def _parent(body: Mapping[str, Any]) -> str | None:
    value = body.get("parent")
    if value is None:
        return None
    if value == "":
        return NO_PARENT
    if not isinstance(value, str):
        raise BadRequestError("parent is an item id, or empty for none")
    inputs.item_ref(value)
    return value


def add(opened: Board, by: board.Holder, body: Mapping[str, Any]) -> Item:
    """A new item, as `start board add TITLE -d ... --priority --label --parent --after`."""
    title = _text(body, "title", inputs.TITLE_LIMIT, least=1)
    if title is None:
        raise BadRequestError("an item needs a title")
    priority = _priority(body)
    return opened.create(
        title,
        by,
        _text(body, "description", inputs.TEXT_LIMIT) or "",
        _ids(body, "after"),
        None,
        None,
        inputs.DEFAULT_PRIORITY if priority is None else priority,
        _labels(body, "labels"),
        _parent(body) or None,
    )


def edit(opened: Board, by: board.Holder, id_: str, body: Mapping[str, Any]) -> Item:
    """An item's title, description, priority, labels or parent, as `start board update`."""
    change = Change(
        description=_text(body, "description", inputs.TEXT_LIMIT),
        title=_text(body, "title", inputs.TITLE_LIMIT, least=1),
        priority=_priority(body),
        add_labels=_labels(body, "add_labels") or None,
        remove_labels=_labels(body, "remove_labels") or None,
        parent=_parent(body),
    )
    if change == Change():
        raise BadRequestError("nothing to change: give a title, description, priority, labels "
                              "or parent")  # fmt: skip
    return opened.update(id_, by, change)


def _synced(opened: Board, item: Item, workdir: str) -> dict[str, Any]:
    """A change of an item's holder or status, pushed at once with board_remote set, as the
    command line pushes it (syncing.pushed); "warning" when no sync could push it."""
    from start.board import syncing

    data = board.item_data(item)
    warning = syncing.pushed(opened, item, workdir)
    if warning is not None:
        data["warning"] = warning
    return data


def act(
    opened: Board, workdir: str, by: board.Holder, action: str, id_: str | None, body: Any
) -> dict[str, Any]:
    """Make the change `action` names to item `id_` (None: `add`), as `by`: the item as it is
    after, as JSON data. BadRequestError for fields the action does not take; the store's
    errors (RefusedError, NoSuchItemError) as they are."""
    if not isinstance(body, dict):
        raise BadRequestError("a change is a JSON object of its fields")
    _fields(action, body)
    if action == "add":
        return board.item_data(add(opened, by, body))
    if id_ is None:
        raise BadRequestError(f"{action} changes an item: name it")
    one: dict[str, Callable[[], dict[str, Any]]] = {
        "edit": lambda: board.item_data(edit(opened, by, id_, body)),
        "comment": lambda: _commented(opened, by, id_, body),
        "archive": lambda: board.item_data(opened.archive([id_], by)[0]),
        "unarchive": lambda: board.item_data(opened.archive([id_], by, archived=False)[0]),
        "reassign": lambda: _synced(opened, _reassigned(opened, by, id_, body), workdir),
        "reopen": lambda: _synced(opened, opened.update(id_, by, Change(PENDING)), workdir),
    }
    return one[action]()


def _commented(
    opened: Board, by: board.Holder, id_: str, body: Mapping[str, Any]
) -> dict[str, Any]:
    text = _text(body, "text", inputs.TEXT_LIMIT, least=1)
    if text is None:
        raise BadRequestError("a comment needs its text")
    opened.comment(id_, by, text)
    return board.item_data(opened.get(id_))


def _reassigned(opened: Board, by: board.Holder, id_: str, body: Mapping[str, Any]) -> Item:
    to = body.get("to")
    if not isinstance(to, str):
        raise BadRequestError("reassign needs the name to give the item to")
    return opened.reassign(id_, board.person(to).name, by)
