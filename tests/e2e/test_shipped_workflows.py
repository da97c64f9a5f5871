"""The two shipped workflows (config/workflows.toml), unchanged, run in real processes: fix-severe
by the stand-in headless agent (tests/fake_headless.py), which answers the triage and the plan
with JSON and logs each prompt it is given; compare-answers by the real `llm` CLI with its echo
model as the three agents, and the stand-in comparing their answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_start, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

LLM = shutil.which("llm", path=str(Path(sys.executable).parent)) or shutil.which("llm")

# The stand-in's first act (FAKE_BEFORE): log the prompt's first line; answer the shipped task
# triage with FAKE_SEVERITY and two files, and plan-fix with a plan that changes them.
BEFORE = """
import json, os, sys
prompt = sys.argv[-1]
with open(os.environ['FAKE_COUNT'], 'a') as log:
    log.write(prompt.strip().splitlines()[0] + '\\n')
files = ['src/session.py', 'src/login.py']
if 'Triage the following problem report' in prompt:
    severity = os.environ.get('FAKE_SEVERITY', 'high')
    print(json.dumps({'severity': severity, 'summary': 'Logins time out', 'files': files}))
    sys.exit(0)
if 'Plan a fix for the following problem' in prompt:
    steps = ['Raise the session timeout', 'Retry the login once']
    print(json.dumps({'summary': 'Raise the timeout', 'steps': steps, 'files': files}))
    sys.exit(0)
"""

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


def start(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    given = {"FAKE_BEFORE": BEFORE, "FAKE_COUNT": str(project.parent / "prompts"), **env}
    return run_start(*args, cwd=project, env=given, timeout=120)


def prompts(project: Path) -> list[str]:
    log = project.parent / "prompts"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def states(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[Any, ...]]:
    data = json.loads(done.stdout)
    return {s["name"]: (s["state"], s["value"], s["reason"]) for s in data["steps"]}


def test_the_shipped_workflows_pass_config_validate(project: Path) -> None:
    done = start(project, "config", "validate")
    assert (done.returncode, done.stdout) == (0, "✓ 0 errors, 0 warnings in 6 files\n")


def test_fix_severe_plans_and_reviews_each_file_of_the_plan_when_severe(project: Path) -> None:
    done = start(project, "workflow", "run", "fix-severe", "the login page times out", "--json")
    assert done.returncode == 0, done.stderr
    files = ["src/session.py", "src/login.py"]
    plan = {
        "summary": "Raise the timeout",
        "steps": ["Raise the session timeout", "Retry the login once"],
        "files": files,
    }
    found = states(done)
    assert found["triage"] == (
        "succeeded",
        {"severity": "high", "summary": "Logins time out", "files": files},
        None,
    )
    assert found["plan"] == ("succeeded", plan, None)
    assert found["review"] == ("succeeded", [None, None], None)
    answers = json.loads(done.stdout)["steps"][2]["answer"]
    assert [answer.splitlines()[0] for answer in answers] == [
        f"ANSWER: Review the file {name} of this project against the plan of a fix below: would "
        "the plan's change to it fix the problem, and what does it miss or break? Change "
        "nothing. Answer with your verdict in a sentence, then your reasons."
        for name in files  # in the plan's order
    ]
    assert "## The problem\n\nLogins time out\n\n## The plan (JSON)\n\n{" in answers[0]
    # Each step asked once: the triage, the plan, a review per file.
    assert len(prompts(project)) == 4
    asked = "\n".join(prompts(project))
    assert asked.count("Review the file src/") == 2


def test_fix_severe_stops_after_the_triage_when_it_is_not_severe(project: Path) -> None:
    done = start(
        project, "workflow", "run", "fix-severe", "a typo in the footer", FAKE_SEVERITY="low"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "workflow fix-severe: item-1",
        "  triage (item-2) succeeded",
        "  plan (item-3) skipped: when 'contains(['high', 'critical'], "
        "steps.triage.value.severity)' is false",
        "  review (item-4) skipped: step 'plan' was skipped",
    ]
    assert len(prompts(project)) == 1


def test_fix_severe_dry_run_reads_well(project: Path) -> None:
    done = start(project, "workflow", "run", "fix-severe", "the login page times out", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "workflow fix-severe: Triage a problem report; if it is severe, plan a fix, then review "
        "each file the plan changes",
        "instructions: the login page times out",
        "",
        "level 0",
        "  triage: task triage; agent fake; output schema",
        "",
        "level 1",
        "  plan: task plan-fix; agent fake; output schema; when contains(['high', 'critical'], "
        "steps.triage.value.severity)",
        "    reads triage: value",
        "",
        "level 2",
        "  review: prompt; agent fake; output text; for each of steps.plan.value.files",
        "    reads triage: value",
        "    reads plan: answer, value",
        "",
        "```mermaid",
        "flowchart TD",
        '  step_triage["triage<br/>task triage · fake"]',
        "  step_plan[\"plan<br/>task plan-fix · fake<br/>when contains(['high', 'critical'], "
        'steps.triage.value.severity)"]',
        '  step_review["review<br/>prompt · fake<br/>for each element"]',
        "  step_triage -->|value| step_plan",
        "  step_triage -->|value| step_review",
        "  step_plan -->|answer, value| step_review",
        "```",
    ]
    assert prompts(project) == []  # a dry run asks nothing


def echo_agent(name: str) -> str:
    """`[agents.NAME]` as the real `llm` CLI with its echo model, which answers with the prompt
    and the system prompt it was given, as JSON."""
    return (
        f"[agents.{name}]\n"
        f'bin = "{LLM}"\n'
        "command = \"{bin} prompt -m echo --sf '{role_file}' -f '{prompt_file}'\"\n"
        "print_command = \"{bin} prompt --json -m echo --sf '{role_file}' -f '{prompt_file}'\"\n"
        'print_output = "llm"\n'
        'print_permissions = { read-only = "" }\n'
    )


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
def test_compare_answers_asks_three_agents_and_compares_their_answers(project: Path) -> None:
    assert LLM is not None
    agents = "\n".join(echo_agent(name) for name in ("claude", "codex", "gemini"))
    (project.parent / "home" / ".config" / "start" / "agents.toml").write_text(
        agents, encoding="utf-8"
    )
    env = {
        "LLM_USER_PATH": str(project.parent / "llm"),
        "PATH": f"{Path(LLM).parent}{os.pathsep}{os.environ['PATH']}",
    }
    question = "Is Python's sort stable?"
    done = start(project, "workflow", "run", "compare-answers", question, "--json", **env)
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)["steps"]
    assert [(s["name"], s["state"], s["agent"]) for s in steps] == [
        ("first", "succeeded", "claude"),
        ("second", "succeeded", "codex"),
        ("third", "succeeded", "gemini"),
        ("compare", "succeeded", "fake"),
    ]
    echoed = [json.loads(s["answer"]) for s in steps[:3]]
    assert [answer["prompt"] for answer in echoed] == [question] * 3
    # The stand-in echoes the comparison it was asked, each answer in its place.
    compare = steps[3]["answer"]
    assert compare.startswith("ANSWER: Three agents were asked the same question. Compare ")
    assert f"## The question\n\n{question}\n\n## Answer 1\n\n{steps[0]['answer']}\n\n" in compare
    assert f"## Answer 2\n\n{steps[1]['answer']}\n\n## Answer 3\n\n{steps[2]['answer']}" in compare
    assert prompts(project) == [compare.removeprefix("ANSWER: ").splitlines()[0]]
