"""The template of an imported command: segments of text, argument references, shell snippets
and file includes; the name rule of imported tasks; and the plain-data form the config cache keeps.
"""

from __future__ import annotations

import re
from typing import Any, Final

from start.base.record import Record
from start.config.interop import FORMATS

# What an argument reference stands for.
ALL: Final = "all"  # every argument: $ARGUMENTS, {{args}}
WORD: Final = "word"  # one word of the arguments, counted from 0
REST: Final = "rest"  # the words from `index` on, joined by spaces (opencode's last $N)
PARAM: Final = "param"  # a named argument: a task parameter (Codex's $KEY)
FORMS: Final = (ALL, WORD, REST, PARAM)

# The environment variables a snippet reads the arguments from (documented in docs/interop.md).
INSTRUCTIONS_ENV: Final = "START_INSTRUCTIONS"
WORD_ENV: Final = "START_ARG_"  # START_ARG_1 is the first word
REST_ENV: Final = "START_REST_"  # START_REST_2 is the words from the second on
PARAM_ENV: Final = "START_PARAM_"

# One segment of an imported task's name: `git`, `fix-issue`, `my_cmd`, `v1.2`.
SEGMENT: Final = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"


class Text(Record):
    """Literal text of the template."""

    text: str


class Arg(Record):
    """A reference to the arguments; `literal` is how the file wrote it."""

    form: str  # ALL, WORD, REST or PARAM
    position: int = 0
    name: str = ""
    literal: str = ""

    @property
    def variable(self) -> str:
        """The environment variable that holds its value for a shell snippet."""
        if self.form == ALL:
            return INSTRUCTIONS_ENV
        if self.form == WORD:
            return f"{WORD_ENV}{self.position + 1}"
        if self.form == REST:
            return f"{REST_ENV}{self.position + 1}"
        return PARAM_ENV + self.name.upper()


class Snippet(Record):
    """A shell command whose output takes its place.

    `parts` is the command as written, with its argument references; `command` is the script
    that runs, where each reference reads its environment variable, quoted for its shell
    context (`"${START_ARG_1}"`), so no value is ever pasted into shell text.
    """

    parts: tuple[str | Arg, ...]
    command: str
    literal: str
    line: int


class Include(Record):
    """A file named in the template (`@path`, `@{path}`)."""

    path: str
    literal: str
    line: int


Segment = Text | Arg | Snippet | Include


class Imported(Record):
    """What a task imported from another agent's command file carries instead of a `prompt`.

    `command` is how the source CLI invokes it (`/review:pr`, `/prompts:ticket`); `body` is the
    template as written, for the trust review and `start show`.
    """

    format: str
    command: str
    body: str
    segments: tuple[Segment, ...]
    hint: str | None = None
    model: str | None = None
    # A skill (start.config.interop.skills): its folder, and the files in it below the folder.
    folder: str | None = None
    files: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        """What `start task` and `start show` call its origin: the format, or `skill`."""
        return "skill" if self.folder is not None else self.format

    def refs(self) -> list[Arg]:
        """Every argument reference, inside snippets too, in order."""
        found: list[Arg] = []
        for segment in self.segments:
            if isinstance(segment, Arg):
                found.append(segment)
            elif isinstance(segment, Snippet):
                found.extend(part for part in segment.parts if isinstance(part, Arg))
        return found

    def snippets(self) -> list[Snippet]:
        return [s for s in self.segments if isinstance(s, Snippet)]

    def includes(self) -> list[Include]:
        return [s for s in self.segments if isinstance(s, Include)]


# --- names ----------------------------------------------------------------------------------

_NAME: re.Pattern[str] | None = None


def name_problem(name: str) -> str | None:
    """Why `name` cannot be the name of an imported task (`SOURCE:SEGMENT[:SEGMENT...]`)."""
    global _NAME
    if _NAME is None:
        _NAME = re.compile(rf"({'|'.join(FORMATS)})(:{SEGMENT})+")
    if _NAME.fullmatch(name):
        return None
    return (
        f"invalid task name '{name}': a name with ':' is an imported command's, SOURCE:NAME, "
        f"where SOURCE is one of {', '.join(FORMATS)} and each ':'-separated part is letters, "
        "digits, '_', '.' and '-', such as 'claude:git:commit'"
    )


def segment_ok(segment: str) -> bool:
    return re.fullmatch(SEGMENT, segment) is not None


# --- plain data for the config cache --------------------------------------------------------


class BadDataError(ValueError):
    """Cached data that is not what `encode` writes."""


def encode(imported: Imported) -> tuple[Any, ...]:
    """The record as nested tuples of str, int and None (what marshal writes)."""
    segments: list[tuple[Any, ...]] = []
    for segment in imported.segments:
        if isinstance(segment, Text):
            segments.append(("t", segment.text))
        elif isinstance(segment, Arg):
            segments.append(("a", *segment))
        elif isinstance(segment, Snippet):
            parts = tuple(p if isinstance(p, str) else tuple(p) for p in segment.parts)
            segments.append(("s", parts, segment.command, segment.literal, segment.line))
        else:
            segments.append(("i", *segment))
    return (
        imported.format,
        imported.command,
        imported.body,
        tuple(segments),
        imported.hint,
        imported.model,
        imported.folder,
        imported.files,
    )


def decode(data: object) -> Imported:
    """The record `encode` wrote; BadDataError for anything else."""
    if type(data) is not tuple or len(data) != 8:
        raise BadDataError("not an imported template")
    form, command, body, raw, hint, model, folder, files = data
    if type(files) is not tuple:
        raise BadDataError("not an imported template")
    if form not in FORMATS or type(raw) is not tuple:
        raise BadDataError("not an imported template")
    segments: list[Segment] = []
    for entry in raw:
        if type(entry) is not tuple or not entry:
            raise BadDataError(f"{entry!r} is not a segment")
        tag, *rest = entry
        if tag == "t" and len(rest) == 1:
            segments.append(Text(_str(rest[0])))
        elif tag == "a":
            segments.append(_arg(tuple(rest)))
        elif tag == "s" and len(rest) == 4 and type(rest[0]) is tuple:
            parts = tuple(p if type(p) is str else _arg(p) for p in rest[0])
            segments.append(Snippet(parts, _str(rest[1]), _str(rest[2]), _int(rest[3])))
        elif tag == "i" and len(rest) == 3:
            segments.append(Include(_str(rest[0]), _str(rest[1]), _int(rest[2])))
        else:
            raise BadDataError(f"{entry!r} is not a segment")
    return Imported(
        _str(form),
        _str(command),
        _str(body),
        tuple(segments),
        None if hint is None else _str(hint),
        None if model is None else _str(model),
        None if folder is None else _str(folder),
        tuple(_str(f) for f in files),
    )


def _arg(data: object) -> Arg:
    if type(data) is not tuple or len(data) != 4 or data[0] not in FORMS:
        raise BadDataError(f"{data!r} is not an argument reference")
    form, index, name, literal = data
    return Arg(_str(form), _int(index), _str(name), _str(literal))


def _str(value: object) -> str:
    if type(value) is not str:
        raise BadDataError(f"{value!r} is not a string")
    return value


def _int(value: object) -> int:
    if type(value) is not int:
        raise BadDataError(f"{value!r} is not an integer")
    return value
