"""A skill's SKILL.md as a task's template: its front matter, Claude Code's rules, the folder."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from typing import Final

from start.config.interop import frontmatter
from start.config.interop.common import Note, Parsed, first_line
from start.config.interop.model import Segment, Snippet, Text

BASE: Final = "Base directory for this skill: "  # Claude Code's first line of a skill's text
SKILL_DIR: Final = "${CLAUDE_SKILL_DIR}"

# Front matter that start uses, or that only says what the skill is (the Agent Skills fields).
USED: Final = ("name", "description", "argument-hint", "arguments", "model")
INFO: Final = ("license", "compatibility", "metadata")
RUNTIME: Final = {
    "allowed-tools": "start cannot grant the agent tool permissions; the agent asks as usual "
    "(the shell commands of this skill run at launch, once its project is trusted)",
    "disallowed-tools": "start cannot take tools away from the agent",
    "disable-model-invocation": "start runs a skill only when you name it",
    "user-invocable": "start runs a skill only when you name it",
    "context": "start cannot fork a sub-agent's context",
    "agent": "start has no sub-agents; pick the agent with -a",
    "effort": "start cannot set Claude Code's reasoning effort",
    "hooks": "start cannot install Claude Code hooks",
    "paths": "start does not scope skills to paths",
    "when_to_use": "start does not offer skills to the model",
}


def parse(text: str, folder: str, *, claude: bool) -> Parsed:
    """A SKILL.md's text (BOM and CRLF gone) as a template whose text starts with the folder.

    With `claude`, the body is expanded by Claude Code's rules, and `${CLAUDE_SKILL_DIR}` is the
    folder (Claude Code replaces it before anything else). Without, it is text as written.
    """
    split = frontmatter.split(text)
    fields = split.fields
    nested = _nested_lines(text)
    notes = [Note(line, "", message) for line, message in split.problems if line not in nested]
    for key, field in fields.items():
        if key in USED or key in INFO or (key == "model" and claude):
            continue
        why = RUNTIME.get(key)
        message = (
            "unknown front matter key; not imported" if why is None else f"not imported: {why}"
        )
        notes.append(Note(field.line, key, message))
    if "name" in fields and fields["name"].text() != os.path.basename(folder):
        notes.append(
            Note(
                fields["name"].line,
                "name",
                f"the skill's folder names it '{os.path.basename(folder)}', not "
                f"'{fields['name'].text()}'; start calls it by its folder",
            )
        )
    head = Text(f"{BASE}{folder}\n")
    description = fields["description"].text() if "description" in fields else None
    hint = fields["argument-hint"].written() if "argument-hint" in fields else None
    names = _arguments(fields)
    if hint is None and names:
        hint = " ".join(f"[{name}]" for name in names)
    if not claude:
        if "model" in fields:
            notes.append(Note(fields["model"].line, "model", "not imported: only Claude Code's "
                              "skills (.claude/skills) choose a model"))  # fmt: skip
        segments: tuple[Segment, ...] = (head, Text(split.body)) if split.body else (head,)
        return Parsed(
            segments,
            split.body,
            description or first_line(split.body),
            hint or None,
            None,
            notes=tuple(notes),
        )
    from start.config.interop import claude as rules

    parsed = rules.parse(text)
    # Its own notes on the front matter are a command's; the skill's are above.
    keyed = {line for line, _ in split.problems} | {field.line for field in fields.values()}
    for note in parsed.notes:
        if note.line in keyed or note.key:
            continue
        if SKILL_DIR in note.message:
            continue  # replaced below
        notes.append(note)
    segments = (head, *(_with_folder(segment, folder) for segment in parsed.segments))
    return Parsed(
        _joined(segments),
        parsed.body,
        parsed.description,
        hint or None,
        parsed.model,
        notes=tuple(notes),
    )


def _arguments(fields: dict[str, frontmatter.Field]) -> list[str]:
    if "arguments" not in fields:
        return []
    value = fields["arguments"].value
    names = value if isinstance(value, list) else value.split()
    return [name for name in names if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)]


def _nested_lines(text: str) -> set[int]:
    """The lines of the front matter that are indented: a `metadata:` map's entries, which the
    Agent Skills format allows and start does not read."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return set()
    found: set[int] = set()
    for index in range(1, len(lines)):
        if lines[index].rstrip() == "---":
            break
        if lines[index][:1] in (" ", "\t"):
            found.add(index + 1)
    return found


def _with_folder(segment: Segment, folder: str) -> Segment:
    """`${CLAUDE_SKILL_DIR}` as the folder: in text, the path; in a shell command, a variable."""
    if isinstance(segment, Text):
        return Text(segment.text.replace(SKILL_DIR, folder))
    if isinstance(segment, Snippet) and "CLAUDE_SKILL_DIR" in segment.command:
        command = f"CLAUDE_SKILL_DIR={shlex.quote(folder)}\n{segment.command}"
        return segment._replace(command=command)
    return segment


def _joined(segments: Iterable[Segment]) -> tuple[Segment, ...]:
    out: list[Segment] = []
    for segment in segments:
        if isinstance(segment, Text) and out and isinstance(out[-1], Text):
            out[-1] = Text(out[-1].text + segment.text)
        elif not (isinstance(segment, Text) and not segment.text):
            out.append(segment)
    return tuple(out)
