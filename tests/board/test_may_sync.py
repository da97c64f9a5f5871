"""start.board.file.may_sync: whether a claim or a finish reads start's config for board_remote,
told from files alone (a board with no remote to reach pays nothing for sync)."""

from __future__ import annotations

import os
from pathlib import Path

from start.base import sqlite
from start.board import file as boardfile
from start.board import journal
from tests.conftest import git


def test_a_board_may_sync_only_where_a_git_config_can_name_a_remote(isolated: Path) -> None:
    work = isolated  # the scratch working directory: no git repository above it in tmp
    with boardfile.opened(str(work)) as opened:
        assert boardfile.may_sync(opened) is False  # no repository
    git(work, "init", "--quiet")
    with boardfile.opened(str(work)) as opened:
        assert boardfile.may_sync(opened) is False  # a repository without a remote
    git(work, "remote", "add", "origin", "https://example.invalid/a.git")
    with boardfile.opened(str(work)) as opened:
        assert boardfile.may_sync(opened) is True
    git(work, "remote", "remove", "origin")
    git(work, "config", "include.path", "more.gitconfig")  # may name one: read it
    with boardfile.opened(str(work)) as opened:
        assert boardfile.may_sync(opened) is True
        git(work, "config", "--unset", "include.path")
        assert boardfile.may_sync(opened) is False
        with sqlite.writing(opened.connection) as connection:
            journal.turn_on(connection)
        assert boardfile.may_sync(opened) is True  # sync on: its remote may have gone


def test_a_project_below_the_repository_and_the_users_git_config_are_read(
    isolated: Path,
) -> None:
    work = isolated
    git(work, "init", "--quiet")
    below = work / "app"
    (below / ".start").mkdir(parents=True)  # the project root, below the work tree's
    with boardfile.opened(str(below)) as opened:
        assert opened.root == os.path.realpath(below)
        assert boardfile.may_sync(opened) is False
        home = Path(os.path.expanduser("~"))
        (home / ".gitconfig").write_text('[remote "origin"]\n\turl = /nowhere\n')
        assert boardfile.may_sync(opened) is True
        (home / ".gitconfig").unlink()
        (work / ".git" / "config").rename(work / "config.kept")
        (work / ".git").rename(work / "git.kept")
        (work / ".git").write_text("gitdir: git.kept\n")  # a worktree's: its config elsewhere
        assert boardfile.may_sync(opened) is True


def test_a_claim_and_a_finish_without_a_remote_import_nothing_of_sync(isolated: Path) -> None:
    """What make bench's 10a times: a claim on a board no remote can concern reads no config for
    board_remote and imports neither sync nor git's log (they took 10a from 1.18x to 1.35x)."""
    import subprocess
    import sys

    from tests.conftest import REPO

    git(isolated, "init", "--quiet")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONPROFILEIMPORTTIME": "1"}
    heavy = ("start.board.syncing", "start.board.gitlog", "start.config.load")
    made = [sys.executable, "-m", "start", "board", "add", "One"]
    subprocess.run(made, cwd=isolated, env=env, capture_output=True, check=True)
    for args in (["claim", "--next", "--as", "ci"], ["done", "item-1", "--as", "ci"]):
        ran = subprocess.run(
            [sys.executable, "-m", "start", "-q", "board", *args],
            cwd=isolated, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        imported = {
            line.rsplit("|", 1)[1].strip()
            for line in ran.stderr.splitlines()
            if line.startswith("import time:")
        }
        assert sorted(name for name in imported if name.startswith(heavy)) == [], args
