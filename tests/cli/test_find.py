"""`start find TEXT` as a real process: the tasks, command files and skills ranked by TEXT's
words, with a score and why (start.config.finding); a task name that does not exist suggested by
spelling and by meaning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_start, write_tree

BENCHMARKS = REPO / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import scenarios  # noqa: E402

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
        "NAME                   SCORE  WHY                                 DESCRIPTION\n"
        "fix-tests              0.83   name: fix, tests; description: fa…  Fix the failing tests\n"
        "claude:flaky           0.33   description: fix, tests             Find the flaky tests "
        "and fix them\n"
        # The shipped workflow fix-severe, and a shipped task, one of its steps.
        "fix-severe (workflow)  0.33   name: fix                           Triage a problem "
        "report; if it is…\n"
        "plan-fix               0.33   name: fix                           Plan the fix of a "
        "problem: its su…\n",
        "",
    )


def test_find_matches_stems_prefixes_aliases_and_names_spelled_close(home: Path) -> None:
    """And the description is cut to the page's width (COLUMNS), as start task's listing is."""
    assert find("fixing", "ft") == (
        0,
        "NAME                   SCORE  WHY                          DESCRIPTION\n"
        "fix-tests              0.95   name: fixing~fix; alias: ft  Fix the failing tests\n"
        "fix-severe (workflow)  0.45   name: fixing~fix             Triage a problem report; if "
        "it is severe…\n"
        "plan-fix               0.45   name: fixing~fix             Plan the fix of a problem: "
        "its summary, …\n"
        "claude:flaky           0.23   description: fixing~fix      Find the flaky tests and fix "
        "them\n",
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


WORKFLOW = """
[workflows.triage-bug]
description = "Triage a bug report, then plan its fix"

[workflows.triage-bug.steps.read]
prompt = "Triage {instructions}"
"""


@pytest.fixture
def flows(home: Path) -> Path:
    """The user's config with a workflow too."""
    config = home / ".config/start/config.toml"
    config.write_text(CONFIG + WORKFLOW, encoding="utf-8")
    return home


def test_workflows_are_found_too(flows: Path) -> None:
    """A workflow ranks among the tasks by its name and description; the table says it is one,
    the JSON gives its kind."""
    assert find("triage", "the", "failing", "bug") == (
        0,
        "NAME                   SCORE  WHY                   DESCRIPTION\n"
        "triage-bug (workflow)  0.67   name: triage, bug     Triage a bug report, then plan its "
        "fix\n"
        # The shipped task triage, and the shipped workflow whose first step it is.
        "triage                 0.33   name: triage          Triage a problem report: its "
        "severity, a summar…\n"
        "fix-severe (workflow)  0.17   description: triage   Triage a problem report; if it is "
        "severe, plan …\n"
        "fix-tests              0.17   description: failing  Fix the failing tests\n",
        "",
    )
    code, stdout, stderr = find("--json", "bug", "report")
    assert (code, stderr) == (0, "")
    assert json.loads(stdout)[:1] == [
        {
            "name": "triage-bug",
            "kind": "workflow",
            "score": 0.75,
            "why": [
                {"word": "bug", "field": "name", "matched": "bug", "how": "exact"},
                {"word": "report", "field": "description", "matched": "report", "how": "exact"},
            ],
            "description": "Triage a bug report, then plan its fix",
        }
    ]
    # Then the shipped workflow and task whose descriptions hold 'report'.
    assert [(m["name"], m["kind"]) for m in json.loads(stdout)[1:]] == [
        ("fix-severe", "workflow"), ("triage", "task")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "hint"),
    [("triage-bgu", "did you mean 'triage-bug'?"),
     ("bug-report", "did you mean 'triage-bug' (by meaning)?")],
)  # fmt: skip
def test_an_unknown_workflow_suggests_by_spelling_and_by_meaning(
    flows: Path, name: str, hint: str
) -> None:
    result = run_start("workflow", "run", name, "--dry-run")
    assert (result.returncode, result.stdout, result.stderr) == (
        4,
        "",
        f"start: unknown workflow '{name}'; {hint}\n",
    )


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
        "plain\nfind\nFind a task by what it does: the tasks and workflows whose names, aliases "
        "and descriptions hold TEXT's words, best first, with a score and why.\n"
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

  Find a task by what it does: the tasks and workflows whose names, aliases
  and descriptions hold TEXT's words, best first, with a score and why.

  Start's tasks, other agents' command files, Agent Skills and workflows are
  searched (internal tasks are not); a workflow is shown as 'NAME (workflow)'.
  A word counts 2 in a name or alias and 1 in a description; the same word
  counts whole, its stem 0.9, a prefix 0.7 and, in a name, a close spelling
  0.6. The score (0 to 1) is what TEXT's words are worth together over what
  they could be; `why` says where each was found.

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


def test_a_warm_find_ranks_from_the_cached_index_and_an_edit_is_seen(home: Path) -> None:
    """The second `start find` ranks from the config cache's index of the tasks' words (no
    task decoded: tests/config/test_finding.py), as the first ranked the parsed tasks; a
    changed description is another entry, so the next find sees it."""
    first = find("--json", "release", "notes")
    assert first[0] == 0
    assert find("--json", "release", "notes") == first
    config = home / ".config/start/config.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "Fix the failing tests", "Fix the failing tests and the release notes"
        ),
        encoding="utf-8",
    )
    code, stdout, stderr = find("--json", "--limit", "2", "release", "notes")
    assert (code, stderr) == (0, "")
    assert [(m["name"], m["score"], m["description"]) for m in json.loads(stdout)] == [
        ("release-notes", 1.0, "Write the release notes from the commits since the last tag"),
        ("fix-tests", 0.5, "Fix the failing tests and the release notes"),
    ]


# `start`, whose config cache reports on stderr, at exit, how many items it decoded.
COUNTED = """
import atexit, runpy, sys
from start.config import cache
decoded = []
item = cache._item
def counted(cls, *args):
    decoded.append(args[2])
    return item(cls, *args)
cache._item = counted
atexit.register(lambda: print(f"decoded {len(decoded)}", file=sys.stderr))
sys.argv = ["start", *sys.argv[1:]]
runpy.run_module("start", run_name="__main__", alter_sys=True)
"""


# `start`, which says on stderr, at exit (or as it becomes the agent), how many indexes of `start
# find` it made, or that it did not import start.config.finding at all.
MADE = """
import atexit, os, runpy, sys
made = []
def count():
    finding = sys.modules.get("start.config.finding")
    if finding is None:
        print("finding not imported", file=sys.stderr)
    else:
        print(f"made {len(made)}", file=sys.stderr)
def hook():
    from start.config import finding
    make = finding.made
    def counted(config):
        made.append(1)
        return make(config)
    finding.made = counted
atexit.register(count)
execve = os.execve
def becomes(*args):
    count()
    sys.stderr.flush()
    execve(*args)
os.execve = becomes
sys.argv = ["start", *sys.argv[1:]]
if sys.argv[1] == "find":
    hook()
runpy.run_module("start", run_name="__main__", alter_sys=True)
"""


def test_a_cold_launch_makes_no_index_and_find_makes_it_once(isolated: Path) -> None:
    """The launch path pays nothing for `start find`: a cold launch of the large config (a miss
    of the config cache) neither imports start.config.finding nor writes an index beside the
    entry it writes; the first find after it makes the index once and keeps it in a file of its
    own beside that entry (same name, kind `find`); the next find reads it and makes none."""
    from start.config import cache

    root = isolated.parent / "bench"
    world = scenarios.World(root, isolated, root / "configs", root / "home", root / "run")
    scenarios.large(world)
    env = {**os.environ, "PYTHONPATH": str(REPO), "START_CONFIG_DIR": str(world.config("large"))}
    entries = Path(cache.directory())

    def start(*args: str) -> tuple[int, str]:
        command = [sys.executable, "-c", MADE, *args]
        run = subprocess.run(command, cwd=isolated, env=env, capture_output=True, text=True)
        return run.returncode, run.stderr

    def kept() -> list[str]:
        return sorted(p.name.partition("-")[0] for p in entries.glob("*.bin"))

    assert start("-q", "task", scenarios.LARGE_TASK, "x") == (0, "finding not imported\n")
    assert kept() == ["config", "layer"]
    assert start("find", "--json", "task", "number", "500") == (0, "made 1\n")
    assert kept() == ["config", "find", "layer"]
    config = next(entries.glob("config-*.bin")).name
    assert (entries / config.replace("config-", "find-", 1)).is_file()
    assert start("find", "--json", "task", "number", "500") == (0, "made 0\n")
    # A malformed index is a miss: made again, and written again.
    index = next(entries.glob("find-*.bin"))
    index.write_bytes(index.read_bytes()[:-10])
    assert start("find", "--json", "task", "number", "500") == (0, "made 1\n")
    assert start("find", "--json", "task", "number", "500") == (0, "made 0\n")
    # A warm launch after them does not look at the index either.
    assert start("-q", "task", scenarios.LARGE_TASK, "x") == (0, "finding not imported\n")


def test_a_warm_find_over_the_large_config_decodes_no_task(isolated: Path) -> None:
    """The benchmark's target 12, as a real process: the second `start find` ranks the 1,000
    tasks from the cache's index, decoding none of them, as the first ranked the tasks parsed."""
    root = isolated.parent / "bench"
    world = scenarios.World(root, isolated, root / "configs", root / "home", root / "run")
    scenarios.large(world)
    env = {**os.environ, "PYTHONPATH": str(REPO), "START_CONFIG_DIR": str(world.config("large"))}
    command = [sys.executable, "-c", COUNTED, "find", "--json", "task", "number", "500"]
    runs = [
        subprocess.run(command, cwd=isolated, env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    assert [(run.returncode, run.stderr) for run in runs] == [(0, "decoded 0\n")] * 2
    assert runs[0].stdout == runs[1].stdout
    found = json.loads(runs[1].stdout)
    assert [(m["name"], m["score"]) for m in found[:3]] == [
        ("task-0500", 0.67), ("task-0000", 0.5), ("task-0001", 0.5)
    ]  # fmt: skip
    assert len(found) == 10
