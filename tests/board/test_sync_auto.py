"""Automatic sync through the real `start`: with board_remote set, a claim and a finish are
pushed at once, from every door, and `start board watch` and `start board run` sync while they
wait, at a bounded rate (start.board.syncing; docs/board-sync-design.md). The machines are
tests/board/test_sync_cli.py's: a bare remote, and clones with their own HOME and state."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from start.board import syncing
from tests.board.test_sync_cli import RUNS, Machine, remote
from tests.conftest import REPO, git, run_start

pytestmark = pytest.mark.slow

__all__ = ["remote"]  # the fixture, shared with test_sync_cli


def counted(machine: Machine, tmp_path: Path) -> Path:
    """A file that gets a line each time `machine` fetches from its remote (git runs the
    remote's upload-pack through this script): how many syncs it made."""
    count = tmp_path / f"{machine.name}-fetches"
    script = tmp_path / f"{machine.name}-upload-pack"
    script.write_text(f'#!/bin/sh\necho fetch >> "{count}"\nexec git-upload-pack "$@"\n')
    script.chmod(0o755)
    git(machine.repo, "config", "remote.origin.uploadpack", str(script))
    return count


def fetches(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_a_claim_is_pushed_at_once_and_another_machine_sees_it_held(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    claimed = json.loads(ann.start("board", "claim", "item-1", "--as", "ann", "--json"))
    assert (claimed["status"], claimed["assignee"], claimed["confirmed"]) == (
        "in_progress", "ann", True
    )  # fmt: skip
    bob.sync()  # ann never ran start board sync: her claim pushed the board
    rows = [(r["title"], r["status"], r["assignee"], r["confirmed"]) for r in bob.items()]
    assert rows == [("Fix the retry", "in_progress", "ann", True)]


def test_two_machines_claiming_one_item_at_once_one_wins_and_the_other_exits_1(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.sync()
    bob.sync()
    started = {
        machine.name: subprocess.Popen(
            [sys.executable, "-m", "start", "-d", str(machine.repo), "board", "claim",
             machine.id_of("Fix the retry"), "--as", machine.name, "--json"],
            env={**machine.env, "PYTHONPATH": str(REPO), "PATH": _path()},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for machine in (ann, bob)
    }  # fmt: skip
    ended = {
        name: (*each.communicate(timeout=120), each.returncode) for name, each in started.items()
    }
    codes = sorted(code for _, _, code in ended.values())
    assert codes == [0, 1], ended
    winner = next(name for name, (_, _, code) in ended.items() if code == 0)
    loser = "bob" if winner == "ann" else "ann"
    out, err, _ = ended[loser]
    shown = (ann if loser == "ann" else bob).id_of("Fix the retry")  # as the loser's board shows it
    lost = f"start: your claim of {shown} lost: "
    assert err.startswith(f"{lost}{loser}'s claim of {shown} ("), err  # never a key
    assert f": lost to {winner}'s claim (" in err
    assert err.endswith(
        f"; {shown} is held by {winner} (start board sync brought it); claim another item "
        "(start board claim --next)\n"
    )
    data = json.loads(out)  # --json says so too
    assert (data["assignee"], data["confirmed"], data["lost"]) == (
        winner, False, err.removeprefix(lost).split(f"; {shown} is held by")[0]
    )  # fmt: skip
    assert json.loads(ended[winner][0])["confirmed"] is True
    for machine in (ann, bob):
        machine.sync()
        assert [(r["assignee"], r["confirmed"]) for r in machine.items()] == [(winner, True)]


def test_a_claim_offline_stays_unconfirmed_with_a_warning_and_the_next_sync_confirms_it(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, "ann")
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.sync()
    away = remote.rename(tmp_path / "away.git")
    done = run_start(
        "-d", str(ann.repo), "board", "claim", "item-1", "--as", "ann", "--json", env=ann.env
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["confirmed"] is False
    assert done.stderr.startswith(
        "start: warning: item-1's claim is not confirmed: the board's remote 'origin' could "
        "not be fetched: "
    ), done.stderr
    assert done.stderr.endswith(
        "; it is yours on this machine only, and another machine's earlier claim may take it: "
        "start board sync confirms it\n"
    )
    assert [(r["status"], r["confirmed"]) for r in ann.items()] == [("in_progress", False)]
    away.rename(remote)
    assert len(ann.sync()["pushed"]) == 1
    assert [(r["status"], r["confirmed"]) for r in ann.items()] == [("in_progress", True)]


def test_a_finish_is_pushed_at_once_and_one_made_offline_is_kept_and_pushed_by_the_next_sync(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.start("board", "add", "Write the notes", "--as", "ann")
    ann.start("board", "claim", "item-1", "--as", "ann")
    ann.start("board", "done", "item-1", "--answer", "jittered", "--as", "ann")
    bob.sync()
    assert [(r["status"], r["assignee"]) for r in bob.items()] == [
        ("completed", "ann"), ("pending", None)
    ]  # fmt: skip
    ann.start("board", "claim", "item-2", "--as", "ann")
    with ann.offline():
        done = run_start(
            "-d", str(ann.repo), "board", "fail", "item-2", "--reason", "no time", "--as",
            "ann", env=ann.env,
        )  # fmt: skip
    assert done.returncode == 0
    warning, said = done.stderr.splitlines()
    assert warning.startswith(
        "start: warning: item-2 is failed on this machine, not yet pushed: the board's remote "
        "'origin' could not be fetched: "
    ), warning
    assert warning.endswith("; nothing is lost, and the next sync pushes it (start board sync)")
    assert said == "start: item-2 failed"
    bob.sync()
    assert [r["status"] for r in bob.items()] == ["completed", "in_progress"]
    assert len(ann.sync()["pushed"]) == 1
    bob.sync()
    assert [r["status"] for r in bob.items()] == ["completed", "failed"]


def test_watch_syncs_while_it_waits_at_a_bounded_rate(tmp_path: Path, remote: Path) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.start("board", "claim", "item-1", "--as", "ann")
    bob.sync()
    shown = bob.id_of("Fix the retry")  # ann's item, as bob's board names it
    count = counted(bob, tmp_path)
    # Waiting on an item another machine holds: a sync when it starts waiting, then at most
    # one every syncing.EVERY seconds, however often it looks at the board.
    waited = 3.0
    done = run_start("-d", str(bob.repo), "board", "watch", shown, "--timeout", f"{waited:g}",
                     env=bob.env)  # fmt: skip
    assert done.returncode == 124, done.stderr
    assert 1 <= fetches(count) <= 1 + int(waited // syncing.EVERY)
    # ann's finish is pushed by itself; bob's watch brings it by its own sync.
    ann.start("board", "done", "item-1", "--answer", "jittered", "--as", "ann")
    before = fetches(count)
    done = run_start("-d", str(bob.repo), "board", "watch", shown, "--timeout", "60", env=bob.env)
    assert (done.returncode, done.stdout) == (0, "jittered\n"), done.stderr
    assert fetches(count) == before + 1


def test_board_run_syncs_while_it_waits_at_a_bounded_rate(tmp_path: Path, remote: Path) -> None:
    ann = Machine(tmp_path, remote, "ann", more=RUNS)
    ann.sync()
    count = counted(ann, tmp_path)
    running = subprocess.Popen(
        [sys.executable, "-m", "start", "-d", str(ann.repo), "board", "run", "--no-color"],
        env={**ann.env, "PYTHONPATH": str(REPO), "PATH": _path()},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    waited = 3.0
    time.sleep(waited)  # how long it waits: the bound below is counted in syncs, not seconds
    running.send_signal(signal.SIGINT)
    _, err = running.communicate(timeout=60)
    assert running.returncode == 130, err
    assert 1 <= fetches(count) <= 1 + int(waited // syncing.EVERY) + 1, err
    assert "warning" not in err


def test_several_runs_at_once_with_sync_on_lose_no_finish_to_a_rebuild(
    tmp_path: Path, remote: Path
) -> None:
    """start board run's main thread syncs (and rebuilds the rows) after each finish while
    its other runs go on and finish through their own connections: none is fenced or lost."""
    ann = Machine(tmp_path, remote, "ann", more=f"print_agents = 4\n{RUNS}")
    bob = Machine(tmp_path, remote, "bob")
    delays = ("0.1", "0.6", "1.1", "1.6", "0.3", "0.9")
    for delay in delays:
        ann.start("board", "add", f"Sleep {delay}", "--prompt", delay, "--as", "ann")
    ann.env["FAKE_BEFORE"] = "import time, sys; time.sleep(float(sys.argv[-1]))"
    ran = ann.run()
    assert "fenced" not in ran.stderr
    assert [line.split(" ")[1] for line in ran.stderr.splitlines()].count("✓") == len(delays)
    for machine in (ann, bob):
        if machine is bob:
            machine.sync()  # ann ran no sync herself: each finish was pushed by the run
        statuses = [row["status"] for row in machine.items()]
        assert statuses == ["completed"] * len(delays), machine.name
    exported = [json.loads(line) for line in bob.start("board", "export").splitlines()[1:]]
    answers = sorted(item["answer"] for item in exported)
    assert answers == sorted(f"ANSWER: {delay}" for delay in delays)


def _path() -> str:
    import os

    return os.environ["PATH"]


FLOW = f"""{RUNS}
[workflows.two.steps.first]
prompt = "first"

[workflows.two.steps.second]
prompt = "After {{steps.first.answer}}"
"""


def test_a_workflow_runs_on_a_board_with_sync_on_and_pushes_its_steps(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, "ann", more=FLOW)
    bob = Machine(tmp_path, remote, "bob")
    ann.sync()  # sync on: each step's claim is confirmed by a push
    done = run_start("-d", str(ann.repo), "workflow", "run", "two", "--json", env=ann.env)
    assert done.returncode == 0, done.stderr
    ran = {
        step["name"]: (step["state"], step["answer"]) for step in json.loads(done.stdout)["steps"]
    }
    assert ran == {
        "first": ("succeeded", "ANSWER: first"), "second": ("succeeded", "ANSWER: After ANSWER: first")
    }  # fmt: skip
    bob.sync()
    rows = [(row["title"], row["status"]) for row in bob.items()]
    assert rows == [
        ("workflow two", "completed"), ("two / first", "completed"), ("two / second", "completed")
    ]  # fmt: skip
