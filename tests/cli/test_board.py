"""`start board` for people: the listing, add, show, claim, update, done, fail, reassign and
watch, with their exit codes and --json (start.cli.board, start.cli.board_items)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from start import board
from start.ui import console
from tests.conftest import invoke, run_start, write_tree


def data(*args: str) -> Any:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def add(*args: str) -> str:
    result = invoke("board", "add", *args)
    assert result.exit_code == 0, result.stderr
    return result.stdout.strip()


def test_add_prints_the_id_and_the_listing_shows_what_waits(isolated: Path) -> None:
    assert add("Plan the fix") == "item-1"
    assert add("Implement", "--after", "item-1", "-d", "the details", "--meta", "p=2") == "item-2"
    result = invoke("board")
    assert (result.exit_code, result.stderr) == (0, ALONE.format(os.path.realpath(isolated)))
    assert result.stdout == (
        "ID      PRI  STATUS             TITLE         ASSIGNEE  BLOCKED BY\n"
        "item-2  P2   pending (blocked)  Implement               item-1\n"
        "item-1  P2   pending            Plan the fix\n"
    )  # the latest changed first (both in one second: the newer first)
    assert data("board", "--ready") == [
        {
            "id": "item-1",
            "title": "Plan the fix",
            "status": "pending",
            "assignee": None,
            "blocked_by": [],
            "blocked": [],
            "archived": None,
            "priority": 2,
            "labels": [],
            "parent": None,
            "runs": False,
            "confirmed": True,
        }
    ]
    assert [row["id"] for row in data("board", "--status", "pending")] == ["item-2", "item-1"]
    assert data("board", "show", "2")["metadata"] == {"p": 2}


# The line that names a listing's board, in a directory of no project.
ALONE = (
    "start: the board of {}, a directory in no git repository and without .start/: each such "
    "directory has a board of its own\n"
)


def test_an_empty_board_says_how_to_add(isolated: Path) -> None:
    result = invoke("board")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        "",
        "No items. Add one with: start board add TITLE\n"
        + ALONE.format(os.path.realpath(isolated)),
    )
    assert data("board") == []


def test_add_with_a_run_checks_its_names(isolated: Path) -> None:
    write_tree(
        isolated.parent / "home/.config/start",
        {"config.toml": '[agents.a]\nbin = "true"\ncommand = "{bin} {prompt}"\n'},
    )
    item = data(
        "board", "add", "Ask", "--prompt", "why? {answers}", "-a", "a", "--permissions", "edit"
    )
    run = item["run"]
    asked = {key: run[key] for key in ("mode", "prompt", "task", "agents", "model", "permissions")}
    assert asked == {
        "mode": "prompt",
        "prompt": "why? {answers}",
        "task": None,
        "agents": ["a"],
        "model": None,
        "permissions": "edit",
    }
    assert (run["door"], run["by"], run["headless"]) == ("board", "user", True)
    wrong = invoke("board", "add", "Ask", "--prompt", "p", "-a", "cladue")
    assert (wrong.exit_code, wrong.stderr) == (
        4,
        "start: unknown agent 'cladue'; did you mean 'claude'?\n",
    )
    task = invoke("board", "add", "Ask", "--task", "nope")
    assert task.exit_code == 4 and task.stderr.startswith("start: unknown task 'nope'")
    alone = invoke("board", "add", "Ask", "-a", "a")
    assert (alone.exit_code, alone.stderr) == (
        2,
        "start: -a says how to run the item: give --prompt TEXT or --task NAME too\n",
    )
    both = invoke("board", "add", "Ask", "--prompt", "p", "--task", "t")
    assert (both.exit_code, both.stderr) == (2, "start: give --prompt or --task, not both\n")


def test_claim_then_done_and_the_exit_codes_of_refusals(isolated: Path) -> None:
    add("Plan")
    add("Build", "--after", "1")
    claimed = invoke("board", "claim", "item-1", "--as", "bob")
    assert (claimed.exit_code, claimed.stdout, claimed.stderr) == (
        0,
        "item-1\n",
        "start: item-1 is yours, bob (epoch 1): Plan\n",
    )
    taken = invoke("board", "claim", "item-1", "--as", "carol")
    assert (taken.exit_code, taken.stdout, taken.stderr) == (
        75,
        "",
        "start: item-1 is held by bob; it is theirs until they finish or release it, or it is "
        "reassigned (start board reassign item-1 NAME)\n",
    )
    nothing = invoke("board", "claim", "--next", "--as", "carol")
    assert (nothing.exit_code, nothing.stderr) == (
        75,
        f"start: nothing is ready to claim on the board of {os.path.realpath(isolated)}: 1 "
        "pending item(s), each blocked\n",
    )
    done = invoke("board", "done", "1", "--as", "bob", "--answer", "the plan")
    assert (done.exit_code, done.stderr) == (0, "start: item-1 is completed; unblocked item-2\n")
    assert data("board", "claim", "--next", "--as", "carol")["id"] == "item-2"
    missing = invoke("board", "show", "item-9")
    assert (missing.exit_code, missing.stderr) == (
        4,
        f"start: no item item-9 on the board of {os.path.realpath(isolated)} (ids go from "
        "item-1 to item-2; 'start board' lists them)\n",
    )


def test_the_default_name_is_the_login_name(isolated: Path) -> None:
    add("Plan")
    assert data("board", "claim", "1")["assignee"] == board.login()
    assert data("board", "show", "1")["created_by"] == board.login()


def test_update_merges_metadata_and_refuses_what_the_rules_refuse(isolated: Path) -> None:
    add("Plan", "--meta", "a=1", "--meta", "b=text")
    item = data("board", "update", "1", "--meta", "a=null", "--meta", 'c={"d": true}')
    assert item["metadata"] == {"b": "text", "c": {"d": True}}
    nothing = invoke("board", "update", "1")
    assert (nothing.exit_code, nothing.stderr) == (
        2,
        "start: nothing to change: give --status, --title, -d, --after, --no-after, --meta, "
        "--priority, --label, --unlabel, --parent, --no-parent, or what it runs (--prompt, "
        "--task, -a, -m, --permissions)\n",
    )
    cycle = invoke("board", "update", "1", "--after", "1")
    assert (cycle.exit_code, cycle.stderr) == (
        2,
        "start: item-1 cannot wait on itself (blocked_by)\n",
    )
    answer = invoke("board", "update", "1", "--answer", "x")
    assert (answer.exit_code, answer.stderr) == (
        2,
        "start: --answer goes with --status completed\n",
    )
    bad = invoke("board", "update", "1", "--meta", "novalue")
    assert (bad.exit_code, bad.stderr) == (2, "start: --meta takes KEY=VALUE, not 'novalue'\n")


def test_a_reassign_fences_out_the_old_holders_late_done(isolated: Path) -> None:
    add("Plan")
    epoch = data("board", "claim", "1", "--as", "bob")["epoch"]
    moved = invoke("board", "reassign", "1", "carol")
    assert (moved.exit_code, moved.stderr) == (0, "start: item-1 is held by carol (epoch 2)\n")
    late = invoke("board", "done", "1", "--as", "bob", "--epoch", str(epoch))
    assert (late.exit_code, late.stderr) == (
        75,
        "start: item-1 is held by carol: only its holder changes it (start board reassign "
        "item-1 NAME hands it over)\n",
    )
    wrong = invoke("board", "reassign", "1", "mcp:x:1")
    assert wrong.exit_code == 2
    assert data("board", "fail", "1", "--as", "carol", "--reason", "gone")["reason"] == "gone"


def test_watch_exits_by_how_the_item_ended(isolated: Path) -> None:
    add("Plan")
    timed_out = invoke("board", "watch", "1", "--timeout", "0.2")
    since = console.local_time(data("board", "show", "1")["updated"], seconds=True)
    assert (timed_out.exit_code, timed_out.stdout, timed_out.stderr) == (
        124,
        "",
        f"start: item-1 is pending\nstart: gave up after 0.2 s: item-1 is still pending since {since}\n",
    )
    invoke("board", "done", "1", "--answer", "line one\nline two")
    completed = invoke("board", "watch", "item-1")
    assert (completed.exit_code, completed.stdout) == (0, "line one\nline two\n")
    add("Other")
    invoke("board", "fail", "2", "--reason", "first\nsecond")
    failed = invoke("board", "watch", "2", "-q")
    assert (failed.exit_code, failed.stdout, failed.stderr) == (1, "", "")
    said = invoke("board", "watch", "2")
    assert said.stderr == "start: item-2 is failed\nstart: item-2 failed: first\nsecond\n"


def test_show_tells_why_an_item_waits_and_what_it_runs(isolated: Path) -> None:
    add("Plan")
    add("Build", "--after", "1", "--prompt", "Do: {answers}", "-d", "more")
    invoke("board", "fail", "1", "--as", "alice", "--reason", "no time")
    result = invoke("board", "show", "2")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "item-2  Build"
    assert "  blocked by  item-1 (failed)" in lines
    assert (
        "  waits       item-1 failed, and only a completed item satisfies a dependency: reopen "
        "it (status pending) or remove it from blocked_by" in lines
    )
    assert (
        "  runs        prompt 'Do: {answers}', agent (the default), permissions (the task’s, "
        "else read-only)" in lines
    )
    assert lines[-5:-1] == ["──── description ────", "more", "", "──── history ────"]
    assert lines[-1].endswith(f" {board.login()} create title=Build")
    events = data("board", "show", "1")["events"]
    assert [(e["actor"], e["op"]) for e in events] == [
        (board.login(), "create"),
        ("alice", "update"),
    ]


def test_show_gives_the_times_in_the_viewers_zone_and_json_as_recorded(isolated: Path) -> None:
    """An item made by a process in UTC (a CI job), shown where the zone is UTC+9: the page in
    local time, as `start log` shows a run's; --json as it was recorded."""
    from datetime import datetime, timedelta

    assert run_start("board", "add", "Plan", cwd=isolated, env={"TZ": "UTC0"}).returncode == 0
    shown = run_start("board", "show", "1", "--json", cwd=isolated, env={"TZ": "XYZ-9"})
    recorded = json.loads(shown.stdout)
    assert recorded["created"].endswith("+00:00")
    assert recorded["events"][0]["at"] == recorded["created"]
    there = f"{datetime.fromisoformat(recorded['created']) + timedelta(hours=9):%Y-%m-%d %H:%M:%S}"
    page = run_start("board", "show", "1", cwd=isolated, env={"TZ": "XYZ-9"}).stdout.splitlines()
    assert f"  created     {there} by {board.login()}" in page
    assert page[-1] == f"  {there}  {board.login()} create title=Plan"


def test_ids_are_completed_by_the_shell(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add("Plan the fix")
    add("Other")
    monkeypatch.setenv("_START_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "start board show item-")
    monkeypatch.setenv("COMP_CWORD", "3")
    assert invoke().stdout.split() == ["plain,item-1", "plain,item-2"]
    monkeypatch.setenv("_START_COMPLETE", "zsh_complete")
    lines = invoke().stdout.splitlines()
    assert lines[:3] == ["plain", "item-1", "pending: Plan the fix"]


def test_completion_on_a_project_without_a_board_makes_none(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    monkeypatch.setenv("_START_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "start board show ")
    monkeypatch.setenv("COMP_CWORD", "3")
    assert invoke().stdout.split() == []
    from start.board import file as boardfile

    assert not os.path.exists(boardfile.directory())


# OSC 52 sets the clipboard, OSC 0 the window title: an answer must never do either.
HOSTILE = "hi \x1b]52;c;cHduZWQ=\x07 \x1b]0;owned\x07 there\n"


def test_an_answer_or_a_title_never_reaches_a_terminal_raw(isolated: Path) -> None:
    """`board watch` printed an item's answer raw on a terminal (issue 44); it shows it escaped
    there, as `log show --answer` does, and exactly into a pipe. The listing and `show` escape
    the title and the answer too, and --json has only JSON's escapes."""
    import sys

    from tests.conftest import REPO
    from tests.terminal import run_on_terminal

    add("Plan \x1b]0;title\x07")
    assert invoke("board", "done", "1", "--answer", HOSTILE).exit_code == 0
    code, screen = run_on_terminal("board", "watch", "1", "-q", cwd=isolated)
    assert (code, screen) == (0, "hi \\x1b]52;c;cHduZWQ=\\x07 \\x1b]0;owned\\x07 there\n")
    shown = (
        ["board"],
        ["board", "--json"],
        ["board", "show", "1"],
        ["board", "show", "1", "--json"],
    )
    for args in shown:
        code, screen = run_on_terminal(*args, "--no-color", cwd=isolated)
        assert code == 0 and "\x1b" not in screen and "\x07" not in screen, (args, screen)
    piped = subprocess.run(
        [sys.executable, "-m", "start", "board", "watch", "1", "-q"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, HOSTILE.encode(), b"")


@pytest.mark.parametrize(
    ("command", "epilog"),
    [
        (
            "show",
            "Exit codes: 0 ok; 2 usage; 4 no such item.\n",
        ),
        (
            "watch",
            "Exit codes: 0 the item completed; 1 it failed; 2 usage; 4 no such item;\n"
            "124 --timeout passed; 130 Ctrl-C.\n",
        ),
        (
            "claim",
            "Exit codes: 0 ok; 1 lost: another machine's claim was pushed first\n"
            "(board_remote set); 2 usage; 4 no such item; 75 refused: the item is another's,\n"
            "blocked or finished; with --next, nothing is ready.\n",
        ),
        (
            "run",
            "Exit codes: 0 every item it ran completed; 1 one failed, or a claim was not\n"
            "confirmed by a push (sync on: the item let go); 2 usage; 3 the config is\n"
            "invalid, or sync is on and board_remote is not set; 5 the project is not\n"
            "trusted; 130 Ctrl-C (the runs are stopped, their items pending again).\n",
        ),
    ],
)
def test_each_subcommand_names_its_own_exit_codes(command: str, epilog: str) -> None:
    """Each board subcommand's help says what its own exit codes mean, not every code of every
    subcommand (issue 49: `show` named 75 refused and 124 a watch timed out)."""
    result = run_start("board", command, "--help", env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n\n")[-2:] == [
        epilog.rstrip("\n"),
        "Docs: start help --topic board\n",
    ]


def test_watch_refuses_a_timeout_that_is_not_a_finite_number_of_seconds(isolated: Path) -> None:
    """`nan` and `inf` once waited for ever, as no --timeout does, without a word."""
    add("Plan")
    hint = "hint: run 'start board watch --help' for usage\n"
    for given, why in (
        ("nan", ": give 0 or more (leave the option out to wait without a limit)"),
        ("inf", ": give 0 or more (leave the option out to wait without a limit)"),
        ("-1", ": give 0 or more (leave the option out to wait without a limit)"),
        ("soon", ""),
    ):
        refused = invoke("board", "watch", "1", "--timeout", given)
        assert (refused.exit_code, refused.stderr) == (
            2,
            f"start: invalid value for --timeout: '{given}' is not a number of seconds{why}\n"
            + hint,
        )
    waited = invoke("board", "watch", "1", "--timeout", "0")
    assert waited.exit_code == 124
