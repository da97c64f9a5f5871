"""Every door records a run one way (start.runs.recording.record): `start prompt --print`, a real
`start mcp` asked through the MCP SDK's client, and `start board run` each leave a pending file
that is moved into the history, which `start log` then shows; the board's item names its run's
id. A run inserted straight into the database has no pending file's name."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from start.runs import history
from tests.conftest import REPO, run_start, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

CONFIG = f"""
[settings]
default_agent = "fake"

{agent("fake")}
"""


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def start(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    found = run_start(*args, cwd=project)
    assert found.returncode == 0, found.stderr
    return found


def ask(project: Path, prompt: str) -> None:
    """`ask_agent` on a real `start mcp` in `project`, through the SDK's client."""
    import anyio
    from mcp import Client, StdioServerParameters

    env = {**os.environ, "PYTHONPATH": str(REPO)}

    async def session() -> None:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp"], env=env, cwd=str(project)
        )
        async with Client(parameters, mode="legacy") as client:
            result = await client.call_tool("ask_agent", {"agent": "fake", "prompt": prompt})
            assert result.is_error is False

    anyio.run(session)


def test_every_door_records_a_run_as_a_pending_file_moved_in(project: Path) -> None:
    start(project, "prompt", "--print", "from the command line")
    ask(project, "from mcp")
    start(project, "board", "add", "Plan", "--prompt", "from the board")
    start(project, "board", "run", "--until-empty")
    item = json.loads(start(project, "board", "show", "1", "--json").stdout)
    logged = json.loads(start(project, "log", "--json").stdout)
    assert [run["instructions"] for run in logged] == [
        "from the board",
        "from mcp",
        "from the command line",
    ]
    assert item["history"] == logged[0]["id"]
    shown = json.loads(start(project, "log", "show", str(item["history"]), "--json").stdout)
    assert shown["answer"] == item["answer"] == "ANSWER: from the board"
    with sqlite3.connect(history.database()) as connection:
        keys = [row[0] for row in connection.execute("SELECT pending FROM runs ORDER BY id")]
    assert all(keys) and len(set(keys)) == 3, keys
    assert os.listdir(os.path.join(history.directory(), history.PENDING)) == []
