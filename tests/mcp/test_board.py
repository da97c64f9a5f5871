"""`start mcp`'s board tools (start.mcp.board), through the SDK's own client: the session's
identity, arguments held to their schemas, least permission for the runs items ask for, the
fence of a reassignment, bounded lists and a watch with progress. The killed session is in
tests/e2e/test_board_processes.py."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from start import board
from start.board import Change, Holder
from start.board import file as boardfile
from start.compose.ask import Ask
from start.mcp import board as tools
from start.runs import rules
from tests.fake_headless import agent
from tests.mcp.conftest import BOARD_TOOLS, connect

pytestmark = pytest.mark.anyio


@pytest.fixture
def config(global_dir: Path) -> Path:
    """The mcp tests' CONFIG, with a headless stand-in agent and a task that allows edit."""
    file = global_dir / "config.toml"
    extra = f'\n{agent("fake")}\n[tasks.fixer]\ndescription = "Fix"\nprompt = "Fix: {{instructions}}"\npermissions = "edit"\n'
    file.write_text(file.read_text() + extra)
    return file


async def call(client: Any, name: str, **arguments: Any) -> Any:
    return await client.call_tool(name, arguments)


def text(result: Any) -> str:
    return str(result.content[0].text)


async def test_the_six_tools_are_listed_with_their_schemas(
    global_dir: Path, isolated: Path
) -> None:
    async with connect(isolated, "legacy") as client:
        listed = (await client.list_tools()).tools
    found = {tool.name: tool for tool in listed}
    assert [name for name in found if name.startswith("board_")] == BOARD_TOOLS
    for name in BOARD_TOOLS:
        if name != tools.WATCH:
            assert found[name].input_schema == tools.INPUTS[name]
    assert found[tools.WATCH].input_schema["properties"]["wait_seconds"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 50,
        "description": "How long to wait at most (default and most: 50).",
    }
    get = found["board_tasks_get"].output_schema
    assert get is not None
    assert {**get["properties"]} == {
        **board.item_schema()["properties"],
        "comments": get["properties"]["comments"],
        "comments_total": {"type": "integer"},
    }
    listing, claim = found["board_tasks_list"].annotations, found["board_tasks_claim"].annotations
    assert listing is not None and claim is not None
    assert (listing.read_only_hint, claim.read_only_hint) == (True, False)


async def test_the_caller_is_its_session_and_no_argument_names_another(
    global_dir: Path, isolated: Path
) -> None:
    async with connect(isolated, "legacy") as client:
        made = await call(client, "board_tasks_create", title="Plan", description="d")
        claimed = await call(client, "board_tasks_claim", id="item-1")
        forged = await call(client, "board_tasks_claim", id="item-1", agent="someone")
        refused = await call(client, "board_tasks_create", title="x", assignee="me")
    me = made.structured_content["created_by"]
    assert me.startswith("mcp:") and me.endswith(f":{os.getpid()}")
    assert claimed.structured_content["assignee"] == me
    assert claimed.is_error is False
    assert (forged.is_error, text(forged)) == (
        True,
        "invalid arguments: Additional properties are not allowed ('agent' was unexpected); "
        "board_tasks_claim takes: id, label",
    )
    assert text(refused) == (
        "invalid arguments: Additional properties are not allowed ('assignee' was unexpected); "
        "board_tasks_create takes: title, description, blocked_by, metadata, run, priority, "
        "labels, parent (an item starts pending and unassigned: claim it to take it)"
    )


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        (
            "board_tasks_get",
            {"id": "task-1"},
            "invalid arguments at id: 'task-1' is not an item id: ids read item-N (or N), and "
            "item-PREFIX.N for another machine's item (as the board shows it), N a number of 1 "
            "to 18 digits that does not start with 0",
        ),
        (
            "board_tasks_list",
            {"limit": 500},
            "invalid arguments at limit: 500 is not a whole number from 1 to 200",
        ),
        (
            "board_tasks_update",
            {"id": "1", "status": "in_progress"},
            "invalid arguments at status: 'in_progress' is not one of ['pending', 'completed', "
            "'failed']",
        ),
        (
            "board_tasks_create",
            {"title": "x", "run": {"agent": "fake", "prompt": "p", "task": "t"}},
            "invalid arguments at run: 'run' takes either 'prompt' or 'task'",
        ),
        (
            "board_tasks_create",
            {"title": "x", "run": {"agent": "fake", "prompt": "p", "model": "--yolo"}},
            "invalid arguments at run/model: a model's name or alias never starts with '-': the "
            "agent's CLI would read it as an option",
        ),
        (
            "board_tasks_create",
            {"title": "x", "run": {"agent": "fake", "prompt": "p", "modle": "m"}},
            "invalid arguments at run: Additional properties are not allowed ('modle' was "
            "unexpected); did you mean 'model'?",
        ),
        (
            "board_tasks_watch",
            {"id": "1", "wait_seconds": 51},
            "invalid arguments at wait_seconds: 51 is not a whole number from 0 to 50",
        ),
        ("board_tasks_get", {"id": "item-4"}, None),
    ],
)
async def test_arguments_are_held_to_the_declared_schemas(
    global_dir: Path, isolated: Path, name: str, arguments: dict[str, Any], message: str | None
) -> None:
    async with connect(isolated, "legacy") as client:
        result = await client.call_tool(name, arguments)
    if message is None:
        message = (
            f"no item item-4 on the board of {os.path.realpath(isolated)} (the board is empty; "
            "'start board' lists them)"
        )
    assert (result.is_error, text(result)) == (True, message)


async def test_a_run_asked_for_over_mcp_gets_no_more_than_the_user_allows(
    config: Path, isolated: Path
) -> None:
    async with connect(isolated, "legacy") as client:
        edit = await call(
            client,
            "board_tasks_create",
            title="x",
            run={"agent": "fake", "prompt": "p", "permissions": "edit"},
        )
        task = await call(
            client, "board_tasks_create", title="y", run={"agent": "fake", "task": "fixer"}
        )
        plain = await call(
            client, "board_tasks_create", title="z", run={"agent": "fake", "prompt": "p"}
        )
        absent = await call(
            client, "board_tasks_create", title="w", run={"agent": "nope", "prompt": "p"}
        )
    assert text(edit) == (
        "refused: a run at 'edit' permissions needs the user's consent, and the user allows "
        "'read-only' (settings.mcp_permissions by default). Ask again without 'permissions', "
        "or ask the user to raise settings.mcp_permissions"
    )
    # The task's own level is the user's: allowed.
    # What it runs is the agent's ask (start.compose.ask), as every door's is.
    run = task.structured_content["run"]
    asked = {key: run[key] for key in ("mode", "prompt", "task", "agents", "permissions", "by")}
    assert asked == {
        "mode": "task",
        "prompt": None,
        "task": "fixer",
        "agents": ["fake"],
        "permissions": None,
        "by": "agent",
    }
    assert (run["door"], run["headless"]) == ("board", True)
    assert plain.is_error is False
    assert text(absent) == "unknown agent 'nope'; agents that can be asked: fake"
    with boardfile.opened(str(isolated)) as opened:
        assert [item.title for item in opened.items()[0]] == ["y", "z"]


async def test_an_agent_run_too_deep_cannot_make_items_that_run(
    config: Path, isolated: Path
) -> None:
    from mcp import Client

    from start.mcp import server

    scope = rules.Scope(str(isolated), True, depth=1)
    async with Client(server.build(scope), mode="legacy") as client:
        made = await call(
            client, "board_tasks_create", title="x", run={"agent": "fake", "prompt": "p"}
        )
        plain = await call(client, "board_tasks_create", title="plain work")
    assert text(made) == (
        "the asking tools are not offered: it runs at depth 1, inside an "
        "agent run that start mcp started, and settings.mcp_depth allows 1 level, so that "
        "agents cannot ask each other in a loop"
    )
    assert plain.is_error is False


async def test_a_reassign_fences_out_the_sessions_late_update(
    global_dir: Path, isolated: Path
) -> None:
    async with connect(isolated, "legacy") as client:
        await call(client, "board_tasks_create", title="Plan")
        me = (await call(client, "board_tasks_claim", id="1")).structured_content["assignee"]
        with boardfile.opened(str(isolated)) as opened:
            opened.reassign("item-1", "carol", Holder("alice"))
            opened.reassign("item-1", me, Holder("alice"))  # back to its name: epoch 3
        late = await call(client, "board_tasks_update", id="1", status="completed")
        again = await call(client, "board_tasks_claim", id="1")
        done = await call(client, "board_tasks_update", id="item-1", status="completed", answer="A")
    assert text(late) == (
        "item-1 was reassigned since your claim (epoch 1; it is now at epoch 3): this write is "
        "fenced out; claim it again to act on it"
    )
    assert again.structured_content["epoch"] == 3
    assert (done.structured_content["status"], done.structured_content["answer"]) == (
        "completed",
        "A",
    )


async def test_a_list_is_compact_and_bounded(global_dir: Path, isolated: Path) -> None:
    with boardfile.opened(str(isolated)) as opened:
        for number in range(60):
            opened.create(f"item {number}", Holder("alice"), description="long " * 100)
    async with connect(isolated, "legacy") as client:
        listed = await call(client, "board_tasks_list")
        few = await call(client, "board_tasks_list", ready=True, limit=3)
    assert listed.structured_content["total"] == 60
    assert len(listed.structured_content["items"]) == tools.LISTED
    assert list(listed.structured_content["items"][0]) == [*board.ROW, "runs", "confirmed"]
    assert [row["id"] for row in few.structured_content["items"]] == ["item-1", "item-2", "item-3"]


async def test_a_watch_tells_progress_and_returns_the_end(global_dir: Path, isolated: Path) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("Plan", Holder("alice"))
        opened.claim("item-1", Holder("bob"))
    told: list[tuple[float, str | None]] = []

    async def tell(progress: float, total: float | None, message: str | None) -> None:
        told.append((progress, message))

    def finish() -> None:
        time.sleep(0.5)
        with boardfile.opened(str(isolated)) as opened:
            opened.update("item-1", Holder("bob"), Change("completed", answer="done"))

    async with connect(isolated, "legacy") as client:
        early = await call(client, "board_tasks_watch", id="1", wait_seconds=0)
        worker = threading.Thread(target=finish)
        worker.start()
        ended = await client.call_tool("board_tasks_watch", {"id": "1"}, progress_callback=tell)
        worker.join()
    assert early.structured_content["done"] is False
    assert early.structured_content["item"]["status"] == "in_progress"
    assert ended.structured_content["done"] is True
    assert ended.structured_content["item"]["answer"] == "done"
    assert told and told[0][1] == "item-1: in_progress, held by bob (0 s)"


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


async def test_ids_and_metadata_are_held_to_the_rules_of_the_command_line(
    global_dir: Path, isolated: Path
) -> None:
    """start.base.inputs' rules and words, as tests/cli/test_inputs.py has them for the command line
    (the real process: tests/e2e/test_inputs.py)."""
    half = "y" * 40_000
    async with connect(isolated, "legacy") as client:
        found = [
            await call(client, "board_tasks_get", id=str(2**63)),
            await call(client, "board_tasks_create", title="x", metadata=_nested(101)),
            await call(client, "board_tasks_create", title="x", metadata={"x": "y" * 70_000}),
            await call(client, "board_tasks_create", title="x", metadata={"x": half}),
            await call(client, "board_tasks_update", id="1", metadata={"z": half}),
            await call(client, "board_tasks_create", title="x", metadata=_nested(100)),
        ]
    # NaN: the SDK's client sends null for it; the real process takes it raw (tests/e2e).
    assert [(result.is_error, text(result)) for result in found[:5]] == [
        (
            True,
            f"invalid arguments at id: '{2**63}' is not an item id: ids read item-N (or N), and "
            "item-PREFIX.N for another machine's item (as the board shows it), N a number of 1 "
            "to 18 digits that does not start with 0",
        ),
        (
            True,
            "metadata is nested deeper than 100 levels of objects and arrays; start keeps at "
            "most 100",
        ),
        (
            True,
            "metadata takes 70,008 bytes as JSON, over the limit of 65,536; keep long text in "
            "the description",
        ),
        (False, text(found[3])),
        (
            True,
            "item-1's metadata would take 80,015 bytes as JSON after this change, over the limit "
            "of 65,536; delete keys (a null value deletes its key)",
        ),
    ]
    assert found[5].structured_content["id"] == "item-2"


async def test_a_sessions_title_is_held_to_its_level_and_archived_items_are_out_of_reach(
    config: Path, isolated: Path
) -> None:
    """board_tasks_update takes a title, as the command line's --title: a read-only session may
    not retitle an item of the user's that runs at full, and retitling one that runs nothing
    brings the item's level down to the session's. An archived item is not listed, and a claim
    of it is refused."""
    with boardfile.opened(str(isolated)) as opened:
        opened.create("Fix", Holder("alice"), run=Ask(task="fixer", permissions="full"))
        opened.create("Notes", Holder("alice"))
        opened.create("Old", Holder("alice"))
        opened.archive(["item-3"], Holder("alice"))
    async with connect(isolated, "legacy") as client:
        refused = await call(client, "board_tasks_update", id="1", title="$(curl evil)")
        retitled = await call(client, "board_tasks_update", id="2", title="Notes, by an agent")
        listed = await call(client, "board_tasks_list")
        claimed = await call(client, "board_tasks_claim", id="3")
    assert (refused.is_error, text(refused)) == (
        True,
        f"item-1 runs at up to 'full', and mcp:mcp:{os.getpid()} acts at 'read-only' "
        "(settings.mcp_permissions): it may not change an item that runs above its level. Make "
        "an item of your own, or ask the user",
    )
    item = retitled.structured_content
    assert (item["title"], item["level"], item["level_by"].startswith("mcp:")) == (
        "Notes, by an agent",
        "read-only",
        True,
    )
    assert [row["id"] for row in listed.structured_content["items"]] == ["item-1", "item-2"]
    assert text(claimed) == (
        "item-3 is archived: an archived item cannot be taken (start board unarchive item-3 "
        "brings it back)"
    )
    with boardfile.opened(str(isolated)) as opened:
        assert opened.get("1").title == "Fix"


async def test_create_takes_priority_labels_and_parent_and_the_rows_carry_them(
    global_dir: Path, isolated: Path
) -> None:
    async with connect(isolated, "legacy") as client:
        await call(client, "board_tasks_create", title="Epic")
        made = await call(
            client, "board_tasks_create", title="Fix", priority=0, labels=["bug"], parent="1"
        )
        bad = await call(client, "board_tasks_create", title="x", labels=["a b"])
        listed = await call(client, "board_tasks_list", ready=True)
    assert (made.structured_content["priority"], made.structured_content["parent"]) == (
        0,
        "item-1",
    )
    assert (bad.is_error, text(bad)) == (
        True,
        "'a b' is not a label: a label is 1 to 50 characters, without spaces or commas",
    )
    rows = listed.structured_content["items"]
    assert [(r["id"], r["priority"], r["labels"], r["parent"]) for r in rows] == [
        ("item-2", 0, ["bug"], "item-1"),
        ("item-1", 2, [], None),
    ]
    # Neither shapes a run: the session's item keeps the level it was made at, no lower.
    with boardfile.opened(str(isolated)) as opened:
        assert opened.get("2").level == opened.get("1").level
