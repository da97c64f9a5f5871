"""`start mcp`'s find_tasks through the MCP SDK's client: the offered tasks ranked by a few
words, so that an agent with many tasks need not read every one's schema (start.config.finding)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError
from mcp.types import INVALID_PARAMS

from tests.fake_headless import agent
from tests.mcp.conftest import connect

pytestmark = pytest.mark.anyio


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


async def test_find_tasks_is_listed_with_a_tiny_schema(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    found = listed["find_tasks"]
    assert found.input_schema == {
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1000,
                "description": "What the task should do, in a few words.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 50,
                "description": "At most this many tasks (default 10).",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    }
    assert found.annotations is not None and found.annotations.read_only_hint is True


async def test_find_tasks_ranks_the_offered_tasks_by_their_words(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    """A word counts twice in a name what it counts in a description, its stem 0.9 of it; ties
    go by name. An internal task (hidden) and one without a description (undocumented) are not
    offered, so not found either."""
    async with connect(isolated, mode) as client:
        result = await client.call_tool("find_tasks", {"text": "review the greeting streams"})
        one = await client.call_tool("find_tasks", {"text": "review the greeting", "limit": 1})
        helper = await client.call_tool("find_tasks", {"text": "internal helper"})
    data = {
        "tasks": [
            {
                "name": "both-streams",
                "kind": "task",
                "score": 0.33,
                "why": "name: streams",
                "description": "Writes to stdout and stderr.",
            },
            {
                "name": "review",
                "kind": "task",
                "score": 0.33,
                "why": "name: review",
                "description": "Review the change",
            },
            {
                "name": "greet",
                "kind": "task",
                "score": 0.3,
                "why": "name: greeting~greet",
                "description": "Prints a simple greeting message.",
            },
            {
                "name": "exit-three",
                "kind": "task",
                "score": 0.17,
                "why": "description: streams",
                "description": "Exits 3 after writing to both streams.",
            },
        ],
        "message": "4 tasks match 'review the greeting streams', best first. Run one with "
        "run_task.",
    }
    assert (result.is_error, result.structured_content) == (False, data)
    assert texts(result) == [json.dumps(data, ensure_ascii=False)]
    assert one.structured_content == {
        "tasks": [
            {
                "name": "review",
                "kind": "task",
                "score": 0.5,
                "why": "name: review",
                "description": "Review the change",
            }
        ],
        "message": "1 task matches 'review the greeting', best first. Run one with run_task.",
    }
    assert (helper.is_error, helper.structured_content) == (
        False,
        {
            "tasks": [],
            "message": "No task matches 'internal helper'; try other words, or list_tasks for "
            "every task.",
        },
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"text": "?!"}, "invalid arguments: 'text' has no word to look for: '?!'"),
        ({}, "invalid arguments: 'text' is a required property"),
        (
            {"text": "review", "limit": 0},
            "invalid arguments at limit: 0 is not a whole number from 1 to 50",
        ),
    ],
)
async def test_find_tasks_refuses_what_its_schema_refuses(
    global_dir: Path, isolated: Path, mode: str, arguments: dict[str, Any], message: str
) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool("find_tasks", arguments)
    assert (result.is_error, texts(result)) == (True, [message])


async def test_find_tasks_is_a_task_tool_offered_with_the_tasks_only(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    """With no task offered, the task tools are not registered: find_tasks neither (the list
    itself: test_server's test_without_tasks_the_tools_are_not_registered_and_nothing_fails)."""
    (global_dir / "config.toml").unlink()
    async with connect(isolated, mode) as client:
        with pytest.raises(MCPError) as error:
            await client.call_tool("find_tasks", {"text": "review"})
    assert (error.value.code, error.value.message) == (
        INVALID_PARAMS,
        "unknown tool 'find_tasks': no task is offered, so the task tools are not registered",
    )


FLOWS = f"""
{agent("fake")}

[workflows.review-diff]
description = "Read the diff, then sum up what it changes"

[workflows.review-diff.steps.read]
prompt = "Read {{instructions}}"
agent = "fake"

[workflows.quiet-review.steps.one]
prompt = "No description, so list_workflows does not offer it"
agent = "fake"
"""


async def test_find_tasks_finds_the_workflows_list_workflows_offers(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    """A workflow offered ranks among the offered tasks, with kind "workflow"; one that
    list_workflows does not offer (no description) is not found."""
    config = global_dir / "config.toml"
    config.write_text(config.read_text() + FLOWS)
    async with connect(isolated, mode) as client:
        listed = await client.call_tool("list_workflows", {})
        result = await client.call_tool("find_tasks", {"text": "review the diff"})
        quiet = await client.call_tool("find_tasks", {"text": "quiet"})
    assert listed.structured_content is not None
    assert [flow["name"] for flow in listed.structured_content["workflows"]] == ["review-diff"]
    assert (result.is_error, result.structured_content) == (
        False,
        {
            "tasks": [
                {
                    "name": "review-diff",
                    "kind": "workflow",
                    "score": 1.0,
                    "why": "name: review, diff",
                    "description": "Read the diff, then sum up what it changes",
                },
                {
                    "name": "review",
                    "kind": "task",
                    "score": 0.5,
                    "why": "name: review",
                    "description": "Review the change",
                },
            ],
            "message": "2 match 'review the diff', best first. Run a task with run_task, a "
            "workflow with run_workflow.",
        },
    )
    assert quiet.structured_content == {
        "tasks": [],
        "message": "No task matches 'quiet'; try other words, or list_tasks for every task.",
    }


async def test_find_tasks_decodes_no_task(
    global_dir: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second find_tasks ranks from the index the first kept beside the config cache's
    entry: it decodes no task to tell which are offered, nor makes the index again."""
    from start.config import cache, finding

    async with connect(isolated, mode) as client:
        first = await client.call_tool("find_tasks", {"text": "review the greeting"})
        decoded: list[object] = []
        item = cache._item

        def counted(cls: Any, *args: Any) -> Any:
            decoded.append(args[2])
            return item(cls, *args)

        def unmade(config: object) -> finding.Index:
            raise AssertionError("the index was made again")

        monkeypatch.setattr(cache, "_item", counted)
        monkeypatch.setattr(finding, "made", unmade, raising=False)
        second = await client.call_tool("find_tasks", {"text": "review the greeting"})
    assert second.structured_content == first.structured_content
    assert first.structured_content is not None and first.structured_content["tasks"]
    assert decoded == []
