"""Tokens and cost: a run's usage, as whichever CLI reported it, read into one form (tokens in,
tokens out, cost in US dollars), which `--print --json` adds to a run's record and `start log`
shows and sums (`totals`: by day, agent and model).

A run keeps its usage as its CLI reported it (start.runs.Run.usage, which start.runs.envelopes
picks out of the envelope); `read` knows the shape of each, as the recorded envelopes show them
(tests/fixtures/envelopes; tests/runs/test_tokens.py holds every recording to it):

- Claude Code and droid (Anthropic's usage): `usage.input_tokens`, which leaves out the cached
  tokens (`cache_creation_input_tokens`, `cache_read_input_tokens`: counted in), and
  `usage.output_tokens`; Claude Code's cost is `total_cost_usd`;
- Qwen Code: `usage.input_tokens` (cached ones in: its `total_tokens` is in and out);
- Codex: `usage.input_tokens` (cached ones in) and `usage.output_tokens` (reasoning in);
- Cline: `usage.inputTokens`, `usage.outputTokens` and `usage.totalCost`;
- opencode: `tokens.input` with `tokens.cache.read` and `.write`, `tokens.output`, and `cost`;
- Gemini CLI: `stats.models.NAME.tokens`, every model's: `prompt`, and `candidates` with
  `thoughts` (which Gemini counts apart);
- aider: its `Tokens: 2.5k sent, 40 received. Cost: $0.01 message, ...` line (to aider's
  rounding: 2.5k is 2,500);
- llm: `input_tokens` and `output_tokens` of its `--json` record, at the top (no cost: llm
  reports none).

A CLI that reports no usage (cn), or none of these (auggie: its turns only; copilot: its
premium requests and durations), has none: `read` is None, and `totals` counts its runs apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from start.base.record import Record


class Tokens(Record):
    """What a run spent, as its CLI reported it: each part None when it reported none."""

    input: int | None = None
    output: int | None = None
    cost: float | None = None  # US dollars


def read(usage: Mapping[str, Any] | None) -> Tokens | None:
    """The tokens and cost in a run's usage (the shapes above); None when it holds none."""
    if not usage:
        return None
    found = _read(usage)
    return found if found != Tokens() else None


def _read(usage: Mapping[str, Any]) -> Tokens:
    cost = _number(usage.get("total_cost_usd"))
    if isinstance(usage.get("usage"), Mapping):
        counts: Mapping[str, Any] = usage["usage"]
        if "inputTokens" in counts or "outputTokens" in counts:  # Cline
            return Tokens(
                _count(counts.get("inputTokens")),
                _count(counts.get("outputTokens")),
                _number(counts.get("totalCost")),
            )
        into = _count(counts.get("input_tokens"))
        if into is not None and "cache_creation_input_tokens" in counts:  # Anthropic's
            cached = ("cache_creation_input_tokens", "cache_read_input_tokens")
            into += sum(_count(counts.get(key)) or 0 for key in cached)
        return Tokens(into, _count(counts.get("output_tokens")), cost)
    if isinstance(usage.get("tokens"), Mapping):  # opencode
        counts = usage["tokens"]
        cache = counts.get("cache")
        into = _count(counts.get("input"))
        if into is not None and isinstance(cache, Mapping):
            into += (_count(cache.get("read")) or 0) + (_count(cache.get("write")) or 0)
        return Tokens(into, _count(counts.get("output")), _number(usage.get("cost")))
    stats = usage.get("stats")
    if isinstance(stats, Mapping) and isinstance(stats.get("models"), Mapping):  # Gemini CLI
        return _gemini(stats["models"])
    if isinstance(usage.get("summary"), str):  # aider
        return _aider(usage["summary"])
    if "input_tokens" in usage or "output_tokens" in usage:  # llm
        return Tokens(_count(usage.get("input_tokens")), _count(usage.get("output_tokens")), cost)
    return Tokens(cost=cost)


def _gemini(models: Mapping[str, Any]) -> Tokens:
    into: int | None = None
    out: int | None = None
    for model in models.values():
        counts = model.get("tokens") if isinstance(model, Mapping) else None
        if not isinstance(counts, Mapping):
            continue
        prompt = _count(counts.get("prompt"))
        if prompt is None:
            prompt = _count(counts.get("input"))
        answer = [_count(counts.get(key)) for key in ("candidates", "thoughts")]
        if prompt is not None:
            into = (into or 0) + prompt
        if any(part is not None for part in answer):
            out = (out or 0) + sum(part or 0 for part in answer)
    return Tokens(into, out)


def _aider(summary: str) -> Tokens:
    """aider's line: `Tokens: 251 sent, 4 received. Cost: $0.00067 message, $0.00067 session.`
    (a count of a thousand or more as `2.5k` or `12k`)."""
    import re

    counts = dict(
        (kind, round(float(number) * (1000 if thousands else 1)))
        for number, thousands, kind in re.findall(r"(\d+(?:\.\d+)?)(k?) (sent|received)", summary)
    )
    cost = re.search(r"Cost: \$(\d+(?:\.\d+)?) message", summary)
    return Tokens(counts.get("sent"), counts.get("received"), float(cost[1]) if cost else None)


def _count(value: object) -> int | None:
    """A token count: a whole number, not a bool."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value >= 0 else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


class Spent(Record):
    """What `totals` reads of a run: when it ended, who ran it, and its usage."""

    at: float  # seconds since the epoch
    agent: str
    model: str | None
    usage: Mapping[str, Any] | None


class Total(Record):
    """The runs of one day, agent and model (of all of them, in `overall`)."""

    day: str  # YYYY-MM-DD, local time; "" in `overall`
    agent: str  # "" in `overall`
    model: str | None  # None: the agent's own default model
    runs: int  # headless runs
    reported: int  # of them, those whose CLI reported tokens or a cost
    input: int = 0
    output: int = 0
    cost: float | None = None  # None: no run of them reported a cost


def totals(runs: Iterable[Spent]) -> list[Total]:
    """The totals of headless runs by local day, agent and model, oldest day first."""
    import time

    found: dict[tuple[str, str, str | None], Total] = {}
    for run in runs:
        day = time.strftime("%Y-%m-%d", time.localtime(run.at))
        key = (day, run.agent, run.model)
        found[key] = _add(found.get(key, Total(day, run.agent, run.model, 0, 0)), read(run.usage))
    return [found[key] for key in sorted(found, key=lambda k: (k[0], k[1], k[2] or ""))]


def overall(totals: Iterable[Total]) -> Total:
    """The sum of `totals`."""
    whole = Total("", "", None, 0, 0)
    for total in totals:
        cost = total.cost if whole.cost is None else whole.cost + (total.cost or 0.0)
        whole = whole._replace(
            runs=whole.runs + total.runs,
            reported=whole.reported + total.reported,
            input=whole.input + total.input,
            output=whole.output + total.output,
            cost=cost,
        )
    return whole


def _add(total: Total, spent: Tokens | None) -> Total:
    if spent is None:
        return total._replace(runs=total.runs + 1)
    cost = total.cost
    if spent.cost is not None:
        cost = (cost or 0.0) + spent.cost
    return total._replace(
        runs=total.runs + 1,
        reported=total.reported + 1,
        input=total.input + (spent.input or 0),
        output=total.output + (spent.output or 0),
        cost=cost,
    )
