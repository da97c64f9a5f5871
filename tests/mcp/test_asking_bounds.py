"""What bounds an MCP caller's run (issue 37): never above `settings.mcp_permissions`, whatever
a task says; bounds that a project may narrow and never widen; and no value of the caller's, or
of a project's, that becomes an option of the asked agent's command line. In process through
the SDK's client, and against a real `start mcp` through the SDK's stdio client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.fake_headless import agent
from tests.mcp.conftest import connect

pytestmark = pytest.mark.anyio

ME = os.path.realpath(Path(REPO) / "tests" / "fake_headless.py")
LEVELS = 'read-only = "--ro", edit = "--edit", full = "--full"'
# A stand-in whose headless form passes a model, as gemini's does.
AGENTS = f"""
{agent("fake", levels=LEVELS)}

[agents.modelled]
bin = "{sys.executable}"
command = "{{bin}} {ME} {{prompt}}"
print_command = "{{bin}} {ME} [--model {{model}}] {{args}} -- {{prompt}}"
print_output = "text"
print_permissions = {{ read-only = "--ro" }}
"""
SMUGGLED = "--allowed-tools=run_shell_command"
# A repository's .start/: a task at full permissions, one whose model is an option, and MCP
# bounds wider than the user's.
PROJECT = f"""
[settings]
mcp_permissions = "full"
mcp_depth = 5

[tasks.wide]
description = "Runs at full permissions"
prompt = "Do anything: {{instructions}}"
permissions = "full"

[tasks.smuggle]
description = "Names a model that is an option"
prompt = "hi"
model = "{SMUGGLED}"
"""


@pytest.fixture
def config(global_dir: Path) -> Path:
    file = global_dir / "config.toml"
    file.write_text(file.read_text() + AGENTS)
    return file


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_RECORD", str(path))
    return path


@pytest.fixture
def project(config: Path, isolated: Path) -> Path:
    """PROJECT in the working directory, approved as `start trust --yes` approves it."""
    write_tree(isolated, {".start/config.toml": PROJECT})
    approved = run_start(
        "trust", "--yes", cwd=isolated, env={"START_CONFIG_DIR": str(config.parent)}
    )
    assert approved.returncode == 0, approved.stderr
    return isolated / ".start" / "config.toml"


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def argv(record: Path) -> list[str]:
    found: list[str] = json.loads(record.read_text())["argv"]
    return found


REFUSED_MODEL = (
    "invalid arguments at model: a model's name or alias never starts with '-': the agent's CLI "
    "would read it as an option"
)


# --- permissions --------------------------------------------------------------------------------


async def test_a_project_task_at_full_runs_at_most_at_mcp_permissions(
    project: Path, isolated: Path, mode: str, record: Path
) -> None:
    async with connect(isolated, mode) as client:
        wide = await client.call_tool(
            "ask_agent", {"agent": "fake", "task": "wide", "instructions": "x"}
        )
        asked = await client.call_tool(
            "ask_agent", {"agent": "fake", "prompt": "hi", "permissions": "full"}
        )
    assert wide.is_error is False, texts(wide)
    assert argv(record)[0] == "--ro"
    data = wide.structured_content
    assert data is not None
    assert (data["permissions"], data["permissions_from"]) == (
        "read-only",
        "settings.mcp_permissions by default, below task wide's 'full'",
    )
    # The project's `mcp_permissions = "full"` does not count: the user's own layers set none.
    assert texts(asked) == [
        "refused: a run at 'full' permissions needs the user's consent, and the user allows "
        "'read-only' (settings.mcp_permissions by default). Ask again without 'permissions', or "
        "ask the user to raise settings.mcp_permissions"
    ]


async def test_a_project_may_narrow_the_mcp_bounds(
    config: Path, isolated: Path, mode: str, record: Path
) -> None:
    config.write_text(
        config.read_text().replace(
            "[settings]\n", '[settings]\nmcp_permissions = "full"\nmcp_agents = ["fake"]\n', 1
        )
    )
    start_dir = isolated / ".start"
    write_tree(isolated, {".start/config.toml": '[settings]\nmcp_permissions = "edit"\n'})
    approved = run_start(
        "trust", "--yes", cwd=isolated, env={"START_CONFIG_DIR": str(config.parent)}
    )
    assert approved.returncode == 0, approved.stderr
    async with connect(isolated, mode) as client:
        edit = await client.call_tool(
            "ask_agent", {"agent": "fake", "prompt": "hi", "permissions": "edit"}
        )
        full = await client.call_tool(
            "ask_agent", {"agent": "fake", "prompt": "hi", "permissions": "full"}
        )
    assert (edit.is_error, argv(record)[0]) == (False, "--edit")
    assert texts(full) == [
        "refused: a run at 'full' permissions needs the user's consent, and the user allows "
        f"'edit' (settings.mcp_permissions in {start_dir}/config.toml). Ask again without "
        "'permissions', or ask the user to raise settings.mcp_permissions"
    ]


# --- no option from a caller or a project -------------------------------------------------------


async def test_a_model_that_looks_like_an_option_is_refused_before_anything_runs(
    config: Path, isolated: Path, mode: str, record: Path
) -> None:
    async with connect(isolated, mode) as client:
        one = await client.call_tool(
            "ask_agent", {"agent": "modelled", "prompt": "hi", "model": SMUGGLED}
        )
        several = await client.call_tool(
            "ask_agents", {"agents": ["modelled"], "prompt": "hi", "model": "-x"}
        )
        started = await client.call_tool(
            "ask_start", {"agents": ["modelled"], "prompt": "hi", "model": SMUGGLED}
        )
    for result in (one, several, started):
        assert (result.is_error, texts(result)) == (True, [REFUSED_MODEL])
    assert not record.exists()


async def test_a_project_tasks_model_that_looks_like_an_option_never_reaches_argv(
    project: Path, isolated: Path, mode: str, record: Path
) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool("ask_agent", {"agent": "modelled", "task": "smuggle"})
    assert result.is_error is True
    assert texts(result) == [
        "agent 'modelled': the model starts with '-', and its print_command passes it as an "
        "argument of its own before '--', where its CLI would read it as an option; the agent "
        "was not started. A model's name never starts with '-': choose another with -m, or fix "
        "the task's model or the agent's default_model and models"
    ]
    assert not record.exists()


# --- a real server ------------------------------------------------------------------------------


def test_a_real_server_caps_the_task_and_refuses_the_option(
    project: Path, config: Path, isolated: Path, record: Path, anyio_backend: str
) -> None:
    """`start mcp` as a client starts it, spoken to by the SDK's stdio client."""
    from mcp import Client, StdioServerParameters

    env = {
        **os.environ,
        "START_CONFIG_DIR": str(config.parent),
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }

    async def session() -> tuple[Any, list[str], Any]:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp", "-d", str(isolated)], env=env
        )
        async with Client(parameters, mode="legacy") as client:
            wide = await client.call_tool(
                "ask_agent", {"agent": "fake", "task": "wide", "instructions": "x"}
            )
            ran = argv(record)
            record.unlink()
            smuggled = await client.call_tool(
                "ask_agent", {"agent": "modelled", "prompt": "hi", "model": SMUGGLED}
            )
        return wide, ran, smuggled

    wide, ran, smuggled = anyio.run(session)
    assert wide.is_error is False, texts(wide)
    assert ran[0] == "--ro"
    assert wide.structured_content["permissions"] == "read-only"
    assert (smuggled.is_error, texts(smuggled)) == (True, [REFUSED_MODEL])
    assert not record.exists()
