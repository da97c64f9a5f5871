"""`start config validate | show | path`."""

from __future__ import annotations

import sys
from typing import Any

import click

from start import console
from start.cli import config_edit
from start.cli.options import common_options, get_options
from start.config import load as config_load
from start.config import render
from start.config.model import LAYERS, Config
from start.errors import ExitCode


@click.group()
@common_options
def config() -> None:
    """Validate, show, locate and edit configuration."""


@config.command()
@common_options
def validate() -> int:
    """Check every layer and the merged result; exit 3 when there are errors."""
    options = get_options()
    loaded = config_load.load(options.workdir, use_project=not options.no_project, use_cache=False)
    problems = loaded.problems
    if options.json:
        console.print_json([p.as_dict() for p in problems])
    else:
        printer = console.Printer(sys.stdout, no_color=options.no_color)
        for problem in problems:
            mark = (
                printer.style("error", "red", "bold")
                if problem.is_error
                else printer.style("warning", "yellow")
            )
            printer.line(f"{mark}: {problem}")
        errors = sum(1 for p in problems if p.is_error)
        warnings = len(problems) - errors
        files = sum(1 for f in loaded.files)
        summary = (
            f"{errors} error{'s' if errors != 1 else ''}, "
            f"{warnings} warning{'s' if warnings != 1 else ''} in {files} file"
            f"{'s' if files != 1 else ''}"
        )
        printer.line(("✗ " if errors else "✓ ") + summary)
    return ExitCode.CONFIG if loaded.errors else ExitCode.OK


@config.command()
@click.option("--global", "only", flag_value="global", help="Show only the global layer's items.")
@click.option("--local", "only", flag_value="project", help="Show only the project layer's items.")
@common_options
def show(only: str | None) -> int:
    """Show the merged configuration and where each item came from."""
    options = get_options()
    use_project = not options.no_project
    loaded = config_load.load(options.workdir, use_project=use_project, strict=True)
    shown = loaded
    if only is not None:
        shown = config_load.load(options.workdir, use_project=use_project, layers=(only,))
    if options.json:
        console.print_json(render.as_data(shown))
        return ExitCode.OK
    console.print_syntax(render.as_toml(shown), "toml", no_color=options.no_color)
    return ExitCode.OK


@config.command()
@common_options
def path() -> int:
    """Show the config directories, the files found in each, and the project root."""
    options = get_options()
    loaded = config_load.load(options.workdir, use_project=not options.no_project)
    data = _paths(loaded)
    if options.json:
        console.print_json(data)
        return ExitCode.OK
    for layer in LAYERS:
        entry = data["layers"][layer]
        console.out(f"{layer}: {entry['directory'] or 'none'}")
        for name in entry["files"]:
            console.out(f"  {name}")
        if entry["directory"] and not entry["files"]:
            console.out("  (no config files)")
    console.out(f"project root: {data['project_root']}")
    return ExitCode.OK


def _paths(loaded: Config) -> dict[str, Any]:
    layers: dict[str, Any] = {}
    for layer in LAYERS:
        directory = loaded.layer_dirs.get(layer)
        names = [str(f.path) for f in loaded.files if f.layer == layer]
        layers[layer] = {"directory": str(directory) if directory else None, "files": names}
    return {"layers": layers, "project_root": str(loaded.root)}


# The editing commands (set, unset, add, remove, edit) live in their own module.
config_edit.register(config)
