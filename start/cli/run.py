"""What `start`, `start prompt` and `start task` share: the command line's ask (start.compose.ask),
composed and exec'd, or run headless through the path of every door (start.runs.path). The
commands themselves are in start.cli.prompt and start.cli.task. A headless run (--print) and a
dry run branch to start.cli.printing and start.cli.dryrun, which a plain launch does not import."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from start import runs
from start.base.errors import CommandError, ExitCode, StartError, UntrustedError, UsageError
from start.cli import summary
from start.cli.options import F
from start.cli.state import Options
from start.compose import pipeline
from start.compose.ask import Ask, data
from start.config.model import Config
from start.ui import console

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from start.proc.agents import State
    from start.ui.status import StatusLine

T = TypeVar("T")


def _trusted(prepare: Callable[[], T]) -> T:
    """`prepare()`; when the project is not trusted yet, ask on a terminal, then again."""
    try:
        return prepare()
    except UntrustedError as error:
        from start import trust
        from start.cli import trust as trust_cli

        if not isinstance(error, trust.TrustRequired):
            raise
        for message in error.verdict.warnings:
            trust_cli.warn(message)
        answer = trust_cli.ask(error.review())
        if answer is None:
            raise
        if not answer:
            raise UntrustedError(
                f"{error.scan.subject} was not approved; nothing was run"
            ) from None
        trust.approve(error.scan)
    return prepare()


def ask_of(options: Options, mode: str, **fields: Any) -> Ask:
    """The command line's ask: the shared options, and the command's own `fields` (its words,
    --print and what goes with it)."""
    return Ask(
        mode,
        agents=tuple(options.agents),
        role=options.role,
        no_role=options.no_role,
        model=options.model,
        contexts=tuple(options.contexts),
        agent_args=tuple(options.agent_args),
        directory=options.workdir,
        no_project=options.no_project,
        **fields,
    )


def headless(
    print_: bool, permissions: str | None, timeout: int | None, output: str | None = None
) -> dict[str, Any]:
    """The fields of an ask that --print and its options give; UsageError for an option that
    goes with --print without it."""
    if not print_:
        given = [
            flag
            for flag, value in (
                ("--permissions", permissions),
                ("--timeout", timeout),
                ("--output", output),
            )
            if value is not None
        ]
        if given:
            raise UsageError(f"{given[0]} goes with --print (a headless run)")
        return {}
    return {"headless": True, "permissions": permissions, "timeout": timeout, "output": output}


# A task of the project's Taskfile: start.runs.taskfile.PREFIX, which a launch does not import.
TASKFILE_PREFIX = "taskfile:"


def run(options: Options, ask: Ask) -> int:
    """Compose the ask; then exec the agent or, with --dry-run, show it; with --print, run the
    agent's headless form and print its answer. A Taskfile task's ask goes to start.cli.taskfile."""
    if ask.mode == "task" and ask.task is not None and ask.task.startswith(TASKFILE_PREFIX):
        from start.cli import taskfile

        return taskfile.run(options, ask)
    if options.raw and not ask.headless:
        raise UsageError("--raw goes with --print (a headless run)")
    if options.json_fields is not None and (options.dry_run or not ask.headless):
        raise UsageError(
            "--json-fields goes with --print (the keys of a run's record), not with a launch "
            "or --dry-run"
        )
    if options.json and not options.dry_run and not ask.headless:
        raise UsageError(
            "--json prints a launch only with --dry-run or --print "
            "(or a listing: start task --json)"
        )
    if options.fail_if is not None:
        if not ask.headless:
            raise UsageError("--fail-if goes with --print (a headless run)")
        from start.runs import verdict

        verdict.parse(options.fail_if)  # before anything is spent
    if len(ask.agents) > 1 and not ask.headless:
        raise UsageError(
            "several agents (-a A,B) run only with --print: a launch hands the terminal "
            "to one agent"
        )
    if ask.headless:
        return _print(options, ask)
    return _launch(options, ask)


def _launch(options: Options, ask: Ask) -> int:
    """A launch: exec the agent, or with --dry-run, show it."""
    # Commands that take a while get a status line with the time elapsed, on a terminal and
    # without -q only.
    progress = _status(options, elapsed=True)
    prepared = _full(
        options,
        lambda: _trusted(
            functools.partial(pipeline.prepare, ask, progress=progress, dry_run=options.dry_run)
        ),
    )
    _warn(prepared)
    config, launch = prepared.config, prepared.launch
    if options.dry_run:
        _dry_run(options, [prepared], several=False)
        return ExitCode.OK
    summary.show(options, prepared)
    record(options, runs.begun(prepared, headless=False)._replace(request=data(ask)), config)
    from start.compose import launch as launcher

    launcher.exec_agent(launch)


def _full(options: Options, prepare: Callable[[], T]) -> T:
    """`prepare()`; with --debug, a failed command's output whole."""
    try:
        return prepare()
    except CommandError as error:
        if options.debug:
            raise error.in_full() from None
        raise


def _scope(options: Options) -> Any:
    """Where the command line asks from: the user's own asks run at no depth of start mcp's."""
    from start.runs.rules import Scope

    return Scope(options.workdir, not options.no_project)


def _print(options: Options, ask: Ask) -> int:
    """--print: the agents' headless forms (one agent is a list of one), run to their end
    through the path of every door: each run recorded (its pending file and id), the answers,
    then the history's database."""
    from start.cli import printing as print_cli
    from start.runs import path

    several = len(ask.agents) > 1
    door = _Door(options, ask, several)
    if ask.output is not None and not options.dry_run:
        print_cli.check_output(ask.output)  # before anything is spent
    if options.dry_run:
        progress = _status(options, elapsed=not several)
        each = path.prepare(_scope(options), ask, door, progress=progress, dry_run=True)
        door.prepared(each)
        _dry_run(options, each, several=several)
        return ExitCode.OK
    from start.proc import groups

    # Should start be killed (SIGKILL: the OOM killer, a CI job's kill), a watchdog ends what
    # the run started: the commands that compose the prompt, and the agents.
    with groups.watching() as owner:
        path.run(
            _scope(options),
            ask,
            door,
            owner=owner,
            progress=_status(options, elapsed=not several),
            args=_args(options),
            cwd=_cwd(options),
        )
    return door.code


class _Door:
    """What the command line shows of a headless run: the trust question on a terminal, the
    summary (of one agent) or the agents (of several), a live board on a terminal, the answers
    on stdout, and a warning when the history cannot keep the run."""

    def __init__(self, options: Options, ask: Ask, several: bool) -> None:
        self.options = options
        self.ask = ask
        self.several = several
        self.code = ExitCode.OK

    def trusted(self, prepare: Callable[[], T]) -> T:
        return _full(self.options, lambda: _trusted(prepare))

    def prepared(self, each: Sequence[pipeline.Prepared]) -> None:
        if self.options.fail_if is not None and each[0].output is None:
            for prepared in each:
                prepared.launch.cleanup()
            from start.runs import verdict

            task = each[0].plan.task
            raise verdict.text_answer(self.options.fail_if, task.name if task else None)
        _warn(each[0])
        if not self.several and not self.options.dry_run:
            summary.show(self.options, each[0])

    def running(self, each: Sequence[pipeline.Prepared]) -> AbstractContextManager[State | None]:
        from start.cli import printing as print_cli

        return print_cli.following(self.options, each)

    def arrived(self, done: Sequence[runs.Run], stopped: BaseException | None) -> None:
        # The answers on stdout and flushed, each run recorded already, with its id (a pending
        # file: the database, which another process may hold, is written after, and never
        # delays them). On Ctrl-C or a signal, every run is recorded and the answers that had
        # arrived are shown, then start stops as the signal says; a stop before any answer says
        # only "interrupted".
        if stopped is None or any(found.answered for found in done):
            from start.cli import printing as print_cli

            self.code = print_cli.show(
                self.options, list(done), several=self.several, output=self.ask.output
            )

    def unrecorded(self, error: StartError) -> None:
        console.warning(f"this run is not in the history: {error}", no_color=self.options.no_color)


def _status(options: Options, *, elapsed: bool) -> StatusLine | None:
    if options.quiet or not console.is_tty(sys.stderr):
        return None
    from start.ui.status import StatusLine

    return StatusLine(sys.stderr, elapsed=elapsed)


def _warn(prepared: pipeline.Prepared) -> None:
    if prepared.warnings:
        from start.cli import trust as trust_cli

        for message in prepared.warnings:
            trust_cli.warn(message)


def _dry_run(options: Options, each: Sequence[pipeline.Prepared], *, several: bool) -> None:
    from start.cli import dryrun

    try:
        if several:
            dryrun.show_each(options, list(each))
            return
        (prepared,) = each
        plan, composition, launch = prepared.plan, prepared.composition, prepared.launch
        if options.json:
            dryrun.show_json(plan, composition, launch)
        else:
            lines = summary.summary_lines(options, prepared.config, plan, composition, launch, {})
            dryrun.show(options, lines, composition, launch)
    finally:
        for prepared in each:
            prepared.launch.cleanup()


def _args(options: Options) -> tuple[str, ...]:
    return tuple(options.argv)


def _cwd(options: Options) -> str:
    from start.base.paths import current_dir

    return options.started_in or current_dir()


def record(options: Options, run: runs.Run, config: Config) -> None:
    """Put a launch in the history, just before the exec; a history that cannot be written is a
    warning, not a failure of the launch."""
    from start.runs import history, recording

    run = run._replace(args=_args(options), cwd=_cwd(options))
    try:
        recording.record(run, config.settings)
    except history.HistoryError as error:
        console.warning(f"this run is not in the history: {error}", no_color=options.no_color)


def command_words(ask: Ask, here: str | None = None, shown: Sequence[str] = ()) -> list[str]:
    """The words of a command line that asks for this run (what `start again` shows, and
    records as its run's command line): made from the ask, never parsed; `-d` only when it
    runs elsewhere than `here`; `shown`, the flags of how it is shown (-q, --json, ...)."""
    words: list[str] = []
    if ask.mode in ("prompt", "continue"):
        text = ask.prompt or ""
        words += [ask.mode, text if not text.startswith("-") else f"--instructions={text}"]
    elif ask.mode == "task":
        words += ["task", ask.task or ""]
        if ask.instructions is not None:
            said = ask.instructions
            words.append(said if not said.startswith("-") else f"--instructions={said}")
    if ask.agents:
        words += ["-a", ",".join(ask.agents)]
    if ask.no_role:
        words.append("--no-role")
    elif ask.role is not None:
        words += ["-r", ask.role]
    if ask.model is not None:
        words += ["-m", ask.model]
    for context in ask.contexts:
        words += ["-c", context]
    for name, value in ask.params.items():
        words += ["-p", f"{name}={value}"]
    if ask.directory is not None and ask.directory != here:
        words += ["-d", ask.directory]
    if ask.no_project:
        words.append("--no-project")
    words += shown
    if ask.headless and ask.mode != "continue":
        words.append("--print")
        given: tuple[tuple[str, object], ...] = (
            ("--permissions", ask.permissions),
            ("--timeout", ask.timeout),
            ("--output", ask.output),
        )
        words += [word for flag, value in given if value is not None for word in (flag, str(value))]
    if ask.agent_args:
        words += ["--", *ask.agent_args]
    return words


def shown_words(options: Options) -> list[str]:
    """The flags of how the command line shows a run: its own, never the ask's."""
    words = ["-q"] if options.quiet else []
    if options.json_fields is not None:  # the keys it was given, so that the line repeats them
        fields = options.json_fields
        words += ["--json-fields", "all" if fields == runs.keys() else ",".join(fields)]
    elif options.json:
        words.append("--json")
    words += [flag for flag, on in (("--no-color", options.no_color), ("--raw", options.raw)) if on]
    words += ["-v"] * options.verbose
    return words + (["--fail-if", options.fail_if] if options.fail_if is not None else [])


def run_session(options: Options) -> int:
    return run(options, ask_of(options, "session"))


def _raw(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        (ctx.find_object(Options) or ctx.ensure_object(Options)).raw = True


def _fail_if(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        (ctx.find_object(Options) or ctx.ensure_object(Options)).fail_if = value


def _json_fields(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """--json-fields all|KEY,...: the keys of the run's record that --json prints (and --json
    with it); each checked here, before anything runs."""
    if value is None:
        return
    known = runs.keys()
    if value.strip() == "all":
        fields = known
    else:
        fields = tuple(dict.fromkeys(name.strip() for name in value.split(",") if name.strip()))
        unknown = [name for name in fields if name not in known]
        if unknown or not fields:
            from start.base.errors import suggest

            name = unknown[0] if unknown else value
            close = suggest(name, known)
            guess = f" (did you mean '{close}'?)" if close else ""
            raise click.BadParameter(
                f"no key '{name}' in a run's record{guess}; give 'all', or keys separated by "
                "commas such as id,answer,usage ('start help usage' lists them)",
                ctx=ctx,
                param=param,
            )
    options = ctx.find_object(Options) or ctx.ensure_object(Options)
    options.json_fields = fields
    options.json = True


def json_fields_option(function: F) -> F:
    """--json-fields, for the commands that print a run (--print, start continue)."""
    return click.option(
        "--json-fields",
        metavar="all|KEY,...",
        callback=_json_fields,
        expose_value=False,
        help="With --print: --json with these keys of the run's record, or all of them "
        "(default: id, state, success, answer, ...: see 'start help usage').",
    )(function)


def print_options(function: F) -> F:
    from start.config import schema

    function = json_fields_option(function)
    function = click.option(
        "--fail-if",
        metavar="PATH",
        callback=_fail_if,
        expose_value=False,
        help="With --print and a task that answers JSON: exit 6 when the answer holds true at "
        "PATH (keys separated by dots: block, verdict.block), as a gate that blocks.",
    )(function)
    function = click.option(
        "--raw",
        is_flag=True,
        callback=_raw,
        expose_value=False,
        help="With --print on a terminal: the answer exactly, its escape sequences too "
        "(by default they are shown escaped; piped, the answer is always exact).",
    )(function)
    function = click.option(
        "--timeout",
        type=click.IntRange(min=1, max=schema.MAX_TIMEOUT),
        metavar="SECONDS",
        help="With --print: stop the agent after SECONDS (default: settings.print_timeout).",
    )(function)
    function = click.option(
        "--permissions",
        type=click.Choice(schema.LEVELS),
        help="With --print: what the agent may do (default: the task's, else read-only).",
    )(function)
    function = click.option(
        "--output",
        "output_dir",
        metavar="DIR",
        help="With --print and several agents: write AGENT.md for each and summary.json to DIR.",
    )(function)
    function = click.option(
        "--print",
        "print_",
        is_flag=True,
        help="Run the agent headless and print its answer on stdout.",
    )(function)
    return function
