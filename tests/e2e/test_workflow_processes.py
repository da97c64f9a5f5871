"""`start workflow run`, Ctrl-C and `start workflow resume` in real processes, the steps run as
board items by the stand-in headless agent (tests/fake_headless.py), which logs each prompt it
is given (so a test counts its invocations), answers a triage as JSON, and holds or fails a
prompt with BOOM in it (see BEFORE)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

CONFIG = f"""
[settings]
default_agent = "fake"

{agent("fake")}

[tasks.triage]
prompt = "Triage: {{instructions}}"
output = "json"

[workflows.fix.steps.triage]
task = "triage"
instructions = "{{instructions}}"

[workflows.fix.steps.plan]
prompt = "Plan a fix of severity {{steps.triage.value.severity}}"
when = "steps.triage.value.severity == 'high'"

[workflows.fix.steps.review]
prompt = "Review: {{steps.plan.answer}}"

[workflows.fix.steps.notes]
prompt = "Notes on {{instructions}} BOOM"

[workflows.fix.steps.summary]
prompt = "Summary of {{steps.notes.answer}}"

[workflows.each.steps.triage]
task = "triage"
instructions = "{{instructions}}"

[workflows.each.steps.review]
prompt = "Review {{item}} of {{steps.triage.value.severity}}"
for_each = "steps.triage.value.files"

[workflows.each.steps.sum]
prompt = "Sum up {{steps.review.answer}}"

[workflows.flaky.steps.once]
prompt = "FLAKY 1 once"
retries = 1

[workflows.flaky.steps.twice]
prompt = "FLAKY 2 twice"
retries = 1

[workflows.flaky.steps.after]
prompt = "After {{steps.once.answer}}"
"""

# The stand-in's first act (FAKE_BEFORE): log the prompt's first line, then answer a triage
# with JSON of FAKE_SEVERITY and three files (with text for 'none': out of format); a prompt with BOOM in it
# makes the file FAKE_HOLD and sleeps, when FAKE_HOLD is set, else fails while FAKE_BOOM exists;
# 'FLAKY N ...' fails its first N times.
BEFORE = """
import json, os, sys, time
with open(os.environ['FAKE_COUNT'], 'a') as log:
    log.write(sys.argv[-1].splitlines()[0] + '\\n')
if sys.argv[-1].startswith('Triage') and os.environ.get('FAKE_SEVERITY') == 'none':
    print('Severe, I think')
    sys.exit(0)
if sys.argv[-1].startswith('Triage'):
    files = ['a.py', 'b.py', 'c.py']
    print(json.dumps({'severity': os.environ.get('FAKE_SEVERITY', 'low'), 'files': files}))
    sys.exit(0)
if sys.argv[-1].startswith('FLAKY'):
    with open(os.environ['FAKE_COUNT']) as log:
        given = log.read().splitlines().count(sys.argv[-1])
    if given <= int(sys.argv[-1].split()[1]):
        print('Error: flaked', file=sys.stderr)
        sys.exit(1)
if 'BOOM' in sys.argv[-1] and os.environ.get('FAKE_HOLD'):
    open(os.environ['FAKE_HOLD'], 'w').close()
    time.sleep(300)
if 'BOOM' in sys.argv[-1] and os.path.exists(os.environ['FAKE_BOOM']):
    print('Error: it broke', file=sys.stderr)
    sys.exit(1)
"""


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def start(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    given = {
        "FAKE_BEFORE": BEFORE,
        "FAKE_COUNT": str(project.parent / "prompts"),
        "FAKE_BOOM": str(project.parent / "boom"),
        **env,
    }
    return run_start(*args, cwd=project, env=given, timeout=120)


def prompts(project: Path) -> list[str]:
    """The first line of each prompt the stand-in was given, in the order it was."""
    log = project.parent / "prompts"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def steps(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[Any, ...]]:
    data = json.loads(done.stdout)
    return {s["name"]: (s["state"], s["answer"], s["value"], s["reason"]) for s in data["steps"]}


def test_a_false_condition_skips_its_step_and_what_reads_it(project: Path) -> None:
    done = start(project, "workflow", "run", "fix", "the login page")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "workflow fix: item-1",
        "  triage (item-2) succeeded",
        "  notes (item-3) succeeded",
        "  plan (item-4) skipped: when 'steps.triage.value.severity == 'high'' is false",
        "  summary (item-5) succeeded",
        "  review (item-6) skipped: step 'plan' was skipped",
    ]
    assert sorted(prompts(project)) == [
        "Notes on the login page BOOM",
        "Summary of ANSWER: Notes on the login page BOOM",
        "Triage: the login page",
    ]
    parent = json.loads(start(project, "board", "show", "1", "--json").stdout)
    assert parent["status"] == "completed"
    assert parent["metadata"]["workflow"]["name"] == "fix"
    assert parent["metadata"]["workflow"]["steps"] == {
        "triage": "item-2",
        "notes": "item-3",
        "plan": "item-4",
        "summary": "item-5",
        "review": "item-6",
    }


def test_a_failed_step_stops_its_dependents_and_the_rest_finish(project: Path) -> None:
    (project.parent / "boom").touch()
    done = start(
        project, "workflow", "run", "fix", "the login page", "--json", FAKE_SEVERITY="high"
    )
    assert done.returncode == 1, done.stderr
    found = steps(done)
    assert found == {
        "triage": (
            "succeeded",
            '{"severity": "high", "files": ["a.py", "b.py", "c.py"]}',
            {"severity": "high", "files": ["a.py", "b.py", "c.py"]},
            None,
        ),
        "notes": ("failed", None, None, "exited with status 1: Error: it broke"),
        "plan": ("succeeded", "ANSWER: Plan a fix of severity high", None, None),
        "summary": (
            "stopped",
            None,
            None,
            "step 'notes' failed: exited with status 1: Error: it broke",
        ),
        "review": ("succeeded", "ANSWER: Review: ANSWER: Plan a fix of severity high", None, None),
    }
    data = json.loads(done.stdout)
    assert data["exit_code"] == 1
    assert all(s["agent"] == "fake" for s in data["steps"] if s["name"] != "summary")
    summary = json.loads(start(project, "board", "show", "5", "--json").stdout)
    assert (summary["status"], summary["reason"]) == (
        "failed",
        "stopped: step 'notes' failed: exited with status 1: Error: it broke",
    )
    assert "Summary of ANSWER: Notes on the login page BOOM" not in prompts(project)
    # start workflow show reads the same states back, and runs nothing.
    shown = start(project, "workflow", "show", "1", "--json")
    assert shown.returncode == 0, shown.stderr
    assert steps(shown) == found
    assert "exit_code" not in json.loads(shown.stdout)
    lines = start(project, "workflow", "show", "1").stdout.splitlines()
    assert lines[0] == "workflow fix: item-1"
    assert lines[4] == (
        "  summary (item-5) stopped: step 'notes' failed: exited with status 1: Error: it broke"
    )
    # Each step's run is in the history, as the workflow's run of its item.
    triage = data["steps"][0]
    logged = start(project, "log", "show", str(triage["history"]), "--no-pager")
    assert "  command      start workflow run (item-2)" in logged.stdout.splitlines()


def test_a_resume_runs_only_what_did_not_complete(project: Path) -> None:
    (project.parent / "boom").touch()
    first = start(project, "workflow", "run", "fix", "the login page", FAKE_SEVERITY="high")
    assert first.returncode == 1, first.stderr
    assert len(prompts(project)) == 4  # triage, notes (failed), plan, review
    (project.parent / "boom").unlink()
    # The config changes meanwhile: the run follows the definition it began with.
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(
        CONFIG.replace("Summary of {steps.notes.answer}", "Edited {steps.notes.answer}"),
        encoding="utf-8",
    )
    again = start(project, "workflow", "resume", "1", "--json", FAKE_SEVERITY="high")
    assert again.returncode == 0, again.stderr
    assert {name: state[0] for name, state in steps(again).items()} == dict.fromkeys(
        ("triage", "notes", "plan", "summary", "review"), "succeeded"
    )
    assert prompts(project)[4:] == [
        "Notes on the login page BOOM",
        "Summary of ANSWER: Notes on the login page BOOM",
    ]
    assert sorted(prompts(project)[:4]) == [
        "Notes on the login page BOOM",
        "Plan a fix of severity high",
        "Review: ANSWER: Plan a fix of severity high",
        "Triage: the login page",
    ]
    # A finished run resumed runs nothing.
    third = start(project, "workflow", "resume", "1")
    assert third.returncode == 0, third.stderr
    assert len(prompts(project)) == 6


def test_an_out_of_format_answer_stops_what_reads_it_and_exits_65(project: Path) -> None:
    done = start(
        project, "workflow", "run", "fix", "the login page", "--json", FAKE_SEVERITY="none"
    )
    assert done.returncode == 65, done.stderr
    found = steps(done)
    assert found["triage"][0] == "out-of-format"
    assert found["triage"][3].startswith("its answer is not the JSON the task's output asks for")
    assert found["plan"][:3] == ("stopped", None, None)
    assert found["plan"][3].startswith("step 'triage' answered out of format: its answer is not")
    assert found["review"][0] == "stopped"
    assert (found["notes"][0], found["summary"][0]) == ("succeeded", "succeeded")
    assert json.loads(done.stdout)["exit_code"] == 65


def test_ctrl_c_in_the_middle_then_resume_runs_each_step_once_more_at_most(
    project: Path,
) -> None:
    held = project.parent / "held"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "FAKE_BEFORE": BEFORE,
        "FAKE_COUNT": str(project.parent / "prompts"),
        "FAKE_BOOM": str(project.parent / "boom"),
        "FAKE_HOLD": str(held),
    }
    runner = subprocess.Popen(
        [sys.executable, "-m", "start", "workflow", "run", "fix", "the login page"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        while not held.exists():  # the notes step's agent is running
            time.sleep(0.05)
        runner.send_signal(signal.SIGINT)
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 130, err
    assert err.endswith("start: interrupted\n")
    notes = json.loads(start(project, "board", "show", "3", "--json").stdout)
    assert (notes["status"], notes["assignee"]) == ("pending", None)
    again = start(project, "workflow", "resume", "1", "--json")
    assert again.returncode == 0, again.stderr
    assert {name: state[0] for name, state in steps(again).items()} == {
        "triage": "succeeded",
        "notes": "succeeded",
        "plan": "skipped",
        "summary": "succeeded",
        "review": "skipped",
    }
    # The notes step's agent started twice (cut short, then run to the end); every other step
    # once: what had completed before Ctrl-C did not run again.
    assert sorted(prompts(project)) == [
        "Notes on the login page BOOM",
        "Notes on the login page BOOM",
        "Summary of ANSWER: Notes on the login page BOOM",
        "Triage: the login page",
    ]


def test_for_each_runs_a_step_once_per_element_and_collects_in_order(project: Path) -> None:
    done = start(project, "workflow", "run", "each", "the login page", "--json")
    assert done.returncode == 0, done.stderr
    found = steps(done)
    answers = [f"ANSWER: Review {name} of low" for name in ("a.py", "b.py", "c.py")]
    assert found["review"] == ("succeeded", answers, [None, None, None], None)
    # A list fills a binding in as compact JSON (compose.workflow.text).
    listed = json.dumps(answers, separators=(",", ":"))
    assert found["sum"][:2] == ("succeeded", f"ANSWER: Sum up {listed}")
    assert sorted(prompts(project)) == [
        *(f"Review {name} of low" for name in ("a.py", "b.py", "c.py")),
        f"Sum up {listed}",
        "Triage: the login page",
    ]
    elements = json.loads(start(project, "board", "--parent", "3", "--all", "--json").stdout)
    assert sorted((e["title"], e["status"]) for e in elements) == [
        (f"each / review [{n}]", "completed") for n in (1, 2, 3)
    ]


def test_retries_run_a_failed_step_again_and_no_more(project: Path) -> None:
    done = start(project, "workflow", "run", "flaky", "--json")
    assert done.returncode == 1, done.stderr
    assert steps(done) == {
        "once": ("succeeded", "ANSWER: FLAKY 1 once", None, None),
        "twice": ("failed", None, None, "exited with status 1: Error: flaked"),
        "after": ("succeeded", "ANSWER: After ANSWER: FLAKY 1 once", None, None),
    }
    assert sorted(prompts(project)) == [
        "After ANSWER: FLAKY 1 once",
        "FLAKY 1 once",
        "FLAKY 1 once",
        "FLAKY 2 twice",
        "FLAKY 2 twice",
    ]


def test_resuming_an_item_that_is_no_workflow_run_says_so(project: Path) -> None:
    assert start(project, "board", "add", "Just an item").returncode == 0
    done = start(project, "workflow", "resume", "1")
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "start: item-1 is not a workflow run (its metadata has no 'workflow' with its steps); "
        "start workflow run NAME begins one\n",
    )


def test_a_workflow_of_an_untrusted_project_runs_nothing(isolated: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated / ".start", {"config.toml": '[workflows.w.steps.a]\nprompt = "hi"\n'})
    done = run_start("workflow", "run", "w", cwd=isolated)
    assert (done.returncode, done.stdout) == (5, ""), done.stderr
    assert done.stderr == (
        f"start: {isolated / '.start'} is not trusted (never approved); run 'start trust' to "
        "review it\n"
    )
    listed = run_start("board", "--json", cwd=isolated)  # no item was made
    assert (listed.returncode, json.loads(listed.stdout)) == (0, [])
