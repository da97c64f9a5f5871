"""`start workflow run NAME [TEXT]`: a workflow run on the board (start.board.workflow), or
with --dry-run its plan, as text and as a Mermaid graph; `start workflow resume ID`.

The steps run as board items through the board's runner and the one path of an ask
(docs/workflows-design.md); this module reads the options and shows what came of them.
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


# A run's exit codes, as --print uses them (docs/workflows-design.md, "Resume and failure").
_EXITS = (
    "Exit codes: 0 every step succeeded or was skipped; 1 a step failed; 2 usage; 3 the\n"
    "config is invalid; 5 the project is not trusted; 65 a step answered out of format\n"
    "(and none failed); 130 Ctrl-C (the running steps stop, their items pending again:\n"
    "start workflow resume ID goes on).\n\nDocs: start help workflows-design"
)


@group(
    examples=[
        (
            "Run workflow fix-severe on a report",
            'start workflow run fix-severe "the login page times out"',
        ),
        (
            "The plan of workflow fix-severe: its steps, agents and levels",
            'start workflow run fix-severe "the login page times out" --dry-run',
        ),
    ],
    epilog="Docs: start help workflows-design",
)
@common_options()
def workflow() -> None:
    """Run and plan workflows: steps of asks on the board, bound by JMESPath expressions."""


@workflow.command(
    examples=[
        (
            "The plan, as text and as a Mermaid graph",
            'start workflow run review "the retry loop" --dry-run',
        ),
        ("The plan as data", "start workflow run review -p area=web --dry-run --json"),
        (
            "Run it, and every step's state as data",
            'start workflow run review "the retry loop" --json',
        ),
    ],
    epilog=_EXITS,
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
    """Run workflow NAME on the board: a parent item, and an item per step, each run headless
    once the steps it reads have finished (at most settings.print_agents at once); a line per
    step's state at the end. TEXT is the workflow's {instructions}.

    With --dry-run, show its plan instead: its steps by level, each step's agent and answer
    format, and what feeds what, and the same as a Mermaid graph.
    """
    from start.base import fs
    from start.compose import workflow as plans
    from start.config import load as config_load
    from start.config import params, workflows

    options = get_options()
    config = (
        config_load.load(options.workdir, use_project=not options.no_project, strict=True)
        if dry_run
        else _trusted_config()
    )
    read = workflows.read(config)
    if any(problem.is_error for problem in read.problems):
        raise ConfigError(read.problems)
    found = read.workflows.get(name)
    if found is None:
        from start.config import finding  # only on this error path

        described = ((flow.name, flow.description) for flow in read.workflows.values())
        meaning = finding.meant(described, name)
        raise UnknownNameError("workflow", name, read.workflows, meaning=meaning)
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
    if not dry_run:
        chosen = {p.name: given.get(p.name, p.default or "") for p in found.params}
        inputs = plans.Inputs(" ".join(instructions), chosen)
        return _run(found, read.tables[name], inputs, config)
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


@workflow.command(
    examples=[("Go on with the run item-4 stopped", "start workflow resume 4")],
    epilog=_EXITS,
)
@click.argument("id_", metavar="ID")
@common_options(DIRECTORY, NO_PROJECT)
def resume(id_: str) -> int:
    """Continue the workflow run of parent item ID: its failed and stopped steps go back to
    pending and run when ready; a completed (or skipped) step never runs again. The run follows
    the definition it began with, kept on its parent item, not the config's."""
    from start import board
    from start.board import workflow as flows
    from start.runs import rules

    options = get_options()
    config = _trusted_config()
    scope = rules.Scope(options.workdir, not options.no_project, rules.depth())
    flow = flows.Run(scope, board.item_id(board.number(id_)), config, _holder())
    flow.resume()
    return _follow(flow, config)


@workflow.command(
    examples=[
        ("The steps of the run item-4 and their states", "start workflow show 4"),
        ("Each step's answer and value as data", "start workflow show 4 --json"),
    ],
)
@click.argument("id_", metavar="ID")
@common_options(DIRECTORY, NO_PROJECT)
def show(id_: str) -> int:
    """Show the workflow run of parent item ID: each step's item and state (succeeded, failed,
    out-of-format, skipped or stopped, with the reason; pending or in_progress while it has
    not finished), and with --json its answer, value, agent and history id. Runs nothing."""
    from start import board
    from start.board import workflow as flows
    from start.config import load as config_load
    from start.runs import rules

    options = get_options()
    config = config_load.load(options.workdir, use_project=not options.no_project, strict=True)
    scope = rules.Scope(options.workdir, not options.no_project, rules.depth())
    flow = flows.Run(scope, board.item_id(board.number(id_)), config, _holder())
    _states(flow, flow.states(), None)
    return 0


def _holder() -> Any:
    from start import board

    return board.person(board.login())


def _trusted_config() -> Any:
    """The config, after asking on a terminal to trust the project when it has to be: the
    steps compose through the pipeline, which refuses an untrusted project (exit 5)."""
    from start.cli.run import _trusted
    from start.compose import pipeline
    from start.config.load import load

    options = get_options()

    def checked() -> Any:
        config = load(options.workdir, use_project=not options.no_project, strict=True)
        pipeline.grant_for(config)
        return config

    return _trusted(checked)


def _run(found: Workflow, table: Any, inputs: Any, config: Any) -> int:
    """Begin a run of `found` on the board and follow it to its end."""
    from start.board import workflow as flows
    from start.runs import rules

    not_built = [
        (step.name, field)
        for step in found.steps
        for field, given in (("output", step.output),)
        if given is not None
    ]
    if not_built:
        step, field = not_built[0]
        raise UsageError(
            f"step '{step}' of workflow '{found.name}' sets {field}, which a run does not carry "
            f'out yet (docs/workflows-design.md, "What remains"); \'start workflow run '
            f"{found.name} --dry-run' shows its plan"
        )
    options = get_options()
    scope = rules.Scope(options.workdir, not options.no_project, rules.depth())
    parent = flows.begin(scope, found, table, inputs, _holder())
    return _follow(flows.Run(scope, parent, config, _holder()), config)


def _follow(flow: Any, config: Any) -> int:
    """Run what is ready of `flow` to the end; show every step's state; the exit code."""
    states = flow.run(config.settings.print_agents, None)
    code: int = flow.finish(states)
    _states(flow, states, code)
    return code


def _states(flow: Any, states: Any, code: int | None) -> None:
    """A run's steps, each with its state (and why), as lines or as one JSON record."""
    if get_options().json:
        record: dict[str, Any] = {"id": flow.parent, "workflow": flow.name}
        if code is not None:
            record["exit_code"] = code
        record["steps"] = [
            {
                "name": state.name,
                "item": state.item,
                "state": state.result.state if state.result else state.status,
                "answer": state.result.answer if state.result else None,
                "value": state.result.value if state.result else None,
                "reason": state.result.reason if state.result else None,
                "agent": state.agent,
                "history": state.history,
            }
            for state in states
        ]
        console.print_json(record)
        return
    out = printer("stdout")
    out.line(Styled(f"workflow {flow.name}: {flow.parent}", "bold"))
    for state in states:
        shown = state.result.state if state.result else state.status
        why = f": {state.result.reason}" if state.result and state.result.reason else ""
        out.line(f"  {state.name} ({state.item}) {shown}{why}")


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
