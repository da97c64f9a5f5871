"""`start task taskfile:NAME` and the listing of `start task`: the project's Taskfile tasks as
start's own, run by the real go-task (`task`, from go-task-bin, beside this Python), with --print
in process; the launch (exec) is in tests/e2e/test_taskfile_tasks.py."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from start.base import paths
from tests.cli.test_completion import complete
from tests.conftest import invoke, write_tree

TASK = shutil.which("task", path=str(Path(sys.executable).parent)) or shutil.which("task")
pytestmark = pytest.mark.skipif(
    TASK is None, reason="go-task is a test dependency (go-task-bin); install the test extras"
)

TASKFILE = """\
version: '3'

tasks:
  greet:
    desc: "Prints a greeting."
    cmds:
      - echo "Hello {{.CLI_ARGS}}"
    silent: true

  words:
    desc: "Prints each word of its arguments on a line."
    cmds:
      - printf '%s\\n' {{.CLI_ARGS}}
    silent: true

  fail:
    desc: "Fails with exit code 3."
    cmds:
      - echo partial; echo broken >&2; exit 3
    silent: true

  slow:
    desc: "Sleeps for a minute."
    cmds:
      - sleep 60
    silent: true

  undocumented:
    cmds:
      - echo undocumented
    silent: true

  helper:
    internal: true
    cmds:
      - echo internal
"""

CONFIG = """\
[settings]
default_agent = "stand-in"

[agents.stand-in]
bin = "true"
command = "{bin} {prompt}"

[tasks.review]
alias = "rv"
description = "Review the change"
prompt = "Review the change."
"""

TABLE = """\
TASK                   ALIAS  DESCRIPTION                                   SOURCE    LAYER
review                 rv     Review the change                             start     global
taskfile:fail                 Fails with exit code 3.                       taskfile  project
taskfile:greet                Prints a greeting.                            taskfile  project
taskfile:slow                 Sleeps for a minute.                          taskfile  project
taskfile:undocumented                                                       taskfile  project
taskfile:words                Prints each word of its arguments on a line.  taskfile  project
"""


@pytest.fixture
def global_dir(isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A global config with CONFIG, and an empty built-in layer so listings are exact."""
    directory = tmp_path / "global"
    write_tree(directory, {"config.toml": CONFIG})
    monkeypatch.setenv("START_CONFIG_DIR", str(directory))
    builtin = tmp_path / "builtin"
    builtin.mkdir()
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(builtin))
    return directory


@pytest.fixture
def project(global_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory with TASKFILE at its root, trusted by path."""
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    return isolated


def history() -> list[dict[str, object]]:
    result = invoke("log", "--json")
    assert result.exit_code == 0, result.stderr
    runs: list[dict[str, object]] = json.loads(result.stdout)
    return runs


# --- the listing ------------------------------------------------------------------------------


def test_the_listing_shows_the_taskfiles_tasks_with_their_source(project: Path) -> None:
    result = invoke("task", "--no-color")
    assert (result.exit_code, result.stdout, result.stderr) == (0, TABLE, "")


def test_the_listing_as_json_names_the_taskfile(project: Path) -> None:
    result = invoke("task", "--json")
    listed = json.loads(result.stdout)
    assert [(entry["name"], entry["source"]) for entry in listed] == [
        ("review", None),
        ("taskfile:fail", "taskfile"),
        ("taskfile:greet", "taskfile"),
        ("taskfile:slow", "taskfile"),
        ("taskfile:undocumented", "taskfile"),
        ("taskfile:words", "taskfile"),
    ]
    assert listed[2] == {
        "name": "taskfile:greet",
        "alias": None,
        "description": "Prints a greeting.",
        "layer": "project",
        "file": str(project / "Taskfile.yml"),
        "internal": False,
        "params": [],
        "source": "taskfile",
    }


def test_an_untrusted_taskfile_is_not_listed_and_the_listing_says_why(
    global_dir: Path, isolated: Path
) -> None:
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    result = invoke("task", "--no-color")
    assert result.exit_code == 0
    assert "taskfile:" not in result.stdout
    assert result.stderr == (
        "start: warning: the Taskfile's tasks are not listed: Taskfile.yml is not used: nothing "
        f"vouches for {isolated}: no approval covers the Taskfile, and the project is not under "
        "settings.trusted_paths or START_TRUSTED_PATHS; review and approve it with 'start trust', "
        "or add the project to trusted_paths\n"
    )


def test_a_project_without_a_taskfile_lists_as_before(global_dir: Path) -> None:
    result = invoke("task", "--no-color")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "TASK    ALIAS  DESCRIPTION        LAYER\nreview  rv     Review the change  global\n"
    )


def test_completion_offers_the_taskfiles_tasks(project: Path) -> None:
    assert complete("start task taskfile:w") == [
        ("taskfile:words", "Taskfile: Prints each word of its arguments on a line.")
    ]
    assert [value for value, _ in complete("start task ")] == [
        "review",
        "rv",
        "taskfile:fail",
        "taskfile:greet",
        "taskfile:slow",
        "taskfile:undocumented",
        "taskfile:words",
    ]
    # A word that cannot begin `taskfile:` does not run `task`.
    assert complete("start task r") == [
        ("review", "Review the change"),
        ("rv", "alias of review: Review the change"),
    ]


# --- --print ----------------------------------------------------------------------------------


def test_print_runs_the_task_and_records_it(project: Path) -> None:
    result = invoke("task", "taskfile:greet", "--print", "--", "big", "world")
    assert (result.exit_code, result.stdout) == (0, "Hello big world\n")
    assert result.stderr == "start ▸ taskfile:greet  (Taskfile.yml, at most 600 s)\n"
    (run,) = history()
    assert {key: run[key] for key in ("task", "agent", "mode", "state", "exit_code")} == {
        "task": "taskfile:greet",
        "agent": "task",
        "mode": "task",
        "state": "ok",
        "exit_code": 0,
    }
    shown = invoke("log", "show", str(run["id"]), "--json")
    assert json.loads(shown.stdout)["answer"] == "Hello big world\n"


def test_print_json_is_the_run(project: Path) -> None:
    result = invoke("task", "taskfile:words", "--print", "--json", "--", "a b", "c")
    data = json.loads(result.stdout)
    assert (result.exit_code, result.stderr) == (0, "")
    assert (data["answer"], data["success"], data["task"]) == ("a b\nc\n", True, "taskfile:words")
    assert data["argv"] == [
        TASK,
        "--taskfile",
        str(project / "Taskfile.yml"),
        "--color=false",
        "--exit-code",
        "words",
        "--",
        "a b",
        "c",
    ]


def test_a_failed_task_prints_its_output_and_exits_with_its_code(project: Path) -> None:
    result = invoke("task", "taskfile:fail", "--print")
    assert (result.exit_code, result.stdout) == (3, "partial\n")
    assert result.stderr == (
        "start ▸ taskfile:fail  (Taskfile.yml, at most 600 s)\n"
        "broken\n"
        "start: task 'taskfile:fail' failed: task: Failed to run task \"fail\": exit status 3\n"
    )
    (run,) = history()
    assert (run["state"], run["exit_code"]) == ("failed", 3)


def test_the_users_words_pass_as_they_are(project: Path, global_dir: Path) -> None:
    # Below `full` (read-only, the default), start mcp refuses ';' and '$' in an agent's words
    # (tests/mcp/test_taskfile_args.py); the user's own pass, each a word for the Taskfile.
    result = invoke("task", "taskfile:words", "--print", "-q", "--", "x;y", "$(id)", "")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "x;y\n$(id)\n\n", "")


def test_settings_taskfile_timeout_stops_a_task(project: Path, global_dir: Path) -> None:
    config = global_dir / "config.toml"
    config.write_text(CONFIG.replace("[settings]\n", "[settings]\ntaskfile_timeout = 1\n"))
    result = invoke("task", "taskfile:slow", "--print", "-q")
    assert (result.exit_code, result.stdout) == (124, "")
    assert result.stderr == (
        "start: task 'taskfile:slow' failed: `task slow` timed out after 1 s "
        "(settings.taskfile_timeout)\n"
    )
    (run,) = history()
    assert (run["state"], run["exit_code"]) == ("timed out", None)


def test_timeout_stops_one_run(project: Path) -> None:
    result = invoke("task", "taskfile:slow", "--print", "-q", "--timeout", "1")
    assert (result.exit_code, result.stderr) == (
        124,
        "start: task 'taskfile:slow' failed: `task slow` timed out after 1 s (--timeout)\n",
    )


def test_command_timeout_is_not_a_tasks_timeout(project: Path, global_dir: Path) -> None:
    write_tree(project, {"Taskfile.yml": TASKFILE + TWO_SECONDS})
    config = global_dir / "config.toml"
    config.write_text(CONFIG.replace("[settings]\n", "[settings]\ncommand_timeout = 1\n"))
    result = invoke("task", "taskfile:two-seconds", "--print", "-q")
    assert (result.exit_code, result.stdout) == (0, "awake\n")


TWO_SECONDS = """
  two-seconds:
    desc: "Sleeps for two seconds."
    cmds:
      - sleep 2; echo awake
    silent: true
"""


def test_again_repeats_a_taskfile_run(project: Path) -> None:
    assert invoke("task", "taskfile:greet", "--print", "-q", "--", "again").exit_code == 0
    result = invoke("again")
    assert (result.exit_code, result.stdout) == (0, "Hello again\n")
    assert result.stderr.startswith(
        f"start again: start task taskfile:greet --print -- again  (in {project})\n"
    )
    assert [run["task"] for run in history()] == ["taskfile:greet", "taskfile:greet"]


def test_dry_run_shows_the_command(project: Path) -> None:
    result = invoke("task", "taskfile:greet", "--dry-run", "-q", "--", "x")
    assert (result.exit_code, result.stderr) == (0, "")
    taskfile = project / "Taskfile.yml"
    assert result.stdout == f"{TASK} --taskfile {taskfile} --color=false --exit-code greet -- x\n"
    assert history() == []


# --- what is refused, before anything runs ----------------------------------------------------


def test_an_unknown_name_gets_a_suggestion(project: Path) -> None:
    typo = invoke("task", "taskfile:gret", "--print")
    assert (typo.exit_code, typo.stderr) == (
        4,
        "start: unknown task 'taskfile:gret'; did you mean 'taskfile:greet'? (in Taskfile.yml)\n",
    )
    internal = invoke("task", "taskfile:helper", "--print")
    assert (internal.exit_code, internal.stderr) == (
        4,
        "start: unknown task 'taskfile:helper'; known tasks: taskfile:fail, taskfile:greet, "
        "taskfile:slow, taskfile:undocumented, taskfile:words (in Taskfile.yml)\n",
    )
    empty = invoke("task", "taskfile:", "--print")
    assert (empty.exit_code, empty.stderr) == (
        2,
        "start: no task name given; known tasks: taskfile:fail, taskfile:greet, taskfile:slow, "
        "taskfile:undocumented, taskfile:words\n",
    )
    assert history() == []


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["-a", "stand-in"], "-a/--agent is for an agent"),
        (["-m", "big"], "-m/--model is for an agent"),
        (["-r", "x"], "-r/--role is for an agent"),
        (["-c", "x"], "-c/--context is for an agent"),
        (["-p", "a=b"], "-p/--param is for an agent"),
        (["--print", "--permissions", "full"], "--permissions is for an agent"),
    ],
)
def test_an_agents_options_are_refused(project: Path, words: list[str], message: str) -> None:
    result = invoke("task", "taskfile:greet", *words)
    assert (result.exit_code, result.stderr) == (
        2,
        f"start: {message}, and taskfile:greet runs the project's Taskfile with `task`, not "
        "an agent\n",
    )


def test_instructions_are_refused_with_the_way_to_pass_arguments(project: Path) -> None:
    result = invoke("task", "taskfile:greet", "world")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: taskfile:greet takes no instructions: the words for its {{.CLI_ARGS}} go after "
        "--, as for `task`: start task taskfile:greet -- ARGS\n",
    )


def test_an_untrusted_taskfile_is_not_run(global_dir: Path, isolated: Path) -> None:
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    result = invoke("task", "taskfile:greet", "--print")
    assert (result.exit_code, result.stdout) == (5, "")
    assert result.stderr == (
        "start: cannot run taskfile:greet: Taskfile.yml is not used: nothing vouches for "
        f"{isolated}: no approval covers the Taskfile, and the project is not under "
        "settings.trusted_paths or START_TRUSTED_PATHS; review and approve it with 'start trust', "
        "or add the project to trusted_paths\n"
    )


def test_no_taskfile_and_no_project(global_dir: Path, isolated: Path) -> None:
    none = invoke("task", "taskfile:greet", "--print")
    assert (none.exit_code, none.stderr) == (
        4,
        f"start: cannot run taskfile:greet: {isolated} has no .agent/Taskfile.yml or "
        "Taskfile.yml\n",
    )
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    ignored = invoke("task", "taskfile:greet", "--print", "--no-project")
    assert (ignored.exit_code, ignored.stderr) == (
        4,
        "start: cannot run taskfile:greet: Taskfile.yml is ignored (--no-project)\n",
    )


def test_no_task_program(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))
    result = invoke("task", "taskfile:greet", "--print")
    assert (result.exit_code, result.stderr) == (
        127,
        "start: cannot run taskfile:greet: Taskfile.yml is not used: the `task` program (go-task) "
        "is not on PATH; install it, or add start's taskfile extra: pipx inject start-agent "
        "go-task-bin\n",
    )


def test_the_launch_knows_the_prefix_without_importing_the_taskfile_module() -> None:
    from start.cli import run
    from start.runs import taskfile

    assert run.TASKFILE_PREFIX == taskfile.PREFIX == "taskfile:"
