"""Config files as a load reads them: which a layer holds, their bytes (bounded, through `fs`), and
their TOML, with each file's problems located at PATH:LINE:COL."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from typing import Any, Final

from start.base import fs
from start.base.errors import Problem
from start.base.record import Record

# The largest config file start reads; a config is text a person writes, far below this.
CONFIG_LIMIT = 4 * 1_048_576

# The files a layer may hold, in the order their items are defined.
LAYER_FILES = (
    "config.toml",
    "agents.toml",
    "roles.toml",
    "contexts.toml",
    "tasks.toml",
    "workflows.toml",
)

# Parts of tomllib's error messages (re caches each pattern once it is used).
_POSITION = r"\s*\(at line (\d+), column (\d+)\)$"
_AT_END = r"\s*\(at end of document\)$"

# A project file or directory that a symlink leads out of the project root: never read.
OUTSIDE = "is a symlink that leads outside the project root; start does not read it"


class ReadFile(Record):
    """A config file's exact bytes, and the parsed table or the syntax problem."""

    path: str
    data: bytes
    table: dict[str, Any] | None
    problem: Problem | None


def layer_paths(directory: str | None, root: str | None = None) -> list[str]:
    """The known config files present in a layer directory, in definition order.

    Present means anything with the name: a FIFO, a directory, a dangling symlink or a name that
    cannot be looked at is listed too, so that reading it reports the problem instead of the file
    being skipped in silence. With `root` (the project's real root), a directory that a symlink
    leads outside it holds none.
    """
    if directory is None or not _is_dir(directory) or outside(directory, root):
        return []
    return [
        os.path.join(directory, name)
        for name in LAYER_FILES
        if _present(os.path.join(directory, name))
    ]


def layer_problem(directory: str | None, root: str | None = None) -> Problem | None:
    """Why a layer directory cannot be used although it is there: it is not a directory (or a
    dangling symlink), its files cannot be looked at, or (with `root`, the project's real root) a
    symlink leads it outside the project root."""
    if directory is None:
        return None
    if outside(directory, root):
        return Problem("error", directory, "", OUTSIDE)
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


def stray_toml(directory: str | None, root: str | None = None) -> list[str]:
    """TOML files in a layer directory that `start` does not read (likely misnamed)."""
    if directory is None or not _is_dir(directory) or outside(directory, root):
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


def outside(path: str, root: str | None) -> bool:
    """Whether `root` (a project's real root) is given and `path` really is outside it.

    Every symlink on the way counts, whatever it points at: one that dangles outside the root
    leads outside too.
    """
    return root is not None and not fs.within(os.path.realpath(path), root)


def read_bytes(path: str, root: str | None = None) -> tuple[bytes | None, Problem | None]:
    """A config file's bytes, or the problem that names why it cannot be read.

    Only a regular file is read, without blocking, and at most CONFIG_LIMIT bytes of it. With
    `root` (a project file's real project root), a file that a symlink leads outside it is not
    opened, and one swapped for such a link while it was opened is not used.
    """
    if outside(path, root):
        return None, Problem("error", path, "", OUTSIDE)
    try:
        read = fs.read(path, CONFIG_LIMIT)
    except fs.FileError as error:
        return None, Problem("error", path, "", unreadable(path, error))
    if root is not None and not fs.within(read.real, root):
        return None, Problem("error", path, "", OUTSIDE)
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
    try:
        table = loads(text)
    except LimitError as error:
        problem = Problem("error", path, "", str(error), line=error.line, column=error.column)
        return ReadFile(path, data, None, problem)
    except ValueError as error:  # tomllib.TOMLDecodeError (tomllib is imported only to parse)
        return ReadFile(path, data, None, syntax_problem(path, text, error))
    return ReadFile(path, data, table, None)


# How each LimitError's message begins: start's own words, which quote nothing of the file.
LIMITS: Final = (
    "an integer has more than",
    "arrays or inline tables are nested too deeply",
    "a key has more than",
    "a value cannot be read",
)


class LimitError(ValueError):
    """TOML that Python cannot read whole: nested deeper than its stack, holding an integer with
    more digits than it converts (sys.get_int_max_str_digits), or a key of more dotted parts than
    MAX_KEY_PARTS. `line` and `column` say where, when that is known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = None if line is None else column or 1


# The most dotted parts in one key (`a.b.c` has three). tomllib's time grows with the square of
# a key's parts, so one hostile line of them could stall a load for hours; start's own keys have
# at most five.
MAX_KEY_PARTS = 64


def _too_dotted(text: str) -> int | None:
    """The line (from 1) of a key of more than MAX_KEY_PARTS parts, judged outside strings and
    comments, where a dot between two digits (a float) is no key's; None when there is none.
    Linear; the strings are found only when some line has that many dots at all."""
    if text.count(".") < MAX_KEY_PARTS or not any(
        line.count(".") >= MAX_KEY_PARTS for line in text.split("\n")
    ):
        return None
    from start.config.scanner import spans

    pieces, at = [], 0
    for span in spans(text):
        pieces.append(text[at : span.start])
        pieces.append(re.sub(r"[^\n]", " ", text[span.start : span.end]))
        at = span.end
    pieces.append(text[at:])
    key_dot = re.compile(r"(?<![0-9])\.|\.(?![0-9])")
    for number, line in enumerate("".join(pieces).split("\n"), 1):
        if len(key_dot.findall(line)) >= MAX_KEY_PARTS:
            return number
    return None


def loads(text: str) -> dict[str, Any]:
    """TOML text as a table, as a load reads config files and Gemini CLI and Qwen Code command
    files.

    Raises tomllib.TOMLDecodeError for a syntax error, or LimitError, whose message names the
    limit and quotes nothing of the text.
    """
    dotted = _too_dotted(text)
    if dotted is not None:
        raise LimitError(
            f"a key has more than {MAX_KEY_PARTS} dotted parts; start reads at most that", dotted
        )
    import tomllib  # here: a launch served from the config cache parses nothing

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except RecursionError:
        # tomllib parses arrays and inline tables recursively; a hostile file can nest deeper
        # than Python's stack allows.
        # Placed where the deepest nest starts, so an editor or CI can jump to it.
        from start.config.scanner import deepest_nest

        at = deepest_nest(text)
        line = column = None
        if at is not None:
            line = text.count("\n", 0, at) + 1
            column = at - (text.rfind("\n", 0, at) + 1) + 1
        raise LimitError(
            "arrays or inline tables are nested too deeply to read", line, column
        ) from None
    except ValueError as error:
        # int() of a decimal integer longer than Python converts. Its text names no line.
        if "integer string conversion" not in str(error):
            raise LimitError("a value cannot be read") from None
        limit = sys.get_int_max_str_digits()
        raise LimitError(
            f"an integer has more than {limit:,} digits; start reads at most that"
        ) from None


def syntax_problem(path: str, text: str, error: ValueError) -> Problem:
    """A tomllib.TOMLDecodeError at PATH:LINE:COL, put plainly where the mistake is a common one."""
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
