"""Front matter of Markdown command files (Claude Code, opencode, Qwen Code): a YAML subset.

A file that starts with a `---` line and has a closing `---` line has front matter; everything
after the closing line is the body. Inside, each `key: value` line is a field, recorded with its
line so that validation can name it. Values are plain, quoted ('...' or "..."), a flow list
`[a, b]`, a block list of `- item` lines, or a block scalar (`|`, `>`). Colons in a plain value are
kept (`description: Explain: cause, then fix`), as Claude Code and opencode's fallback parser
accept them. Anything else is reported, never guessed at.
"""

from __future__ import annotations

import re
from typing import Final

from start.base.record import Record

_KEY: Final = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")


class Field(Record):
    """One front matter value and the line (1-based, in the file) of its key."""

    value: str | list[str]
    line: int
    raw: str = ""  # the value as written on the key's line

    def written(self) -> str:
        """The value as written when it was on one line (`[a] [b]` stays text), else text()."""
        if self.raw and self.raw[:1] not in ("'", '"', "|", ">"):
            return self.raw
        return self.text()

    def text(self) -> str:
        """The value as one string (a list joined by spaces)."""
        return " ".join(self.value) if isinstance(self.value, list) else self.value


class Split(Record):
    fields: dict[str, Field]
    body: str
    body_line: int  # the line (1-based, in the file) where the body starts
    problems: list[tuple[int, str]]  # (line, message) of lines that are not fields


def normalize(text: str) -> str:
    """The text without a byte order mark, with `\\n` line ends."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def split(text: str, *, trim: bool = True, keep_end: bool = False) -> Split:
    """The front matter fields and the body (stripped of blank space around it with `trim`, only
    before it with `keep_end` too)."""
    lines = text.split("\n")
    fields: dict[str, Field] = {}
    problems: list[tuple[int, str]] = []
    body_start = 0
    if lines and lines[0].rstrip() == "---":
        for index in range(1, len(lines)):
            if lines[index].rstrip() == "---":
                fields, problems = _fields(lines[1:index])
                body_start = index + 1
                break
    body = "\n".join(lines[body_start:])
    line = body_start + 1
    if trim:
        stripped = body.lstrip()
        line += body[: len(body) - len(stripped)].count("\n")
        body = stripped if keep_end else stripped.rstrip()
    return Split(fields, body, line, problems)


def _fields(lines: list[str]) -> tuple[dict[str, Field], list[tuple[int, str]]]:
    fields: dict[str, Field] = {}
    problems: list[tuple[int, str]] = []
    index = 0
    while index < len(lines):
        raw = lines[index]
        number = index + 2  # the opening `---` is line 1
        index += 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        match = _KEY.match(raw)
        if match is None:
            problems.append((number, f"'{raw.strip()}' is not a 'key: value' line; ignored"))
            continue
        key, value = match.group(1), (match.group(2) or "").strip()
        block: list[str] = []
        while index < len(lines) and (not lines[index].strip() or lines[index][:1] in " \t-"):
            block.append(lines[index])
            index += 1
        while block and not block[-1].strip():
            block.pop()
        if key in fields:
            problems.append((number, f"'{key}' is given twice; the last one is used"))
        fields[key] = Field(_value(value, block), number, value)
    return fields, problems


def _value(value: str, block: list[str]) -> str | list[str]:
    if value[:1] in ("|", ">") and value.rstrip("+-|>0123456789") == "":
        texts = _dedent(block)
        if value.startswith("|"):
            return "\n".join(texts)
        return " ".join(t for t in texts if t)
    if not value and block and block[0].lstrip().startswith("-"):
        return [_scalar(line.lstrip()[1:].strip()) for line in block if line.strip()]
    if value.startswith("[") and value.endswith("]"):
        inner = value[1:-1].strip()
        return [_scalar(item.strip()) for item in inner.split(",")] if inner else []
    if value[:1] in ("'", '"'):
        return _scalar(value)
    # A plain scalar: it ends at ` #`, and indented lines continue it.
    value = re.split(r"[ \t]#", value, maxsplit=1)[0].rstrip()
    more = [line.strip() for line in block if line.strip()]
    return " ".join([value, *more]) if more and value else value or " ".join(more)


def _scalar(text: str) -> str:
    """One value: quotes removed ('' in single quotes is ', escapes in double quotes)."""
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/"}
        return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(0)), text[1:-1])
    return text


def _dedent(block: list[str]) -> list[str]:
    indents = [len(line) - len(line.lstrip()) for line in block if line.strip()]
    cut = min(indents, default=0)
    return [line[cut:] for line in block]
