"""The board of a set of operations (start.board.replay): the same set gives the same board in
any order, duplicated or not; a transition confirmed by a push is never overturned; and each
conflict rule of docs/board-sync-design.md holds on its example there."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from start.board.oplog import Clock, Op, encode
from start.board.replay import Entry, Lost, Replayed, replay

A = "aaaaaaaaaaaa"  # machine A, whose person is ann
B = "bbbbbbbbbbbb"  # machine B, bob's
C = "cccccccccccc"
ITEM = f"{A}.1"
_SEQ: dict[str, int] = {}


def op(origin: str, kind: str, wall: int, epoch: int = 0, author: str | None = None,
       item: str = ITEM, level: str = "full", **fields: Any) -> Op:  # fmt: skip
    """An operation of `origin`, numbered after the last this test made there."""
    _SEQ[origin] = _SEQ.get(origin, 0) + 1
    who = author or {A: "ann", B: "bob", C: "cat"}[origin]
    made = Op(origin, _SEQ[origin], Clock(wall), who, level, kind, item, epoch, fields)
    encode(made)  # every operation of these tests is one start would write and read
    return made


@pytest.fixture(autouse=True)
def _numbered_afresh() -> None:
    """Each test's operations of an origin are numbered from 1: its first item is ITEM."""
    _SEQ.clear()


def create(wall: int = 1, **fields: Any) -> Op:
    """An item of machine A, keyed by the number of its create (A.1 first)."""
    item = f"{A}.{_SEQ.get(A, 0) + 1}"
    return op(A, "create", wall, item=item, **({"title": "Fix the retry"} | fields))


def pushed(*ops: Op) -> list[Entry]:
    """Operations on the remote in this order (positions 1, 2, ...)."""
    return [Entry(each, number) for number, each in enumerate(ops, 1)]


# --- the conflict rules, each on its example of docs/board-sync-design.md -----------------------


def test_1_a_held_item_changes_only_by_its_holder() -> None:
    made = create()
    claim = op(A, "claim", 2)
    early = op(B, "update", 3, epoch=0, title="Bob's title before he saw the claim")
    late = op(B, "update", 5, epoch=1, title="Bob's title after he saw it")
    own = op(A, "update", 4, epoch=1, description="Ann's notes")
    found = replay(pushed(made, claim, early, late, own))
    item = found.items[ITEM]
    assert (item.status, item.holder, item.epoch) == ("in_progress", "ann", 1)
    assert (item.title, item.description) == ("Bob's title before he saw the claim", "Ann's notes")
    assert found.lost == (
        Lost(late.name, ITEM, (
            f"bob's update of {ITEM} ({late.name}) at epoch 1: it was held by ann then, and an "
            "item in progress changes only by its holder")),
    )  # fmt: skip


def test_2_fields_go_by_the_last_writer_on_the_clock_whichever_arrived_first() -> None:
    made = create()
    ann = op(A, "update", 10, title="Ann's")
    bob = op(B, "update", 12, title="Bob's")
    assert replay(pushed(made, bob, ann)).items[ITEM].title == "Bob's"
    assert replay(pushed(made, ann, bob)).items[ITEM].title == "Bob's"
    assert replay([Entry(made), Entry(ann), Entry(bob)]).items[ITEM].title == "Bob's"


def test_3_metadata_goes_by_key() -> None:
    made = create()
    ann = op(A, "update", 10, metadata={"owner": "ann"})
    bob = op(B, "update", 10, metadata={"link": "x"})
    assert replay(pushed(made, ann, bob)).items[ITEM].metadata == {"owner": "ann", "link": "x"}
    gone = op(A, "update", 20, metadata={"owner": None})
    assert replay(pushed(made, bob, gone, ann)).items[ITEM].metadata == {"link": "x"}


def test_4_dependencies_are_a_set_of_their_own_adds_and_removes() -> None:
    first, second = create(title="One"), create(title="Two")
    third = create(title="Three", blocked_by=[first.item])
    added = op(A, "update", 10, item=third.item, blocked_by={"add": [second.item]})
    removed = op(B, "update", 10, item=third.item, blocked_by={"remove": [first.item]})
    found = replay(pushed(first, second, third, removed, added))
    assert found.items[third.item].blocked_by == (second.item,)


def test_5_finished_is_sticky() -> None:
    made = create()
    claim = op(A, "claim", 2)
    done = op(A, "finish", 3, epoch=1, status="completed", answer="Fixed")
    release = op(B, "release", 4, epoch=1, author="ann", counted=True)
    again = op(B, "claim", 5, epoch=2)
    retitled = op(B, "update", 6, epoch=2, title="Changed after")
    tagged = op(B, "update", 6, epoch=2, labels={"add": ["done"]})
    found = replay(pushed(made, claim, done, release, again, retitled, tagged))
    item = found.items[ITEM]
    assert (item.status, item.holder, item.answer, item.labels) == (
        "completed",
        "ann",
        "Fixed",
        ("done",),
    )
    assert (item.title, item.answer_level, item.epoch) == ("Fix the retry", "full", 2)
    assert found.lost == tuple(sorted([
        Lost(release.name, ITEM, (
            f"ann's release of {ITEM} ({release.name}) at epoch 1: lost to ann's finish "
            f"({done.name}), first on the remote")),
        Lost(again.name, ITEM, (
            f"bob's claim of {ITEM} ({again.name}) at epoch 2: it is completed, and only a "
            "pending item is claimed")),
        Lost(retitled.name, ITEM, (
            f"bob's update of {ITEM} ({retitled.name}) at epoch 2: it was completed then, and a "
            "completed item keeps all but its metadata, priority, labels and parent")),
    ]))  # fmt: skip


def test_6_the_earlier_claim_wins_once_pushes_order_them() -> None:
    made = create()
    ann = op(A, "claim", 20)
    bob = op(B, "claim", 10)  # an earlier clock, pushed later
    # On bob's machine before any push: his claim alone, unconfirmed.
    before = replay([Entry(made, 1), Entry(bob)]).items[ITEM]
    assert (before.holder, before.confirmed) == ("bob", False)
    # Ann's push lands first: she holds it, and bob's claim is lost, whatever the clocks say.
    found = replay([Entry(made, 1), Entry(ann, 2), Entry(bob, 3)])
    assert (found.items[ITEM].holder, found.items[ITEM].confirmed) == ("ann", True)
    assert found.lost == (
        Lost(bob.name, ITEM, (
            f"bob's claim of {ITEM} ({bob.name}) at epoch 0: lost to ann's claim ({ann.name}), "
            "first on the remote")),
    )  # fmt: skip
    # Bob's machine fetched ann's claim before pushing its own: the same board.
    assert replay([Entry(made, 1), Entry(ann, 2), Entry(bob)]).items == found.items


# --- the other rules -----------------------------------------------------------------------------


def test_a_claim_released_by_the_holders_machine_is_released_everywhere() -> None:
    made = create()
    claim = op(B, "claim", 2, author="run:x1")
    released = op(B, "release", 3, epoch=1, author="bob", counted=True, reason="run:x1 died")
    stranger = op(C, "release", 3, epoch=1, author="cat")
    found = replay(pushed(made, claim, stranger, released))
    item = found.items[ITEM]
    assert (item.status, item.holder, item.releases, item.reason) == (
        "pending",
        None,
        1,
        "run:x1 died",
    )
    assert found.lost == (
        Lost(stranger.name, ITEM, (
            f"cat's release of {ITEM} ({stranger.name}) at epoch 1: it is held by run:x1, and "
            "only its holder (or its holder's machine) lets it go")),
    )  # fmt: skip


def test_an_operation_of_an_epoch_never_reached_or_of_no_item_is_lost() -> None:
    made = create()
    ahead = op(B, "claim", 2, epoch=3)
    orphan = op(B, "update", 2, item=f"{C}.4", title="x")
    found = replay(pushed(made, ahead, orphan))
    assert found.items[ITEM].status == "pending"
    assert found.lost == tuple(sorted([
        Lost(ahead.name, ITEM, (
            f"bob's claim of {ITEM} ({ahead.name}) at epoch 3: {ITEM} never reached that epoch "
            "(it is at 0)")),
        Lost(orphan.name, f"{C}.4", f"{orphan.name}: no operation creates {C}.4: it is not "
                                    "replayed"),
    ]))  # fmt: skip


def test_no_operation_raises_the_level_an_item_runs_at_above_its_authors() -> None:
    made = create(level="edit")
    lowered = op(B, "update", 5, level="read-only", author="mcp:codex:7", description="x")
    raised = op(C, "update", 6, level="full", title="y")
    item = replay(pushed(made, lowered, raised)).items[ITEM]
    assert (item.level, item.level_by) == ("read-only", "mcp:codex:7")
    # Another machine's operations are held to what this machine lets them set.
    other = create(level="full")
    remote = replay(pushed(other), ceiling=lambda o: "full" if o == B else "edit")
    assert remote.items[other.item].level == "edit"


def test_comments_are_kept_in_the_clocks_order_whoever_holds_the_item_and_change_nothing_else() -> (
    None
):
    made = create()
    claim = op(A, "claim", 2)
    late = op(B, "comment", 9, text="seen on B")
    early = op(B, "comment", 3, epoch=1, text="first")
    held = replay(pushed(made, claim, late, early)).items[ITEM]
    assert [(said.author, said.text, said.name) for said in held.comments] == [
        ("bob", "first", early.name),
        ("bob", "seen on B", late.name),
    ]
    assert (held.status, held.holder, held.epoch) == ("in_progress", "ann", 1)
    lost = replay(pushed(op(B, "comment", 1, item=f"{C}.1", text="to nothing"))).lost
    assert [each.why for each in lost] == [f"{B}/3: no operation creates {C}.1: it is not replayed"]


def test_a_failed_item_reopens_and_its_releases_start_again() -> None:
    made = create()
    claim = op(A, "claim", 2)
    failed = op(A, "finish", 3, epoch=1, status="failed", reason="It broke")
    reopened = op(B, "reopen", 4, epoch=2)
    item = replay(pushed(made, claim, failed, reopened)).items[ITEM]
    # The reason it failed goes with the reopen, as the store clears it (update --status pending).
    assert (item.status, item.holder, item.reason, item.epoch) == ("pending", None, None, 3)


# --- properties: any order, any duplicates; a confirmed transition stays ---------------------------

# --- the store's rules, as replay applies them to what arrives ----------------------------------


def test_7_a_claim_of_an_item_whose_dependency_is_not_completed_before_it_is_lost() -> None:
    """The store refuses to claim a blocked item; replay makes such a claim lost, and takes
    one made after the dependency's finish, in the log's order (the first on the remote)."""
    first, second = create(), create(blocked_by=[ITEM])
    waits = f"{A}.2"
    early = op(B, "claim", 5, item=waits)
    done = op(A, "finish", 6, status="completed", answer="ok")
    found = replay(pushed(first, second, early, done))
    assert found.items[waits].status == "pending"
    assert found.lost == (
        Lost(early.name, waits, (
            f"bob's claim of {waits} ({early.name}) at epoch 0: it waits on {ITEM}, which no "
            "finish before it completed (an item is claimed, reassigned or completed once its "
            "dependencies are)")),
    )  # fmt: skip
    # Pushed after the finish, the same claim holds; so does one not yet pushed (after it).
    assert replay(pushed(first, second, done, early)).items[waits].status == "in_progress"
    on_remote = pushed(first, second, done)
    assert replay([*on_remote, Entry(early)]).items[waits].holder == "bob"
    # A finish pushed later never overturns what a confirmed claim needed: it needed it first.
    later = replay(pushed(first, second, early, done))
    assert later.items[ITEM].status == "completed"
    assert later.items[waits].status == "pending"


def test_8_a_reassign_and_a_completion_wait_on_dependencies_too_and_a_failure_does_not() -> None:
    first, second = create(), create(blocked_by=[ITEM])
    waits = f"{A}.2"
    give = op(B, "reassign", 5, item=waits, to="cat")
    finish = op(B, "finish", 6, item=waits, status="completed", answer="done")
    fail = op(B, "finish", 7, item=waits, status="failed", reason="gave up")
    found = replay(pushed(first, second, give, finish, fail))
    assert (found.items[waits].status, found.items[waits].reason) == ("failed", "gave up")
    assert [each.name for each in found.lost] == [give.name, finish.name]
    # A dependency the item no longer has (removed before the claim) does not hold it.
    loose = op(A, "update", 8, item=waits, blocked_by={"remove": [ITEM]})
    claim = op(B, "claim", 9, item=waits)
    assert replay(pushed(first, second, loose, claim)).items[waits].holder == "bob"


def test_9_a_dependency_that_has_not_arrived_waits_and_one_that_arrives_completed_does_not() -> (
    None
):
    other = f"{B}.1"
    made = create(blocked_by=[other])
    claim = op(A, "claim", 5)
    assert replay(pushed(made, claim)).items[ITEM].status == "pending"
    theirs = op(B, "create", 1, item=other, title="Theirs")
    done = op(B, "finish", 2, item=other, status="completed", answer="ok")
    found = replay(pushed(theirs, done, made, claim))
    assert (found.items[ITEM].status, found.items[ITEM].blocked_by) == ("in_progress", (other,))


def test_10_a_loop_of_parents_made_by_two_machines_leaves_each_item_of_it_part_of_none() -> None:
    one, two, three = create(), create(), create(parent=f"{A}.2")
    ann = op(A, "update", 5, item=ITEM, parent=f"{A}.2")
    bob = op(B, "update", 5, item=f"{A}.2", parent=ITEM)  # concurrently: a loop
    found = replay(pushed(one, two, three, bob, ann))
    assert [found.items[f"{A}.{n}"].parent for n in (1, 2, 3)] == [None, None, f"{A}.2"]
    assert found == replay(pushed(one, two, three, ann, bob))


def test_11_a_parent_chain_deeper_than_the_store_allows_is_cut_where_it_passes_the_limit() -> None:
    from start.base.inputs import DEPTH

    made = [create()]
    for _ in range(DEPTH + 5):
        made.append(create(parent=made[-1].item))
    found = replay(pushed(*reversed(made)))
    parents = [found.items[each.item].parent for each in made]
    # The 101st item would be 101 levels deep: it is at the top, and what is part of it under it.
    assert parents[DEPTH] is None
    assert parents[:DEPTH] == [None, *(each.item for each in made[: DEPTH - 1])]
    assert parents[DEPTH + 1 :] == [each.item for each in made[DEPTH:-1]]


def test_12_a_cycle_of_dependencies_completes_none_of_its_items() -> None:
    one, two = create(blocked_by=[f"{A}.2"]), create(blocked_by=[ITEM])
    done = [op(A, "finish", 5, item=each.item, status="completed") for each in (one, two)]
    found = replay(pushed(one, two, *done))
    assert [found.items[each.item].status for each in (one, two)] == ["pending", "pending"]


def test_a_hostile_cycle_of_thousands_of_dependencies_is_replayed_without_recursion() -> None:
    count = 5000
    made = [create(blocked_by=[f"{A}.{n % count + 1}"]) for n in range(1, count + 1)]
    claims = [op(B, "claim", 9, item=each.item) for each in made]
    found = replay(pushed(*made, *claims))
    assert {each.status for each in found.items.values()} == {"pending"}
    assert len(found.lost) == count


_ORIGINS = (A, B, C)
_NAMES = ("ann", "bob", "cat")


@st.composite
def logs(draw: st.DrawFn) -> list[Entry]:
    """A log of three machines: a few items, then transitions and updates of them at random
    epochs, clocks and authors, some pushed (in a random order) and some not."""
    seqs = dict.fromkeys(_ORIGINS, 0)
    made: list[Op] = []

    def add(origin: str, kind: str, item: str, epoch: int, fields: dict[str, Any]) -> None:
        seqs[origin] += 1
        wall = draw(st.integers(0, 20))
        author = draw(st.sampled_from(_NAMES))
        level = draw(st.sampled_from(("read-only", "edit", "full")))
        made.append(Op(origin, seqs[origin], Clock(wall), author, level, kind, item, epoch, fields))

    keys = []
    for origin in draw(st.lists(st.sampled_from(_ORIGINS), min_size=1, max_size=3)):
        keys.append(f"{origin}.{seqs[origin] + 1}")
        add(origin, "create", keys[-1], 0, {"title": draw(st.sampled_from("xyz"))})
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(
            ("update", "comment", "claim", "reassign", "release", "finish", "reopen", "archive",
             "unarchive")
        ))  # fmt: skip
        add(draw(st.sampled_from(_ORIGINS)), kind, draw(st.sampled_from(keys)),
            draw(st.integers(0, 4)), draw(_fields(kind, keys)))  # fmt: skip
    positions = draw(st.permutations(range(1, len(made) + 1)))
    pushed = draw(st.lists(st.booleans(), min_size=len(made), max_size=len(made)))
    return [
        Entry(each, position if on else None)
        for each, position, on in zip(made, positions, pushed, strict=True)
    ]


def _fields(kind: str, keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    words = st.sampled_from(("a", "b", "c"))
    if kind == "update":
        return st.fixed_dictionaries({}, optional={
            "title": words,
            "metadata": st.dictionaries(words, st.none() | st.integers(0, 3), max_size=2),
            "labels": st.sampled_from(({"add": ["a"]}, {"remove": ["a"]}, {"add": ["b"]})),
            "blocked_by": st.sampled_from(keys).map(lambda k: {"add": [k]}),
            "parent": st.none() | st.sampled_from(keys),
        })  # fmt: skip
    if kind == "comment":
        return words.map(lambda text: {"text": text})
    if kind == "reassign":
        return st.sampled_from(_NAMES).map(lambda name: {"to": name})
    if kind == "release":
        return st.booleans().map(lambda counted: {"counted": counted})
    if kind == "finish":
        return st.sampled_from(
            ({"status": "completed", "answer": "ok"}, {"status": "failed", "reason": "no"})
        )
    return st.just({})


@settings(max_examples=300)
@given(log=logs(), seed=st.integers(0, 2**32))
def test_the_same_operations_in_any_order_duplicated_make_the_same_board(
    log: list[Entry], seed: int
) -> None:
    rng = random.Random(seed)
    again = log + rng.sample(log, k=len(log) // 2)
    # A pushed operation this machine also holds as not yet pushed (its own, before the fetch).
    again += [entry._replace(position=None) for entry in log[:2]]
    rng.shuffle(again)
    assert replay(again) == replay(log)


@settings(max_examples=300)
@given(log=logs(), later=logs())
def test_a_confirmed_transition_is_never_overturned_by_what_arrives_after_it(
    log: list[Entry], later: list[Entry]
) -> None:
    """Operations that reach the remote after the log (positions after its own) or are not yet
    pushed never change who won an epoch whose winner was pushed."""
    before = replay(log)
    last = max((e.position or 0 for e in log), default=0)
    offset = {A: 1000, B: 2000, C: 3000}  # their own operations: names of their own
    arriving = [
        Entry(
            e.op._replace(seq=e.op.seq + offset[e.op.origin], item=_item(e.op.item, log)),
            None if e.position is None else e.position + last,
        )
        for e in later
        if e.op.kind != "create"
    ]
    after = replay(log + arriving)
    positions = {e.op.name: e.position for e in log}
    for key, item in before.items.items():
        confirmed = 0
        for name in item.transitions:
            if positions[name] is None:
                break
            confirmed += 1
        assert after.items[key].transitions[:confirmed] == item.transitions[:confirmed]


def _item(key: str, log: list[Entry]) -> str:
    """`key` when the log has it, else the first item of the log: later operations are of the
    log's items."""
    keys = sorted(e.op.item for e in log if e.op.kind == "create")
    return key if key in keys else keys[0]


def test_replay_of_nothing_is_an_empty_board() -> None:
    assert replay([]) == Replayed({}, ())
