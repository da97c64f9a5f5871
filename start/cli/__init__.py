"""The command line: the root group, and `main()`, the one place errors become exit codes."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

import click

from start import __version__
from start.cli.options import Options, launch_options
from start.errors import EXIT_CODE_TABLE, ExitCode, StartError

_EPILOG = "\b\nExit codes:\n" + "\n".join(f"  {code:>3}  {text}" for code, text in EXIT_CODE_TABLE)
_EPILOG += (
    "\n\nArguments after -- are passed to the agent unchanged."
    "\nDocs: docs/usage.md, docs/configuration.md, docs/placeholders.md"
)

_COMMANDS = {
    "completion": ("start.cli.completion", "completion"),
    "config": ("start.cli.config", "config"),
    "doctor": ("start.cli.doctor", "doctor"),
    "init": ("start.cli.init", "init"),
    "mcp": ("start.cli.mcp", "mcp"),
    "prompt": ("start.cli.run", "prompt"),
    "task": ("start.cli.run", "task"),
    "trust": ("start.cli.trust", "trust"),
    "untrust": ("start.cli.trust", "untrust"),
}


class _Group(click.Group):
    """Loads each command's module only when that command runs."""

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

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        missing = self.get_command(ctx, name) is None and not name.startswith("-")
        if missing and not ctx.resilient_parsing:
            from start.errors import suggest

            close = suggest(name, self.list_commands(ctx))
            hint = f" Did you mean '{close}'?" if close else ""
            raise click.UsageError(f"no such command '{name}'.{hint}", ctx)
        return super().resolve_command(ctx, args)


@click.group(
    cls=_Group,
    invoke_without_command=True,
    epilog=_EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, "-V", "--version", prog_name="start")
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
    """Arguments after the first `--` belong to the agent."""
    if "--" in args:
        index = args.index("--")
        return args[:index], args[index + 1 :]
    return args, []


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the CLI; turn every error into its message on stderr and its documented exit code."""
    args, agent_args = split_agent_args(list(sys.argv[1:] if argv is None else argv))
    options = Options(agent_args=agent_args)
    if os.environ.get("START_NO_PROJECT") == "1":
        options.no_project = True
    try:
        result = cli.main(args=args, prog_name="start", standalone_mode=False, obj=options)
        code = result if isinstance(result, int) else 0
    except click.exceptions.Abort:
        sys.stderr.write("\nstart: interrupted\n")
        code = ExitCode.INTERRUPTED
    except click.ClickException as error:
        error.show()
        code = error.exit_code
    except StartError as error:
        _debug_traceback()
        sys.stderr.write(f"start: {error}\n")
        code = error.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("\nstart: interrupted\n")
        code = ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `start task | head`); say nothing more.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = ExitCode.ERROR
    except Exception as error:
        _debug_traceback(always=False)
        sys.stderr.write(
            f"start: internal error: {type(error).__name__}: {error}\n"
            "Set START_DEBUG=1 to see the traceback.\n"
        )
        code = ExitCode.ERROR
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()
    sys.exit(int(code))


def _debug_traceback(always: bool = False) -> None:
    if always or os.environ.get("START_DEBUG"):
        import traceback

        traceback.print_exc()
