"""`start config validate | show | path`, and the group that holds the editing commands."""

from __future__ import annotations

from typing import Any

import click

from start.base.errors import ExitCode, UnknownNameError, UsageError, suggest
from start.cli import workflow
from start.cli import workflow_index as index
from start.cli.commands import Choice, Group, group
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options, printer
from start.cli.problems import show_problems
from start.cli.state import get_options
from start.compose.audit import (
    check_context_files,
    check_output_schemas,
    check_shells,
    check_task_files,
)
from start.config import load as config_load
from start.config import schema
from start.config.model import LAYERS, Config
from start.ui import console, display
from start.ui.console import Styled

# The editing commands live in start.cli.config_edit and start.cli.config_editor, which import
# tomlkit, the editor's subprocess and temp files; they are loaded only when one of them runs (or
# help lists them).
_EDITING = ("add", "edit", "remove", "set", "unset")


class _ConfigGroup(Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_EDITING})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in _EDITING and name not in self.commands:
            from start.cli import config_edit, config_editor

            config_edit.register(self)
            config_editor.register(self)
        return self.commands.get(name)


@group(
    cls=_ConfigGroup,
    examples=[
        ("Check every layer", "start config validate"),
        ("The merged tasks, with the file each came from", "start config show tasks"),
        ("Set the default agent in your global config", "start config set default_agent claude"),
    ],
    epilog="Docs: start help configuration, start help editing",
)
@common_options()
def config() -> None:
    """Validate, show, locate and edit configuration."""


@config.command(
    examples=[
        ("Every problem of every layer, by file and line", "start config validate"),
        ("The same as data", "start config validate --json"),
    ]
)
@common_options(DIRECTORY, QUIET, NO_PROJECT, verbose="List the files read too.")
def validate() -> int:
    """Check every layer and the merged result; exit 3 on errors.

    Problems are grouped by file, each at LINE:COLUMN. -q prints only the problems; -v also lists
    the files that were read.
    """
    from start.config import workflows  # validate only: no launch reads a workflow

    options = get_options()
    loaded = config_load.load(options.workdir, use_project=not options.no_project, use_cache=False)
    problems = (
        *loaded.problems,
        *check_shells(loaded),
        *check_context_files(loaded),
        *check_task_files(loaded),
        *check_output_schemas(loaded),
        *(found := workflows.read(loaded)).problems,
        *workflows.check_schemas(found),
    )
    failed = any(p.is_error for p in problems)
    if options.json:
        console.print_json([p.as_dict() for p in problems])
        return ExitCode.CONFIG if failed else ExitCode.OK
    out = printer("stdout")
    if options.verbose:
        for read in loaded.files:
            out.line(Styled("read", "dim"), f" {read.layer}: {read.path}")
    show_problems(out, problems)
    errors = sum(1 for p in problems if p.is_error)
    warnings = len(problems) - errors
    files = len(loaded.files)
    summary = (
        f"{errors} error{'s' if errors != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''} in {files} file"
        f"{'s' if files != 1 else ''}"
    )
    mark = Styled("✗", "red bold") if errors else Styled("✓", "green")
    out.note(mark, " ", summary)
    return ExitCode.CONFIG if failed else ExitCode.OK


_SHOWN = ("settings", *schema.ITEM_SECTIONS)


@config.command(
    examples=[
        ("Everything, merged, each item with its layer and file", "start config show"),
        ("Only the tasks", "start config show tasks"),
        ("One agent", "start config show agent claude"),
        ("Only what your global config sets", "start config show --layer global"),
    ]
)
@click.argument("section", required=False, metavar="[SECTION]")
@click.argument("name", required=False, metavar="[NAME]")
@click.option(
    "--layer",
    type=Choice(LAYERS),
    metavar="LAYER",
    help="Only the items of LAYER: built-in, global or project.",
)
@click.option("--global", "only", flag_value="global", help="Same as --layer global.")
@click.option("--project", "only", flag_value="project", help="Same as --layer project.")
@click.option("--local", "only", flag_value="project", hidden=True)  # --project's old name
@click.option("--no-pager", is_flag=True, help="Print instead of paging on a terminal.")
@common_options(DIRECTORY, NO_PROJECT)
def show(
    section: str | None, name: str | None, layer: str | None, only: str | None, no_pager: bool
) -> int:
    """Show the merged configuration and where each item came from.

    SECTION is settings, agents, roles, contexts, tasks or workflows (singular works too); NAME
    narrows it to one item. Workflows are shown as their files hold them (start config
    validate checks them). On a terminal the TOML is paged with $START_PAGER, else $PAGER,
    else less.
    """
    # json and the TOML writer: for `show` only
    from start.config.show import annotated_toml, data_with_origins

    options = get_options()
    use_project = not options.no_project
    loaded = config_load.load(options.workdir, use_project=use_project, strict=True)
    layer = layer or only
    shown = loaded
    if layer is not None:
        shown = config_load.load(options.workdir, use_project=use_project, layers=(layer,))
    if section in index.WORKFLOW_WORDS:  # read apart from the load: start.cli.workflow_index
        return workflow.config_show(shown, name, no_pager=no_pager)
    section = _section(section, name)
    if name is not None:
        assert section is not None
        items: dict[str, Any] = getattr(shown, section)
        if name not in items:
            raise UnknownNameError(schema.KIND_OF[section], name, items)
    if options.json:
        data = data_with_origins(shown, section, name)
        if section is None:
            data["workflows"] = index.tables_data(shown)
        console.print_json(data)
        return ExitCode.OK
    text = annotated_toml(shown, section, name)
    flows = index.tables_toml(shown) if section is None else ""
    page = display.Page()
    page.syntax(f"{text.rstrip()}\n\n{flows}" if flows else text, "toml")
    page.show(no_color=options.no_color, pager=not no_pager)
    return ExitCode.OK


def _section(word: str | None, name: str | None) -> str | None:
    """The section a word names: settings, or the items of a kind (singular or plural)."""
    if word is None:
        return None
    section = schema.SECTION_OF.get(word, word)
    if section not in _SHOWN:
        close = suggest(word, [*_SHOWN, *schema.SECTION_OF])
        hint = f"; did you mean '{close}'?" if close else f"; choose from {', '.join(_SHOWN)}"
        raise UsageError(f"unknown section '{word}'{hint}")
    if section == "settings" and name is not None:
        raise UsageError("settings has no NAME; 'start config show settings' shows them all")
    return section


@config.command(
    examples=[
        ("Where config is read from", "start config path"),
        ("The same as data", "start config path --json"),
    ]
)
@common_options(DIRECTORY, NO_PROJECT)
def path() -> int:
    """Show the config directories, the files in each, and the project root."""
    options = get_options()
    loaded = config_load.load(options.workdir, use_project=not options.no_project)
    data = _paths(loaded)
    if options.json:
        console.print_json(data)
        return ExitCode.OK
    out = printer("stdout")
    for layer in LAYERS:
        entry = data["layers"][layer]
        if layer == "imported" and not entry["files"]:
            continue  # no command files of other agents: nothing to say
        directory = entry["directory"] or (
            "other agents' command directories" if layer == "imported" else "none"
        )
        out.line(Styled(f"{layer}:", "bold"), f" {directory}")
        for name in entry["files"]:
            out.line(f"  {name}")
        if entry["directory"] and not entry["files"]:
            out.line(Styled("  (no config files)", "dim"))
    out.line(Styled("project root:", "bold"), f" {data['project_root']}")
    return ExitCode.OK


def _paths(loaded: Config) -> dict[str, Any]:
    layers: dict[str, Any] = {}
    for layer in LAYERS:
        directory = loaded.layer_dirs.get(layer)
        names = [str(f.path) for f in loaded.files if f.layer == layer]
        layers[layer] = {"directory": str(directory) if directory else None, "files": names}
    return {"layers": layers, "project_root": str(loaded.root)}
