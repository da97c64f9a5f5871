"""`start board comment` and the comments `show` lists (start.cli.board_items, docs/board.md
"Comments"): from an argument, stdin or a file, after `--`, by `--as NAME`, as `--json`; the
errors name what is wrong and the fix. Real processes (`python -m start`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from start.ui import console
from tests.cli.test_board_conventions import start


@pytest.fixture
def project(isolated: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    return isolated


def shown(project: Path, id_: str) -> Any:
    return json.loads(start(project, "board", "show", id_, "--json").stdout)


def test_a_comment_comes_from_an_argument_stdin_or_a_file(project: Path) -> None:
    assert start(project, "board", "add", "Fix", "-d", "the description").returncode == 0
    said = start(project, "board", "comment", "item-1", "Repro: run it twice", "--as", "alice")
    assert (said.returncode, said.stdout, said.stderr) == (
        0,
        "",
        "start: item-1: comment added by alice\n",
    )
    piped = start(project, "board", "comment", "1", "-", "--as", "bob", stdin="from\nstdin\n")
    assert (piped.returncode, piped.stderr) == (0, "start: item-1: comment added by bob\n")
    text = "é" * (1 << 20)  # 1 MiB characters: over any one argument's limit
    (project / "notes.md").write_text(text, encoding="utf-8")
    filed = start(project, "board", "comment", "1", "--file", "notes.md", "-q", "--as", "ci")
    assert (filed.returncode, filed.stderr) == (0, "")
    dashed = start(project, "board", "comment", "--as", "bob", "--json", "--", "1", "-x")
    assert dashed.returncode == 0, dashed.stderr
    data = json.loads(dashed.stdout)
    assert list(data) == ["item", "at", "author", "text"]
    assert (data["item"], data["author"], data["text"]) == ("item-1", "bob", "-x")
    comments = shown(project, "1")["comments"]
    assert [(c["author"], c["text"]) for c in comments] == [
        ("alice", "Repro: run it twice"),
        ("bob", "from\nstdin\n"),
        ("ci", text),
        ("bob", "-x"),
    ]
    assert comments[-1] == {key: data[key] for key in ("at", "author", "text")}


def test_show_lists_the_comments_after_the_description_escaped(project: Path) -> None:
    start(project, "board", "add", "Fix", "-d", "the description")
    start(project, "board", "comment", "1", "line one\nline two \x1b[31mred\x07", "--as", "alice")
    start(project, "board", "comment", "1", "[bold]not markup[/]", "--as", "bob")
    page = start(project, "board", "show", "1").stdout
    times = [console.local_time(c["at"], seconds=True) for c in shown(project, "1")["comments"]]
    assert (
        "──── description ────\n"
        "the description\n"
        "\n"
        "──── comments ────\n"
        f"  {times[0]}  alice\n"
        "    line one\n"
        "    line two \\x1b[31mred\\x07\n"
        f"  {times[1]}  bob\n"
        "    [bold]not markup[/]\n"
        "\n"
        "──── history ────\n"
    ) in page
    assert (
        "comment"
        not in start(project, "board", "show", "1", "--json").stdout.split('"comments"')[0]
    )  # a comment is no event of the history: it is kept whole in its own list


def test_a_comment_without_text_or_item_is_refused_and_says_how(project: Path) -> None:
    start(project, "board", "add", "Fix")
    (project / "empty.md").write_text("", encoding="utf-8")
    for args, stdin, code, message in [
        ((), "", 2, "start: give the comment: TEXT (- reads stdin) or --file FILE\n"),
        (
            ("",),
            "",
            2,
            "start: invalid value for TEXT: empty; give at least one character\n"
            "hint: run 'start board comment --help' for usage\n",
        ),
        (("-",), "", 2, "start: TEXT - (stdin): empty; give at least one character\n"),
        (("x", "--file", "empty.md"), "", 2, "start: give TEXT or --file, not both\n"),
        (
            ("--file", "empty.md"),
            "",
            2,
            "start: --file empty.md: empty; give at least one character\n",
        ),
        (("--file", "nope.md"), "", 1, "start: nope.md: no such file\n"),
    ]:
        result = start(project, "board", "comment", "1", *args, stdin=stdin)
        assert (result.returncode, result.stderr) == (code, message), args
    missing = start(project, "board", "comment", "item-7", "x")
    assert (missing.returncode, missing.stderr) == (
        4,
        f"start: no item item-7 on the board of {project} (ids go from item-1 to item-1; "
        "'start board' lists them)\n",
    )
    assert shown(project, "1")["comments"] == []


def test_anyone_comments_on_a_held_finished_or_archived_item(project: Path) -> None:
    start(project, "board", "add", "Held")
    start(project, "board", "add", "Done")
    start(project, "board", "claim", "1", "--as", "alice")
    start(project, "board", "done", "2")
    start(project, "board", "archive", "2")
    for id_ in ("1", "2"):
        result = start(project, "board", "comment", id_, "a note", "--as", "bob")
        assert result.returncode == 0, result.stderr
    held = shown(project, "1")
    assert (held["status"], held["assignee"], held["epoch"]) == ("in_progress", "alice", 1)
    assert [c["author"] for c in held["comments"]] == ["bob"]
    assert shown(project, "2")["comments"][0]["text"] == "a note"


def test_the_shell_completes_every_id_for_comment(project: Path) -> None:
    start(project, "board", "add", "Plan")
    start(project, "board", "add", "Done one")
    start(project, "board", "done", "2")
    env = {"_START_COMPLETE": "zsh_complete", "COMP_WORDS": "start board comment ",
           "COMP_CWORD": "3"}  # fmt: skip
    lines = start(project, env=env).stdout.splitlines()
    assert [f"{lines[n + 1]} {lines[n + 2]}" for n in range(0, len(lines), 3)] == [
        "item-1 pending: Plan",
        "item-2 completed: Done one",
    ]
