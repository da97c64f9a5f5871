"""`start board update` of everything a person may edit, `archive` and `unarchive`, and the
listing's defaults: open items, the latest changed first, --all and --limit (start.cli.board,
start.cli.board_items; docs/board.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import invoke, write_tree

CONFIG = """
[agents.a]
bin = "true"
command = "{bin} {prompt}"

[agents.codex]
bin = "true"
command = "{bin} {prompt}"

[tasks.review]
prompt = "Review: {instructions}"
"""


@pytest.fixture
def config(isolated: Path) -> Path:
    write_tree(isolated.parent / "home/.config/start", {"config.toml": CONFIG})
    return isolated


def ok(*args: str) -> Any:
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    return result


def data(*args: str) -> Any:
    return json.loads(ok(*args, "--json").stdout)


def asked(item: dict[str, Any]) -> dict[str, Any]:
    run = item["run"]
    return {key: run[key] for key in ("mode", "prompt", "task", "agents", "model", "permissions")}


# --- editing --------------------------------------------------------------------------------


def test_update_changes_the_title_and_what_the_item_runs(config: Path) -> None:
    ok("board", "add", "Plan", "--prompt", "plan {answers}", "-a", "a")
    item = data("board", "update", "1", "--title", "Plan the fix", "-a", "codex", "-m", "o3")
    assert item["title"] == "Plan the fix"
    assert asked(item) == {
        "mode": "prompt",
        "prompt": "plan {answers}",
        "task": None,
        "agents": ["codex"],
        "model": "o3",
        "permissions": None,
    }
    item = data("board", "update", "1", "--task", "review", "--permissions", "edit")
    assert asked(item) == {
        "mode": "task",
        "prompt": None,
        "task": "review",
        "agents": ["codex"],
        "model": "o3",
        "permissions": "edit",
    }
    shown = ok("board", "show", "1").stdout
    assert "runs        task review, agent codex, model o3, permissions edit\n" in shown
    assert (
        'update run={"agent": "codex", "model": "o3", "permissions": "edit", "task": "review"}\n'
        in shown
    )


def test_update_checks_what_runs_as_add_does(config: Path) -> None:
    ok("board", "add", "Plan", "--prompt", "plan", "-a", "a")
    ok("board", "add", "Notes")
    for args, code, message in [
        (
            ("1", "-a", "codx"),
            4,
            "start: unknown agent 'codx'; did you mean 'codex'?\n",
        ),
        (
            ("1", "--task", "reviw"),
            4,
            "start: unknown task 'reviw'; did you mean 'review'?\n",
        ),
        (
            ("1", "--task", "review", "--prompt", "x"),
            2,
            "start: give --prompt or --task, not both\n",
        ),
        (
            ("2", "-a", "a"),
            2,
            "start: -a says how to run the item: give --prompt TEXT or --task NAME too\n",
        ),
        (
            ("1", "--title", ""),
            2,
            "start: invalid value for --title: empty; give at least one character\n"
            "hint: run 'start board update --help' for usage\n",
        ),
    ]:
        result = invoke("board", "update", *args)
        assert (result.exit_code, result.stderr) == (code, message), args
    assert asked(data("board", "show", "1"))["agents"] == ["a"]  # nothing changed
    assert data("board", "update", "2", "--prompt", "note it", "-a", "a")["run"] is not None


def test_a_held_item_is_edited_only_by_its_holder(config: Path) -> None:
    ok("board", "add", "Plan")
    ok("board", "claim", "1", "--as", "bob")
    other = invoke("board", "update", "1", "--title", "Mine", "--as", "carol")
    assert (other.exit_code, other.stderr) == (
        75,
        "start: item-1 is held by bob: only its holder changes it (start board reassign item-1 "
        "NAME hands it over)\n",
    )
    fenced = invoke("board", "update", "1", "--title", "Mine", "--as", "bob", "--epoch", "7")
    assert (fenced.exit_code, fenced.stderr) == (
        75,
        "start: item-1 was reassigned since your claim (epoch 7; it is now at epoch 1): this "
        "write is fenced out; claim it again to act on it\n",
    )
    assert data("board", "update", "1", "--title", "Mine", "--as", "bob")["title"] == "Mine"


# --- archiving ------------------------------------------------------------------------------


def test_archive_hides_an_item_that_show_still_shows_and_unarchive_brings_back(
    config: Path,
) -> None:
    ok("board", "add", "Plan")
    ok("board", "done", "1", "--answer", "the plan", "--as", "bob")
    ok("board", "add", "Build", "--after", "1")
    ok("board", "add", "Draft")
    archived = invoke("board", "archive", "1", "item-3")
    assert (archived.exit_code, archived.stdout, archived.stderr) == (
        0,
        "",
        "start: item-1 is archived (completed)\nstart: item-3 is archived (pending)\n",
    )
    assert [row["id"] for row in data("board")] == ["item-2"]
    assert [row["id"] for row in data("board", "--ready")] == ["item-2"]  # item-1 still counts
    every = ok("board", "--all").stdout
    assert every.splitlines()[1:] == [
        "item-3  P2   pending (archived)    Draft",
        "item-1  P2   completed (archived)  Plan   bob",
        "item-2  P2   pending               Build",  # item-1, completed, blocks it no more
    ]
    shown = ok("board", "show", "1").stdout
    assert "  archived    " in shown and ": start board unarchive item-1 brings it back\n" in shown
    assert shown.endswith("the plan\n\n──── history ────\n" + shown.split("history ────\n")[1])
    assert data("board", "show", "1")["answer"] == "the plan"
    assert "  blocked by  item-1 (completed, archived)\n" in ok("board", "show", "2").stdout
    claimed = invoke("board", "claim", "3")
    assert (claimed.exit_code, claimed.stderr) == (
        75,
        "start: item-3 is archived: an archived item cannot be taken (start board unarchive "
        "item-3 brings it back)\n",
    )
    back = invoke("board", "unarchive", "3", "--json")
    assert (back.exit_code, json.loads(back.stdout)[0]["archived"]) == (0, None)
    assert ok("board", "claim", "3").stdout == "item-3\n"


def test_an_item_in_progress_cannot_be_archived(config: Path) -> None:
    ok("board", "add", "Plan")
    ok("board", "add", "Other")
    ok("board", "claim", "1", "--as", "bob")
    refused = invoke("board", "archive", "2", "1")
    assert (refused.exit_code, refused.stderr) == (
        75,
        "start: item-1 is held by bob (in_progress): an item in progress cannot be archived; "
        "its holder finishes it or lets it go first (start board done item-1, or start board "
        "update item-1 --status pending)\n",
    )
    assert [row["archived"] for row in data("board", "--all")] == [None, None]  # none of them
    missing = invoke("board", "archive", "9")
    assert (missing.exit_code, missing.stderr) == (
        4,
        "start: no item item-9 on the board of "
        f"{config} (ids go from item-1 to item-2; 'start board' lists them)\n",
    )
    assert invoke("board", "archive").exit_code == 2


def test_a_dependency_archived_before_it_completed_says_what_to_do(config: Path) -> None:
    ok("board", "add", "Plan")
    ok("board", "add", "Build", "--after", "1")
    ok("board", "archive", "1")
    assert data("board", "show", "2")["blocked"] == [
        "item-1 is archived (pending), and it blocks until it is unarchived and completed: "
        "start board unarchive item-1, or remove it from blocked_by"
    ]


# --- the listing ----------------------------------------------------------------------------


def test_the_listing_shows_open_items_the_latest_changed_first(config: Path) -> None:
    for title in ("one", "two", "three", "four"):
        ok("board", "add", title)
    ok("board", "done", "2")
    ok("board", "fail", "3", "--as", "bob")
    ok("board", "update", "1", "--meta", "touched=true")  # the latest change
    ok("board", "archive", "4")
    listed = invoke("board", "-q")  # -q: without the line naming the board
    assert (listed.stdout.splitlines()[1:], listed.stderr) == (
        ["item-1  P2   pending  one", "item-3  P2   failed   three  bob"],
        "start: 2 more: --all\n",
    )
    assert [row["id"] for row in data("board")] == ["item-1", "item-3"]
    assert [row["id"] for row in data("board", "--all")] == ["item-4", "item-1", "item-3", "item-2"]
    assert [row["id"] for row in data("board", "--status", "completed")] == ["item-2"]
    assert [row["id"] for row in data("board", "--status", "pending", "--all")] == [
        "item-4",
        "item-1",
    ]
    cut = invoke("board", "--limit", "1", "--json")
    assert ([row["id"] for row in json.loads(cut.stdout)], cut.stderr) == (
        ["item-1"],
        "start: 3 more: --all, or --limit N\n",
    )
    cut = invoke("board", "--all", "--limit", "3", "--json")
    assert (len(json.loads(cut.stdout)), cut.stderr) == (3, "start: 1 more: --limit N\n")
    every = invoke("board", "--all", "--limit", "0", "--json")
    assert (len(json.loads(every.stdout)), every.stderr) == (4, "")


def test_the_listing_shows_thirty_items_unless_told(config: Path) -> None:
    for n in range(32):
        ok("board", "add", f"item {n}")
    listed = invoke("board", "--json")
    rows = json.loads(listed.stdout)
    assert (len(rows), rows[0]["id"], listed.stderr) == (
        30,
        "item-32",
        "start: 2 more: --limit N\n",
    )
    ok("board", "archive", *(str(n) for n in range(1, 33)))
    empty = invoke("board", "-q")
    assert (empty.stdout, empty.stderr) == ("", "start: 32 more: --all\n")
