"""--dry-run: what a launch would run, shown instead of run (the prompt, the role, the agent's
command line; with --json, as data); and the command line of a launch, which -v's summary shows too.

start.cli.run imports it only for a dry run or -v, so a plain launch does without it.
"""

from __future__ import annotations

from typing import Any

from start.cli.state import Options
from start.compose import launch as launcher
from start.compose import pipeline, resolve, sources
from start.ui import console
from start.ui.console import Line, Styled


def command_line(launch: launcher.Launch) -> str:
    """The launch as one shell-quoted line; a dry run's refers to its kept files."""
    if launch.shown:
        return " ".join(launch.shown)
    from start.proc.shellwords import join, quote

    env = [f"{k}={quote(v)}" for k, v in launch.env.items()]
    return " ".join([*env, join(launch.argv)])


def show_json(
    plan: resolve.Plan, composition: sources.Composition, launch: launcher.Launch
) -> None:
    """The dry run as one JSON object on stdout."""
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
        "params": dict(plan.params),
        "notes": list(composition.notes),
        "role_text": composition.role.text if composition.role else "",
        "prompt": composition.prompt,
        "argv": list(launch.argv),
        "env": launch.env,
        "cwd": str(launch.cwd),
        "large_prompt": str(launch.large_prompt) if launch.large_prompt else None,
        "stdin": str(launch.stdin) if launch.stdin else None,
        "kept_dir": str(launch.kept) if launch.kept else None,
        # A dry run of --print: the permission level its headless form was built with, and
        # where that level comes from.
        "permissions": launch.permissions,
        "permissions_from": launch.permissions_from,
        # Why the agent could not be started now (its binary missing), or None.
        "unavailable": _unavailable(launch),
    }
    console.print_json(data)


def _unavailable(launch: launcher.Launch) -> str | None:
    return None if launch.unavailable is None else str(launch.unavailable)


def show(
    options: Options,
    summary: list[Line],
    composition: sources.Composition,
    launch: launcher.Launch,
) -> None:
    """The dry run on stdout: the launch's summary, then its role, prompt and command."""
    printer = console.Printer("stdout", no_color=options.no_color)
    printer.wrapped(summary)
    role_text = composition.role.text if composition.role else ""
    for title, body in (
        ("role", role_text),
        ("prompt", composition.prompt),
        ("command", command_line(launch)),
    ):
        printer.line()
        printer.line(Styled(f"──── {title} ────", "bold"))
        printer.block(body.rstrip("\n") if body else "(empty)")
    printer.line()
    note = "(dry run: the agent was not started; task and context commands did run)"
    printer.line(Styled(note, "dim"))
    if launch.unavailable is not None:
        for line in f"(it could not be: {launch.unavailable})".split("\n"):
            printer.line(Styled(line, "yellow"))
    if launch.kept is not None:
        kept = f"(its files are kept in {launch.kept}; a run a day later removes them)"
        printer.line(Styled(kept, "dim"))


def show_each(options: Options, each: list[pipeline.Prepared]) -> None:
    """The dry run of several agents (--print -a A,B --dry-run): each one's command line."""
    if options.json:
        console.print_json(
            [
                {
                    "agent": p.plan.agent.name,
                    "model": p.plan.model,
                    "permissions": p.launch.permissions,
                    "permissions_from": p.launch.permissions_from,
                    "argv": list(p.launch.argv),
                    "env": p.launch.env,
                    "unavailable": _unavailable(p.launch),
                }
                for p in each
            ]
        )
        return
    printer = console.Printer("stdout", no_color=True)
    for prepared in each:
        printer.line(f"{prepared.plan.agent.name}: {command_line(prepared.launch)}")
        if prepared.launch.unavailable is not None:
            for line in f"(it could not be started: {prepared.launch.unavailable})".split("\n"):
                printer.line(f"  {line}")
