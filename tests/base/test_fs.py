"""The one door for reading named files: regular files only, bounded, located by the descriptor."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.base import fs


def test_a_regular_file_is_read_with_its_real_path(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "notes.md"
    target.write_bytes(b"hello\n")
    (tmp_path / "link.md").symlink_to(target)
    read = fs.read(str(tmp_path / "link.md"))
    assert (read.data, read.real, read.size, read.truncated) == (
        b"hello\n",
        str(target),
        6,
        0,
    )


def test_a_file_over_the_limit_is_cut_and_says_how_much(tmp_path: Path) -> None:
    path = tmp_path / "big"
    with open(path, "wb") as handle:
        handle.truncate(300 * 1_048_576)  # sparse: no disk, and memory stays bounded
    read = fs.read(str(path), 1000)
    assert (len(read.data), read.size, read.truncated) == (1000, 300 * 1_048_576, 314_571_800)


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO (named pipe), not a regular file"),
        (lambda p: p.mkdir(), "is a directory, not a regular file"),
        (lambda p: p.symlink_to("/dev/zero"), "is a character device, not a regular file"),
        (lambda p: p.symlink_to(p), "a symlink loop (too many levels of symbolic links)"),
    ],
    ids=["fifo", "directory", "dev-zero", "loop"],
)
def test_what_is_not_a_regular_file_is_refused_without_reading(
    tmp_path: Path, make: object, reason: str
) -> None:
    path = tmp_path / "x"
    make(path)  # type: ignore[operator]
    with pytest.raises(fs.FileError) as caught:
        fs.read(str(path))
    assert (str(caught.value), caught.value.missing) == (f"{path}: {reason}", False)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(fs.FileError) as caught:
            fs.read(str(path))
    finally:
        server.close()
    assert caught.value.reason == "is a socket, not a regular file"


def test_missing_and_dangling_files_are_missing(tmp_path: Path) -> None:
    with pytest.raises(fs.FileError) as caught:
        fs.read(str(tmp_path / "nope"))
    assert (caught.value.reason, caught.value.missing) == ("no such file", True)
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    with pytest.raises(fs.FileError) as caught:
        fs.read(str(tmp_path / "dangling"))
    assert (caught.value.reason, caught.value.missing) == (
        "a dangling symlink (its target does not exist)",
        True,
    )


def test_without_follow_a_symlink_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "t").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path / "t")
    with pytest.raises(fs.FileError):
        fs.read(str(tmp_path / "l"), follow=False)


def test_the_text_rule() -> None:
    assert fs.text(b"ok \xff \x00 \xe2\x82") == "ok \ufffd \ufffd \ufffd"
    assert fs.arg_text(os.fsdecode(b"a\xffb")) == "a\ufffdb"
    assert fs.arg_text("plain \u00e9") == "plain \u00e9"


def test_a_cut_drops_a_split_character_whole_and_marks_it() -> None:
    data = "é".encode() * 3  # six bytes
    assert fs.capped_text(data[:5], 1) == "éé\n[... truncated 2 bytes ...]\n"
    assert fs.capped_text(b"abc\n", 2_000_000) == "abc\n[... truncated 2,000,000 bytes ...]\n"
    assert fs.capped_text(b"abc", 0) == "abc"


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_a_cut_never_yields_a_broken_character(text: str, cut: int) -> None:
    data = text.encode("utf-8")
    kept = data[:cut]
    result = fs.capped_text(kept, len(data) - len(kept))
    if len(kept) == len(data):
        assert result == text.replace("\x00", "\ufffd")
    else:
        expected = text.replace("\x00", "\ufffd")
        body = result[: result.rindex("[... truncated ")]
        if body.endswith("\n") and not expected.startswith(body):
            body = body[:-1]  # the newline the marker added
        assert expected.startswith(body)
        assert result.endswith(" bytes ...]\n")


@pytest.mark.parametrize(
    ("real", "root", "inside"),
    [
        ("/p", "/p", True),
        ("/p/a", "/p", True),
        ("/p/", "/p", True),
        ("/pa", "/p", False),
        ("/q/p", "/p", False),
        ("/anything", "/", True),
    ],
)
def test_within(real: str, root: str, inside: bool) -> None:
    assert fs.within(real, root) is inside


@given(st.binary(max_size=256))
def test_sha256_is_hashlibs_digest(data: bytes) -> None:
    import hashlib

    assert fs.sha256(data) == hashlib.sha256(data).hexdigest()
