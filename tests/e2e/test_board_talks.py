"""`start board run` says what it does (issue 46): the live line of the items running on a
terminal, a note when it waits for ready items, and a tally at the end; `board watch --timeout`
says how long it waited and what the item is doing. Real processes, stand-in agents
(tests/fake_headless.py), a real pseudo-terminal for the live line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from queue import Empty, Queue
from typing import IO

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.fake_headless import agent
from tests.terminal import run_on_terminal

pytestmark = pytest.mark.slow

CONFIG = f"""
[settings]
default_agent = "fake"

{agent("fake")}
"""
# The tally's time is the one thing that varies; tests read it as this.
TIME = re.compile(r" in \d+\.\d s$")


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def timed(line: str) -> str:
    return TIME.sub(" in T s", line)


def lines_of(stream: IO[str]) -> Callable[[], str]:
    """The next line of `stream` when one comes within 30 s, else "" (as at its end): the test
    fails rather than hangs on a runner that says nothing."""
    queue: Queue[str] = Queue()

    def read() -> None:
        for line in stream:
            queue.put(line)
        queue.put("")  # its end

    threading.Thread(target=read, daemon=True).start()

    def next_line() -> str:
        try:
            return queue.get(timeout=30)
        except Empty:
            return ""

    return next_line


def test_the_runner_ends_with_a_tally_off_a_terminal_and_json_stays_the_items(
    project: Path,
) -> None:
    run_start("board", "add", "Good", "--prompt", "a", cwd=project)
    run_start("board", "add", "Bad", "--prompt", "b", cwd=project)
    ran = run_start(
        "board", "run", "--until-empty", "--json", cwd=project,
        env={"FAKE_BEFORE": "import sys\nif sys.argv[-1] == 'b': sys.exit(3)"},
    )  # fmt: skip
    assert ran.returncode == 1
    # In the order they ended, which the two runs at once decide: by id here.
    ended = {item["id"]: item["status"] for item in __import__("json").loads(ran.stdout)}
    assert ended == {"item-1": "completed", "item-2": "failed"}
    lines = ran.stderr.splitlines()
    assert timed(lines[-1]) == "start: 1 completed, 1 failed in T s"
    assert "\r" not in ran.stderr  # no live line off a terminal
    quiet = run_start("board", "run", "--until-empty", "-q", cwd=project)
    assert (quiet.returncode, quiet.stderr) == (0, "")


def test_on_a_terminal_the_items_running_have_a_live_line(project: Path) -> None:
    run_start("board", "add", "Plan the fix", "--prompt", "a", cwd=project)
    code, drawn = run_on_terminal(
        "board", "run", "--until-empty", cwd=project,
        env={"FAKE_MODE": "slow", "FAKE_SECONDS": "1.6", "NO_COLOR": "1"},
    )  # fmt: skip
    assert code == 0, drawn
    assert "\rstart: running item-1 (Plan the fix) … 1 s" in drawn
    finished = drawn.split("\n")
    assert (
        finished[1]
        .split("\r")[-1]
        .startswith("start ✓ item-1 completed by fake, run 1 in the history: Plan the fix")
    )
    assert timed(finished[-2]) == "start: 1 completed, 0 failed in T s"
    quiet_code, quiet = run_on_terminal(
        "board", "run", "--until-empty", "-q", cwd=project, env={"NO_COLOR": "1"}
    )
    assert (quiet_code, "running" in quiet) == (0, False)


def test_an_idle_runner_says_once_that_it_waits_and_its_tally_at_ctrl_c(project: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runner = subprocess.Popen(
        [sys.executable, "-m", "start", "board", "run"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert runner.stderr is not None
        line = lines_of(runner.stderr)
        assert line() == "start: waiting for ready items (Ctrl-C to stop)\n"
        run_start("board", "add", "Late", "--prompt", "a", cwd=project)
        assert line().startswith("start ▸ item-1 claimed by run:")
        assert line().startswith("start ✓ item-1 completed by fake")
        assert line() == "start: waiting for ready items (Ctrl-C to stop)\n"
        time.sleep(1.5)  # idle a while (its loop looks every second): nothing more is said
        runner.send_signal(signal.SIGINT)
        runner.wait(timeout=60)
        err = "".join(iter(line, ""))
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 130
    assert [timed(line) for line in err.splitlines()] == [
        "start: 1 completed, 0 failed in T s",
        "",  # closes the terminal's ^C echo
        "start: interrupted",
    ]


def test_watch_says_at_its_timeout_how_long_it_waited_and_what_the_item_does(
    project: Path,
) -> None:
    run_start("board", "add", "Plan", cwd=project)
    run_start("board", "claim", "1", "--as", "ann", cwd=project, env={"TZ": "UTC0"})
    watched = run_start("board", "watch", "1", "--timeout", "0.3", cwd=project, env={"TZ": "UTC0"})
    shown = __import__("json").loads(run_start("board", "show", "1", "--json", cwd=project).stdout)
    since = shown["updated"][:19].replace("T", " ")
    assert (watched.returncode, watched.stdout) == (124, "")
    assert watched.stderr == (
        "start: item-1 is in_progress, held by ann\n"
        f"start: gave up after 0.3 s: item-1 is still in_progress, held by ann since {since}\n"
    )
    quiet = run_start("board", "watch", "1", "--timeout", "0.1", "-q", cwd=project)
    assert (quiet.returncode, quiet.stderr) == (124, "")
