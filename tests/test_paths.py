"""Finding the project's .start/ and the project root."""

from __future__ import annotations

from pathlib import Path

from start import paths


def test_start_dir_in_a_parent_is_found(isolated: Path) -> None:
    (isolated / ".git").mkdir()
    (isolated / ".start").mkdir()
    deep = isolated / "a" / "b"
    deep.mkdir(parents=True)
    location = paths.find_project(deep)
    assert location.start_dir == isolated / ".start"
    assert location.root == isolated
    assert location.workdir == deep


def test_search_stops_at_the_git_root(isolated: Path) -> None:
    (isolated / ".start").mkdir()
    repo = isolated / "repo"
    (repo / ".git").mkdir(parents=True)
    location = paths.find_project(repo)
    assert location.start_dir is None
    assert location.git_root == repo
    assert location.root == repo


def test_search_stops_at_home(tmp_path: Path) -> None:
    (tmp_path / ".start").mkdir()  # above the (isolated) home directory
    inside = tmp_path / "home" / "project"
    inside.mkdir()
    location = paths.find_project(inside)
    assert location.start_dir is None
    assert location.root == inside


def test_git_file_marks_a_worktree_root(isolated: Path) -> None:
    (isolated / ".git").write_text("gitdir: /elsewhere\n")
    sub = isolated / "sub"
    sub.mkdir()
    assert paths.find_project(sub).root == isolated


def test_expand_resolves_against_base_and_expands_home(tmp_path: Path) -> None:
    assert paths.expand("docs/x.md", tmp_path) == tmp_path / "docs" / "x.md"
    assert paths.expand("~/x.md", tmp_path) == tmp_path / "home" / "x.md"
    assert paths.expand("/abs", tmp_path) == Path("/abs")
