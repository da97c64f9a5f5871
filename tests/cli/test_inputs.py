"""The command line holds ids, counts, text and metadata to start.base.inputs' rules (start.cli.inputs),
in process: every refusal a usage error in the rule's own words, never an internal error (which
`invoke` fails on). The same through real processes, and the MCP door, are in
tests/e2e/test_inputs.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import invoke

HUGE = str(2**63)
ID_RULE = (
    "is not an item id: ids read item-N (or N), and item-PREFIX.N for another machine's item (as "
    "the board shows it), N a number of 1 to 18 digits that does not start with 0"
)
RUN_RULE = (
    "is not a run id: a run id is a number of 1 to 18 digits that does not start with 0 ('start "
    "log' lists the runs)"
)


COUNT = "is not a whole number from 1 to 999999999999999999"


@pytest.mark.parametrize(
    ("args", "message", "command"),
    [
        (["board", "show", HUGE], f"ID: '{HUGE}' {ID_RULE}", "board show"),
        (["board", "claim", "item-0"], f"ID: 'item-0' {ID_RULE}", "board claim"),
        (["board", "done", "9" * 19], f"ID: '{'9' * 19}' {ID_RULE}", "board done"),
        (["board", "fail", "x"], f"ID: 'x' {ID_RULE}", "board fail"),
        (["board", "watch", "01"], f"ID: '01' {ID_RULE}", "board watch"),
        (["board", "reassign", HUGE, "bob"], f"ID: '{HUGE}' {ID_RULE}", "board reassign"),
        (["board", "add", "x", "--after", HUGE], f"--after: '{HUGE}' {ID_RULE}", "board add"),
        (["board", "update", "1", "-d", "x", "--epoch", HUGE], f"--epoch: {HUGE} {COUNT}", "board update"),
        (["board", "done", "1", "--epoch", "0"], f"--epoch: 0 {COUNT}", "board done"),
        (["log", "show", HUGE], f"[ID]: '{HUGE}' {RUN_RULE}", "log show"),
        (["log", "-n", "2.5"], f"-n: '2.5' {COUNT}", "log"),
        (["again", "item-3"], f"[ID]: 'item-3' {RUN_RULE}", "again"),
        (["continue", "--run", HUGE, "more"], f"--run: '{HUGE}' {RUN_RULE}", "continue"),
        (["board", "add", "x" * 1001], "TITLE: 1,001 characters, over the limit of 1,000; a title names the work in a line: put the rest in the description (-d TEXT, -d - to read stdin, or --description-file FILE)", "board add"),
        (["board", "add", ""], "TITLE: empty; give at least one character", "board add"),
    ],
)  # fmt: skip
def test_a_value_outside_its_rule_is_a_usage_error(
    isolated: Path, args: list[str], message: str, command: str
) -> None:
    result = invoke(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (
        2,
        "",
        f"start: invalid value for {message}\nhint: run 'start {command} --help' for usage\n",
    )


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        (
            "a=" + "[" * 5000 + "]" * 5000,
            "metadata is nested deeper than 100 levels of objects and arrays; start keeps at "
            "most 100",
        ),
        (
            'x="\\ud800"',
            "metadata at 'x': '\\ud800' holds a lone surrogate (a \\ud800-\\udfff escape without "
            "its pair), which is not Unicode text; give valid text",
        ),
        (
            "x=NaN",
            "metadata at 'x': NaN is not a number JSON can hold; give a finite number (or "
            '"NaN" as text)',
        ),
        (
            "x=1e999",
            "metadata at 'x': Infinity is not a number JSON can hold; give a finite number (or "
            '"Infinity" as text)',
        ),
        (
            "x=" + "y" * 70_000,
            "metadata takes 70,008 bytes as JSON, over the limit of 65,536; keep long text in "
            "the description",
        ),
    ],
)
def test_meta_is_held_to_the_metadata_rule(isolated: Path, meta: str, message: str) -> None:
    result = invoke("board", "add", "x", "--meta", meta)
    assert (result.exit_code, result.stderr) == (2, f"start: {message}\n")
    assert invoke("board", "-q").stderr == "No items. Add one with: start board add TITLE\n"


def test_bytes_that_are_not_utf8_are_text_by_the_text_rule(isolated: Path) -> None:
    byte = os.fsdecode(b"\xff")  # as Python reads the byte from argv
    made = invoke("board", "add", f"t{byte}", "-d", byte, "--meta", f"k{byte}=v{byte}", "--json")
    assert made.exit_code == 0, made.stderr
    item = json.loads(made.stdout)
    assert (item["title"], item["description"], item["metadata"]) == (
        "t\ufffd",
        "\ufffd",
        {"k\ufffd": "v\ufffd"},
    )
    listed = invoke("board", "--assignee", byte, "--json")
    assert (listed.exit_code, listed.stdout) == (0, "[]\n")
    for flag in ("--search", "--project", "--task", "--agent"):
        found = invoke("log", flag, byte, "--json")
        assert (found.exit_code, found.stdout) == (0, "[]\n"), flag
