"""A workflow's plan, and what its steps do given the results that have arrived: pure.

`plan` orders a workflow's steps by what feeds what (docs/workflows-design.md, "The plan");
`decide` says whether a step runs (and for which elements), is skipped or is stopped, from the
workflow's inputs and its upstream steps' results; `fill` fills a step's templates. Nothing
here runs an agent, touches the board or reads a file: the commands that run workflows do, and
call these. jmespath is imported inside the functions that evaluate an expression.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from start.base.errors import ExitCode
from start.base.record import Record
from start.config.model import Config
from start.config.workflows import ITEM, STEPS, Binding, Step, Workflow, bindings, reads

# A step's states. A result that arrived is succeeded, failed or out of format (an answer that
# is not JSON, or does not match the schema); skipped: its `when` was false, or an upstream step
# was skipped; stopped: an upstream step failed or answered out of format.
SUCCEEDED, FAILED, OUT_OF_FORMAT, SKIPPED, STOPPED = (
    "succeeded",
    "failed",
    "out-of-format",
    "skipped",
    "stopped",
)
FINISHED: Final = frozenset({SUCCEEDED, FAILED, OUT_OF_FORMAT, SKIPPED, STOPPED})
# What `decide` says of a step.
RUN, SKIP, STOP, WAIT = "run", "skip", "stop", "wait"


class Planned(Record):
    """A step in the plan: its level (0: no upstream; else one more than its deepest upstream
    step, so steps of a level may run at once) and the steps it feeds."""

    step: Step
    level: int
    downstream: tuple[str, ...] = ()


def plan(workflow: Workflow) -> tuple[Planned, ...]:
    """The steps by level, and in a level by their order in the file: so each comes after
    every step upstream of it. The workflow is acyclic (validated)."""
    position = {step.name: index for index, step in enumerate(workflow.steps)}
    waiting = {step.name: len(step.upstream) for step in workflow.steps}
    feeds: dict[str, list[str]] = {step.name: [] for step in workflow.steps}
    for step in workflow.steps:
        for before in step.upstream:
            feeds[before].append(step.name)
    ready = [position[name] for name, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    level: dict[str, int] = {}
    while ready:
        step = workflow.steps[heapq.heappop(ready)]
        level[step.name] = max((level[b] + 1 for b in step.upstream), default=0)
        for after in feeds[step.name]:
            waiting[after] -= 1
            if waiting[after] == 0:
                heapq.heappush(ready, position[after])
    if len(level) != len(workflow.steps):
        left = sorted(set(position) - set(level), key=position.__getitem__)
        raise ValueError(f"the steps {', '.join(left)} form a cycle")  # validation prevents it
    steps = sorted(workflow.steps, key=lambda step: (level[step.name], position[step.name]))
    return tuple(Planned(step, level[step.name], tuple(feeds[step.name])) for step in steps)


class Result(Record):
    """What a step gave: its state, its answer and checked value (lists, in element order, for
    a for_each step), and the reason when it failed, was skipped or was stopped."""

    state: str
    answer: Any = None
    value: Any = None
    reason: str | None = None


class Inputs(Record):
    """A run's inputs: its TEXT and its parameters' values (defaults filled in)."""

    instructions: str = ""
    params: Mapping[str, str] = MappingProxyType({})


class Decision(Record):
    """What a step does now: RUN (for each of `elements`, when it has for_each), SKIP, STOP or
    WAIT (an upstream step has not finished), with the reason for SKIP and STOP."""

    action: str
    reason: str | None = None
    elements: tuple[Any, ...] | None = None


class EvaluationError(ValueError):
    """An expression that failed on the values that arrived (for_each on a value that is not a
    list); the step fails with this reason."""


def scope(inputs: Inputs, results: Mapping[str, Result], item: Any = None) -> dict[str, Any]:
    """The data every expression reads (docs/workflows-design.md, "Bindings and the scope")."""
    data: dict[str, Any] = {"instructions": inputs.instructions, **inputs.params}
    data[STEPS] = {
        name: {"answer": result.answer, "value": result.value}
        for name, result in results.items()
        if result.state == SUCCEEDED
    }
    if item is not None:
        data[ITEM] = item
    return data


def search(expression: str, data: Mapping[str, Any]) -> Any:
    import jmespath

    return jmespath.search(expression, data)


def truthy(value: Any) -> bool:
    """JMESPath's truth: false, null, and an empty string, list or object are false; any
    number, 0 too, is true."""
    return not (value is None or value is False or value in ("", [], {}))


def decide(step: Step, inputs: Inputs, results: Mapping[str, Result]) -> Decision:
    """What `step` does given the `results` of the steps that have finished."""
    for before in step.upstream:
        result = results.get(before)
        if result is None or result.state not in FINISHED:
            return Decision(WAIT)
    for before in step.upstream:
        result = results[before]
        if result.state in (FAILED, OUT_OF_FORMAT, STOPPED):
            why = {FAILED: "failed", OUT_OF_FORMAT: "answered out of format", STOPPED: "stopped"}
            reason = f"step '{before}' {why[result.state]}"
            if result.reason:
                reason += f": {result.reason}"
            return Decision(STOP, reason)
    for before in step.upstream:
        if results[before].state == SKIPPED:
            return Decision(SKIP, f"step '{before}' was skipped")
    data = scope(inputs, results)
    if step.when is not None and not truthy(search(step.when, data)):
        return Decision(SKIP, f"when '{step.when}' is false")
    if step.for_each is None:
        return Decision(RUN)
    if isinstance(step.for_each, tuple):
        return Decision(RUN, elements=step.for_each)
    if not isinstance(step.for_each, str):
        # Files: matching them reads the disk, which the run does (start.board.workflow), with
        # the step's for_each cleared here.
        raise TypeError(f"step '{step.name}' runs for files, which the run matches")
    elements = search(step.for_each, data)
    if not isinstance(elements, list):
        raise EvaluationError(
            f"for_each '{step.for_each}' gave {_kind(elements)}, not a list, so step "
            f"'{step.name}' cannot run once per element"
        )
    return Decision(RUN, elements=tuple(elements))


def _kind(value: Any) -> str:
    if value is None:
        return "null (nothing there)"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    return names.get(type(value), "an object")


def text(value: Any) -> str:
    """A value as a binding fills it in: a string as it is, null as nothing, else JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def fill(template: str, data: Mapping[str, Any]) -> str:
    """A template with each `{EXPR}` replaced by its value over `data` (see `scope`)."""
    return "".join(
        text(search(piece.expression, data)) if isinstance(piece, Binding) else piece
        for piece in bindings(template)
    )


def collect(results: Sequence[Result]) -> Result:
    """A for_each step's result from its elements' results, in element order: succeeded when
    every element succeeded, else the state and reason of the first that did not."""
    answers = tuple(r.answer for r in results)
    values = tuple(r.value for r in results)
    for index, result in enumerate(results):
        if result.state != SUCCEEDED:
            reason = f"element {index + 1} {result.state}"
            if result.reason:
                reason += f": {result.reason}"
            return Result(result.state, list(answers), list(values), reason)
    return Result(SUCCEEDED, list(answers), list(values))


def exit_code(results: Mapping[str, Result]) -> int:
    """A run's exit code: 1 when a step failed, else 65 when one answered out of format, else 0
    (every step succeeded, or was skipped by a condition, or stopped by one of those)."""
    states = {result.state for result in results.values()}
    if FAILED in states:
        return ExitCode.ERROR
    if OUT_OF_FORMAT in states:
        return ExitCode.OUTPUT
    return ExitCode.OK


class Shown(Record):
    """A planned step as `start workflow run --dry-run` shows it: what it asks, of which agent,
    and what it reads of each upstream step (the edges of the graph)."""

    planned: Planned
    asks: str  # "task NAME" or "prompt"
    agent: str | None  # None: the default agent, and none is set
    output: str  # "text", "json" or "schema"
    reads: Mapping[str, tuple[str, ...]]  # upstream step -> ("answer", "value"); (): needs


def shown(workflow: Workflow, config: Config) -> tuple[Shown, ...]:
    """The plan with each step's agent and answer format as a run would choose them: the
    step's own, else its task's, else the config's default."""
    from start.config import model

    found = []
    for planned in plan(workflow):
        step = planned.step
        task = config.tasks.get(step.task) if step.task is not None else None
        agent = step.agent or (task.agent if task else None) or config.settings.default_agent
        output = step.output if step.output is not None else (task.output if task else None)
        if output is None or output == model.OUTPUT_TEXT:
            form = "text"
        else:
            form = "schema" if getattr(output, "format", None) == model.OUTPUT_SCHEMA else "json"
        asks = f"task {step.task}" if step.task is not None else "prompt"
        found.append(Shown(planned, asks, agent, form, reads(step)))
    return tuple(found)


def mermaid(steps: Sequence[Shown]) -> str:
    """The plan as a Mermaid flowchart: a node per step (what it asks, its agent), an edge per
    upstream step labelled with what flows (answer, value; a dotted edge for `needs`). A node's
    id is `step_NAME`: a bare `end` would end the chart."""
    lines = ["flowchart TD"]
    for item in steps:
        step = item.planned.step
        parts = [step.name, f"{item.asks} · {item.agent or 'default agent'}"]
        if step.when is not None:
            parts.append(f"when {step.when}")
        if step.for_each is not None:
            parts.append("for each element")
        label = "<br/>".join(map(_mermaid_text, parts))
        lines.append(f'  step_{step.name}["{label}"]')
    for item in steps:
        for before, flows in item.reads.items():
            arrow = f"-->|{', '.join(flows)}|" if flows else "-.->"
            lines.append(f"  step_{before} {arrow} step_{item.planned.step.name}")
    return "\n".join(lines)


def _mermaid_text(text: str) -> str:
    """Text inside a Mermaid node's quotes: a quote and markup characters as entities."""
    for character, entity in (("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(character, entity)
    return text
