"""The Command and Group classes of every `start` command: help that teaches, one error format.

Every command declares its examples and whether it has a JSON result. Its summary is the first
paragraph of its help, never cut short; its usage line never breaks inside a word; its epilog is
printed as written. Usage errors read like `start`'s own errors (see `usage_message`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click

from start.ui import console

F = TypeVar("F", bound=Callable[..., Any])

# (what it does, the command line)
Example = tuple[str, str]


def summary(command: click.Command) -> str:
    """The first paragraph of a command's help, on one line and whole."""
    if command.short_help:
        return command.short_help
    text = inspect.cleandoc(command.help or "")
    first = text.split("\n\n", 1)[0].replace("\b", "")
    return " ".join(first.split())


class HelpFormatter(click.HelpFormatter):
    """click's formatter, but a usage line wraps between words only."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        import textwrap

        prefix = "Usage: " if prefix is None else prefix
        lead = f"{'':>{self.current_indent}}{prefix}{prog} "
        width = max(self.width - len(lead), 20)
        wrapped = textwrap.wrap(args, width, break_long_words=False, break_on_hyphens=False) or [""]
        self.write(lead + wrapped[0] + "\n")
        for line in wrapped[1:]:
            self.write(" " * len(lead) + line + "\n")

    def write_preformatted(self, text: str) -> None:
        """Lines as written, indented, never re-wrapped (click's `\\b` markers are dropped)."""
        for line in text.split("\n"):
            if line.strip() == "\b":
                continue
            self.write(f"{'':>{self.current_indent}}{line}".rstrip() + "\n")


class Context(click.Context):
    formatter_class = HelpFormatter


def _show_help(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        console.out(ctx.get_help())
        ctx.exit()


class _Base(click.Command):
    """What every `start` command and group shares: `examples` and the summary line in help, and
    a help option whose text does not go through gettext, whose first call imports locale
    (docs/performance.md)."""

    _start_help: click.Option | None = None

    def __init__(self, *args: Any, examples: Sequence[Example] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.examples = tuple(examples)

    def get_short_help_str(self, limit: int = 45) -> str:
        return summary(self)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        format_extras(self, self.examples, formatter)

    def get_help_option(self, ctx: click.Context) -> click.Option | None:
        names = self.get_help_option_names(ctx)
        if not names or not self.add_help_option:
            return None
        # One object per command: click orders eager callbacks by identity.
        if self._start_help is None:
            self._start_help = click.Option(
                names,
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_show_help,
                help="Show this message and exit.",
            )
        return self._start_help


def version_option(version: str) -> Callable[[F], F]:
    """`-V/--version`: click.version_option's output, without its gettext lookups."""

    def show(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if value and not ctx.resilient_parsing:
            console.out(f"start, version {version}")
            ctx.exit()

    return click.option(
        "-V",
        "--version",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=show,
        help="Show the version and exit.",
    )


class Command(_Base):
    """A `start` command: `examples` for its help, and `json=False` when it has no JSON result.

    `--json` on a command without one is a usage error (exit 2), never silently ignored.
    """

    context_class = Context

    def __init__(self, *args: Any, json: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.json = json
        _hide_json(self, not json)

    def invoke(self, ctx: click.Context) -> Any:
        check_json(self, ctx)
        return super().invoke(ctx)


class Group(_Base, click.Group):
    """A `start` command group; unknown subcommands get a suggestion. A group that does nothing
    of its own (`start config`) hides --json in its help: it has no result (its commands do)."""

    context_class = Context
    command_class = Command

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Words other tools use for a command of this group (`start board list`), each with the
        # words of ours to run instead: an unknown command of those names says so.
        self.other_words: Mapping[str, Sequence[str]] = kwargs.pop("other_words", {})
        super().__init__(*args, **kwargs)
        _hide_json(self, not self.invoke_without_command)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        missing = self.get_command(ctx, name) is None and not name.startswith("-")
        if missing and not ctx.resilient_parsing:
            raise no_such_command(self, ctx, name, args[1:])
        return super().resolve_command(ctx, args)


def _hide_json(command: click.Command, hide: bool) -> None:
    """--json out of the help of a command that has no JSON result: a help shows only the
    options that apply (start.cli.options.common_options)."""
    for param in command.params:
        if hide and isinstance(param, click.Option) and param.name == "json":
            param.hidden = True


def format_extras(
    command: click.Command, examples: Sequence[Example], formatter: click.HelpFormatter
) -> None:
    """The Examples section, then the epilog exactly as written."""
    if examples:
        with formatter.section("Examples"):
            for what, line in examples:
                formatter.write(f"{'':>{formatter.current_indent}}# {what}\n")
                formatter.write(f"{'':>{formatter.current_indent}}{line}\n")
    if command.epilog:
        formatter.write_paragraph()
        assert isinstance(formatter, HelpFormatter)
        formatter.write_preformatted(inspect.cleandoc(command.epilog))


def check_json(command: click.Command, ctx: click.Context) -> None:
    from start.cli.state import Options

    options = ctx.find_object(Options)
    if options is None:
        return
    options.command_path = ctx.command_path
    if options.json and not getattr(command, "json", True):
        raise click.UsageError(f"'{ctx.command_path}' has no JSON output; drop --json", ctx)


# A word that could be a command name; anything else typed there is probably a prompt.
# (A pattern that `re` compiles on this error path only.)
_COMMAND_WORD = r"^[a-z][a-z0-9-]*$"


class HintedUsageError(click.UsageError):
    """A usage error with `hint:` lines."""

    def __init__(self, message: str, ctx: click.Context | None, hints: Sequence[str] = ()) -> None:
        super().__init__(message, ctx)
        self.hints = list(hints)


def no_such_command(
    group: click.Group, ctx: click.Context, name: str, rest: Sequence[str]
) -> click.UsageError:
    import shlex

    from start.base.errors import suggest

    ours = getattr(group, "other_words", {}).get(name)
    if ours is not None:
        line = shlex.join([*ctx.command_path.split(), *ours, *rest])
        return HintedUsageError(f"no such command '{name}'", ctx, [f"did you mean: {line}"])
    if ctx.parent is None and _is_task(ctx, name):
        line = shlex.join(["start", "task", name, *rest])
        return HintedUsageError(
            f"no such command '{name}'", ctx, [f"'{name}' is a task; run: {line}"]
        )
    known = group.list_commands(ctx)
    close = suggest(name, known) if re.match(_COMMAND_WORD, name) else None
    if close:
        return click.UsageError(f"no such command '{name}'; did you mean '{close}'?", ctx)
    hints = []
    if ctx.parent is None and (not re.match(_COMMAND_WORD, name) or rest):
        text = " ".join([name, *rest])
        hints.append(f"to send text to the agent, run: start prompt {shlex.quote(text)}")
    return HintedUsageError(f"no such command '{name}'", ctx, hints)


def _is_task(ctx: click.Context, word: str) -> bool:
    """Whether WORD is a task's name or alias in the config (read, never run: no trust needed)."""
    from start.base.errors import StartError
    from start.cli.state import Options
    from start.config.load import load

    options = ctx.find_object(Options) or Options()
    try:
        config = load(options.workdir, use_project=not options.no_project)
    except (StartError, OSError):
        return False
    return any(word in (task.name, task.alias) for task in config.tasks.values())


class Choice(click.Choice):  # type: ignore[type-arg]
    """click's Choice, with a suggestion for a near miss."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            from start.base.errors import suggest

            choices = [str(c) for c in self.choices]
            name = "value"
            if isinstance(param, click.Argument) and param.name:
                name = param.name
            elif isinstance(param, click.Option):
                name = f"value for {max(param.opts, key=len)}"
            close = suggest(str(value), choices)
            if close:
                message = f"unknown {name} '{value}'; did you mean '{close}'?"
            else:
                message = f"unknown {name} '{value}'; choose from {', '.join(choices)}"
            raise click.UsageError(message, ctx) from None


def usage_message(error: click.ClickException) -> tuple[str, list[str]]:
    """A click error in `start`'s words, and its hints: the same form as `start`'s own errors."""
    hints: list[str] = list(getattr(error, "hints", []))
    ctx = getattr(error, "ctx", None)
    if isinstance(error, click.NoSuchOption):
        message = f"no such option '{error.option_name}'"
        close = _close_option(error.option_name, error.possibilities or ())
        if close:
            message += f"; did you mean '{close}'?"
    elif isinstance(error, click.MissingParameter) and error.param is not None:
        param = error.param
        what = error.param_type or ("option" if isinstance(param, click.Option) else "argument")
        message = f"missing {what} {_param_name(param)}"
        if isinstance(param.type, click.Choice):
            message += f" ({', '.join(str(c) for c in param.type.choices)})"
    elif isinstance(error, click.BadParameter) and error.param is not None:
        message = f"invalid value for {_param_name(error.param)}: {_sentence(error.message)}"
    else:
        message = _sentence(error.format_message())
    if isinstance(error, click.UsageError):
        path = ctx.command_path if ctx is not None else "start"
        hints.append(f"run '{path} --help' for usage")
    return message, hints


def _close_option(name: str, options: Sequence[str]) -> str | None:
    """The option closest to NAME, compared without their dashes: click compares them with,
    so every long option shares two characters with `--bogus` and `--verbose` came out close."""
    from start.base.errors import suggest

    bare = {option.lstrip("-"): option for option in options}
    close = suggest(name.lstrip("-"), bare)
    return bare[close] if close else None


def _param_name(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return max(param.opts, key=len)
    return param.human_readable_name


def _sentence(text: str) -> str:
    """click's 'Capitalised message.' as start's 'capitalised message'."""
    text = text.strip().rstrip(".")
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return text


def command(
    name: str | None = None, *, examples: Sequence[Example] = (), json: bool = True, **kwargs: Any
) -> Callable[[F], Command]:
    """`click.command` for `start`: examples and the JSON flag are part of the declaration."""
    return click.command(name, cls=Command, examples=examples, json=json, **kwargs)


def group(
    name: str | None = None,
    *,
    examples: Sequence[Example] = (),
    cls: type[Group] = Group,
    **kwargs: Any,
) -> Callable[[F], Group]:
    return click.group(name, cls=cls, examples=examples, **kwargs)
