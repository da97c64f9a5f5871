"""The loop guard through the real Codex CLI (issue 37): Codex starts its MCP servers with a
whitelisted environment (HOME and PATH here), so START_MCP_DEPTH never reaches the `start mcp`
of a Codex that `start mcp` asked; the process tree does.

Codex runs against the offline model server (tests/model_server.py), as scripts/agents.py points
it there; the test reads the tools Codex offers its model from the requests. It needs the Codex
CLI (`make agents` installs it under /tmp/start-agents): without it, it is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.mcp.conftest import BOARD_TOOLS
from tests.mcp.test_stdio import INITIALIZE, Server, message
from tests.model_server import ModelServer, serve

PREFIX = Path(os.environ.get("AGENTS_PREFIX", "/tmp/start-agents"))
CODEX = shutil.which("codex") or str(PREFIX / "npm" / "node_modules" / ".bin" / "codex")
KEY = "sk-fake-" + "k7Qz" * 10
ASKING = ["ask_agent", "ask_agents", "ask_cancel", "ask_result", "ask_start"]
WORKFLOWS = ["list_workflows", "run_workflow", "workflow_status"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.access(CODEX, os.X_OK), reason="the Codex CLI is not installed (make agents)"
    ),
]


def codex_config(url: str) -> str:
    """Codex's config: the offline model server, and `start mcp` as an MCP server.

    A model Codex has no metadata for gets the MCP tools in its request (a known one gets
    `tool_search` instead, and the tools only when it searches). `required`: Codex waits for the
    server (an optional one that is slow to start is left out of the turn).
    """
    return (
        'model_provider = "answer"\nmodel = "answer-model"\n\n'
        f'[model_providers.answer]\nname = "answer"\nbase_url = "{url}/v1"\n'
        'env_key = "ANSWER_API_KEY"\nwire_api = "responses"\n\n'
        f'[mcp_servers.start]\ncommand = "{sys.executable}"\nargs = ["-m", "start", "mcp"]\n'
        "required = true\nstartup_timeout_sec = 120\n"
    )


def start_tools(requests: list[Any]) -> list[list[str]]:
    """The names of the tools of `start mcp` that each request to the model offers."""
    found = []
    for request in requests:
        for tool in (request.body or {}).get("tools", []):
            if tool.get("type") == "namespace" and tool.get("name") == "mcp__start":
                found.append(sorted(t["name"] for t in tool["tools"]))
    return found


def test_codex_asked_by_start_mcp_is_offered_no_asking_tools_by_its_own_start_mcp(
    isolated: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    # One config for every start here: Codex's own start mcp gets HOME, not START_CONFIG_DIR.
    write_tree(
        home / ".config" / "start",
        {
            "config.toml": '[settings]\nmcp_agents = ["codex"]\n\n'
            '[tasks.greet]\ndescription = "Greets"\nprompt = "Say hello."\n'
        },
    )
    env = {
        **os.environ,
        "PATH": f"{os.path.dirname(CODEX)}{os.pathsep}{os.environ['PATH']}",
        "ANSWER_API_KEY": KEY,
        "PYTHONPATH": str(REPO),
    }
    model: ModelServer
    with serve(answer="ANSWER-codex") as model:
        write_tree(home / ".codex", {"config.toml": codex_config(model.url)})
        # Codex run by start --print, not asked: its start mcp offers the asking tools, and
        # the workflow tools with them (the shipped workflows have a description).
        alone = run_start("prompt", "--print", "-a", "codex", "say hi", cwd=isolated, env=env)
        assert (alone.returncode, alone.stdout) == (0, "ANSWER-codex\n"), alone.stderr
        assert start_tools(model.requests) == [
            sorted([*ASKING, *WORKFLOWS, *BOARD_TOOLS, "list_tasks", "run_task", "find_tasks"])
        ]
        before = len(model.requests)

        # Codex asked by a start mcp: its own start mcp offers none.
        outer = Server([], isolated, env)
        try:
            outer.send(INITIALIZE)
            outer.responses({1})
            ask = {"agent": "codex", "prompt": "say hi"}
            outer.send(message("tools/call", 2, name="ask_agent", arguments=ask))
            result = outer.responses({2}, timeout=300)[2]["result"]
            code, _, stderr = outer.close()
        finally:
            if outer.proc.poll() is None:
                outer.proc.kill()
                outer.proc.wait()
        assert code == 0, stderr
        assert (result["isError"], result["content"][0]["text"]) == (False, "ANSWER-codex"), (
            json.dumps(result)
        )
        assert start_tools(model.requests[before:]) == [
            sorted([*BOARD_TOOLS, "list_tasks", "run_task", "find_tasks"])
        ]
