"""Tokens and cost (start.runs.tokens): every usage the installed CLIs reported
(tests/fixtures/envelopes, through their envelope readers) read into tokens in, out and cost, and
the totals by day, agent and model."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from start.runs.tokens import Spent, Tokens, Total, overall, read, totals
from tests.runs.test_envelopes import RECORDED, recording

# What each CLI's text answer spent, by its recorded output (the oracle: read by hand).
SPENT = {
    # input_tokens 11760, and no cached tokens (cache_creation_input_tokens, cache_read_...: 0)
    "claude/text": Tokens(11760, 3, 0.047099999999999996),
    "qwen/text": Tokens(26477, 4),
    "droid/text": Tokens(10346, 3),
    "droid.result/text": Tokens(10348, 3),
    "codex/text": Tokens(9717, 3),
    "cline/text": Tokens(5636, 3, 0.0),
    "opencode/text": Tokens(3387, 3, 0.010206),
    # gemini-3.5-flash-lite (the router: 947 prompt, 16 candidates) and gemini-3.8-flash (9851, 3)
    "gemini/text": Tokens(947 + 9851, 16 + 3),
    "aider/text": Tokens(251, 4, 0.00067),
    "llm/text": Tokens(104, 2),
}
# The CLIs that report no tokens: no usage at all, or auggie's turns alone.
NONE = ("auggie", "cn", "cn.continue", "copilot")


@pytest.mark.parametrize("name", sorted(SPENT))
def test_each_clis_usage_is_read_into_tokens_and_cost(name: str, tmp_path: Path) -> None:
    assert read(recording(name).answer(tmp_path).usage) == SPENT[name]


def every_recording() -> list[str]:
    return sorted(
        f"{cli.name}/{case.stem}" for cli in RECORDED.iterdir() for case in cli.glob("*.json")
    )


@pytest.mark.parametrize("name", every_recording())
def test_every_recorded_usage_is_understood(name: str, tmp_path: Path) -> None:
    """A usage that a CLI reports in a new shape shows here, not as a silent zero in the log."""
    usage = recording(name).answer(tmp_path).usage
    cli = name.split("/")[0]
    if cli in NONE:
        assert read(usage) is None
    elif usage is not None:
        found = read(usage)
        assert found is not None and found.input is not None and found.output is not None


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        (None, None),
        ({}, None),
        ({"num_turns": 3}, None),
        # Claude Code: the cached tokens its input_tokens leaves out count as tokens in.
        (
            {
                "usage": {
                    "input_tokens": 10,
                    "cache_creation_input_tokens": 200,
                    "cache_read_input_tokens": 3000,
                    "output_tokens": 7,
                },
                "total_cost_usd": 0.5,
            },
            Tokens(3210, 7, 0.5),
        ),
        # Codex's cached_input_tokens are within its input_tokens.
        ({"usage": {"input_tokens": 100, "cached_input_tokens": 90}}, Tokens(100, None)),
        (
            {"tokens": {"input": 5, "output": 6, "cache": {"read": 70, "write": 800}}, "cost": 1},
            Tokens(875, 6, 1.0),
        ),
        # aider writes a thousand or more as 2.5k or 12k.
        (
            {
                "summary": "Tokens: 2.5k sent, 1.2k cache write, 12k received. Cost: $0.05 message, "
                "$0.10 session."
            },
            Tokens(2500, 12000, 0.05),
        ),
        ({"summary": "Tokens: 8 sent, 2 received."}, Tokens(8, 2)),
        # Counts that are no counts are none.
        ({"usage": {"input_tokens": True, "output_tokens": -4}, "total_cost_usd": "1"}, None),
        ({"stats": {"models": {"m": {"tokens": "x"}, "n": 3}}}, None),
    ],
)
def test_the_shapes_of_usage(usage: dict[str, object] | None, tokens: Tokens | None) -> None:
    assert read(usage) == tokens


def test_totals_by_day_agent_and_model() -> None:
    """Local days, oldest first; a run whose CLI reported nothing counts as a run, and its
    tokens and cost as unknown rather than 0."""
    first = time.mktime((2026, 3, 1, 23, 30, 0, 0, 0, -1))
    second = time.mktime((2026, 3, 2, 0, 30, 0, 0, 0, -1))
    claude = {"usage": {"input_tokens": 10, "output_tokens": 2}, "total_cost_usd": 0.25}
    codex = {"usage": {"input_tokens": 100, "output_tokens": 20}}
    runs = [
        Spent(second, "claude", None, claude),
        Spent(first, "claude", None, claude),
        Spent(first, "claude", None, claude),
        Spent(first, "codex", "gpt-5", codex),
        Spent(second, "llm", "echo", None),
        Spent(second, "codex", "gpt-5", codex),
    ]
    found = totals(runs)
    assert found == [
        Total("2026-03-01", "claude", None, 2, 2, 20, 4, 0.5),
        Total("2026-03-01", "codex", "gpt-5", 1, 1, 100, 20, None),
        Total("2026-03-02", "claude", None, 1, 1, 10, 2, 0.25),
        Total("2026-03-02", "codex", "gpt-5", 1, 1, 100, 20, None),
        Total("2026-03-02", "llm", "echo", 1, 0, 0, 0, None),
    ]
    assert overall(found) == Total("", "", None, 6, 5, 230, 46, 0.75)
    assert overall([]) == Total("", "", None, 0, 0)
