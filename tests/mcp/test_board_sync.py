"""`start mcp`'s board tools with board_remote set (start.board.syncing): a claim through
board_tasks_claim is pushed at once and confirmed, or lost to another machine's claim pushed
first (an error result), and a finish through board_tasks_update is pushed at once. The server
runs in a clone of a bare remote; the other machine is tests/board/test_sync_cli.py's, the real
`start` in a clone of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.board.test_sync_cli import Machine, remote
from tests.conftest import git, run_start
from tests.mcp.conftest import connect

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

__all__ = ["remote"]  # the fixture, shared with test_sync_cli


async def call(client: Any, name: str, **arguments: Any) -> Any:
    return await client.call_tool(name, arguments)


async def test_a_claim_and_a_finish_through_mcp_are_pushed_at_once(
    global_dir: Path, tmp_path: Path, remote: Path
) -> None:
    config = global_dir / "config.toml"
    config.write_text(
        config.read_text().replace("[settings]\n", '[settings]\nboard_remote = "origin"\n', 1)
    )
    work = tmp_path / "ann-work"
    git(tmp_path, "clone", "--quiet", str(remote), str(work))
    bob = Machine(tmp_path, remote, "bob")
    bob.start("board", "add", "Fix the retry", "--as", "bob")
    bob.start("board", "add", "Write the notes", "--as", "bob")
    bob.sync()
    synced = run_start("-d", str(work), "board", "sync")  # this machine's board, as the server's
    assert synced.returncode == 0, synced.stderr
    listed = run_start("-d", str(work), "board", "--json")
    shown = {row["title"]: row["id"] for row in json.loads(listed.stdout)}  # bob's: item-PREFIX.N
    fix, notes = shown["Fix the retry"], shown["Write the notes"]
    assert fix.startswith("item-") and fix.endswith(".1"), fix
    async with connect(work, "legacy") as client:
        claimed = await call(client, "board_tasks_claim", id=fix)
        assert claimed.is_error is False, claimed.content
        data = claimed.structured_content
        assert (data["status"], data["confirmed"]) == ("in_progress", True)
        me = data["assignee"]
        bob.sync()
        rows = [(r["assignee"], r["confirmed"]) for r in bob.items()]
        assert rows == [(me, True), (None, True)]
        done = await call(
            client, "board_tasks_update", id=fix, status="completed", answer="jittered"
        )
        assert done.is_error is False, done.content
        assert "warning" not in done.structured_content
        bob.sync()
        assert [r["status"] for r in bob.items()] == ["completed", "pending"]
        # bob claims item-2 and pushes it: this session's claim, made on a board that has not
        # fetched it, loses once its own push shows bob's first.
        bob.start("board", "claim", "item-2", "--as", "bob")
        lost = await call(client, "board_tasks_claim", id=notes)
    said = str(lost.content[0].text)
    assert lost.is_error is True
    assert said.startswith(f"your claim of {notes} lost: {me}'s claim of {notes} ("), said
    assert said.endswith(
        f"; {notes} is held by bob (start board sync brought it); claim another item "
        "(start board claim --next)"
    )
