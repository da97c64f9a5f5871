"""What `start`, `start prompt` and `start task` share: compose the prompt, then exec the agent
(the two commands are in start.cli.prompt and start.cli.task). A headless run (--print) and a dry
run branch to start.cli.printing and start.cli.dryrun, which a plain launch does not import."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from start import runs
from start.base.errors import CommandError, ExitCode, UntrustedError, UsageError
from start.cli.options import F
from start.cli.state import Options
from start.compose import pipeline, resolve, sources
from start.config.model import Config, of_layer
from start.ui import console
from start.ui.console import Line, Styled

if TYPE_CHECKING:
    from start.compose import launch as launcher
    from start.proc.shell import Owner
    from start.ui.status import StatusLine

_MARK = {"ok": "✓", "missing": "⚠", "failed": "⚠", "empty": "·"}


T = TypeVar("T")


def _prepare(
    request: pipeline.LaunchRequest,
    progress: StatusLine | None = None,
    owner: Owner | None = None,
) -> pipeline.Prepared:
    """pipeline.prepare, asking on a terminal when the project's .start/ is not trusted yet."""
    return _trusted(functools.partial(pipeline.prepare, request, progress=progress, owner=owner))


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


class Printing:
    """What --print, --permissions, --timeout and --output ask of a headless run; and for `start
    continue`, the session it continues and where its permission level comes from."""

    def __init__(
        self,
        permissions: str | None,
        timeout: int | None,
        output: str | None = None,
        *,
        session: str | None = None,
        permissions_from: str | None = None,
    ) -> None:
        self.permissions = permissions
        self.timeout = timeout
        self.output = output
        self.session = session
        self.permissions_from = permissions_from


def run(options: Options, selection: resolve.Request, printing: Printing | None = None) -> int:
    """Prepare the launch; then exec the agent or, with --dry-run, show it; with --print, run
    the agent's headless form and print its answer."""
    if options.raw and printing is None:
        raise UsageError("--raw goes with --print (a headless run)")
    if options.json and not options.dry_run and printing is None:
        raise UsageError(
            "--json prints a launch only with --dry-run or --print "
            "(or a listing: start task --json)"
        )
    if len(options.agents) > 1 and printing is None:
        raise UsageError(
            "several agents (-a A,B) run only with --print: a launch hands the terminal "
            "to one agent"
        )
    request = pipeline.LaunchRequest(
        options.workdir,
        selection,
        not options.no_project,
        tuple(options.agent_args),
        dry_run=options.dry_run,
        headless=printing is not None,
        permissions=printing.permissions if printing is not None else None,
        permissions_from=printing.permissions_from if printing is not None else None,
        session=printing.session if printing is not None else None,
    )
    asked = parameters(options, selection, printing)
    if printing is not None:
        return _print(options, request, printing, asked)
    return _launch(options, request, asked)


def _launch(options: Options, request: pipeline.LaunchRequest, asked: dict[str, Any]) -> int:
    """A launch: exec the agent, or with --dry-run, show it."""
    # Commands that take a while get a status line with the time elapsed, on a terminal and
    # without -q only.
    progress = _status(options, elapsed=True)
    try:
        prepared = _prepare(request, progress)
    except CommandError as error:
        if options.debug:
            raise error.in_full() from None
        raise
    _warn(prepared)
    config, launch = prepared.config, prepared.launch
    if options.dry_run:
        _dry_run(options, [prepared], several=False)
        return ExitCode.OK
    _summary(options, prepared)
    record(options, runs.begun(prepared, headless=False), config, asked)
    from start.compose import launch as launcher

    launcher.exec_agent(launch)


def _print(
    options: Options, request: pipeline.LaunchRequest, printing: Printing, asked: dict[str, Any]
) -> int:
    """--print: the agents' headless forms (one agent is a list of one), run to their end; the
    answers first, then the history."""
    several = len(options.agents) > 1
    if printing.output is not None and not options.dry_run:
        from start.cli import printing as print_cli

        print_cli.check_output(printing.output)  # before anything is spent
    if options.dry_run:
        each = _prepare_each(options, request, several, None)
        _dry_run(options, each, several=several)
        return ExitCode.OK
    from start.proc import watchdog

    # Should start be killed (SIGKILL: the OOM killer, a CI job's kill), a watchdog ends what
    # the run started: the commands that compose the prompt, and the agents.
    with watchdog.watching() as owner:
        return _headless(options, request, printing, asked, several, owner)


def _headless(
    options: Options,
    request: pipeline.LaunchRequest,
    printing: Printing,
    asked: dict[str, Any],
    several: bool,
    owner: Owner | None,
) -> int:
    from start.cli import printing as print_cli
    from start.proc import agents as agentrun

    each = _prepare_each(options, request, several, owner)
    if not several:
        _summary(options, each[0])
    stopped: agentrun.Interrupted | None = None
    try:
        done = print_cli.run(options, each, printing.timeout, owner)
    except agentrun.Interrupted as stop:
        done, stopped = list(stop.runs), stop
    done = [run._replace(request=asked, args=_args(options), cwd=_cwd(options)) for run in done]
    # The answers first, on stdout and flushed: the history (a database another process may
    # hold) never delays them, and records them whatever happens to stdout. On Ctrl-C or a
    # signal, the answers that had arrived are shown and every run is recorded, then start
    # stops as the signal says.
    arrived = stopped is None or any(run.answered for run in done)
    try:
        code = ExitCode.OK
        if arrived:  # a stop before any answer says only "interrupted"
            code = print_cli.show(options, done, several=several, output=printing.output)
    finally:
        config = each[0].config
        for run in done:
            record(options, run, config)
    if stopped is not None:
        raise stopped
    return code


def _prepare_each(
    options: Options, request: pipeline.LaunchRequest, several: bool, owner: Owner | None
) -> list[pipeline.Prepared]:
    """pipeline.prepare_each for the agents -a names (one, and its -m, when it names one or
    none), asking on a terminal when the project is not trusted yet."""
    names: list[str | None] = list(options.agents) if several else [None]
    progress = _status(options, elapsed=not several)
    try:
        each = _trusted(
            functools.partial(pipeline.prepare_each, request, names, progress=progress, owner=owner)
        )
    except CommandError as error:
        if options.debug:
            raise error.in_full() from None
        raise
    _warn(each[0])
    return each


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


def _summary(options: Options, prepared: pipeline.Prepared) -> None:
    """The launch's summary on stderr (without -q; with it, its warnings only)."""
    printer = console.Printer("stderr", no_color=options.no_color)
    config, composition = prepared.config, prepared.composition
    if options.quiet:
        _warnings_only(printer, config, composition)
        return
    lines = _summary_lines(
        options, config, prepared.plan, composition, prepared.launch, prepared.timings
    )
    printer.wrapped(lines)
    printer.flush()


def _dry_run(options: Options, each: list[pipeline.Prepared], *, several: bool) -> None:
    from start.cli import dryrun

    try:
        if several:
            dryrun.show_each(options, each)
            return
        (prepared,) = each
        plan, composition, launch = prepared.plan, prepared.composition, prepared.launch
        if options.json:
            dryrun.show_json(plan, composition, launch)
        else:
            summary = _summary_lines(options, prepared.config, plan, composition, launch, {})
            dryrun.show(options, summary, composition, launch)
    finally:
        for prepared in each:
            prepared.launch.cleanup()


def _args(options: Options) -> tuple[str, ...]:
    return tuple(options.argv)


def _cwd(options: Options) -> str:
    from start.base.paths import current_dir

    return options.started_in or current_dir()


def record(
    options: Options,
    run: runs.Run,
    config: Config,
    asked: dict[str, Any] | None = None,
) -> None:
    """Put the run in the history; a history that cannot be written is a warning, not a
    failure of the run."""
    from start.runs import history, recording

    if asked is not None:
        run = run._replace(request=asked, args=_args(options), cwd=_cwd(options))
    try:
        recording.record(run, config.settings)
    except history.HistoryError as error:
        console.warning(f"this run is not in the history: {error}", no_color=options.no_color)


def command_words(
    options: Options, selection: resolve.Request, printing: Printing | None
) -> list[str]:
    """The words of a command line that asks for this run (what `start again` shows, and
    records as its run's command line): made from the parameters, never parsed."""
    words: list[str] = []
    if selection.mode == "prompt":
        text = selection.text or ""
        words += ["prompt", text if not text.startswith("-") else f"--instructions={text}"]
    elif selection.mode == "continue":
        text = selection.text or ""
        words += ["continue", text if not text.startswith("-") else f"--instructions={text}"]
    elif selection.mode == "task":
        words += ["task", selection.task or ""]
        for text in selection.instructions:
            words.append(text if not text.startswith("-") else f"--instructions={text}")
    if options.agents:
        words += ["-a", ",".join(options.agents)]
    if options.no_role:
        words.append("--no-role")
    elif options.role is not None:
        words += ["-r", options.role]
    if options.model is not None:
        words += ["-m", options.model]
    for context in options.contexts:
        words += ["-c", context]
    for name, value in selection.params:
        words += ["-p", f"{name}={value}"]
    if options.directory is not None:
        words += ["-d", options.directory]
    for flag, on in (
        ("-q", options.quiet),
        ("--json", options.json),
        ("--no-color", options.no_color),
        ("--no-project", options.no_project),
        ("--raw", options.raw),
    ):
        if on:
            words.append(flag)
    words += ["-v"] * options.verbose
    if printing is not None and selection.mode != "continue":
        words.append("--print")
        given: tuple[tuple[str, object], ...] = (
            ("--permissions", printing.permissions),
            ("--timeout", printing.timeout),
            ("--output", printing.output),
        )
        words += [word for flag, value in given if value is not None for word in (flag, str(value))]
    if options.agent_args:
        words += ["--", *options.agent_args]
    return words


def parameters(
    options: Options, selection: resolve.Request, printing: Printing | None
) -> dict[str, Any]:
    """How the run was asked for, as the run records it for `start again` (start.runs.Run's
    `request`): the parameters click parsed, never the words they were parsed from."""
    return {
        "mode": selection.mode,
        "task": selection.task,
        "instructions": list(selection.instructions),
        "text": selection.text,
        "params": [list(pair) for pair in selection.params],
        "agents": list(options.agents),
        "role": options.role,
        "no_role": options.no_role,
        "model": options.model,
        "contexts": list(options.contexts),
        "directory": options.directory,
        "quiet": options.quiet,
        "verbose": options.verbose,
        "json": options.json,
        "no_color": options.no_color,
        "no_project": options.no_project,
        "raw": options.raw,
        "agent_args": list(options.agent_args),
        "print": printing is not None,
        "session": printing.session if printing is not None else None,
        "permissions": printing.permissions if printing is not None else None,
        "timeout": printing.timeout if printing is not None else None,
        "output": printing.output if printing is not None else None,
    }


def run_session(options: Options) -> int:
    request = resolve.Request(
        "session",
        options.agent,
        options.role,
        options.no_role,
        options.model,
        contexts=tuple(options.contexts),
    )
    return run(options, request)


def _raw(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        (ctx.find_object(Options) or ctx.ensure_object(Options)).raw = True


def print_options(function: F) -> F:
    from start.config import schema

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


def headless_printing(
    print_: bool, permissions: str | None, timeout: int | None, output: str | None = None
) -> Printing | None:
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
        return None
    return Printing(permissions, timeout, output)


def _summary_lines(
    options: Options,
    config: Config,
    plan: resolve.Plan,
    composition: sources.Composition,
    launch: launcher.Launch,
    timings: dict[str, float],
) -> list[Line]:
    lines: list[Line] = []
    model = f"  model {plan.model}" if plan.model else ""
    lines.append([Styled("start", "bold"), " ▸ ", Styled(plan.agent.name, "bold cyan"), model])
    # A literal id, or the first of the agent's models that no one chose: say so.
    literal = plan.model not in plan.agent.models.values()
    noted = literal or plan.model_reason.startswith(resolve.FIRST_MODEL)
    if plan.model and noted and not options.debug:
        lines.append([f"  model from    {plan.model_reason}"])
    role = f"{plan.role.name}  ({plan.role_reason})" if plan.role else f"none ({plan.role_reason})"
    lines.append([f"  role          {role}"])
    if composition.contexts:
        marks: list[console.Part] = ["  contexts      "]
        for index, part in enumerate(composition.contexts):
            text = f"{_MARK[part.status]} {part.name}"
            if part.status in ("missing", "failed"):
                marks.append(Styled(f"{text} ({part.detail})", "yellow"))
            else:
                marks.append(Styled(text, "dim" if part.status == "empty" else ""))
            if index < len(composition.contexts) - 1:
                marks.append("  ")
        lines.append(marks)
    else:
        lines.append(["  contexts      none"])
    if plan.task is not None:
        origin = plan.task.origin
        lines.append([f"  task          {plan.task.name}  ({origin.layer}: {origin.path})"])
        if composition.task is not None and composition.task.status == "missing":
            lines.append([Styled(f"  ⚠ task {composition.task.detail}", "yellow")])
    if plan.mode == "task":
        lines.append([f"  instructions  {plan.instructions if plan.instructions else 'None'}"])
    if plan.params:
        shown = ", ".join(f"{name}={value}" for name, value in plan.params.items())
        lines.append([f"  params        {shown}"])
    if launch.permissions is not None:
        lines.append([f"  permissions   {launch.permissions}  ({launch.permissions_from})"])
    if launch.large_prompt is not None:
        size = len(composition.prompt.encode("utf-8", "surrogateescape"))
        how = "goes to the agent's stdin from" if launch.stdin else "the agent is asked to read"
        lines.append(
            [
                f"  prompt        {size:,} bytes, too large for the command line: {how} "
                f"{launch.large_prompt}"
            ]
        )
    lines.extend([Styled(f"  {text}", "yellow")] for text in _cut_warnings(config, composition))
    lines.extend([Styled(f"  ⚠ {text}", "yellow")] for text in composition.notes)
    # Other agents' command files are not start's config: their findings (front matter start
    # does not import, ...) are counted only for the task that runs.
    commands = _command_files(config)
    warnings = [p for p in config.problems if not p.is_error and p.file not in commands]
    if warnings:
        count = f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}"
        text = f"  ⚠ the config has {count}; run 'start config validate'"
        lines.append([Styled(text, "yellow")])
    if plan.task is not None and plan.task.imported is not None:
        path = plan.task.origin.path
        own = [p for p in config.problems if p.file == path] if path in commands else []
        if own:
            count = f"{len(own)} warning{'s' if len(own) != 1 else ''}"
            text = f"  ⚠ {plan.task.origin.path} has {count}; run 'start config validate'"
            lines.append([Styled(text, "yellow")])
    if options.verbose or options.debug:
        from start.cli.dryrun import command_line

        lines.append([f"  command       {command_line(launch)}"])
    if options.debug:
        lines.append([f"  agent from    {plan.agent_reason} ({plan.agent.origin})"])
        lines.append([f"  model from    {plan.model_reason}"])
        lines.append([f"  role from     {plan.role_reason}"])
        lines.append([f"  cwd           {launch.cwd}"])
        lines.append([f"  project root  {config.root}"])
        spent = ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in timings.items())
        lines.append([f"  timings       {spent}"])
    return lines


def _command_files(config: Config) -> set[str | None]:
    """The files of other agents' command and skill directories (start.config.interop) that the
    config's problems are about; each file is looked up once, however many problems it has."""
    files = {p.file for p in config.problems}
    # Imported tasks are of these layers: a config from the cache decodes no other task.
    tasks = [*of_layer(config.tasks, "imported"), *of_layer(config.tasks, "project")]
    if not files or not any(task.imported is not None for task in tasks):
        return set()
    from start.config.interop.dirs import in_command_dir
    from start.config.interop.skills import in_skill_dir

    return {
        file
        for file in files
        if in_command_dir(file, config.root) or in_skill_dir(file, config.root)
    }


def _cut_warnings(config: Config, composition: sources.Composition) -> list[str]:
    """A warning for each file cut by settings.file_size_limit, and each command output cut by
    settings.command_output_limit: the agent gets less than there was."""
    settings = config.settings
    parts = [part for part in (composition.role, *composition.contexts, composition.task) if part]
    return [
        *(
            f"⚠ {part.kind} {part.name}: {part.file} is cut to its first "
            f"{settings.file_size_limit:,} bytes; {part.cut:,} more were left out "
            "(settings.file_size_limit)"
            for part in parts
            if part.cut
        ),
        *(
            f"⚠ {part.kind} {part.name}: its command's output is cut to "
            f"{settings.command_output_limit:,} bytes; {part.output_cut:,} more were left out "
            "(settings.command_output_limit)"
            for part in parts
            if part.output_cut
        ),
    ]


def _warnings_only(
    printer: console.Printer, config: Config, composition: sources.Composition
) -> None:
    for part in composition.contexts:
        if part.status in ("missing", "failed"):
            printer.line(f"start: ⚠ context {part.name}: {part.detail}")
    if composition.task is not None and composition.task.status == "missing":
        printer.line(f"start: ⚠ task {composition.task.name}: {composition.task.detail}")
    for text in _cut_warnings(config, composition):
        printer.line(f"start: {text}")
    for text in composition.notes:
        printer.line(f"start: ⚠ {text}")
