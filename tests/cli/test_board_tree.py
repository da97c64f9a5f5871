"""`start board tree` (start.cli.board, start.cli.board_views.nested): items under their
parents at any depth; what `update --status completed` unblocked; the history's values as a
person reads them; and `--watch` saying what it left out, on a real terminal and off one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from start.board import BadRequestError, Change, Holder, Item
from start.board import file as boardfile
from start.board.rows import Filter
from start.cli.board_views import nested, tree_data
from tests.cli.test_board import add, data
from tests.conftest import REPO, invoke
from tests.terminal import run_on_terminal


def _epic() -> None:
    add("Release 2.0", "--priority", "1")
    add("Changelog", "--parent", "1")
    add("Fix retry", "--parent", "1", "--priority", "0")
    add("Retry test", "--parent", "3")
    add("Loose end")
    add("Docs", "--parent", "3", "--after", "4")
    assert invoke("board", "done", "2").exit_code == 0


def test_the_tree_shows_open_items_under_their_parents_by_priority(isolated: Path) -> None:
    _epic()
    shown = invoke("board", "tree", "--no-color")
    assert (shown.exit_code, shown.stderr) == (0, "")
    assert shown.stdout == (
        "ID            PRI  STATUS              TITLE\n"
        "item-1        P1   pending (1/2 done)  Release 2.0\n"
        "└─ item-3     P0   pending (0/2 done)  Fix retry\n"
        "   ├─ item-4  P2   pending             Retry test\n"
        "   └─ item-6  P2   pending (blocked)   Docs\n"
        "item-5        P2   pending             Loose end\n"
    )
    every = invoke("board", "tree", "--all", "--no-color").stdout.splitlines()
    assert every[1:5] == [
        "item-1        P1   pending (1/2 done)  Release 2.0",
        "├─ item-3     P0   pending (0/2 done)  Fix retry",
        "│  ├─ item-4  P2   pending             Retry test",
        "│  └─ item-6  P2   pending (blocked)   Docs",
    ]
    assert every[5] == "└─ item-2     P2   completed           Changelog"


def test_a_finished_parent_of_an_open_item_is_there_and_one_epic_alone(isolated: Path) -> None:
    _epic()
    for id_ in ("4", "6", "3"):
        assert invoke("board", "done", id_).exit_code == 0
    add("Late fix", "--parent", "3")
    assert invoke("board", "tree", "--no-color").stdout.splitlines()[1:] == [
        "item-1        P1   pending (2/2 done)    Release 2.0",
        "└─ item-3     P0   completed (2/3 done)  Fix retry",
        "   └─ item-7  P2   pending               Late fix",
        "item-5        P2   pending               Loose end",
    ]
    one = data("board", "tree", "3")
    assert [(top["id"], [c["id"] for c in top["children"]]) for top in one] == [
        ("item-3", ["item-7"])
    ]
    whole = data("board", "tree", "3", "--all")[0]
    assert [c["id"] for c in whole["children"]] == ["item-4", "item-6", "item-7"]
    assert whole["children"][0]["children"] == []
    missing = invoke("board", "tree", "9")
    assert missing.exit_code == 4
    assert missing.stderr.startswith("start: no item 9 on the board of ")


def test_the_tree_of_an_empty_board_says_how_to_add(isolated: Path) -> None:
    empty = invoke("board", "tree")
    assert (empty.exit_code, empty.stdout, empty.stderr) == (
        0, "", "No items. Add one with: start board add TITLE\n"
    )  # fmt: skip
    assert data("board", "tree") == []


def _item(number: int, parent: int | None, priority: int = 2) -> Item:
    return Item(
        id=f"item-{number}", title=str(number), description="", status="pending", assignee=None,
        blocked_by=(), blocked=(), metadata={}, created_by="alice", run=None, answer=None,
        reason=None, history=None, epoch=0, releases=0, created="t", updated="t", level="full",
        level_by="alice", answer_level=None, archived=None, priority=priority, labels=(),
        parent=None if parent is None else f"item-{parent}", children=0, children_done=0,
    )  # fmt: skip


def test_nesting_is_iterative_and_survives_a_loop_of_parents() -> None:
    chain = [_item(1, None), *(_item(n, n - 1) for n in range(2, 5002))]
    order = nested(chain[::-1])
    assert [depth for depth, _ in order] == list(range(5001))
    assert len(json.dumps(tree_data(order[:50]))) > 0
    loop = [_item(1, 2), _item(2, 1), _item(3, None)]
    assert [(depth, item.id) for depth, item in nested(loop)] == [
        (0, "item-3"), (0, "item-1"), (0, "item-2")
    ]  # fmt: skip


def test_update_to_completed_says_what_it_unblocked(isolated: Path) -> None:
    add("Plan")
    add("Build", "--after", "1")
    add("Test", "--after", "1", "--after", "2")
    done = invoke("board", "update", "1", "--status", "completed")
    assert (done.exit_code, done.stderr) == (0, "start: item-1 is completed; unblocked item-2\n")
    other = invoke("board", "update", "2", "--status", "completed", "--answer", "built")
    assert other.stderr == "start: item-2 is completed; unblocked item-3\n"
    again = invoke("board", "done", "3")
    assert again.stderr == "start: item-3 is completed\n"


def test_the_history_shows_lists_and_objects_as_a_person_reads_them(isolated: Path) -> None:
    add("a")
    add("b")
    add("c", "--after", "1", "--after", "2", "--label", "ui")
    assert invoke("board", "update", "3", "--no-after", "--meta", "k=v").exit_code == 0
    history = invoke("board", "show", "3", "--no-color").stdout.split("──── history ────\n")[1]
    said = [line.split("  ", 2)[2] for line in history.splitlines()]
    assert said[0].split(" ", 2)[1:] == ["create", "labels=ui, title=c"]
    assert "blocked_by=[]" in said[1] and 'metadata={"k": "v"}' in said[1]
    assert "['" not in history


def _board_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def test_watch_off_a_terminal_says_what_it_left_out(isolated: Path) -> None:
    for title in ("a", "b", "c"):
        add(title)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "start", "board", "--watch", "--json", "--limit", "2"],
        cwd=isolated, env=_board_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert watcher.stdout is not None and watcher.stderr is not None
        first = json.loads(watcher.stdout.readline())
        told = watcher.stderr.readline()
        watcher.send_signal(signal.SIGINT)
        watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
    assert [row["id"] for row in first] == ["item-3", "item-2"]
    assert told == "start: 1 more: --limit N\n"


def test_watch_on_a_terminal_without_colour_draws_in_place_and_what_it_left_out(
    isolated: Path,
) -> None:
    """NO_COLOR (as --no-color) once made rich take the terminal for none, and the live page
    showed nothing until Ctrl-C."""
    for title in ("a", "b", "c"):
        add(title)
    assert invoke("board", "archive", "1").exit_code == 0
    code, drawn = run_on_terminal(
        "board", "--watch", "--limit", "1", cwd=isolated, env={"NO_COLOR": "1"},
        interrupt=lambda drawn: "2 more: --all, or --limit N" in drawn,
    )  # fmt: skip
    assert code == 130
    assert "\x1b[?25l" in drawn  # drawn in place: the cursor hidden while it is
    assert "item-3  P2   pending  c" in drawn and "item-2" not in drawn
    assert "\x1b[1m" not in drawn and "\x1b[2m" not in drawn  # no colour, not even bold


def test_a_deep_chain_is_read_up_to_its_root_and_ids_read_at_once(isolated: Path) -> None:
    # More ids than SQLite allows variables in one statement (999 before 3.32), and a chain of
    # parents as deep as an item may be.
    alice = Holder("alice")
    with boardfile.opened(str(isolated)) as opened:
        parent = None
        for n in range(1, 101):
            parent = opened.create(f"level {n}", alice, parent=parent).id
        deeper = opened.create("one too deep", alice)
        with pytest.raises(BadRequestError) as refused:
            opened.create("too deep", alice, parent="item-100")
        assert str(refused.value) == (
            "item-102 would be more than 100 levels deep under its parents, the limit; make it "
            "part of an item nearer the top (--parent ID)"
        )
        opened.create("a child", alice, parent=deeper.id)
        with pytest.raises(BadRequestError) as refused:  # its child would be the 101st level
            opened.update(deeper.id, alice, Change(parent="item-99"))
        assert str(refused.value) == (
            "item-102 would be more than 100 levels deep under its parents, the limit; make "
            "item-101 part of an item nearer the top, or of none"
        )
        assert opened.get(deeper.id).parent is None  # the whole change undone
        for n in range(1100):
            opened.create(f"loose {n}", alice)
        ids = tuple(f"item-{n}" for n in range(1, 1201))
        assert len(opened.items(Filter(ids=ids, archived=None))[0]) == 1200
        above, _ = opened.items(Filter(above=("item-100",), archived=None))
        assert [item.id for item in above] == [f"item-{n}" for n in range(1, 100)]
        part, _ = opened.items(Filter(above=("item-100",), within="item-98"))
        assert [item.id for item in part] == ["item-98", "item-99"]
        for n in range(1, 100):  # every ancestor finished: the listing leaves them out
            opened.update(f"item-{n}", alice, Change(status="completed"))
    whole = data("board", "tree")
    for depth in range(99):
        assert (whole[0]["id"], whole[0]["status"]) == (f"item-{depth + 1}", "completed")
        whole = whole[0]["children"]
    assert [(top["id"], top["children"]) for top in whole[:1]] == [("item-100", [])]
    part = data("board", "tree", "98")
    assert [part[0]["id"], part[0]["children"][0]["children"][0]["id"]] == ["item-98", "item-100"]
