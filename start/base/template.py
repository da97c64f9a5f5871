"""Placeholder scanning and single-pass filling, with the allowed placeholders of each scope."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from start.base.record import Record

# `{{name}}` is the literal text `{name}`; `{name}` is a placeholder; any other brace is plain
# text. A name is a lowercase ASCII letter, then lowercase letters, digits and underscores.
_NAME_CHARS: Final = "abcdefghijklmnopqrstuvwxyz0123456789_"

TASK_PROMPT: Final = frozenset(
    {"instructions", "file", "file_contents", "command", "command_output", "model", "date"}
)
ITEM_PROMPT: Final = frozenset(
    {"file", "file_contents", "command", "command_output", "model", "date"}
)
AGENT_COMMAND: Final = frozenset(
    {"bin", "model", "prompt", "role", "role_file", "date", "prompt_file", "prompt_dir", "args"}
)
# An agent's `print_command` (its headless form) may also name the file its CLI writes the answer
# to (codex exec -o FILE).
PRINT_COMMAND: Final = AGENT_COMMAND | {"answer_file"}
# An agent's `resume_command`: its headless form, continuing the conversation of {session}.
RESUME_COMMAND: Final = PRINT_COMMAND | {"session"}
# An agent's `large_prompt`: the short prompt sent instead of one too large for the command line.
LARGE_PROMPT: Final = frozenset({"prompt_file", "prompt_dir", "date"})
# An agent's `print_schema`: the options that hold its answer to a task's JSON Schema, given as
# compact JSON text or as a file.
PRINT_SCHEMA: Final = frozenset({"schema", "schema_file"})
# An agent's `print_max_turns`: the options that hold a headless run to a number of turns.
PRINT_MAX_TURNS: Final = frozenset({"max_turns"})
KNOWN: Final = TASK_PROMPT | ITEM_PROMPT | RESUME_COMMAND | PRINT_SCHEMA | PRINT_MAX_TURNS

SCOPE_NAMES: Final[Mapping[frozenset[str], str]] = {
    TASK_PROMPT: "task prompts",
    ITEM_PROMPT: "role and context prompts",
    AGENT_COMMAND: "agent commands",
    PRINT_COMMAND: "an agent's print_command",
    RESUME_COMMAND: "an agent's resume_command",
    LARGE_PROMPT: "an agent's large_prompt",
    PRINT_SCHEMA: "an agent's print_schema",
    PRINT_MAX_TURNS: "an agent's print_max_turns",
}


class Placeholder(Record):
    """A `{name}` found in a template, at character offset `start`."""

    name: str
    start: int


Segment = str | Placeholder


def _is_name(text: str) -> bool:
    return "a" <= text[:1] <= "z" and not text.strip(_NAME_CHARS)


def _tokens(template: str) -> Iterator[tuple[int, int, str, bool]]:
    """Each `{{name}}` and `{name}` as (start, end, name, escaped), from left to right.

    Every match starts at a brace and ends before the next, so the text is split at the braces:
    a piece that starts with a name and `}` is a placeholder, escaped when the brace before it
    follows another (an empty piece) and a second `}` follows. Any other brace is text.
    """
    pieces = template.split("{")
    at = len(pieces[0])  # where the brace before the piece is
    for index in range(1, len(pieces)):
        name, close, rest = pieces[index].partition("}")
        if close and _is_name(name):
            if index > 1 and not pieces[index - 1] and rest.startswith("}"):
                yield at - 1, at + len(name) + 3, name, True
            else:
                yield at, at + len(name) + 2, name, False
        at += len(pieces[index]) + 1


def scan(template: str) -> tuple[Segment, ...]:
    """Split a template into literal text and placeholders; `{{x}}` becomes the literal `{x}`."""
    segments: list[Segment] = []
    literal: list[str] = []
    pos = 0
    for start, end, name, escaped in _tokens(template):
        literal.append(template[pos:start])
        if escaped:
            literal.append("{" + name + "}")
        else:
            if literal:
                text = "".join(literal)
                if text:
                    segments.append(text)
                literal = []
            segments.append(Placeholder(name, start))
        pos = end
    literal.append(template[pos:])
    text = "".join(literal)
    if text:
        segments.append(text)
    return tuple(segments)


def names(template: str) -> list[str]:
    """The placeholder names a template uses, in order of first use."""
    # `_tokens`' rule without its tuples: validation asks this of every template.
    pieces = template.split("{")
    found: dict[str, None] = {}
    for index in range(1, len(pieces)):
        name, close, rest = pieces[index].partition("}")
        escaped = index > 1 and not pieces[index - 1] and rest.startswith("}")
        if close and not escaped and _is_name(name):
            found[name] = None
    return list(found)


def fill(segments: tuple[Segment, ...] | str, values: Mapping[str, str]) -> str:
    """Fill placeholders in one pass. Inserted values are never scanned again.

    A placeholder without a value stays as its literal `{name}` text.
    """
    if isinstance(segments, str):
        segments = scan(segments)
    out: list[str] = []
    for segment in segments:
        if isinstance(segment, Placeholder):
            value = values.get(segment.name)
            out.append("{" + segment.name + "}" if value is None else value)
        else:
            out.append(segment)
    return "".join(out)


class Finding(Record):
    """A placeholder problem: severity, the placeholder and what is wrong."""

    severity: str
    name: str
    message: str
    suggestion: str | None = None


def check(
    template: str, allowed: frozenset[str], extra: frozenset[str] = frozenset()
) -> list[Finding]:
    """Placeholder problems of a template in the scope whose names are `allowed`; `extra` names
    are allowed too (a task's parameters)."""
    return check_names(names(template), allowed, extra)


def check_names(
    used: Sequence[str], allowed: frozenset[str], extra: frozenset[str] = frozenset()
) -> list[Finding]:
    """`check` for a template whose placeholder names (`names`) are known already."""
    findings: list[Finding] = []
    scope = SCOPE_NAMES.get(allowed, "this location")
    for name in used:
        if name in allowed or name in extra:
            continue
        if name in KNOWN:
            # print_command takes every agent-command placeholder: name it only for its own.
            where = ", ".join(
                label
                for names_, label in SCOPE_NAMES.items()
                if name in names_
                and (names_ is not PRINT_COMMAND or name not in AGENT_COMMAND)
                and (names_ is not RESUME_COMMAND or name not in PRINT_COMMAND)
            )
            findings.append(
                Finding(
                    "error",
                    name,
                    f"placeholder {{{name}}} is not available in {scope}; it is allowed in {where}",
                )
            )
            continue
        import difflib  # only for an unknown name

        close = difflib.get_close_matches(name, sorted(allowed | extra), n=1, cutoff=0.8)
        if not close:
            close = difflib.get_close_matches(name, sorted(KNOWN), n=1, cutoff=0.8)
        if close:
            findings.append(
                Finding(
                    "error",
                    name,
                    f"unknown placeholder {{{name}}}",
                    "{" + close[0] + "}",
                )
            )
        else:
            findings.append(
                Finding(
                    "warning",
                    name,
                    f"unknown placeholder {{{name}}} is kept as literal text; "
                    f"write {{{{{name}}}}} to silence this",
                )
            )
    return findings
