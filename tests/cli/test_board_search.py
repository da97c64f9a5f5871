"""`start board --search TEXT` (start.cli.board, start.board.search; docs/board.md "Search"):
over titles, descriptions and comments, with the listing's other filters, archived and
finished items only with --all as the listing has them; user text is never FTS5's syntax; a board
whose index this Python's SQLite cannot read is written and searched as any other. Real
processes (`python -m start`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from start.board import file as boardfile
from tests.board.test_search import _unreadable
from tests.conftest import run_start


@pytest.fixture
def project(isolated: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    return isolated


def start(project: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = run_start(*args, cwd=project, **kwargs)
    assert done.returncode == 0, done.stderr
    return done


def found(project: Path, *args: str) -> list[str]:
    """The ids a search lists (--json), in the listing's order."""
    return [row["id"] for row in json.loads(start(project, "board", *args, "--json").stdout)]


@pytest.fixture
def board(project: Path) -> Path:
    start(project, "board", "add", "Login crash on Safari", "--label", "bug")
    start(project, "board", "add", "Other", "-d", "The LOGIN page")
    start(project, "board", "add", "Cache", "--after", "1")
    start(project, "board", "comment", "3", "the login broke it")
    start(project, "board", "add", "Login, done")
    start(project, "board", "done", "4")
    start(project, "board", "add", "Login, put away")
    start(project, "board", "archive", "5")
    start(project, "board", "add", "Unrelated")
    return project


def test_a_search_is_a_filter_of_the_listing(board: Path) -> None:
    assert sorted(found(board, "--search", "login")) == ["item-1", "item-2", "item-3"]
    listed = start(board, "board", "--search", "LOG", "-q")
    assert listed.stderr == "start: 2 more: --all\n"  # the completed and the archived
    assert sorted(found(board, "--search", "login", "--all")) == [
        "item-1", "item-2", "item-3", "item-4", "item-5"
    ]  # fmt: skip
    assert found(board, "--search", "login", "--label", "bug") == ["item-1"]
    assert found(board, "--search", "login", "--status", "completed") == ["item-4"]
    assert found(board, "--search", "login", "--ready") == ["item-1", "item-2"]
    assert found(board, "--search", "login broke") == ["item-3"]  # a comment's words
    assert found(board, "--search", "page login") == ["item-2"]  # words in any order
    limited = run_start("board", "--search", "login", "--limit", "1", "-q", cwd=board)
    assert limited.stdout.startswith("ID") and limited.stdout.count("\nitem-") == 1
    assert limited.stderr == "start: 4 more: --all, or --limit N\n"
    # The latest changed first, as the listing has them.
    start(board, "board", "comment", "1", "login again")
    assert found(board, "--search", "login")[0] == "item-1"


def test_a_search_that_finds_nothing_says_so_and_no_text_is_syntax(board: Path) -> None:
    none = start(board, "board", "--search", "zebra", "-q")
    assert (none.stdout, none.stderr) == ("", "No item has each word of 'zebra'\n")
    assert found(board, "--search", "zebra") == []
    for query in ('"', "*", "AND", "NEAR(", 'login"', "login*", "(login OR x)", "-login"):
        result = run_start("board", "--search", query, "--json", cwd=board)
        assert result.returncode == 0, (query, result.stderr)
    assert sorted(found(board, "--search", "*")) == sorted(found(board))  # no word: every item
    assert found(board, "--search", "(login OR unrelated)") == []  # OR is a word, as any other


def test_a_board_whose_index_this_sqlite_cannot_read_is_written_and_searched(
    board: Path,
) -> None:
    """As a Python whose SQLite lacks FTS5 meets an index another Python made."""
    start(board, "board", "--search", "login")  # the index is made
    with boardfile.opened(str(board)) as opened:
        _unreadable(opened)
    start(board, "board", "add", "Login again", "-d", "x", "--label", "ui")
    start(board, "board", "update", "7", "--title", "Login, again", "--priority", "0")
    start(board, "board", "comment", "6", "a login too")
    start(board, "board", "claim", "7")
    start(board, "board", "done", "7")
    assert sorted(found(board, "--search", "login")) == ["item-1", "item-2", "item-3", "item-6"]
    assert found(board, "--search", "login", "--status", "completed") == ["item-7", "item-4"]
