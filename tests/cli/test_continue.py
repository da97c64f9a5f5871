"""`start continue` (issue 40): a follow-up in the conversation of a headless run, through its
CLI's own resume option and the session id the run recorded."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.fake_headless import agent

FAKE = REPO / "tests" / "fake_headless.py"

# The shipped agents that can continue (docs/agents.md, "Continuing a conversation").
ABLE = "claude, gemini, codex, opencode, qwen, copilot, llm, llm-chat, droid"
RESUME = 'resume_command = "{bin} ' + str(FAKE) + ' --resume {session} {args} -- {prompt}"\n'
CONFIG = f"""
[settings]
default_agent = "talker"

{agent("talker", output="result", extra=RESUME)}
{agent("mute")}
"""


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    write_tree(isolated, {"AGENTS.md": "the guide"})
    return isolated


def start(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_start("-q", *args, cwd=cwd, env={"FAKE_MODE": "result", **env})


def test_the_follow_up_resumes_the_recorded_session_with_the_text_alone(
    project: Path, tmp_path: Path
) -> None:
    first = start(project, "prompt", "--print", "-c", "AGENTS.md", "first", FAKE_SESSION="s-1")
    assert first.returncode == 0, first.stderr
    record = tmp_path / "record.json"
    (project / "sub").mkdir()
    follow = start(
        project / "sub", "continue", "and", "now?", FAKE_RECORD=str(record), FAKE_SESSION="s-1"
    )
    assert (follow.returncode, follow.stdout, follow.stderr) == (0, "ANSWER: and now?\n", "")
    argv = json.loads(record.read_text())["argv"]
    assert argv == ["--resume", "s-1", "--ro", "--", "and now?"]  # no role, no contexts
    runs = json.loads(run_start("log", "--json", cwd=project).stdout)
    assert [(r["mode"], r["session_id"], r["workdir"], r["permissions_from"]) for r in runs] == [
        ("continue", "s-1", str(project), "the run it continues (1)"),
        ("prompt", "s-1", str(project), "the default"),
    ]
    data = json.loads(
        start(
            project, "continue", "--json-fields", "mode,answer,session_id", "--run", "1", "again"
        ).stdout
    )
    assert data == {"mode": "continue", "answer": "ANSWER: again", "session_id": None}


def test_the_log_shows_the_text_a_follow_up_sent(project: Path) -> None:
    assert start(project, "prompt", "--print", "first", FAKE_SESSION="s-1").returncode == 0
    follow = start(project, "continue", "and", "now?", FAKE_SESSION="s-1")
    assert follow.returncode == 0, follow.stderr
    runs = json.loads(run_start("log", "--json", cwd=project).stdout)
    assert [(r["mode"], r["instructions"]) for r in runs] == [
        ("continue", "and now?"),
        ("prompt", "first"),
    ]
    listed = run_start("log", "--search", "now?", cwd=project, env={"COLUMNS": "200"}).stdout
    assert "continue: and now?" in listed


def test_an_agent_that_cannot_resume_names_those_that_can(project: Path) -> None:
    assert start(project, "prompt", "--print", "-a", "mute", "hi", FAKE_MODE="text").returncode == 0
    result = start(project, "continue", "more")
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        "start: run 1's agent, mute, cannot continue a conversation: it has no resume_command "
        "(see \"Continuing a conversation\" in 'start help agents'). Agents that can continue: "
        f"{ABLE}, talker.\n",
    )


def test_a_run_without_a_session_id_says_so(project: Path) -> None:
    assert start(project, "prompt", "--print", "hi").returncode == 0  # no FAKE_SESSION
    result = start(project, "continue", "more")
    assert (result.returncode, result.stderr) == (
        2,
        "start: run 1 (talker) has no session id to continue: its CLI reported none. Agents "
        f"that can continue: {ABLE}, talker.\n",
    )


def test_nothing_to_continue(project: Path) -> None:
    result = start(project, "continue", "more")
    assert (result.returncode, result.stderr) == (
        2,
        f"start: no headless run of {project} is recorded yet: run one with --print (start "
        "prompt --print TEXT), then continue it; or continue another project's with --run ID "
        "('start log' lists the runs)\n",
    )


def test_a_session_id_that_would_be_an_option_is_refused(project: Path) -> None:
    assert start(project, "prompt", "--print", "hi", FAKE_SESSION="--dangerous").returncode == 0
    result = start(project, "continue", "more")
    assert result.returncode == 2
    assert "{session}" in result.stderr and "starts with '-'" in result.stderr


def test_the_latest_conversation_is_the_latest_run_with_a_session(project: Path) -> None:
    assert start(project, "prompt", "--print", "first", FAKE_SESSION="s-1").returncode == 0
    assert start(project, "prompt", "--print", "no session").returncode == 0
    result = start(project, "continue", "more", FAKE_SESSION="s-1")
    assert (result.returncode, result.stdout) == (0, "ANSWER: more\n")
    (latest, *_) = json.loads(run_start("log", "--json", cwd=project).stdout)
    assert latest["permissions_from"] == "the run it continues (1)"


def test_a_directory_that_is_gone_is_named(project: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere"
    work = project / "sub"
    work.mkdir()
    assert start(work, "prompt", "--print", "first", FAKE_SESSION="s-1").returncode == 0
    work.rename(moved)
    result = start(project, "continue", "more")
    assert (result.returncode, result.stderr) == (
        2,
        f"start: run 1 ran in {work}, which no longer exists; pass -d DIR to continue it "
        "from elsewhere (its CLI may keep the session by directory)\n",
    )


def test_continue_takes_this_projects_latest_run_and_another_only_by_id(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a subdirectory of project B, `start continue` continues B's latest run, never A's
    (the latest of all); `--run ID` reaches A's, and runs in A with A's config, whose agent B's
    config does not have."""
    alpha = project
    beta = tmp_path / "beta"
    (beta / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=beta, check=True)
    monkeypatch.setenv("START_TRUSTED_PATHS", f"{alpha}:{beta}")
    # A's own agent, defined by A's project config alone.
    own = agent("own", output="result", extra=RESUME)
    write_tree(alpha, {".start/config.toml": own})
    assert start(beta, "prompt", "--print", "in beta", FAKE_SESSION="b-1").returncode == 0
    first = start(alpha, "prompt", "--print", "-a", "own", "in alpha", FAKE_SESSION="a-1")
    assert first.returncode == 0, first.stderr
    record = tmp_path / "record.json"
    here = run_start(
        "continue", "more", cwd=beta / "src" / "deep",
        env={"FAKE_MODE": "result", "FAKE_RECORD": str(record), "FAKE_SESSION": "b-1"},
    )  # fmt: skip
    assert (here.returncode, here.stdout) == (0, "ANSWER: more\n"), here.stderr
    assert here.stderr.startswith(f"start: continuing run 1 (talker) of {beta}\n")
    assert json.loads(record.read_text())["argv"][:2] == ["--resume", "b-1"]
    there = run_start(
        "continue", "--run", "2", "over there", cwd=beta / "src" / "deep",
        env={"FAKE_MODE": "result", "FAKE_RECORD": str(record), "FAKE_SESSION": "a-1"},
    )  # fmt: skip
    assert (there.returncode, there.stdout) == (0, "ANSWER: over there\n"), there.stderr
    assert there.stderr.startswith(f"start: continuing run 2 (own) of {alpha}\n")
    assert json.loads(record.read_text())["argv"][:2] == ["--resume", "a-1"]
    runs = json.loads(run_start("log", "--json", cwd=alpha).stdout)
    assert [(r["id"], r["agent"], r["workdir"]) for r in runs[:2]] == [
        (4, "own", str(alpha)),
        (3, "talker", str(beta)),
    ]
