"""Reading the files that config and the command line name: regular files only, bounded in size,
and located by the open descriptor, so where a file really is is known at the moment it is read.

Every file `start` reads for a prompt or a config layer comes through `read`: a FIFO, a device, a
socket or a directory is refused before it can block or flood memory, a file larger than the limit
is cut at the limit, and the real path reported is the one of the descriptor the bytes came from
(no gap between checking a path and opening it).
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from start.base.errors import StartError
from start.base.record import Record

# Per-file cap for files read into prompts; `settings.file_size_limit` changes it.
DEFAULT_FILE_LIMIT = 1_048_576
# The bytes of a command's output kept by default (`command_output_limit`).
DEFAULT_OUTPUT_LIMIT = 1_048_576


class FileError(StartError):
    """A named file that cannot be read: missing, unreadable, or not a regular file."""

    def __init__(self, path: str, reason: str, *, missing: bool = False) -> None:
        self.path = path
        self.reason = reason
        self.missing = missing
        super().__init__(f"{path}: {reason}")


class Read(Record):
    """A file's bytes (at most the limit), where it really is, and its full size."""

    data: bytes
    real: str  # the real path of the open descriptor
    size: int  # the size fstat reported; larger than len(data) when the file was cut

    @property
    def truncated(self) -> int:
        """How many bytes were left unread because of the limit."""
        return max(0, self.size - len(self.data))


_FILE_TYPES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def describe(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, words in _FILE_TYPES:
        if test(mode):
            return words
    return "not a regular file"


def _reason(error: OSError) -> tuple[str, bool]:
    """The words for an open error, and whether it means the file does not exist."""
    if error.errno == errno.ENOENT:
        return "no such file", True
    if error.errno == errno.ELOOP:
        return "a symlink loop (too many levels of symbolic links)", False
    if error.errno == errno.ENOTDIR:
        return "a path component is not a directory", True
    if error.errno == errno.EACCES:
        return "permission denied", False
    return error.strerror or str(error), False


def read(path: str, limit: int = DEFAULT_FILE_LIMIT, *, follow: bool = True) -> Read:
    """The first `limit` bytes of a regular file, and the real path of what was read.

    Raises FileError naming the file. A dangling symlink is "missing"; a symlink loop, a FIFO, a
    device, a socket or a directory is refused without reading (or blocking on) it.
    """
    name = os.fspath(path)
    try:
        info = os.stat(name) if follow else os.lstat(name)
    except OSError as error:
        if error.errno == errno.ENOENT and os.path.lexists(name):
            reason = "a dangling symlink (its target does not exist)"
            raise FileError(name, reason, missing=True) from None
        reason, missing = _reason(error)
        raise FileError(name, reason, missing=missing) from None
    if not stat.S_ISREG(info.st_mode):
        raise FileError(name, f"is {describe(info.st_mode)}, not a regular file")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(name, flags)
    except OSError as error:
        reason, missing = _reason(error)
        raise FileError(name, reason, missing=missing) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped between the stat and the open
            raise FileError(name, f"is {describe(info.st_mode)}, not a regular file")
        real = real_path(fd, name, info)
        data = _read_at_most(fd, limit)
        return Read(data, real, max(info.st_size, len(data)))
    except OSError as error:
        raise FileError(name, error.strerror or str(error)) from None
    finally:
        os.close(fd)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = max(0, limit)
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def real_path(fd: int, name: str, info: os.stat_result | None = None) -> str:
    """The real path of an open file, from the descriptor itself where the OS tells it."""
    if sys.platform.startswith("linux"):
        try:
            found = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            found = ""
        if found.startswith("/") and not found.endswith(" (deleted)"):
            return found
    else:
        import fcntl

        get_path = getattr(fcntl, "F_GETPATH", None)  # macOS and the BSDs
        if get_path is not None:
            try:
                raw = fcntl.fcntl(fd, get_path, b"\0" * 1024)
                return os.fsdecode(raw.split(b"\0", 1)[0])
            except OSError:
                pass
    # Elsewhere: the resolved name, if it is still the very file that is open.
    resolved = os.path.realpath(name)
    info = info or os.fstat(fd)
    try:
        now = os.stat(resolved)
    except OSError:
        now = None
    if now is None or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
        raise FileError(name, "changed while it was being opened; try again")
    return resolved


def within(real: str, real_root: str) -> bool:
    """Whether the real path `real` is `real_root` or below it."""
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def text(data: bytes) -> str:
    """The one text rule for bytes from files, commands, arguments and stdin.

    UTF-8, with every invalid sequence and every NUL becoming U+FFFD, so the text can always be
    passed to an agent and a NUL can never cut an argument short.
    """
    return data.decode("utf-8", "replace").replace("\x00", "\ufffd")


def capped_text(data: bytes, dropped: int) -> str:
    """`data` as text, ending with a visible marker when `dropped` bytes were cut off after it.

    A character split by the cut is dropped whole, and counted.
    """
    if dropped:
        cut = utf8_boundary(data)
        dropped += len(data) - cut
        data = data[:cut]
    result = text(data)
    if dropped:
        if result and not result.endswith("\n"):
            result += "\n"
        result += f"[... truncated {dropped:,} bytes ...]\n"
    return result


def utf8_boundary(data: bytes | bytearray) -> int:
    """Where to cut `data` so that a character split at its end is dropped whole."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte & 0xC0 == 0x80:  # a continuation byte: keep looking for the lead
            continue
        need = 4 if byte >= 0xF0 else 3 if byte >= 0xE0 else 2 if byte >= 0xC2 else 1
        return end - back if 0xC2 <= byte <= 0xF4 and back < need else end
    return end


def arg_text(word: str) -> str:
    """A command-line word as text: bytes that were not UTF-8 (surrogate escapes) become U+FFFD."""
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        return text(os.fsencode(word))
    return word.replace("\x00", "\ufffd")


def sha256(data: bytes) -> str:
    """The SHA-256 of `data` as hex: the one digest `start` uses, for files, keys and records."""
    import hashlib

    return hashlib.sha256(data).hexdigest()
