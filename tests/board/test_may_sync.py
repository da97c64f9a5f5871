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
