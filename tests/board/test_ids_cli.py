"""Ids across machines through the real `start`, in clones of a bare remote (the machines of
tests/board/test_sync_cli.py): an item made on one machine is `item-PREFIX.N` on another, which
shows, claims, comments and finishes it by that id; an item made before sync keeps its id; a
prefix that two machines' origins share is refused naming both full ids."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.board.test_sync_cli import Machine, remote  # noqa: F401  (remote: a fixture)
from tests.conftest import REPO, run_start

pytestmark = pytest.mark.slow


def originated(machine: Machine, origin: str) -> None:
    """Turn sync on for `machine` (its board empty: no operation names its origin yet), and
    make its origin `origin`, so that a test can have two origins share a prefix."""
    machine.sync()
    env = {**os.environ, **machine.env, "PYTHONPATH": str(REPO)}
    found = subprocess.run(
        [sys.executable, "-c", "import sys; from start.board import file; "
         "print(file.location(sys.argv[1])[1])", str(machine.repo)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    with sqlite3.connect(found.stdout.strip()) as db:
        db.execute("UPDATE sync SET origin = ? WHERE one = 1", (origin,))
    db.close()


def test_another_machines_item_is_taken_by_its_short_id_and_one_made_before_sync_keeps_its_own(
    tmp_path: Path,
    remote: Path,  # noqa: F811
) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Plan the release", "--as", "ann")  # before sync: item-1
    ann.start("board", "add", "Write the notes", "--after", "item-1", "--as", "ann")
    ann.sync()
    assert [(i["id"], i["title"], i["blocked_by"]) for i in ann.items()] == [
        ("item-1", "Plan the release", []),
        ("item-2", "Write the notes", ["item-1"]),
    ]
    assert json.loads(ann.start("board", "show", "item-1", "--json"))["title"] == (
        "Plan the release"
    )
    bob.sync()
    shown = bob.items()
    plan = shown[0]["id"]
    prefix = plan.removeprefix("item-").partition(".")[0]
    assert len(prefix) == 4  # no other origin on bob's board shares 4 characters (but 1 in 10^6)
    assert [(i["id"], i["blocked_by"]) for i in shown] == [
        (f"item-{prefix}.1", []),
        (f"item-{prefix}.2", [f"item-{prefix}.1"]),
    ]
    shows = json.loads(bob.start("board", "show", plan, "--json"))
    assert (shows["id"], shows["title"]) == (plan, "Plan the release")
    claimed = json.loads(bob.start("board", "claim", plan, "--as", "bob", "--json"))
    assert (claimed["id"], claimed["assignee"]) == (plan, "bob")
    tree = json.loads(bob.start("board", "tree", "--json"))
    assert [each["id"] for each in tree] == [f"item-{prefix}.1", f"item-{prefix}.2"]
    bob.start("board", "comment", plan, "on it", "--as", "bob")
    bob.start("board", "done", plan, "--answer", "planned", "--as", "bob")
    exported = [json.loads(line) for line in bob.start("board", "export").splitlines()[1:]]
    assert [each["id"] for each in exported] == [f"item-{prefix}.1", f"item-{prefix}.2"]
    # A plan of `add --file` names items on the board by item-N only.
    plan_file = tmp_path / "plan.jsonl"
    plan_file.write_text(json.dumps({"title": "Later", "after": [plan]}) + "\n")
    planned = run_start(
        "-d", str(bob.repo), "board", "add", "--file", str(plan_file), "--as", "bob", env=bob.env
    )
    assert (planned.returncode, planned.stderr) == (
        2,
        f"start: {plan_file}:1: after: '{plan}' is another machine's item: a file names items on "
        "the board by item-N, this machine's, only; give it the key of a line\n",
    )
    # A machine's own N is never another's: bob made no item 1.
    missing = run_start("-d", str(bob.repo), "board", "show", "item-1", env=bob.env)
    assert (missing.returncode, missing.stderr) == (
        4,
        f"start: no item item-1 on the board of {bob.repo} (did you mean {plan}? 'start "
        "board' lists them)\n",
    )
    bob.sync()
    ann.sync()
    done = json.loads(ann.start("board", "show", "item-1", "--json"))
    assert (done["id"], done["status"], done["assignee"], done["answer"]) == (
        "item-1", "completed", "bob", "planned"
    )  # fmt: skip
    assert [each["text"] for each in done["comments"]] == ["on it"]
    # The full origin works everywhere, and is shown short.
    origin = json.loads(ann.start("board", "sync", "--json"))  # nothing new
    assert origin["arrived"] == []
    full = json.loads(bob.start("board", "show", f"item-{prefix}.2", "--json"))["id"]
    assert full == f"item-{prefix}.2"
    # A claim that lost is told by the id its machine shows (the claim pushes by itself).
    ann.start("board", "claim", "item-2", "--as", "ann")
    lost = run_start(
        "-d", str(bob.repo), "board", "claim", f"item-{prefix}.2", "--as", "bob", env=bob.env
    )
    assert lost.returncode == 1
    assert lost.stderr.startswith(
        f"start: your claim of item-{prefix}.2 lost: bob's claim of item-{prefix}.2 ("
    ), lost.stderr


A, B = "k3f9aaaaaaaa", "k3f9bbbbbbbb"


def test_a_prefix_two_machines_share_is_refused_naming_both_full_ids(
    tmp_path: Path,
    remote: Path,  # noqa: F811
) -> None:
    ann, bob, cat = (Machine(tmp_path, remote, name) for name in ("ann", "bob", "cat"))
    originated(ann, A)
    originated(bob, B)
    ann.start("board", "add", "Ann's", "--as", "ann")
    ann.sync()
    cat.sync()
    assert [i["id"] for i in cat.items()] == ["item-k3f9.1"]
    bob.start("board", "add", "Bob's", "--as", "bob")
    bob.sync()
    cat.sync()
    # bob's origin starts as ann's does: each is shown by a prefix one longer now, and the
    # shorter one is refused rather than taken as either.
    assert [i["id"] for i in cat.items()] == ["item-k3f9a.1", "item-k3f9b.1"]
    refused = run_start("-d", str(cat.repo), "board", "claim", "item-k3f9.1", env=cat.env)
    assert (refused.returncode, refused.stderr) == (
        2,
        f"start: item-k3f9.1 is ambiguous: the origins of 2 machines on this board start with "
        f"'k3f9' (item-{A}.1, item-{B}.1); give more of the origin, or all of it\n",
    )
    assert [i["status"] for i in cat.items()] == ["pending", "pending"]
    cat.start("board", "claim", f"item-{B}.1", "--as", "cat")
    assert [(i["id"], i["assignee"]) for i in cat.items()] == [
        ("item-k3f9a.1", None), ("item-k3f9b.1", "cat")
    ]  # fmt: skip
    ann.sync()
    assert [i["id"] for i in ann.items()] == ["item-1", "item-k3f9b.1"]
