"""Adding a field to Ask (start.compose.ask) is one line, and it reaches every view of an ask by
itself: a copy of start with one more line in Ask, run in real processes, carries the new field
in `--print --json`'s request, through `start again`, in the input schema and the calls of
`start mcp`'s asking tools, and in what a board item runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

# The one line: after the fields of what is asked.
FIELD = "    extra: str | None = None  # a field of this test's own\n"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of start whose Ask has one more field, and nothing else changed."""
    root = tmp_path / "copy"
    shutil.copytree(REPO / "start", root / "start", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "config", root / "config")
    ask = root / "start" / "compose" / "ask.py"
    text = ask.read_text(encoding="utf-8")
    anchor = "    door: str = CLI"
    assert text.count(anchor) == 1
    ask.write_text(text.replace(anchor, FIELD + anchor), encoding="utf-8")
    return root


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    config = f'[settings]\ndefault_agent = "fake"\n\n{agent("fake")}'
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": config})
    return isolated


def start(copy: Path, project: Path, *args: str) -> Any:
    env = {**os.environ, "PYTHONPATH": f"{copy}{os.pathsep}{REPO}"}
    done = subprocess.run(
        [sys.executable, "-m", "start", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def test_a_field_added_to_ask_reaches_every_view_of_an_ask(copy: Path, project: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    whole = ("--json-fields", "all")  # the request is not in --json's short form
    printed = json.loads(start(copy, project, "prompt", "--print", *whole, "hi").stdout)
    assert "extra" in printed["request"] and printed["request"]["extra"] is None
    again = json.loads(start(copy, project, "again", *whole).stdout)
    assert again["request"]["extra"] is None and again["answer"] == printed["answer"]

    env = {**os.environ, "PYTHONPATH": f"{copy}{os.pathsep}{REPO}"}
    found: dict[str, Any] = {}

    async def session() -> None:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp"], env=env, cwd=str(project)
        )
        async with Client(parameters, mode="legacy") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            found["schema"] = tools["ask_agent"].input_schema["properties"]["extra"]
            asked = await client.call_tool(
                "ask_agent", {"agent": "fake", "prompt": "hi", "extra": "given"}
            )
            found["request"] = asked.structured_content["request"]

    anyio.run(session)
    assert found["schema"] == {"type": "string"}
    assert (found["request"]["extra"], found["request"]["door"]) == ("given", "mcp")
    # The run an agent asked for is repeated by the user with its field.
    repeated = json.loads(start(copy, project, "again", *whole).stdout)
    assert (repeated["request"]["extra"], repeated["request"]["door"]) == ("given", "cli")

    start(copy, project, "board", "add", "Ask it", "--prompt", "hi", "-a", "fake")
    item = json.loads(start(copy, project, "board", "show", "1", "--json").stdout)
    assert "extra" in item["run"] and item["run"]["door"] == "board"
    start(copy, project, "board", "run", "--until-empty")
    ran = json.loads(start(copy, project, "board", "show", "1", "--json").stdout)
    logged = json.loads(start(copy, project, "log", "show", str(ran["history"]), "--json").stdout)
    assert (logged["request"]["extra"], logged["request"]["door"]) == (None, "board")
