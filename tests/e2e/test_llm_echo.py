"""A real agent CLI end to end: `llm` with the echo model prints back what it received."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_start, write_tree

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow


LLM = shutil.which("llm", path=str(Path(sys.executable).parent)) or shutil.which("llm")


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
def test_task_through_llm_echo(isolated: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(
        isolated,
        {
            "NOTES.md": "Notes with {braces} and 'quotes'.\n",
            ".start/config.toml": f'''
[settings]
default_agent = "echo"

[agents.echo]
bin = "{LLM}"
command = "{{bin}} -m echo --no-log --system '{{role}}' '{{prompt}}'"

[roles.reviewer]
prompt = "You review code. It is {{date}}."

[contexts.notes]
required = true
file = "NOTES.md"
prompt = "Notes:\\n{{file_contents}}"

[contexts.branch]
required = true
command = "echo on-branch-main"

[contexts.optional]
prompt = "never in a task"

[tasks.check]
role = "reviewer"
command = "printf 'line 1\\\\nline \\"2\\"\\\\n'"
prompt = """
Check this output:
{{command_output}}
Focus: {{instructions}}
"""
''',
        },
    )
    env = {"LLM_USER_PATH": str(isolated.parent / "llm")}
    trust = run_start("trust", "--yes", cwd=isolated, env=env)
    assert trust.returncode == 0, trust.stderr
    proc = run_start("task", "check", "be", "strict", "-q", cwd=isolated, env=env)
    assert proc.returncode == 0, proc.stderr
    echoed = json.loads(proc.stdout)
    assert echoed["system"].startswith("You review code. It is 20")
    assert echoed["prompt"] == (
        "Notes:\nNotes with {braces} and 'quotes'.\n"
        "\n"
        "on-branch-main\n"
        "\n"
        'Check this output:\nline 1\nline "2"\n\nFocus: be strict\n'
    )


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
def test_shipped_llm_entry_runs_end_to_end(isolated: Path) -> None:
    """The catalog's own `llm` entry, unchanged, with the echo model."""
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    assert LLM is not None
    env = {
        "LLM_USER_PATH": str(isolated.parent / "llm"),
        "PATH": f"{Path(LLM).parent}{os.pathsep}{os.environ['PATH']}",
    }
    text = "hello {x} 'quoted' $(not run)\n- a list item"
    proc = run_start(
        "prompt",
        "-q",
        "-a",
        "llm",
        "-m",
        "echo",
        "-r",
        "code-reviewer",
        text,
        cwd=isolated,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    echoed = json.loads(proc.stdout)
    assert echoed["prompt"] == text
    assert echoed["system"].startswith("You are a meticulous senior code reviewer.")


def stage_a_large_diff(repo: Path, size: int) -> str:
    """Stage a file of about `size` bytes; return the staged diff."""
    line = "- a line that looks like a list item, {braces} and 'quotes'\n"
    (repo / "big.md").write_text(line * (size // len(line)))
    subprocess.run(["git", "add", "big.md"], cwd=repo, check=True)
    return subprocess.run(
        ["git", "diff", "--staged"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def llm_env(isolated: Path) -> dict[str, str]:
    assert LLM is not None
    return {
        "LLM_USER_PATH": str(isolated.parent / "llm"),
        "PATH": f"{Path(LLM).parent}{os.pathsep}{os.environ['PATH']}",
    }


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
def test_a_1_mb_staged_diff_through_gdr_and_the_shipped_llm_entry(isolated: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    diff = stage_a_large_diff(isolated, 1_000_000)
    assert len(diff) > 1_000_000
    proc = run_start(
        "task",
        "gdr",
        "-q",
        "-a",
        "llm",
        "-m",
        "echo",
        "be strict",
        cwd=isolated,
        env=llm_env(isolated),
    )
    assert proc.returncode == 0, proc.stderr
    echoed = json.loads(proc.stdout)
    assert f"```diff\n{diff}\n```" in echoed["prompt"]
    assert "## Special Instructions\n\nbe strict\n" in echoed["prompt"]
    assert echoed["system"].startswith("You are a meticulous senior code reviewer.")


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
def test_the_large_prompt_switch_through_llm(isolated: Path) -> None:
    """An inline-prompt agent: the 1 MB prompt goes to llm's stdin, which llm puts first."""
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    diff = stage_a_large_diff(isolated, 1_000_000)
    config = isolated.parent / "config"
    write_tree(
        config,
        {
            "config.toml": f"""
[agents.inline]
bin = "{LLM}"
command = "{{bin}} prompt -m echo --no-log {{args}} -- {{prompt}}"
large_prompt = "Review the diff above."
large_prompt_stdin = true
"""
        },
    )
    env = {**llm_env(isolated), "START_CONFIG_DIR": str(config)}
    proc = run_start("task", "gdr", "-a", "inline", "be strict", cwd=isolated, env=env)
    assert proc.returncode == 0, proc.stderr
    echoed = json.loads(proc.stdout)
    assert echoed["prompt"].endswith(f"```diff\n{diff}\n```\n Review the diff above.")
    assert "too large for the command line: goes to the agent's stdin from" in proc.stderr


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
def test_a_claude_code_skill_with_a_script_beside_it_through_print(isolated: Path) -> None:
    """The round trip of docs/interop.md#skills: a project's Claude Code skill, its script beside
    SKILL.md, run headless by the shipped llm entry; the prompt names the script's absolute path,
    and the skill's shell command ran the script."""
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(
        isolated,
        {
            ".claude/skills/lint-check/SKILL.md": (
                "---\n"
                "description: Check one file with the bundled script\n"
                "---\n"
                "Check $0 with ${CLAUDE_SKILL_DIR}/scripts/check.sh.\n"
                'It said: !`sh "${CLAUDE_SKILL_DIR}/scripts/check.sh" "$0"`\n'
            ),
            ".claude/skills/lint-check/scripts/check.sh": 'echo "checked $1"\n',
        },
    )
    env = llm_env(isolated)
    assert run_start("trust", "--yes", cwd=isolated, env=env).returncode == 0
    proc = run_start(
        "task", "skill:lint-check", "src/app.py", "--print", "-a", "llm", "-m", "echo",
        "--json", cwd=isolated, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(json.loads(proc.stdout)["answer"])
    folder = isolated / ".claude" / "skills" / "lint-check"
    assert answer["prompt"] == (
        f"Base directory for this skill: {folder}\n"
        f"Check src/app.py with {folder}/scripts/check.sh.\n"
        "It said: checked src/app.py\n"  # $1 filled: no ARGUMENTS line (docs/interop.md)
    )
