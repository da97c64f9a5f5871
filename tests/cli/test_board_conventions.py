"""`start board` as beads and gh users type it (issue 46): their words get a hint naming ours,
`--` ends the options, `-d -` and `--description-file` read a description too long for an
argument, a listing stays a line a row and names its board, `done` says what it unblocked, a
person's claim has no pid in the history, and the shell completes the ids that fit. Real
processes (`python -m start`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_start


@pytest.fixture
def project(isolated: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    return isolated


def start(project: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return run_start(*args, cwd=project, **kwargs)


def item(project: Path, id_: str) -> Any:
    return json.loads(start(project, "board", "show", id_, "--json").stdout)


@pytest.mark.parametrize(
    ("words", "ours"),
    [
        (["list", "--json"], "start board --json"),
        (["ready"], "start board --ready"),
        (["create", "Fix it", "-d", "x"], "start board add 'Fix it' -d x"),
        (["close", "3"], "start board done 3"),
    ],
)
def test_the_words_of_beads_and_gh_get_ours(project: Path, words: list[str], ours: str) -> None:
    said = start(project, "board", *words)
    assert (said.returncode, said.stdout, said.stderr) == (
        2,
        "",
        f"start: no such command '{words[0]}'\nhint: did you mean: {ours}\n"
        "hint: run 'start board --help' for usage\n",
    )


def test_a_double_dash_ends_the_options_of_a_board_command(project: Path) -> None:
    assert start(project, "board", "add", "--", "-x").stdout == "item-1\n"
    assert start(project, "-d", str(project), "board", "add", "--", "-q").stdout == "item-2\n"
    assert [item(project, n)["title"] for n in ("1", "2")] == ["-x", "-q"]
    extra = start(project, "board", "add", "x", "--", "-y")
    assert (extra.returncode, extra.stderr) == (
        2,
        "start: got unexpected extra argument (-y)\nhint: run 'start board add --help' for usage\n",
    )
    assert start(project, "board", "done", "--", "1").stderr == "start: item-1 is completed\n"


def test_a_description_comes_from_stdin_or_a_file_past_the_argument_limit(
    project: Path,
) -> None:
    text = "é" * (1 << 20)  # 1 MiB characters, 2 MiB as UTF-8: over any one argument's limit
    assert start(project, "board", "add", "Piped", "-d", "-", stdin="from stdin\n").returncode == 0
    assert item(project, "1")["description"] == "from stdin\n"
    (project / "big.md").write_text(text, encoding="utf-8")
    assert start(project, "board", "add", "Big", "--description-file", "big.md").returncode == 0
    assert item(project, "2")["description"] == text
    assert start(project, "board", "update", "1", "-d", "-", stdin="new").returncode == 0
    assert item(project, "1")["description"] == "new"
    (project / "big.md").write_text(text + "!", encoding="utf-8")
    over = start(project, "board", "add", "Bigger", "--description-file", "big.md")
    assert (over.returncode, over.stderr) == (
        2,
        "start: --description-file big.md: 1,048,577 characters, over the limit of 1,048,576\n",
    )
    both = start(project, "board", "add", "X", "-d", "x", "--description-file", "big.md")
    assert (both.returncode, both.stderr) == (
        2,
        "start: give -d or --description-file, not both\n",
    )
    missing = start(project, "board", "add", "X", "--description-file", "nope.md")
    assert missing.stderr == "start: nope.md: no such file\n"


def test_a_piped_listing_is_a_line_a_row_and_names_its_board(project: Path) -> None:
    start(project, "board", "add", "Plan")
    start(project, "board", "add", "t" * 999, "--after", "1")
    start(project, "board", "add", "Other")
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    listed = subprocess.run(
        [*_start(), "board"], cwd=project, env=env, capture_output=True, text=True, check=True
    )
    assert listed.stdout.splitlines() == [
        "ID      PRI  STATUS             TITLE                       ASSIGNEE  BLOCKED BY",
        "item-3  P2   pending            Other",
        "item-2  P2   pending (blocked)  " + "t" * 25 + "…            item-1",
        "item-1  P2   pending            Plan",
    ]
    assert listed.stderr == f"start: the board of {os.path.realpath(project)}\n"
    wider = start(project, "board", env={"COLUMNS": "120"})
    assert max(len(line) for line in wider.stdout.splitlines()) == 120
    (project / "sub").mkdir()
    below = start(project / "sub", "board", "-q")
    assert (below.stdout, below.stderr) == (listed.stdout, "")


def _start() -> list[str]:
    import sys

    return [sys.executable, "-m", "start"]


def test_the_ready_listing_shows_no_dependency_that_is_done(project: Path) -> None:
    start(project, "board", "add", "Plan")
    start(project, "board", "add", "Build", "--after", "1")
    start(project, "board", "add", "Ship", "--after", "2")
    start(project, "board", "done", "1")
    ready = start(project, "board", "--ready", "-q")
    assert ready.stdout == (
        "ID      PRI  STATUS   TITLE  ASSIGNEE  BLOCKED BY\nitem-2  P2   pending  Build\n"
    )
    every = start(project, "board", "-q").stdout.splitlines()
    assert "item-3  P2   pending (blocked)  Ship             item-2" in every
    assert "item-2  P2   pending            Build" in every


def test_done_says_what_it_unblocked_and_a_persons_claim_has_no_pid(project: Path) -> None:
    for title, after in (
        ("Plan", ()),
        ("Other", ()),
        ("A", ("1",)),
        ("B", ("1", "2")),
        ("C", ("1",)),
    ):
        start(project, "board", "add", title, *(w for n in after for w in ("--after", n)))
    start(project, "board", "claim", "1", "--as", "ann")
    done = start(project, "board", "done", "1", "--as", "ann")
    assert done.stderr == "start: item-1 is completed; unblocked item-3, item-5\n"
    events = item(project, "1")["events"]
    assert [(e["op"], e["detail"]) for e in events][1] == ("claim", {})
    shown = start(project, "board", "show", "1").stdout.splitlines()
    assert shown[-2].endswith("  ann claim")


def test_the_shell_completes_ready_ids_for_claim_and_open_ids_elsewhere(project: Path) -> None:
    start(project, "board", "add", "Plan")
    start(project, "board", "add", "Build", "--after", "1")
    start(project, "board", "add", "Done one")
    start(project, "board", "done", "3")

    def completed(command: str) -> list[str]:
        env = {"_START_COMPLETE": "zsh_complete", "COMP_WORDS": f"start board {command} ",
               "COMP_CWORD": "3"}  # fmt: skip
        lines = start(project, env=env).stdout.splitlines()
        return [f"{lines[n + 1]} {lines[n + 2]}" for n in range(0, len(lines), 3)]

    assert completed("claim") == ["item-1 pending: Plan"]
    assert completed("update") == ["item-1 pending: Plan", "item-2 pending: Build"]
    assert completed("show") == [
        "item-1 pending: Plan",
        "item-2 pending: Build",
        "item-3 completed: Done one",
    ]
