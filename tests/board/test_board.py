"""The board's core: its rules (start.board.store), where it lives and how it migrates
(start.board.file), who acts on it (start.board). Races of real processes are in
tests/e2e/test_board_processes.py."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start import board
from start.base import inputs
from start.base.inputs import InputError
from start.board import (
    BadRequestError,
    BoardError,
    Change,
    Holder,
    NoSuchItemError,
    RefusedError,
)
from start.board import file as boardfile
from start.board import store as boarddb
from start.board.rows import Filter
from start.board.store import Board
from start.compose.ask import AGENT, USER, Ask


def spec(
    prompt: str | None = None,
    task: str | None = None,
    agent: str | None = None,
    permissions: str | None = None,
    by: str = USER,
) -> Ask:
    """What an item runs: a prompt or a task, as `start board add` (or an agent) asks it."""
    return Ask(
        "task" if task is not None else "prompt",
        prompt,
        task,
        agents=(agent,) if agent else (),
        headless=True,
        permissions=permissions,
        door="board",
        by=by,
    )


ALICE = Holder("alice")
BOB = Holder("bob")


@pytest.fixture
def opened(isolated: Path) -> Iterator[Board]:
    with boardfile.opened(str(isolated)) as found:
        yield found


def exited() -> Holder:
    """A holder whose process has ended: a child started and reaped here."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    started = board.process_start(child.pid)
    assert started is not None
    child.wait()
    return Holder(f"mcp:test:{child.pid}", child.pid, started)


# --- create ---------------------------------------------------------------------------------


def test_an_item_starts_pending_unassigned_with_the_next_id(opened: Board) -> None:
    first = opened.create("Plan", ALICE)
    second = opened.create(
        "Build", BOB, "the details", ["item-1"], {"priority": 2}, spec(prompt="go")
    )
    assert (first.id, first.status, first.assignee, first.created_by) == (
        "item-1",
        "pending",
        None,
        "alice",
    )
    assert second.id == "item-2"
    assert second.blocked_by == ("item-1",)
    assert second.blocked == ("waiting for item-1 (pending)",)
    assert second.metadata == {"priority": 2}
    assert second.run == spec(prompt="go")
    assert not second.ready and first.ready


def test_create_refuses_a_dependency_that_does_not_exist(opened: Board) -> None:
    opened.create("Plan", ALICE)
    with pytest.raises(NoSuchItemError) as caught:
        # item-2 is the id the new item would get: it cannot wait on itself either.
        opened.create("Build", ALICE, blocked_by=["item-2"])
    assert str(caught.value) == (
        "blocked_by names item-2, which is not on the board ('start board' lists the items)"
    )
    assert opened.items()[1] == 1  # nothing was made


def test_ids_are_never_reused_and_read_with_or_without_the_prefix(opened: Board) -> None:
    opened.create("One", ALICE)
    assert opened.get("1").id == opened.get("item-1").id == "item-1"
    for wrong in ("item-01", "x", "item-", "-1", "1.0", "1\n", "9" * 19):
        with pytest.raises(InputError) as caught:
            opened.get(wrong)
        assert str(caught.value) == (
            f"{inputs.quoted(wrong)} is not an item id: ids read item-N (or N), and "
            "item-PREFIX.N for another machine's item (as the board shows it), N a number of 1 "
            "to 18 digits that does not start with 0"
        )
    with pytest.raises(NoSuchItemError):  # the longest id is one, of no item
        opened.get("9" * 18)
    with pytest.raises(NoSuchItemError) as missing:
        opened.get("item-7")
    root = os.path.realpath(os.getcwd())
    assert str(missing.value) == (
        f"no item item-7 on the board of {root} (ids go from item-1 to item-1; 'start board' "
        "lists them)"
    )


def test_text_is_kept_as_the_history_keeps_it(opened: Board) -> None:
    """The one codec of every store (start.base.sqlite.blob): an undecodable byte (a surrogate
    escape) is kept as that byte and reads back as it was; a lone surrogate that stands for no
    byte (the doors refuse one) is U+FFFD; markup is text."""
    title = "caf\udce9 \ud800 [bold]{x}"
    item = opened.create(title, ALICE, description="line\nline")
    got = opened.get(item.id)
    assert (got.title, got.description) == ("caf\udce9 \ufffd [bold]{x}", "line\nline")
    (stored,) = opened.connection.execute("SELECT title FROM items").fetchone()
    assert stored == b"caf\xe9 \xef\xbf\xbd [bold]{x}"
    # The history keeps the same text as the same bytes.
    from start import runs
    from start.config.model import Settings
    from start.runs import recording
    from start.runs import store as historydb

    run = runs.Run(
        time="t", at=1.0, cwd="/", workdir="/", project="/", mode="prompt", agent="a",
        prompt="p", role_text="", argv=("a",), headless=True, answer=title,
    )  # fmt: skip
    recorded = recording.record(run, Settings())
    found = recorded.id if recorded is not None else None
    with historydb.opened() as store:
        (answer,) = store.connection.execute(
            "SELECT answer FROM runs WHERE id = ?", (found,)
        ).fetchone()
    assert answer == stored


# --- claim ----------------------------------------------------------------------------------


def test_a_claim_takes_the_item_once_and_is_idempotent_for_its_holder(opened: Board) -> None:
    opened.create("Plan", ALICE)
    claimed = opened.claim("item-1", BOB)
    assert (claimed.status, claimed.assignee, claimed.epoch) == ("in_progress", "bob", 1)
    assert opened.claim("1", BOB) == claimed
    with pytest.raises(RefusedError) as caught:
        opened.claim("item-1", ALICE)
    assert str(caught.value) == (
        "item-1 is held by bob; it is theirs until they finish or release it, or it is "
        "reassigned (start board reassign item-1 NAME)"
    )


def test_the_same_name_in_another_process_is_not_the_holder(opened: Board) -> None:
    opened.create("Plan", ALICE)
    mine = Holder("mcp:x:1", 1, board.process_start(1))
    opened.claim("item-1", mine)
    other = Holder("mcp:x:1", os.getpid(), board.process_start(os.getpid()))
    with pytest.raises(RefusedError):
        opened.claim("item-1", other)
    with pytest.raises(RefusedError) as caught:
        opened.update("item-1", other, Change("completed"))
    assert str(caught.value) == "item-1 is held by another process of mcp:x:1 (pid 1)"


def test_a_blocked_or_finished_item_cannot_be_claimed(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.create("Build", ALICE, blocked_by=["item-1"])
    with pytest.raises(RefusedError) as blocked:
        opened.claim("item-2", BOB)
    assert str(blocked.value) == "item-2 is blocked: waiting for item-1 (pending)"
    opened.update("item-1", ALICE, Change("completed"))
    with pytest.raises(RefusedError) as finished:
        opened.claim("item-1", BOB)
    assert str(finished.value) == (
        "item-1 is completed: a finished item cannot be taken (reopen a failed one: start "
        "board update item-1 --status pending)"
    )
    assert opened.claim("item-2", BOB).status == "in_progress"


def test_claim_next_takes_the_first_ready_item_and_none_when_none_is(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.create("Build", ALICE, blocked_by=["item-1"])
    opened.create("Run me", ALICE, run=spec(prompt="p"))
    assert opened.claim_next(BOB, runnable=True).id == "item-3"  # type: ignore[union-attr]
    assert opened.claim_next(BOB).id == "item-1"  # type: ignore[union-attr]
    assert opened.claim_next(BOB) is None  # item-2 waits for item-1


# --- dependencies ---------------------------------------------------------------------------


def test_only_completed_satisfies_and_a_failed_one_blocks_with_a_reason(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.create("Build", ALICE, blocked_by=["item-1"])
    opened.update("item-1", ALICE, Change("failed", reason="no"))
    item = opened.get("item-2")
    assert item.blocked == (
        "item-1 failed, and only a completed item satisfies a dependency: reopen it (status "
        "pending) or remove it from blocked_by",
    )
    assert [i.id for i in opened.items(Filter(blocked=True))[0]] == ["item-2"]
    assert opened.items(Filter(ready=True))[0] == []
    # Reopened and completed, it satisfies the dependency.
    opened.update("item-1", BOB, Change("pending"))
    opened.update("item-1", BOB, Change("completed"))
    assert opened.get("item-2").ready


def test_a_missing_dependency_blocks_with_a_reason(isolated: Path, opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.create("Build", ALICE, blocked_by=["item-1"])
    # No command removes an item; a board edited by hand can lose one.
    opened.connection.execute("DELETE FROM items WHERE seq = 1")
    assert opened.get("item-2").blocked == ("item-1 does not exist: remove it from blocked_by",)


def test_update_refuses_unknown_self_and_cyclic_dependencies(opened: Board) -> None:
    for title in ("a", "b", "c"):
        opened.create(title, ALICE)
    opened.update("item-2", ALICE, Change(blocked_by=("item-1",)))
    opened.update("item-3", ALICE, Change(blocked_by=("item-2",)))
    with pytest.raises(BadRequestError) as cycle:
        opened.update("item-1", ALICE, Change(blocked_by=("item-3",)))
    assert str(cycle.value) == (
        "item-1 cannot wait on item-3: one of them waits on item-1, which would be a cycle that "
        "never ends"
    )
    with pytest.raises(BadRequestError) as itself:
        opened.update("item-1", ALICE, Change(blocked_by=("1",)))
    assert str(itself.value) == "item-1 cannot wait on itself (blocked_by)"
    with pytest.raises(NoSuchItemError):
        opened.update("item-1", ALICE, Change(blocked_by=("item-9",)))
    assert opened.get("item-1").blocked_by == ()  # each refusal changed nothing


def test_an_item_cannot_complete_while_blocked(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.create("Build", ALICE)
    opened.claim("item-2", BOB)
    opened.update("item-2", BOB, Change(blocked_by=("item-1",)))
    with pytest.raises(RefusedError) as caught:
        opened.update("item-2", BOB, Change("completed"))
    assert str(caught.value) == (
        "item-2 cannot complete while it is blocked: waiting for item-1 (pending)"
    )
    assert opened.get("item-2").status == "in_progress"


# --- updates --------------------------------------------------------------------------------


def test_metadata_merges_and_null_deletes_a_key(opened: Board) -> None:
    opened.create("Plan", ALICE, metadata={"a": 1, "b": {"c": 2, "d": 3}, "e": "x"})
    item = opened.update("item-1", BOB, Change(metadata={"a": None, "b": {"c": None}, "f": [1]}))
    assert item.metadata == {"b": {"d": 3}, "e": "x", "f": [1]}


def test_only_the_holder_changes_an_item_in_progress(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.claim("item-1", BOB)
    with pytest.raises(RefusedError) as caught:
        opened.update("item-1", ALICE, Change(metadata={"x": 1}))
    assert str(caught.value) == (
        "item-1 is held by bob: only its holder changes it (start board reassign item-1 NAME "
        "hands it over)"
    )
    done = opened.update("item-1", BOB, Change("completed", answer="the plan", history=7))
    assert (done.status, done.assignee, done.answer, done.history) == (
        "completed",
        "bob",
        "the plan",
        7,
    )


def test_a_completed_item_keeps_all_but_its_metadata(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.update("item-1", ALICE, Change("completed"))
    assert opened.update("item-1", BOB, Change(metadata={"k": 1})).metadata == {"k": 1}
    for change in (Change("pending"), Change("failed"), Change(description="new")):
        with pytest.raises(RefusedError) as caught:
            opened.update("item-1", BOB, change)
        assert (
            str(caught.value)
            == "item-1 is completed: only its metadata, priority, labels and parent can change now"
        )


def test_in_progress_comes_only_from_a_claim(opened: Board) -> None:
    opened.create("Plan", ALICE)
    with pytest.raises(BadRequestError) as caught:
        opened.update("item-1", ALICE, Change("in_progress"))
    assert str(caught.value) == (
        "an item goes in progress only by a claim: start board claim item-1 (board_tasks_claim "
        "over MCP)"
    )


def test_a_holder_letting_go_leaves_it_pending_and_unassigned(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.claim("item-1", BOB)
    item = opened.update("item-1", BOB, Change("pending"))
    assert (item.status, item.assignee, item.releases) == ("pending", None, 0)


def test_a_reassign_fences_out_the_old_holders_late_write(opened: Board) -> None:
    opened.create("Plan", ALICE)
    claimed = opened.claim("item-1", BOB)
    moved = opened.reassign("item-1", "carol", ALICE)
    assert (moved.assignee, moved.epoch) == ("carol", 2)
    with pytest.raises(RefusedError):
        opened.update("item-1", BOB, Change("completed"), claimed.epoch)
    # Even handed back to the same name, a write that carries the old claim's epoch is refused.
    opened.reassign("item-1", "bob", ALICE)
    with pytest.raises(RefusedError) as caught:
        opened.update("item-1", BOB, Change("completed"), claimed.epoch)
    assert str(caught.value) == (
        "item-1 was reassigned since your claim (epoch 1; it is now at epoch 3): this write is "
        "fenced out; claim it again to act on it"
    )
    assert opened.claim("item-1", BOB).epoch == 3  # the holder learns the epoch again
    assert opened.update("item-1", BOB, Change("completed"), 3).status == "completed"
    assert [event.op for event in opened.events("item-1")] == [
        "create",
        "claim",
        "reassign",
        "reassign",
        "update",
    ]


def test_a_reassign_of_a_finished_or_blocked_item_is_refused(opened: Board) -> None:
    opened.create("Plan", ALICE)
    opened.create("Build", ALICE, blocked_by=["item-1"])
    with pytest.raises(RefusedError) as blocked:
        opened.reassign("item-2", "bob", ALICE)
    assert str(blocked.value) == "item-2 is blocked: waiting for item-1 (pending)"
    opened.update("item-1", ALICE, Change("failed", reason="r"))
    with pytest.raises(RefusedError):
        opened.reassign("item-1", "bob", ALICE)


# --- claims bound to processes --------------------------------------------------------------


def test_a_claim_whose_process_ended_is_released_when_the_board_is_opened(
    isolated: Path, opened: Board
) -> None:
    opened.create("Plan", ALICE)
    gone = exited()
    opened.claim("item-1", gone)
    opened.close()
    with boardfile.opened(str(isolated)) as again:
        item = again.get("item-1")
        assert (item.status, item.assignee, item.releases) == ("pending", None, 1)
        assert item.reason == (
            f"released (1 of 2 before it fails): its holder {gone.name} (pid {gone.pid}) ended "
            "without finishing it"
        )
        assert [e.op for e in again.events("item-1")] == ["create", "claim", "release"]


def test_a_reused_pid_does_not_keep_a_claim(opened: Board) -> None:
    opened.create("Plan", ALICE)
    # This process's pid, but not its start: a process that had the pid before.
    stale = Holder("mcp:test:1", os.getpid(), "another-boot:1")
    opened.claim("item-1", stale)
    assert [i.id for i in opened.sweep()] == ["item-1"]
    live = Holder("mcp:test:2", os.getpid(), board.process_start(os.getpid()))
    opened.claim("item-1", live)
    assert opened.sweep() == []
    assert opened.get("item-1").assignee == "mcp:test:2"


def test_after_the_last_release_the_item_fails_with_the_reason(opened: Board) -> None:
    opened.create("Plan", ALICE)
    for _ in range(board.MOST_RELEASES):
        gone = exited()
        opened.claim("item-1", gone)
        opened.sweep()
    item = opened.get("item-1")
    assert (item.status, item.releases, item.assignee) == ("failed", 3, gone.name)
    assert item.reason == (
        "released 3 times: each time its holder's process ended without finishing it (the "
        f"last: {gone.name}, pid {gone.pid})"
    )
    # Reopened, it starts counting again.
    assert opened.update("item-1", ALICE, Change("pending")).releases == 0


def test_process_start_reads_proc_and_a_zombie_has_none() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = board.process_start(child.pid)
    assert started is not None and started.count(":") == 1
    while board.process_start(child.pid) is not None:  # a zombie until reaped: not running
        pass
    child.wait()
    assert board.process_start(child.pid) is None
    assert board.process_start(os.getpid()) == board.process_start(os.getpid())


def test_process_start_without_proc_asks_ps(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.path.isdir
    monkeypatch.setattr(
        os.path, "isdir", lambda path: False if path == "/proc/self" else real(path)
    )
    mine = board.process_start(os.getpid())
    assert mine is not None and mine.startswith("ps:")
    assert board.process_start(os.getpid()) == mine
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert board.process_start(child.pid) is None


# --- identities -----------------------------------------------------------------------------


def test_names_a_person_acts_under() -> None:
    assert board.person("alice.b@example") == Holder("alice.b@example")
    for wrong in ("", "mcp:claude:1", "a b", "x" * 65):
        with pytest.raises(BadRequestError) as caught:
            board.person(wrong)
        assert str(caught.value) == (
            f"'{wrong}' is not a name to act under: use 1 to 64 letters, digits and ._@+- "
            "(names with a colon are those start gives MCP sessions and runs)"
        )
    assert board.person(board.login()).pid is None


def test_a_session_is_named_by_its_client_and_this_process() -> None:
    pid = os.getpid()
    found = board.session("Claude Code\x1b[31m", "edit")
    assert found == Holder(f"mcp:claudecode31m:{pid}", pid, board.process_start(pid), "edit")
    assert board.session(None, "read-only").name == f"mcp:client:{pid}"
    assert (found.agent, board.person("alice").agent) == (True, False)


# --- who shaped it (docs/board.md, "Who shaped it") -------------------------------------------


def agent_at(level: str) -> Holder:
    """An MCP session of this process acting at `level` (settings.mcp_permissions)."""
    return board.session("claude-code", level)


def test_a_session_below_an_items_level_cannot_change_claim_or_finish_it(opened: Board) -> None:
    opened.create("Fix", ALICE, "the user's words", run=spec(task="fix", permissions="full"))
    me = agent_at("read-only")
    refusal = (
        f"item-1 runs at up to 'full', and {me.name} acts at 'read-only' "
        "(settings.mcp_permissions): it may not {what} an item that runs above its level. Make an "
        "item of your own, or ask the user"
    )
    for what, change in (
        ("change", Change(description="the caller's words")),
        ("change", Change(blocked_by=())),
        ("finish", Change("completed", answer="forged")),
        ("finish", Change("failed", reason="no")),
    ):
        with pytest.raises(RefusedError) as caught:
            opened.update("item-1", me, change)
        assert str(caught.value) == refusal.format(what=what)
    with pytest.raises(RefusedError) as claimed:
        opened.claim("item-1", me)
    assert str(claimed.value) == refusal.format(what="claim")
    assert opened.claim_next(me) is None
    kept = opened.update("item-1", me, Change(metadata={"seen": True}))  # never reaches a run
    assert (kept.description, kept.status, kept.level, dict(kept.metadata)) == (
        "the user's words",
        "pending",
        "full",
        {"seen": True},
    )
    # At the user's level, the session may.
    changed = opened.update("item-1", agent_at("full"), Change(description="theirs"))
    assert (changed.description, changed.level, changed.level_by) == ("theirs", "full", "alice")


def test_a_sessions_words_lower_the_items_level_to_its_own(opened: Board) -> None:
    me = agent_at("read-only")
    made = opened.create("Plan", me, run=spec(prompt="p", agent="a", by=AGENT))
    assert (made.level, made.level_by, made.runs_at) == ("read-only", me.name, "read-only")
    person = opened.create("Notes", ALICE)
    assert (person.level, person.level_by, person.runs_at) == ("full", "alice", None)
    lowered = opened.update("item-2", me, Change(description="the caller's words"))
    assert (lowered.level, lowered.level_by) == ("read-only", me.name)
    again = opened.update("item-2", ALICE, Change(description="mine"))  # never raised again
    assert (again.level, again.level_by) == ("read-only", me.name)
    events = opened.events("item-2")
    assert [(e.op, e.detail.get("level")) for e in events] == [
        ("create", None),
        ("update", "read-only"),
        ("update", None),
    ]


def test_a_session_finishes_an_item_that_runs_only_while_it_holds_it(opened: Board) -> None:
    opened.create("Plan", ALICE, run=spec(prompt="Plan it", permissions="read-only"))
    opened.create("Notes", ALICE)
    me = agent_at("read-only")
    with pytest.raises(RefusedError) as caught:
        opened.update("item-1", me, Change("completed", answer="forged"))
    assert str(caught.value) == (
        "item-1 says what start board run runs: an agent finishes it only while it holds it "
        "(board_tasks_claim), so that its end is its run's or its holder's work"
    )
    opened.claim("item-1", me)
    done = opened.update("item-1", me, Change("completed", answer="mine"))
    assert (done.answer, done.answer_level) == ("mine", "read-only")
    # Work that runs nothing is finished outright, as before; a person's answer is the user's.
    notes = opened.update("item-2", me, Change("completed", answer="noted"))
    assert notes.answer_level == "read-only"
    opened.create("Later", ALICE)
    assert opened.update("item-3", ALICE, Change("completed")).answer_level == "full"


def test_claim_next_skips_what_runs_above_the_sessions_level(opened: Board) -> None:
    opened.create("Build", ALICE, run=spec(prompt="go", permissions="edit"))
    opened.create("Task", ALICE, run=spec(task="fix"))  # a task may ask for its own level
    opened.create("Look", ALICE, run=spec(prompt="look"))  # a prompt: read-only
    opened.create("By hand", ALICE)
    me = agent_at("read-only")
    taken = [opened.claim_next(me), opened.claim_next(me), opened.claim_next(me)]
    assert [found.id if found else None for found in taken] == ["item-3", "item-4", None]
    assert opened.claim_next(ALICE) == opened.get("item-1")


def test_what_bounds_a_run_is_the_lowest_writer_of_it_and_of_what_it_is_fed(
    opened: Board,
) -> None:
    me = agent_at("read-only")
    opened.create("Plan", ALICE, run=spec(prompt="p"))
    user = opened.update("item-1", ALICE, Change("completed", answer="planned"))
    assert board.cap(user, []) is None
    theirs = opened.create("Research", me)
    opened.claim("item-2", me)
    fed = opened.update("item-2", me, Change("completed", answer="forged?"))
    build = opened.create("Build", ALICE, "", ["item-1", "item-2"], run=spec(prompt="{answers}"))
    assert board.cap(build, [user]) is None
    assert board.cap(build, [user, fed]) == board.Cap(
        "read-only", f"item-2, fed to it, was written by {me.name} at 'read-only'"
    )
    # An item a person made and the user's run answered bounds nothing; an answer a session
    # wrote on the user's item does.
    answered = opened.create("Answer", ALICE)
    opened.claim("item-4", me)
    answered = opened.update("item-4", me, Change("completed", answer="a"))
    assert board.cap(build, [answered]) == board.Cap(
        "read-only", f"item-4's answer, fed to it, was written by {me.name} at 'read-only'"
    )
    assert board.cap(theirs, []) == board.Cap(
        "read-only", f"item-2 was written by {me.name} at 'read-only'"
    )


def test_an_old_board_gets_levels_from_who_made_and_changed_its_items(isolated: Path) -> None:
    connection = _old_board(isolated, 1)
    stamp = "2026-01-01T00:00:00+00:00"
    for seq, by, status, assignee in (
        (1, "alice", "pending", None),
        (2, "mcp:claude:9", "pending", None),
        (3, "alice", "completed", "mcp:codex:7"),
        (4, "alice", "completed", "alice"),
    ):
        connection.execute(
            "INSERT INTO items (seq, title, description, status, assignee, metadata, created_by, "
            "created, updated) VALUES (?, 't', '', ?, ?, '{}', ?, ?, ?)",
            (seq, status, assignee, by, stamp, stamp),
        )
        connection.execute(
            "INSERT INTO events (at, item, actor, op, detail) VALUES (?, ?, ?, 'create', '{}')",
            (stamp, seq, by),
        )
    connection.execute(
        "INSERT INTO events (at, item, actor, op, detail) VALUES (?, 1, 'mcp:x:1', 'update', '{}')",
        (stamp,),
    )
    connection.close()
    with boardfile.opened(str(isolated)) as opened:
        found = [(i.level, i.level_by, i.answer_level) for i in opened.items()[0]]
    assert found == [
        ("read-only", "mcp:x:1", None),
        ("read-only", "mcp:claude:9", None),
        ("full", "alice", "read-only"),
        ("full", "alice", "full"),
    ]


# --- where it lives, and its schema ---------------------------------------------------------


def _old_board(isolated: Path, migrations: int) -> sqlite3.Connection:
    """A board as an earlier release made it: its first `migrations` applied."""
    from start.base import sqlite

    _, path = boardfile.location(str(isolated))
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    connection = sqlite3.connect(path, isolation_level=None)
    sqlite.migrate(connection, boardfile.MIGRATIONS[:migrations])
    return connection


def test_text_an_earlier_release_kept_reads_back_as_it_was(isolated: Path) -> None:
    """Releases before m003 kept free text with 'surrogatepass': m003 keeps it as every store
    does (start.base.sqlite.blob), and it reads back as before. A lone surrogate that stands for
    no byte (the doors refuse one now) is U+FFFD, as `show --json` and the tools showed it."""
    connection = _old_board(isolated, 2)
    texts = [
        ("caf\udce9 \udcff", "\ud800 lone", "plain caf\u00e9", None),
        ("\ud55c\uad6d\uc5b4", "", None, "why \udc80"),  # Korean is UTF-8 from ED 80 on
    ]
    for seq, (title, description, answer, reason) in enumerate(texts, 1):
        connection.execute(
            "INSERT INTO items (seq, title, description, status, metadata, created_by, answer, "
            "reason, created, updated) VALUES (?, ?, ?, 'pending', '{}', 'alice', ?, ?, 't', 't')",
            (seq, *(None if text is None else text.encode("utf-8", "surrogatepass")
                    for text in (title, description, answer, reason))),
        )  # fmt: skip
    connection.close()
    with boardfile.opened(str(isolated)) as opened:
        first, second = opened.items()[0]
        stored = opened.connection.execute("SELECT title, reason FROM items").fetchall()
    assert (first.title, first.description, first.answer, first.reason) == (
        "caf\udce9 \udcff",
        "\ufffd lone",
        "plain caf\u00e9",
        None,
    )
    assert (second.title, second.description, second.answer, second.reason) == texts[1]
    assert [tuple(row) for row in stored] == [
        (b"caf\xe9 \xff", None),
        ("\ud55c\uad6d\uc5b4".encode(), b"why \x80"),
    ]


def test_the_items_columns_are_its_records_fields(opened: Board) -> None:
    """Item's storage derives from its annotations (start.board.rows), as Run's does."""
    from start.base import sqlite
    from start.board import rows

    assert {name: board.Item.__annotations__[name] in rows.KINDS for name in rows.FIELDS} == {
        name: True for name in rows.FIELDS
    }
    derived = {"id", "blocked_by", "blocked", "labels", "parent", "children", "children_done"}
    assert set(rows.FIELDS) == set(board.Item._fields) - derived
    have = sqlite.columns(opened.connection, "items")
    assert have == {*rows.FIELDS, "seq", "holder_pid", "holder_started", "parent"}


def test_a_field_added_to_an_item_gets_its_column_and_old_rows_none(isolated: Path) -> None:
    """A board that lacks the column of a field of Item (one added since it was made) gets it
    when it is opened; the rows before it read as None."""
    with boardfile.opened(str(isolated)) as opened:
        opened.create("Plan", ALICE)
        opened.update("item-1", ALICE, Change("completed", answer="done"))
        opened.connection.execute("ALTER TABLE items DROP COLUMN answer_level")
    with boardfile.opened(str(isolated)) as opened:
        found = opened.get("item-1")
        assert (found.answer, found.answer_level) == ("done", None)
        opened.create("Review", BOB)
        opened.update("item-2", BOB, Change("completed", answer="ok"))
        assert opened.get("item-2").answer_level == "full"


def test_the_board_is_private_outside_the_repository_and_keyed_by_the_root(
    isolated: Path,
) -> None:
    (isolated / ".git").mkdir()
    sub = isolated / "src" / "deep"
    sub.mkdir(parents=True)
    root, path = boardfile.location(str(sub))
    assert root == os.path.realpath(isolated)
    assert boardfile.location(str(isolated)) == (root, path)
    assert not path.startswith(root + "/")
    with boardfile.opened(str(sub)) as opened:
        opened.create("x", ALICE)
        for name in os.listdir(os.path.dirname(path)):
            mode = stat.S_IMODE(os.stat(os.path.join(os.path.dirname(path), name)).st_mode)
            assert mode == 0o600, name
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    other = isolated.parent / "other"
    other.mkdir()
    assert boardfile.location(str(other))[1] != path


# A path's characters: any but NUL, and of the surrogates only those that stand for undecodable
# bytes (os.fsdecode's).
PATH_TEXT = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00")
    | st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF),
    max_size=80,
)


@given(PATH_TEXT)
def test_a_roots_file_name_is_its_path_read_back(tail: str) -> None:
    import re
    from urllib.parse import unquote_to_bytes

    root = "/" + tail
    name = boardfile.file_name(root)
    assert name.endswith(".db") and "/" not in name and len(name.encode()) < 255
    assert re.fullmatch(r"[A-Za-z0-9._%~-]+\.db", name)
    if "~" in name:  # cut, with a digest: test_a_long_root_is_cut_and_given_a_digest
        return
    # Every `-` was a `/`, every `%XX` a byte: the name gives the path back, so two roots
    # never share a file.
    back = unquote_to_bytes(name[: -len(".db")].replace("-", "%2F"))
    assert back == os.fsencode(root)[1:] or (root == "/" and name == "-.db")


def test_a_long_root_is_cut_and_given_a_digest() -> None:
    long = "/" + "x" * 300
    name = boardfile.file_name(long)
    assert name.startswith("x" * 100 + "~") and len(name) == 100 + 1 + 32 + 3
    assert boardfile.file_name(long + "y") != name


def test_a_board_of_another_root_or_a_link_is_refused(isolated: Path) -> None:
    root, path = boardfile.location(str(isolated))
    with boardfile.opened(str(isolated)):
        pass
    connection = sqlite3.connect(path)
    connection.execute("UPDATE about SET value = '/elsewhere' WHERE key = 'root'")
    connection.commit()
    connection.close()
    with pytest.raises(BoardError) as caught:
        boardfile.open_board(str(isolated))
    assert str(caught.value) == f"{path} is the board of /elsewhere, not of {root}; move it away"
    os.unlink(path)
    os.symlink("/etc/hostname", path)
    with pytest.raises(BoardError) as linked:
        boardfile.open_board(str(isolated))
    assert str(linked.value) == f"{path} is not a file owned by you; remove it"


def test_without_create_a_missing_board_is_none(isolated: Path) -> None:
    assert boardfile.open_board(str(isolated), create=False) is None
    assert not os.path.exists(boardfile.directory())


def test_migrations_are_applied_by_name_once(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("kept", ALICE)
    _, path = boardfile.location(str(isolated))
    extra = ("m999_test", ("ALTER TABLE items ADD COLUMN extra TEXT DEFAULT 'x'",))
    monkeypatch.setattr(boardfile, "MIGRATIONS", (*boardfile.MIGRATIONS, extra))
    for _ in range(2):  # the second opening finds nothing to do
        with boardfile.opened(str(isolated)) as opened:
            assert opened.get("item-1").title == "kept"
    connection = sqlite3.connect(path)
    names = [row[0] for row in connection.execute("SELECT name FROM migrations ORDER BY name")]
    assert names == [*[name for name, _ in boardfile.MIGRATIONS[:-1]], "m999_test"]
    assert connection.execute("PRAGMA user_version").fetchone()[0] == len(boardfile.MIGRATIONS)
    assert connection.execute("SELECT extra FROM items").fetchone()[0] == "x"
    connection.close()


def test_a_board_made_by_a_newer_start_is_refused(isolated: Path) -> None:
    with boardfile.opened(str(isolated)):
        pass
    _, path = boardfile.location(str(isolated))
    connection = sqlite3.connect(path)
    connection.execute("INSERT INTO migrations VALUES ('m999_future', 'then')")
    connection.execute("PRAGMA user_version = 0")  # the version alone would not tell
    connection.commit()
    connection.close()
    with pytest.raises(BoardError) as caught:
        boardfile.open_board(str(isolated))
    assert str(caught.value) == (
        f"{path} was made by a newer start (its board has migrations this one does not know); "
        "upgrade start, or move the file away"
    )


def test_the_item_schema_is_derived_from_the_record(opened: Board) -> None:
    import jsonschema

    item = opened.create("Plan", ALICE, metadata={"k": [1]}, run=spec(task="t", agent="a"))
    schema = board.item_schema()
    assert list(schema["properties"]) == list(board.Item._fields)
    jsonschema.validate(board.item_data(item), schema)
    jsonschema.validate(board.row_data(item), board.row_schema())
    assert json.loads(json.dumps(board.item_data(item)))["run"]["task"] == "t"


def test_a_watch_returns_at_the_end_or_the_timeout(opened: Board) -> None:
    opened.create("Plan", ALICE)
    waits: list[float] = []
    seen: list[str] = []
    item = opened.watch("item-1", 0.3, lambda i: seen.append(i.status), sleep=waits.append)
    assert item.status == "pending" and seen == ["pending"] and waits
    opened.update("item-1", ALICE, Change("completed"))
    assert opened.watch("item-1", None).status == "completed"
    assert boarddb.POLL <= 0.2  # a watch sees an end within a second
