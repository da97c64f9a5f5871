"""The values a caller gives at any door (the command line, `start mcp`), each rule stated once:
its limits, the JSON Schema an MCP tool declares for it, and the message a value outside them
gets, the same at every door (docs/board.md, "Limits").

The command line reads these through click types (start.cli.inputs); the MCP tools declare the
schemas made here, and their refusals are told in the messages made here (start.mcp.tools.check).
Nothing here prints, and nothing imports click, rich or sqlite3.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from start.base.errors import ExitCode, StartError


class InputError(StartError):
    """A value that no door takes: an id, a count, a text or metadata outside its rule."""

    exit_code = ExitCode.USAGE


# --- how a value is quoted in a message ---------------------------------------------------------

# The most characters of a refused value a message quotes; the rest is cut, with an ellipsis.
_QUOTED: Final = 40


def quoted(value: object) -> str:
    """A refused value as a message shows it: text in quotes, cut short, every character that is
    not printable (a control, a lone surrogate) as its escape, so that the message itself is
    printable and valid Unicode wherever it goes (a terminal, a CI log, an MCP reply)."""
    if not isinstance(value, str):
        import json

        try:
            value = json.dumps(value)
        except (TypeError, ValueError):
            value = repr(value)
        return _escaped(value if len(value) <= _QUOTED else value[: _QUOTED - 1] + "…")
    cut = value if len(value) <= _QUOTED else value[: _QUOTED - 1] + "…"
    return f"'{_escaped(cut)}'"


def _escaped(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


# --- ids and counts -----------------------------------------------------------------------------

# The digits of an id or a count: 18, so that every one is below 2**63 and fits the integers
# SQLite keeps (a larger one is refused at the door, never met by the store as an overflow).
DIGITS: Final = 18
MOST: Final = 10**DIGITS - 1
_NUMBER: Final = f"[1-9][0-9]{{0,{DIGITS - 1}}}"

# An item's id is this prefix and its number; the number alone is accepted where an id is read.
# With sync on (docs/board.md, "Across machines") an item another machine made reads
# `item-PREFIX.N`: PREFIX is the start of that machine's origin, ORIGIN_LEAST to ORIGIN_MOST
# characters of its alphabet (Crockford's base32 in lowercase, start.board.oplog.ALPHABET).
# Ids are lowercase, as the board shows them: `ITEM-3` or `item-K3F9.12` is no id (not folded,
# so that one id has one spelling in scripts, logs and an MCP client's calls).
ITEM_PREFIX: Final = "item-"
ORIGIN_LEAST: Final = 4
ORIGIN_MOST: Final = 12
_ORIGIN: Final = f"[0-9a-hjkmnp-tv-z]{{{ORIGIN_LEAST},{ORIGIN_MOST}}}"
ITEM_ID_PATTERN: Final = f"^({ITEM_PREFIX}({_ORIGIN}\\.)?)?{_NUMBER}$"
ITEM_ID_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "string",
    "pattern": ITEM_ID_PATTERN,
    "description": f"An item's id: {ITEM_PREFIX}N (or N), or {ITEM_PREFIX}PREFIX.N as shown.",
}
_ITEM_ID: Final = re.compile(f"(?:{re.escape(ITEM_PREFIX)}(?:({_ORIGIN})\\.)?)?({_NUMBER})")
_RUN_ID: Final = re.compile(_NUMBER)
_DIGITS_RULE: Final = f"a number of 1 to {DIGITS} digits that does not start with 0"


def not_an_item_id(value: object) -> str:
    """Why `value` is no item id: the message of every door."""
    return (
        f"{quoted(value)} is not an item id: ids read {ITEM_PREFIX}N (or N), and "
        f"{ITEM_PREFIX}PREFIX.N for another machine's item (as the board shows it), N "
        f"{_DIGITS_RULE}"
    )


def item_ref(text: object) -> tuple[str | None, int]:
    """The origin's prefix (None: none given) and the number of an item id (`item-3`, `3`,
    `item-k3f9.12`); InputError for anything else."""
    found = _ITEM_ID.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        raise InputError(not_an_item_id(text))
    return found.group(1), int(found.group(2))


def item_number(text: object) -> int:
    """The number of an item id (`item-3`, `item-k3f9.12`, or `3`); InputError for anything
    else."""
    return item_ref(text)[1]


def run_number(text: object) -> int:
    """The number of a run of the history (`start log show ID`); InputError for anything else."""
    if not isinstance(text, str) or _RUN_ID.fullmatch(text) is None:
        raise InputError(
            f"{quoted(text)} is not a run id: a run id is {_DIGITS_RULE} ('start log' lists "
            "the runs)"
        )
    return int(text)


def not_in_range(value: object, least: int, most: int) -> str:
    """Why `value` is no count from `least` to `most`: the message of every door."""
    return f"{quoted(value)} is not a whole number from {least} to {most}"


def count(text: object, least: int = 1, most: int = MOST) -> int:
    """A whole number from `least` to `most`, written in decimal digits; InputError for anything
    else (a sign, a fraction, a number out of range)."""
    if isinstance(text, int) and not isinstance(text, bool):
        found = text
    elif isinstance(text, str) and text.isascii() and text.isdigit():
        digits = text.lstrip("0") or "0"  # leading zeros count for nothing, however many
        if len(digits) > len(str(most)):  # out of range, and told as the number when short
            shown = int(digits) if len(digits) < _QUOTED else text
            raise InputError(not_in_range(shown, least, most))
        found = int(digits)
    else:
        raise InputError(not_in_range(text, least, most))
    if not least <= found <= most:
        raise InputError(not_in_range(found, least, most))
    return found


def count_schema(least: int, most: int, description: str | None = None) -> dict[str, Any]:
    """The JSON Schema of a count from `least` to `most`."""
    found: dict[str, Any] = {"type": "integer", "minimum": least, "maximum": most}
    if description is not None:
        found["description"] = description
    return found


# --- priorities and labels ------------------------------------------------------------------------

# An item's priority: 0 the highest, 4 the lowest, 2 unless told (as beads has it).
PRIORITIES: Final = (0, 4)
DEFAULT_PRIORITY: Final = 2
PRIORITY_SCHEMA: Final[Mapping[str, Any]] = {
    **{"type": "integer", "minimum": PRIORITIES[0], "maximum": PRIORITIES[1]},
    "description": "0 (highest) to 4 (lowest); 2 unless given.",
}


def priority(text: object) -> int:
    """An item's priority, 0 to 4; InputError for anything else."""
    return count(text, *PRIORITIES)


# A label: a word of at most LABEL_LENGTH characters, without spaces or commas (so that a list of
# them reads as one); at most LABELS of them on an item.
LABEL_LENGTH: Final = 50
LABELS: Final = 20
# How deep items may nest under parents: deeper is no plan a person reads, and its tree as JSON
# would be nested deeper than many readers take (Python's json stops near 1,000).
DEPTH: Final = 100
LABELS_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": LABEL_LENGTH},
    "maxItems": LABELS,
}


def label(text: object) -> str:
    """A label; InputError for anything else."""
    if (
        not isinstance(text, str)
        or not 1 <= len(text) <= LABEL_LENGTH
        or any(c.isspace() or c == "," or not c.isprintable() for c in text)
    ):
        raise InputError(
            f"{quoted(text)} is not a label: a label is 1 to {LABEL_LENGTH} characters, "
            "without spaces or commas"
        )
    return text


# --- text ---------------------------------------------------------------------------------------

# An item's title, and any other text a caller gives (a description, an answer, a reason, a
# prompt), in characters (code points, as JSON Schema's maxLength counts them).
TITLE_LIMIT: Final = 1000
TEXT_LIMIT: Final = 1 << 20
TITLE_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "string",
    "minLength": 1,
    "maxLength": TITLE_LIMIT,
}
TEXT_SCHEMA: Final[Mapping[str, Any]] = {"type": "string", "maxLength": TEXT_LIMIT}


def not_in_length(value: str, least: int, most: int) -> str:
    """Why text of `least` to `most` characters refuses `value`: the message of every door."""
    if not value and least:
        return "empty; give at least one character"
    if len(value) < least:
        return f"{len(value):,} characters, fewer than {least:,}"
    return f"{len(value):,} characters, over the limit of {most:,}"


def text(value: str, most: int = TEXT_LIMIT, *, least: int = 0) -> str:
    """`value`, when it has `least` to `most` characters; InputError naming its length else."""
    if not least <= len(value) <= most:
        raise InputError(not_in_length(value, least, most))
    return value


def _lone(text: str) -> bool:
    """Whether `text` holds a lone surrogate, which no UTF-8 text (and no JSON parser's strict
    Unicode) can hold: a JSON escape such as \\ud800, or a byte of a command line or a path that
    was not UTF-8 (Python's surrogate escape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def valid(text: str) -> str:
    """`text` with each lone surrogate as U+FFFD: for text read back from a store that kept one,
    so that it can be printed, written as JSON and sent to an MCP client."""
    if not _lone(text):
        return text
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


# --- metadata -----------------------------------------------------------------------------------

# The most bytes an item's metadata takes as compact JSON (UTF-8), and the most a change merges
# in. Metadata is labels a person or a script reads by key (a priority, an owner, a link); long
# text is the description's (TEXT_LIMIT). Every listing loads every item's metadata, so this
# keeps a board of a thousand items under 64 MiB, where 16 MiB an item (what one MCP message
# holds) made listings load hundreds.
METADATA_LIMIT: Final = 64 << 10
# How deep its objects and arrays nest, the metadata's own object counted: as deep as start reads
# any JSON (start.base.jsontext), below what an MCP message may nest.
METADATA_DEPTH: Final = 100
METADATA_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "description": (
        "Merged into the item's metadata (RFC 7396): a null value deletes its key. At most "
        f"{METADATA_LIMIT // 1024} KiB as JSON, before and after the merge, nested at most "
        f"{METADATA_DEPTH} deep; numbers finite."
    ),
}
_NOT_FINITE: Final = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _deep(limit: int) -> str:
    return (
        f"metadata is nested deeper than {limit} levels of objects and arrays; start keeps at "
        f"most {limit}"
    )


def _word(number: float) -> str:
    return _NOT_FINITE.get(number, "NaN")


def json_size(value: Any) -> int:
    """The bytes `value` takes as compact JSON in UTF-8: how metadata is measured."""
    import json

    encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    return len(encoded.encode("utf-8", "surrogatepass"))


def metadata(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """`value` as metadata to store or merge: nested at most METADATA_DEPTH deep, every number
    finite, every text valid Unicode, at most METADATA_LIMIT bytes as JSON; InputError naming
    the key and what is wrong. The walk keeps its own stack: no depth runs out of Python's."""
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(value, 1, ())]
    while stack:
        found, depth, path = stack.pop()
        where = f"metadata at {quoted('/'.join(path))}" if path else "metadata"
        if isinstance(found, Mapping | list | tuple):
            if depth > METADATA_DEPTH:
                raise InputError(_deep(METADATA_DEPTH))
            items = list(found.items() if isinstance(found, Mapping) else enumerate(found))
            for key, _ in items:
                if isinstance(key, str) and _lone(key):
                    raise InputError(f"{where}: the key {quoted(key)} {_SURROGATE}")
            # Reversed, so that the first value that is wrong is the one told.
            stack.extend((item, depth + 1, (*path, str(key))) for key, item in reversed(items))
        elif isinstance(found, float) and not math.isfinite(found):
            word = _word(found)
            raise InputError(
                f"{where}: {word} is not a number JSON can hold; give a finite number (or "
                f'"{word}" as text)'
            )
        elif isinstance(found, str) and _lone(found):
            raise InputError(f"{where}: {quoted(found)} {_SURROGATE}")
    size = json_size(value)
    if size > METADATA_LIMIT:
        raise InputError(
            f"metadata takes {size:,} bytes as JSON, over the limit of {METADATA_LIMIT:,}; "
            "keep long text in the description"
        )
    return value


_SURROGATE: Final = (
    "holds a lone surrogate (a \\ud800-\\udfff escape without its pair), which is not Unicode "
    "text; give valid text"
)


def merged_metadata(value: Mapping[str, Any], item: str) -> None:
    """Refuse a change that would leave `item` with metadata over METADATA_LIMIT."""
    size = json_size(value)
    if size > METADATA_LIMIT:
        raise InputError(
            f"{item}'s metadata would take {size:,} bytes as JSON after this change, over the "
            f"limit of {METADATA_LIMIT:,}; delete keys (a null value deletes its key)"
        )


def metadata_value(text: str) -> Any:
    """VALUE of `--meta KEY=VALUE`: JSON when it is JSON (2, true, null, {"a": 1}), else the
    text itself. JSON nested deeper than metadata may be is refused before it is parsed (the
    value sits one level below the metadata's object)."""
    from start.base import jsontext

    try:
        return jsontext.loads(text, METADATA_DEPTH - 1)
    except jsontext.TooDeepError:
        raise InputError(_deep(METADATA_DEPTH)) from None
    except ValueError:
        return text


def readable(value: Any, deepest: int = METADATA_DEPTH) -> Any:
    """A JSON value read back from a store as it can be written out: each lone surrogate as
    U+FFFD, each number that is not finite as its word ("NaN", "Infinity", "-Infinity", as JSON
    mappings of such numbers write them), and what nests deeper than `deepest` as null. For a
    board an earlier start wrote, which kept such values (the doors refuse them now), and that
    the store keeps as it was given. The walk keeps its own stack."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    while stack:
        found, into, at, depth = stack.pop()
        if isinstance(found, str):
            into[at] = valid(found)
        elif isinstance(found, float) and not math.isfinite(found):
            into[at] = _word(found)
        elif isinstance(found, dict | list) and depth >= deepest:
            into[at] = None
        elif isinstance(found, dict):
            made: dict[Any, Any] = {}
            into[at] = made
            for key, item in found.items():
                name = valid(key) if isinstance(key, str) else key
                made[name] = None
                stack.append((item, made, name, depth + 1))
        elif isinstance(found, list):
            listed: list[Any] = [None] * len(found)
            into[at] = listed
            stack.extend((item, listed, index, depth + 1) for index, item in enumerate(found))
        else:
            into[at] = found
    return root[0]
