"""The command line's side of start.base.inputs: click types that hold a value to the rule every
door shares, so that a value outside it is a usage error (exit 2) in that rule's own words, before a
store is opened, and never an overflow in SQLite (exit 70)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from start.base import inputs


class _Rule(click.ParamType):  # type: ignore[type-arg]
    """A value read by a rule of start.base.inputs; its InputError is click's usage error."""

    def __init__(self, read: Callable[[Any], Any], metavar: str) -> None:
        self.read = read
        self.name = metavar

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self.read(value)
        except inputs.InputError as error:
            self.fail(str(error), param, ctx)


def _item_id(value: str) -> str:
    inputs.item_number(value)
    return value


def _text(most: int, least: int) -> Callable[[str], str]:
    def read(value: str) -> str:
        from start.base import fs

        return inputs.text(fs.arg_text(value), most, least=least)

    return read


# An item's id (`item-3` or `3`), as given: start.board reads it again, by the same rule.
ITEM_ID = _Rule(_item_id, "ID")
# A run of the history (`start log show ID`): its number.
RUN_ID = _Rule(inputs.run_number, "ID")


# An item's title, and other text a caller gives: bytes that are not UTF-8 as U+FFFD (the one
# rule of start.base.fs for bytes), at most as long as the MCP door allows.
def _title(value: str) -> str:
    """An item's title, and when it is too long, where the rest goes."""
    try:
        return _text(inputs.TITLE_LIMIT, 1)(value)
    except inputs.InputError as error:
        if not value:
            raise
        raise inputs.InputError(
            f"{error}; a title names the work in a line: put the rest in the description "
            "(-d TEXT, -d - to read stdin, or --description-file FILE)"
        ) from None


TITLE = _Rule(_title, "TITLE")
TEXT = _Rule(_text(inputs.TEXT_LIMIT, 0), "TEXT")
# A comment: text of one character at least (`-` reads stdin).
COMMENT = _Rule(_text(inputs.TEXT_LIMIT, 1), "TEXT")


def count(least: int = 1, most: int = inputs.MOST) -> _Rule:
    """A whole number from `least` to `most` (`-n`, `--epoch`)."""
    return _Rule(lambda value: inputs.count(value, least, most), "N")


def _seconds(value: Any) -> float:
    """A wait in seconds: a finite number, 0 or more (`nan` and `inf` would wait for ever)."""
    import math

    try:
        found = float(value)
    except (TypeError, ValueError):
        raise inputs.InputError(f"{inputs.quoted(value)} is not a number of seconds") from None
    if not math.isfinite(found) or found < 0:
        raise inputs.InputError(
            f"{inputs.quoted(value)} is not a number of seconds: give 0 or more (leave the "
            "option out to wait without a limit)"
        )
    return found


# How long to wait at most, in seconds (`start board watch --timeout`).
SECONDS = _Rule(_seconds, "SECONDS")
# An item's priority (0 the highest to 4), and a label.
PRIORITY = _Rule(inputs.priority, "0-4")
LABEL = _Rule(inputs.label, "NAME")
