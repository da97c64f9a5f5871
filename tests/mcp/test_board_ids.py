"""`start mcp`'s board tools with sync on, through the SDK's own client: another machine's item
is listed as `item-PREFIX.N`, and every tool takes it by that id or by its full origin; a prefix
two origins share is refused naming both full ids; pages of a listing go on by row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from start.board import Holder
from start.board import file as boardfile
from tests.board.test_ids import brought, project, synced
from tests.mcp.conftest import connect

pytestmark = pytest.mark.anyio

A, B, C = "k3f9aaaaaaaa", "k3f9bbbbbbbb", "zzzzcccccccc"


async def call(client: Any, name: str, **arguments: Any) -> Any:
    return await client.call_tool(name, arguments)


async def test_the_tools_take_another_machines_item_by_its_short_or_full_id(
    global_dir: Path, isolated: Path, tmp_path: Path
) -> None:
    with (
        boardfile.opened(str(isolated)) as here,
        boardfile.opened(str(project(tmp_path, "c"))) as c,
    ):
        synced(here, A)
        synced(c, C)
        here.create("Here", Holder("ann"))
        c.create("There", Holder("cat"))
        brought(here, c)
    async with connect(isolated, "legacy") as client:
        listed = await call(client, "board_tasks_list")
        got = await call(client, "board_tasks_get", id=f"item-{C}.1")
        claimed = await call(client, "board_tasks_claim", id=f"item-{C}.1")
        done = await call(
            client, "board_tasks_update", id="item-zzzzc.1", status="completed", answer="A",
            comment="done here",
        )  # fmt: skip
        first = await call(client, "board_tasks_list", limit=1)
        second = await call(
            client, "board_tasks_list", limit=1, cursor=first.structured_content["next"]
        )
    assert [row["id"] for row in listed.structured_content["items"]] == ["item-1", "item-zzzz.1"]
    assert (got.structured_content["id"], got.structured_content["title"]) == (
        "item-zzzz.1",
        "There",
    )
    assert (claimed.is_error, claimed.structured_content["id"]) == (False, "item-zzzz.1")
    assert (done.is_error, done.structured_content["status"]) == (False, "completed")
    assert [row["id"] for row in first.structured_content["items"]] == ["item-1"]
    assert [row["id"] for row in second.structured_content["items"]] == ["item-zzzz.1"]


async def test_a_prefix_two_origins_share_is_refused_over_mcp_naming_both(
    global_dir: Path, isolated: Path, tmp_path: Path
) -> None:
    with (
        boardfile.opened(str(isolated)) as here,
        boardfile.opened(str(project(tmp_path, "a"))) as a,
        boardfile.opened(str(project(tmp_path, "b"))) as b,
    ):
        synced(here, C)
        synced(a, A)
        synced(b, B)
        a.create("A's", Holder("ann"))
        b.create("B's", Holder("bob"))
        brought(here, a, b)
    async with connect(isolated, "legacy") as client:
        refused = await call(client, "board_tasks_get", id="item-k3f9.1")
        taken = await call(client, "board_tasks_get", id="item-k3f9b.1")
        wrong = await call(client, "board_tasks_get", id="item-K3F9B.1")
    assert (refused.is_error, refused.content[0].text) == (
        True,
        f"item-k3f9.1 is ambiguous: the origins of 2 machines on this board start with 'k3f9' "
        f"(item-{A}.1, item-{B}.1); give more of the origin, or all of it",
    )
    assert taken.structured_content["title"] == "B's"
    assert wrong.is_error is True
    assert wrong.content[0].text.startswith(
        "invalid arguments at id: 'item-K3F9B.1' is not an item id: "
    )
