"""Help that teaches, one error format, and flags that mean the same on every command."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import click
import pytest

from start.cli import TOPICS, cli
from start.cli.commands import summary
from start.cli.help import docs_dir
from tests.conftest import invoke, write_tree
from tests.test_meta import all_commands

COMMANDS = all_commands()


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    with click.Context(cli) as ctx:
        for name in path:
            assert isinstance(command, click.Group)
            found = command.get_command(ctx, name)
            assert found is not None
            command = found
    return command


def _name(path: tuple[str, ...]) -> str:
    return " ".join(("start", *path))


# --- help -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", COMMANDS, ids=_name)
def test_every_command_has_examples_that_run_start(path: tuple[str, ...]) -> None:
    text = invoke(*path, "--help").stdout
    assert "\nExamples:\n" in text
    examples = text.split("\nExamples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert examples, text
    comments, lines = examples[0::2], examples[1::2]
    assert all(line.startswith("  # ") for line in comments), examples
    assert all(re.search(r"(^  |[|(] ?)start\b", line) for line in lines), examples


def test_the_roles_and_agents_of_the_examples_ship() -> None:
    """An example a new user copies works with no config: its -r and -a name shipped items."""
    import itertools
    import shlex

    from start.config.load import load

    config = load(None, use_project=False, layers=("built-in",))
    named: list[tuple[str, str]] = []
    for path in COMMANDS:
        for _, line in getattr(_command(path), "examples", ()):
            words = shlex.split(line)
            for flag, value in itertools.pairwise(words):
                if flag in ("-r", "--role"):
                    named.append(("roles", value))
                elif flag in ("-a", "--agent"):
                    named.extend(("agents", agent) for agent in value.split(","))
    assert named
    missing = [(s, n) for s, n in named if n not in getattr(config, s)]
    assert missing == []


@pytest.mark.parametrize("path", [p for p in COMMANDS if p], ids=_name)
def test_summaries_are_whole_sentences_never_cut(path: tuple[str, ...]) -> None:
    text = summary(_command(path))
    assert text.endswith(".")
    assert "..." not in text and "…" not in text
    parent = invoke(*path[:-1], "--help").stdout
    listing = parent.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    # The listing wraps a long summary within its column, but never shortens it.
    assert text in " ".join(listing.split())


@pytest.mark.parametrize("path", COMMANDS, ids=_name)
def test_a_usage_line_wraps_between_words_only(
    path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    wide = invoke(*path, "--help").stdout.split("\n\n", 1)[0]
    monkeypatch.setenv("COLUMNS", "40")
    narrow = invoke(*path, "--help").stdout.split("\n\n", 1)[0]
    assert narrow.split() == wide.split()


def test_config_edit_usage_names_its_argument() -> None:
    assert invoke("config", "edit", "--help").stdout.startswith(
        "Usage: start config edit [OPTIONS] [FILE]\n"
    )


def test_the_epilog_keeps_its_lines() -> None:
    text = invoke("--help").stdout
    assert "\n\nArguments after -- are passed to the agent unchanged.\n\n" in text
    assert "\nExit codes:\n    0  ok (after exec, the agent's own exit status)\n" in text
    for code in (
        "   70  internal error",
        "  129  terminated",
        "  130  interrupted",
        "  143  termi",
    ):
        assert code in text


def test_zsh_completion_offers_whole_summaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_START_COMPLETE", "zsh_complete")
    monkeypatch.setenv("COMP_WORDS", "start ")
    monkeypatch.setenv("COMP_CWORD", "1")
    lines = invoke().stdout.splitlines()
    offered = dict(zip(lines[1::3], lines[2::3], strict=True))
    assert offered["doctor"] == summary(_command(("doctor",)))
    assert offered["task"] == "Run a task with INSTRUCTIONS; without NAME, list the tasks."


def test_help_is_help() -> None:
    assert invoke("help", "config", "show").stdout == invoke("config", "show", "--help").stdout
    # The topics are listed once, in the root help, which `start help` is.
    root = invoke("help").stdout
    assert root == invoke("--help").stdout
    assert root.endswith(
        "\nHelp topics, the pages of the docs (start help TOPIC; start help --topic completion|mcp|board):\n"
        "  usage, configuration, placeholders, agents, interop, setup, editing,\n"
        "  completion, security, performance, benchmark-results, mcp, board,\n"
        "  board-sync-design, ci, architecture, workflows, workflows-design\n"
    )
    assert root.count("placeholders") == 1


@pytest.mark.parametrize("topic", TOPICS)
def test_every_docs_page_is_a_topic_named_as_its_file(topic: str) -> None:
    page = (Path(docs_dir()) / f"{topic}.md").read_text(encoding="utf-8")
    words = ("--topic", topic) if topic in ("completion", "mcp", "board") else (topic,)
    result = invoke("help", *words)
    assert (result.exit_code, result.stdout) == (0, page)
    assert invoke("help", "--topic", topic).stdout == page


def test_every_docs_page_has_a_topic() -> None:
    assert sorted(TOPICS) == sorted(p.stem for p in Path(docs_dir()).glob("*.md"))


@pytest.mark.parametrize("topic", ["completion", "mcp", "board"])
def test_a_topic_that_is_also_a_command_is_named_in_its_help(topic: str) -> None:
    assert invoke("help", topic).stdout.endswith(f"\nDocs: start help --topic {topic}\n")


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        ("start help co", ["completion", "config", "configuration", "continue"]),
        ("start help config s", ["set", "show"]),
        ("start help --topic c", ["ci", "completion", "configuration"]),
        ("start help show x", []),
    ],
)
def test_help_completes_commands_and_topics(
    words: str, offered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("_START_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - 1))
    assert invoke().stdout.split() == [f"plain,{name}" for name in offered]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("help", "placeholder"),
            "start: no such command or help topic 'placeholder'; did you mean 'placeholders'?\n",
        ),
        (
            ("help", "zzz"),
            "start: no such command or help topic 'zzz'; topics: usage, configuration, "
            "placeholders, agents, interop, setup, editing, completion, security, "
            "performance, benchmark-results, mcp, board, board-sync-design, ci, architecture, "
            "workflows, workflows-design\n",
        ),
        (
            ("help", "config", "shwo"),
            "start: no such command 'config shwo'; did you mean 'show'?\n",
        ),
        (("help", "config", "zzz"), "start: no such command 'config zzz'\n"),
        (
            ("help", "--topic", "shell-completion"),
            "start: no such help topic 'shell-completion'; did you mean 'completion'?\n",
        ),
        (("help", "--topic", "config", "show"), "start: --topic takes one TOPIC\n"),
    ],
)
def test_help_for_nothing(args: tuple[str, ...], message: str) -> None:
    result = invoke(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", message)


def test_help_for_an_item_points_at_start_show(isolated: Path) -> None:
    """`start help gdr`: a task's alias (or a task, role, agent or context) is not a command,
    and `start show` is where it is described."""
    write_tree(
        isolated.parent / "home" / ".config" / "start",
        {"config.toml": '[roles.explain]\nprompt = "r"\n[tasks.explain]\nprompt = "t"\n'},
    )
    for word, named in [
        ("gdr", "'gdr' names the task git-diff-review: 'start show gdr' shows it"),
        (
            "pair-programmer",
            "'pair-programmer' names a role: 'start show pair-programmer' shows it",
        ),
        ("claude", "'claude' names an agent: 'start show claude' shows it"),
        (
            "explain",
            "'explain' names several items: 'start show role explain', 'start show task explain'",
        ),
    ]:
        result = invoke("help", word)
        assert (result.exit_code, result.stdout, result.stderr) == (
            2,
            "",
            f"start: no such command or help topic '{word}'; {named}\n",
        )


def test_help_into_a_closed_pipe_is_a_clean_exit(isolated: Path) -> None:
    """`set -o pipefail; start help usage | head -1`: the reader chose to stop."""
    import subprocess
    import sys

    from tests.conftest import REPO

    command = f"set -o pipefail; '{sys.executable}' -m start help usage | head -1"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        ["bash", "-c", command], cwd=isolated, env=env, capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "# Using `start`\n", "")


# --- one error format -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        pytest.param(
            ("tsak",),
            "start: no such command 'tsak'; did you mean 'task'?\n"
            "hint: run 'start --help' for usage\n",
            id="command",
        ),
        pytest.param(
            ("config", "shwo"),
            "start: no such command 'shwo'; did you mean 'show'?\n"
            "hint: run 'start config --help' for usage\n",
            id="subcommand",
        ),
        pytest.param(
            ("config", "add", "tsak", "x"),
            "start: unknown kind 'tsak'; did you mean 'task'?\n"
            "hint: run 'start config add --help' for usage\n",
            id="choice",
        ),
        pytest.param(
            ("config", "edit", "task.toml"),
            "start: unknown file 'task.toml'; did you mean 'tasks.toml'?\n"
            "hint: run 'start config edit --help' for usage\n",
            id="file-choice",
        ),
        pytest.param(
            ("config", "show", "--layer", "globl"),
            "start: unknown value for --layer 'globl'; did you mean 'global'?\n"
            "hint: run 'start config show --help' for usage\n",
            id="option-choice",
        ),
        pytest.param(
            ("completion", "tcsh"),
            "start: unknown shell 'tcsh'; choose from bash, zsh, fish\n"
            "hint: run 'start completion --help' for usage\n",
            id="choice-no-match",
        ),
        pytest.param(
            ("--jsn",),
            "start: no such option '--jsn'; did you mean '--json'?\n"
            "hint: run 'start --help' for usage\n",
            id="option",
        ),
        pytest.param(
            ("--bogus",),
            "start: no such option '--bogus'\nhint: run 'start --help' for usage\n",
            id="option-far-from-any",
        ),
        pytest.param(
            ("show", "gdx"),
            "start: unknown name 'gdx'; did you mean 'gdr'?\n",
            id="show-alias",
        ),
        pytest.param(
            ("task", "--agnet", "x"),
            "start: no such option '--agnet'; did you mean '--agent'?\n"
            "hint: run 'start task --help' for usage\n",
            id="option-of-a-command",
        ),
        pytest.param(
            ("completion",),
            "start: missing argument SHELL (bash, zsh, fish)\n"
            "hint: run 'start completion --help' for usage\n",
            id="missing-argument",
        ),
        pytest.param(
            ("config", "set", "shell", "bash", "extra"),
            "start: got unexpected extra argument (extra)\n"
            "hint: run 'start config set --help' for usage\n",
            id="extra-argument",
        ),
        pytest.param(
            ("-a",),
            "start: option '-a' requires an argument\nhint: run 'start --help' for usage\n",
            id="option-without-value",
        ),
        pytest.param(
            ("config", "show", "tsks"),
            "start: unknown section 'tsks'; did you mean 'tasks'?\n",
            id="section",
        ),
        pytest.param(
            ("config", "show", "task", "git-diff-reveiw"),
            "start: unknown task 'git-diff-reveiw'; did you mean 'git-diff-review'?\n",
            id="name",
        ),
        pytest.param(
            ("task", "git-diff-reveiw"),
            "start: unknown task 'git-diff-reveiw'; did you mean 'git-diff-review'?\n",
            id="task-name",
        ),
        pytest.param(
            ("fix the flaky test",),
            "start: no such command 'fix the flaky test'\n"
            "hint: to send text to the agent, run: start prompt 'fix the flaky test'\n"
            "hint: run 'start --help' for usage\n",
            id="prose",
        ),
        pytest.param(
            ("why", "does", "it", "fail?"),
            "start: no such command 'why'\n"
            "hint: to send text to the agent, run: start prompt 'why does it fail?'\n"
            "hint: run 'start --help' for usage\n",
            id="prose-in-words",
        ),
        pytest.param(
            ("gdr",),
            "start: no such command 'gdr'\n"
            "hint: 'gdr' is a task; run: start task gdr\n"
            "hint: run 'start --help' for usage\n",
            id="task-alias",
        ),
        pytest.param(
            ("commit-message", "one line", "only"),
            "start: no such command 'commit-message'\n"
            "hint: 'commit-message' is a task; run: start task commit-message 'one line' only\n"
            "hint: run 'start --help' for usage\n",
            id="task-name-with-instructions",
        ),
        pytest.param(
            ("Explain",),
            "start: no such command 'Explain'\n"
            "hint: to send text to the agent, run: start prompt Explain\n"
            "hint: run 'start --help' for usage\n",
            id="not-a-command-name",
        ),
    ],
)
def test_one_error_format(args: tuple[str, ...], stderr: str) -> None:
    result = invoke(*args)
    assert result.stderr == stderr
    assert result.stdout == ""
    assert result.exit_code in (2, 4)


# --- the parser ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [(), ("task",), ("config", "set")], ids=_name)
def test_commands_parse_with_clicks_own_parser(path: tuple[str, ...]) -> None:
    """No subclass of click's private parser (issue 24): a command builds the parser that a plain
    click.Command builds, so a click release that changes or drops that class changes nothing."""
    command = _command(path)
    # The help option names of a real run (click keeps one help option per command).
    with click.Context(command, help_option_names=["-h", "--help"]) as ctx:
        plain = click.Command("plain").make_parser(ctx)
        assert type(command.make_parser(ctx)) is type(plain)


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        pytest.param(
            ("-Q",),
            "start: no such option '-Q'\nhint: run 'start --help' for usage\n",
            id="short",
        ),
        pytest.param(
            ("-qZ",),
            "start: no such option '-Z'\nhint: run 'start --help' for usage\n",
            id="bundled",
        ),
        pytest.param(
            ("-a",),
            "start: option '-a' requires an argument\nhint: run 'start --help' for usage\n",
            id="missing-value",
        ),
    ],
)
def test_short_options_read_as_click_reads_them(args: tuple[str, ...], stderr: str) -> None:
    result = invoke(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", stderr)


def test_help_and_version_options_read_as_clicks_own() -> None:
    help_text = invoke("--help").stdout
    assert "  -V, --version" in help_text and "Show the version and exit." in help_text
    assert "  -h, --help" in help_text and "Show this message and exit." in help_text
    assert invoke("-h").stdout == help_text
    assert invoke("task", "-h").stdout.startswith("Usage: start task ")


# --- flags mean the same everywhere ----------------------------------------------------------

NO_JSON: dict[tuple[str, ...], tuple[str, ...]] = {
    ("board", "export"): (),
    ("completion",): ("bash",),
    ("help",): (),
    ("mcp",): (),
}


@pytest.mark.parametrize("path", list(NO_JSON), ids=_name)
def test_json_where_there_is_no_result_is_a_usage_error(path: tuple[str, ...]) -> None:
    for args in ((*path, *NO_JSON[path], "--json"), ("--json", *path, *NO_JSON[path])):
        result = invoke(*args)
        assert (result.exit_code, result.stdout) == (2, "")
        assert result.stderr == (
            f"start: '{_name(path)}' has no JSON output; drop --json\n"
            f"hint: run '{_name(path)} --help' for usage\n"
        )


def test_every_command_either_has_json_or_says_so() -> None:
    declared = {path for path in COMMANDS if path and getattr(_command(path), "json", True)}
    groups = {path for path in COMMANDS if isinstance(_command(path), click.Group)}
    assert set(COMMANDS) - declared - groups - {()} == set(NO_JSON)


@pytest.fixture
def project(isolated: Path) -> Path:
    write_tree(isolated, {".start/config.toml": '[tasks.t]\nprompt = "p"\n'})
    return isolated


def test_trust_json_outcomes(project: Path) -> None:
    first = invoke("trust", "--yes", "--json")
    assert (first.exit_code, first.stderr) == (0, "")
    data = json.loads(first.stdout)
    assert (data["start_dir"], data["trusted"], data["approved"], data["files"]) == (
        str(project / ".start"),
        True,
        True,
        [".start/config.toml"],
    )
    again = json.loads(invoke("trust", "--json").stdout)
    assert (again["trusted"], again["approved"]) == (True, False)
    revoked = invoke("untrust", "--json")
    assert (revoked.exit_code, revoked.stderr) == (0, "")
    assert json.loads(revoked.stdout) == {"root": str(project), "revoked": 1}


@pytest.mark.parametrize(
    "args",
    [
        ("config", "validate"),
        ("config", "set", "shell", "bash"),
        ("config", "unset", "shell"),
        ("trust", "--yes"),
        ("untrust",),
        ("init",),
    ],
    ids=" ".join,
)
def test_quiet_silences_summaries(project: Path, args: tuple[str, ...]) -> None:
    loud = invoke(*args)
    if args[0] == "untrust":
        invoke("trust", "--yes")
    if args[0] == "init":
        (project.parent / "home/.config/start/config.toml").unlink()
    quiet = invoke("-q", *args)
    assert loud.exit_code == quiet.exit_code == 0, loud.stderr + quiet.stderr
    assert loud.stdout + loud.stderr != ""
    assert (quiet.stdout, quiet.stderr) == ("", "")


def test_verbose_adds_the_file_to_the_task_listing(project: Path) -> None:
    plain = invoke("task").stdout.splitlines()
    verbose = invoke("task", "-v").stdout.splitlines()
    assert plain[0] == re.sub(r"\s+FILE$", "", verbose[0])
    assert verbose[0].endswith("  FILE")
    [row] = [line for line in verbose if line.startswith("t ")]
    assert re.fullmatch(rf"t +project +{re.escape(str(project / '.start' / 'config.toml'))}", row)


@pytest.mark.parametrize("path", [p for p in COMMANDS if p], ids=_name)
def test_help_for_every_command_is_its_help(path: tuple[str, ...]) -> None:
    """`start help X` prints what `start X --help` prints, for every command and subcommand."""
    result = invoke("help", *path)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == invoke(*path, "--help").stdout
