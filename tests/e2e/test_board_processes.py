"""The board with real processes: claims raced by 8 processes, a reassignment fencing out the old
holder, an MCP session killed with SIGKILL, and `start board run` with stand-in headless agents
(tests/fake_headless.py): a plan, implement, review chain, an answer out of format, a
reassignment during a run, and Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_start, running, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

# A real `start` command in its own process, held at the gate until the file argv[1] exists, so
# that the racers' claims meet in the same milliseconds.
_RACER = """
import os, sys, time
from start.cli import main
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
main(sys.argv[2:])
"""

CONFIG = f"""
[settings]
default_agent = "fake"

{agent("fake")}
{agent("other")}
{agent("third")}

[tasks.review]
prompt = "Review: {{instructions}}"

[tasks.verdict]
prompt = "Verdict: {{instructions}}"
output = "json"
"""


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def start(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_start(*args, cwd=project, env=env)


def item(project: Path, id_: str) -> Any:
    shown = start(project, "board", "show", id_, "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def race(project: Path, commands: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """Run each command of `start` in a process of its own, all released at once."""
    gate = project.parent / "gate"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(gate), *command],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    time.sleep(1.0)  # every racer is at the gate (imported, waiting)
    gate.touch()
    ended = []
    for racer in racers:
        out, err = racer.communicate(timeout=60)
        ended.append(subprocess.CompletedProcess(racer.args, racer.returncode, out, err))
    return ended


def test_of_eight_processes_claiming_one_item_exactly_one_wins(project: Path) -> None:
    assert start(project, "board", "add", "The one").stdout == "item-1\n"
    ended = race(project, [["board", "claim", "item-1", "--as", f"w{n}"] for n in range(8)])
    won = [result for result in ended if result.returncode == 0]
    assert len(won) == 1, [(r.returncode, r.stderr) for r in ended]
    winner = won[0].args[-1]
    for result in ended:
        if result is not won[0]:
            assert (result.returncode, result.stdout, result.stderr) == (
                75,
                "",
                f"start: item-1 is held by {winner}; it is theirs until they finish or release "
                "it, or it is reassigned (start board reassign item-1 NAME)\n",
            )
    found = item(project, "item-1")
    assert (found["status"], found["assignee"], found["epoch"]) == ("in_progress", winner, 1)


def test_claim_next_by_eight_processes_over_four_items_takes_each_once(project: Path) -> None:
    for n in range(4):
        start(project, "board", "add", f"item {n}")
    ended = race(project, [["board", "claim", "--next", "--as", f"w{n}"] for n in range(8)])
    won = {r.stdout.strip(): r.args[-1] for r in ended if r.returncode == 0}
    assert sorted(won) == ["item-1", "item-2", "item-3", "item-4"]
    lost = [r for r in ended if r.returncode != 0]
    assert [(r.returncode, r.stderr) for r in lost] == [
        (
            75,
            f"start: nothing is ready to claim on the board of {os.path.realpath(project)}: no "
            "item is pending\n",
        )
    ] * 4
    for id_, name in won.items():
        assert (item(project, id_)["assignee"], item(project, id_)["epoch"]) == (name, 1)


def test_claim_next_racing_takes_each_item_once_the_highest_priority_first(
    project: Path,
) -> None:
    """Six items of three priorities, claimed by eight processes at once: each item goes to
    one of them, and the claims (in the order of their epochs' events) take priority 0 first,
    then 1, then 2, the oldest first within each; two racers find nothing."""
    for title, priority in (("c", 2), ("a", 0), ("b", 1), ("a2", 0), ("c2", 2), ("b2", 1)):
        start(project, "board", "add", title, "--priority", str(priority))
    ended = race(project, [["board", "claim", "--next", "--as", f"w{n}"] for n in range(8)])
    won = sorted(r.stdout.strip() for r in ended if r.returncode == 0)
    assert won == [f"item-{n}" for n in range(1, 7)], [(r.returncode, r.stderr) for r in ended]
    assert [r.returncode for r in ended].count(75) == 2
    # The board's events are numbered in the order the transactions committed.
    from start.board import file as boardfile

    with boardfile.opened(str(project)) as opened:
        order = opened.connection.execute(
            "SELECT item FROM events WHERE op = 'claim' ORDER BY seq"
        ).fetchall()
    assert [f"item-{row[0]}" for row in order] == [
        "item-2", "item-4", "item-3", "item-6", "item-1", "item-5"
    ]  # fmt: skip


def test_archiving_and_claiming_one_item_at_once_one_of_them_wins_cleanly(
    project: Path,
) -> None:
    """Four items, each archived by one process and claimed by another, all at once: of each
    pair exactly one wins, the other is refused and says why, and no item is both archived and
    in progress."""
    for n in range(1, 5):
        start(project, "board", "add", f"item {n}")
    commands = []
    for n in range(1, 5):
        commands += [
            ["board", "archive", f"item-{n}"],
            ["board", "claim", f"item-{n}", "--as", "w"],
        ]
    ended = race(project, commands)
    for n in range(1, 5):
        archived, claimed = ended[2 * n - 2], ended[2 * n - 1]
        found = item(project, f"item-{n}")
        if archived.returncode == 0:
            assert (claimed.returncode, claimed.stderr) == (
                75,
                f"start: item-{n} is archived: an archived item cannot be taken (start board "
                f"unarchive item-{n} brings it back)\n",
            )
            assert (found["status"], found["archived"] is not None) == ("pending", True)
        else:
            assert (claimed.returncode, archived.returncode, archived.stderr) == (
                0,
                75,
                f"start: item-{n} is held by w (in_progress): an item in progress cannot be "
                f"archived; its holder finishes it or lets it go first (start board done item-{n}, "
                f"or start board update item-{n} --status pending)\n",
            )
            assert (found["status"], found["archived"]) == ("in_progress", None)


def test_a_reassign_fences_out_the_old_holders_late_update(project: Path) -> None:
    start(project, "board", "add", "Plan")
    claimed = start(project, "board", "claim", "1", "--as", "ann", "--json")
    epoch = json.loads(claimed.stdout)["epoch"]
    assert start(project, "board", "reassign", "1", "bob").returncode == 0
    assert start(project, "board", "reassign", "1", "ann").returncode == 0
    late = start(project, "board", "done", "1", "--as", "ann", "--epoch", str(epoch))
    assert (late.returncode, late.stderr) == (
        75,
        "start: item-1 was reassigned since your claim (epoch 1; it is now at epoch 3): this "
        "write is fenced out; claim it again to act on it\n",
    )
    found = item(project, "1")
    assert (found["status"], found["assignee"], found["epoch"]) == ("in_progress", "ann", 3)


def test_an_mcp_session_killed_with_sigkill_leaves_its_item_pending(
    project: Path, anyio_backend: str
) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    start(project, "board", "add", "Take me")
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    holders: list[str] = []

    async def session() -> None:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp"], env=env, cwd=str(project)
        )
        async with Client(parameters, mode="legacy") as client:
            claimed = await client.call_tool("board_tasks_claim", {"id": "item-1"})
            holders.append(claimed.structured_content["assignee"])
            server = int(holders[0].rsplit(":", 1)[1])  # the `start mcp` this test started
            assert item(project, "1")["status"] == "in_progress"
            os.kill(server, signal.SIGKILL)
            while running(server):
                await anyio.sleep(0.01)

    with contextlib.suppress(Exception):  # the client may find its server gone as it closes
        anyio.run(session)
    (holder,) = holders
    found = item(project, "1")
    pid = holder.rsplit(":", 1)[1]
    assert (found["status"], found["assignee"], found["releases"]) == ("pending", None, 1)
    assert found["reason"] == (
        f"released (1 of 2 before it fails): its holder {holder} (pid {pid}) ended without "
        "finishing it"
    )


# --- start board run -------------------------------------------------------------------------


def test_a_plan_implement_review_chain_hands_each_answer_on(project: Path) -> None:
    start(project, "board", "add", "Plan", "--prompt", "Plan the fix", "-a", "fake")
    start(
        project,
        "board",
        "add",
        "Implement",
        "--after",
        "1",
        "--prompt",
        "Do: {answers}",
        "-a",
        "other",
    )
    start(
        project,
        "board",
        "add",
        "Review",
        "--after",
        "2",
        "--task",
        "review",
        "-d",
        "{answers}",
        "-a",
        "third",
    )
    ran = start(project, "board", "run", "--until-empty")
    assert ran.returncode == 0, ran.stderr
    plan, build, review = (item(project, id_) for id_ in ("1", "2", "3"))
    assert plan["answer"] == "ANSWER: Plan the fix"
    assert build["answer"] == "ANSWER: Do: ## item-1: Plan\n\nANSWER: Plan the fix"
    assert review["answer"] == (
        "ANSWER: Review: ## item-2: Implement\n\n"
        "ANSWER: Do: ## item-1: Plan\n\nANSWER: Plan the fix"
    )
    for found in (plan, build, review):
        assert found["status"] == "completed"
        assert found["assignee"].startswith("run:")
        logged = json.loads(start(project, "log", "show", str(found["history"]), "--json").stdout)
        assert logged["answer"] == found["answer"]
    agents = [
        json.loads(start(project, "log", "show", str(n), "--json").stdout)["agent"]
        for n in (1, 2, 3)
    ]
    assert agents == ["fake", "other", "third"]
    logged = start(project, "log", "show", "1", "--no-pager").stdout.splitlines()
    assert "  command      start board run (item-1)" in logged
    # A run the board started is an ask like any other: start again repeats it, as the user's.
    again = start(project, "again", "2", "--json-fields", "agent,answer,request")
    assert again.returncode == 0, again.stderr
    repeated = json.loads(again.stdout)
    assert (repeated["agent"], repeated["answer"], repeated["request"]["door"]) == (
        "other",
        "ANSWER: Do: ## item-1: Plan\n\nANSWER: Plan the fix",
        "cli",
    )
    assert repeated["request"]["item"] is None  # the repeat is no item's run
    assert again.stderr.startswith(
        "start again: start prompt $'Do: ## item-1: Plan\\n\\nANSWER: Plan the fix' -a other "
        "--json-fields agent,answer,request --print  (in "
    )
    lines = ran.stderr.splitlines()
    assert lines[0].startswith("start ▸ item-1 claimed by run:")
    assert lines[1] == "start ✓ item-1 completed by fake, run 1 in the history: Plan"
    assert len(lines) == 7
    assert re.fullmatch(r"start: 3 completed, 0 failed in \d+\.\d s", lines[-1])


def test_a_run_that_fails_its_output_check_leaves_its_item_failed(project: Path) -> None:
    start(project, "board", "add", "Verdict", "--task", "verdict", "-d", "is it ok?")
    start(project, "board", "add", "After", "--after", "1", "--prompt", "then")
    ran = start(project, "board", "run", "--until-empty")
    assert ran.returncode == 1
    found = item(project, "1")
    assert found["status"] == "failed"
    assert found["reason"] == (
        "its answer is not the JSON the task's output asks for:\n"
        "  the answer is not JSON: Expecting value at line 1 column 1"
    )
    assert found["history"] == 1
    *lines, tally = ran.stderr.splitlines()
    assert lines[-3:] == [
        "start ✗ item-1 failed: its answer is not the JSON the task's output asks for:",
        "  the answer is not JSON: Expecting value at line 1 column 1",
        "start: item-2 stays blocked: item-1 failed, and only a completed item satisfies a "
        "dependency: reopen it (status pending) or remove it from blocked_by",
    ]
    assert re.fullmatch(r"start: 0 completed, 1 failed in \d+\.\d s", tally)
    assert item(project, "2")["status"] == "pending"


def test_a_reassignment_during_a_run_keeps_the_runs_outcome_off_the_item(project: Path) -> None:
    start(project, "board", "add", "Slow", "--prompt", "wait")
    until = project.parent / "reassigned"  # the agent answers once the item is reassigned
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKE_MODE": "slow", "FAKE_UNTIL": str(until)}
    runner = subprocess.Popen(
        [sys.executable, "-m", "start", "board", "run", "--until-empty"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        while item(project, "1")["status"] != "in_progress":
            time.sleep(0.05)
        assert start(project, "board", "reassign", "1", "alice").returncode == 0
        until.touch()
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    found = item(project, "1")
    assert (found["status"], found["assignee"], found["answer"]) == ("in_progress", "alice", None)
    assert err.splitlines()[-2] == (
        "start ⚠ item-1: its run's outcome was not kept: item-1 is held by alice: only its "
        "holder changes it (start board reassign item-1 NAME hands it over)"
    )
    assert runner.returncode == 0


def test_two_items_of_one_cli_never_run_together(project: Path) -> None:
    """The runner runs up to settings.print_agents items at once, but two runs of one CLI
    (`fake` and `other` are one program: the stand-in's interpreter) one after the other, by the
    one per-CLI lock of start.proc.agents, whichever run holds it."""
    start(project, "board", "add", "One", "--prompt", "a", "-a", "fake")
    start(project, "board", "add", "Two", "--prompt", "b", "-a", "other")
    log = project.parent / "log"
    ran = start(
        project, "board", "run", "--until-empty", FAKE_MODE="slow", FAKE_SECONDS="0.3",
        FAKE_LOG=str(log),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert [item(project, id_)["status"] for id_ in ("1", "2")] == ["completed", "completed"]
    first, second = sorted(
        tuple(map(float, line.split()[1:])) for line in log.read_text().splitlines()
    )
    assert first[1] <= second[0]


def test_a_run_with_nothing_ready_says_so(project: Path) -> None:
    start(project, "board", "add", "Work for a person")
    ran = start(project, "board", "run", "--until-empty")
    assert (ran.returncode, ran.stdout, ran.stderr) == (
        0,
        "",
        "start: no item was ready to run (an item runs once it is ready and says what to run: "
        "start board add TITLE --prompt TEXT)\n",
    )


def test_ctrl_c_stops_the_runs_and_releases_their_items(project: Path) -> None:
    start(project, "board", "add", "One", "--prompt", "a", "-a", "fake")
    start(project, "board", "add", "Two", "--prompt", "b", "-a", "other")
    pids = project.parent / "pids"
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKE_MODE": "sleep", "FAKE_PIDS": str(pids)}
    env["FAKE_NAME"] = "x"
    runner = subprocess.Popen(
        [sys.executable, "-m", "start", "board", "run"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        written = Path(f"{pids}.x")
        while not written.exists() or not written.read_text().strip():
            time.sleep(0.05)
        agents = [int(pid) for pid in written.read_text().split()]
        runner.send_signal(signal.SIGINT)
        _, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 130
    assert err.endswith("start: interrupted\n")
    for id_ in ("1", "2"):
        found = item(project, id_)
        assert (found["status"], found["assignee"], found["releases"]) == ("pending", None, 0)
    deadline = time.monotonic() + 10
    while any(running(pid) for pid in agents) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in agents if running(pid)] == []
    # Recorded as --print records a Ctrl-C: interrupted, not failed by the SIGTERM that ended
    # them; one ran and was cut short, the other (of the same CLI) waited and never started.
    logged = start(project, "log", "--json")
    assert logged.returncode == 0, logged.stderr
    ended = []
    for run in json.loads(logged.stdout):
        shown = json.loads(start(project, "log", "show", str(run["id"]), "--json").stdout)
        ended.append((shown["state"], shown["error"]))
    assert sorted(ended) == [
        ("interrupted", "not started: stopped by SIGINT"),
        ("interrupted", "stopped by SIGINT before it answered"),
    ]


def test_the_listing_with_watch_shows_each_change_until_ctrl_c(project: Path) -> None:
    start(project, "board", "add", "First")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    watcher = subprocess.Popen(
        [sys.executable, "-m", "start", "board", "--watch", "--json"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert watcher.stdout is not None
        first = json.loads(watcher.stdout.readline())
        start(project, "board", "claim", "1", "--as", "ann")
        second = json.loads(watcher.stdout.readline())
        watcher.send_signal(signal.SIGINT)
        _, err = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
    assert [(row["id"], row["status"]) for row in first] == [("item-1", "pending")]
    assert [(row["assignee"], row["status"]) for row in second] == [("ann", "in_progress")]
    assert (watcher.returncode, err) == (130, "\nstart: interrupted\n")


def test_sigkill_of_board_run_leaves_no_agent_and_the_item_is_released(project: Path) -> None:
    """A CI job's kill or the OOM killer: the watchdog ends the agents, and the next open of
    the board releases the item that the dead run held."""
    start(project, "board", "add", "One", "--prompt", "a", "-a", "fake")
    pids = project.parent / "pids"
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKE_MODE": "sleep", "FAKE_PIDS": str(pids)}
    env["FAKE_NAME"] = "x"
    runner = subprocess.Popen(
        [sys.executable, "-m", "start", "board", "run"],
        cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        written = Path(f"{pids}.x")
        while not written.exists() or not written.read_text().strip():
            time.sleep(0.05)
        agents = [int(pid) for pid in written.read_text().split()]
        time.sleep(1)  # the watchdog has been told of the agent's group
        runner.kill()
        runner.wait()
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    deadline = time.monotonic() + 30
    while any(running(pid) for pid in agents) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in agents if running(pid)] == []
    found = item(project, "1")
    assert (found["status"], found["assignee"], found["releases"]) == ("pending", None, 1)
