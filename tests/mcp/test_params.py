"""Task parameters in `start mcp`: prompt arguments, and values that reach the command as variables."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import MCPError

from tests.mcp.conftest import connect
from tests.mcp.test_server import add_config, texts

pytestmark = pytest.mark.anyio

TASK = """
[tasks.focused]
description = "Review with a focus"
command = 'printf "%s" "$START_PARAM_FOCUS"'
prompt = "Focus: {focus}; depth {depth}; ran: {command_output}"

[tasks.focused.params]
focus = { default = "security", description = "What to look at" }
depth = {}
"""


async def test_parameters_are_prompt_arguments(global_dir: Path, isolated: Path, mode: str) -> None:
    add_config(global_dir, TASK)
    async with connect(isolated, mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    arguments = prompts["focused"].arguments or []
    assert [(a.name, a.description, a.required) for a in arguments][1:] == [
        ("focus", 'What to look at (default: "security")', False),
        ("depth", "The task's parameter depth", True),
    ]


async def test_get_prompt_and_run_task_take_parameter_values(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    add_config(global_dir, TASK)
    value = "$(touch pwned) `id` 'q'"
    async with connect(isolated, mode) as client:
        got = await client.get_prompt("focused", {"depth": value})
        ran = await client.call_tool(
            "run_task", {"task_name": "focused", "depth": "2", "focus": value}
        )
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("focused", {})
    (message,) = got.messages
    assert message.content.text.endswith(  # type: ignore[union-attr]
        f"Focus: security; depth {value}; ran: security"
    )
    assert ran.is_error is False
    assert texts(ran)[1].endswith(f"Focus: {value}; depth 2; ran: {value}")
    assert "task 'focused' needs the argument 'depth'" in str(missing.value)
    assert not (isolated / "pwned").exists()
