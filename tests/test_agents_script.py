"""scripts/agents.py (`make agents`): the parts of its headless check that need no agent CLI."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import running

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "agents.py"


@pytest.fixture(scope="module")
def agents() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agents_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_run_marked_kills_what_the_run_left_behind(agents: ModuleType, tmp_path: Path) -> None:
    # A daemon in a session of its own outlives its parent; the run's marker finds it.
    daemon = "import time; time.sleep(60)"
    leaver = (
        "import subprocess, sys; "
        f"p = subprocess.Popen([sys.executable, '-c', {daemon!r}], start_new_session=True); "
        "print(p.pid)"
    )
    code, out, err, _ = agents.run_marked([sys.executable, "-c", leaver], {}, tmp_path, 30)
    assert (code, err) == (0, "")
    pid = int(out)
    deadline = time.monotonic() + 10
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(pid)


def test_judge_plain_run(agents: ModuleType) -> None:
    judge = agents._judge
    assert judge("start prompt --print", 0, "ANSWER-x\n", "", "ANSWER-x", False) is None
    assert judge("start prompt --print", 1, "", "start: failed\n", "ANSWER-x", False) == (
        "exit status 1",
        "start: failed\n",
    )
    assert judge("start prompt --print", 0, "hi ANSWER-x\n", "", "ANSWER-x", False) == (
        "stdout is 'hi ANSWER-x', not 'ANSWER-x'",
        "",
    )
    assert judge("start prompt --print", None, "", "", "ANSWER-x", False) == (
        f"start did not end within {agents.OUTER_TIMEOUT} s",
        "",
    )


def test_judge_json_run(agents: ModuleType) -> None:
    judge = agents._judge
    title = "start task --print --json"
    result = {"task": agents.PRINT_TASK, "success": True, "answer": "ANSWER-x", "stderr": ""}
    assert judge(title, 0, json.dumps(result), "", "ANSWER-x", False) is None
    failed = {**result, "success": False, "answer": "", "error": "Not logged in", "stderr": "e"}
    assert judge(title, 1, json.dumps(failed), "", "ANSWER-x", False) == (
        "exit status 1, success False: Not logged in",
        "e",
    )
    assert judge(title, 1, "Traceback", "boom", "ANSWER-x", False) == (
        "exit status 1, and stdout is not a JSON object",
        "boom",
    )


def test_judge_json_run_wants_exactly_the_value(agents: ModuleType) -> None:
    judge = agents._judge_json
    value = {"response": "ANSWER-x", "items": [1, 2]}
    result = {"success": True, "value": value, "answer": json.dumps(value), "stderr": ""}
    assert judge(0, json.dumps(result), "", value) is None
    # cn's old reading: the "response" field taken for the whole answer.
    wrong = {**result, "value": "ANSWER-x"}
    assert judge(0, json.dumps(wrong), "", value) == (
        f"the value is 'ANSWER-x', not {value!r}",
        "",
    )
    failed = {**result, "success": False, "value": None, "error": "not JSON", "stderr": "e"}
    assert judge(1, json.dumps(failed), "", value) == (
        "exit status 1, success False: not JSON",
        "e",
    )


def test_judge_empty_run_wants_the_agents_failure(agents: ModuleType) -> None:
    judge = agents._judge_empty
    said = "start: agent 'cn' failed: exited 0 but printed no answer\n"
    assert judge("cn", 1, "", said) is None
    assert judge("cn", 0, "Empty response received from LLM.\n", "") == (
        "exit status 0 and stdout 'Empty response received from LLM.', not 1 and nothing"
    )
    assert judge("cn", 1, "", "start: internal error\n") == (
        "start's stderr does not say that the agent failed"
    )
    assert judge("cn", None, "", "") == f"start did not end within {agents.OUTER_TIMEOUT} s"


def test_the_results_table_has_the_json_and_empty_columns(agents: ModuleType) -> None:
    rows = [
        agents.Row("cn", "1.5.47", "yes", "1.0 + 1.0", (), "yes", "failed", "start: agent 'cn' …"),
        agents.Row("llm-echo", "0.36", "yes", "1.0 + 1.0"),
        agents.Row("aider", "0.86.2", "yes", "1.0", ("`x`: exit status 0",), "yes", "no"),
    ]
    assert agents.headless_table(rows) == (
        "| agent | CLI version | answered | JSON answer | empty answer | seconds |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| cn | 1.5.47 | yes | yes | failed | 1.0 + 1.0 |\n"
        "| llm-echo | 0.36 | yes | - | - | 1.0 + 1.0 |\n"
        "| aider | 0.86.2 | yes | yes | no | 1.0 |\n"
        "\n## What start said of the empty answer\n\n"
        "- cn: `start: agent 'cn' …`\n"
        "\n## Failures\n\n### aider\n\n`x`: exit status 0\n"
    )
    assert [row.failed for row in rows] == [False, False, True]
