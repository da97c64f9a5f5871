"""`start board` with priorities, labels, parents and `dep add | rm` (start.cli.board,
start.cli.board_items): the options, the listing's filters and order, show's children, and
their messages. Racing `claim --next` by priority is in tests/e2e/test_board_processes.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_board import add, data
from tests.conftest import invoke


def ids(*args: str) -> list[str]:
    return [row["id"] for row in data("board", *args)]


def test_the_ready_listing_and_claim_next_go_by_priority_then_age(isolated: Path) -> None:
    add("low", "--priority", "4")
    add("normal")
    add("urgent", "--priority", "0")
    add("normal too")
    assert ids("--ready") == ["item-3", "item-2", "item-4", "item-1"]
    assert ids() == ["item-4", "item-3", "item-2", "item-1"]  # the latest changed first
    claimed = invoke("board", "claim", "--next", "--as", "ci")
    assert (claimed.exit_code, claimed.stdout) == (0, "item-3\n")
    bad = invoke("board", "add", "x", "--priority", "5")
    assert (bad.exit_code, bad.stderr) == (
        2,
        "start: invalid value for --priority: 5 is not a whole number from 0 to 4\n"
        "hint: run 'start board add --help' for usage\n",
    )


def test_labels_are_added_removed_and_filter_the_listing_and_claims(isolated: Path) -> None:
    add("a", "--label", "bug", "--label", "ui")
    add("b", "--label", "bug")
    assert ids("--label", "bug", "--label", "ui") == ["item-1"]
    assert ids("--label", "bug") == ["item-2", "item-1"]
    changed = data("board", "update", "2", "--label", "ui", "--unlabel", "bug")
    assert changed["labels"] == ["ui"]
    assert data("board", "--label", "ui")[0] == {
        "id": "item-2",
        "title": "b",
        "status": "pending",
        "assignee": None,
        "blocked_by": [],
        "blocked": [],
        "archived": None,
        "priority": 2,
        "labels": ["ui"],
        "parent": None,
        "runs": False,
        "confirmed": True,
    }
    none = invoke("board", "claim", "--next", "--label", "bug", "--label", "backend")
    assert none.exit_code == 75
    assert none.stderr.startswith(
        "start: nothing labelled bug, backend is ready to claim on the board of "
    )
    assert none.stderr.endswith(": no item labelled bug, backend is pending\n")
    alone = invoke("board", "claim", "1", "--label", "bug")
    assert (alone.exit_code, alone.stderr) == (
        2,
        "start: --label goes with --next (an ID names the item itself)\n",
    )


def test_an_epic_shows_its_children_and_its_progress(isolated: Path) -> None:
    add("Ship the login page")
    add("Form", "--parent", "1", "--priority", "1")
    add("Errors", "--parent", "item-1")
    invoke("board", "done", "2")
    listed = invoke("board", "--all", "-q")
    assert "item-1  P2   pending (1/2 done)  Ship the login page" in listed.stdout.splitlines()
    assert ids("--parent", "1", "--all") == ["item-2", "item-3"]  # item-2 changed last
    shown = invoke("board", "show", "1", "--no-color")
    lines = shown.stdout.splitlines()
    assert "  priority    P2" in lines
    assert "  children    1/2 done" in lines
    at = lines.index("──── children ────")
    assert lines[at + 1 : at + 3] == [
        "  item-2  P1  completed  Form",
        "  item-3  P2  pending    Errors",
    ]
    child: Any = data("board", "show", "3")
    assert (child["parent"], child["priority"]) == ("item-1", 2)
    loop = invoke("board", "update", "1", "--parent", "3")
    assert (loop.exit_code, loop.stderr) == (
        2,
        "start: item-1 cannot be part of item-3: item-3 is part of item-1 (item-1 > item-3), "
        "and an item cannot be its own descendant\n",
    )
    both = invoke("board", "update", "3", "--parent", "1", "--no-parent")
    assert (both.exit_code, both.stderr) == (2, "start: give --parent or --no-parent, not both\n")
    assert data("board", "update", "3", "--no-parent")["parent"] is None


def test_dep_add_and_rm_change_one_dependency_and_refuse_a_cycle(isolated: Path) -> None:
    for title in ("a", "b", "c"):
        add(title)
    added = invoke("board", "dep", "add", "3", "1", "2")
    assert (added.exit_code, added.stderr) == (0, "start: item-3 waits for item-1, item-2\n")
    removed = invoke("board", "dep", "rm", "item-3", "1")
    assert (removed.exit_code, removed.stderr) == (0, "start: item-3 waits for item-2\n")
    cycle = invoke("board", "dep", "add", "2", "3")
    assert (cycle.exit_code, cycle.stderr) == (
        2,
        "start: item-2 cannot wait on item-3: one of them waits on item-2, which would be a "
        "cycle that never ends\n",
    )
    absent = invoke("board", "dep", "rm", "3", "1")
    assert (absent.exit_code, absent.stderr) == (
        2,
        "start: item-3 does not wait on item-1 (it waits on item-2): nothing to remove\n",
    )
    missing = invoke("board", "dep", "add", "3", "9")
    assert (missing.exit_code, missing.stderr) == (
        4,
        "start: blocked_by names item-9, which is not on the board ('start board' lists the "
        "items)\n",
    )
    events = json.loads(invoke("board", "show", "3", "--json").stdout)["events"]
    assert [event["detail"] for event in events[1:]] == [
        {"add_blocked_by": ["item-1", "item-2"]},
        {"remove_blocked_by": ["item-1"]},
    ]
