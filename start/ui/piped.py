"""Text piped to `start prompt` and `start task` beside their words (docs/usage.md, "Piped text").

Stdin is read only when it is a regular file (`< notes.md`), or a pipe or socket that sends a
first byte, or closes, within WAIT seconds; then it is read to its end. A terminal, /dev/null
and any other device are never read, and neither is a pipe that stays open and silent (a CI
runner's, an editor's): after WAIT seconds the run goes on without it, and `note` says so.
"""

from __future__ import annotations

import os
import stat
from typing import IO, Final

from start.base.errors import UsageError
from start.base.record import Record

# Seconds a pipe may take to send its first byte (or to close) before start goes on without it.
WAIT: Final = 3.0
_CHUNK: Final = 1 << 16


class Piped(Record):
    """What stdin held: its bytes, or None when it was not read (and, for a silent pipe, why)."""

    data: bytes | None
    note: str | None = None


def silent(wait: float) -> str:
    """The note for a pipe that sent nothing in `wait` seconds."""
    return (
        f"stdin is a pipe that sent nothing in {wait:g} seconds, so start went on without it; "
        "pass --no-stdin (or < /dev/null) when nothing is piped; a file (< FILE) is read at once"
    )


def read(stream: IO[bytes] | None, limit: int, wait: float = WAIT) -> Piped:
    """The bytes piped to `stream` (stdin's buffer, not read from before), read to the end by the
    rules above.

    Raises UsageError (exit 2) when it holds more than `limit` bytes. A stream that is no file
    descriptor (a test's) is read unless it is a terminal.
    """
    if stream is None:  # stdin was closed when Python started
        return Piped(None)
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        if stream.isatty():
            return Piped(None)
        data = stream.read(limit + 1)
        return Piped(capped([data], len(data), limit))
    try:
        mode = os.fstat(fd).st_mode
    except OSError:  # closed
        return Piped(None)
    if os.isatty(fd):
        return Piped(None)
    if stat.S_ISREG(mode):
        return Piped(_rest(fd, b"", limit))
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return Piped(None)  # /dev/null, another device
    first = _now(fd)
    if first is None and not _ready(fd, wait):
        return Piped(None, silent(wait))
    if first == b"":
        return Piped(b"")  # closed without a byte
    return Piped(_rest(fd, first or b"", limit))


def _now(fd: int) -> bytes | None:
    """What the pipe holds at this moment: its first bytes, b"" when it is closed, None when it
    is open and empty. Most pipes have written or closed by the time start looks, and this look
    needs no `select` (a launch's imports, tests/test_import_hygiene.py)."""
    blocking = os.get_blocking(fd)
    os.set_blocking(fd, False)
    try:
        return os.read(fd, _CHUNK)
    except BlockingIOError:
        return None
    finally:
        os.set_blocking(fd, blocking)


def _ready(fd: int, wait: float) -> bool:
    """Whether `fd` has a byte to read, or has closed, within `wait` seconds."""
    import select

    poll = select.poll()
    poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poll.poll(wait * 1000))


def _rest(fd: int, first: bytes, limit: int) -> bytes:
    """`first` and the rest of `fd` up to its end; refused past `limit` bytes."""
    chunks, size = [first], len(first)
    while size <= limit:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return capped(chunks, size, limit)


def capped(chunks: list[bytes], size: int, limit: int) -> bytes:
    """The text of stdin, `size` bytes in `chunks`; refused past `limit` (the one rule for stdin,
    with or without words: `-i -` too). Bytes, not text: universal newlines would turn \r\n
    into \n."""
    if size > limit:
        raise UsageError(f"the text on stdin is larger than {limit:,} bytes")
    return b"".join(chunks)


def join(piped: str, text: str | None) -> str:
    """The piped text exactly, then the user's text after a blank line (none when it already
    ends with one): the order of `cat notes.md | llm "summarise"`."""
    if not text:
        return piped
    gap = "" if piped.endswith("\n\n") else "\n" if piped.endswith("\n") else "\n\n"
    return f"{piped}{gap}{text}"
