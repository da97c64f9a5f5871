"""`start export skills DIR [NAMES...]`: tasks as Agent Skills folders for other agents."""

from __future__ import annotations

import os

import click

from start.base.errors import ExitCode
from start.cli.commands import group
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options, completer
from start.cli.state import get_options
from start.config.load import load
from start.ui import console


@group(
    examples=[
        ("Every task as a project skill of Claude Code", "start export skills .claude/skills"),
    ],
    epilog="Docs: start help interop",
)
@common_options()
def export() -> None:
    """Write your tasks in other agents' formats."""


@export.command(
    examples=[
        ("Every task, for Claude Code, opencode and Copilot", "start export skills .claude/skills"),
        (
            "Two tasks, for Codex and Gemini CLI",
            "start export skills ~/.agents/skills explain help",
        ),
        ("What was written, as data", "start export skills .claude/skills --json"),
    ],
    epilog="Docs: start help interop",
)
@click.argument("target", metavar="DIR", type=click.Path(file_okay=False))
@click.argument("names", metavar="[NAMES]...", nargs=-1, shell_complete=completer("complete_tasks"))
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def skills(target: str, names: tuple[str, ...]) -> int:
    """Write one DIR/NAME/SKILL.md folder for each task named (by default, every task
    'start task' lists).

    SKILL.md holds the task's text, with $ARGUMENTS for its instructions. A task whose text
    changes at each launch (a command, {date}, {model}, a parameter without a default), and
    another agent's file, are skipped (an error when named). Running it again rewrites only
    what changed. A folder start did not write (it has no .start-export) is never overwritten.
    """
    from start.compose import export as exporting

    options = get_options()
    config = load(options.workdir, use_project=not options.no_project, strict=True)
    # DIR is relative to where start runs, as with any path (-d moves it).
    target = os.path.join(options.workdir, os.path.expanduser(target))
    done = exporting.skills(config, target, names)
    if options.json:
        console.print_json(
            {
                "directory": done.directory,
                "skills": [
                    {"task": s.task, "path": s.path, "status": s.status} for s in done.skills
                ],
                "skipped": [{"task": s.task, "reason": s.reason} for s in done.skipped],
            }
        )
        return ExitCode.OK
    for skill in done.skills:
        console.out(console.for_stdout(f"{skill.status:<10} {skill.path}"))
    if not options.quiet:
        for skipped in done.skipped:
            console.err(f"start: skipped {skipped.task}: {skipped.reason}")
    return ExitCode.OK
