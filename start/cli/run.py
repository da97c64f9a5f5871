"""`start`, `start prompt` and `start task`: compose the prompt and exec the agent."""

from __future__ import annotations

import sys
from typing import Any

import click

from start import console, pipeline, resolve, sources
from start import launch as launcher
from start.cli.options import Options, completer, get_options, launch_options
from start.config.load import load
from start.config.model import Config
from start.errors import ExitCode, UntrustedError, UsageError

_MARK = {"ok": "✓", "missing": "⚠", "failed": "⚠", "empty": "·"}


def _prepare(request: pipeline.LaunchRequest) -> pipeline.Prepared:
    """pipeline.prepare, asking on a terminal when the project's .start/ is not trusted yet."""
    try:
        return pipeline.prepare(request)
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
                f"{error.scan.start_dir} was not approved; nothing was run"
            ) from None
        trust.approve(error.scan)
    return pipeline.prepare(request)


def run(options: Options, selection: resolve.Request) -> int:
    """Prepare the launch; then exec the agent or, with --dry-run, show it."""
    if options.json and not options.dry_run:
        raise UsageError(
            "--json prints a launch only with --dry-run (or a listing: start task --json)"
        )
    request = pipeline.LaunchRequest(
        options.workdir,
        selection,
        not options.no_project,
        tuple(options.agent_args),
        dry_run=options.dry_run,
    )
    prepared = _prepare(request)
    if prepared.warnings:
        from start.cli import trust as trust_cli

        for message in prepared.warnings:
            trust_cli.warn(message)
    config, plan, composition, launch = (
        prepared.config,
        prepared.plan,
        prepared.composition,
        prepared.launch,
    )
    if options.dry_run:
        try:
            _show_dry_run(options, config, plan, composition, launch)
        finally:
            launch.cleanup()
        return ExitCode.OK
    if not options.quiet:
        printer = console.Printer(sys.stderr, no_color=options.no_color)
        _summary(printer, options, config, plan, composition, launch, prepared.timings)
    else:
        _warnings_only(console.Printer(sys.stderr, no_color=options.no_color), composition)
    launcher.exec_agent(launch)


def run_session(options: Options) -> int:
    request = resolve.Request(
        "session", options.agent, options.role, options.no_role, options.model
    )
    return run(options, request)


@click.command()
@click.argument("text", nargs=-1, required=True)
@launch_options
def prompt(text: tuple[str, ...]) -> int:
    """Send TEXT to the agent with the required contexts. Use - to read TEXT from stdin."""
    options = get_options()
    # Bytes, not text mode: universal newlines would turn \r\n into \n.
    read = text == ("-",)
    body = sys.stdin.buffer.read().decode("utf-8", "replace") if read else " ".join(text)
    request = resolve.Request(
        "prompt", options.agent, options.role, options.no_role, options.model, text=body
    )
    return run(options, request)


@click.command()
@click.argument("name", required=False, shell_complete=completer("complete_tasks"))
@click.argument("instructions", nargs=-1)
@click.option("--all", "show_all", is_flag=True, help="List internal tasks too.")
@launch_options
def task(name: str | None, instructions: tuple[str, ...], show_all: bool) -> int:
    """Run task NAME (a name, an alias or a unique prefix) with INSTRUCTIONS.

    Without NAME, list the tasks.
    """
    options = get_options()
    if name is None:
        return _list_tasks(options, show_all)
    words = tuple(instructions)
    request = resolve.Request(
        "task",
        options.agent,
        options.role,
        options.no_role,
        options.model,
        task=name,
        instructions=words if " ".join(words).strip() else (),
    )
    return run(options, request)


def _list_tasks(options: Options, show_all: bool) -> int:
    config = load(options.workdir, use_project=not options.no_project, strict=True)
    tasks = sorted(
        (t for t in config.tasks.values() if show_all or not t.internal), key=lambda t: t.name
    )
    if options.json:
        console.print_json(
            [
                {
                    "name": t.name,
                    "alias": t.alias,
                    "description": t.description,
                    "layer": t.origin.layer,
                    "file": str(t.origin.path),
                    "internal": t.internal,
                }
                for t in tasks
            ]
        )
        return ExitCode.OK
    if not tasks:
        console.err("No tasks are defined. Add one under [tasks.NAME]; see docs/configuration.md.")
        return ExitCode.OK
    rows = [[t.name, t.alias or "", t.description or "", t.origin.layer] for t in tasks]
    console.print_table(["task", "alias", "description", "layer"], rows, no_color=options.no_color)
    return ExitCode.OK


def command_line(launch: launcher.Launch) -> str:
    """The launch as one shell-quoted line; a dry run's refers to its kept files."""
    if launch.shown:
        return " ".join(launch.shown)
    import shlex

    env = [f"{k}={shlex.quote(v)}" for k, v in launch.env.items()]
    return " ".join([*env, shlex.join(launch.argv)])


def _summary_lines(
    printer: console.Printer,
    options: Options,
    config: Config,
    plan: resolve.Plan,
    composition: sources.Composition,
    launch: launcher.Launch,
    timings: dict[str, float],
) -> list[str]:
    s = printer.style
    lines = []
    model = f"  model {plan.model}" if plan.model else ""
    lines.append(f"{s('start', 'bold')} ▸ {s(plan.agent.name, 'bold', 'cyan')}{model}")
    if plan.model and plan.model not in plan.agent.models.values() and not options.debug:
        lines.append(f"  model from    {plan.model_reason}")  # a literal id: say so
    role = f"{plan.role.name}  ({plan.role_reason})" if plan.role else f"none ({plan.role_reason})"
    lines.append(f"  role          {role}")
    if composition.contexts:
        marks = []
        for part in composition.contexts:
            mark = _MARK[part.status]
            text = f"{mark} {part.name}"
            if part.status in ("missing", "failed"):
                text = s(f"{text} ({part.detail})", "yellow")
            elif part.status == "empty":
                text = s(text, "dim")
            marks.append(text)
        lines.append("  contexts      " + "  ".join(marks))
    else:
        lines.append("  contexts      none")
    if plan.task is not None:
        origin = plan.task.origin
        lines.append(f"  task          {plan.task.name}  ({origin.layer}: {origin.path})")
        if composition.task is not None and composition.task.status == "missing":
            lines.append(s(f"  ⚠ task {composition.task.detail}", "yellow"))
    if plan.mode == "task":
        lines.append(f"  instructions  {plan.instructions if plan.instructions else 'None'}")
    if launch.large_prompt is not None:
        size = len(composition.prompt.encode("utf-8", "surrogateescape"))
        how = "goes to the agent's stdin from" if launch.stdin else "the agent is asked to read"
        lines.append(
            f"  prompt        {size:,} bytes, too large for the command line: {how} "
            f"{launch.large_prompt}"
        )
    warnings = [p for p in config.problems if not p.is_error]
    if warnings:
        lines.append(
            s(
                f"  ⚠ the config has {len(warnings)} warning"
                f"{'s' if len(warnings) != 1 else ''}; run 'start config validate'",
                "yellow",
            )
        )
    if options.verbose or options.debug:
        lines.append(f"  command       {command_line(launch)}")
    if options.debug:
        lines.append(f"  agent from    {plan.agent_reason} ({plan.agent.origin})")
        lines.append(f"  model from    {plan.model_reason}")
        lines.append(f"  role from     {plan.role_reason}")
        lines.append(f"  cwd           {launch.cwd}")
        lines.append(f"  project root  {config.root}")
        lines.append(
            "  timings       " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in timings.items())
        )
    return lines


def _summary(
    printer: console.Printer,
    options: Options,
    config: Config,
    plan: resolve.Plan,
    composition: sources.Composition,
    launch: launcher.Launch,
    timings: dict[str, float],
) -> None:
    for line in _summary_lines(printer, options, config, plan, composition, launch, timings):
        printer.line(line)
    printer.flush()


def _warnings_only(printer: console.Printer, composition: sources.Composition) -> None:
    for part in composition.contexts:
        if part.status in ("missing", "failed"):
            printer.line(f"start: ⚠ context {part.name}: {part.detail}")
    if composition.task is not None and composition.task.status == "missing":
        printer.line(f"start: ⚠ task {composition.task.name}: {composition.task.detail}")


def _show_dry_run(
    options: Options,
    config: Config,
    plan: resolve.Plan,
    composition: sources.Composition,
    launch: launcher.Launch,
) -> None:
    if options.json:
        data: dict[str, Any] = {
            "agent": plan.agent.name,
            "model": plan.model,
            "role": plan.role.name if plan.role else None,
            "contexts": [
                {"name": p.name, "status": p.status, "source": p.source, "detail": p.detail}
                for p in composition.contexts
            ],
            "task": plan.task.name if plan.task else None,
            "instructions": plan.instructions,
            "role_text": composition.role.text if composition.role else "",
            "prompt": composition.prompt,
            "argv": list(launch.argv),
            "env": launch.env,
            "cwd": str(launch.cwd),
            "large_prompt": str(launch.large_prompt) if launch.large_prompt else None,
            "stdin": str(launch.stdin) if launch.stdin else None,
            "kept_dir": str(launch.kept) if launch.kept else None,
        }
        console.print_json(data)
        return
    printer = console.Printer(sys.stdout, no_color=options.no_color)
    s = printer.style
    for line in _summary_lines(printer, options, config, plan, composition, launch, {}):
        printer.line(line)
    role_text = composition.role.text if composition.role else ""
    for title, body in (
        ("role", role_text),
        ("prompt", composition.prompt),
        ("command", command_line(launch)),
    ):
        printer.line()
        printer.line(s(f"──── {title} ────", "bold"))
        printer.line(body.rstrip("\n") if body else "(empty)")
    printer.line()
    printer.line(
        s("(dry run: the agent was not started; task and context commands did run)", "dim")
    )
    if launch.kept is not None:
        printer.line(
            s(f"(its files are kept in {launch.kept}; a run a day later removes them)", "dim")
        )
