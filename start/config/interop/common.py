"""What the parsers share: their result, their findings, and the building of segments and
snippets (each argument reference in a snippet becomes an environment variable, quoted for its
shell context by start's command lexer)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from start.base.record import Record
from start.config.interop.model import Arg, Segment, Snippet, Text
from start.config.model import Param

if TYPE_CHECKING:
    from start.config.interop.frontmatter import Split

UNKNOWN_KEY = "unknown front matter key; not imported"


class Lines:
    """The line number of each offset into one text, in O(log n) after one pass over it: counting
    the newlines before each match from the start of the text is quadratic on a hostile file with
    many matches."""

    def __init__(self, text: str, first: int = 1) -> None:
        self._newlines: list[int] = []
        at = text.find("\n")
        while at >= 0:
            self._newlines.append(at)
            at = text.find("\n", at + 1)
        self.first = first

    def of(self, offset: int) -> int:
        import bisect

        return self.first + bisect.bisect_left(self._newlines, offset)


class Note(Record):
    """A finding about a command file, for `start config validate`: always a warning."""

    line: int | None
    key: str
    message: str


def front_matter_notes(
    split: Split, used: Collection[str], runtime: Mapping[str, str], unknown: str = UNKNOWN_KEY
) -> list[Note]:
    """The lines of front matter that are not fields, and each key that start does not use: why
    (from `runtime`, the keys the agent acts on when it runs), or `unknown`."""
    notes = [Note(line, "", message) for line, message in split.problems]
    for key, field in split.fields.items():
        if key in used:
            continue
        why = runtime.get(key)
        notes.append(Note(field.line, key, unknown if why is None else f"not imported: {why}"))
    return notes


class Parsed(Record):
    """A command file's text as a template, with its metadata and the findings on the way."""

    segments: tuple[Segment, ...]
    body: str
    description: str | None = None
    hint: str | None = None
    model: str | None = None
    params: tuple[Param, ...] = ()
    notes: tuple[Note, ...] = ()


class UnusableError(ValueError):
    """A command file that cannot become a task (it is skipped, with a warning)."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class Segments:
    """Segments in the making: adjacent text is joined."""

    def __init__(self) -> None:
        self.items: list[Segment] = []

    def text(self, text: str) -> None:
        if not text:
            return
        if self.items and isinstance(self.items[-1], Text):
            self.items[-1] = Text(self.items[-1].text + text)
        else:
            self.items.append(Text(text))

    def add(self, segment: Segment) -> None:
        if isinstance(segment, Text):
            self.text(segment.text)
        else:
            self.items.append(segment)

    def done(self) -> tuple[Segment, ...]:
        return tuple(self.items)


def snippet(parts: list[str | Arg], literal: str, line: int) -> Snippet:
    """A shell snippet whose argument references read environment variables.

    Each reference is written as its variable, quoted for where it stands: `"${START_ARG_1}"`
    outside quotes, `${START_ARG_1}` inside double quotes, `'"${START_ARG_1}"'` inside single
    quotes. The value is never part of the script, so the shell reads it as one value whatever
    it holds. Raises UnusableError when the script cannot be lexed (a here-document, an
    unterminated quote) and so a reference's context cannot be known.
    """
    joined: list[str | Arg] = []
    for part in parts:
        if isinstance(part, str) and joined and isinstance(joined[-1], str):
            joined[-1] += part
        elif part != "":
            joined.append(part)
    if not any(isinstance(part, Arg) for part in joined):
        return Snippet(tuple(joined), "".join(str(p) for p in joined), literal, line)
    from start.base.template import Placeholder
    from start.proc.shellwords import lex_units

    units: list[str | Placeholder] = []
    for part in joined:
        if isinstance(part, str):
            units.extend(part)
        else:
            units.append(Placeholder(part.variable, 0))
    lexed = lex_units(units, groups=False, variables=True)
    if lexed.problems:
        raise UnusableError(
            line,
            f"the shell command {literal!r} cannot take the arguments safely: "
            f"{lexed.problems[0]}; it is not imported",
        )
    return Snippet(tuple(joined), lexed.script_text(), literal, line)


def first_line(body: str) -> str | None:
    """The first non-blank line of a body, for a default description."""
    for line in body.split("\n"):
        if line.strip():
            return line.strip()
    return None
