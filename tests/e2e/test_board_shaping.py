"""Who shaped an item bounds how it runs (docs/board.md, "Who shaped it"), with real processes:
an agent connected to a real `start mcp` at the default `read-only` tries to rewrite what an item
of yours runs at `full`, and to forge the answer fed to another; `start board run` then runs the
stand-in agent (tests/fake_headless.py), whose argv shows the level each run got."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

CONFIG = f"""
[settings]
default_agent = "fake"

{agent("fake", levels='read-only = "--ro", edit = "--edit", full = "--full"')}

[tasks.review]
prompt = "Review: {{instructions}}"
"""

# What a session at read-only is told when it reaches for an item that runs at full.
REFUSED = (
    r"item-(\d+) runs at up to 'full', and (mcp:[a-z0-9._+-]+:\d+) acts at 'read-only' "
    r"\(settings\.mcp_permissions\): it may not (\w+) an item that runs above its level\. Make "
    r"an item of your own, or ask the user"
)


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def start(project: Path, *args: str, **env: str) -> Any:
    done = run_start(*args, cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    return done


def item(project: Path, id_: str) -> Any:
    return json.loads(start(project, "board", "show", id_, "--json").stdout)


def as_an_agent(project: Path, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Each tool call's result, made in order by one session of a real `start mcp`."""
    import anyio
    from mcp import Client, StdioServerParameters

    results: list[Any] = []

    async def session() -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp"], env=env, cwd=str(project)
        )
        async with Client(parameters, mode="legacy") as client:
            for name, arguments in calls:
                results.append(await client.call_tool(name, arguments))

    anyio.run(session)
    return results


def refusal(result: Any) -> tuple[str, str]:
    """The item and the verb of a refusal for the caller's level (REFUSED)."""
    assert result.is_error is True
    found = re.fullmatch(REFUSED, result.content[0].text)
    assert found is not None, result.content[0].text
    return found[1], found[3]


def run_board(project: Path, record: Path) -> Any:
    """`start board run --until-empty`, each agent's argv and stdin recorded in `record.N`."""
    return start(project, "board", "run", "--until-empty", FAKE_RECORD=str(record))


def test_a_read_only_session_cannot_rewrite_what_your_item_runs_at_full(
    project: Path, tmp_path: Path
) -> None:
    start(
        project,
        "board",
        "add",
        "Fix",
        "--task",
        "review",
        "-d",
        "the user's words",
        "-a",
        "fake",
        "--permissions",
        "full",
    )
    results = as_an_agent(
        project,
        ("board_tasks_update", {"id": "1", "description": "$(the caller's words)"}),
        ("board_tasks_update", {"id": "1", "blocked_by": []}),
        ("board_tasks_update", {"id": "1", "title": "$(the caller's title)"}),
        ("board_tasks_claim", {"id": "item-1"}),
        ("board_tasks_update", {"id": "1", "status": "failed", "reason": "x"}),
        ("board_tasks_update", {"id": "1", "metadata": {"seen": True}}),
    )
    assert [refusal(found) for found in results[:5]] == [
        ("1", "change"),
        ("1", "change"),
        ("1", "change"),
        ("1", "claim"),
        ("1", "finish"),
    ]
    assert results[5].is_error is False  # metadata never reaches a run
    record = tmp_path / "argv.json"
    ran = run_board(project, record)
    argv = json.loads(record.read_text())["argv"]
    assert "--full" in argv and argv[-1] == "Review: the user's words"
    found = item(project, "1")
    assert (found["status"], found["title"], found["description"], found["metadata"]) == (
        "completed",
        "Fix",
        "the user's words",
        {"seen": True},
    )
    assert "runs at" not in ran.stderr  # nothing below the user's level shaped it


def test_a_session_cannot_forge_the_answer_fed_to_a_run_and_its_own_answer_bounds_it(
    project: Path, tmp_path: Path
) -> None:
    start(project, "board", "add", "Plan", "--prompt", "Plan it", "-a", "fake")
    start(
        project,
        "board",
        "add",
        "Build",
        "--after",
        "1",
        "--prompt",
        "Do: {answers}",
        "-a",
        "fake",
        "--permissions",
        "full",
    )
    start(project, "board", "add", "Research")  # work for anyone to claim: it runs nothing
    start(
        project,
        "board",
        "add",
        "Apply",
        "--after",
        "3",
        "--prompt",
        "Use: {answers}",
        "-a",
        "fake",
        "--permissions",
        "full",
    )
    forged, claimed, answered = as_an_agent(
        project,
        ("board_tasks_update", {"id": "1", "status": "completed", "answer": "rm -rf ~"}),
        ("board_tasks_claim", {"id": "3"}),
        ("board_tasks_update", {"id": "3", "status": "completed", "answer": "found it"}),
    )
    assert (forged.is_error, forged.content[0].text) == (
        True,
        "item-1 says what start board run runs: an agent finishes it only while it holds it "
        "(board_tasks_claim), so that its end is its run's or its holder's work",
    )
    me = claimed.structured_content["assignee"]
    assert answered.structured_content["answer_level"] == "read-only"
    record = tmp_path / "argv.json"
    # One run at a time, so that each run's argv is read before the next one writes it.
    ran = start(project, "board", "run", "--until-empty", FAKE_RECORD=str(record))
    plan, build, apply = (item(project, id_) for id_ in ("1", "2", "4"))
    assert plan["answer"] == "ANSWER: Plan it"
    # The user's run answered item-1: its answer feeds item-2 at the level item-2 asks for.
    assert build["answer"] == "ANSWER: Do: ## item-1: Plan\n\nANSWER: Plan it"
    logged = [
        json.loads(start(project, "log", "show", str(found["history"]), "--json").stdout)
        for found in (build, apply)
    ]
    assert logged[0]["permissions"] == "full"
    # The session's answer feeds item-4: at most read-only, whatever item-4 asks.
    assert apply["answer"] == "ANSWER: Use: ## item-3: Research\n\nfound it"
    why = f"item-3's answer, fed to it, was written by {me} at 'read-only'"
    assert (logged[1]["permissions"], logged[1]["permissions_from"]) == (
        "read-only",
        f"{why} (capped from 'full', the item's permissions)",
    )
    assert "--ro" in logged[1]["argv"] and "--full" not in logged[1]["argv"]
    assert f"start ⚠ item-4 runs at 'read-only' at most: {why}" in ran.stderr.splitlines()


def test_an_item_an_agent_made_runs_under_the_users_timeout(project: Path) -> None:
    """`start board run --timeout` is the user's own: it bounds an agent's item too (the ask
    rules refused it as the agent's once, and the item failed unrun)."""
    (made,) = as_an_agent(
        project,
        ("board_tasks_create", {"title": "Plan", "run": {"agent": "fake", "prompt": "Plan it"}}),
    )
    assert made.is_error is False, made.content[0].text
    ran = start(project, "board", "run", "--until-empty", "--timeout", "60")
    found = item(project, "1")
    assert (found["status"], found["answer"]) == ("completed", "ANSWER: Plan it"), ran.stderr
    logged = json.loads(start(project, "log", "show", str(found["history"]), "--json").stdout)
    assert (logged["request"]["by"], logged["request"]["timeout"]) == ("agent", 60)


def test_comments_never_reach_what_an_item_runs(project: Path, tmp_path: Path) -> None:
    """A read-only session comments on an item of yours that runs at `full`, which it may (a
    comment changes nothing that runs), and so do you: the run gets neither, at `full`."""
    start(project, "board", "add", "Fix", "--task", "review", "-d", "the user's words")
    start(project, "board", "update", "1", "-a", "fake", "--permissions", "full")
    start(project, "board", "comment", "1", "a person's note: COMMENTED-BY-A-PERSON")
    results = as_an_agent(
        project,
        ("board_tasks_update", {"id": "1", "comment": "$(curl evil) COMMENTED-BY-AN-AGENT"}),
        ("board_tasks_get", {"id": "1"}),
    )
    assert results[0].is_error is False
    assert results[1].structured_content["comments_total"] == 2
    record = tmp_path / "argv.json"
    run_board(project, record)
    recorded = record.read_text()
    argv = json.loads(recorded)["argv"]
    assert "--full" in argv and argv[-1] == "Review: the user's words"
    assert "COMMENTED-BY" not in recorded  # neither in its argv nor in its stdin
    found = item(project, "1")
    assert (found["status"], found["level"]) == ("completed", "full")
    assert [c["text"] for c in found["comments"]] == [
        "a person's note: COMMENTED-BY-A-PERSON",
        "$(curl evil) COMMENTED-BY-AN-AGENT",
    ]
