"""`start show [KIND] NAME`: one agent, role, context, task or workflow in detail."""

from __future__ import annotations

import click

from start.base.errors import ExitCode, UnknownNameError, UsageError
from start.cli import workflow
from start.cli.commands import command
from start.cli.options import DIRECTORY, NO_PROJECT, common_options, completer
from start.cli.state import get_options
from start.cli.workflow_index import WORKFLOW_WORDS, declared
from start.compose import details
from start.config.load import load
from start.ui import console, display
from start.ui.console import Styled

_LABEL = 12


@command(
    examples=[
        ("A task: its file and line, fields, parameters, text and selection", "start show gdr"),
        ("Name the kind when a name is used by several", "start show role code-reviewer"),
        ("Run the item's command too, for its real output", "start show task gdr --run"),
        ("A workflow: its file, parameters and plan", "start show workflow fix-severe"),
        ("The same as data", "start show task gdr --json"),
    ],
    epilog="Docs: start help usage",
)
@click.argument("first", metavar="[KIND]", shell_complete=completer("complete_show_first"))
@click.argument(
    "second", metavar="NAME", required=False, shell_complete=completer("complete_show_name")
)
@click.option(
    "--run", "run_commands", is_flag=True, help="Run the item's command (never when untrusted)."
)
@click.option("--no-pager", is_flag=True, help="Print instead of paging on a terminal.")
@common_options(DIRECTORY, NO_PROJECT)
def show(first: str, second: str | None, run_commands: bool, no_pager: bool) -> int:
    """Show one item: where it is defined, what it replaces, its fields and its text.

    KIND is agent, role, context, task or workflow (plural works too), and may be left out
    when no other kind has an item called NAME (a workflow comes after the others). A task is
    found as 'start task' finds it (name, alias, unique prefix), and shows the role, agent and
    model it would select, and why. A workflow shows its file, its parameters and its plan.

    Files are read as a launch reads them; commands run only with --run, and never in a
    project whose .start/ is not trusted (whose files are not read either).
    """
    options = get_options()
    kind_word, name = (first, second) if second is not None else (None, first)
    config = load(options.workdir, use_project=not options.no_project, strict=True)
    if kind_word in WORKFLOW_WORDS:
        return workflow.show_workflow(name, config, no_pager=no_pager)
    try:
        section, item = details.find(config, kind_word, name)
    except UnknownNameError:
        if kind_word is None and name in declared(config):
            return workflow.show_workflow(name, config, no_pager=no_pager)
        if kind_word is None and (name in details.SECTION_OF_WORD or name in WORKFLOW_WORDS):
            raise UsageError(f"'start show {name}' needs NAME: start show {name} NAME") from None
        raise
    inexact = item.name != name and getattr(item, "alias", None) != name  # a task's prefix
    if kind_word is None and inexact and name in declared(config):
        return workflow.show_workflow(name, config, no_pager=no_pager)  # its exact name wins
    found = details.describe(config, section, item, run=run_commands)
    if options.json:
        console.print_json(details.as_data(found))
        return ExitCode.OK
    page = display.Page()
    _page(page, found)
    page.show(no_color=options.no_color, pager=not no_pager)
    return ExitCode.OK


def _page(page: display.Page, found: details.Details) -> None:
    from start.config import params, show

    item = found.item
    page.line(Styled(f"{found.kind} {item.name}", "bold"))
    _row(page, "defined in", str(found.place))
    replaces = [str(place) for place in found.replaces] or ["nothing"]
    for index, text in enumerate(replaces):
        _row(page, "replaces" if index == 0 else "", text)
    if found.trust != "no project config":
        _row(page, "project", found.trust)
    if found.continuing is not None:
        able = "yes" if found.continuing.able else "no"
        _row(page, "continue", f"{able}: {found.continuing.reason}")

    fields = show.item_fields(item)
    fields.pop("params", None)
    if fields:
        page.blank()
        page.line(Styled("fields", "bold"))
        models = fields.pop("models", {})
        lines = [f"{key} = {show.toml_value(value)}" for key, value in fields.items()]
        if models:
            lines.append(f"[{found.section}.{item.name}.models]")
            lines.extend(f"{show.toml_key(k)} = {show.toml_value(v)}" for k, v in models.items())
        page.syntax("\n".join(lines), "toml")

    if found.params:
        page.blank()
        page.line(Styled("parameters", "bold"))
        rows = [
            (
                p.name,
                "required" if p.default is None else f"default {show.toml_value(p.default)}",
                p.description or "",
            )
            for p in found.params
        ]
        widths = [max(display.display_width(row[i]) for row in rows) for i in (0, 1)]
        for row in rows:
            page.row(list(row), widths, indent=2, gaps=[2, 2])
        variables = ", ".join(f"${params.env_name(p.name)}" for p in found.params)
        page.line(
            Styled(
                f"  Set with -p NAME=VALUE. Its command sees {variables}, and the instructions "
                f"as ${params.INSTRUCTIONS_ENV}.",
                "dim",
            )
        )

    if found.choices:
        page.blank()
        page.line(Styled("selects", "bold"))
        shown = [
            (c.what, c.value if c.value is not None else "none", c.reason) for c in found.choices
        ]
        width = max(display.display_width(value) for _, value, _ in shown)
        for what, value, reason in shown:
            page.row([what, value, reason], [5, width], indent=2, gaps=[2, 2])

    if found.text is not None:
        page.blank()
        page.line(Styled("──── text ────", "bold"))
        for line in found.text.rstrip("\n").split("\n") if found.text else ["(empty)"]:
            page.line(line)
    if found.notes:
        page.blank()
        for note in found.notes:
            page.line(Styled(f"⚠ {note}", "yellow"))


def _row(page: display.Page, label: str, value: str) -> None:
    page.row([label, value], [_LABEL], indent=2)
