"""Claude Code's custom commands (`.claude/commands/**/*.md`) as templates.

The rules, from the documentation (https://code.claude.com/docs/en/skills, formerly
/docs/claude-code/slash-commands) and the CHANGELOG of anthropics/claude-code ("CL x.y.z"):

- Markdown with optional front matter: `description` (default: the body's first line),
  `argument-hint`, `model`, `arguments` (names for `$name`); the rest concerns Claude Code's own
  runtime (`allowed-tools`, ...) and is reported as not imported.
- `$ARGUMENTS` is the arguments as typed; `$ARGUMENTS[N]` and `$N` are the N-th word counted from 0
  (CL 2.1.19); `$name` is the word at the position of `name` in `arguments`; `\\$` before one of
  these is a literal `$` (CL 2.1.163). A reference to a word that was not given stays as written
  (CL 2.1.210). Values are never expanded again (CL 2.1.233).
- `` !`cmd` `` (at the start of a line or after a blank) and a ```` ```! ```` fenced block run a
  shell command whose output takes their place (CL 1.0.30).
- `@path` names a file that Claude Code attaches; the text stays (CL 1.0.30).
"""

from __future__ import annotations

import re
from typing import Final

from start.config.interop import frontmatter
from start.config.interop.common import (
    Lines,
    Note,
    Parsed,
    Segments,
    first_line,
    front_matter_notes,
    snippet,
)
from start.config.interop.model import ALL, WORD, Arg, Include, Segment, Snippet

TRANSLATED: Final = ("description", "argument-hint", "model", "arguments")
# Front matter of Claude Code that concerns its own runtime, with why start cannot carry it.
RUNTIME: Final = {
    "allowed-tools": "start cannot grant the agent tool permissions; the agent asks as usual "
    "(the shell commands of this file run at launch, once its project is trusted)",
    "disallowed-tools": "start cannot take tools away from the agent",
    "disable-model-invocation": "it only keeps Claude from running the command by itself; "
    "start runs a task only when you name it",
    "user-invocable": "start runs a task only when you name it",
    "context": "start cannot fork a sub-agent's context",
    "agent": "start has no sub-agents; pick the agent with -a",
    "effort": "start cannot set Claude Code's reasoning effort",
    "hooks": "start cannot install Claude Code hooks",
    "paths": "start does not scope commands to paths",
    "background": "start cannot run a command in the background",
    "name": "the file's path names an imported command",
    "when_to_use": "start does not offer commands to the model",
}
_RUNTIME_VALUE: Final = re.compile(r"\$\{CLAUDE_[A-Z_]+\}")
_CLOSE: Final = re.compile(r"^```[ \t]*$", re.MULTILINE)


def parse(text: str) -> Parsed:
    """A command file's text (BOM and CRLF already gone) as a template."""
    # Claude Code 2.1.332 keeps the blank space at the end of the body (checked with claude -p).
    split = frontmatter.split(text, keep_end=True)
    notes = front_matter_notes(split, TRANSLATED, RUNTIME)
    fields = split.fields
    names: list[str] = []
    if "arguments" in fields:
        value = fields["arguments"].value
        names = value if isinstance(value, list) else value.split()
        names = [name for name in names if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)]
    segments = _segments(split.body, split.body_line, names, notes)
    description = fields["description"].text() if "description" in fields else None
    hint = fields["argument-hint"].written() if "argument-hint" in fields else None
    model = fields["model"].text() if "model" in fields else None
    return Parsed(
        segments,
        split.body,
        description or first_line(split.body),
        hint or None,
        model or None,
        notes=tuple(notes),
    )


def _refs(names: list[str]) -> str:
    named = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    # `$N` is any number not followed by a word character, as Claude Code's `\$(\d+)(?!\w)`: `$1M`
    # and `$10x` are text, `$10` is the word numbered 10.
    refs = r"\$ARGUMENTS\[(?P<n>\d+)\]|\$ARGUMENTS|\$(?P<d>\d+)(?!\w)"
    if named:
        refs += rf"|\$(?P<name>{named})\b"
    return refs


def _pattern(names: list[str]) -> re.Pattern[str]:
    named = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    refs = _refs(names)
    return re.compile(
        r"(?P<fence>^```![ \t]*\n)"
        r"|(?P<inline>(?:^|(?<=\s))!`(?P<cmd>[^`]+)`)"
        rf"|(?P<escape>\\\$(?=ARGUMENTS|\d{'|' + named if named else ''}))"
        rf"|(?P<ref>{refs})"
        r"|(?P<at>(?<![\w`])@(?P<path>[^\s`,]*[^\s`,.;:!?)\]'\"]))",
        re.MULTILINE | re.DOTALL,
    )


def _arg(match: re.Match[str], names: list[str]) -> Arg:
    literal = match.group("ref")
    if match.group("n") is not None:
        return Arg(WORD, int(match.group("n")), literal=literal)
    if match.group("d") is not None:
        return Arg(WORD, int(match.group("d")), literal=literal)
    name = match.groupdict().get("name")
    if name is not None:
        return Arg(WORD, names.index(name), name, literal)
    return Arg(ALL, literal=literal)


def _segments(body: str, first: int, names: list[str], notes: list[Note]) -> tuple[Segment, ...]:
    pattern = _pattern(names)
    inside = re.compile(rf"(?P<ref>{_refs(names)})")
    out = Segments()
    refs: list[tuple[Arg, int]] = []
    lines = Lines(body, first)
    position = searched = 0
    unclosed = len(body) + 1  # no fence closes at or after this offset
    while (match := pattern.search(body, searched)) is not None:
        searched = match.end()
        line = lines.of(match.start())
        if match.group("fence") is not None:
            # The closing line is looked for apart, and once found missing never again: a lazy
            # `.*?` to it rescanned the rest of the file for every opening line.
            close = _CLOSE.search(body, match.end()) if match.end() < unclosed else None
            if close is None:
                unclosed = min(unclosed, match.end())
                searched = match.start() + 1  # an unclosed opening line is text
                continue
            out.text(body[position : match.start()])
            position = searched = close.end()
            script = body[match.end() : close.start()].rstrip("\n")
            out.add(_snippet(script, body[match.start() : close.end()], line, inside, names, refs))
            continue
        out.text(body[position : match.start()])
        position = match.end()
        if match.group("inline") is not None:
            out.add(_snippet(match.group("cmd"), match.group(0), line, inside, names, refs))
        elif match.group("escape") is not None:
            out.text("$")
        elif match.group("ref") is not None:
            arg = _arg(match, names)
            refs.append((arg, line))
            out.add(arg)
        elif inside.search(match.group("path")):
            # `@$1`, `@src/$ARGUMENTS.ts`: Claude Code fills the placeholder wherever it stands,
            # so the `@` is text and the scan goes on after it.
            out.text("@")
            position = searched = match.start() + 1
        else:
            out.add(Include(match.group("path"), match.group(0), line))
    out.text(body[position:])
    for found in _RUNTIME_VALUE.finditer(body):
        line = lines.of(found.start())
        notes.append(
            Note(line, "", f"{found.group()} is a value of Claude Code's runtime; kept as written")
        )
    _check_base(refs, notes)
    return out.done()


def _snippet(
    script: str,
    literal: str,
    line: int,
    pattern: re.Pattern[str],
    names: list[str],
    refs: list[tuple[Arg, int]],
) -> Snippet:
    """A snippet; inside it only argument references count (`\\$` stays for the shell)."""
    parts: list[str | Arg] = []
    position = 0
    for match in pattern.finditer(script):
        if match.start() > 0 and script[match.start() - 1] == "\\":
            continue
        parts.append(script[position : match.start()])
        arg = _arg(match, names)
        refs.append((arg, line))
        parts.append(arg)
        position = match.end()
    parts.append(script[position:])
    return snippet(parts, literal, line)


def _check_base(refs: list[tuple[Arg, int]], notes: list[Note]) -> None:
    """D-C1: a file that uses $1..$9 but never $0 or $ARGUMENTS[N] was probably written for the
    numbering before Claude Code 2.1.19, when $1 was the first word."""
    digits = [(arg, line) for arg, line in refs if re.fullmatch(r"\$[1-9]", arg.literal)]
    zero = any(arg.literal == "$0" or arg.literal.startswith("$ARGUMENTS[") for arg, _ in refs)
    if digits and not zero:
        arg, line = digits[0]
        notes.append(
            Note(
                line,
                "",
                f"{arg.literal} is the word numbered {arg.position} counting from 0 (Claude Code "
                "2.1.19 and later; $0 is the first word), and this file never uses $0; if it was "
                "written when $1 was the first word, renumber it",
            )
        )
