"""`start workflow run NAME --dry-run`: a workflow's plan, as text and as a Mermaid graph.

Running a workflow on the board is to come (docs/workflows-design.md); the plan is what a run
will follow, and this shows it without running anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from start.base.errors import ConfigError, UnknownNameError, UsageError, suggest
from start.cli.commands import group
from start.cli.options import DIRECTORY, NO_PROJECT, common_options, printer
from start.cli.state import get_options
from start.ui import console
from start.ui.console import Styled

if TYPE_CHECKING:
    from start.compose.workflow import Shown
    from start.config.workflows import Workflow


@group(
    examples=[
        (
            "The plan of workflow fix-severe: its steps, agents and levels",
            'start workflow run fix-severe "the login page times out" --dry-run',
        ),
    ],
    epilog="Docs: start help workflows-design",
)
@common_options()
def workflow() -> None:
    """Plan workflows: steps of asks, bound by JMESPath expressions."""


@workflow.command(
    examples=[
        (
            "The plan, as text and as a Mermaid graph",
            'start workflow run review "the retry loop" --dry-run',
        ),
        ("The plan as data", "start workflow run review -p area=web --dry-run --json"),
    ]
)
@click.argument("name")
@click.argument("instructions", nargs=-1)
@click.option(
    "-p",
    "--param",
    "param_words",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set a workflow parameter; repeatable.",
)
@click.option("--dry-run", is_flag=True, help="Show the plan and run nothing.")
@common_options(DIRECTORY, NO_PROJECT)
def run(
    name: str, instructions: tuple[str, ...], param_words: tuple[str, ...], dry_run: bool
) -> int:
    """Show the plan of workflow NAME: its steps by level, each step's agent and answer format,
    and what feeds what. TEXT is the workflow's {instructions}.

    Running the steps on the board is not built yet: --dry-run is required.
    """
    from start.base import fs
    from start.compose import workflow as plans
    from start.config import load as config_load
    from start.config import params, workflows

    options = get_options()
    if not dry_run:
        raise UsageError(
            "running a workflow is not built yet; 'start workflow run NAME --dry-run' shows "
            "its plan (docs/workflows-design.md)"
        )
    config = config_load.load(options.workdir, use_project=not options.no_project, strict=True)
    read = workflows.read(config)
    if any(problem.is_error for problem in read.problems):
        raise ConfigError(read.problems)
    found = read.workflows.get(name)
    if found is None:
        raise UnknownNameError("workflow", name, read.workflows)
    given = dict(params.split(fs.arg_text(word)) for word in param_words)
    declared = {param.name: param for param in found.params}
    unknown = [key for key in given if key not in declared]
    if unknown:
        listed = ", ".join(declared) if declared else "none"
        close = suggest(unknown[0], declared)
        hint = f"; did you mean '{close}'?" if close else f" (its parameters: {listed})"
        raise UsageError(f"workflow '{name}' has no parameter '{unknown[0]}'{hint}")
    missing = [p.name for p in found.params if p.default is None and p.name not in given]
    if missing:
        raise UsageError(f"workflow '{name}' needs -p {missing[0]}=VALUE")
    steps = plans.shown(found, config)
    graph = plans.mermaid(steps)
    if options.json:
        console.print_json(_data(found, steps, graph, " ".join(instructions), given))
        return 0
    out = printer("stdout")
    head = f"workflow {found.name}" + (f": {found.description}" if found.description else "")
    out.line(Styled(head, "bold"))
    values = {p.name: given.get(p.name, p.default) for p in found.params}
    if instructions:
        out.line(f"instructions: {' '.join(instructions)}")
    for key, value in values.items():
        out.line(f"{key} = {value}")
    level = -1
    for item in steps:
        if item.planned.level != level:
            level = item.planned.level
            out.line("")
            out.line(Styled(f"level {level}", "bold"))
        out.line(f"  {item.planned.step.name}: {_summary(item)}")
        for before, flows in item.reads.items():
            out.line(f"    reads {before}: {', '.join(flows) if flows else 'needs it done'}")
    out.line("")
    out.line("```mermaid")
    for line in graph.splitlines():  # a line each: the console shows a newline as \n
        out.line(line)
    out.line("```")
    return 0


def _summary(item: Shown) -> str:
    step = item.planned.step
    parts = [item.asks, f"agent {item.agent or '(the default)'}", f"output {item.output}"]
    if step.when is not None:
        parts.append(f"when {step.when}")
    if isinstance(step.for_each, str):
        parts.append(f"for each of {step.for_each}")
    elif step.for_each is not None:
        parts.append(f"for each of {', '.join(step.for_each)}")
    if step.retries:
        parts.append(f"retries {step.retries}")
    return "; ".join(parts)


def _data(
    found: Workflow,
    steps: tuple[Shown, ...],
    graph: str,
    instructions: str,
    given: dict[str, str],
) -> dict[str, Any]:
    return {
        "workflow": found.name,
        "description": found.description,
        "instructions": instructions,
        "params": {p.name: given.get(p.name, p.default) for p in found.params},
        "steps": [
            {
                "name": item.planned.step.name,
                "level": item.planned.level,
                "asks": item.asks,
                "agent": item.agent,
                "model": item.planned.step.model,
                "output": item.output,
                "when": item.planned.step.when,
                "for_each": (
                    list(item.planned.step.for_each)
                    if isinstance(item.planned.step.for_each, tuple)
                    else item.planned.step.for_each
                ),
                "retries": item.planned.step.retries,
                "reads": {before: list(flows) for before, flows in item.reads.items()},
                "feeds": list(item.planned.downstream),
            }
            for item in steps
        ],
        "mermaid": graph,
    }
