"""Usage you can read and sum (issue 49): `start log show` gives a run's tokens in and out and its
cost, and `start log --usage` their totals by day, agent and model, checked against the recorded
runs; real `start --print` processes running stand-ins that print what each real CLI printed
(tests/fixtures/envelopes)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from start.runs.tokens import Tokens
from tests.conftest import invoke, run_start, write_tree
from tests.fake_headless import agent
from tests.runs.test_envelopes import RECORDED
from tests.runs.test_tokens import SPENT

# A stand-in for each CLI, by the envelope it prints; copilot reports no tokens.
CLIS = {
    "claude": "result",
    "codex": "codex",
    "gemini": "gemini",
    "opencode": "opencode",
    "cline": "cline",
    "aider": "aider",
    "llm": "llm",
    "copilot": "copilot",
}


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    config = '[settings]\ndefault_agent = "claude"\n' + "".join(
        agent(
            name,
            output=envelope,
            levels='read-only = ""',
            prefix=f"FAKE_MODE=replay FAKE_REPLAY={RECORDED / name / 'text.stdout'} ",
        )
        for name, envelope in CLIS.items()
    )
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": config})
    return isolated


def ask(project: Path, name: str, *flags: str) -> dict[str, Any]:
    result = run_start("-q", "prompt", "--print", "--json", "-a", name, *flags, "hi", cwd=project)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def listed(*args: str) -> list[dict[str, Any]]:
    result = invoke("log", "--json", "-n", "100", *args)
    assert (result.exit_code, result.stderr) == (0, "")
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def spent(run: dict[str, Any]) -> Tokens:
    return Tokens(run["input_tokens"], run["output_tokens"], run["cost_usd"])


def expected(name: str) -> Tokens:
    """What the run of the stand-in of CLI `name` spent (its cost to a millionth of a dollar)."""
    found = SPENT.get(f"{name}/text", Tokens())
    return found._replace(cost=round(found.cost, 6) if found.cost is not None else None)


def summed(runs: Iterable[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The totals the recorded runs make, by local day and agent: what --usage must say."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        key = (time.strftime("%Y-%m-%d", time.localtime(run["at"])), run["agent"])
        total = found.setdefault(
            key,
            {"runs": 0, "reported": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": None},
        )
        total["runs"] += 1
        if run["input_tokens"] is None and run["cost_usd"] is None:
            continue
        total["reported"] += 1
        total["input_tokens"] += run["input_tokens"] or 0
        total["output_tokens"] += run["output_tokens"] or 0
        if run["cost_usd"] is not None:
            total["cost_usd"] = (total["cost_usd"] or 0) + run["cost_usd"]
    for total in found.values():
        if not total["reported"]:
            total["input_tokens"] = total["output_tokens"] = None
        if total["cost_usd"] is not None:
            total["cost_usd"] = round(total["cost_usd"], 6)
    return found


def test_each_run_carries_its_tokens_and_cost(project: Path) -> None:
    for name in CLIS:
        assert spent(ask(project, name)) == expected(name), name
    assert [spent(run) for run in reversed(listed())] == [expected(name) for name in CLIS]


def test_show_prints_the_usage_as_tokens_and_cost(project: Path) -> None:
    """It printed `usage {'input_tokens': 3, ...}`: a Python dict, the label twice."""
    ids = {
        name: ask(project, name)["id"] for name in ("claude", "codex", "aider", "llm", "copilot")
    }
    lines = {
        name: [
            line
            for line in invoke("log", "show", str(run_id), "--no-pager").stdout.splitlines()
            if line.startswith("  usage ")
        ]
        for name, run_id in ids.items()
    }
    assert lines == {
        "claude": ["  usage        11,760 tokens in, 3 out, $0.0471"],
        "codex": ["  usage        9,717 tokens in, 3 out"],
        "aider": ["  usage        251 tokens in, 4 out, $0.0007"],
        "llm": ["  usage        104 tokens in, 2 out"],
        # copilot reports no tokens: its usage is shown as it reported it
        "copilot": [
            '  usage        {"usage": {"premiumRequests": 0, "totalApiDurationMs": 26, '
            '"sessionDurationMs": 499, "codeChanges": {"linesAdded": 0, "linesRemoved": 0, '
            '"filesModified": []}}}'
        ],
    }


def test_usage_totals_by_day_agent_and_model_match_the_recorded_runs(project: Path) -> None:
    for name in (*CLIS, "claude", "claude", "codex", "copilot"):
        ask(project, name)
    assert run_start("-q", "prompt", "-a", "claude", "a launch", cwd=project).returncode == 0
    runs = [run for run in listed() if run["headless"]]
    assert len(runs) == len(CLIS) + 4 and len(listed()) == len(runs) + 1
    result = invoke("log", "--usage", "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    data = json.loads(result.stdout)
    sums = summed(runs)
    assert {(t["day"], t["agent"]): t for t in data["totals"]} == {
        key: {"day": key[0], "agent": key[1], "model": None, **total} for key, total in sums.items()
    }
    assert [(t["day"], t["agent"]) for t in data["totals"]] == sorted(sums)
    claude = [t for t in data["totals"] if t["agent"] == "claude"]
    assert sum(t["runs"] for t in claude) == 3
    assert sum(t["input_tokens"] for t in claude) == 3 * 11760
    assert data["total"] == {
        "runs": len(runs),
        "reported": len(runs) - 2,  # copilot's two
        "input_tokens": sum(run["input_tokens"] or 0 for run in runs),
        "output_tokens": sum(run["output_tokens"] or 0 for run in runs),
        "cost_usd": round(sum(run["cost_usd"] or 0 for run in runs), 6),
    }
    only = json.loads(invoke("log", "--usage", "--json", "--agent", "codex").stdout)
    assert {t["agent"] for t in only["totals"]} == {"codex"}
    assert (only["total"]["runs"], only["total"]["input_tokens"]) == (2, 2 * 9717)


def test_usage_as_a_table(project: Path) -> None:
    for name in ("claude", "claude", "codex", "copilot"):
        ask(project, name)
    (day,) = {time.strftime("%Y-%m-%d", time.localtime(run["at"])) for run in listed()}
    result = invoke("log", "--usage")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "DAY         AGENT    MODEL      RUNS  TOKENS IN  TOKENS OUT  COST",
        f"{day}  claude   (default)  2     23,520     6           $0.0942",
        f"{day}  codex    (default)  1     9,717      3           -",
        f"{day}  copilot  (default)  1     -          -           -",
        "total                           4     33,237     9           $0.0942",
    ]
    assert result.stderr == (
        "1 of 4 runs have no usage: their CLI reported none (their tokens and cost are "
        "unknown, not 0)\n"
    )


def test_since_takes_a_date_or_an_age(project: Path) -> None:
    ask(project, "claude")
    assert len(listed("--since", "7d")) == 1
    assert len(listed("--since", "2000-01-01")) == 1
    assert listed("--since", "2999-01-01") == []
    assert (
        json.loads(invoke("log", "--usage", "--json", "--since", "12h").stdout)["total"]["runs"]
        == 1
    )
    future = invoke("log", "--usage", "--since", "2999-01-01T00:00")
    assert (future.exit_code, future.stdout, future.stderr) == (0, "", "No such runs.\n")
    empty = invoke("log", "--usage", "--json", "--since", "2999-01-01")
    assert json.loads(empty.stdout) == {
        "totals": [],
        "total": {
            "runs": 0,
            "reported": 0,
            "input_tokens": None,
            "output_tokens": None,
            "cost_usd": None,
        },
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--since", "yesterday"),
            "--since 'yesterday' is neither a date nor an age: use YYYY-MM-DD, an ISO 8601 time "
            "such as 2026-01-31T18:00, or an age such as 12h, 7d or 4w",
        ),
        (
            ("--since", "9999999999d"),
            "--since '9999999999d' is neither a date nor an age: use YYYY-MM-DD, an ISO 8601 "
            "time such as 2026-01-31T18:00, or an age such as 12h, 7d or 4w",
        ),
        (
            ("--usage", "-n", "5"),
            "-n goes with the listing: --usage sums every run the filters keep",
        ),
    ],
)
def test_usage_errors(project: Path, args: tuple[str, ...], message: str) -> None:
    result = invoke("log", *args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"start: {message}\n")
