"""Atomic replacement keeps modes, never leaves a temp file, and writes whole files only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from start import atomic


def test_new_file_is_0644_less_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        atomic.replace(tmp_path / "config.toml", b"x = 1\n")
    finally:
        os.umask(old)
    path = tmp_path / "config.toml"
    assert path.read_bytes() == b"x = 1\n"
    assert oct(path.stat().st_mode & 0o777) == "0o644"  # never group-writable, even with umask 002


def test_existing_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("old")
    path.chmod(0o600)
    atomic.replace(path, b"new")
    assert path.read_bytes() == b"new"
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_explicit_mode(tmp_path: Path) -> None:
    atomic.replace(tmp_path / "record.json", b"{}", mode=0o600)
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
        atomic.replace(path, b"new")
    assert path.read_text() == "old"
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]
