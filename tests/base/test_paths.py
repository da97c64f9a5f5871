"""Finding the project's .start/ and the project root, and programs on PATH."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.base import paths
from start.base.errors import StartError


def test_start_dir_in_a_parent_is_found(isolated: Path) -> None:
    (isolated / ".git").mkdir()
    (isolated / ".start").mkdir()
    deep = isolated / "a" / "b"
    deep.mkdir(parents=True)
    location = paths.find_project(str(deep))
    assert location.start_dir == str(isolated / ".start")
    assert location.root == str(isolated)
    assert location.workdir == str(deep)


def test_search_stops_at_the_git_root(isolated: Path) -> None:
    (isolated / ".start").mkdir()
    repo = isolated / "repo"
    (repo / ".git").mkdir(parents=True)
    location = paths.find_project(str(repo))
    assert location.start_dir is None
    assert location.git_root == str(repo)
    assert location.root == str(repo)


def test_search_stops_at_home(tmp_path: Path) -> None:
    (tmp_path / ".start").mkdir()  # above the (isolated) home directory
    inside = tmp_path / "home" / "project"
    inside.mkdir()
    location = paths.find_project(str(inside))
    assert location.start_dir is None
    assert location.root == str(inside)


def test_git_file_marks_a_worktree_root(isolated: Path) -> None:
    (isolated / ".git").write_text("gitdir: /elsewhere\n")
    sub = isolated / "sub"
    sub.mkdir()
    assert paths.find_project(str(sub)).root == str(isolated)


def test_expand_resolves_against_base_and_expands_home(tmp_path: Path) -> None:
    base = str(tmp_path)
    assert paths.expand("docs/x.md", base) == str(tmp_path / "docs" / "x.md")
    assert paths.expand("~/x.md", base) == str(tmp_path / "home" / "x.md")
    assert paths.expand("/abs", base) == "/abs"
    assert paths.expand("./docs//x.md/", base) == str(tmp_path / "docs" / "x.md")


@given(
    st.lists(st.sampled_from(["a", "b", ".", "..", "", ".x", "x."]), max_size=6), st.integers(0, 3)
)
def test_clean_gives_a_path_the_form_pathlib_gives_it(parts: list[str], slashes: int) -> None:
    """Messages show paths as pathlib did: `paths.clean` agrees with it on every spelling."""
    from pathlib import PurePosixPath

    path = "/" * slashes + "/".join(parts)
    assert paths.clean(path) == str(PurePosixPath(path))


def test_the_runtime_dir_is_under_xdg_runtime_dir(tmp_path: Path) -> None:
    assert Path(paths.runtime_dir()) == tmp_path / "run" / "start"


def test_an_unwritable_xdg_runtime_dir_falls_back_to_a_private_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None  # forget the cached temp dir, so TMPDIR applies
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if Path(p) == run else real(p, m))
    try:
        assert Path(paths.runtime_dir()) == tmp_path / f"start-{os.getuid()}"
        (run / "start").mkdir()
        real_dir = run / "start"
        monkeypatch.setattr(
            os, "access", lambda p, m: Path(p) == real_dir or (Path(p) != run and real(p, m))
        )
        assert Path(paths.runtime_dir()) == real_dir  # start's own directory in it is writable
    finally:
        tempfile.tempdir = None


@pytest.mark.skipif(sys.platform == "darwin", reason="platformdirs decides on macOS")
def test_the_runtime_dir_of_another_environment(tmp_path: Path) -> None:
    """What a start with that environment finds: an MCP client may drop XDG_RUNTIME_DIR and
    TMPDIR (start.proc.lineage writes its records there too)."""
    uid = os.getuid()
    assert paths.runtime_dir({}) == f"/tmp/start-{uid}"
    assert paths.runtime_dir({"TMPDIR": str(tmp_path)}) == f"{tmp_path}/start-{uid}"
    assert paths.runtime_dir({"XDG_RUNTIME_DIR": str(tmp_path / "run")}) == paths.runtime_dir()


@pytest.mark.usefixtures("removed_cwd")
def test_a_deleted_working_directory_is_a_start_error() -> None:
    with pytest.raises(StartError) as caught:
        Path(paths.current_dir())
    assert str(caught.value) == (
        "the current directory no longer exists (it was deleted or moved); cd to an existing "
        "directory, or pass -d DIR"
    )


def _program(path: Path, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


def test_which_finds_what_shutil_which_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """paths.which stands in for shutil.which on the launch path: same answer in every case."""
    import shutil

    first, second = tmp_path / "first", tmp_path / "second"
    _program(first / "plain", 0o644)  # not executable: skipped
    _program(second / "plain")
    (first / "tool").mkdir(parents=True)  # a directory of that name: skipped
    _program(second / "tool")
    _program(first / "both")
    _program(second / "both")
    _program(tmp_path / "here")
    monkeypatch.chdir(tmp_path)
    names = ["plain", "tool", "both", "missing", "here", "./here", str(tmp_path / "here")]
    names += [str(first / "plain"), str(first / "tool"), str(tmp_path / "gone"), ""]
    searches: list[str | None] = [
        f"{first}{os.pathsep}{second}",
        f"{second}{os.pathsep}{first}{os.pathsep}{second}",
        f"{first}{os.pathsep}{os.pathsep}{second}",  # an empty entry: the working directory
        "",
        None,
    ]
    for search in searches:
        if search is None:
            monkeypatch.delenv("PATH", raising=False)
        else:
            monkeypatch.setenv("PATH", search)
        for name in names:
            assert paths.which(name) == shutil.which(name), (search, name)
    monkeypatch.setenv("PATH", f"{first}{os.pathsep}{second}")
    assert paths.which("plain") == str(second / "plain")
    assert paths.which("both") == str(first / "both")


def test_private_directory_is_made_0700_and_kept_so(tmp_path: Path) -> None:
    made = tmp_path / "a" / "b"
    assert paths.private_directory(str(made)) is True
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    made.chmod(0o755)
    assert paths.private_directory(str(made)) is True
    assert stat.S_IMODE(made.stat().st_mode) == 0o700


def test_private_directory_refuses_a_symlink_and_leaves_it(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    (tmp_path / "link").symlink_to(target)
    assert paths.private_directory(str(tmp_path / "link")) is False
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
