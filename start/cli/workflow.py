"""`start workflow run NAME [TEXT]`: a workflow run on the board (start.board.workflow), or
with --dry-run its plan, as text and as a Mermaid graph; `start workflow resume ID`.

The steps run as board items through the board's runner and the one path of an ask
(docs/workflows-design.md); this module reads the options and shows what came of them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Final

import click

from start.base.errors import ConfigError, UnknownNameError, UsageError, suggest
from start.cli import workflow_index as index
from start.cli.commands import group
from start.cli.inputs import count
from start.cli.options import DIRECTORY, NO_PROJECT, common_options, completer, printer
from start.cli.state import get_options
from start.config import workflow_tables
from start.ui import console
from start.ui.console import Styled

if TYPE_CHECKING:
    from start.compose.workflow import Shown
    from start.config.model import Config
    from start.config.workflows import Workflow


# How many runs a listing shows at most, the latest changed first.
RUNS_SHOWN: Final = 20

_LIMIT = click.option(
    "--limit",
    type=count(0),
    default=RUNS_SHOWN,
    show_default=True,
    metavar="N",
    help="At most N runs, the latest changed first (0: no limit).",
)

# A run's exit codes, as --print uses them (docs/workflows-design.md, "Resume and failure").
_EXITS = (
    "Exit codes: 0 every step succeeded or was skipped; 1 a step failed; 2 usage; 3 the\n"
    "config is invalid; 5 the project is not trusted; 65 a step answered out of format\n"
    "(and none failed); 130 Ctrl-C (the running steps stop, their items pending again:\n"
    "start workflow resume ID goes on).\n\n"
    "Docs: start help workflows (the design: start help workflows-design)"
)


# `start help workflow` is this command's help (every command's is): so it teaches writing
# and running one, with the example of docs/workflows-design.md.
_GUIDE = """\
A workflow, in a config file (start config validate checks it):

  [workflows.fix-severe]
  description = "Triage a report; if it is severe, plan a fix and review it"

  [workflows.fix-severe.steps.triage]
  task = "triage"                  # a task of the config, or prompt = "..."
  instructions = "{instructions}"  # TEXT of: start workflow run fix-severe TEXT

  [workflows.fix-severe.steps.plan]
  prompt = "Plan a fix for: {steps.triage.answer}"
  when = "steps.triage.value.severity == 'high'"
  agent = "claude"

  [workflows.fix-severe.steps.review]
  prompt = "Review {item} against the plan: {steps.plan.answer}"
  for_each = "steps.triage.value.files"
  retries = 1

Each step is one ask: a task (with instructions and params) or a prompt, and its
agent, model, role, permissions, timeout and retries. {EXPR} in a prompt, the
instructions or a parameter is a JMESPath expression over: instructions, each
parameter (params.NAME = { default = ... }; -p NAME=VALUE), steps.STEP.answer,
steps.STEP.value (the checked JSON of a step whose task has an output format)
and, in a for_each step, item. A step runs once the steps it reads, and those
in its needs = ["STEP", ...], have finished; when is a condition (false: the
step and what reads it are skipped); for_each runs it once per element of a
list, its answers collected in order. A step that fails stops what depends on
it, with the reason; the rest still runs. Nothing is retried but by retries.

A run is an item on this project's board with an item per step: start board run
and start board claim --next leave those to the run; start workflow resume ID
goes on with a run that stopped, and never runs a completed step again.
"""


@group(
    examples=[
        ("The config's workflows, and the latest runs", "start workflow"),
        (
            "Run workflow fix-severe on a report",
            'start workflow run fix-severe "the login page times out"',
        ),
        (
            "The plan of workflow fix-severe: its steps, agents and levels",
            'start workflow run fix-severe "the login page times out" --dry-run',
        ),
        ("Go on with the run item-4 after Ctrl-C", "start workflow resume 4"),
    ],
    epilog=_GUIDE + "\n" + _EXITS,
    invoke_without_command=True,
)
@_LIMIT
@common_options(DIRECTORY, NO_PROJECT, verbose="Show the file each workflow is defined in too.")
@click.pass_context
def workflow(ctx: click.Context, limit: int) -> int:
    """Run and plan workflows: steps of asks on the board, bound by JMESPath expressions;
    without a command, list the config's workflows and the runs on this project's board."""
    if ctx.invoked_subcommand is not None:
        return 0
    return _list(limit)


@workflow.command(
    "list",
    examples=[
        ("The workflows, and the latest runs on this project's board", "start workflow list"),
        ("Every run, as data for a script", "start workflow list --limit 0 --json"),
    ],
)
@_LIMIT
@common_options(DIRECTORY, NO_PROJECT, verbose="Show the file each workflow is defined in too.")
def list_(limit: int) -> int:
    """List the config's workflows (name, steps, description, layer) and the workflow runs on
    this project's board, the latest changed first: each run's state and how many of its steps
    completed (skipped ones too) and failed (stopped ones too). Checks and runs nothing."""
    return _list(limit)


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
@click.argument("name", shell_complete=completer("complete_workflows"))
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
    _plan(out.line, steps, graph)
    return 0


def _plan(line: Any, steps: tuple[Shown, ...], graph: str) -> None:
    """The plan's lines, each given to `line`: each level's steps, each with what it asks and
    what it reads, then the Mermaid graph in a fenced block."""
    level = -1
    for item in steps:
        if item.planned.level != level:
            level = item.planned.level
            line("")
            line(Styled(f"level {level}", "bold"))
        line(f"  {item.planned.step.name}: {_summary(item)}")
        for before, flows in item.reads.items():
            line(f"    reads {before}: {', '.join(flows) if flows else 'needs it done'}")
    line("")
    line("```mermaid")
    for text in graph.splitlines():  # a line each: the console shows a newline as \n
        line(text)
    line("```")


def show_workflow(name: str, config: Config, *, no_pager: bool) -> int:
    """`start show workflow NAME`: where it is defined, its parameters and its plan (as the dry
    run shows it, with no inputs); --json: the dry run's data, with its layer and file."""
    from start.compose import workflow as plans
    from start.config import workflows
    from start.config.show import toml_value
    from start.ui import display

    options = get_options()
    read = workflows.read(config)
    if any(problem.is_error for problem in read.problems):
        raise ConfigError(read.problems)
    found = read.workflows.get(name)
    if found is None:
        raise UnknownNameError("workflow", name, read.workflows)
    steps = plans.shown(found, config)
    graph = plans.mermaid(steps)
    if options.json:
        data = _data(found, steps, graph, "", {})
        del data["instructions"]
        data["params"] = [
            {"name": p.name, "default": p.default, "description": p.description}
            for p in found.params
        ]
        data["layer"], data["file"] = found.origin.layer, found.origin.path
        data["timeout"] = found.timeout
        console.print_json(data)
        return 0
    page = display.Page()
    page.line(Styled(f"workflow {found.name}", "bold"))
    rows = [("defined in", str(found.origin))]
    if found.description:
        rows.append(("description", found.description))
    if found.timeout is not None:
        rows.append(("timeout", f"{found.timeout} s"))
    rows.append(("runs", f"start workflow run {found.name} [TEXT]"))
    for label, value in rows:
        page.row([label, value], [12], indent=2)
    if found.params:
        page.blank()
        page.line(Styled("parameters", "bold"))
        for param in found.params:
            given = "required" if param.default is None else f"default {toml_value(param.default)}"
            described = f": {param.description}" if param.description else ""
            page.line(f"  {param.name} ({given}){described}")
    _plan(page.line, steps, graph)
    page.show(no_color=options.no_color, pager=not no_pager)
    return 0


@workflow.command(
    examples=[("Go on with the run item-4 stopped", "start workflow resume 4")],
    epilog=_EXITS,
)
@click.argument("id_", metavar="ID", shell_complete=completer("complete_workflow_runs"))
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
    flow = flows.Run(scope, board.spelled(id_), config, _holder())
    flow.resume()
    return _follow(flow, config)


@workflow.command(
    examples=[
        ("The steps of the run item-4 and their states", "start workflow show 4"),
        ("Each step's answer and value as data", "start workflow show 4 --json"),
    ],
)
@click.argument("id_", metavar="ID", shell_complete=completer("complete_workflow_runs"))
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
    flow = flows.Run(scope, board.spelled(id_), config, _holder())
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

    options = get_options()
    scope = rules.Scope(options.workdir, not options.no_project, rules.depth())
    parent = flows.begin(scope, found, table, inputs, _holder())
    return _follow(flows.Run(scope, parent, config, _holder()), config)


def _follow(flow: Any, config: Any) -> int:
    """Run what is ready of `flow` to the end; show every step's state; the exit code."""
    flow.warned = lambda message: console.err(f"start: warning: {message}")
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
    from start.config.workflows import Files

    step = item.planned.step
    parts = [item.asks, f"agent {item.agent or '(the default)'}", f"output {item.output}"]
    if step.when is not None:
        parts.append(f"when {step.when}")
    if isinstance(step.for_each, str):
        parts.append(f"for each of {step.for_each}")
    elif isinstance(step.for_each, Files):
        parts.append(f"for each file of {step.for_each.pattern}")
    elif step.for_each is not None:
        parts.append(f"for each of {', '.join(step.for_each)}")
    if step.retries:
        parts.append(f"retries {step.retries}")
    return "; ".join(parts)


def _for_each(given: Any) -> Any:
    """A step's for_each as data: the expression, the list, or { "files": GLOB }."""
    from start.config.workflows import Files

    if isinstance(given, Files):
        return {"files": given.pattern}
    return list(given) if isinstance(given, tuple) else given


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
                "for_each": _for_each(item.planned.step.for_each),
                "retries": item.planned.step.retries,
                "reads": {before: list(flows) for before, flows in item.reads.items()},
                "feeds": list(item.planned.downstream),
            }
            for item in steps
        ],
        "mermaid": graph,
    }


# --- the listing: read by start.cli.workflow_index (and so without jmespath) ------------------


def config_show(config: Config, name: str | None, *, no_pager: bool) -> int:
    """`start config show workflows [NAME]`: the workflows' tables, with where each is from."""
    from start.ui import display

    options = get_options()
    known = workflow_tables.tables(config)
    if name is not None and name not in known:
        raise UnknownNameError("workflow", name, known)
    if options.json:
        console.print_json({"workflows": index.tables_data(config, name)})
        return 0
    page = display.Page()
    page.syntax(index.tables_toml(config, name) or "# no workflows", "toml")
    page.show(no_color=options.no_color, pager=not no_pager)
    return 0


def _list(limit: int) -> int:
    """`start workflow` and `start workflow list`: the config's workflows, then the runs."""
    from start.config.load import load

    options = get_options()
    config = load(options.workdir, use_project=not options.no_project, strict=True)
    workflows = sorted(index.declared(config).values(), key=lambda found: found.name)
    listed, total = index.runs(options.workdir, limit or None)
    if options.json:
        console.print_json(
            {
                "workflows": [
                    dict(zip(index.Declared._fields, found, strict=True)) for found in workflows
                ],
                "runs": [dict(zip(index.Listed._fields, run, strict=True)) for run in listed],
            }
        )
        return 0
    if not workflows and not listed:
        console.err(
            "No workflows are defined. Add a [workflows.NAME] table with its steps "
            "(start help workflow)."
        )
        return 0
    from start.ui import display
    from start.ui.console import local_time

    page = display.Page()
    if workflows:
        headers = ["workflow", "steps", "description", "layer"]
        rows = [
            [found.name, str(found.steps), found.description or "", found.layer]
            for found in workflows
        ]
        if options.verbose:
            headers.append("file")
            for row, found in zip(rows, workflows, strict=True):
                row.append(found.file)
        page.table(headers, rows)
    if listed:
        if workflows:
            page.blank()
        page.table(
            ["run", "workflow", "state", "done", "failed", "steps", "changed", "instructions"],
            [
                [
                    run.id,
                    run.workflow,
                    run.state,
                    str(run.done),
                    str(run.failed),
                    str(run.steps),
                    local_time(run.updated),
                    run.instructions,
                ]
                for run in listed
            ],
            cut=(7,),
            width=display.table_width(sys.stdout),
        )
    page.show(no_color=options.no_color)
    if total > len(listed):
        console.err(
            f"start: {total - len(listed)} more run(s); start workflow --limit 0 lists them all"
        )
    return 0
