"""The board tools an agent works a queue with, through the SDK's own client: board_tasks_claim
without an id (the next ready item, by label, and what it says when nothing is ready),
board_tasks_list a page at a time (a cursor every item can be reached by, at 10,000 items too),
board_tasks_update's priority, labels and parent under the board's rules, and the size of the
tools' schemas. Real `start mcp` processes racing: tests/e2e/test_board_agents.py."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from start.board import Change, Holder
from start.board import file as boardfile
from start.compose.ask import Ask
from start.mcp import board as tools
from tests.mcp.conftest import connect

pytestmark = pytest.mark.anyio

ME = Holder("alice")


async def call(client: Any, name: str, **arguments: Any) -> Any:
    return await client.call_tool(name, arguments)


def text(result: Any) -> str:
    return str(result.content[0].text)


def session() -> str:
    """The in-process session's name: the SDK's client gives the name `mcp`."""
    return f"mcp:mcp:{os.getpid()}"


# --- board_tasks_claim without an id ------------------------------------------------------------


async def test_claim_without_an_id_takes_the_highest_priority_then_the_oldest(
    global_dir: Path, isolated: Path
) -> None:
    with boardfile.opened(str(isolated)) as opened:
        for title, priority in (("c", 2), ("a", 0), ("b", 1), ("a2", 0)):
            opened.create(title, ME, priority=priority)
        opened.create("blocked", ME, blocked_by=["item-1"], priority=0)
    async with connect(isolated, "legacy") as client:
        taken = [(await call(client, "board_tasks_claim")).structured_content for _ in range(4)]
        # The session's claims carry their epoch: its update of one is not fenced out.
        done = await call(client, "board_tasks_update", id=taken[0]["id"], status="completed")
    assert [item["id"] for item in taken] == ["item-2", "item-4", "item-3", "item-1"]
    assert {item["assignee"] for item in taken} == {session()}
    assert done.structured_content["status"] == "completed"


async def test_claim_without_an_id_by_label_takes_only_items_with_that_label(
    global_dir: Path, isolated: Path
) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("urgent, no label", ME, priority=0)
        opened.create("a bug", ME, labels=["bug"])
        opened.create("an urgent bug", ME, labels=["bug", "ui"], priority=1)
    async with connect(isolated, "legacy") as client:
        first = await call(client, "board_tasks_claim", label="bug")
        second = await call(client, "board_tasks_claim", label="bug")
        none = await call(client, "board_tasks_claim", label="bug")
        both = await call(client, "board_tasks_claim", id="1", label="bug")
        bad = await call(client, "board_tasks_claim", label="a b")
    assert [first.structured_content["id"], second.structured_content["id"]] == [
        "item-3",
        "item-2",
    ]
    assert (none.is_error, none.structured_content) == (
        False,
        {
            "item": None,
            "blocked": 0,
            "in_progress": 2,
            "message": "nothing labelled bug is ready to claim: 2 in progress "
            "(board_tasks_watch ID waits for one to end)",
        },
    )
    assert (both.is_error, text(both)) == (
        True,
        "label chooses the next item, and id names the item: give one of them",
    )
    assert (bad.is_error, text(bad)) == (
        True,
        "'a b' is not a label: a label is 1 to 50 characters, without spaces or commas",
    )


async def test_when_nothing_is_ready_claim_says_what_there_is_and_is_no_error(
    config: Path, isolated: Path
) -> None:
    """An empty board; a board of finished items; blocked, held and above the session's level
    (read-only, settings.mcp_permissions' default) items; and no open item of a label."""
    answers = []
    async with connect(isolated, "legacy") as client:
        answers.append(await call(client, "board_tasks_claim"))
        with boardfile.opened(str(isolated)) as opened:
            opened.create("finished", ME)
            opened.update("item-1", ME, Change("completed"))
        answers.append(await call(client, "board_tasks_claim"))
        with boardfile.opened(str(isolated)) as opened:
            opened.create("held", ME)
            opened.claim("item-2", Holder("bob"))
            opened.create("waits", ME, blocked_by=["item-2"])
            opened.create("waits too", ME, blocked_by=["item-2"])
            opened.create("yours", ME, run=Ask(task="fixer", permissions="edit"))
        answers.append(await call(client, "board_tasks_claim"))
        answers.append(await call(client, "board_tasks_claim", label="docs"))
    assert [(answer.is_error, answer.structured_content) for answer in answers] == [
        (
            False,
            {
                "item": None,
                "blocked": 0,
                "in_progress": 0,
                "message": "nothing to claim: the board is empty (board_tasks_create adds an item)",
            },
        ),
        (
            False,
            {
                "item": None,
                "blocked": 0,
                "in_progress": 0,
                "message": "nothing to claim: every item is completed, failed or archived",
            },
        ),
        (
            False,
            {
                "item": None,
                "blocked": 2,
                "in_progress": 1,
                "message": "nothing is ready to claim: 2 blocked (board_tasks_list "
                "blocked=true says on what); 1 in progress (board_tasks_watch ID waits for one "
                "to end); 1 ready but run above your level 'read-only' "
                "(settings.mcp_permissions): the user runs those",
            },
        ),
        (
            False,
            {
                "item": None,
                "blocked": 0,
                "in_progress": 0,
                "message": "nothing to claim: no open item is labelled docs",
            },
        ),
    ]
    assert json.loads(text(answers[0])) == answers[0].structured_content


@pytest.fixture
def config(global_dir: Path) -> Path:
    """The mcp tests' CONFIG with a task that allows edit."""
    file = global_dir / "config.toml"
    extra = '\n[tasks.fixer]\ndescription = "Fix"\nprompt = "Fix: {instructions}"\npermissions = "edit"\n'
    file.write_text(file.read_text() + extra)
    return file


# --- board_tasks_list a page at a time ----------------------------------------------------------


async def pages(client: Any, **arguments: Any) -> list[dict[str, Any]]:
    """Every page of a listing (from `cursor`, when given), following `next`."""
    found = [(await call(client, "board_tasks_list", **arguments)).structured_content]
    while "next" in found[-1]:
        arguments["cursor"] = found[-1]["next"]
        page = await call(client, "board_tasks_list", **arguments)
        assert page.is_error is False, text(page)
        found.append(page.structured_content)
    return found


async def test_a_listing_goes_on_after_its_cursor_whatever_is_made_between_pages(
    global_dir: Path, isolated: Path
) -> None:
    """Items made between two pages come after the cursor (their ids are higher): none is
    skipped or shown twice. An item that stops matching between pages is left out of the pages
    after; total counts what matches at each call."""
    with boardfile.opened(str(isolated)) as opened:
        for n in range(1, 8):
            opened.create(f"item {n}", ME)
    async with connect(isolated, "legacy") as client:
        first = (
            await call(client, "board_tasks_list", limit=3, status="pending")
        ).structured_content
        with boardfile.opened(str(isolated)) as opened:
            opened.create("made between pages", ME)
            opened.claim("item-5", Holder("bob"))  # no longer pending: left out from now on
        rest = await pages(client, limit=3, status="pending", cursor=first["next"])
    ids = [row["id"] for page in [first, *rest] for row in page["items"]]
    assert ids == ["item-1", "item-2", "item-3", "item-4", "item-6", "item-7", "item-8"]
    assert [page["total"] for page in [first, *rest]] == [7, 7, 7]
    assert "next" not in rest[-1]


async def test_a_ready_listing_pages_by_priority_then_age(global_dir: Path, isolated: Path) -> None:
    with boardfile.opened(str(isolated)) as opened:
        for n in range(1, 11):
            opened.create(f"item {n}", ME, priority=n % 3, labels=["odd"] if n % 2 else [])
    async with connect(isolated, "legacy") as client:
        ready = await pages(client, ready=True, limit=4)
        odd = await pages(client, ready=True, label="odd", limit=2)
    assert [[row["id"] for row in page["items"]] for page in ready] == [
        ["item-3", "item-6", "item-9", "item-1"],
        ["item-4", "item-7", "item-10", "item-2"],
        ["item-5", "item-8"],
    ]
    assert [row["id"] for page in odd for row in page["items"]] == [
        "item-3", "item-9", "item-1", "item-7", "item-5"
    ]  # fmt: skip
    assert [page["total"] for page in odd] == [5, 5, 5]


async def test_a_cursor_not_of_this_listing_says_how_to_go_on(
    global_dir: Path, isolated: Path, tmp_path: Path
) -> None:
    with boardfile.opened(str(isolated)) as opened:
        for n in range(1, 4):
            opened.create(f"item {n}", ME)
    other = tmp_path / "other"
    other.mkdir()
    with boardfile.opened(str(other)) as opened:
        for n in range(1, 4):
            opened.create(f"elsewhere {n}", ME)
    async with connect(other, "legacy") as client:
        elsewhere = (await call(client, "board_tasks_list", limit=1)).structured_content["next"]
    async with connect(isolated, "legacy") as client:
        cursor = (await call(client, "board_tasks_list", limit=1)).structured_content["next"]
        # A cursor made by hand from a real one, with a number no id has.
        said = base64.urlsafe_b64decode(cursor + "==").decode().rsplit(".", 1)[0]
        forged = base64.urlsafe_b64encode(f"{said}.{10**30}".encode()).decode()
        found = [
            await call(client, "board_tasks_list", cursor="garbage"),
            await call(client, "board_tasks_list", cursor=cursor[:-2]),
            await call(client, "board_tasks_list", cursor=forged),
            await call(client, "board_tasks_list", cursor=cursor, ready=True),
            await call(client, "board_tasks_list", cursor=cursor, status="pending"),
            await call(client, "board_tasks_list", cursor=elsewhere),
            await call(client, "board_tasks_list", cursor=cursor, limit=5),
        ]
    malformed = (
        True,
        "cursor is not one that board_tasks_list gave: pass the next of its last result as it "
        "is, or leave cursor out to list from the first page",
    )
    foreign = (
        True,
        "cursor is of another listing (other filters, or another board): give the filters of "
        "the call that returned it, or leave cursor out to list from the first page",
    )
    assert [(result.is_error, text(result)) for result in found[:6]] == [
        malformed,
        malformed,
        malformed,
        malformed,  # ready's key has two values
        foreign,
        foreign,
    ]
    # Another limit is the same listing.
    assert [row["id"] for row in found[6].structured_content["items"]] == ["item-2", "item-3"]


@pytest.mark.slow
async def test_at_ten_thousand_items_an_agent_reaches_every_item(
    global_dir: Path, isolated: Path
) -> None:
    # One transaction: the board is the fixture, not what is tested.
    with boardfile.opened(str(isolated)) as opened, opened.connection:
        for n in range(1, 10_001):
            opened.connection.execute(
                "INSERT INTO items (title, description, status, metadata, created_by, created, "
                "updated, level, level_by, priority) VALUES (?, '', 'pending', '{}', 'alice', "
                "'', '', 'full', 'alice', ?)",
                (f"item {n}".encode(), n % 5),
            )
    async with connect(isolated, "legacy") as client:
        listed = await pages(client, limit=tools.MOST_LISTED)
        ready = await pages(client, ready=True, limit=tools.MOST_LISTED)
    ids = [row["id"] for page in listed for row in page["items"]]
    assert ids == [f"item-{n}" for n in range(1, 10_001)]
    by_priority = [row["id"] for page in ready for row in page["items"]]
    assert sorted(by_priority, key=lambda id_: int(id_[5:])) == ids
    priorities = [row["priority"] for page in ready for row in page["items"]]
    assert priorities == sorted(priorities)
    assert len(listed) == len(ready) == 50


# --- board_tasks_update: priority, labels and parent ---------------------------------------------


async def test_a_session_changes_priority_labels_and_parent_of_what_it_may_change(
    config: Path, isolated: Path
) -> None:
    """Priority, labels and parent never reach a run: a read-only session may change them on an
    item of the user's that runs at `edit`, and the item's level stays the user's; on an item
    that another holds it may not, and a completed item's may still change."""
    with boardfile.opened(str(isolated)) as opened:
        opened.create("Epic", ME)
        opened.create("Fix", ME, run=Ask(task="fixer", permissions="edit"), labels=["backend"])
        opened.create("Held", ME)
        opened.claim("item-3", Holder("bob"))
        opened.create("Done", ME)
        opened.update("item-4", ME, Change("completed"))
    async with connect(isolated, "legacy") as client:
        changed = await call(
            client,
            "board_tasks_update",
            id="2",
            priority=0,
            labels=["ui", "urgent"],
            unlabel=["backend"],
            parent="1",
        )
        unparented = await call(client, "board_tasks_update", id="2", no_parent=True)
        held = await call(client, "board_tasks_update", id="3", priority=0)
        finished = await call(client, "board_tasks_update", id="4", labels=["shipped"])
        both = await call(client, "board_tasks_update", id="2", parent="1", no_parent=True)
        loop = await call(client, "board_tasks_update", id="1", parent="item-1")
        bad = await call(client, "board_tasks_update", id="2", priority=5)
    item = changed.structured_content
    assert (item["priority"], item["labels"], item["parent"], item["level"]) == (
        0,
        ["ui", "urgent"],
        "item-1",
        "full",
    )
    assert unparented.structured_content["parent"] is None
    assert [(result.is_error, text(result)) for result in (held, both, loop, bad)] == [
        (
            True,
            "item-3 is held by bob: only its holder changes it (start board reassign item-3 NAME "
            "hands it over)",
        ),
        (True, "give parent or no_parent, not both"),
        (True, "item-1 cannot be its own parent"),
        (True, "invalid arguments at priority: 5 is not a whole number from 0 to 4"),
    ]
    assert finished.structured_content["labels"] == ["shipped"]
    with boardfile.opened(str(isolated)) as opened:
        events = opened.events("item-2")
    assert [(event.actor, dict(event.detail)) for event in events[1:]] == [
        (
            session(),
            {
                "add_labels": ["ui", "urgent"],
                "parent": "item-1",
                "priority": 0,
                "remove_labels": ["backend"],
            },
        ),
        (session(), {"no_parent": True}),
    ]


# --- the size of the schemas --------------------------------------------------------------------

# The characters of the board tools in tools/list (names, descriptions, input and output
# schemas), as JSON: an agent pays for each of them in every session. 13,477 before issue 46's
# cursor, claim without an id and update's priority, labels and parent; 14,755 with them;
# 15,224 with comments (get's latest comments, update's comment); 15,673 with ids of other
# machines' items (item-PREFIX.N: the id's pattern and description, in each tool that takes one).
SCHEMA_CHARACTERS = 15_700


async def test_the_board_tools_stay_small(global_dir: Path, isolated: Path) -> None:
    async with connect(isolated, "legacy") as client:
        listed = (await client.list_tools()).tools
    board = [
        tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        for tool in listed
        if tool.name.startswith("board_")
    ]
    assert len(board) == 6
    assert len(json.dumps(board)) <= SCHEMA_CHARACTERS
