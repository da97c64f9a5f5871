"""start.ui.piped: which stdin is read, on real pipes, sockets, files, devices and terminals."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from start.base.errors import UsageError
from start.ui import piped


@pytest.fixture
def pipe() -> Iterator[tuple[io.BufferedReader, int]]:
    """A pipe's read end as a buffered stream (as sys.stdin.buffer is), and its write end."""
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(read_fd, "rb")
    yield stream, write_fd
    stream.close()
    with contextlib.suppress(OSError):  # the test closed it
        os.close(write_fd)


def test_a_pipe_is_read_to_its_end(pipe: tuple[io.BufferedReader, int]) -> None:
    stream, write_fd = pipe
    os.write(write_fd, b"line 1\r\nline 2\xff")
    os.close(write_fd)
    assert piped.read(stream, 100) == piped.Piped(b"line 1\r\nline 2\xff")


def test_a_closed_pipe_that_sent_nothing_is_empty(pipe: tuple[io.BufferedReader, int]) -> None:
    stream, write_fd = pipe
    os.close(write_fd)
    assert piped.read(stream, 100) == piped.Piped(b"")


def test_an_open_pipe_that_sends_nothing_is_left_unread(
    pipe: tuple[io.BufferedReader, int],
) -> None:
    stream, write_fd = pipe
    found = piped.read(stream, 100, wait=0.2)
    assert found == piped.Piped(
        None,
        "stdin is a pipe that sent nothing in 0.2 seconds, so start went on without it; pass "
        "--no-stdin (or < /dev/null) when nothing is piped; a file (< FILE) is read at once",
    )
    # Nothing was taken from it: what comes later is still there for whoever reads it.
    os.write(write_fd, b"late")
    os.close(write_fd)
    assert stream.read() == b"late"


def test_a_pipe_that_sent_a_first_byte_is_read_until_it_closes(
    pipe: tuple[io.BufferedReader, int],
) -> None:
    stream, write_fd = pipe
    os.write(write_fd, b"first ")
    # The rest comes later than `wait`, from a writer that then closes (a process: no fork of
    # this multi-threaded one).
    code = f"import os, time; time.sleep(0.5); os.write({write_fd}, b'and the rest')"
    writer = subprocess.Popen([sys.executable, "-c", code], pass_fds=(write_fd,))
    os.close(write_fd)
    try:
        assert piped.read(stream, 100, wait=0.2) == piped.Piped(b"first and the rest")
    finally:
        writer.wait(timeout=30)


def test_a_socket_is_read_like_a_pipe() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"from a socket")
        theirs.shutdown(socket.SHUT_WR)
        stream = ours.makefile("rb")
        assert piped.read(stream, 100) == piped.Piped(b"from a socket")


def test_a_regular_file_is_read_from_where_it_stands(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_bytes(b"skip:the notes\n")
    with path.open("rb") as stream:
        stream.seek(5)
        assert piped.read(stream, 100) == piped.Piped(b"the notes\n")


def test_dev_null_is_never_read() -> None:
    with open(os.devnull, "rb") as stream:
        assert piped.read(stream, 100) == piped.Piped(None)


def test_a_terminal_is_never_read() -> None:
    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "rb", closefd=False) as stream:
            os.write(leader, b"typed\n")
            assert piped.read(stream, 100, wait=0.2) == piped.Piped(None)
    finally:
        os.close(follower)
        os.close(leader)


def test_a_closed_descriptor_and_no_stdin_are_not_read() -> None:
    read_fd, write_fd = os.pipe()
    os.close(write_fd)
    stream = os.fdopen(read_fd, "rb", closefd=False)
    os.close(read_fd)
    assert piped.read(stream, 100) == piped.Piped(None)
    assert piped.read(None, 100) == piped.Piped(None)


def test_a_stream_without_a_descriptor_is_read_unless_it_is_a_terminal() -> None:
    assert piped.read(io.BytesIO(b"in memory"), 100) == piped.Piped(b"in memory")


def test_more_than_the_limit_is_refused(pipe: tuple[io.BufferedReader, int]) -> None:
    stream, write_fd = pipe
    os.write(write_fd, b"x" * 11)
    os.close(write_fd)
    with pytest.raises(UsageError) as raised:
        piped.read(stream, 10)
    assert str(raised.value) == "the text on stdin is larger than 10 bytes"
    assert piped.read(io.BytesIO(b"x" * 10), 10) == piped.Piped(b"x" * 10)


@pytest.mark.parametrize(
    ("text", "words", "joined"),
    [
        ("DATA", "summarise", "DATA\n\nsummarise"),
        ("DATA\n", "summarise", "DATA\n\nsummarise"),
        ("DATA\n\n", "summarise", "DATA\n\nsummarise"),
        ("DATA\r\n", "summarise", "DATA\r\n\nsummarise"),
        ("DATA\n", None, "DATA\n"),
        ("DATA\n", "", "DATA\n"),
    ],
)
def test_the_piped_text_goes_first_a_blank_line_between(
    text: str, words: str | None, joined: str
) -> None:
    assert piped.join(text, words) == joined
