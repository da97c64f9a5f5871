"""`start mcp`'s tools hold a call's arguments to the input schema they list (start.mcp.tools):
one statement of each rule, whose refusals name the argument and what is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fake_headless import agent
from tests.mcp.conftest import connect

pytestmark = pytest.mark.anyio

# The arguments each tool requires, valid, so that an extra one is the only fault of a call.
REQUIRED: dict[str, dict[str, Any]] = {
    "list_tasks": {},
    "run_task": {"task_name": "greet"},
    "find_tasks": {"text": "greeting"},
    "ask_agent": {"agent": "fake", "prompt": "hi"},
    "ask_agents": {"agents": ["fake"], "prompt": "hi"},
    "ask_start": {"agents": ["fake"], "prompt": "hi"},
    "ask_result": {"id": "ask-1"},
    "ask_cancel": {"id": "ask-1"},
    "board_tasks_create": {"title": "t"},
    "board_tasks_list": {},
    "board_tasks_get": {"id": "item-1"},
    "board_tasks_claim": {"id": "item-1"},
    "board_tasks_update": {"id": "item-1"},
    "board_tasks_watch": {"id": "item-1"},
}


@pytest.fixture
def config(global_dir: Path) -> Path:
    """The mcp tests' CONFIG, with a headless stand-in agent: every tool is offered."""
    file = global_dir / "config.toml"
    file.write_text(file.read_text() + agent("fake"))
    return file


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


async def test_every_listed_tool_refuses_an_argument_its_listed_schema_leaves_out(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        listed = (await client.list_tools()).tools
        results = {
            tool.name: await client.call_tool(tool.name, {**REQUIRED[tool.name], "zzz": 1})
            for tool in listed
        }
    assert sorted(results) == sorted(REQUIRED)
    for tool in listed:
        takes = ", ".join(tool.input_schema["properties"])
        assert (results[tool.name].is_error, texts(results[tool.name])) == (
            True,
            [
                "invalid arguments: Additional properties are not allowed ('zzz' was "
                f"unexpected); {tool.name} takes: {takes}"
            ],
        ), tool.name


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (
            "ask_agent",
            {"agent": "fake", "promt": "hi"},
            "invalid arguments: Additional properties are not allowed ('promt' was unexpected); "
            "did you mean 'prompt'?",
        ),
        ("ask_agent", {"prompt": "hi"}, "invalid arguments: 'agent' is a required property"),
        (
            "ask_agent",
            {"agent": "fake", "prompt": 5},
            "invalid arguments at prompt: 5 is not of type 'string'",
        ),
        (
            "ask_agent",
            {"agent": "fake", "task": "review", "params": {"focus": 1}},
            "invalid arguments at params/focus: 1 is not of type 'string'",
        ),
        (
            "ask_agent",
            {"agent": "fake", "prompt": "hi", "permissions": "root"},
            "invalid arguments at permissions: 'root' is not one of ['read-only', 'edit', 'full']",
        ),
        (
            "ask_agent",
            {"agent": "fake", "prompt": "hi", "permissions": "r" * 1000},
            "invalid arguments at permissions: '" + "r" * 58 + "… is not one of ['read-only', "
            "'edit', 'full']",
        ),
        (
            "ask_agents",
            {"agents": [], "prompt": "hi"},
            "invalid arguments at agents: name at least one agent",
        ),
        (
            "ask_agents",
            {"agents": ["fake"] * 17, "prompt": "hi"},
            "invalid arguments at agents: at most 16 agents at once",
        ),
        (
            "ask_start",
            {"agents": ["fake", 3], "prompt": "hi"},
            "invalid arguments at agents/1: 3 is not of type 'string'",
        ),
        (
            "ask_result",
            {"id": "ask-1", "wait_seconds": 51},
            "invalid arguments at wait_seconds: 51 is not a whole number from 0 to 50",
        ),
        ("ask_result", {}, "invalid arguments: 'id' is a required property"),
        ("ask_cancel", {"id": 1}, "invalid arguments at id: 1 is not of type 'string'"),
        # What a schema cannot say, the owner of the rule says (asking.check).
        (
            "ask_agent",
            {"agent": "fake", "prompt": "hi", "instructions": "x"},
            "'instructions' and 'params' go with 'task', not with 'prompt'",
        ),
        (
            "ask_agent",
            {"agent": "fake"},
            "give either 'prompt' (the text to ask) or 'task' (a task's name)",
        ),
    ],
)
async def test_a_refusal_names_the_argument_and_what_is_wrong(
    config: Path, isolated: Path, tool: str, arguments: dict[str, Any], message: str
) -> None:
    async with connect(isolated, "legacy") as client:
        result = await client.call_tool(tool, arguments)
    assert (result.is_error, texts(result)) == (True, [message])


async def test_a_null_argument_is_one_left_out(config: Path, isolated: Path) -> None:
    async with connect(isolated, "legacy") as client:
        asked = await client.call_tool(
            "ask_agent", {"agent": "fake", "prompt": "hi", "model": None, "task": None}
        )
        polled = await client.call_tool("ask_result", {"id": "ask-1", "wait_seconds": None})
    assert (asked.is_error, texts(asked)) == (False, ["ANSWER: The guide.\n\nhi"])
    assert texts(polled) == ["no run 'ask-1'; no run was started"]
