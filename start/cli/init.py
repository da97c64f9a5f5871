"""`start init [--project] [--force] [--agent NAME]`: write a commented starter config."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

import click

from start.base.errors import ExitCode, Problem, UnknownNameError
from start.cli.commands import command
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options, completer, printer
from start.cli.state import Options, get_options
from start.config.model import Config
from start.setup import init as starter
from start.setup import readiness
from start.ui import console


@command(
    examples=[
        ("Your global config, with the installed agent as the default", "start init"),
        (
            "A project config with a context for its README and an example task",
            "start init --project",
        ),
        ("Start over, keeping the old file as a backup", "start init --force --agent claude"),
    ],
    epilog="Docs: start help setup",
)
@click.option(
    "--project",
    is_flag=True,
    help="Write the project's .start/config.toml instead of the global one.",
)
@click.option("--local", "project", is_flag=True, hidden=True)  # --project's old name
@click.option(
    "--force", is_flag=True, help="Replace an existing file, after a timestamped backup of it."
)
@click.option(
    "--agent",
    "agent_name",
    metavar="NAME",
    help="The default agent (otherwise the installed one; asked on a terminal if several).",
    shell_complete=completer("complete_agents"),
)
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def init(project: bool, force: bool, agent_name: str | None) -> int:
    """Write a commented starter config (the project's, with --project).

    Without --project: the global config, with an installed agent as the default. With --project:
    the project's .start/config.toml, with a context for its AGENTS.md or README.md and an
    example task. An existing file is replaced only with --force, after a backup.
    """
    options = get_options()
    requested = agent_name or options.agent
    if project:
        return _project(options, requested, force)
    return _global(options, requested, force)


def _global(options: Options, requested: str | None, force: bool) -> int:
    detection = starter.detect(options.workdir)
    agent, reason = starter.choose_agent(detection, requested)
    if requested is None and len(detection.installed) > 1 and _interactive():
        agent = click.prompt(
            "Several agents are installed. Which should start launch by default?",
            type=click.Choice(list(detection.installed)),
            default=agent,
            err=True,
        )
        reason = "your choice"
    path = starter.global_path()
    skip = starter.taken(os.path.dirname(path), path)
    written = starter.create(path, starter.global_text(agent, detection, skip), force=force)
    config = _load(options, use_project=False)
    problems = _problems(config, written)
    binary = detection.installed.get(agent) if agent is not None else None
    said = readiness.of(config, agent, binary) if agent is not None and binary else None
    if options.json:
        _print_json(written, agent, detection.installed, problems, ready=said)
        return ExitCode.OK
    _report_written(options, written)
    if options.quiet:
        return ExitCode.OK
    if agent is None and detection.catalog:
        console.err(f"  no agent is installed (looked for: {', '.join(detection.catalog)})")
        console.err(f"  install one, then set default_agent under [settings] in {written.path}")
    elif agent is None:
        console.err("  no agents are defined: start's catalog is empty")
        console.err(f"  define one under [agents.NAME] in {written.path}, then set default_agent")
    else:
        where = detection.installed.get(agent)
        found = f"at {where}" if where else "not on PATH yet: install it before you launch"
        console.err(f"  default agent: {agent} ({reason}; {found})")
        if said is not None and not said.ok:
            # What the first `start` would meet, said now (start doctor says it too).
            console.warning(f"{agent} cannot answer yet: {said.message}", no_color=options.no_color)
            if said.fix is not None:
                console.err(f"  fix: {said.fix}")
        others = [name for name in detection.installed if name != agent]
        if others:
            console.err(f"  also installed: {', '.join(others)} (use one with --agent NAME)")
    _report_problems(problems)
    console.err("Next: 'start doctor' checks the setup; 'start' launches a session.")
    return ExitCode.OK


def _project(options: Options, requested: str | None, force: bool) -> int:
    from start import trust

    root = starter.project_root(options.workdir)
    if requested is not None:
        known = _load(options, use_project=not options.no_project).agents
        if requested not in known:
            raise UnknownNameError("agent", requested, known)
    path = starter.project_path(root)
    skip = starter.taken(os.path.dirname(path), path)
    text = starter.project_text(root, requested, skip)
    written = starter.create(path, text, force=force, project_root=root)
    config = _load(options, use_project=True)
    problems = _problems(config, written)
    trusted, reason = trust.describe(config)
    if options.json:
        _print_json(written, requested, {}, problems, trusted=trusted)
        return ExitCode.OK
    _report_written(options, written)
    if options.quiet:
        return ExitCode.OK
    guide = starter.guide(root)
    if guide is not None:
        console.err(f"  context project-guide points the agent at {os.path.join(root, guide)}")
    else:
        console.err("  no AGENTS.md or README.md found: the project-guide context is commented out")
    if requested is not None:
        console.err(f"  default agent in this project: {requested}")
    if not trusted:
        console.err(f"  {reason}: run 'start trust' to review .start/ and approve it")
    _report_problems(problems)
    console.err("Next: 'start task todo-triage' tries the example task; 'start doctor' checks.")
    return ExitCode.OK


def _interactive() -> bool:
    return console.is_tty(sys.stdin) and console.is_tty(sys.stderr)


def _problems(config: Config, written: starter.Written) -> list[Problem]:
    """What the validator says about the new file; a starter config should draw nothing."""
    return [p for p in config.problems if p.file in (written.path, written.target)]


def _load(options: Options, use_project: bool) -> Config:
    from start.config.load import load

    return load(options.workdir, use_project=use_project)


def _report_written(options: Options, written: starter.Written) -> None:
    if not options.quiet:
        through = f" (through the symlink {written.path})" if written.target != written.path else ""
        console.err(f"start: wrote {written.target}{through}")
    if written.backup is not None:
        console.err(f"  the old file is kept as {written.backup}")


def _report_problems(problems: list[Problem]) -> None:
    from start.cli.problems import show_problems

    show_problems(printer(), problems)
    if problems:
        console.err("  (the new file has problems; 'start config validate' lists them all)")


def _print_json(
    written: starter.Written,
    agent: str | None,
    installed: Mapping[str, str],
    problems: list[Problem],
    *,
    trusted: bool | None = None,
    ready: readiness.Readiness | None = None,
) -> None:
    data: dict[str, object] = {
        "path": str(written.target),
        "backup": str(written.backup) if written.backup is not None else None,
        "default_agent": agent,
        "installed": dict(installed),
        "problems": [p.as_dict() for p in problems],
    }
    if trusted is None:
        # Whether the default agent can answer, where its CLI tells (start.setup.readiness).
        data["agent_setup"] = (
            None if ready is None else dict(zip(ready._fields, ready, strict=True))
        )
    if trusted is not None:
        data["trusted"] = trusted
    console.print_json(data)
