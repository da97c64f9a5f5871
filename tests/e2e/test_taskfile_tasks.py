"""`start task taskfile:NAME` on the terminal, through the real `start` in a subprocess and the
real go-task: `task` replaces start (its pid, its output, its exit status, the stdin start was
given), and the run is in the history as a launch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_taskfile import TASK, TASKFILE
from tests.conftest import HANG, REPO, read_pids, run_start, wait_gone, write_tree

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow
needs_task = pytest.mark.skipif(TASK is None, reason="go-task is a test dependency (go-task-bin)")

MORE = """
  pid:
    desc: "Prints the process id of `task`."
    cmds:
      - echo $$
    silent: true

  read:
    desc: "Copies its stdin to stdout."
    cmds:
      - cat
    silent: true
"""


@pytest.fixture
def project(isolated: Path) -> dict[str, str]:
    """A project with TASKFILE (and MORE), trusted by path: the environment of its runs."""
    write_tree(isolated, {"Taskfile.yml": TASKFILE + MORE})
    return {"START_TRUSTED_PATHS": str(isolated)}


@needs_task
def test_the_task_replaces_start(isolated: Path, project: dict[str, str]) -> None:
    started = subprocess.Popen(
        [sys.executable, "-m", "start", "task", "taskfile:pid"],
        cwd=isolated,
        env={**os.environ, **project, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = started.communicate(timeout=60)
    assert (started.returncode, stdout) == (0, f"{started.pid}\n")
    assert stderr == f"start ▸ taskfile:pid  (Taskfile.yml, run by task in {isolated})\n"


@needs_task
def test_its_output_and_exit_status_are_the_tasks(isolated: Path, project: dict[str, str]) -> None:
    greeted = run_start("task", "taskfile:greet", "-q", "--", "big", "world", env=project)
    assert (greeted.returncode, greeted.stdout, greeted.stderr) == (0, "Hello big world\n", "")
    failed = run_start("task", "taskfile:fail", "-q", env=project)
    assert (failed.returncode, failed.stdout) == (3, "partial\n")
    assert failed.stderr == 'broken\ntask: Failed to run task "fail": exit status 3\n'


@needs_task
def test_stdin_is_the_tasks(isolated: Path, project: dict[str, str]) -> None:
    result = run_start("task", "taskfile:read", "-q", env=project, stdin="piped text\n")
    assert (result.returncode, result.stdout) == (0, "piped text\n")


@needs_task
def test_the_run_is_recorded_as_a_launch(isolated: Path, project: dict[str, str]) -> None:
    assert run_start("task", "taskfile:greet", "-q", env=project).returncode == 0
    listed = run_start("log", "--json", env=project)
    (run,) = json.loads(listed.stdout)
    assert (run["task"], run["agent"], run["state"], run["headless"]) == (
        "taskfile:greet",
        "task",
        "launched",
        False,
    )


@needs_task
def test_an_unknown_task_never_reaches_task(isolated: Path, project: dict[str, str]) -> None:
    result = run_start("task", "taskfile:gret", env=project)
    assert (result.returncode, result.stdout) == (4, "")
    assert result.stderr == (
        "start: unknown task 'taskfile:gret'; did you mean 'taskfile:greet'? (in Taskfile.yml)\n"
    )


@needs_task
def test_ctrl_c_under_print_ends_the_task_and_records_it_interrupted(
    isolated: Path, project: dict[str, str], survivors: list[int]
) -> None:
    pid_file = isolated.parent / "sleeper.pid"
    write_tree(
        isolated,
        {"Taskfile.yml": TASKFILE + MORE + SLEEPER.replace("PIDFILE", str(pid_file))},
    )
    started = subprocess.Popen(
        [sys.executable, "-m", "start", "task", "taskfile:sleeper", "--print", "-q"],
        cwd=isolated,
        env={**os.environ, **project, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    survivors.append(started.pid)
    sleeper = read_pids(pid_file)
    survivors.extend(sleeper)
    started.send_signal(signal.SIGINT)
    stdout, stderr = started.communicate(timeout=HANG)
    assert (started.returncode, stdout, stderr) == (130, "", "\nstart: interrupted\n")
    assert wait_gone(sleeper) == []
    listed = run_start("log", "--json", env=project)
    (run,) = json.loads(listed.stdout)
    assert (run["task"], run["state"]) == ("taskfile:sleeper", "interrupted")


# A task whose command is a process of its own (go-task's shell is built in): it writes its pid,
# then becomes a sleep.
SLEEPER = """
  sleeper:
    desc: "Writes its pid, and sleeps."
    cmds:
      - sh -c 'echo $$ > PIDFILE; exec sleep 300'
    silent: true
"""
