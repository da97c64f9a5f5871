"""Options shared by the root group and its commands; they may appear before or after a command."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from start.base import paths
from start.cli.state import Options, get_options
from start.ui import console

F = TypeVar("F", bound=Callable[..., Any])


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if value is None or value is False or value == 0:
        return
    if param.name == "directory":
        value = _directory(ctx, param, value)
    options = ctx.find_object(Options)
    if options is None:
        options = ctx.ensure_object(Options)
    assert param.name is not None
    setattr(options, param.name, value)


def _extend(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """A repeatable flag: every value, wherever it is given (before or after the command)."""
    if not value:
        return
    options = ctx.find_object(Options) or ctx.ensure_object(Options)
    assert param.name is not None
    getattr(options, param.name).extend(value)


def _directory(ctx: click.Context, param: click.Parameter, value: str) -> str:
    # Checked here rather than with click.Path, whose import every launch would pay
    # (docs/performance.md, "What keeps the launch path fast").
    path = paths.expanduser(value)
    if not os.path.isdir(path):
        problem = "does not exist" if not os.path.exists(path) else "is not a directory"
        raise click.BadParameter(f"directory '{value}' {problem}.", ctx=ctx, param=param)
    return path


def _complete_directory(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="dir")]


def completer(name: str) -> Callable[[click.Context, click.Parameter, str], list[Any]]:
    """A shell_complete callback that loads start.cli.completers only when completing."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        from start.cli import completers

        function: Callable[[click.Context, click.Parameter, str], list[Any]]
        function = getattr(completers, name)
        return function(ctx, param, incomplete)

    return complete


def _option(*decls: str, **kwargs: Any) -> Callable[[F], F]:
    return click.option(*decls, callback=_store, expose_value=False, **kwargs)


# The shared options that change what some commands do, named by each command that they change
# (common_options): its help shows those, and hides the others, which it still accepts, as the
# root group accepts every one before any command. --no-color (an error's colour) and --debug
# (an error's traceback) change every command; --json is shown where the command has a JSON
# result (start.cli.commands.Command).
DIRECTORY, QUIET, NO_PROJECT = "directory", "quiet", "no_project"
SHOWN = frozenset({DIRECTORY, QUIET, NO_PROJECT})
# What --debug shows: on every command, the traceback of an error; where start composes and runs
# an agent, its internals too.
DEBUG_ERRORS = "Show the traceback of an error (or START_DEBUG=1)."
DEBUG_LAUNCH = (
    "Show internals: selection reasoning, timings, full command output, tracebacks"
    " (or START_DEBUG=1)."
)
# What -v shows where start composes and runs an agent.
VERBOSE_LAUNCH = "Show the agent's command line in the summary (with --print, its stderr too)."


def _common(
    shown: frozenset[str], verbose: str | None, debug: str, directory: bool
) -> tuple[Callable[[F], F], ...]:
    """The shared options of one command (created for each, as click's options are)."""
    options = [
        _option(
            "-d",
            "--directory",
            metavar="DIR",
            help="Run as if started in DIR.",
            shell_complete=_complete_directory,
            hidden=DIRECTORY not in shown,
        ),
        _option(
            "-q",
            "--quiet",
            is_flag=True,
            help="Print no summaries; problems still show.",
            hidden=QUIET not in shown,
        ),
        _option(
            "-v",
            "--verbose",
            count=True,
            help=verbose or "Show more detail.",
            hidden=verbose is None,
        ),
        _option("--debug", is_flag=True, help=debug),
        _option("--json", is_flag=True, help="Print the result as JSON on stdout."),
        _option("--no-color", is_flag=True, help="No colour or bold (or NO_COLOR=1)."),
        _option(
            "--no-project",
            is_flag=True,
            help="Ignore the project's .start/ for this run (or set START_NO_PROJECT=1).",
            hidden=NO_PROJECT not in shown,
        ),
    ]
    return tuple(options if directory else options[1:])


def _agents(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """-a NAME, -a A,B and -a A -a B: the last is the agent of a launch; with --print, every
    one runs (start.cli.run)."""
    if not value:
        return
    options = ctx.find_object(Options) or ctx.ensure_object(Options)
    names = [name.strip() for word in value for name in word.split(",") if name.strip()]
    options.agents.extend(names)
    options.agent = names[-1] if names else None


_LAUNCH = (
    click.option(
        "-a",
        "--agent",
        metavar="NAME",
        multiple=True,
        callback=_agents,
        expose_value=False,
        help="Agent to launch; with --print, several: -a A,B or -a A -a B.",
        shell_complete=completer("complete_agents"),
    ),
    _option(
        "-r",
        "--role",
        metavar="NAME|PATH",
        help="Role (system prompt) to use: a name, or a file (./NAME forces a path).",
        shell_complete=completer("complete_role_or_file"),
    ),
    click.option(
        "-c",
        "--context",
        "contexts",
        metavar="NAME|PATH",
        multiple=True,
        callback=_extend,
        expose_value=False,
        help="Add a context: a name (optional ones too), or a file. Repeatable.",
        shell_complete=completer("complete_context_or_file"),
    ),
    _option("--no-role", is_flag=True, help="Use no role."),
    _option(
        "-m",
        "--model",
        metavar="MODEL",
        help="Model alias, alias prefix or literal id.",
        shell_complete=completer("complete_models"),
    ),
    _option("--dry-run", is_flag=True, help="Show what would run, without running the agent."),
)


# The short flags a launch is commonly given, read as their long spelling before click parses:
# click's parser tries every option as a long one first, and the miss of `-q` builds an error
# that it throws away, importing difflib for its suggestions and locale for its message
# (docs/performance.md, "click's parser is click's own"). Combined flags (`-qv`) go to click.
SHORT_FLAGS = {"-q": "--quiet", "-v": "--verbose"}
# Every spelling of an option that takes a value, so that a value that looks like a flag
# (`-m -q`) stays a value. A name that is a flag on one command and takes a value on another
# (`--project`) is here: leaving a flag to click costs time, never meaning.
# tests/cli/test_options.py holds both lists to the options of every command.
VALUED = frozenset(
    {
        *("-a", "--agent", "-c", "--context", "-d", "--directory", "-i", "--instructions-file"),
        *("-m", "--model", "-p", "--prompt", "-r", "--role", "--alias", "--bin", "--command"),
        *("--command-timeout", "--default-model", "--description", "--file", "--if-no-output"),
        *("--instructions", "--large-prompt", "--layer", "--model-alias", "--models-url"),
        *("--output", "--param", "--permissions", "--print-command", "--print-config"),
        *("--print-output", "--print-permission", "--shell", "--timeout", "--url"),
        *("-n", "--before", "--project", "--task", "--print-schema", "--json-fields", "--since"),
        *("--after", "--meta", "--as", "--status", "--assignee", "--answer", "--reason"),
        "--epoch",
        "--title",
        "--limit",
        "--description-file",
        *("--priority", "--label", "--unlabel", "--parent"),
        "--run",
        "-s",
        "--search",
        "--resume-command",
        "--print-schema-refused",
        "--print-max-turns",
        "--fail-if",
        *("-o", "--from"),
        "--port",
    }
)


def long_flags(args: list[str]) -> list[str]:
    """`args` with each of SHORT_FLAGS spelled long, where click would read it as that flag."""
    spelled: list[str] = []
    value = False  # whether this argument is the value of the option before it
    for index, arg in enumerate(args):
        if arg == "--" and not value:  # the options end (start board add -- -q)
            return spelled + args[index:]
        spelled.append(arg if value else SHORT_FLAGS.get(arg, arg))
        value = not value and arg in VALUED
    return spelled


def common_options(
    *shown: str, verbose: str | None = None, debug: str = DEBUG_ERRORS, directory: bool = True
) -> Callable[[F], F]:
    """The shared options, for a command that `shown` of them change (DIRECTORY, QUIET,
    NO_PROJECT): its help shows those, -v where it has `verbose` (what -v shows there), and
    --debug as `debug` says; it accepts the others too. Without `directory` it has no -d of
    its own (`start board add -d TEXT`): the directory goes before the command then (`start -d
    DIR board add`)."""
    unknown = set(shown) - SHOWN
    assert not unknown, f"no shared option {unknown}"

    def decorate(function: F) -> F:
        for decorator in reversed(_common(frozenset(shown), verbose, debug, directory)):
            function = decorator(function)
        return function

    return decorate


def launch_options(function: F) -> F:
    """The options of a launch (-a, -r, -c, --no-role, -m, --dry-run) and the shared ones, every
    one of which changes it."""
    return launch_options_showing(VERBOSE_LAUNCH)(function)


def launch_options_showing(verbose: str) -> Callable[[F], F]:
    """launch_options, where -v shows `verbose`."""

    def decorate(function: F) -> F:
        for decorator in reversed(_LAUNCH):
            function = decorator(function)
        every = common_options(DIRECTORY, QUIET, NO_PROJECT, verbose=verbose, debug=DEBUG_LAUNCH)
        return every(function)

    return decorate


def printer(to: console.Stream = "stderr") -> console.Printer:
    """A Printer that follows this run's --no-color and -q."""
    options = get_options()
    return console.Printer(to, no_color=options.no_color, quiet=options.quiet)
