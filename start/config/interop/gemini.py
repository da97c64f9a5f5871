"""Gemini CLI's custom commands (`.gemini/commands/**/*.toml`), and Qwen Code's (`.qwen/commands`,
the same TOML form and a Markdown form), as templates.

The rules, read in google-gemini/gemini-cli@5411f113 (docs/cli/custom-commands.md and
packages/cli/src/services/):

- TOML with `prompt` (a string, required) and `description` (default: "Custom command from
  FILE"); other keys are ignored (FileCommandLoader.ts).
- `{{args}}` is the arguments; outside `!{...}` as typed, inside it escaped for the shell
  (prompt-processors/shellProcessor.ts). Without `{{args}}` anywhere, arguments append the
  typed line `/name args` after a blank line (argumentProcessor.ts, partUtils.ts).
- `!{cmd}` runs a command (braces must balance; the content is trimmed; an empty one is dropped);
  its output (stdout and stderr) replaces it (injectionParser.ts, shellProcessor.ts).
- `@{path}` inlines a file (prompt-processors/atFileProcessor.ts).

Qwen Code (QwenLM/qwen-code, a Gemini CLI fork) reads both `*.toml` and `*.md` (front matter with
`description` and `argument-hint`, then the body, trimmed), with the same syntax
(packages/cli/src/services/markdown-command-parser.ts).
"""

from __future__ import annotations

import re
from typing import Final

from start.config import files
from start.config.interop import frontmatter
from start.config.interop.common import (
    Lines,
    Note,
    Parsed,
    Segments,
    UnusableError,
    front_matter_notes,
    snippet,
)
from start.config.interop.model import ALL, Arg, Include, Segment

ARGS: Final = "{{args}}"
QWEN_MARKDOWN: Final = ("description", "argument-hint")
QWEN_RUNTIME: Final = {
    "when_to_use": "start does not offer commands to the model",
    "disable-model-invocation": "it only keeps the model from running the command by itself; "
    "start runs a task only when you name it",
}


def parse_toml(text: str, filename: str, *, qwen: bool = False) -> Parsed:
    """A TOML command file as a template; UnusableError when it cannot be one."""
    try:
        table = files.loads(text)
    except files.LimitError as error:
        raise UnusableError(error.line, str(error)) from None
    except ValueError as error:  # tomllib.TOMLDecodeError
        at = re.search(r"\(at line (\d+), column \d+\)", str(error))
        line = int(at.group(1)) if at else None
        raise UnusableError(line, f"not valid TOML: {error}") from None
    notes: list[Note] = []
    prompt = table.get("prompt")
    if not isinstance(prompt, str):
        what = "missing" if prompt is None else "not a string"
        raise UnusableError(None, f"'prompt' is {what}; Gemini CLI needs it as a string")
    description = table.get("description")
    where = _key_lines(text)
    for key in table:
        if key == "description" and not isinstance(description, str):
            notes.append(Note(where.get(key), key, "not a string; not imported"))
        elif key not in ("prompt", "description"):
            notes.append(Note(where.get(key), key, "not used by Gemini CLI; not imported"))
    first = where.get("prompt") or 1
    # `[ \t]`, not `\s`: a `\s*` after `^` spans blank lines, and backtracked over all of them
    # from every line start.
    if re.search(r"(?m)^[ \t]*prompt[ \t]*=[ \t]*(\"\"\"|''')[ \t]*$", text):
        first += 1
    segments = _segments(prompt, first, notes, qwen=qwen)
    default = f"Custom command from {filename}"
    return Parsed(
        segments,
        prompt,
        description if isinstance(description, str) and description else default,
        notes=tuple(notes),
    )


def parse_markdown(text: str) -> Parsed:
    """A Qwen Code Markdown command file as a template."""
    split = frontmatter.split(text)
    unknown = "not imported: start has no equivalent"
    notes = front_matter_notes(split, QWEN_MARKDOWN, QWEN_RUNTIME, unknown)
    segments = _segments(split.body, split.body_line, notes, qwen=True)
    fields = split.fields
    description = fields["description"].text() if "description" in fields else None
    hint = fields["argument-hint"].written() if "argument-hint" in fields else None
    return Parsed(segments, split.body, description or None, hint or None, notes=tuple(notes))


def _key_lines(text: str) -> dict[str, int]:
    """The line of each bare key's first `KEY =` at the start of a line, found in one pass (a
    search for each key rescanned the file once per key)."""
    lines = Lines(text)
    found: dict[str, int] = {}
    for match in re.finditer(r"(?m)^[ \t]*([A-Za-z0-9_-]+)[ \t]*=", text):
        found.setdefault(match.group(1), lines.of(match.start()))
    return found


def _segments(prompt: str, first: int, notes: list[Note], *, qwen: bool) -> tuple[Segment, ...]:
    """`{{args}}`, `!{...}` and `@{...}`; for Qwen Code, `$ARGUMENTS` inside `!{...}` too.

    Qwen Code 0.24.4 (shellProcessor.ts in its npm bundle) fills `$ARGUMENTS` only in a shell
    command; elsewhere it is text (decision D-Q1). An `@{...}` that holds `{{args}}` names no file
    (Gemini CLI leaves it as written, then fills `{{args}}` in it), so it is text.
    """
    out = Segments()
    lines = Lines(prompt, first)
    position = 0
    kept: int | None = None  # where a `$ARGUMENTS` outside `!{...}` was first kept
    # Where each token next occurs at or after `position` (None: nowhere). A token is looked for
    # again only once `position` has passed it, so the prompt is scanned once per token.
    after: dict[str, int | None] = dict.fromkeys((ARGS, "!{", "@{"), -1)
    while True:
        for token, index in after.items():
            if index is not None and index < position:
                found_at = prompt.find(token, position)
                after[token] = found_at if found_at >= 0 else None
        found = [(index, token) for token, index in after.items() if index is not None]
        if not found:
            break
        index, token = min(found)
        if qwen and kept is None and "$ARGUMENTS" in prompt[position:index]:
            kept = prompt.index("$ARGUMENTS", position)
        out.text(prompt[position:index])
        line = lines.of(index)
        if token == ARGS:
            out.add(Arg(ALL, literal=token))
            position = index + len(token)
            continue
        end = _closing(prompt, index + 2)
        if end < 0:
            raise UnusableError(
                line,
                f"'{token}' is not closed with a matching '}}'; Gemini CLI refuses to run the "
                "command (Invalid syntax)",
            )
        content = prompt[index + 2 : end].strip()
        literal = prompt[index : end + 1]
        if token == "@{" and ARGS in literal:
            out.text("@")
            position = index + 1
            continue
        position = end + 1
        if token == "@{":
            out.add(Include(content, literal, line))
        elif content:
            refs = (ARGS, "$ARGUMENTS") if qwen else (ARGS,)
            out.add(_snippet(content, literal, line, refs))
    if qwen and kept is None and "$ARGUMENTS" in prompt[position:]:
        kept = prompt.index("$ARGUMENTS", position)
    out.text(prompt[position:])
    if kept is not None:
        notes.append(
            Note(
                lines.of(kept),
                "",
                "$ARGUMENTS outside !{...} is kept as written, as Qwen Code 0.24.4 does (it fills "
                "it only in a shell command); write {{args}} for the arguments",
            )
        )
    return out.done()


def _closing(text: str, start: int) -> int:
    """The index of the `}` that balances an opening brace just before `start`, or -1."""
    depth = 1
    for index in range(start, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    return -1


def _snippet(content: str, literal: str, line: int, refs: tuple[str, ...]) -> Segment:
    parts: list[str | Arg] = []
    pattern = "|".join(re.escape(r) for r in refs)
    position = 0
    for match in re.finditer(pattern, content):
        parts.append(content[position : match.start()])
        parts.append(Arg(ALL, literal=match.group()))
        position = match.end()
    parts.append(content[position:])
    return snippet(parts, literal, line)
