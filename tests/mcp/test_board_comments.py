"""Comments over MCP (start.mcp.board, docs/board.md "Comments"), through the SDK's own client:
a session comments through board_tasks_update's `comment` on any item, held by another or
running above its level, while the other fields keep their rules; board_tasks_get returns the
latest comments, bounded, as valid Unicode."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from start.board import Holder
from start.board import file as boardfile
from start.compose.ask import Ask
from start.mcp import board as tools
from tests.fake_headless import agent
from tests.mcp.conftest import connect
from tests.mcp.test_board import call, text

pytestmark = pytest.mark.anyio


@pytest.fixture
def config(global_dir: Path) -> Path:
    """The mcp tests' CONFIG, with a headless stand-in agent and a task."""
    file = global_dir / "config.toml"
    extra = (
        f'\n{agent("fake")}\n[tasks.fixer]\ndescription = "Fix"\nprompt = "Fix: {{instructions}}"\n'
    )
    file.write_text(file.read_text() + extra)
    return file


async def test_a_session_comments_on_any_item_and_the_other_fields_keep_their_rules(
    config: Path, isolated: Path
) -> None:
    alice = Holder("alice")
    with boardfile.opened(str(isolated)) as opened:
        opened.create("Fix", alice, "the user's words", run=Ask(task="fixer", permissions="full"))
        opened.create("Notes", alice)
        opened.claim("2", alice)
    async with connect(isolated, "legacy") as client:
        above = await call(client, "board_tasks_update", id="1", comment="seen it fail twice")
        held = await call(client, "board_tasks_update", id="item-2", comment="a note for alice")
        mixed = await call(client, "board_tasks_update", id="1", title="x", comment="lost")
        other = await call(client, "board_tasks_update", id="2", metadata={"a": 1}, comment="no")
        empty = await call(client, "board_tasks_update", id="1", comment="")
        got = await call(client, "board_tasks_get", id="1")
    me = f"mcp:mcp:{os.getpid()}"
    assert (above.is_error, held.is_error) == (False, False)
    assert (held.structured_content["status"], held.structured_content["assignee"]) == (
        "in_progress",
        "alice",
    )
    assert (mixed.is_error, text(mixed)) == (
        True,
        f"item-1 runs at up to 'full', and {me} acts at 'read-only' (settings.mcp_permissions): "
        "it may not change an item that runs above its level. Make an item of your own, or ask "
        "the user",
    )
    assert (other.is_error, text(other)) == (
        True,
        "item-2 is held by alice: only its holder changes it (start board reassign item-2 NAME "
        "hands it over)",
    )
    assert (empty.is_error, text(empty)) == (
        True,
        "invalid arguments at comment: empty; give at least one character",
    )
    item = got.structured_content
    assert [(c["author"], c["text"]) for c in item["comments"]] == [(me, "seen it fail twice")]
    assert item["comments_total"] == 1
    # Nothing that runs changed: the item keeps the user's words and level.
    assert (item["title"], item["description"], item["level"]) == (
        "Fix",
        "the user's words",
        "full",
    )
    with boardfile.opened(str(isolated)) as opened:
        # A refused change keeps its comment out: the call is all or nothing.
        assert [c.text for c in opened.comments("1")] == ["seen it fail twice"]
        assert [c.text for c in opened.comments("2")] == ["a note for alice"]
        assert opened.get("2").metadata == {}


async def test_get_gives_the_latest_comments_cut_and_valid(
    global_dir: Path, isolated: Path
) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("Long thread", Holder("alice"))
        for n in range(24):
            opened.comment("1", Holder("bob"), f"comment {n}")
        opened.comment("1", Holder("bob"), "x" * (tools.COMMENT_CHARACTERS + 5))
        opened.comment("1", Holder("bob"), "a byte that is not UTF-8: \udcff")
    async with connect(isolated, "legacy") as client:
        got = await call(client, "board_tasks_get", id="item-1")
    item = got.structured_content
    texts = [c["text"] for c in item["comments"]]
    assert item["comments_total"] == 26
    assert texts[:18] == [f"comment {n}" for n in range(6, 24)]
    assert texts[18] == "x" * tools.COMMENT_CHARACTERS + "… [5 more characters]"
    assert texts[19] == "a byte that is not UTF-8: \ufffd"
    assert len(texts) == tools.COMMENTS_GIVEN
