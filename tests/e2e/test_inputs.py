"""Hostile values at both doors, through real processes (issue 44, findings 4 to 8 and 10): ids
and counts of 2**63 and more, JSON nested 5,000 deep, lone surrogates, NaN and Infinity, paths
and filters with bytes that are not UTF-8, and metadata without end. `python -m start` in a
subprocess for the command line, the MCP SDK's own client on `start mcp` over stdio for the
agents' door (raw JSON-RPC where the SDK's client cannot send the value: NaN). Each refusal is a
usage error (exit 2) or an isError result, the same sentence at both doors; never exit 70."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from start.base.inputs import quoted
from start.board import file as boardfile
from start.board.oplog import ALPHABET
from tests.conftest import REPO, run_start, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

HUGE = str(2**63)
# A prefix of an origin 100,000 characters long (an origin has 12).
LONG_PREFIX = "item-" + "k" * 100_000 + ".1"
ID_RULE = (
    "is not an item id: ids read item-N (or N), and item-PREFIX.N for another machine's item (as "
    "the board shows it), N a number of 1 to 18 digits that does not start with 0"
)
CONFIG = f'[settings]\ndefault_agent = "fake"\n\n{agent("fake")}'


@pytest.fixture
def project(isolated: Path) -> Path:
    """A git repository, and a global config whose agent is a stand-in headless one."""
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def start(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_start(*args, cwd=cwd)


def start_bytes(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`start`, its output read as bytes: a path that is not UTF-8 is written as its bytes where
    stdout takes them (issue 44's finding 9 is how every stream takes any text)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    found = subprocess.run(
        [sys.executable, "-m", "start", *args], cwd=cwd, env=env, capture_output=True, timeout=60
    )
    out, err = (os.fsdecode(stream) for stream in (found.stdout, found.stderr))
    return subprocess.CompletedProcess(found.args, found.returncode, out, err)


def strict(text: str) -> Any:
    """JSON as JSON.parse and jq read it: no NaN, no Infinity."""

    def refuse(word: str) -> Any:
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def mcp(cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str, Any]]:
    """Each call of the MCP SDK's client on a real `start mcp` in `cwd`: (isError, its text, its
    structured content); one session for them all, so a call that killed the server fails the
    ones after it."""
    import anyio
    from mcp import Client, StdioServerParameters

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    found: list[tuple[bool, str, Any]] = []

    async def session() -> None:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp"], env=env, cwd=str(cwd)
        )
        async with Client(parameters, mode="legacy") as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = getattr(result.content[0], "text", "")
                found.append((bool(result.is_error), text, result.structured_content))

    anyio.run(session)
    return found


def raw_mcp(cwd: Path, lines: list[str]) -> list[dict[str, Any]]:
    """Tool calls written as JSON-RPC text as they are (the SDK's client writes no NaN) to a real
    `start mcp` after the handshake, each answered before the next is sent; the responses."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "start", "mcp"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies = []
    try:
        sent = [json.dumps(hello), '{"jsonrpc": "2.0", "method": "notifications/initialized"}']
        sent += [
            f'{{"jsonrpc": "2.0", "id": {n}, "method": "tools/call", "params": {line}}}'
            for n, line in enumerate(lines, 1)
        ]
        for line in sent:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            if '"id"' not in line:
                continue
            while True:  # until its answer: a line that is a response
                read = proc.stdout.readline()
                assert read, f"start mcp ended: {proc.stderr.read() if proc.stderr else ''}"
                reply = json.loads(read)
                if "method" not in reply:
                    replies.append(reply)
                    break
    finally:
        proc.stdin.close()
        code = proc.wait(timeout=60)
    assert code == 0
    return replies[1:]


def old_item(project: Path, seq: int, **columns: Any) -> None:
    """Write columns of an item as an earlier start left them (its doors let such values in),
    in a board as that start left it: without the migrations this one added (m003_text keeps
    the texts as this start does)."""
    _, path = boardfile.location(str(project))
    with sqlite3.connect(path) as connection:
        for column, value in columns.items():
            connection.execute(f"UPDATE items SET {column} = ? WHERE seq = ?", (value, seq))
        connection.execute("DELETE FROM migrations WHERE name = 'm003_text'")
        connection.execute("PRAGMA user_version = 2")


# --- finding 4: ids and counts of 2**63 and more ------------------------------------------------

ITEM_ID = f"invalid value for ID: '{HUGE}' {ID_RULE}"
RUN_ID = (
    f"invalid value for [ID]: '{HUGE}' is not a run id: a run id is a number of 1 to 18 digits "
    "that does not start with 0 ('start log' lists the runs)"
)
COUNT = f"{HUGE} is not a whole number from 1 to 999999999999999999"
# The 16 commands that exited 70 on an id or a count of 2**63: (arguments, the error, help of).
HUGE_VALUES = [
    (["board", "show", HUGE], ITEM_ID, "board show"),
    (["board", "claim", HUGE], ITEM_ID, "board claim"),
    (["board", "done", HUGE], ITEM_ID, "board done"),
    (["board", "fail", HUGE], ITEM_ID, "board fail"),
    (["board", "watch", HUGE], ITEM_ID, "board watch"),
    (["board", "update", HUGE, "-d", "x"], ITEM_ID, "board update"),
    (["board", "reassign", HUGE, "bob"], ITEM_ID, "board reassign"),
    (["board", "add", "x", "--after", HUGE], f"invalid value for --after: '{HUGE}' {ID_RULE}", "board add"),
    (["board", "update", "1", "--after", HUGE], f"invalid value for --after: '{HUGE}' {ID_RULE}", "board update"),
    (["board", "update", "1", "-d", "x", "--epoch", HUGE], f"invalid value for --epoch: {COUNT}", "board update"),
    (["board", "done", "1", "--epoch", HUGE], f"invalid value for --epoch: {COUNT}", "board done"),
    (["board", "fail", "1", "--epoch", HUGE], f"invalid value for --epoch: {COUNT}", "board fail"),
    (["board", "show", f"item-k3f9.{HUGE}"], f"invalid value for ID: 'item-k3f9.{HUGE}' {ID_RULE}", "board show"),
    (["board", "claim", LONG_PREFIX], f"invalid value for ID: {quoted(LONG_PREFIX)} {ID_RULE}", "board claim"),
    (["board", "comment", "ITEM-K3F9.1", "x"], f"invalid value for ID: 'ITEM-K3F9.1' {ID_RULE}", "board comment"),
    (["board", "add", "x", "--after", "item-k3fl.1"], f"invalid value for --after: 'item-k3fl.1' {ID_RULE}", "board add"),
    (["log", "show", HUGE], RUN_ID, "log show"),
    (["log", "-n", HUGE], f"invalid value for -n: {COUNT}", "log"),
    (["again", HUGE], RUN_ID, "again"),
    (["continue", "--run", HUGE, "more"], RUN_ID.replace("[ID]", "--run"), "continue"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message", "command"), HUGE_VALUES)
def test_an_id_or_a_count_of_2_63_is_a_usage_error_naming_the_rule(
    project: Path, args: list[str], message: str, command: str
) -> None:
    assert start(project, "board", "add", "one").returncode == 0
    result = start(project, *args)
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        f"start: {message}\nhint: run 'start {command} --help' for usage\n",
    )


def test_both_doors_refuse_an_id_of_2_63_in_the_same_words(project: Path) -> None:
    command_line = start(project, "board", "show", HUGE).stderr.splitlines()[0]
    found = mcp(project, [("board_tasks_get", {"id": HUGE}), ("board_tasks_list", {})])
    (refused, told, _), (_, _, listing) = found
    assert (refused, told) == (True, f"invalid arguments at id: '{HUGE}' {ID_RULE}")
    assert command_line == f"start: invalid value for ID: '{HUGE}' {ID_RULE}"
    assert listing == {"items": [], "total": 0}  # the server went on


# Text that looks like an id, or nearly, and any bytes a command line can hold but NUL; none
# starts with "-", which is an option to click.
WORDS = (
    st.from_regex(r"\A(item-)?([0-9a-zA-Z]{0,14}\.)?(0|[1-9])[0-9]{0,21}\Z")
    | st.binary(min_size=1, max_size=12).map(lambda data: os.fsdecode(data.replace(b"\0", b"")))
).filter(lambda word: word and not word.startswith("-"))


def is_id(word: str) -> bool:
    prefix, dot, digits = word.removeprefix("item-").rpartition(".")
    if dot and not (
        word.startswith("item-") and 4 <= len(prefix) <= 12 and set(prefix) <= set(ALPHABET)
    ):
        return False  # item-PREFIX.N: PREFIX 4 to 12 of an origin's characters, lowercase
    return digits.isascii() and digits.isdigit() and digits[0] != "0" and len(digits) <= 18


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(word=WORDS)
def test_any_id_is_read_iff_it_follows_the_rule_and_never_crashes(project: Path, word: str) -> None:
    shown = start(project, "board", "show", word)
    assert shown.returncode == (4 if is_id(word) else 2), shown.stderr
    run = start(project, "log", "show", word)
    expected = 4 if is_id(word) and not word.startswith("item-") else 2
    assert run.returncode == expected, run.stderr


# --- finding 5: JSON nested 5,000 deep in --meta -------------------------------------------------

DEEP = "metadata is nested deeper than 100 levels of objects and arrays; start keeps at most 100"


def test_deep_json_in_meta_is_refused_as_the_mcp_door_refuses_it(project: Path) -> None:
    deep = start(project, "board", "add", "x", "--meta", "a=" + "[" * 5000 + "]" * 5000)
    assert (deep.returncode, deep.stderr) == (2, f"start: {DEEP}\n")
    value: dict[str, Any] = {}
    for _ in range(100):  # with the metadata's own object: 101 deep
        value = {"a": value}
    found = mcp(project, [("board_tasks_create", {"title": "x", "metadata": value})])
    assert found[0][:2] == (True, DEEP)
    fits = start(project, "board", "add", "y", "--meta", "a=" + "[" * 99 + "]" * 99)
    assert fits.returncode == 0, fits.stderr
    assert start(project, "board").stdout.count("item-") == 1  # no item was made of the deep ones


# --- finding 6: a lone surrogate --------------------------------------------------------------

SURROGATE = (
    "metadata at 'x': '\\ud800' holds a lone surrogate (a \\ud800-\\udfff escape without its "
    "pair), which is not Unicode text; give valid text"
)


def test_a_lone_surrogate_is_refused_and_one_an_old_board_kept_is_shown(project: Path) -> None:
    refused = start(project, "board", "add", "x", "--meta", 'x="\\ud800"')
    assert (refused.returncode, refused.stderr) == (2, f"start: {SURROGATE}\n")
    assert start(project, "board", "add", "old").returncode == 0
    # Bytes that are not UTF-8 on the command line are U+FFFD, as in every text (the text rule).
    made = start(project, "board", "add", os.fsdecode(b"caf\xe9"), "--meta", os.fsdecode(b"k=\xff"))
    assert made.stdout == "item-2\n", made.stderr
    # An earlier start stored a lone surrogate as its JSON escape; then `show --json` exited 70,
    # and board_tasks_get killed `start mcp`.
    old_item(
        project,
        1,
        metadata='{"x": "\\ud800", "\\udcff": ["\\udfff"]}',
        title="old \ud800".encode("utf-8", "surrogatepass"),
    )
    shown = start(project, "board", "show", "1", "--json")
    assert shown.returncode == 0, shown.stderr
    data = strict(shown.stdout)
    assert (data["title"], data["metadata"]) == (
        "old \ufffd",
        {"x": "\ufffd", "\ufffd": ["\ufffd"]},
    )
    assert start(project, "board", "show", "1").returncode == 0
    got, again = mcp(project, [("board_tasks_get", {"id": "1"}), ("board_tasks_get", {"id": "2"})])
    assert (got[0], got[2]["title"], got[2]["metadata"]) == (
        False,
        "old \ufffd",
        {"x": "\ufffd", "\ufffd": ["\ufffd"]},
    )
    assert (again[0], again[2]["title"], again[2]["metadata"]) == (
        False,
        "caf\ufffd",
        {"k": "\ufffd"},
    )


# --- finding 7: NaN, Infinity and 1e999 --------------------------------------------------------


def not_finite(word: str) -> str:
    return (
        f"metadata at 'x': {word} is not a number JSON can hold; give a finite number (or "
        f'"{word}" as text)'
    )


@pytest.mark.parametrize(
    ("value", "word"), [("NaN", "NaN"), ("Infinity", "Infinity"), ("-1e999", "-Infinity")]
)
def test_a_number_json_cannot_hold_is_refused_at_both_doors(
    project: Path, value: str, word: str
) -> None:
    refused = start(project, "board", "add", "x", "--meta", f"x={value}")
    assert (refused.returncode, refused.stderr) == (2, f"start: {not_finite(word)}\n")
    calls = [
        f'{{"name": "board_tasks_create", "arguments": {{"title": "x", "metadata": {{"x": {value}}}}}}}',
        '{"name": "board_tasks_list", "arguments": {}}',
    ]
    made, listing = raw_mcp(project, calls)
    assert made["result"]["isError"] is True
    assert made["result"]["content"][0]["text"] == not_finite(word)
    assert listing["result"]["structuredContent"]["total"] == 0
    as_text = start(project, "board", "add", "x", "--meta", f'x="{value}"', "--json")
    assert strict(as_text.stdout)["metadata"] == {"x": value}


def test_an_old_board_s_nan_comes_out_as_json(project: Path) -> None:
    start(project, "board", "add", "x")
    old_item(project, 1, metadata='{"n": NaN, "i": Infinity, "m": -Infinity}')
    shown = start(project, "board", "show", "1", "--json")
    assert shown.returncode == 0, shown.stderr
    assert strict(shown.stdout)["metadata"] == {"n": "NaN", "i": "Infinity", "m": "-Infinity"}
    (got,) = raw_mcp(project, ['{"name": "board_tasks_get", "arguments": {"id": "1"}}'])
    assert strict(got["result"]["content"][0]["text"])["metadata"]["n"] == "NaN"
    # SQLite's JSON reads no NaN: such metadata is stored as it is shown, then merged.
    changed = start(project, "board", "update", "1", "--meta", "n=null", "--json")
    assert changed.returncode == 0, changed.stderr
    assert strict(changed.stdout)["metadata"] == {"i": "Infinity", "m": "-Infinity"}


# --- finding 8: a path and filters with bytes that are not UTF-8 ---------------------------------


def test_a_project_whose_path_is_not_utf8_has_a_board_and_a_history(project: Path) -> None:
    odd = Path(os.fsdecode(os.fsencode(project) + b"/x\xff"))
    odd.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=odd, check=True)
    byte = os.fsdecode(b"\xff")
    steps: list[tuple[list[str], int, Callable[[str], bool]]] = [
        (["board", "add", "one"], 0, lambda out: out == "item-1\n"),
        (["board", "add", "two", "--prompt", "say hi", "-a", "fake"], 0, lambda out: True),
        (["board"], 0, lambda out: "item-2" in out),
        (["board", "--json"], 0, lambda out: len(strict(out)) == 2),
        (["board", "show", "1", "--json"], 0, lambda out: strict(out)["title"] == "one"),
        (["board", "claim", "1"], 0, lambda out: out == "item-1\n"),
        (["board", "update", "1", "--meta", "a=1"], 0, lambda out: True),
        (["board", "done", "1", "--answer", "ok"], 0, lambda out: True),
        (["board", "watch", "1"], 0, lambda out: out == "ok\n"),
        (["board", "add", "three"], 0, lambda out: True),
        (["board", "reassign", "3", "bob"], 0, lambda out: True),
        (["board", "fail", "3", "--as", "bob"], 0, lambda out: True),
        (["board", "show", "9"], 4, lambda out: True),
        (["board", "--assignee", byte], 0, lambda out: True),
        (["board", "run", "--until-empty"], 0, lambda out: True),
        (["board", "show", "2", "--json"], 0, lambda out: strict(out)["status"] == "completed"),
        (["prompt", "--print", "-q", f"hello {byte}"], 0, lambda out: out == "ANSWER: hello \ufffd\n"),
        (["log"], 0, lambda out: "x\\udcff" in out),
        (["log", "--json"], 0, lambda out: len(strict(out)) == 2),
        (["log", "show", "--json"], 0, lambda out: strict(out)["prompt"] == "hello \ufffd"),
        (["log", "--project", str(odd), "--json"], 0, lambda out: len(strict(out)) == 2),
        (["log", "--project", odd.name, "--json"], 0, lambda out: len(strict(out)) == 2),
        (["log", "--project", f"x{byte}z", "--json"], 0, lambda out: strict(out) == []),
        (["log", "--search", byte, "--json"], 0, lambda out: len(strict(out)) == 1),
        (["log", "--task", byte], 0, lambda out: True),
        (["log", "--agent", byte], 0, lambda out: True),
    ]  # fmt: skip
    for args, code, check in steps:
        result = start_bytes(odd, *args)
        assert (result.returncode, check(result.stdout)) == (code, True), (args, result)
    found = mcp(odd, [("board_tasks_create", {"title": "m"}), ("board_tasks_get", {"id": "9"})])
    assert found[0][2]["id"] == "item-4"
    assert found[1][:2] == (
        True,
        f"no item 9 on the board of {os.path.realpath(project)}/x\ufffd (ids go from item-1 to "
        "item-4; 'start "
        "board' lists them)",
    )
    assert start(project, "board").stdout == ""  # another project's board: untouched


# --- finding 10: metadata without end -----------------------------------------------------------

MERGED = (
    "item-1's metadata would take 80,015 bytes as JSON after this change, over the limit of "
    "65,536; delete keys (a null value deletes its key)"
)


def test_metadata_is_bounded_in_each_change_and_in_all(project: Path) -> None:
    big = {"x": "y" * 70_000}
    half = "y" * 40_000
    found = mcp(
        project,
        [
            ("board_tasks_create", {"title": "x", "metadata": big}),
            ("board_tasks_create", {"title": "x", "metadata": {"x": half}}),
            ("board_tasks_update", {"id": "1", "metadata": {"z": half}}),
            ("board_tasks_update", {"id": "1", "metadata": {"x": None, "z": half}}),
        ],
    )
    assert [(refused, text) for refused, text, _ in found[:3]] == [
        (
            True,
            "metadata takes 70,008 bytes as JSON, over the limit of 65,536; keep long text in "
            "the description",
        ),
        (False, found[1][1]),
        (True, MERGED),
    ]
    assert found[3][2]["metadata"] == {"z": half}  # a null deletes first: it fits
    again = start(project, "board", "update", "1", "--meta", f"x={half}")
    assert (again.returncode, again.stderr) == (2, f"start: {MERGED}\n")
    assert strict(start(project, "board", "show", "1", "--json").stdout)["metadata"] == {"z": half}
