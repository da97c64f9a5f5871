"""One launch, end to end: load, trust, select, compose, build; the CLI presents and execs it.

    files -> load -> trust (a Grant) -> plan -> compose (read through the wall, run commands)
          -> build (argv, env, temp files) -> Prepared

A headless run (`--print`) is the launch's sibling: the same walk, with the agent's headless
form built instead of its interactive one; `start.runs.headless.run` then runs it and reads the
answer.

`prepare` never prints, never asks and never execs. An untrusted project raises TrustRequired,
which carries what the caller needs to ask the user; after approval, the caller calls `prepare`
again.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from start.base import paths
from start.base.errors import ConfigError
from start.base.record import Record
from start.base.wall import Grant, Reader
from start.compose import resolve, sources
from start.compose.ask import Ask
from start.config.load import load
from start.config.model import Config
from start.proc import shell

if TYPE_CHECKING:
    from start.compose import launch as launcher
    from start.config.output import Spec


def workdir(ask: Ask) -> str:
    """Where an ask runs: its directory, else where start started (the real path)."""
    import os

    return ask.directory or os.path.realpath(paths.current_dir())


class Prepared(Record):
    """Everything the CLI needs to show or exec a launch."""

    config: Config
    grant: Grant | None
    plan: resolve.Plan
    composition: sources.Composition
    launch: launcher.Launch
    date: str
    timings: dict[str, float]
    warnings: tuple[str, ...]
    # A headless run's answer format (the task's `output`), its schema read and checked; None
    # for a launch, or for a task without one (text).
    output: Spec | None = None
    # What was asked (`unheld` builds the launch again from it).
    ask: Ask | None = None
    dry_run: bool = False  # the launch keeps the files it names, for a command line to paste


def now() -> str:
    """One ISO 8601 timestamp with the UTC offset, shared by every {date} of a launch."""
    return datetime.now().astimezone().isoformat(timespec="seconds")


def grant_for(config: Config) -> tuple[Grant | None, tuple[str, ...]]:
    """The project layer's grant; trust is loaded only when there is a project layer (a
    `.start/`, or project command files of other agents)."""
    if not config.has_project:
        return None, ()
    from start import trust

    return trust.grant(config)


def level(request: Ask, plan: resolve.Plan) -> tuple[str, str]:
    """A headless run's permission level and where it comes from: the request's (the
    --permissions option, unless it says otherwise), the task's, else read-only; never above
    the request's `most`."""
    from start.config.schema import LEVELS

    task = plan.task
    if request.permissions is not None:
        found = request.permissions, request.permissions_from or "the --permissions option"
    elif task is not None and task.permissions is not None:
        origin = task.origin
        found = task.permissions, f"task {task.name}'s permissions ({origin.layer}: {origin.path})"
    else:
        found = "read-only", "the default"
    most = request.most
    if most is not None and LEVELS.index(found[0]) > LEVELS.index(most):
        return most, f"{request.most_from} (capped from '{found[0]}', {found[1]})"
    return found


class _Laps:
    """How long each step of a prepare took, by name (shown by --debug): a call ends a step."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._mark = time.perf_counter()

    def __call__(self, name: str) -> None:
        now_ = time.perf_counter()
        self.timings[name] = now_ - self._mark
        self._mark = now_


def prepare(
    request: Ask,
    runner: sources.Runner | None = None,
    *,
    build: bool = True,
    progress: shell.Progress | None = None,
    owner: shell.Owner | None = None,
    dry_run: bool = False,
) -> Prepared:
    """Load, trust, select, compose and build one launch.

    Raises StartError subclasses: ConfigError (3), UnknownNameError (4), TrustRequired or
    UntrustedError (5), CommandError (1), StoppedError (128 + N), ... The temp files of the
    result belong to the caller: `launch.cleanup()` when it is not exec'd. With `build=False`
    (`start mcp`, which needs only the composition) the agent command is not built: the launch is
    empty, so neither a missing agent binary nor an oversize prompt matters. `progress` is told
    which commands still run, and `owner` of their process groups (see shell.run_all). With
    `dry_run`, the launch keeps the files it names, for a command line to paste.
    """
    lap = _Laps()
    writes: list[Callable[[], None]] = []
    where = workdir(request)
    config = load(where, use_project=not request.no_project, strict=True, writes=writes)
    lap("load")
    try:
        grant, warnings = grant_for(config)
        lap("trust")
        plan = resolve.plan(config, request)
        output = answer_format(config, grant, plan, request) if request.headless else None
        date = now()
        meanwhile = functools.partial(_meanwhile, request, [plan] if build else [], writes)
        composition = _compose(config, grant, plan, date, runner, progress, meanwhile, owner)
    finally:
        _write(writes)  # what no command's run took
    composition = told(composition, plan, output)
    lap("compose")
    from start.compose import launch as launcher

    if build:
        launch = _build(request, config, plan, composition, date, output, dry_run)
    else:
        launch = launcher.Launch("", (), {}, where, uses_shell=False)
    lap("build")
    return Prepared(
        config,
        grant,
        plan,
        composition,
        launch,
        date,
        lap.timings,
        warnings,
        output,
        request,
        dry_run,
    )


def prepare_each(
    request: Ask,
    agents: Sequence[str | None],
    progress: shell.Progress | None = None,
    runner: sources.Runner | None = None,
    owner: shell.Owner | None = None,
    dry_run: bool = False,
) -> list[Prepared]:
    """One composition, built for each of several agents (`--print -a a,b,c`): the headless
    path, for one agent as for several (None: the agent the selection picks).

    The task's commands and the contexts run once, and every agent gets the same prompt. Each
    agent gets its own role placement, model and permissions, as a single run would. A model
    asked for with -m goes only to the agents that know it (an alias or id of their `models`);
    the others use their own default, and the plan says so. The temp files of the result belong
    to the caller, as for `prepare`; `runner` runs the commands, and `owner` is told of their
    groups, as for `prepare`. An agent whose binary is missing or not executable does not stop
    the others: its launch says why it cannot run (`launch.unavailable`).
    """
    lap = _Laps()
    writes: list[Callable[[], None]] = []
    config = load(workdir(request), use_project=not request.no_project, strict=True, writes=writes)
    lap("load")
    try:
        grant, warnings = grant_for(config)
        lap("trust")
        plans = [_plan_for(config, request, name) for name in agents]
        output = answer_format(config, grant, plans[0], request)
        date = now()
        meanwhile = functools.partial(_meanwhile, request, plans, writes)
        composition = _compose(config, grant, plans[0], date, runner, progress, meanwhile, owner)
    finally:
        _write(writes)
    lap("compose")
    built: list[Prepared] = []
    try:
        for plan in plans:
            own = told(composition, plan, output)
            launch = _build(request, config, plan, own, date, output, dry_run)
            built.append(
                Prepared(
                    config, grant, plan, own, launch, date, {}, warnings, output, request, dry_run
                )
            )
        lap("build")
        built[0] = built[0]._replace(timings=lap.timings)
    except BaseException:
        for prepared in built:
            prepared.launch.cleanup()
        raise
    return built


def answer_format(
    config: Config, grant: Grant | None, plan: resolve.Plan, request: Ask | None = None
) -> Spec | None:
    """The task's output format for a headless run (None: text), its schema file read through
    the wall and the schema checked, before anything runs; a workflow step's own format (the
    ask's `answer_format`) wins over its task's. Raises ConfigError (exit 3) for a schema that
    is not one, WallError for a file the wall keeps shut."""
    if request is not None and request.answer_format is not None:
        from start.config import output

        spec = output.spec_of(request.answer_format, "the step's output.schema")
        return None if spec.is_text else spec
    task = plan.task
    if task is None or task.output is None:
        return None  # text: start.config.output (and json) is not imported
    from start.config import output

    reader = Reader(config.root, grant, config.settings.file_size_limit)

    def read(path: str) -> bytes:
        return reader.read(path, layer=task.origin.layer, relative=False).data

    try:
        return output.spec_for(task, read)
    except ConfigError as error:
        from start.config.validate import placed

        raise ConfigError(placed(list(error.problems)), error.headline) from None


def told(
    composition: sources.Composition, plan: resolve.Plan, output: Spec | None
) -> sources.Composition:
    """The composition whose prompt names the task's output format, for an agent whose CLI is
    not held to it (start.config.output.instruction): the prompt the agent gets, and the one
    shown."""
    from start.compose import launch as launcher

    if output is None or output.is_text or launcher.holds_to_schema(plan.agent, output):
        return composition
    from start.config.output import with_instruction

    return composition._replace(prompt=with_instruction(composition.prompt, output))


def unheld(prepared: Prepared) -> Prepared:
    """A headless launch built again with the task's schema in its prompt instead of the agent's
    `print_schema` options, as for an agent without them: for a CLI that refused them for the
    model (its `print_schema_refused`). The temp files of the result belong to the caller."""
    assert prepared.ask is not None
    agent = prepared.plan.agent._replace(print_schema=None, print_schema_refused=None)
    plan = prepared.plan._replace(agent=agent)
    composition = told(prepared.composition, plan, prepared.output)
    launch = _build(
        prepared.ask,
        prepared.config,
        plan,
        composition,
        prepared.date,
        prepared.output,
        prepared.dry_run,
    )
    return prepared._replace(plan=plan, composition=composition, launch=launch)


def _compose(
    config: Config,
    grant: Grant | None,
    plan: resolve.Plan,
    date: str,
    runner: sources.Runner | None,
    progress: shell.Progress | None,
    meanwhile: Callable[[], object] | None = None,
    owner: shell.Owner | None = None,
) -> sources.Composition:
    """The composition; `meanwhile` is done while its commands run, and `owner` is told of their
    groups (see shell.run_all), when `runner` is start's own."""
    reader = Reader(config.root, grant, config.settings.file_size_limit)
    if runner is None:
        runner = functools.partial(
            shell.run_all, progress=progress, meanwhile=meanwhile, owner=owner
        )
    return sources.compose(config, plan, date, reader, runner)


def _meanwhile(
    request: Ask, plans: Sequence[resolve.Plan], writes: list[Callable[[], None]]
) -> None:
    """What needs no command's output, done while the commands that compose the prompt run: the
    config cache's writes, and readying the build of each plan's launch (the launcher imported,
    the agent's command template lexed)."""
    _write(writes)
    if plans:
        from start.compose import launch as launcher

        for plan in plans:
            launcher.ready(plan.agent, headless=request.headless)


def _write(writes: list[Callable[[], None]]) -> None:
    """Do the config cache's writes that are left (see config.load's `writes`)."""
    while writes:
        writes.pop(0)()


def _build(
    request: Ask,
    config: Config,
    plan: resolve.Plan,
    composition: sources.Composition,
    date: str,
    output: Spec | None = None,
    dry_run: bool = False,
) -> launcher.Launch:
    from start.compose import launch as launcher

    permissions, source = level(request, plan) if request.headless else (None, None)
    agent_args = request.agent_args
    if request.max_turns is not None and request.headless:
        agent_args = (*launcher.turn_options(plan.agent, request.max_turns), *agent_args)
    return launcher.build(
        plan,
        composition,
        date,
        workdir(request),
        agent_args,
        dry_run=dry_run,
        agents=config.agents,
        permissions=permissions,
        permissions_from=source,
        output=output,
        missing_ok=dry_run or request.headless,
        session=request.session,
    )


# Why an agent of several did not get the model -m asked for.
NOT_ITS_MODEL = "-m names none of this agent's models: its own default applies"


def _plan_for(config: Config, ask: Ask, agent: str | None) -> resolve.Plan:
    """The plan of one agent of several: -m only where the agent knows that model (None: the
    ask's own agent, with its model)."""
    if agent is None:
        return resolve.plan(config, ask)
    plan = resolve.plan(config, ask._replace(agents=(agent,), model=None))
    wanted = ask.model
    if wanted is None:
        return plan
    models = plan.agent.models
    if wanted in models or wanted in models.values():
        return resolve.plan(config, ask._replace(agents=(agent,)))
    return plan._replace(model_reason=NOT_ITS_MODEL)
