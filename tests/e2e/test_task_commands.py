"""Task commands in real git repositories: the shipped tasks' guards, `if_no_output`, and how a
failing command is shown (head and tail; everything with --debug)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FAKE, dry, git, invoke, launch, stage, write_tree

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

NOT_A_REPO = (
    "start: task 'git-diff-review' failed: not a git repository: run this task inside one\n"
)
NOTHING_STAGED = "start: nothing is staged: stage changes with 'git add' first\n"


@pytest.fixture
def work(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory, not a git repository; the global config's agent is the fake."""
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(isolated.parent))
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": FAKE})
    return isolated


# --- the shipped tasks in real repositories -------------------------------------------------


@pytest.mark.parametrize("task", ["gdr", "cm"])
def test_outside_a_git_repository_one_line_and_exit_1(work: Path, task: str) -> None:
    proc, record = launch(work, "task", task, "be strict")
    assert record is None  # the agent was not started
    assert proc.returncode == 1
    name = "git-diff-review" if task == "gdr" else "commit-message"
    assert proc.stderr == NOT_A_REPO.replace("git-diff-review", name)


def test_empty_repository_with_nothing_staged_says_what_to_do(work: Path) -> None:
    git(work, "init", "-q")
    proc, record = launch(work, "task", "gdr")
    assert record is None
    assert (proc.returncode, proc.stderr) == (1, NOTHING_STAGED)
    result = invoke("task", "cm", "--dry-run")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", NOTHING_STAGED)


def test_unstaged_changes_are_not_staged_ones(work: Path) -> None:
    git(work, "init", "-q")
    stage(work)
    git(work, "commit", "-q", "-m", "one")
    (work / "a.py").write_text("x = 2\n")  # changed, not staged
    proc, record = launch(work, "task", "gdr")
    assert record is None
    assert (proc.returncode, proc.stderr) == (1, NOTHING_STAGED)


def test_empty_repository_with_staged_files_reviews_them(work: Path) -> None:
    git(work, "init", "-q")
    stage(work, "new.py", "print('hi')\n")
    proc, record = launch(work, "task", "gdr", "-q")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    assert f"```diff\n{git(work, 'diff', '--staged')}\n```\n" in record["argv"][4]
    assert "+print('hi')\n" in record["argv"][4]


def test_a_3000_line_staged_diff_reaches_the_agent_whole(work: Path) -> None:
    git(work, "init", "-q")
    stage(work, "old.txt", "")
    git(work, "commit", "-q", "-m", "one")
    stage(work, "big.txt", "".join(f"line {n}\n" for n in range(3000)))
    diff = git(work, "diff", "--staged")
    assert diff.count("\n+line ") == 3000
    proc, record = launch(work, "task", "gdr", "-q", "look at the numbers")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    assert record["argv"][4] == (
        "Analyze the following git diff and act as a code reviewer.\n\n"
        "## Special Instructions\n\nlook at the numbers\n\n"
        f"## Git Diff\n\n```diff\n{diff}\n```\n"
    )


# --- if_no_output: the general mechanism ----------------------------------------------------


def test_if_no_output_stops_a_user_task_before_the_agent(work: Path) -> None:
    write_tree(
        work,
        {
            ".start/tasks.toml": (
                "[tasks.todo]\n"
                "command = \"printf ' \\\\n\\\\n'\"\n"  # whitespace only counts as nothing
                'prompt = "Fix these: {command_output}"\n'
                'if_no_output = "no TODOs left: nothing to fix"\n'
                "[tasks.gate]\n"
                'command = "echo something"\n'
                'prompt = "The command is only a check."\n'
                'if_no_output = "never shown"\n'
            )
        },
    )
    proc, record = launch(work, "task", "todo")
    assert record is None
    assert (proc.returncode, proc.stderr) == (1, "start: no TODOs left: nothing to fix\n")
    # A command whose output the prompt does not use still runs, as the check.
    assert dry("task", "gate")["prompt"] == "The command is only a check."


def test_a_failing_command_is_checked_before_its_output(work: Path) -> None:
    write_tree(
        work,
        {
            ".start/tasks.toml": (
                '[tasks.t]\ncommand = "exit 4"\nprompt = "{command_output}"\nif_no_output = "m"\n'
            )
        },
    )
    result = invoke("task", "t", "--dry-run")
    assert (result.exit_code, result.stderr) == (
        1,
        "start: task 't' command failed with exit code 4\n  command: exit 4\n  output: (none)\n",
    )


# --- a failing command's output: head and tail, all with --debug ----------------------------


SEQ_TASK = '[tasks.t]\ncommand = "seq 1 3000; exit 3"\nprompt = "{command_output}"\n'


def test_a_failing_command_shows_at_most_20_lines_head_and_tail(work: Path) -> None:
    write_tree(work, {".start/tasks.toml": SEQ_TASK})
    result = invoke("task", "t", "--dry-run")
    assert result.exit_code == 1
    assert result.stderr == (
        "start: task 't' command failed with exit code 3\n"
        "  command: seq 1 3000; exit 3\n"
        "  output (3,000 lines; --debug shows them all):\n"
        + "".join(f"    {n}\n" for n in range(1, 11))
        + "    [... 2,980 lines cut ...]\n"
        + "".join(f"    {n}\n" for n in range(2991, 3001))
    )


def test_debug_shows_all_of_a_failing_commands_output(work: Path) -> None:
    write_tree(work, {".start/tasks.toml": SEQ_TASK})
    result = invoke("task", "t", "--dry-run", "--debug")
    assert result.exit_code == 1
    assert result.stderr.endswith(
        "start: task 't' command failed with exit code 3\n"
        "  command: seq 1 3000; exit 3\n"
        "  output:\n" + "".join(f"    {n}\n" for n in range(1, 3001))
    )


def test_git_usage_text_of_an_unguarded_command_is_cut(work: Path) -> None:
    """Today's failure outside a repository: ~130 lines of git's usage text, now 20."""
    write_tree(
        work,
        {
            ".start/tasks.toml": '[tasks.raw]\ncommand = "git diff --staged"\nprompt = "{command_output}"\n'
        },
    )
    result = invoke("task", "raw", "--dry-run")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[:2] == [
        "start: task 'raw' command failed with exit code 129",
        "  command: git diff --staged",
    ]
    assert lines[2].startswith("  output (") and lines[2].endswith(
        " lines; --debug shows them all):"
    )
    assert len(lines) == 3 + 10 + 1 + 10
    assert lines[13].startswith("    [... ") and lines[13].endswith(" lines cut ...]")
