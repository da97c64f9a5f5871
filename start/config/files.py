"""Reads config files: the one place that opens them. Each file is read once per run."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

from start.errors import Problem

# The largest config file start reads; a config is text a person writes, far below this.
CONFIG_LIMIT = 4 * 1_048_576

# The files a layer may hold, in the order their items are defined.
LAYER_FILES = ("config.toml", "agents.toml", "roles.toml", "contexts.toml", "tasks.toml")

_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_AT_END = re.compile(r"\s*\(at end of document\)$")


class ReadFile(NamedTuple):
    """A config file's exact bytes, and the parsed table or the syntax problem."""

    path: Path
    data: bytes
    table: dict[str, Any] | None
    problem: Problem | None


def new_sha256() -> Any:
    """A SHA-256 hasher, without loading OpenSSL when CPython's own will do."""
    try:
        # hashlib imports the OpenSSL binding, about 5 ms that every launch would pay.
        from _sha256 import sha256 as new  # type: ignore[import-not-found] # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256 as new  # type: ignore[import-not-found] # CPython 3.12+
        except ImportError:
            from hashlib import sha256 as new
    return new()


def sha256(data: bytes) -> str:
    """The SHA-256 of `data` as hex."""
    hasher = new_sha256()
    hasher.update(data)
    digest: str = hasher.hexdigest()
    return digest


def layer_paths(directory: Path | None) -> list[Path]:
    """The known config files that exist in a layer directory, in definition order."""
    if directory is None or not directory.is_dir():
        return []
    return [directory / name for name in LAYER_FILES if (directory / name).is_file()]


def stray_toml(directory: Path | None) -> list[Path]:
    """TOML files in a layer directory that `start` does not read (likely misnamed)."""
    if directory is None or not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.toml") if p.name not in LAYER_FILES and p.is_file())


def read(path: Path, data: bytes | None = None) -> ReadFile:
    """Read and parse one file. A syntax error becomes a Problem at PATH:LINE:COL.

    With `data`, parse those bytes as the file's (to validate an edit before it is written).
    """
    if data is None:
        data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        problem = Problem("error", path, "", "file is not valid UTF-8", line=line, column=column)
        return ReadFile(path, data, None, problem)
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return ReadFile(path, data, None, syntax_problem(path, text, error))
    return ReadFile(path, data, table, None)


def syntax_problem(path: Path, text: str, error: tomllib.TOMLDecodeError) -> Problem:
    message = str(error)
    line = getattr(error, "lineno", None)
    column = getattr(error, "colno", None)
    found = _POSITION.search(message)
    if found:
        line, column = int(found.group(1)), int(found.group(2))
        message = message[: found.start()]
    elif _AT_END.search(message):
        message = _AT_END.sub("", message)
        lines = text.split("\n")
        line, column = len(lines), len(lines[-1]) + 1
    from start.config.positions import explain  # only on an error path

    line, column, message = explain(text, line or 1, column or 1, message.strip())
    return Problem("error", path, "", message, line=line, column=column)
