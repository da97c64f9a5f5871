"""Short flags read as their long spelling before click parses (start.cli.options.long_flags)."""

from __future__ import annotations

import click
import pytest

from start.cli.options import SHORT_FLAGS, VALUED, long_flags
from tests.cli.test_help import COMMANDS, _command, _name


def _options(path: tuple[str, ...]) -> list[click.Option]:
    return [p for p in _command(path).params if isinstance(p, click.Option)]


def test_valued_names_every_option_that_takes_a_value_and_nothing_else() -> None:
    options = [option for path in COMMANDS for option in _options(path)]
    takes_value = {
        name
        for option in options
        if not option.is_flag and not option.count
        for name in option.opts
    }
    assert takes_value - VALUED == set()  # else `--that -q` would lose its value
    assert VALUED - {name for option in options for name in option.opts} == set()


@pytest.mark.parametrize("path", COMMANDS, ids=_name)
def test_each_short_flag_is_its_long_flag_on_every_command(path: tuple[str, ...]) -> None:
    # Spelled long, a short flag means on every command what it meant: the same option.
    for short, long in SHORT_FLAGS.items():
        (option,) = [o for o in _options(path) if short in o.opts]
        assert option.opts == [short, long]
        assert option.is_flag or option.count


@pytest.mark.parametrize(
    ("args", "spelled"),
    [
        (["-q", "task", "t", "x"], ["--quiet", "task", "t", "x"]),
        (
            ["task", "t", "-v", "-v", "x", "-q"],
            ["task", "t", "--verbose", "--verbose", "x", "--quiet"],
        ),
        # A value that looks like a flag stays a value, short or long option before it.
        (["prompt", "-m", "-q", "x"], ["prompt", "-m", "-q", "x"]),
        (["prompt", "--model", "-v", "-v"], ["prompt", "--model", "-v", "--verbose"]),
        # `--model=-q` and `-m-q` carry their value; the next argument is not one.
        (["prompt", "--model=-q", "-q"], ["prompt", "--model=-q", "--quiet"]),
        (["prompt", "-m-q", "-q"], ["prompt", "-m-q", "--quiet"]),
        # Combined flags, and anything else, go to click as given.
        (["-qv", "-vv", "-x", "--quiet"], ["-qv", "-vv", "-x", "--quiet"]),
    ],
)
def test_long_flags(args: list[str], spelled: list[str]) -> None:
    assert long_flags(args) == spelled
