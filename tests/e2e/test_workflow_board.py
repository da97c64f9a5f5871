"""A workflow run's step items on a board that others use too, in real processes: `start board
run` and a person's `start board claim --next` pass them by (only the run's own runner claims
them), and `start workflow` lists the run. The stand-in agent and its config are those of
tests/e2e/test_workflow_processes.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e.test_workflow_processes import BEFORE, prompts, start
from tests.e2e.test_workflow_processes import project as project  # the fixture

pytestmark = pytest.mark.slow


def _interrupted(project: Path) -> None:
    """`start workflow run fix` stopped by Ctrl-C while its notes step (item-3) runs: the item
    is pending again, its filled run kept, ready to run."""
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
        while not held.exists():
            time.sleep(0.05)
        runner.send_signal(signal.SIGINT)
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 130, err


def test_board_run_and_claim_next_pass_a_workflows_step_items_by(project: Path) -> None:
    _interrupted(project)
    notes = json.loads(start(project, "board", "show", "3", "--json").stdout)
    assert (notes["status"], notes["blocked_by"], notes["run"]["door"]) == (
        "pending",
        [],
        "workflow",
    )
    ran = len(prompts(project))
    # Another item on the same board: start board run runs it, and only it.
    assert start(project, "board", "add", "Other", "--prompt", "Other work").returncode == 0
    board = start(project, "board", "run", "--until-empty")
    assert board.returncode == 0, board.stderr
    assert prompts(project)[ran:] == ["Other work"]
    notes = json.loads(start(project, "board", "show", "3", "--json").stdout)
    assert (notes["status"], notes["assignee"], notes["answer"]) == ("pending", None, None)
    # A person's claim of the next ready item does not take it either.
    claimed = start(project, "board", "claim", "--next")
    assert (claimed.returncode, claimed.stdout) == (75, ""), claimed.stderr
    assert claimed.stderr.startswith("start: nothing is ready to claim on the board of ")
    assert claimed.stderr.endswith(
        " blocked, the rest a workflow run's (start workflow resume ID runs its steps)\n"
    )
    # Its run goes on where it stopped: the notes step runs once more, through the workflow.
    again = start(project, "workflow", "resume", "1", "--json")
    assert again.returncode == 0, again.stderr
    after = prompts(project)[ran + 1 :]  # (a triage cut short by Ctrl-C runs again too)
    assert after.count("Notes on the login page BOOM") == 1
    assert after.count("Summary of ANSWER: Notes on the login page BOOM") == 1


def test_start_workflow_lists_the_runs_with_their_steps(project: Path) -> None:
    (project.parent / "boom").touch()
    assert start(project, "workflow", "run", "fix", "the login page").returncode == 1
    assert start(project, "workflow", "run", "each", "the form").returncode == 0
    done = start(project, "workflow", "--json")
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert [
        (r["id"], r["workflow"], r["instructions"], r["state"], r["done"], r["failed"], r["steps"])
        for r in runs
    ] == [
        ("item-7", "each", "the form", "succeeded", 3, 0, 3),
        # notes failed and summary stopped; plan and review skipped count as done
        ("item-1", "fix", "the login page", "failed", 3, 2, 5),
    ]
    # The config's own with the shipped ones (config/workflows.toml), by name.
    assert [w["name"] for w in json.loads(done.stdout)["workflows"]] == [
        "compare-answers", "each", "fix", "fix-severe", "flaky",
    ]  # fmt: skip
    lines = start(project, "workflow", "list").stdout.splitlines()
    assert lines[7].split()[:6] == ["RUN", "WORKFLOW", "STATE", "DONE", "FAILED", "STEPS"]
    assert lines[8].split()[:6] == ["item-7", "each", "succeeded", "3", "0", "3"]
    assert lines[9].split()[:6] == ["item-1", "fix", "failed", "3", "2", "5"]
    completed = start(
        project,
        _START_COMPLETE="bash_complete",
        COMP_WORDS="start workflow resume ",
        COMP_CWORD="3",
    )
    assert completed.stdout.split() == ["plain,item-7", "plain,item-1"]
