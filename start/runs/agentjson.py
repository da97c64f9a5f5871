"""The JSON in what an agent CLI prints: its objects among other lines, bounded, made whole."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from start.base import jsontext


def whole(text: str) -> str:
    """`text` with each lone surrogate (a JSON escape such as `\\ud800`, which no UTF-8 can hold)
    made U+FFFD, as start.base.fs.text makes an invalid byte: text that can be printed and kept."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def plain(value: Any) -> Any:
    """A JSON value with its strings `whole`."""
    if isinstance(value, str):
        return whole(value)
    if isinstance(value, dict):
        return {whole(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


# How deep an agent's JSON output may nest: an answer's limit, and room for the envelope around it.
ENVELOPE_DEPTH: Final = jsontext.DEPTH_LIMIT + 10


def loads(text: str) -> Any:
    """JSON of an agent's output, refused (ValueError) when it nests deeper than ENVELOPE_DEPTH."""
    return jsontext.loads(text, ENVELOPE_DEPTH)


def objects(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of `text`: one value (an object, or an array of them) or JSON lines.
    A line that is not JSON (or nests deeper than ENVELOPE_DEPTH) is skipped, as CLIs print
    warnings among their events."""
    text = text.strip()
    if not text:
        return
    try:
        whole = loads(text)
    except ValueError:
        whole = None
        for line in text.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                value = loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value
    if isinstance(whole, dict):
        yield whole
    elif isinstance(whole, list):
        yield from (item for item in whole if isinstance(item, dict))


def message(error: object) -> str | None:
    """The message of an `error` value: a string, or an object with a `message`."""
    if isinstance(error, dict):
        error = error.get("message")
    return error if isinstance(error, str) and error else None


def last_object(text: str) -> str:
    """The last top-level JSON object of `text` that starts a line, or "" (Gemini CLI prints
    it indented over several lines, after other output)."""
    start = text.rfind("\n{")
    start = start + 1 if start >= 0 else (0 if text.startswith("{") else -1)
    return text[start:] if start >= 0 else ""


def usage(value: Mapping[str, Any], *keys: str) -> dict[str, Any] | None:
    found = {key: value[key] for key in keys if value.get(key) is not None}
    return found or None
