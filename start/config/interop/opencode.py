"""opencode's custom commands (`.opencode/command[s]/**/*.md`) as templates.

The rules, read in anomalyco/opencode (formerly sst/opencode): the docs
(packages/web/src/content/docs/commands.mdx), the loader (packages/opencode/src/config/command.ts,
markdown.ts) and the expansion (packages/opencode/src/session/prompt.ts, SessionPrompt.command),
with PRs #3456 (positional arguments) and #9606 (arguments appended when nothing uses them):

- Markdown with front matter (`description`, `agent`, `model`, `subtask`); the body, trimmed, is
  the template.
- `$1`, `$2`, ... are words counted from 1 (any number of digits); the highest number in the
  template takes that word and every word after it; a missing word is empty. `$ARGUMENTS` is the
  arguments as typed.
- Without `$N` or `$ARGUMENTS`, arguments are appended after a blank line.
- `` !`cmd` `` runs a command anywhere in the text; its standard output, as it is, replaces it.
- `@path` names a file that opencode attaches; the text stays. The whole text is trimmed.
"""

from __future__ import annotations

import re
from typing import Final

from start.config.interop import frontmatter
from start.config.interop.common import Lines, Note, Parsed, Segments, front_matter_notes, snippet
from start.config.interop.model import ALL, REST, WORD, Arg, Include, Segment

TRANSLATED: Final = ("description", "model")
RUNTIME: Final = {
    "agent": "start has no opencode agents; pick the role with -r and the agent with -a",
    "subtask": "start cannot run a command as a sub-agent",
}
_REF: Final = r"\$(?P<n>\d+)|\$ARGUMENTS"
_FILE: Final = r"(?<![\w`])@(?P<path>\.?[^\s`,.]*(?:\.[^\s`,.]+)*)"


def parse(text: str) -> Parsed:
    split = frontmatter.split(text)
    notes = front_matter_notes(split, TRANSLATED, RUNTIME)
    body, first = split.body, split.body_line
    numbers = [int(n) for n in re.findall(r"\$(\d+)", body)]
    last = max(numbers, default=0)
    refs = re.compile(_REF)
    out = Segments()
    position = 0
    pattern = re.compile(rf"(?P<shell>!`(?P<cmd>[^`]+)`)|(?P<ref>{_REF})|(?P<at>{_FILE})")
    lines = Lines(body, first)
    searched = 0
    while (match := pattern.search(body, searched)) is not None:
        searched = match.end()
        line = lines.of(match.start())
        if match.group("at") is not None and not match.group("path"):
            continue  # a lone `@`
        out.text(body[position : match.start()])
        position = match.end()
        if match.group("at") is not None and refs.search(match.group("path")):
            # `@$1`: opencode fills the arguments in before it looks for files, so the `@` is
            # text and the scan goes on after it.
            out.text("@")
            position = searched = match.start() + 1
            continue
        if match.group("shell") is not None:
            parts: list[str | Arg] = []
            command = match.group("cmd")
            start = 0
            for inner in refs.finditer(command):
                parts.append(command[start : inner.start()])
                parts.append(_arg(inner, last, line, notes))
                start = inner.end()
            parts.append(command[start:])
            out.add(snippet(parts, match.group(0), line))
        elif match.group("ref") is not None:
            arg = _arg(match, last, line, notes)
            if isinstance(arg, str):
                out.text(arg)
            else:
                out.add(arg)
        else:
            out.add(Include(match.group("path"), match.group(0), line))
    out.text(body[position:])
    fields = split.fields
    description = fields["description"].text() if "description" in fields else None
    model = fields["model"].text() if "model" in fields else None
    segments: tuple[Segment, ...] = out.done()
    return Parsed(segments, body, description or None, None, model or None, notes=tuple(notes))


def _arg(match: re.Match[str], last: int, line: int, notes: list[Note]) -> Arg | str:
    number = match.group("n")
    literal = match.group(0)
    if number is None:
        return Arg(ALL, literal=literal)
    value = int(number)
    if value == 0:
        notes.append(
            Note(line, "", "$0 is not a word in opencode (words count from $1); kept as written")
        )
        return literal
    return Arg(REST if value == last else WORD, value - 1, literal=literal)
