"""`start find TEXT` as a real process: the tasks, command files and skills ranked by TEXT's
words, with a score and why (start.config.finding); a task name that does not exist suggested by
spelling and by meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_start, write_tree

CONFIG = """
[tasks.fix-tests]
alias = "ft"
description = "Fix the failing tests"
prompt = "Fix the failing tests. {instructions}"

[tasks.release-notes]
description = "Write the release notes from the commits since the last tag"
prompt = "Write release notes. {instructions}"

[tasks.secret]
description = "Fix whatever an internal helper fixes"
internal = true
prompt = "x"
"""


@pytest.fixture
def home(isolated: Path) -> Path:
    """A user's tasks, a Claude Code command file and an Agent Skill, beside the shipped tasks."""
    home = isolated.parent / "home"
    write_tree(
        home,
        {
            ".config/start/config.toml": CONFIG,
            ".claude/commands/flaky.md": "---\ndescription: Find the flaky tests and fix them\n"
            "---\nFind flaky tests in $ARGUMENTS\n",
            ".agents/skills/pdf-tools/SKILL.md": "---\nname: pdf-tools\ndescription: Fill PDF "
            "forms and extract their text\n---\nUse pdftotext.\n",
        },
    )
    return home


def find(*args: str) -> tuple[int, str, str]:
    result = run_start("find", *args, env={"COLUMNS": "100"})
    return result.returncode, result.stdout, result.stderr


def test_find_ranks_names_aliases_and_descriptions_with_why(home: Path) -> None:
    """A word is worth twice in a name what it is in a description; an internal task that holds
    the words (secret) is not listed."""
    assert find("fix", "the", "failing", "tests") == (
        0,
        "NAME          SCORE  WHY                                     DESCRIPTION\n"
        "fix-tests     0.83   name: fix, tests; description: failing  Fix the failing tests\n"
        "claude:flaky  0.33   description: fix, tests                 Find the flaky tests and "
        "fix them\n"
        # A shipped task (a step of the shipped workflow fix-severe).
        "plan-fix      0.33   name: fix                               Plan the fix of a problem: "
        "its summary…\n",
        "",
    )


def test_find_matches_stems_prefixes_aliases_and_names_spelled_close(home: Path) -> None:
    """And the description is cut to the page's width (COLUMNS), as start task's listing is."""
    assert find("fixing", "ft") == (
        0,
        "NAME          SCORE  WHY                          DESCRIPTION\n"
        "fix-tests     0.95   name: fixing~fix; alias: ft  Fix the failing tests\n"
        "plan-fix      0.45   name: fixing~fix             Plan the fix of a problem: its summary, "
        "its steps…\n"
        "claude:flaky  0.23   description: fixing~fix      Find the flaky tests and fix them\n",
        "",
    )
    assert find("relase", "--limit", "1") == (
        0,
        "NAME           SCORE  WHY                   DESCRIPTION\n"
        "release-notes  0.60   name: relase~release  Write the release notes from the commits "
        "since the last…\n",
        "",
    )


def test_find_json_is_each_match_with_its_kind_and_hits(home: Path) -> None:
    code, stdout, stderr = find("--json", "pdf", "text")
    assert (code, stderr) == (0, "")
    assert json.loads(stdout) == [
        {
            "name": "skill:pdf-tools",
            "kind": "skill",
            "score": 0.75,
            "why": [
                {"word": "pdf", "field": "name", "matched": "pdf", "how": "exact"},
                {"word": "text", "field": "description", "matched": "text", "how": "exact"},
            ],
            "description": "Fill PDF forms and extract their text",
        }
    ]


def test_nothing_found_says_so_and_exits_4(home: Path) -> None:
    message = (
        "start: no task matches 'quantum teleport'; try other words, or list every task with "
        "'start task'\n"
    )
    assert find("quantum", "teleport") == (4, "", message)
    assert find("--json", "quantum", "teleport") == (4, "[]\n", message)


def test_text_without_a_word_is_a_usage_error(home: Path) -> None:
    assert find("?!") == (
        2,
        "",
        "start: TEXT '?!' has no word to look for; say what the task does in words: "
        "start find review the diff\n",
    )


@pytest.mark.parametrize(
    ("args", "what"),
    [(("task", "fix-testing"), "task"), (("show", "task", "fix-testing"), "task"),
     (("show", "fix-testing"), "name")],
)  # fmt: skip
def test_an_unknown_task_suggests_by_spelling_and_by_meaning(
    home: Path, args: tuple[str, ...], what: str
) -> None:
    """'fix-tests' is spelled closest; claude:flaky's description holds 'fix' and 'testing's
    stem, as fix-tests' does, which is said once."""
    result = run_start(*args)
    assert (result.returncode, result.stdout, result.stderr) == (
        4,
        "",
        f"start: unknown {what} 'fix-testing'; did you mean 'fix-tests' (by spelling) or "
        "'claude:flaky' (by meaning)?\n",
    )


def test_an_unknown_task_suggests_by_meaning_alone(home: Path) -> None:
    """No name is spelled close to 'flaky-tests-fix'; one description holds its three words."""
    result = run_start("task", "flaky-tests-fix")
    assert (result.returncode, result.stderr) == (
        4,
        "start: unknown task 'flaky-tests-fix'; did you mean 'claude:flaky' (by meaning)?\n",
    )


def test_find_is_completed_with_its_summary_and_its_options() -> None:
    def complete(words: str, cword: str) -> str:
        env = {"_START_COMPLETE": "zsh_complete", "COMP_WORDS": words, "COMP_CWORD": cword}
        result = run_start(env=env)
        assert (result.returncode, result.stderr) == (0, "")
        return result.stdout

    assert complete("start fi", "1") == (
        "plain\nfind\nFind a task by what it does: the tasks whose names, aliases and "
        "descriptions hold TEXT's words, best first, with a score and why.\n"
    )
    assert complete("start find --li", "2") == "plain\n--limit\nShow at most N tasks.\n"
    # TEXT is free text: nothing is offered for it.
    assert complete("start find re", "2") == "\n"


def test_find_help_is_whole() -> None:
    result = run_start("find", "--help", env={"COLUMNS": "80"})
    assert (result.returncode, result.stderr) == (0, "")
    assert (
        result.stdout
        == """\
Usage: start find [OPTIONS] TEXT...

  Find a task by what it does: the tasks whose names, aliases and descriptions
  hold TEXT's words, best first, with a score and why.

  Start's tasks, other agents' command files and Agent Skills are searched
  (internal tasks are not). A word counts 2 in a name or alias and 1 in a
  description; the same word counts whole, its stem 0.9, a prefix 0.7 and, in
  a name, a close spelling 0.6. The score (0 to 1) is what TEXT's words are
  worth together over what they could be; `why` says where each was found.

Options:
  --limit N            Show at most N tasks.  [default: 10]
  -d, --directory DIR  Run as if started in DIR.
  --debug              Show the traceback of an error (or START_DEBUG=1).
  --json               Print the result as JSON on stdout.
  --no-color           No colour or bold (or NO_COLOR=1).
  --no-project         Ignore the project's .start/ for this run (or set
                       START_NO_PROJECT=1).
  -h, --help           Show this message and exit.

Examples:
  # The tasks that review a diff, best first
  start find review the diff
  # The three best, as data
  start find --limit 3 --json commit message

Exit codes: 0 found; 2 usage; 3 config invalid; 4 no task matches.

Docs: start help usage
"""
    )
