"""Roles, contexts and tasks named on the command line: by name, or by the path of a file.

`-c WORD`, `-r WORD` and `start task WORD` take a name or a path:

- a WORD that starts with `./`, `../`, `/` or `~` is a path;
- otherwise a name (for a task: a name, an alias or a unique prefix) wins over a file of the same
  spelling;
- otherwise, if a file exists at WORD (relative to the working directory), it is that file;
- otherwise a WORD that looks like a path (it has a `/`, or ends in a text file's extension such
  as `.md`) is a missing file (exit 2), and any other WORD an unknown name (exit 4, "did you
  mean").

A file named on the command line is the user's own: it needs no trust. It is read at launch like
any item's file (regular files only, `settings.file_size_limit`), and through the project root's
wall: a path inside the project that a symlink leads outside the root is refused (start.base.wall).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from start.base import paths
from start.base.errors import UnknownNameError, UsageError
from start.config.model import COMMAND_LINE, Context, Origin, Role, Task

T = TypeVar("T", Role, Context, Task)

FORCED = ("./", "../", "/", "~")

# The extensions of the text files a role, context or task is read from.
EXTENSIONS = (".md", ".markdown", ".txt", ".text", ".rst")


def forced_path(word: str) -> bool:
    """Whether WORD can only be a path: `./x`, `../x`, `/x`, `~/x` (and `.`, `..`, `~`)."""
    return word.startswith(FORCED) or word in (".", "..")


def looks_like_path(word: str) -> bool:
    """Whether WORD, when nothing is there, is a missing file rather than an unknown name."""
    return forced_path(word) or "/" in word or os.path.splitext(word)[1].lower() in EXTENSIONS


def location(word: str, workdir: str) -> str:
    """Where WORD points: `~` expanded, a relative path joined to the working directory.

    Not resolved: the wall judges the path as spelled and where its descriptor really is.
    """
    expanded = paths.expanduser(word)
    return expanded if os.path.isabs(expanded) else paths.join(workdir, expanded)


def pick(kind: str, word: str, workdir: str, by_name: Callable[[str], T], make: type[T]) -> T:
    """The item WORD names: `by_name(word)` (which raises UnknownNameError), else a file.

    Raises UnknownNameError (exit 4) for an unknown or ambiguous name, UsageError (exit 2) for
    a path to nothing.
    """
    if not forced_path(word):
        try:
            return by_name(word)
        except UnknownNameError as error:
            if error.candidates:
                raise
            if not looks_like_path(word) and not os.path.lexists(location(word, workdir)):
                raise
    return from_file(kind, word, workdir, make)


def from_file(kind: str, word: str, workdir: str, make: type[T]) -> T:
    """A role, context or task whose `file` is WORD; its origin is the command line."""
    path = location(word, workdir)
    if not os.path.lexists(path):
        raise UsageError(f"{kind} '{word}': no such file: {path}")
    return make(name=word, origin=Origin(COMMAND_LINE, path), file=str(path))
