"""Atomic replacement keeps modes, never leaves a temp file, and writes whole files only."""

from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.base import atomic


def test_new_file_is_0644_less_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        atomic.replace(str(tmp_path / "config.toml"), b"x = 1\n")
    finally:
        os.umask(old)
    path = tmp_path / "config.toml"
    assert path.read_bytes() == b"x = 1\n"
    assert oct(path.stat().st_mode & 0o777) == "0o644"  # never group-writable, even with umask 002


def test_existing_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("old")
    path.chmod(0o600)
    atomic.replace(str(path), b"new")
    assert path.read_bytes() == b"new"
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_explicit_mode(tmp_path: Path) -> None:
    atomic.replace(str(tmp_path / "record.json"), b"{}", mode=0o600)
    assert oct((tmp_path / "record.json").stat().st_mode & 0o777) == "0o600"


def test_failure_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "layer" / "config.toml"
    path.parent.mkdir()
    path.write_text("old")

    def fail(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        atomic.replace(str(path), b"new")
    assert path.read_text() == "old"
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]


def test_temp_names_are_the_ones_the_trust_scan_ignores(tmp_path: Path) -> None:
    assert atomic.is_temp_name(atomic.temp_name("config.toml"))
    assert not atomic.is_temp_name("config.toml")


_PARTS = [".", "a", "x.toml", ".tmp", "0123abcd", "0123ABCD", "12345678", "\n", "é", "-"]


@given(st.one_of(st.lists(st.sampled_from(_PARTS), max_size=6).map("".join), st.text()))
def test_a_temp_name_is_what_the_pattern_said_it_is(name: str) -> None:
    # The oracle: the pattern the names were matched with before, but whole (its `$` also let
    # a name end in a newline, which no temp file of ours does).
    assert atomic.is_temp_name(name) == bool(re.fullmatch(r"\..+\.[0-9a-f]{8}\.tmp", name))


def old(path: Path, seconds: float = 60) -> Path:
    path.write_text("half a file")
    os.utime(path, (time.time() - seconds, time.time() - seconds))
    return path


def test_a_write_removes_stale_temp_files_beside_it(tmp_path: Path) -> None:
    tmp_path = tmp_path / "layer"
    tmp_path.mkdir()
    (tmp_path / "tasks.toml").write_text("")
    stale = old(tmp_path / ".tasks.toml.0123abcd.tmp")
    stale_new = old(tmp_path / ".config.toml.33333333.tmp")  # an earlier write of the same file
    fresh = old(tmp_path / ".tasks.toml.11111111.tmp", seconds=1)  # its writer may not lock yet
    other = old(tmp_path / ".notes.tmp")  # not one of ours
    unowned = old(tmp_path / ".notes.0123abcd.tmp")  # like ours, but of no file here
    locked = old(tmp_path / ".config.toml.22222222.tmp")
    holder = os.open(locked, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # a live writer holds its temp file's lock
        atomic.replace(str(tmp_path / "config.toml"), b"x = 1\n")
    finally:
        os.close(holder)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert stale.name not in names and stale_new.name not in names
    assert names == sorted(
        [fresh.name, other.name, unowned.name, locked.name, "config.toml", "tasks.toml"]
    )


def test_a_writer_holds_the_lock_on_its_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    real = os.fsync

    def check(fd: int) -> None:
        temps = [p for p in tmp_path.iterdir() if atomic.is_temp_name(p.name)]
        if temps and not seen:
            os.utime(temps[0], (time.time() - 60, time.time() - 60))
            # Another writer's sweep, during this write.
            seen.append(atomic.sweep(str(tmp_path), writing="config.toml"))
        real(fd)

    monkeypatch.setattr(os, "fsync", check)
    atomic.replace(str(tmp_path / "config.toml"), b"x = 1\n")
    assert seen[0] == []
    assert (tmp_path / "config.toml").read_bytes() == b"x = 1\n"


@pytest.mark.parametrize("durable", [True, False])
def test_only_a_durable_write_is_fsynced(
    durable: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    directory = tmp_path / "config"
    directory.mkdir()
    atomic.replace(str(directory / "config.toml"), b"x = 1\n", durable=durable)
    assert (directory / "config.toml").read_bytes() == b"x = 1\n"
    assert [p.name for p in directory.iterdir()] == ["config.toml"]
    assert len(synced) == (2 if durable else 0)  # the file, then its directory
