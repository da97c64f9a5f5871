"""Config files as a load reads them: which a layer holds, their bytes (bounded, through `fs`), and
their TOML, with each file's problems located at PATH:LINE:COL."""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import TYPE_CHECKING, Any

from start import fs
from start.errors import Problem
from start.record import Record

if TYPE_CHECKING:
    import tomllib

# The largest config file start reads; a config is text a person writes, far below this.
CONFIG_LIMIT = 4 * 1_048_576

# The files a layer may hold, in the order their items are defined.
LAYER_FILES = ("config.toml", "agents.toml", "roles.toml", "contexts.toml", "tasks.toml")

# Parts of tomllib's error messages (re caches each pattern once it is used).
_POSITION = r"\s*\(at line (\d+), column (\d+)\)$"
_AT_END = r"\s*\(at end of document\)$"


class ReadFile(Record):
    """A config file's exact bytes, and the parsed table or the syntax problem."""

    path: str
    data: bytes
    table: dict[str, Any] | None
    problem: Problem | None


def layer_paths(directory: str | None) -> list[str]:
    """The known config files present in a layer directory, in definition order.

    Present means anything with the name: a FIFO, a directory, a dangling symlink or a name that
    cannot be looked at is listed too, so that reading it reports the problem instead of the file
    being skipped in silence.
    """
    if directory is None or not _is_dir(directory):
        return []
    return [
        os.path.join(directory, name)
        for name in LAYER_FILES
        if _present(os.path.join(directory, name))
    ]


def layer_problem(directory: str | None) -> Problem | None:
    """Why a layer directory cannot be used although it is there: it is not a directory (or a
    dangling symlink), or its files cannot be looked at."""
    if directory is None:
        return None
    try:
        info = os.stat(directory)
    except FileNotFoundError:
        if os.path.islink(directory):
            target = os.readlink(directory)
            return Problem("error", directory, "", f"is a dangling symlink to {target}")
        return None
    except OSError as error:
        return Problem("error", directory, "", f"cannot be read: {_strerror(error)}")
    if not stat.S_ISDIR(info.st_mode):
        what = "a file" if stat.S_ISREG(info.st_mode) else fs.describe(info.st_mode)
        return Problem("error", directory, "", f"is {what}, not a directory")
    try:
        os.lstat(os.path.join(directory, LAYER_FILES[0]))
    except PermissionError as error:
        return Problem("error", directory, "", f"cannot be read: {_strerror(error)}")
    except OSError:
        pass
    return None


def _strerror(error: OSError) -> str:
    if error.errno == errno.EACCES:
        return "permission denied"
    if error.errno == errno.ELOOP:
        return "a symlink loop (too many levels of symbolic links)"
    return error.strerror or str(error)


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def _present(path: str) -> bool:
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return False  # an unsearchable directory is reported once, by layer_problem
    except OSError:
        return True  # something is there; reading it says what is wrong
    return True


def stray_toml(directory: str | None) -> list[str]:
    """TOML files in a layer directory that `start` does not read (likely misnamed)."""
    if directory is None or not _is_dir(directory):
        return []
    try:
        # os.scandir rather than Path.glob, whose pattern compiles a regex on every launch.
        with os.scandir(directory) as entries:
            names = [
                entry.name
                for entry in entries
                if entry.name.endswith(".toml")
                and entry.name not in LAYER_FILES
                and entry.is_file()
            ]
    except OSError:
        return []  # an unreadable directory is reported by layer_problem
    return sorted(os.path.join(directory, name) for name in names)


def read_bytes(path: str) -> tuple[bytes | None, Problem | None]:
    """A config file's bytes, or the problem that names why it cannot be read.

    Only a regular file is read, without blocking, and at most CONFIG_LIMIT bytes of it.
    """
    try:
        read = fs.read(path, CONFIG_LIMIT)
    except fs.FileError as error:
        return None, Problem("error", path, "", unreadable(path, error))
    if read.truncated:
        message = (
            f"is {read.size:,} bytes; a config file may be at most {CONFIG_LIMIT:,} bytes "
            "(see docs/configuration.md#file-limits)"
        )
        return None, Problem("error", path, "", message)
    return read.data, None


def is_dangling(path: str) -> bool:
    """Whether `path` is a symlink whose target does not exist (a loop is not dangling)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return os.path.islink(path)
    except OSError:
        return False
    return False


def unreadable(path: str, error: fs.FileError) -> str:
    """Why a config file cannot be read, in words that name what it really is."""
    if error.missing and is_dangling(path):
        return f"is a dangling symlink to {os.readlink(path)} (its target does not exist)"
    if error.reason.startswith("is "):
        return error.reason
    return f"cannot read the file: {error.reason}"


def read(path: str, data: bytes | None = None) -> ReadFile:
    """Read and parse one file. A syntax error becomes a Problem at PATH:LINE:COL.

    With `data`, parse those bytes as the file's (to validate an edit before it is written).
    """
    if data is None:
        data, problem = read_bytes(path)
        if data is None:
            return ReadFile(path, b"", None, problem)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        problem = Problem("error", path, "", "file is not valid UTF-8", line=line, column=column)
        return ReadFile(path, data, None, problem)
    # Imported here: a launch served from the config cache parses nothing, and one that parses
    # plain TOML needs no tomllib (about 3 ms to import; see start.config.plaintoml).
    from start.config import plaintoml

    table = plaintoml.loads(text)
    if table is not None:
        return ReadFile(path, data, table, None)
    import tomllib

    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return ReadFile(path, data, None, syntax_problem(path, text, error))
    except RecursionError:
        # tomllib parses arrays and inline tables recursively; a hostile file can nest deeper
        # than Python's stack allows.
        message = "arrays or inline tables are nested too deeply to read"
        return ReadFile(path, data, None, Problem("error", path, "", message))
    return ReadFile(path, data, table, None)


def syntax_problem(path: str, text: str, error: tomllib.TOMLDecodeError) -> Problem:
    message = str(error)
    line = getattr(error, "lineno", None)
    column = getattr(error, "colno", None)
    found = re.search(_POSITION, message)
    if found:
        line, column = int(found.group(1)), int(found.group(2))
        message = message[: found.start()]
    elif re.search(_AT_END, message):
        message = re.sub(_AT_END, "", message)
        lines = text.split("\n")
        line, column = len(lines), len(lines[-1]) + 1
    from start.config.positions import explain  # only on an error path

    line, column, message = explain(text, line or 1, column or 1, message.strip())
    return Problem("error", path, "", message, line=line, column=column)
