"""`start mcp`'s workflow tools: the user's workflows (docs/workflows-design.md) for the agent on
the other end, under the ask rules of the asking tools (start.runs.rules).

    list_workflows   the workflows offered: each with its parameters and its steps, and the
                     level each step runs at for this session
    run_workflow     a run on the board, as `start workflow run NAME TEXT -p KEY=VALUE --json`
                     makes it, followed to its end: every step's state, answer and value
    workflow_status  a run's steps as they are now, as `start workflow show ID --json`

A workflow is the user's (their config), so its steps run as they wrote them; what the caller
shapes is its TEXT and its parameters' values, which fill the steps' templates and nothing
else: never an option, a command or a field of an ask. What the session may do holds its runs:
- offered only where the asking tools are (rules.offered: below settings.mcp_depth, some agent
  askable), so that agents cannot run workflows that ask agents that run workflows in a loop; a
  step's agent is one the asking tools may ask (settings.mcp_agents), or the run is refused;
- its items are the session's (board.session, at settings.mcp_permissions), so the board's cap
  (board.cap) holds every step's run at that level at most: a step (or its task) asking for
  more runs at the session's level, as ask_agent runs a task whose own level is above it;
- an untrusted project's `.start/` is left out (rules.view), its workflows and tasks too.

Nothing here imports the MCP SDK before a tool is listed or called.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from start.base import inputs
from start.base.errors import StartError, UnknownNameError, suggest
from start.base.record import Record
from start.config import schema
from start.mcp import tools
from start.runs import rules
from start.runs.rules import RequestError, Scope

if TYPE_CHECKING:
    import mcp.types as types

    from start.board import Holder
    from start.board.workflow import Run, StepState
    from start.compose.workflow import Inputs
    from start.config.model import Config
    from start.config.workflows import Workflow
    from start.mcp.owners import Commands

LIST_WORKFLOWS: Final = "list_workflows"
RUN_WORKFLOW: Final = "run_workflow"
WORKFLOW_STATUS: Final = "workflow_status"
NAMES: Final = (LIST_WORKFLOWS, RUN_WORKFLOW, WORKFLOW_STATUS)
# The most characters of a parameter's value: a value fills a template, it is not a document
# (the text is: inputs.TEXT_LIMIT).
PARAM_CHARACTERS: Final = 64 << 10
# The most parameters a call gives: more than any workflow declares is refused anyway.
PARAMS_MOST: Final = 64
# Each answer (and reason) in a run's record is cut to so many characters, as board_tasks_get
# cuts a comment: the whole is on the step's item (board_tasks_get) and in `start log show ID`.
ANSWER_CHARACTERS: Final = 4000
READ_ONLY: Final = schema.LEVELS[0]


class Offer(Record):
    """What a session may run now: the workflows offered (those with a description), their
    tables as read, the agents the asking tools may ask, and the config they were read from."""

    config: Config
    use_project: bool
    workflows: Mapping[str, Workflow]
    tables: Mapping[str, Mapping[str, Any]]
    agents: tuple[str, ...]


class Prepared(Record):
    """A checked run_workflow call: what `start.board.workflow.begin` takes."""

    offer: Offer
    workflow: Workflow
    inputs: Inputs


def offer(scope: Scope) -> Offer | None:
    """The workflows this session may run, or None when it may run none (no asking tools:
    too deep, or no agent; no workflow with a description). Raises ConfigError for a broken
    config, RequestError for workflows that do not check (their first error)."""
    from start.config import workflows

    seen = rules.view(scope)
    agents, why = rules.offered(scope, seen.config)
    if why is not None:
        return None
    read = workflows.read(seen.config)
    errors = [problem for problem in read.problems if problem.is_error]
    if errors:
        raise RequestError(f"the workflows cannot be run: {errors[0]}")
    found = {name: flow for name, flow in read.workflows.items() if flow.description}
    if not found:
        return None
    return Offer(seen.config, seen.use_project, found, read.tables, tuple(agents))


def offered(scope: Scope) -> frozenset[str]:
    """The names of the workflows list_workflows offers now; none when it offers none or
    cannot (a broken config or workflows: list_workflows says why)."""
    try:
        found = offer(scope)
    except StartError:
        return frozenset()
    return frozenset(found.workflows) if found is not None else frozenset()


def instructions(scope: Scope) -> str:
    """What the server's instructions say of the workflow tools ("" when none is offered)."""
    try:
        found = offer(scope)
    except RequestError as error:
        return f" No workflow tools: {error}."
    except StartError:  # library.instructions already says why the config cannot be loaded
        return ""
    if found is None:
        return ""
    level, _ = rules.allowed(found.config)
    return (
        " list_workflows lists the user's workflows (steps of asks, each run headless by an agent "
        "as a board item); run_workflow(name, text, params) runs one to its end and returns each "
        "step's state and answer; workflow_status(id) reads a run again. Their steps run at "
        f"'{level}' at most (settings.mcp_permissions). Workflows: {', '.join(found.workflows)}."
    )


# --- the schemas ------------------------------------------------------------------------------


def list_input() -> dict[str, Any]:
    """list_workflows' input schema: no arguments."""
    return _object({})


def run_input(found: Offer) -> dict[str, Any]:
    """run_workflow's input schema, rebuilt on every request from the workflows offered: their
    names, and every parameter any of them declares (which takes which: `call`)."""
    params: dict[str, Any] = {}
    for flow in found.workflows.values():
        for param in flow.params:
            said = param.description or f"The workflow {flow.name}'s parameter {param.name}"
            params.setdefault(
                param.name,
                {"type": "string", "maxLength": PARAM_CHARACTERS, "description": said},
            )
    properties = {
        "name": {
            "type": "string",
            "enum": list(found.workflows),
            "description": "The workflow to run: one of the names list_workflows returns.",
        },
        "text": {
            **inputs.TEXT_SCHEMA,
            "description": "The workflow's {instructions}: what it is to work on.",
        },
        "params": {
            "type": "object",
            "properties": params,
            "additionalProperties": False,
            "maxProperties": PARAMS_MOST,
            "description": "Values of the workflow's parameters, by name (list_workflows says "
            "which it takes and which it needs).",
        },
    }
    return _object(properties, "name")


def status_input() -> dict[str, Any]:
    """workflow_status' input schema."""
    run = {**inputs.ITEM_ID_SCHEMA, "description": "The run's id, as run_workflow returned it."}
    return _object({"id": run}, "id")


_STEP_RECORD: Final = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "item": {"type": "string"},
        "state": {"type": "string"},
        "answer": {},
        "value": {},
        "reason": {"type": ["string", "null"]},
        "agent": {"type": ["string", "null"]},
        "history": {"type": ["integer", "null"]},
    },
    "required": ["name", "item", "state", "answer", "value", "reason", "agent", "history"],
}
RUN_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "workflow": {"type": "string"},
        "exit_code": {"type": "integer"},
        "steps": {"type": "array", "items": _STEP_RECORD},
    },
    "required": ["id", "workflow", "steps"],
}
LIST_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "permissions": {"type": "string"},
        "workflows": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["permissions", "workflows"],
}


def listed(found: Offer) -> list[types.Tool]:
    """list_workflows, run_workflow and workflow_status, for the workflows offered."""
    import mcp.types as types

    return [
        types.Tool(
            name=LIST_WORKFLOWS,
            description=(
                "List the user's start workflows: each with its description, its parameters "
                "and its steps (what each asks, its agent, and the level it runs at). Run one "
                "with run_workflow."
            ),
            input_schema=list_input(),
            output_schema=LIST_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name=RUN_WORKFLOW,
            description=(
                "Run one of the user's workflows on the project's board, as `start workflow run "
                "NAME TEXT --json` does: an item per step, each run headless by its agent once "
                "the steps it reads have finished. Returns the run: each step's state "
                "(succeeded, failed, out-of-format, skipped, stopped), answer, checked value, "
                "agent and history id, and the exit code (0 all succeeded, 1 a step failed, 65 "
                "one answered out of format). Runs take minutes."
            ),
            input_schema=run_input(found),
            output_schema=RUN_SCHEMA,
        ),
        types.Tool(
            name=WORKFLOW_STATUS,
            description=(
                "The steps of a workflow run as they are now (run_workflow's id): each step's "
                "state, answer and value, as `start workflow show ID --json`. Runs nothing."
            ),
            input_schema=status_input(),
            output_schema=RUN_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
    ]


# --- the calls --------------------------------------------------------------------------------


def listing(scope: Scope, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A list_workflows call: each workflow offered, with its parameters and its steps."""
    tools.check(LIST_WORKFLOWS, list_input(), tools.given(arguments))
    found = _offered(scope)
    most, _ = rules.allowed(found.config)
    return {
        "permissions": most,
        "workflows": [_shown(flow, found, most) for flow in found.workflows.values()],
    }


def call(scope: Scope, arguments: Mapping[str, Any]) -> Prepared:
    """A run_workflow call checked: its workflow, and its inputs (TEXT, and each parameter's
    value or default). RequestError naming what is wrong: a workflow not offered, a parameter it
    does not take or needs, a step whose agent may not be asked."""
    from start.base import fs
    from start.compose import workflow as plans

    found = _offered(scope)
    given = tools.given(arguments)
    tools.check(RUN_WORKFLOW, run_input(found), given, explain=_why_not(found))
    flow = found.workflows[given["name"]]
    values: dict[str, str] = dict(given.get("params") or {})
    declared = [param.name for param in flow.params]
    unknown = [name for name in values if name not in declared]
    if unknown:
        close = suggest(unknown[0], declared)
        listing = ", ".join(declared) if declared else "none"
        hint = f"; did you mean '{close}'?" if close else f" (its parameters: {listing})"
        raise RequestError(f"workflow '{flow.name}' has no parameter '{unknown[0]}'{hint}")
    missing = [p.name for p in flow.params if p.default is None and p.name not in values]
    if missing:
        raise RequestError(f"workflow '{flow.name}' needs the parameter '{missing[0]}'")
    _runnable(flow, found)
    chosen = {
        p.name: fs.arg_text(values[p.name]) if p.name in values else (p.default or "")
        for p in flow.params
    }
    text = fs.arg_text(given.get("text") or "")
    return Prepared(found, flow, plans.Inputs(text, chosen))


def begin(scope: Scope, prepared: Prepared, by: Holder) -> Run:
    """The run's items on the board, made by the session `by`, and the run read from them."""
    from start.board import workflow as flows

    flow = prepared.workflow
    here = _scope(scope, prepared.offer)
    table = prepared.offer.tables[flow.name]
    parent = flows.begin(here, flow, table, prepared.inputs, by)
    return flows.Run(here, parent, prepared.offer.config, by)


def follow(run: Run, config: Config) -> dict[str, Any]:
    """Run the ready steps of `run` to its end, through the board's runner and the one path of
    an ask (start.board.workflow.Run.run); the run's record with its exit code."""
    states = run.run(config.settings.print_agents, None)
    return record(run, states, run.finish(states))


def status(scope: Scope, arguments: Mapping[str, Any], by: Holder) -> dict[str, Any]:
    """A workflow_status call: the run's steps as they are now; runs nothing."""
    from start import board
    from start.board import workflow as flows

    given = tools.given(arguments)
    tools.check(WORKFLOW_STATUS, status_input(), given)
    seen = rules.view(scope)
    here = Scope(scope.workdir, seen.use_project, scope.depth)
    try:
        run = flows.Run(here, board.spelled(given["id"]), seen.config, by)
    except flows.BrokenRunError as error:
        raise RequestError(str(error)) from None
    return record(run, run.states(), None)


def record(run: Run, states: Sequence[StepState], code: int | None) -> dict[str, Any]:
    """The run as `start workflow run --json` gives it (`exit_code` only once it ended), each
    answer and reason cut to ANSWER_CHARACTERS, as valid Unicode."""
    found: dict[str, Any] = {"id": run.parent, "workflow": run.name}
    if code is not None:
        found["exit_code"] = code
    found["steps"] = [
        {
            "name": state.name,
            "item": state.item,
            "state": state.result.state if state.result else state.status,
            "answer": _cut(state.result.answer) if state.result else None,
            "value": state.result.value if state.result else None,
            "reason": _cut(state.result.reason) if state.result else None,
            "agent": state.agent,
            "history": state.history,
        }
        for state in states
    ]
    data: dict[str, Any] = inputs.readable(found, inputs.METADATA_DEPTH + 4)
    return data


def summary(data: Mapping[str, Any]) -> str:
    """The record as text: a line per step, as `start workflow run` prints it, then the JSON."""
    lines = [f"workflow {data['workflow']}: {data['id']}"]
    for step in data["steps"]:
        why = f": {step['reason']}" if step["reason"] else ""
        lines.append(f"  {step['name']} ({step['item']}) {step['state']}{why}")
    return "\n".join(lines) + "\n\n" + json.dumps(data, ensure_ascii=False)


# --- the rules --------------------------------------------------------------------------------


def _offered(scope: Scope) -> Offer:
    found = offer(scope)
    if found is not None:
        return found
    seen = rules.view(scope)
    why = rules.closed(scope, seen.config) or rules.offered(scope, seen.config)[1]
    if why is not None:
        raise RequestError(why.replace("the asking tools are", "the workflow tools are"))
    raise RequestError(
        "no workflow is offered: none has a description ([workflows.NAME] description = ...)"
    )


def _why_not(found: Offer) -> tools.Explain:
    """Why a name is not a workflow offered: unknown (did you mean), or without a
    description."""

    def explain(argument: str, value: object) -> str | None:
        if argument != "name" or not isinstance(value, str):
            return None
        from start.config import workflows

        every = workflows.read(found.config).workflows
        if value in every:
            return (
                f"workflow '{value}' is not offered: it has no description; offered: "
                f"{', '.join(found.workflows)}"
            )
        return str(UnknownNameError("workflow", value, list(found.workflows)))

    return explain


def _runnable(flow: Workflow, found: Offer) -> None:
    """RequestError for a step a session may not run: its agent is not one the asking tools
    may ask."""
    from start.compose import workflow as plans

    config = found.config
    for shown in plans.shown(flow, config):
        step = shown.planned.step
        where = f"step '{step.name}' of workflow '{flow.name}'"
        if shown.agent is None:
            if config.settings.mcp_agents:
                raise RequestError(
                    f"{where} names no agent, and settings.mcp_agents limits the agents a "
                    "session may ask: the user can give the step (or its task) an agent"
                )
            continue
        if shown.agent not in found.agents:
            said = rules.not_askable(config, shown.agent, found.agents)
            raise RequestError(f"{where} cannot run: {said}")


def _shown(flow: Workflow, offered: Offer, most: str) -> dict[str, Any]:
    """A workflow as list_workflows gives it: with `runnable`, and when it is not, `why_not`
    (run_workflow's refusal), so that a client need not call it to learn."""
    from start.compose import workflow as plans

    config = offered.config
    steps = []
    for shown in plans.shown(flow, config):
        step = shown.planned.step
        level, why = _level(step.permissions, step.task, config, most)
        steps.append(
            {
                "name": step.name,
                "asks": shown.asks,
                "agent": shown.agent,
                "output": shown.output,
                "needs": list(shown.reads),
                "when": step.when,
                "for_each": _each(step.for_each),
                "permissions": level,
                "permissions_from": why,
            }
        )
    params = [
        {
            "name": param.name,
            "description": param.description,
            "default": param.default,
            "required": param.default is None,
        }
        for param in flow.params
    ]
    found = {"name": flow.name, "description": flow.description, "params": params}
    try:
        _runnable(flow, offered)
        can: dict[str, Any] = {"runnable": True}
    except RequestError as error:
        can = {"runnable": False, "why_not": str(error)}
    data: dict[str, Any] = inputs.readable({**found, **can, "steps": steps})
    return data


def _each(for_each: Any) -> Any:
    """A step's `for_each` as data: its expression, its list, or its files' pattern."""
    from start.config.workflows import Files

    if isinstance(for_each, Files):
        return {"files": for_each.pattern}
    return list(for_each) if isinstance(for_each, tuple) else for_each


def _level(asked: str | None, task: str | None, config: Config, most: str) -> tuple[str, str]:
    """The level a step runs at for a session, and why: the step's `permissions`, else its
    task's, else read-only, never above `most` (the board's cap, start.compose.pipeline.level)."""
    found = config.tasks.get(task) if task is not None else None
    if asked is not None:
        level, why = asked, "the step's permissions"
    elif found is not None and found.permissions is not None:
        level, why = found.permissions, f"task {found.name}'s permissions"
    else:
        level, why = READ_ONLY, "the default"
    if schema.LEVELS.index(level) > schema.LEVELS.index(most):
        return most, f"settings.mcp_permissions (capped from '{level}', {why})"
    return level, why


def _scope(scope: Scope, found: Offer) -> Scope:
    """Where the run's steps run: the server's directory and depth (their runs' environment is
    marked one deeper), the project's `.start/` only when the session sees it."""
    return Scope(scope.workdir, found.use_project, scope.depth)


def _cut(value: Any) -> Any:
    """An answer or reason (a list of them for a for_each step) cut to ANSWER_CHARACTERS."""
    if isinstance(value, list):
        return [_cut(one) for one in value]
    if isinstance(value, str) and len(value) > ANSWER_CHARACTERS:
        more = len(value) - ANSWER_CHARACTERS
        return f"{value[:ANSWER_CHARACTERS]}… [{more:,} more characters]"
    return value


def _object(properties: Mapping[str, Any], *required: str) -> dict[str, Any]:
    found: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if required:
        found["required"] = list(required)
    found["additionalProperties"] = False
    return found


# --- the server's side ------------------------------------------------------------------------

# Seconds between progress notifications while a run goes on.
PROGRESS_EVERY: Final = 2.0


async def call_tool(
    ctx: Any, scope: Scope, commands: Commands, name: str, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    """A call of one of NAMES: its result, or a result with isError saying why it was refused
    or failed. run_workflow waits for the run's end, telling the client the run's id and time
    meanwhile (when it asked for progress)."""
    from start import board
    from start.mcp import board as boardtools
    from start.mcp.owners import off_loop

    client = boardtools.client_name(ctx)
    try:
        if name == LIST_WORKFLOWS:
            data = await off_loop(listing, scope, arguments)
            return _result(json.dumps(data, ensure_ascii=False), data)
        if name == WORKFLOW_STATUS:
            data = await off_loop(status, scope, arguments, board.session(client, READ_ONLY))
            return _result(summary(data), data)
        prepared = await off_loop(call, scope, arguments)
        by = board.session(client, rules.allowed(prepared.offer.config)[0])
        run = await off_loop(begin, scope, prepared, by)
    except StartError as error:
        return tools.failed(inputs.valid(str(error)))
    config = prepared.offer.config
    try:
        data = await _telling(ctx, run, commands.run(lambda owner: follow(run, config)))
    except StartError as error:
        number = run.parent.rsplit("-", 1)[-1]
        return tools.failed(
            inputs.valid(
                f"{error} (the run is {run.parent}: workflow_status reads its steps, and "
                f"`start workflow resume {number}` goes on with it)"
            )
        )
    return _result(summary(data), data, is_error=data["exit_code"] != 0)


async def _telling(ctx: Any, run: Run, work: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """`await work`, telling the client every PROGRESS_EVERY seconds the run's id, its time and
    each step's state (`workflow run item-1 (4 s): read succeeded, sum in_progress`); the SDK
    sends nothing when the request asked for no progress."""
    import time

    import anyio

    from start.mcp.owners import beside, off_loop

    began = time.monotonic()

    async def tell() -> None:
        told = 0.0
        while True:
            try:
                states = await off_loop(run.states)
            except StartError:  # the board is busy or gone: say the time alone
                states = ()
            elapsed = time.monotonic() - began
            told = max(round(elapsed, 1), round(told + 0.1, 1))  # it must grow
            said = ", ".join(
                f"{state.name} {state.result.state if state.result else state.status}"
                for state in states
            )
            message = f"workflow run {run.parent} ({int(elapsed)} s)" + (
                f": {said}" if said else ""
            )
            await ctx.session.report_progress(told, message=inputs.valid(message))
            await anyio.sleep(PROGRESS_EVERY)

    return await beside(work, tell)


def _result(text: str, data: dict[str, Any], *, is_error: bool = False) -> types.CallToolResult:
    import mcp.types as types

    return types.CallToolResult(
        content=[tools.text(inputs.valid(text))], structured_content=data, is_error=is_error
    )
