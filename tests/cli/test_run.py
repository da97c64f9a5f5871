"""`start`, `start prompt` and `start task` on the command line: task lookup, flags, listings and
the agent command's errors (dry runs in-process)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import FAKE_AGENT, dry, invoke, launch, stage, write_tree

# --- task lookup ---------------------------------------------------------------------------


def test_task_by_alias_and_prefix(repo: Path) -> None:
    stage(repo)
    assert dry("task", "gdr")["task"] == "git-diff-review"
    assert dry("task", "git-d")["task"] == "git-diff-review"


def test_ambiguous_and_unknown_tasks_exit_4(repo: Path) -> None:
    write_tree(repo, {".start/tasks.toml": '[tasks.git-log]\nprompt = "p"\n'})
    result = invoke("task", "git", "--dry-run")
    assert result.exit_code == 4
    assert result.stderr == "start: task 'git' is ambiguous; it matches: git-diff-review, git-log\n"
    result = invoke("task", "git-lgo", "--dry-run")
    assert result.exit_code == 4
    assert result.stderr == "start: unknown task 'git-lgo'; did you mean 'git-log'?\n"


def test_unknown_agent_and_role_exit_4(repo: Path) -> None:
    result = invoke("prompt", "x", "--agent", "fak", "--dry-run")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown agent 'fak'; did you mean 'fake'?\n",
    )
    result = invoke("prompt", "x", "-r", "code-reviwer", "--dry-run")
    assert result.exit_code == 4
    assert result.stderr == "start: unknown role 'code-reviwer'; did you mean 'code-reviewer'?\n"


def test_flags_anywhere(repo: Path) -> None:
    stage(repo)
    a = dry("--role", "code-reviewer", "task", "gdr", "x")
    b = dry("task", "gdr", "--role", "code-reviewer", "x")
    c = dry("task", "--role", "code-reviewer", "gdr", "x")
    assert a["role"] == b["role"] == c["role"] == "code-reviewer"
    assert a["prompt"] == b["prompt"] == c["prompt"]


def test_task_listing(repo: Path) -> None:
    write_tree(repo, {".start/tasks.toml": '[tasks.secret]\nprompt = "p"\ninternal = true\n'})
    listed = json.loads(invoke("task", "--json").stdout)
    assert [t["name"] for t in listed] == [
        "commit-message",
        "gate",
        "git-diff-review",
        "help",
        "plan-fix",  # the steps of the shipped workflow fix-severe
        "triage",
    ]
    assert listed[2] == {
        "name": "git-diff-review",
        "alias": "gdr",
        "description": "Review the staged git diff",
        "layer": "built-in",
        "file": listed[2]["file"],
        "internal": False,
        "params": [],
        "source": None,
    }
    names = [t["name"] for t in json.loads(invoke("task", "--all", "--json").stdout)]
    assert names == [
        "commit-message",
        "gate",
        "git-diff-review",
        "help",
        "plan-fix",
        "secret",
        "triage",
    ]
    text = invoke("task").stdout
    assert text.splitlines()[0].split() == ["TASK", "ALIAS", "DESCRIPTION", "LAYER"]
    assert "secret" not in text


# --- the agent command ---------------------------------------------------------------------


def test_model_placeholder_without_models_is_an_error(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": '[agents.nomodel]\nbin = "true"\ncommand = "{bin} -m {model} {prompt}"\n'
        },
    )
    result = invoke("prompt", "x", "-a", "nomodel", "--dry-run")
    assert result.exit_code == 1
    assert result.stderr == (
        "start: agent 'nomodel' uses {model} in its command, but no model was chosen and it has "
        "no models.\n"
        "Pass --model MODEL, set 'model' in the task, add a models table to [agents.nomodel] in "
        f"{repo / '.start' / 'agents.toml'}, or write [--model {{model}}] in its command so "
        "that no model option is passed when none is chosen\n"
    )
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                '[agents.nomodel]\nbin = "true"\ncommand = "{bin} [-m {model}] {prompt}"\n'
            )
        },
    )
    assert dry("prompt", "x", "-a", "nomodel")["argv"][1:] == ["x"]


def test_model_placeholder_without_a_chosen_model_takes_the_first(repo: Path) -> None:
    """As roles and agents do: the first of the agent's models, noted in the summary."""
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                '[agents.ea]\nbin = "true"\ncommand = "{bin} -m {model} {prompt}"\n'
                '[agents.ea.models]\necho = "echo-1"\nbig = "big-2"\n'
            )
        },
    )
    data = dry("prompt", "x", "-a", "ea")
    assert data["argv"][1:] == ["-m", "echo-1", "x"]
    text = invoke("prompt", "x", "-a", "ea", "--dry-run").stdout
    assert (
        "\n  model from    the first of the agent's models (alias 'echo'): its command needs "
        "{model}\n"
    ) in text
    assert dry("prompt", "x", "-a", "ea", "-m", "big")["argv"][1:] == ["-m", "big-2", "x"]


def test_prompt_file_carries_large_prompts(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": f'[agents.big]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} --file {{prompt_file}}"\n'
        },
    )
    text = "y" * 300_000
    proc, record = launch(repo, "prompt", "-a", "big", "-q", "-", stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    path = Path(record["argv"][1])
    assert path.read_text() == text
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    assert not path.is_relative_to(repo)


def test_agent_binary_not_executable_exits_126(repo: Path) -> None:
    (repo / "agent.sh").write_text("#!/bin/sh\n")
    write_tree(
        repo,
        {
            ".start/agents.toml": f'[agents.noexec]\nbin = "{repo / "agent.sh"}"\ncommand = "{{bin}} {{prompt}}"\n'
        },
    )
    result = invoke("prompt", "x", "-a", "noexec")  # it stops before any exec
    assert result.exit_code == 126


def test_json_without_dry_run_is_a_usage_error(repo: Path) -> None:
    result = invoke("prompt", "x", "--json")
    assert result.exit_code == 2
    assert result.stderr == (
        "start: --json prints a launch only with --dry-run or --print (or a listing: start task --json)\n"
    )


# --- the summary on hostile input --------------------------------------------------------------


def test_the_summary_is_linear_in_the_config_problems(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SKILL.md with thousands of unknown front matter keys: the summary compares no two
    problems, and looks each file up in the command and skill directories once, however many
    problems it has (the membership tests over lists of problems made a launch quadratic)."""
    from start.base.errors import Problem
    from start.config.interop import dirs, skills

    keys = 3000
    front = "".join(f"k{i}: v\n" for i in range(keys))
    write_tree(repo, {".claude/skills/big/SKILL.md": f"---\n{front}---\nBody\n"})
    counts = {"eq": 0, "lookups": 0}

    def equal(self: Problem, other: object) -> bool:
        counts["eq"] += 1
        return tuple.__eq__(self, other)

    def counted(lookup: Callable[[str | None, str], bool]) -> Callable[[str | None, str], bool]:
        def look(path: str | None, root: str) -> bool:
            counts["lookups"] += 1
            return lookup(path, root)

        return look

    monkeypatch.setattr(Problem, "__eq__", equal)
    monkeypatch.setattr(Problem, "__hash__", tuple.__hash__)
    monkeypatch.setattr(dirs, "in_command_dir", counted(dirs.in_command_dir))
    monkeypatch.setattr(skills, "in_skill_dir", counted(skills.in_skill_dir))
    result = invoke("task", "skill:big", "--dry-run")
    assert result.exit_code == 0, result.stderr
    skill = repo / ".claude" / "skills" / "big" / "SKILL.md"
    assert f"  ⚠ {skill} has {keys} warnings; run 'start config validate'\n" in result.stdout
    assert counts["eq"] < keys
    assert counts["lookups"] <= 2 * len({str(skill), "None"})
