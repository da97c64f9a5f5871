"""A workflow run on the board (docs/workflows-design.md, "A run on the board").

    begin: a parent item holding the workflow's definition and inputs, and an item per step,
    its child, blocked by its upstream steps' items, with nothing to run yet
    -> settle: each step whose upstream steps have finished is decided (compose.workflow.decide):
    skipped (completed, with the reason), stopped (failed, with the reason), or given its ask,
    filled from the earlier answers and values, which makes it runnable
    -> the board's runner (start.board.runner) runs the runnable steps of this run only,
    through the one path of an ask; as each ends, its value is kept and the run settles again

A resume reads the definition from the parent item, never from the config, and never runs a
completed step again. The decisions are compose.workflow's; this module writes them down.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from start import board
from start.base import fs, inputs
from start.base.errors import ExitCode, StartError
from start.base.record import Record
from start.board import COMPLETED, FAILED, PENDING, Change, Item, RefusedError
from start.board import file as boardfile
from start.board.runner import Report, Runner
from start.compose import workflow as plans
from start.compose.ask import WORKFLOW, Ask
from start.config.model import OUTPUT_SCHEMA, Config, Origin
from start.config.workflows import MAX_FILES, Files, Step, Workflow, check_workflow
from start.runs.rules import Scope

if TYPE_CHECKING:
    from start.board.store import Board

# The parent item's metadata key (the definition, the inputs, the steps' items) and a step
# item's (its step, its state when the board's status does not say it, its value, its agent).
KEY: Final = "workflow"


class BrokenRunError(StartError):
    """A parent item whose workflow cannot be followed: not a workflow run, or its kept
    definition no longer checks against the config (a task it names is gone)."""


class StepState(Record):
    """A step of a run as `--json` and the summary show it."""

    name: str
    item: str
    result: plans.Result | None  # None: not finished
    status: str  # its item's (pending, in_progress, completed, failed)
    agent: str | None = None
    history: int | None = None


def label(parent: str) -> str:
    """The label of a run's step items, so that its runner claims only them."""
    return f"workflow-{parent}"


def begin(
    scope: Scope,
    workflow: Workflow,
    table: Mapping[str, Any],
    inputs: plans.Inputs,
    by: board.Holder,
) -> str:
    """Create the run's parent item and its step items; the parent's id."""
    definition = json.dumps(table, default=str, ensure_ascii=False)
    title = f"workflow {workflow.name}"
    if inputs.instructions:
        title += f": {inputs.instructions}"
    with boardfile.opened(scope.workdir) as opened:
        parent = opened.create(
            title[:200],
            by,
            description=inputs.instructions,
            metadata={
                KEY: {
                    "name": workflow.name,
                    "definition": definition,
                    "instructions": inputs.instructions,
                    "params": dict(inputs.params),
                }
            },
        )
        ids: dict[str, str] = {}
        for planned in plans.plan(workflow):
            step = planned.step
            created = opened.create(
                f"{workflow.name} / {step.name}",
                by,
                blocked_by=[ids[before] for before in step.upstream],
                metadata={KEY: {"step": step.name}},
                labels=(label(parent.id),),
                parent=parent.id,
            )
            ids[step.name] = created.id
        opened.update(parent.id, by, Change(metadata={KEY: {"steps": ids}}))
    return parent.id


class Run:
    """One run of a workflow, read from its parent item: settled, and run by the board's
    runner (see the module)."""

    def __init__(self, scope: Scope, parent: str, config: Config, by: board.Holder) -> None:
        self.scope = scope
        self.parent = parent
        self.by = by
        self.lock = threading.Lock()  # the runner tells of its runs from their threads
        with boardfile.opened(scope.workdir) as opened:
            item = opened.get(parent)
        kept = item.metadata.get(KEY)
        if not isinstance(kept, Mapping) or not isinstance(kept.get("steps"), Mapping):
            raise BrokenRunError(
                f"{parent} is not a workflow run (its metadata has no '{KEY}' with its steps); "
                "start workflow run NAME begins one"
            )
        self.name = str(kept.get("name"))
        self.ids: dict[str, str] = {str(k): str(v) for k, v in kept["steps"].items()}
        self.inputs = plans.Inputs(
            str(kept.get("instructions") or ""), dict(kept.get("params") or {})
        )
        self.workflow = _checked(parent, self.name, str(kept.get("definition")), config)
        self.print_timeout = config.settings.print_timeout
        # With board_remote set, each step's claim is confirmed by a push as start board run's.
        self.remote = config.settings.board_remote or None
        self.remote_level = config.settings.board_remote_level
        # Told each sync that failed (once a reason): the door says it (start workflow does).
        self.warned: Callable[[str], None] = lambda message: None
        self.root = config.root  # where `for_each = { files = "GLOB" }` matches
        # The workflow's `timeout` counts from here: this run, or this resume, of it.
        self.deadline = time.monotonic() + self.workflow.timeout if self.workflow.timeout else None

    def expired(self) -> bool:
        """Whether the workflow's `timeout` has run out."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def capped(self, step: Step, ask: Ask) -> Ask:
        """`ask` with the step's own timeout, cut to what is left of the workflow's `timeout`
        (a second at least), so that no step runs past it."""
        own = step.timeout
        if self.deadline is None:
            return ask._replace(timeout=own)
        left = max(1, math.ceil(self.deadline - time.monotonic()))
        return ask._replace(timeout=min(own or self.print_timeout, left))

    def timed_out(self) -> tuple[Change, plans.Result]:
        """What a step not started when the workflow's `timeout` ran out becomes: stopped."""
        reason = f"the workflow's timeout ({self.workflow.timeout} s) ran out before it started"
        meta = {KEY: {"state": plans.STOPPED}}
        change = Change(FAILED, reason=f"stopped: {reason}", metadata=meta)
        return change, plans.Result(plans.STOPPED, reason=reason)

    def resume(self) -> None:
        """Make the run's unfinished steps runnable again: a failed or stopped step goes back
        to pending (a completed one, skipped included, is never run again)."""
        with boardfile.opened(self.scope.workdir) as opened:
            for id_ in self.ids.values():
                item = opened.get(id_)
                if item.status != FAILED:
                    continue
                # Its kept state goes too: the next decision or run writes a new one. A for_each
                # step's failed elements run again; its completed ones are kept.
                kept = {"state": None, "value": None, "tries": None, "answer": None}
                for element in _elements(item):
                    found = opened.get(element)
                    if found.status == FAILED:
                        opened.update(element, self.by, self.again(found, kept))
                opened.update(id_, self.by, self.again(item, kept))

    def again(self, item: Item, kept: Mapping[str, Any]) -> Change:
        """A failed step's (or element's) item back to pending, its ask's timeout cut to what
        is left of this run's."""
        step = _step(self.workflow, str(_meta(item).get("step")))
        run = self.capped(step, item.run) if step is not None and item.run is not None else None
        return Change(PENDING, metadata={KEY: dict(kept)}, run=run)

    def run(self, cap: int, timeout: int | None) -> tuple[StepState, ...]:
        """Settle, then run the ready steps until nothing is ready and nothing runs; the
        steps' states. Raises what stops the runner (a signal, an untrusted project)."""
        self.settle()
        runner = Runner(
            self.scope,
            cap=cap,
            timeout=timeout,
            told=self.told,
            labels=(label(self.parent),),
            door=WORKFLOW,
            remote=self.remote,
            remote_level=self.remote_level,
            warned=self.warned,
        )
        runner.run(until_empty=True)
        return self.states()

    def told(self, report: Report) -> None:
        """A run of a step ended: keep its value (or that it answered out of format) and its
        agent on its item, then settle what it unblocked."""
        if report.step not in (COMPLETED, FAILED) or report.outcome is None:
            return
        outcome = report.outcome
        kept: dict[str, Any] = {"agent": outcome.agent}
        change = Change(metadata={KEY: kept})
        if report.step == COMPLETED and outcome.value is not None:
            kept["value"] = json.dumps(outcome.value, ensure_ascii=False)
            if not _fits({**_meta(report.item), **kept}):
                # Too large for the item's metadata: the value is read again from the item's
                # answer, which the board keeps whole and the run checked (`result`).
                kept["value"] = None
                kept[VALUE_FROM] = ANSWER
        if report.step == FAILED:
            if outcome.problems:
                kept["state"] = plans.OUT_OF_FORMAT
            if outcome.answer:
                # The board keeps no answer on a failed item: one that arrived (out of format,
                # or over the step's answer_limit) is kept here, cut to what metadata holds
                # (the whole is in the history).
                kept["answer"] = _cut(outcome.answer, outcome.history)
            meta = _meta(report.item)
            step = _step(self.workflow, str(meta.get("step")))
            tries = int(meta.get("tries") or 0) + 1
            if step is not None and tries <= step.retries:
                # `retries = N`: run again, as it was filled, N times at most; its timeout cut to
                # what is left of the workflow's.
                kept.update(state=None, tries=tries, answer=None)
                change = self.again(report.item, kept)
        with boardfile.opened(self.scope.workdir, sweep=False) as opened:
            opened.update(report.item.id, self.by, change)
        self.settle()

    def settle(self) -> None:
        """Decide every step whose upstream steps have finished and that has not been decided:
        skip it, stop it, or fill its ask; again until nothing changes (a stop stops what is
        downstream of it too)."""
        with self.lock, boardfile.opened(self.scope.workdir, sweep=False) as opened:
            items = {name: opened.get(id_) for name, id_ in self.ids.items()}
            results = {name: found for name, item in items.items() if (found := result(item))}
            changed = True
            while changed:
                changed = False
                for planned in plans.plan(self.workflow):
                    step = planned.step
                    item = items[step.name]
                    if step.name in results or item.status != PENDING:
                        continue
                    if item.run is not None:  # runnable: stopped if the time ran out
                        late = self.stopped_late(opened, item)
                        if late is not item and (decided := result(late)) is not None:
                            items[step.name], results[step.name] = late, decided
                            changed = True
                        continue
                    elements = _elements(item)
                    if elements:  # a for_each step fanned out: collected once all finished
                        ends = [self.stopped_late(opened, opened.get(id_)) for id_ in elements]
                        change, decided = _collected(item, ends)
                    else:
                        change, decided = self.decision(opened, step, item, results)
                    if change is None:
                        continue
                    items[step.name] = opened.update(item.id, self.by, change)
                    if decided is not None:
                        results[step.name] = decided
                    changed = True

    def stopped_late(self, opened: Board, item: Item) -> Item:
        """A runnable item no run has claimed, stopped when the workflow's `timeout` has run
        out; else (or when a run claimed it meanwhile) the item as it is."""
        if item.status != PENDING or item.run is None or not self.expired():
            return item
        try:
            return opened.update(item.id, self.by, self.timed_out()[0])
        except RefusedError:  # claimed meanwhile: its run's timeout ends it in time
            return opened.get(item.id)

    def decision(
        self, opened: Board, step: Step, item: Item, results: Mapping[str, plans.Result]
    ) -> tuple[Change | None, plans.Result | None]:
        """What to write on a step's item now, and its result when that finishes it."""
        files = step.for_each if isinstance(step.for_each, Files) else None
        try:
            decided = plans.decide(
                step if files is None else step._replace(for_each=None), self.inputs, results
            )
            if decided.action == plans.RUN and self.expired():
                return self.timed_out()
            if files is not None and decided.action == plans.RUN:
                decided = decided._replace(elements=matched(files.pattern, self.root))
            if decided.action == plans.RUN and decided.elements is not None:
                return self.fan_out(opened, step, item, decided.elements, results)
            if decided.action == plans.RUN:
                return Change(run=self.ask(step, plans.scope(self.inputs, results))), None
        except FilesError as error:
            reason = f"step '{step.name}' did not run: {error}"
            return Change(FAILED, reason=reason), plans.Result(plans.FAILED, reason=reason)
        except ValueError as error:  # an expression that failed on the values that arrived
            reason = f"step '{step.name}' could not be filled: {error}"
            return Change(FAILED, reason=reason), plans.Result(plans.FAILED, reason=reason)
        if decided.action == plans.SKIP:
            meta = {KEY: {"state": plans.SKIPPED, "reason": decided.reason}}
            return Change(COMPLETED, metadata=meta), plans.Result(
                plans.SKIPPED, reason=decided.reason
            )
        if decided.action == plans.STOP:
            meta = {KEY: {"state": plans.STOPPED}}
            return Change(FAILED, reason=f"stopped: {decided.reason}", metadata=meta), (
                plans.Result(plans.STOPPED, reason=decided.reason)
            )
        return None, None

    def fan_out(
        self,
        opened: Board,
        step: Step,
        item: Item,
        elements: tuple[Any, ...],
        results: Mapping[str, plans.Result],
    ) -> tuple[Change | None, plans.Result | None]:
        """A for_each step: an item per element, a child of the step's item, its ask filled
        with the element as {item}; the step's item waits on them (and is collected by
        `_collected` when they have all finished). No element: it succeeds with empty lists.
        Every ask is filled before any item is made, so a binding that fails makes none."""
        if not elements:
            meta = {KEY: {"answers": "[]", "value": "[]"}}
            return Change(COMPLETED, answer="[]", metadata=meta), plans.Result(
                plans.SUCCEEDED, [], []
            )
        asks = [
            self.ask(step, plans.scope(self.inputs, results, item=element)) for element in elements
        ]
        ids = []
        for index, ask in enumerate(asks):
            made = opened.create(
                f"{item.title} [{index + 1}]",
                self.by,
                metadata={KEY: {"step": step.name, "element": index}},
                run=ask,
                labels=(label(self.parent),),
                parent=item.id,
            )
            ids.append(made.id)
        kept: dict[str, Any] = {KEY: {"elements": ids}}
        return Change(metadata=kept, add_blocked_by=tuple(ids)), None

    def ask(self, step: Step, data: Mapping[str, Any]) -> Ask:
        """The step's ask, its templates filled from `data` (compose.workflow.scope)."""
        common: dict[str, Any] = {
            "agents": (step.agent,) if step.agent else (),
            "model": step.model,
            "role": step.role,
            "permissions": step.permissions,
            "door": WORKFLOW,
            "answer_format": answer_format(step),
            "answer_limit": step.answer_limit,
            "max_turns": step.max_turns,
        }
        if step.task is not None:
            instructions = plans.fill(step.instructions, data) if step.instructions else None
            params = {name: plans.fill(text, data) for name, text in step.params}
            asked = Ask(
                mode="task", task=step.task, instructions=instructions, params=params, **common
            )
            return self.capped(step, asked)
        assert step.prompt is not None
        return self.capped(step, Ask(mode="prompt", prompt=plans.fill(step.prompt, data), **common))

    def states(self) -> tuple[StepState, ...]:
        """Every step's state, in the plan's order."""
        with boardfile.opened(self.scope.workdir, sweep=False) as opened:
            items = {name: opened.get(id_) for name, id_ in self.ids.items()}
        found = []
        for planned in plans.plan(self.workflow):
            item = items[planned.step.name]
            kept = item.metadata.get(KEY) or {}
            agent = kept.get("agent") if isinstance(kept, Mapping) else None
            found.append(
                StepState(
                    planned.step.name, item.id, result(item), item.status, agent, item.history
                )
            )
        return tuple(found)

    def finish(self, states: tuple[StepState, ...]) -> int:
        """The run's exit code (compose.workflow.exit_code; 1 while a step has not finished);
        the parent item completed when it is 0, else failed with the first step that failed."""
        results = {state.name: state.result for state in states if state.result is not None}
        code = plans.exit_code(results)
        if len(results) < len(states):  # a step another holds, or left: not a success
            return code or ExitCode.ERROR
        change = Change(COMPLETED)
        if code:
            first = next(
                state
                for state in states
                if state.result is not None
                and state.result.state in (plans.FAILED, plans.OUT_OF_FORMAT)
            )
            assert first.result is not None
            change = Change(FAILED, reason=f"step '{first.name}': {first.result.reason}")
        with (
            boardfile.opened(self.scope.workdir, sweep=False) as opened,
            contextlib.suppress(StartError),  # finished already (completed by a person)
        ):
            done = opened.update(self.parent, self.by, change)
            # Its finish is pushed at once, as every finish is with board_remote set.
            from start.board import syncing

            synced = syncing.after(opened, syncing.Setting(self.remote, self.remote_level))
            if synced is not None and synced.error is not None:
                self.warned(syncing.unpushed(done, synced.error))
        return code


def answer_format(step: Step) -> str | None:
    """A step's own answer format as its ask carries it (Ask.answer_format): "text", "json" or
    its inline schema as JSON text; None: its task's (a prompt step's: text)."""
    if step.output is None or isinstance(step.output, str):
        return step.output
    if step.output.format == OUTPUT_SCHEMA:
        assert step.output.schema is not None  # a schema file is an early error of a step
        return step.output.schema
    return step.output.format


# A step item's metadata key that says where its value is when it was too large to keep there:
# read again from its answer (ANSWER), or for a for_each step from its answers (ANSWERS).
VALUE_FROM: Final = "value_from"
ANSWER, ANSWERS = "answer", "answers"
# How much of an out-of-format answer a failed step's item keeps: well within the metadata.
KEPT_ANSWER: Final = 32 << 10


def _fits(meta: Mapping[str, Any]) -> bool:
    """Whether `meta` as a step item's metadata stays within the board's limit."""
    try:
        inputs.metadata({KEY: dict(meta)})
    except inputs.InputError:
        return False
    return True


def _cut(answer: str, history: int | None) -> str:
    """An answer as a failed step's item keeps it: whole, or its first KEPT_ANSWER bytes and
    where the rest is."""
    data = answer.encode("utf-8", "surrogatepass")
    if len(data) <= KEPT_ANSWER:
        return answer
    where = f"start log show {history}" if history is not None else "the history"
    head = data[:KEPT_ANSWER].decode("utf-8", "ignore")
    return f"{head}\n[... {len(data) - KEPT_ANSWER:,} bytes more: {where}]"


def _step(workflow: Workflow, name: str) -> Step | None:
    return next((step for step in workflow.steps if step.name == name), None)


class FilesError(ValueError):
    """A `for_each = { files = "GLOB" }` the step does not run for: a match that a symlink
    leads outside the project root, or more files than MAX_FILES."""


def matched(pattern: str, root: str, cap: int = MAX_FILES) -> tuple[str, ...]:
    """The regular files inside the project root `root` that `pattern` matches, as sorted paths
    relative to it, at most `cap` of them (FilesError beyond).

    The pattern's parts are matched directory by directory (fnmatch's `*`, `?` and `[...]`
    within one name; `**` for any number of directories; a trailing `**` for every file below).
    A wildcard does not match a name that starts with a dot unless its part does, and `**`
    enters neither such a directory (`.git`) nor a symlink to one, so a walk never leaves the
    root; a file or a directory that is named, or matched, through a symlink that leads outside
    the root is refused (FilesError), never read or listed.
    """
    import fnmatch

    real_root = os.path.realpath(root)
    parts = [part for part in pattern.split("/") if part not in ("", ".")]
    if parts and parts[-1] == "**":
        parts.append("*")
    found: set[str] = set()
    walked: set[tuple[str, int]] = set()  # `a/**/**/b` reaches a directory more than one way

    def inside(relative: str) -> str:
        real = os.path.realpath(os.path.join(real_root, relative))
        if not fs.within(real, real_root):
            raise FilesError(
                f"for_each files '{pattern}' matches {relative}, which leads outside the project "
                f"root (to {real}) through a symlink; start does not follow it"
            )
        return real

    def names(relative: str) -> list[tuple[str, bool]]:
        """The entries of a directory: each name, and whether it is a directory (not a link)."""
        try:
            with os.scandir(os.path.join(real_root, relative)) as entries:
                return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        except OSError:
            return []

    def walk(relative: str, at: int) -> None:
        if (relative, at) in walked:
            return
        walked.add((relative, at))
        part, last = parts[at], at == len(parts) - 1
        if part == "**":
            walk(relative, at + 1)  # no directory at all
            for name, directory in names(relative):
                if directory and not name.startswith("."):
                    walk(os.path.join(relative, name), at)
            return
        if not any(magic in part for magic in "*?["):
            here = os.path.lexists(os.path.join(real_root, relative, part))
            chosen = [part] if here else []
        else:
            hidden = part.startswith(".")
            chosen = [
                name
                for name, _ in names(relative)
                if fnmatch.fnmatchcase(name, part) and (hidden or not name.startswith("."))
            ]
        for name in chosen:
            child = os.path.join(relative, name)
            real = inside(child)
            if last and os.path.isfile(real):
                found.add(child)
                if len(found) > cap:
                    raise FilesError(
                        f"for_each files '{pattern}' matches more than {cap} files; a step runs "
                        f"for at most {cap}: narrow the pattern"
                    )
            elif not last and os.path.isdir(real):
                walk(child, at + 1)

    if parts:
        walk("", 0)
    return tuple(sorted(found))


def _meta(item: Item) -> Mapping[str, Any]:
    kept = item.metadata.get(KEY)
    return kept if isinstance(kept, Mapping) else {}


def _elements(item: Item) -> list[str]:
    """The items of a for_each step's elements, once it fanned out."""
    found = _meta(item).get("elements")
    return [str(id_) for id_ in found] if isinstance(found, list) else []


def _collected(item: Item, elements: list[Item]) -> tuple[Change | None, plans.Result | None]:
    """A fanned-out step's change and result once every element's item has finished
    (compose.workflow.collect: the answers and values in element order); else nothing yet."""
    found = [result(element) for element in elements]
    if any(one is None for one in found):
        return None, None
    collected = plans.collect([one for one in found if one is not None])
    answer = json.dumps(collected.answer, ensure_ascii=False)
    meta: dict[str, Any] = {
        "answers": answer,
        "value": json.dumps(collected.value, ensure_ascii=False),
    }
    fits = _fits({**_meta(item), **meta})
    if collected.state == plans.SUCCEEDED:
        if not fits:
            # Too large for the item's metadata: the answers are the item's answer (the board
            # keeps it whole), each value read again from its answer, as its run checked it.
            valued = any(value is not None for value in collected.value)
            meta = {"answers": None, "value": None, VALUE_FROM: ANSWERS if valued else None}
        return Change(COMPLETED, answer=answer, metadata={KEY: meta}), collected
    if not fits:  # a failed item keeps no answer: each element's item keeps its own
        meta = {"answers": None, "value": None}
    meta["state"] = collected.state
    return Change(FAILED, reason=collected.reason, metadata={KEY: meta}), collected


def result(item: Item) -> plans.Result | None:
    """A step's result from its item; None while it has not finished."""
    meta = _meta(item)
    state = meta.get("state")
    if item.status == COMPLETED:
        if state == plans.SKIPPED:
            return plans.Result(plans.SKIPPED, reason=meta.get("reason"))
        value = meta.get("value")
        answers = meta.get("answers")  # a for_each step's, in element order
        found = plans.Result(
            plans.SUCCEEDED,
            json.loads(answers) if isinstance(answers, str) else item.answer,
            json.loads(value) if isinstance(value, str) else None,
        )
        return _value_from(found, meta.get(VALUE_FROM), item.answer or "")
    if item.status == FAILED:
        if state == plans.STOPPED:
            reason = (item.reason or "").removeprefix("stopped: ")
            return plans.Result(plans.STOPPED, reason=reason)
        found_state = plans.OUT_OF_FORMAT if state == plans.OUT_OF_FORMAT else plans.FAILED
        kept = meta.get("answer")
        answer = kept if isinstance(kept, str) else item.answer
        return plans.Result(found_state, answer, reason=item.reason)
    return None


def _value_from(found: plans.Result, where: Any, answer: str) -> plans.Result:
    """A succeeded step's result with its value read again from its answer (or a for_each
    step's from each answer: the item's answer is their JSON list), when it was too large for
    the item's metadata (VALUE_FROM)."""
    if where not in (ANSWER, ANSWERS):
        return found
    from start.config import output

    if where == ANSWER:
        return found._replace(value=output.extract(answer))
    answers = json.loads(answer)
    return found._replace(answer=answers, value=[output.extract(one) for one in answers])


def _checked(parent: str, name: str, definition: str, config: Config) -> Workflow:
    """The workflow as its run kept it, checked again against the config's tasks."""
    from start.config.validate import Collector

    try:
        table = json.loads(definition)
    except ValueError:
        table = None
    if not isinstance(table, dict):
        raise BrokenRunError(
            f"{parent} keeps no workflow definition; start workflow run NAME begins a run"
        )
    problems: list[Any] = []
    out = Collector(Origin("item", parent), problems)
    checked = check_workflow(name, table, f"workflows.{name}", out, config)
    errors = [problem for problem in problems if problem.is_error]
    if checked is None or errors:
        first = f": {errors[0].message}" if errors else ""
        raise BrokenRunError(
            f"the workflow {parent} began with no longer checks against the config{first}; "
            f"restore what it names, or begin a new run: start workflow run {name}"
        )
    return checked
