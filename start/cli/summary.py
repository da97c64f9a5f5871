"""The launch's summary on stderr: the agent, the model, the role, the contexts and the task,
with the reason for each, and the warnings of what a composition cut or left out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from start.cli.state import Options
from start.compose import pipeline, resolve, sources
from start.config.model import Config, of_layer
from start.ui import console
from start.ui.console import Line, Styled

if TYPE_CHECKING:
    from start.compose import launch as launcher

_MARK = {"ok": "✓", "missing": "⚠", "failed": "⚠", "empty": "·"}


def show(options: Options, prepared: pipeline.Prepared) -> None:
    """The launch's summary on stderr (without -q; with it, its warnings only)."""
    printer = console.Printer("stderr", no_color=options.no_color)
    config, composition = prepared.config, prepared.composition
    if options.quiet:
        _warnings_only(printer, config, composition)
        return
    lines = summary_lines(
        options, config, prepared.plan, composition, prepared.launch, prepared.timings
    )
    printer.wrapped(lines)
    printer.flush()


def summary_lines(
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
