"""Codex CLI's custom prompts (`$CODEX_HOME/prompts/*.md`) as templates.

The rules, read in openai/codex (codex-rs/core/src/custom_prompts.rs, parse_frontmatter; and
codex-rs/tui/src/bottom_pane/prompt_args.rs, expand_custom_prompt, at adc4676f; removed in
codex-cli 0.117.0, so libraries in ~/.codex/prompts are what remains):

- Front matter, when the first line is `---` and a later line is `---`: `key: value` lines, blank
  lines and `#` comments skipped, keys lower-cased, one pair of outer quotes removed; the keys
  are `description` and `argument-hint` (or `argument_hint`). The body after it is not trimmed.
- Any `$NAME` in upper case (not after another `$`, and not `$ARGUMENTS`) makes the prompt take
  named arguments `NAME=value`, all required; `$1`..`$9` and `$ARGUMENTS` then stay as written.
- Otherwise `$1`..`$9` are words (counted from 1; a missing one is empty; `$10` is `$1` then `0`)
  and `$ARGUMENTS` is every word joined by one space. `$$` stays `$$`.
- A body without any of these drops the arguments (start appends them instead: D-X4).
"""

from __future__ import annotations

import re
from typing import Final

from start.config.interop.common import Note, Parsed, Segments
from start.config.interop.model import ALL, PARAM, WORD, Arg, Segment
from start.config.model import Param

_NAMED: Final = re.compile(r"\$[A-Z][A-Z0-9_]*")


def split(text: str) -> tuple[dict[str, tuple[str, int]], str, int, list[Note]]:
    """Codex's front matter: fields with their lines, the body, its first line, findings."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, 1, []
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            break
    else:
        return {}, text, 1, []  # unterminated: the whole file is the body
    fields: dict[str, tuple[str, int]] = {}
    notes: list[Note] = []
    for number, line in enumerate(lines[1:index], start=2):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, colon, value = stripped.partition(":")
        if not colon:
            notes.append(Note(number, "", f"'{stripped}' is not a 'key: value' line; ignored"))
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        fields[key.strip().lower()] = (value, number)
    body = "\n".join(lines[index + 1 :])
    return fields, body, index + 2, notes


def parse(text: str) -> Parsed:
    fields, body, first, notes = split(text)
    hint = fields.get("argument-hint") or fields.get("argument_hint")
    for key, (_, line) in fields.items():
        if key not in ("description", "argument-hint", "argument_hint"):
            notes.append(Note(line, key, "not used by Codex; not imported"))
    required: list[str] = []
    for match in _NAMED.finditer(body):
        if match.start() > 0 and body[match.start() - 1] == "$":
            continue
        key = match.group()[1:]
        if key != "ARGUMENTS" and key not in required:
            required.append(key)
    if required:
        segments = _named(body, required)
        line = first + body.count("\n", 0, body.index("$" + required[0]))
        flags = " ".join(f"-p {key}=VALUE" for key in required)
        notes.append(
            Note(
                line,
                "",
                f"takes named arguments ({', '.join('$' + k for k in required)}), all "
                f"required: pass {flags}. Codex reads any $UPPER_CASE word as one; write "
                "$$NAME for a literal one",
            )
        )
        # Named as Codex spells them: `-p TICKET_ID=...` is Codex's `TICKET_ID=...`.
        params = tuple(Param(key, None, f"${key} of the prompt") for key in required)
    else:
        segments = _positional(body)
        params = ()
    description = fields["description"][0] if "description" in fields else None
    return Parsed(
        segments,
        body,
        description or None,
        hint[0] if hint and hint[0] else None,
        params=params,
        notes=tuple(notes),
    )


def _named(body: str, required: list[str]) -> tuple[Segment, ...]:
    out = Segments()
    position = 0
    for match in _NAMED.finditer(body):
        key = match.group()[1:]
        if key not in required or (match.start() > 0 and body[match.start() - 1] == "$"):
            continue
        out.text(body[position : match.start()])
        out.add(Arg(PARAM, name=key, literal=match.group()))
        position = match.end()
    out.text(body[position:])
    return out.done()


def _positional(body: str) -> tuple[Segment, ...]:
    out = Segments()
    position = 0
    for match in re.finditer(r"\$\$|\$[1-9]|\$ARGUMENTS", body):
        token = match.group()
        if token == "$$":
            continue  # both dollars stay, and the next character is not a reference
        out.text(body[position : match.start()])
        if token == "$ARGUMENTS":
            out.add(Arg(ALL, literal=token))
        else:
            out.add(Arg(WORD, int(token[1]) - 1, literal=token))
        position = match.end()
    out.text(body[position:])
    return out.done()
