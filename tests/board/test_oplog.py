"""The operations of the log across machines (start.board.oplog): one byte form, read back
strictly from untrusted bytes with a message naming the operation, the hybrid clock, and the
union that refuses forged and rewritten names (docs/board-sync-design.md)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.board import oplog
from start.board.oplog import Clock, Op, OperationError, Refused, decode, encode, union

A = "aaaaaaaaaaaa"
B = "bbbbbbbbbbbb"


def op(origin: str = A, seq: int = 1, kind: str = "create", **changes: Any) -> Op:
    fields: dict[str, Any] = {"title": "Fix it"} if kind == "create" else {}
    made = Op(origin, seq, Clock(1_000, 0), "ann", "full", kind, f"{origin}.1", 0, fields)
    return made._replace(**changes)


def raw(**changes: Any) -> bytes:
    """The byte form of a valid create, with `changes` made to its JSON data."""
    found = oplog.data(op())
    found.update(changes)
    return json.dumps(found, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def refused(data: bytes) -> str:
    with pytest.raises(OperationError) as caught:
        decode(data, "ops/aaaaaaaaaaaa/0/1")
    return str(caught.value)


def test_an_operation_is_one_line_of_sorted_compact_json() -> None:
    assert encode(op()) == (
        b'{"author":"ann","clock":[1000,0],"epoch":0,"fields":{"title":"Fix it"},'
        b'"item":"aaaaaaaaaaaa.1","kind":"create","level":"full","origin":"aaaaaaaaaaaa",'
        b'"seq":1,"v":1}'
    )
    assert op().name == "aaaaaaaaaaaa/1"


_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
_META = st.dictionaries(
    _TEXT,
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**60), 2**60) | _TEXT
        | st.floats(allow_nan=False, allow_infinity=False),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
        max_leaves=8,
    ),
    max_size=4,
)  # fmt: skip


@given(title=_TEXT.filter(bool), description=_TEXT, metadata=_META, wall=st.integers(0, 2**47 - 1))
def test_any_operation_reads_back_as_it_was_written_byte_for_byte(
    title: str, description: str, metadata: dict[str, Any], wall: int
) -> None:
    made = op(
        clock=Clock(wall, 3),
        fields={"title": title, "description": description, "metadata": metadata},
    )
    encoded = encode(made)
    assert decode(encoded, "x") == made
    assert encode(decode(encoded, "x")) == encoded


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff", "not JSON in UTF-8 (UnicodeDecodeError)"),
        (b"[1", "not JSON in UTF-8 (JSONDecodeError)"),
        (b"[" * 200 + b"]" * 200, "not JSON in UTF-8 (TooDeepError)"),
        (b"[]", "not a JSON object"),
        (raw(v=2), "format version 2, and this start reads version 1; it is not read (a later start reads it)"),
        (raw(extra=1), "unknown 'extra'"),
        (raw(origin="AAAAAAAAAAAA"),
         "origin 'AAAAAAAAAAAA' is not 12 characters of 0123456789abcdefghjkmnpqrstvwxyz"),
        (raw(seq=0), "seq 0 is not a whole number from 1 to 999999999999999999"),
        (raw(seq=True), "seq true is not a whole number from 1 to 999999999999999999"),
        (raw(clock=[2**47, 0]),
         "clock [140737488355328, 0] is not [wall, count], wall 0 to 140737488355327 and count 0 "
         "to 2147483647"),
        (raw(author="a b"),
         "author 'a b' is not a name: 1 to 80 letters, digits and ._@+-:"),
        (raw(level="root"), "level 'root' is none of read-only, edit, full"),
        (raw(kind="delete"),
         "kind 'delete' is none of create, update, comment, claim, reassign, release, finish, "
         "reopen, archive, unarchive"),
        (raw(item="item-3"), "item 'item-3' is not an item's key (ORIGIN.N)"),
        (raw(item=f"{B}.1"),
         "it creates 'bbbbbbbbbbbb.1', an item of another origin: an origin creates only items "
         "of its own (aaaaaaaaaaaa.N)"),
        (raw(fields={"title": "x", "status": "completed"}),
         "create takes no field 'status' (it takes: blocked_by, description, labels, metadata, "
         "parent, priority, run, title)"),
        (raw(fields={}), "create needs the field title"),
        (raw(fields={"title": ""}), "fields.title: not text of 1 to 1,000 characters"),
        (raw(fields={"title": "x", "priority": 5}),
         "fields.priority: not a whole number from 0 to 4"),
        (raw(fields={"title": "x", "labels": ["b", "a"]}),
         "fields.labels: not sorted without repeats"),
        (raw(fields={"title": "x", "labels": ["a b"]}),
         "fields.labels: 'a b' is not a label: a label is 1 to 50 characters, without spaces "
         "or commas"),
        (raw(fields={"title": "x", "blocked_by": ["item-1"]}),
         "fields.blocked_by: 'item-1' is not an item's key (ORIGIN.N)"),
        (raw(fields={"title": "x", "metadata": {"a": {"b": 1e400}}}),
         "fields.metadata: metadata at 'a/b': Infinity is not a number JSON can hold; give a "
         'finite number (or "Infinity" as text)'),
        (raw(fields={"title": "x", "run": "claude"}),
         "fields.run: not a JSON object (an ask) or null"),
        (raw(fields={"title": "x", "run": {"prompt": "a"}}).replace(b'"a"', b'"\\ud800"'),
         "fields.run: not JSON start can write (a lone surrogate, or a number not finite)"),
        (raw(fields={"title": "x", "run": {"n": 1e400}}),
         "fields.run: not JSON start can write (a lone surrogate, or a number not finite)"),
        (raw(fields={"title": "x"}).replace(b":0,", b":0.0,", 1),
         "epoch 0.0 is not a whole number from 0 to 999999999999999999"),
        (raw().replace(b'"ann"', b'"\\u0061nn"'),
         "not in the one byte form start writes (keys sorted, compact, UTF-8, each number as "
         "start writes it)"),
        (raw().replace(b",", b", ", 1),
         "not in the one byte form start writes (keys sorted, compact, UTF-8, each number as "
         "start writes it)"),
    ],
)  # fmt: skip
def test_bytes_that_are_not_an_operation_are_refused_naming_it_and_why(
    data: bytes, message: str
) -> None:
    told = message if message.endswith(")") and "later" in message else f"{message}; it is not read"
    assert refused(data) == f"operation ops/aaaaaaaaaaaa/0/1: {told}"


def test_the_fields_of_each_kind_are_checked() -> None:
    def kind(kind: str, fields: dict[str, Any]) -> str:
        found = oplog.data(op(kind=kind))
        found["fields"] = fields
        return refused(json.dumps(found, sort_keys=True, separators=(",", ":")).encode())

    start = "operation ops/aaaaaaaaaaaa/0/1: "
    assert kind("claim", {"to": "bob"}) == (
        start + "claim takes no field 'to' (it takes: none); it is not read"
    )
    assert kind("finish", {"status": "done"}) == (
        start + "fields.status: 'done' is neither completed nor failed; it is not read"
    )
    assert kind("finish", {"status": "completed", "reason": "x"}) == (
        start + "a finish completed takes answer, not reason; it is not read"
    )
    assert kind("update", {"labels": ["a"]}) == (
        start + 'fields.labels: not {"add": [...], "remove": [...]}; it is not read'
    )
    assert kind("update", {"labels": {"add": ["a"], "remove": ["a"]}}) == (
        start + "fields.labels: adds and removes one element; it is not read"
    )
    assert kind("reassign", {}) == start + "reassign needs the field to; it is not read"
    assert kind("release", {"counted": 1}) == (
        start + "fields.counted: not true or false; it is not read"
    )


def test_an_operation_over_the_limit_is_refused_before_it_is_read() -> None:
    big = b" " * (oplog.MOST_OP_BYTES + 1)
    assert refused(big) == (
        "operation ops/aaaaaaaaaaaa/0/1: 8,388,609 bytes, over the limit of 8,388,608; it is not "
        "read"
    )


def test_start_never_writes_an_operation_it_would_refuse() -> None:
    with pytest.raises(OperationError) as caught:
        encode(op(fields={"title": "x", "priority": 9}))
    assert str(caught.value) == (
        "operation aaaaaaaaaaaa/1: fields.priority: not a whole number from 0 to 4; it is not read"
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


@given(
    st.binary(max_size=100)
    | st.dictionaries(st.sampled_from(sorted(oplog.data(op()))), _JSON).map(
        lambda changes: raw(**changes)
    )
)
def test_any_bytes_are_an_operation_or_refused_never_another_error(data: bytes) -> None:
    with contextlib.suppress(OperationError):
        decode(data, "x")


# --- keys and origins ------------------------------------------------------------------------


def test_an_origin_is_twelve_characters_of_the_alphabet_and_keys_split() -> None:
    made = oplog.new_origin()
    assert oplog.is_origin(made)
    assert oplog.split_key(oplog.key(made, 12)) == (made, 12)
    for wrong in ("item-1", f"{A}.0", f"{A}.01", f"{A}.", "aaaa.1", f"{A}.1x", 3):
        assert oplog.split_key(wrong) is None


# --- the hybrid logical clock ----------------------------------------------------------------


def test_the_clock_follows_the_wall_and_never_goes_back() -> None:
    assert oplog.tick(Clock(10, 4), 20) == Clock(20, 0)
    assert oplog.tick(Clock(10, 4), 10) == Clock(10, 5)
    assert oplog.tick(Clock(10, 4), 3) == Clock(10, 5)  # the wall clock went back
    assert oplog.tick(Clock(10, oplog.MOST_COUNT), 10) == Clock(11, 0)


def test_a_seen_clock_orders_the_next_operation_after_it_unless_it_is_far_ahead() -> None:
    now = 1_000
    seen = oplog.observe(Clock(10, 0), Clock(500, 7), now)
    assert oplog.tick(seen, now) > Clock(500, 7)
    assert oplog.tick(oplog.observe(Clock(10, 0), Clock(900, 7), 100), 100) == Clock(900, 8)
    far = Clock(now + oplog.DRIFT_MS + 1, 0)
    assert oplog.observe(Clock(10, 0), far, now) == Clock(10, 0)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 50), st.integers(0, 5)), max_size=30))
def test_local_clocks_grow_strictly_whatever_the_wall_and_the_seen(
    steps: list[tuple[bool, int, int]],
) -> None:
    clock = Clock(0, 0)
    made: list[Clock] = []
    for local, wall, count in steps:
        if local:
            clock = oplog.tick(clock, wall)
            made.append(clock)
        else:
            clock = oplog.observe(clock, Clock(wall, count), wall)
    assert made == sorted(set(made))


# --- the union --------------------------------------------------------------------------------


def test_the_union_takes_new_operations_and_refuses_forged_and_rewritten_names() -> None:
    mine = op(A, 1)
    theirs = op(B, 1, item=f"{B}.1")
    known = {mine.name: encode(mine)}
    forged = op(A, 2)
    rewritten = mine._replace(fields={"title": "Other"})
    misnamed = op(B, 2, item=f"{B}.2")
    new, refusals = union(
        known,
        [
            (mine.name, encode(mine)),
            (theirs.name, encode(theirs)),
            (theirs.name, encode(theirs)),
            (forged.name, encode(forged)),
            (mine.name, encode(rewritten)),
            ("bbbbbbbbbbbb/9", encode(misnamed)),
            ("bbbbbbbbbbbb/3", b"garbage"),
        ],
        ours=A,
    )
    assert new == {theirs.name: theirs}
    assert refusals == [
        Refused("aaaaaaaaaaaa/2", (
            "operation aaaaaaaaaaaa/2: it names this machine's origin (aaaaaaaaaaaa), and this "
            "machine did not write it: a forged origin; it is not read")),
        Refused("aaaaaaaaaaaa/1", (
            "operation aaaaaaaaaaaa/1: another operation of that name is read already, and a "
            "name is never rewritten; this one is not read (a rewritten log)")),
        Refused("bbbbbbbbbbbb/9", (
            "operation bbbbbbbbbbbb/9: it says it is bbbbbbbbbbbb/2; an operation is read only "
            "under its own name")),
        Refused("bbbbbbbbbbbb/3", (
            "operation bbbbbbbbbbbb/3: not JSON in UTF-8 (JSONDecodeError); it is not read")),
    ]  # fmt: skip
