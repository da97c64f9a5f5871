"""Each command's help shows the shared options that change what it does, each with what it does
there, and its own exit codes (issue 49); every command still accepts every shared option."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from start.cli import cli
from tests.conftest import invoke, run_start
from tests.test_meta import all_commands

# The shared options (start.cli.options.common_options), by parameter name.
SHARED = frozenset({"directory", "quiet", "verbose", "debug", "json", "no_color", "no_project"})
# The commands whose -d is their own (--description): the directory goes before them.
OWN_D = {("board", "add"), ("board", "update")}


def _help(*path: str) -> str:
    """A command's help as the real `start` prints it into a pipe, 80 columns wide."""
    result = run_start(*path, "--help", env={"COLUMNS": "80"})
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    return result.stdout


def _options(text: str) -> list[str]:
    """The options a help lists, as it spells them (`-d, --directory`)."""
    section = text.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  ((?:-[a-zA-Z]|--[a-z-]+)(?:, --[a-z-]+)?)", section, re.MULTILINE)


def test_board_show_help_is_whole() -> None:
    assert (
        _help("board", "show")
        == """\
Usage: start board show [OPTIONS] ID

  Show one item whole: why it waits, who holds it, what it runs, its comments,
  its answer, its history, and the items that are part of it.

Options:
  -d, --directory DIR  Run as if started in DIR.
  --debug              Show the traceback of an error (or START_DEBUG=1).
  --json               Print the result as JSON on stdout.
  --no-color           No colour or bold (or NO_COLOR=1).
  -h, --help           Show this message and exit.

Examples:
  # One item: its dependencies, its run, its comments, its answer and its history
  start board show item-3
  # The same as data
  start board show 3 --json

Exit codes: 0 ok; 2 usage; 4 no such item.

Docs: start help --topic board
"""
    )


def test_board_run_help_names_its_own_exit_codes_only() -> None:
    assert (
        _help("board", "run")
        == """\
Usage: start board run [OPTIONS]

  Run the items that say what to run, headless, as their dependencies
  complete.

  Each ready item is claimed for its run before the agent starts, run as
  --print runs it (at most settings.print_agents at once), and finished from
  the run's evidence: completed with the answer and the run's id in the
  history, or failed with the reason.

Options:
  --until-empty        Stop once nothing is ready and nothing runs.
  --timeout SECONDS    Stop each agent after SECONDS (default:
                       settings.print_timeout).  [1<=x<=86400]
  -d, --directory DIR  Run as if started in DIR.
  -q, --quiet          Print no summaries; problems still show.
  --debug              Show the traceback of an error (or START_DEBUG=1).
  --json               Print the result as JSON on stdout.
  --no-color           No colour or bold (or NO_COLOR=1).
  --no-project         Ignore the project's .start/ for this run (or set
                       START_NO_PROJECT=1).
  -h, --help           Show this message and exit.

Examples:
  # Run what is ready now and what becomes ready, then stop
  start board run --until-empty
  # Keep running items as they are added, until Ctrl-C
  start board run

Exit codes: 0 every item it ran completed; 1 one failed, or a claim was not
confirmed by a push (sync on: the item let go); 2 usage; 3 the config is
invalid, or sync is on and board_remote is not set; 5 the project is not
trusted; 130 Ctrl-C (the runs are stopped, their items pending again).

Docs: start help --topic board
"""
    )


def test_completion_help_is_whole() -> None:
    assert (
        _help("completion")
        == """\
Usage: start completion [OPTIONS] SHELL

  Print the tab-completion script for SHELL: bash, zsh or fish.

Options:
  --debug     Show the traceback of an error (or START_DEBUG=1).
  --no-color  No colour or bold (or NO_COLOR=1).
  -h, --help  Show this message and exit.

Examples:
  # bash: add to ~/.bashrc
  eval "$(start completion bash)"
  # zsh: add to ~/.zshrc, after compinit
  eval "$(start completion zsh)"
  # fish
  start completion fish > ~/.config/fish/completions/start.fish

Docs: start help --topic completion
"""
    )


LAUNCH = ["-a, --agent", "-r, --role", "-c, --context", "--no-role", "-m, --model", "--dry-run"]
EVERY = ["-d, --directory", "-q, --quiet", "-v, --verbose", "--debug", "--json", "--no-color"]


@pytest.mark.parametrize(
    ("path", "options"),
    [
        pytest.param(
            (),
            ["-V, --version", *EVERY, "--no-project", *LAUNCH, "-h, --help"],
            id="start",
        ),
        pytest.param(("config",), ["--debug", "--no-color", "-h, --help"], id="config"),
        pytest.param(
            ("config", "validate"), [*EVERY, "--no-project", "-h, --help"], id="config validate"
        ),
        pytest.param(
            ("log",),
            [
                "-n",
                "--task",
                "--agent",
                "--project",
                "-s, --search",
                "--since",
                "--usage",
                "--debug",
                "--json",
                "--no-color",
                "-h, --help",
            ],
            id="log",
        ),
        pytest.param(
            ("board", "update"),
            [
                "--status",
                "--title",
                "-d, --description",
                "--description-file",
                "--after",
                "--no-after",
                "--meta",
                "--priority",
                "--label",
                "--unlabel",
                "--parent",
                "--no-parent",
                "--answer",
                "--reason",
                "--prompt",
                "--task",
                "-a, --agent",
                "-m, --model",
                "--permissions",
                "--epoch",
                "--as",
                "-q, --quiet",
                "--debug",
                "--json",
                "--no-color",
                "--no-project",
                "-h, --help",
            ],
            id="board update",
        ),
        pytest.param(
            ("board", "watch"),
            [
                "--timeout",
                "-d, --directory",
                "-q, --quiet",
                "--debug",
                "--json",
                "--no-color",
                "-h, --help",
            ],
            id="board watch",
        ),
        pytest.param(
            ("mcp",),
            [
                "--print-config",
                "-d, --directory",
                "-q, --quiet",
                "--debug",
                "--no-color",
                "--no-project",
                "-h, --help",
            ],
            id="mcp",
        ),
    ],
)
def test_a_help_lists_the_options_that_apply(path: tuple[str, ...], options: list[str]) -> None:
    assert _options(_help(*path)) == options


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    with click.Context(cli) as ctx:
        for name in path:
            assert isinstance(command, click.Group)
            found = command.get_command(ctx, name)
            assert found is not None
            command = found
    return command


def _shown(path: tuple[str, ...]) -> dict[str, str | None]:
    """The help of each shared option a command's help shows, by name."""
    return {
        param.name: param.help
        for param in _command(path).params
        if isinstance(param, click.Option) and param.name in ("verbose", "debug")
        if not param.hidden
    }


ERRORS = "Show the traceback of an error (or START_DEBUG=1)."
LAUNCH_DEBUG = (
    "Show internals: selection reasoning, timings, full command output, tracebacks "
    "(or START_DEBUG=1)."
)
LAUNCH_VERBOSE = "Show the agent's command line in the summary (with --print, its stderr too)."


@pytest.mark.parametrize(
    ("path", "helps"),
    [
        ((), {"verbose": LAUNCH_VERBOSE, "debug": LAUNCH_DEBUG}),
        (("prompt",), {"verbose": LAUNCH_VERBOSE, "debug": LAUNCH_DEBUG}),
        (
            ("task",),
            {
                "verbose": "Show the agent's command line in the summary (with --print, its "
                "stderr too); listing the tasks, each one's file.",
                "debug": LAUNCH_DEBUG,
            },
        ),
        (
            ("doctor",),
            {"verbose": "Show every check: each agent that is not installed too.", "debug": ERRORS},
        ),
        (("config", "validate"), {"verbose": "List the files read too.", "debug": ERRORS}),
        (
            ("mcp",),
            {
                "debug": "Log what the server does, and the traceback of an error (or START_DEBUG=1)."
            },
        ),
        (("board", "show"), {"debug": ERRORS}),
        (("board", "run"), {"debug": ERRORS}),
    ],
    ids=lambda value: " ".join(("start", *value)) if isinstance(value, tuple) else "",
)
def test_a_shared_option_says_what_it_does_there(
    path: tuple[str, ...], helps: dict[str, str]
) -> None:
    """-v is shown where it shows more, saying what; --debug says what it shows there (a board
    command's -v said "a launch: the command line")."""
    assert _shown(path) == helps


@pytest.mark.parametrize("path", all_commands(), ids=lambda p: " ".join(("start", *p)))
def test_every_command_accepts_every_shared_option(path: tuple[str, ...]) -> None:
    """The options a help hides are still there: every command took every shared option before
    its help showed only those that apply, and scripts may pass them."""
    names = {param.name for param in _command(path).params} & SHARED
    assert names == (SHARED - {"directory"} if path in OWN_D else SHARED)


def test_the_options_a_help_hides_are_still_accepted(isolated: Path) -> None:
    assert invoke("board", "add", "Plan").stdout == "item-1\n"
    # Each pair: the same command, plainly and with the shared options its help hides.
    pairs = [
        (["board", "show", "1"], ["-q", "-v", "--no-project"]),
        (["board", "update", "1", "--meta", "a=1"], ["-v"]),
        (["completion", "bash"], ["-q", "-v", "--no-project", "-d", str(isolated)]),
        (["log"], ["-q", "-v", "--no-project", "-d", str(isolated)]),
    ]
    for plain, hidden in pairs:
        expected = run_start(*plain, cwd=isolated)
        given = run_start(*plain, *hidden, cwd=isolated)
        assert (given.returncode, given.stdout, given.stderr) == (
            expected.returncode,
            expected.stdout,
            expected.stderr,
        ), plain
    # --json on a group without a result of its own is hidden there, and its command's result.
    shown = run_start("config", "--json", "path", cwd=isolated)
    assert (shown.returncode, shown.stdout) == (
        0,
        run_start("config", "path", "--json", cwd=isolated).stdout,
    )
    assert shown.stdout.startswith("{")


# Every command's help, the shared options it shows (by parameter name): those that change what
# it does. A new command must say which (start.cli.options.common_options).
SHOWN = {
    "": "directory quiet verbose debug json no_color no_project",
    "again": "directory quiet verbose debug json no_color no_project",
    "board": "directory quiet debug json no_color",
    "board add": "debug json no_color no_project",
    "board archive": "directory quiet debug json no_color",
    "board claim": "directory quiet debug json no_color",
    "board comment": "directory quiet debug json no_color",
    "board dep": "debug no_color",
    "board dep add": "directory quiet debug json no_color",
    "board dep rm": "directory quiet debug json no_color",
    "board export": "directory quiet debug no_color",
    "board import": "directory quiet debug json no_color no_project",
    "board sync": "directory quiet debug json no_color no_project",
    "board serve": "directory quiet debug json no_color no_project",
    "board done": "directory quiet debug json no_color",
    "board fail": "directory quiet debug json no_color",
    "board reassign": "directory quiet debug json no_color",
    "board run": "directory quiet debug json no_color no_project",
    "board show": "directory debug json no_color",
    "board tree": "directory debug json no_color",
    "board unarchive": "directory quiet debug json no_color",
    "board update": "quiet debug json no_color no_project",
    "board watch": "directory quiet debug json no_color",
    "completion": "debug no_color",
    "config": "debug no_color",
    "config add": "directory quiet debug json no_color no_project",
    "config edit": "directory quiet debug json no_color no_project",
    "config path": "directory debug json no_color no_project",
    "config remove": "directory quiet debug json no_color no_project",
    "config set": "directory quiet debug json no_color no_project",
    "config show": "directory debug json no_color no_project",
    "config unset": "directory quiet debug json no_color no_project",
    "config validate": "directory quiet verbose debug json no_color no_project",
    "continue": "directory quiet verbose debug json no_color no_project",
    "doctor": "directory quiet verbose debug json no_color no_project",
    "export": "debug no_color",
    "export skills": "directory quiet debug json no_color no_project",
    "find": "directory debug json no_color no_project",
    "help": "directory debug no_color no_project",
    "init": "directory quiet debug json no_color no_project",
    "log": "debug json no_color",
    "log clear": "quiet debug json no_color",
    "log path": "debug json no_color",
    "log show": "debug json no_color",
    "mcp": "directory quiet debug no_color no_project",
    "prompt": "directory quiet verbose debug json no_color no_project",
    "show": "directory debug json no_color no_project",
    "task": "directory quiet verbose debug json no_color no_project",
    "trust": "directory quiet debug json no_color",
    "untrust": "directory quiet debug json no_color",
    "workflow": "directory verbose debug json no_color no_project",
    "workflow list": "directory verbose debug json no_color no_project",
    "workflow run": "directory debug json no_color no_project",
    "workflow show": "directory debug json no_color no_project",
    "workflow resume": "directory debug json no_color no_project",
}


def test_every_help_shows_the_shared_options_of_its_command() -> None:
    shown = {
        " ".join(path): " ".join(
            param.name
            for param in _command(path).params
            if isinstance(param, click.Option) and param.name in SHARED and not param.hidden
        )
        for path in all_commands()
    }
    assert shown == SHOWN
