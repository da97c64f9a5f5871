"""The command line: the root group, and `main()`, the one place errors become exit codes."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, NoReturn

import click

from start import __version__
from start.base.errors import (
    EXIT_CODE_TABLE,
    POSIX_MODULES,
    ExitCode,
    StartError,
    UnsupportedSystemError,
)
from start.cli.commands import Group, usage_message, version_option
from start.cli.options import launch_options, long_flags
from start.cli.state import Options
from start.ui import console

# Help topics: `start help NAME` shows docs/NAME.md (see start.cli.help). A topic's name is its
# page's file name; `completion`, `mcp` and `board` are commands too: their pages need `--topic`.
TOPICS = (
    "usage",
    "configuration",
    "placeholders",
    "agents",
    "interop",
    "setup",
    "editing",
    "completion",
    "security",
    "performance",
    "benchmark-results",
    "mcp",
    "board",
    "board-sync-design",
    "ci",
    "architecture",
    "workflows",
    "workflows-design",
)

_EPILOG = "\n".join(
    [
        "Exit codes:",
        *(f"  {code:>3}  {text}" for code, text in EXIT_CODE_TABLE),
        "",
        "Arguments after -- are passed to the agent unchanged.",
        "",
        "Help topics, the pages of the docs "
        "(start help TOPIC; start help --topic completion|mcp|board):",
        "  " + ", ".join(TOPICS[:7]) + ",",
        "  " + ", ".join(TOPICS[7:13]) + ",",
        "  " + ", ".join(TOPICS[13:]),
    ]
)

_COMMANDS = {
    "again": ("start.cli.log", "again"),
    "board": ("start.cli.board", "board_"),
    "completion": ("start.cli.completion", "completion"),
    "config": ("start.cli.config", "config"),
    "continue": ("start.cli.resume", "continue_"),
    "doctor": ("start.cli.doctor", "doctor"),
    "export": ("start.cli.export", "export"),
    "find": ("start.cli.find", "find"),
    "help": ("start.cli.help", "help_"),
    "init": ("start.cli.init", "init"),
    "log": ("start.cli.log", "log"),
    "mcp": ("start.cli.mcp", "mcp"),
    "prompt": ("start.cli.prompt", "prompt"),
    "show": ("start.cli.show", "show"),
    "task": ("start.cli.task", "task"),
    "trust": ("start.cli.trust", "trust"),
    "untrust": ("start.cli.trust", "untrust"),
    "workflow": ("start.cli.workflow", "workflow"),
}


class _ReaderGoneError(Exception):
    """stdout's reader went away; an OSError no more, so that click does not exit 1 for it."""


class _Root(Group):
    """Loads each command's module only when that command runs."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as error:
            raise _ReaderGoneError() from error

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands:
            return self.commands[name]
        target = _COMMANDS.get(name)
        if target is None:
            return None
        import importlib

        module = importlib.import_module(target[0])
        command: click.Command = getattr(module, target[1])
        return command


@click.group(
    cls=_Root,
    invoke_without_command=True,
    epilog=_EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
    examples=[
        ("A full session: every context, your role, your agent", "start"),
        ("A question with the required contexts", 'start prompt "why does the retry loop spin?"'),
        (
            "Review the staged diff with the code-reviewer role",
            'start task gdr "focus on security"',
        ),
        ("See what would run, without running it", "start --dry-run task gdr"),
    ],
)
@version_option(__version__)
@launch_options
@click.pass_context
def cli(ctx: click.Context) -> int:
    """Launch an AI coding agent with your role, contexts and task in one command.

    With no command, `start` starts a full session: every context, the role, and the agent.
    """
    if ctx.invoked_subcommand is not None:
        return 0
    from start.cli.run import run_session

    return run_session(ctx.ensure_object(Options))


def split_agent_args(args: list[str]) -> tuple[list[str], list[str]]:
    """Arguments after the first `--` belong to the agent; in `start board`, which runs no
    agent of its own, `--` ends the options, as it does for any command (`board add -- -x`)."""
    if "--" in args:
        index = args.index("--")
        if _command_word(args[:index]) == "board":
            return args, []
        return args[:index], args[index + 1 :]
    return args, []


def _command_word(args: list[str]) -> str | None:
    """The command a command line names: its first word that is not an option or its value."""
    from start.cli.options import VALUED

    value = False  # whether this word is the value of the option before it
    for arg in args:
        if not value and not arg.startswith("-"):
            return arg
        value = not value and arg in VALUED
    return None


def new_options(argv: list[str]) -> Options:
    """The Options of one command line, before click parses it."""
    options = Options(agent_args=split_agent_args(argv)[1], argv=argv)
    with contextlib.suppress(FileNotFoundError):  # a launch says so (paths.current_dir)
        options.started_in = os.getcwd()
    if os.environ.get("START_NO_PROJECT") == "1":
        options.no_project = True
    return options


def dispatch(argv: list[str], options: Options) -> int:
    """Parse and run one command line (`main`, and `start again` for the one it repeats)."""
    args = long_flags(split_agent_args(argv)[0])
    result = cli.main(args=args, prog_name="start", standalone_mode=False, obj=options)
    return result if isinstance(result, int) else 0


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the CLI; turn every error into its message on stderr and its documented exit code."""
    console.setup_streams()
    given = list(sys.argv[1:] if argv is None else argv)
    options = new_options(given)
    code: int
    try:
        if os.name != "posix":
            raise UnsupportedSystemError(f"this is {sys.platform}")
        instruction = os.environ.get("_START_COMPLETE")
        if instruction:
            from start.cli.completion import respond

            code = respond(cli, instruction, options)
        else:
            code = dispatch(given, options)
    except (click.exceptions.Abort, KeyboardInterrupt) as interrupt:
        if isinstance(interrupt, KeyboardInterrupt):
            console.err()  # closes the terminal's ^C echo; click does it for an Abort
        console.error("interrupted", no_color=options.no_color)
        code = ExitCode.INTERRUPTED
    except click.ClickException as error:
        code = _click_error(error, options)
    except StartError as error:
        _traceback(options)
        console.error(str(error), no_color=options.no_color)
        code = error.exit_code
    except (BrokenPipeError, _ReaderGoneError):
        # The reader went away (`start task | head -1`): it had what it wanted, so say nothing
        # more and exit 0, or `set -o pipefail` would fail the script for the reader's choice.
        console.gone(sys.stdout)
        code = ExitCode.OK
    except Exception as error:
        _traceback(options)
        code = _unexpected(error, options)
    try:
        sys.stdout.flush()
    except OSError:  # the reader went away, or the terminal hung up
        console.gone(sys.stdout)
    sys.exit(int(code))


def _unexpected(error: Exception, options: Options) -> int:
    """An exception that is no StartError: a system `start` does not run on, or a bug."""
    if isinstance(error, ImportError) and error.name in POSIX_MODULES:
        # Found when a POSIX-only module is first needed rather than checked up front: a launch
        # that runs no command imports none of them, and pays for no check.
        unsupported = UnsupportedSystemError(f"this Python has no {error.name} module")
        console.error(str(unsupported), no_color=options.no_color)
        return unsupported.exit_code
    console.error(
        f"internal error: {type(error).__name__}: {error}",
        [] if options.debug else ["set START_DEBUG=1 (or pass --debug) to see the traceback"],
        no_color=options.no_color,
    )
    return ExitCode.SOFTWARE


def _click_error(error: click.ClickException, options: Options) -> int:
    if type(error).__name__ == "NoArgsIsHelpError":
        # `start config` alone: click 8.2+ shows the group's help, as a usage error.
        console.Printer("stderr").block(error.format_message())
        return error.exit_code
    message, hints = usage_message(error)
    console.error(message, hints, no_color=options.no_color)
    return error.exit_code


def _traceback(options: Options) -> None:
    if options.debug:
        import traceback

        console.Printer("stderr").block(traceback.format_exc().rstrip("\n"))
