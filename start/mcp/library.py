"""What `start mcp` offers for one directory, computed afresh for every request.

Tasks, prompts and resources come from the same load, trust check and composition as a launch
(`pipeline.prepare`, files through `wall.Reader`, commands through `shell`). Nothing here imports
the MCP SDK, prints or asks: an untrusted project's `.start/` is left out, with a note saying why.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, unquote

from start.base import fs
from start.base.errors import (
    AgentNotFoundError,
    ConfigError,
    ExitCode,
    StartError,
    UnknownNameError,
    UntrustedError,
    suggest,
)
from start.base.record import Record
from start.base.wall import Reader
from start.compose import pipeline, resolve, sources
from start.config.load import load
from start.config.model import Config, Task
from start.proc import shell
from start.proc.shell import CommandResult, CommandSpec

if TYPE_CHECKING:
    from start.proc.shell import Owner

Kind = Literal["context", "role"]
SCHEME = "start://"


class RequestError(StartError):
    """A request that names nothing offered, or gives arguments a task does not take."""

    exit_code = ExitCode.USAGE


class Scope(Record):
    """Where the server works (`start mcp -d DIR`), and whether a project's `.start/` may count."""

    workdir: str
    use_project: bool = True
    # How many `start mcp` runs this server runs inside (asking.DEPTH_VARIABLE): 0 when a user's
    # agent started it.
    depth: int = 0


class View(Record):
    """The configuration one request sees."""

    config: Config
    use_project: bool  # whether the project's `.start/` is part of it
    note: str | None = None  # why the project's `.start/` is left out, when it is


class Argument(Record):
    """One argument of a task's prompt."""

    name: str
    description: str
    required: bool = False


INSTRUCTIONS = Argument(
    "instructions",
    "Your instructions for the task: they fill its {instructions}, or are added at the end of "
    "its prompt when it has none.",
)


class Composed(Record):
    """What `start task NAME INSTRUCTIONS --dry-run --json` composes."""

    task: Task
    role: str  # the role text; "" without a role
    prompt: str

    @property
    def message(self) -> str:
        """The role and the prompt as one message.

        MCP prompts have no system message, so the role goes at the top of the prompt, as it
        does for agents whose CLI takes no system prompt (config/agents.toml).
        """
        if not self.role.strip():
            return self.prompt
        return self.role.rstrip("\n") + "\n\n" + self.prompt


class Run(Record):
    """One `run_task`: the task command's output and status, and the composed message."""

    task: str
    ok: bool
    stdout: str
    stderr: str
    exit_code: int | None  # None when the command did not run, did not start or timed out
    error: str  # why it failed; "" when it did not
    message: str  # the composed role and prompt; "" when it failed


class Resource(Record):
    """A context or role, offered as `start://KIND/NAME`."""

    uri: str
    kind: Kind
    name: str
    description: str | None


# --- the configuration ----------------------------------------------------------------------


def view(scope: Scope) -> View:
    """Load the config afresh. An untrusted project's `.start/` is left out, never asked about,
    and so is a project layer with errors that no approval covers: its errors are named by
    place only (trust.withheld), since the model reads the note.

    Raises ConfigError when the config used has errors.
    """
    if not scope.use_project:
        config = load(scope.workdir, use_project=False, strict=True)
        start_dir = config.project.start_dir
        note = f"{start_dir} is ignored (--no-project)" if start_dir is not None else None
        return View(config, False, note)
    config = load(scope.workdir)
    untrusted: str | None = None
    try:
        grant, _ = pipeline.grant_for(config)
    except UntrustedError as error:
        untrusted = str(error)
    else:
        # No grant: no project file is approved (none was read, e.g. links out of the root).
        if grant is not None or not config.errors:
            if config.errors:
                raise ConfigError(config.problems)
            return View(config, True)
    own = load(scope.workdir, use_project=False, strict=True)
    from start import trust

    notes = [text for text in (untrusted, trust.withheld(config, own)) if text is not None]
    return View(own, False, "; ".join(notes) or None)


def listed(config: Config) -> list[Task]:
    """The tasks offered: those with a description that are not internal, by name."""
    offered = (t for t in config.tasks.values() if t.description and not t.internal)
    return sorted(offered, key=lambda t: t.name)


def instructions(scope: Scope) -> str:
    """The server's `instructions` for the agent: what it offers, and what it leaves out."""
    text = (
        f"start serves the user's tasks for {scope.workdir}. Each task is a prompt; the "
        "list_tasks tool lists them and run_task(task_name, instructions) composes one as "
        "`start task NAME INSTRUCTIONS` would, running its command, and returns the command's "
        "output followed by the composed prompt, which you then follow. Contexts and roles are "
        "resources: start://context/NAME and start://role/NAME."
    )
    try:
        seen = view(scope)
    except StartError as error:
        return f"{text} The configuration cannot be loaded now: {error}"
    if not listed(seen.config):
        text += " No task is offered now (none has a description and is not internal)."
    if seen.note is not None:
        text += f" Only built-in and global items are offered: {seen.note}."
    return text


# --- tasks ----------------------------------------------------------------------------------


def arguments(task: Task) -> tuple[Argument, ...]:
    """A task's prompt arguments: the instructions, then its parameters (start.config.params)."""
    found = [INSTRUCTIONS]
    for param in task.params:
        description = param.description or f"The task's parameter {param.name}"
        if param.default is not None:
            description += f" (default: {json.dumps(param.default, ensure_ascii=False)})"
        found.append(Argument(param.name, description, required=param.default is None))
    return tuple(found)


def selection(task: Task, values: Mapping[str, str]) -> resolve.Request:
    """The request `start task NAME INSTRUCTIONS -p NAME=VALUE...` makes, from checked values."""
    text = values.get(INSTRUCTIONS.name, "")
    given = tuple((p.name, values[p.name]) for p in task.params if p.name in values)
    return resolve.Request(
        "task", task=task.name, instructions=(text,) if text.strip() else (), params=given
    )


def check(task: Task, values: Mapping[str, object]) -> dict[str, str]:
    """Argument values as strings; an unknown name, a non-string or a missing one is refused.

    A null value counts as not given: agents often send null for an optional argument. Values
    follow the text rule of command-line arguments (fs.arg_text): a NUL becomes U+FFFD.
    """
    known = {argument.name: argument for argument in arguments(task)}
    checked: dict[str, str] = {}
    for name, value in values.items():
        if value is None and name in known:
            continue
        if name not in known:
            close = suggest(name, known)
            hint = f"; did you mean '{close}'?" if close else f"; it takes: {', '.join(known)}"
            raise RequestError(f"task '{task.name}' has no argument '{name}'{hint}")
        if not isinstance(value, str):
            raise RequestError(f"argument '{name}' of task '{task.name}' must be a string")
        checked[name] = fs.arg_text(value)
    missing = [
        name for name, argument in known.items() if argument.required and name not in checked
    ]
    if missing:
        raise RequestError(f"task '{task.name}' needs the argument '{missing[0]}'")
    return checked


def find(config: Config, name: str) -> Task:
    """An offered task by name or alias.

    Not by prefix, as `start task` allows: an agent's partial name must not run another task.
    """
    offered = listed(config)
    names = [task.name for task in offered]
    listing = f"known tasks: {', '.join(names)}" if names else "no tasks are offered"
    if not name.strip():
        raise RequestError(f"no task name given; {listing}")
    for task in offered:
        if name in (task.name, task.alias):
            return task
    if name in config.tasks:
        raise RequestError(
            f"task '{name}' is not offered: it is internal or has no description; {listing}"
        )
    prefixed = [other for other in names if other.startswith(name)]
    if len(prefixed) == 1:
        raise RequestError(f"unknown task '{name}'; did you mean '{prefixed[0]}'?")
    raise RequestError(str(UnknownNameError("task", name, names)))


def compose(
    scope: Scope, name: str, values: Mapping[str, object], owner: Owner | None = None
) -> Composed:
    """`prompts/get`: the task composed exactly as a dry run of `start task` composes it.

    `owner` is told of the process group of every command that runs (shell.Owner).
    """
    seen = view(scope)
    task = find(seen.config, name)
    runner = functools.partial(shell.run_all, owner=owner)
    prepared = _prepare(scope, seen, selection(task, check(task, values)), runner)
    return _composed(task, prepared)


def run(scope: Scope, name: str, values: Mapping[str, object], owner: Owner | None = None) -> Run:
    """`run_task`: compose the task, keeping its command's stdout, stderr and exit code apart.

    Raises RequestError (and ConfigError) for a request that cannot name a task; every failure
    after that is a Run that is not ok. `owner` is as for `compose`.
    """
    seen = view(scope)
    task = find(seen.config, name)
    request = selection(task, check(task, values))
    recorder = _Recorder(owner)
    try:
        prepared = _prepare(scope, seen, request, recorder)
    except StartError as error:
        result = recorder.result_of(task)
        if result is None:
            return Run(task.name, False, "", "", None, str(error), "")
        reason = str(error) if result.ok else _failure(task, result)
        return Run(task.name, False, result.stdout, result.stderr, result.returncode, reason, "")
    result = recorder.result_of(task)
    message = _composed(task, prepared).message
    if result is None:
        return Run(task.name, True, "", "", None, "", message)
    return Run(task.name, True, result.stdout, result.stderr, result.returncode, "", message)


class _Recorder:
    """A runner that captures stdout and stderr apart, and keeps the results."""

    def __init__(self, owner: Owner | None = None) -> None:
        self.owner = owner
        self.results: list[CommandResult] = []

    def __call__(self, specs: Sequence[CommandSpec]) -> list[CommandResult]:
        self.results = shell.run_all(
            [spec._replace(separate=True) for spec in specs], owner=self.owner
        )
        return self.results

    def result_of(self, task: Task) -> CommandResult | None:
        """The run of the task's own command: `sources` queues it last, after role and contexts."""
        if self.results and task.command is not None:
            last = self.results[-1]
            if last.spec.command == task.command:
                return last
        return None


def _failure(task: Task, result: CommandResult) -> str:
    how = result.status  # CommandResult's words, with `was` before `killed by SIGNAL`
    if how.startswith("killed by "):
        how = f"was {how}"
    return f"the command of task '{task.name}' {how}"


def _prepare(
    scope: Scope,
    seen: View,
    selection: resolve.Request,
    runner: sources.Runner | None = None,
) -> pipeline.Prepared:
    """`pipeline.prepare` without building the agent command, so no agent needs installing."""
    request = pipeline.LaunchRequest(scope.workdir, selection, seen.use_project)
    try:
        prepared = pipeline.prepare(request, runner, build=False)
    except AgentNotFoundError:
        # Selection failed before anything ran: no agent is chosen and none is on PATH. The
        # composition needs an agent only for {model}, so take the one `start task` would take
        # first once it is installed.
        fallback = _first_agent(seen.config)
        if fallback is None:
            raise
        request = request._replace(selection=selection._replace(agent=fallback))
        prepared = pipeline.prepare(request, runner, build=False)
    prepared.launch.cleanup()
    return prepared


def _plan(config: Config, request: resolve.Request) -> resolve.Plan:
    """`resolve.plan`, with the same fallback as `_prepare` when no agent is on PATH."""
    try:
        return resolve.plan(config, request)
    except AgentNotFoundError:
        fallback = _first_agent(config)
        if fallback is None:
            raise
        return resolve.plan(config, request._replace(agent=fallback))


def _first_agent(config: Config) -> str | None:
    """The user's first agent, else the first shipped one: `resolve.select_agent`'s order."""
    agents = sorted(config.agents.values(), key=lambda a: a.origin.layer == "built-in")
    return agents[0].name if agents else None


def _composed(task: Task, prepared: pipeline.Prepared) -> Composed:
    role = prepared.composition.role
    return Composed(task, role.text if role is not None else "", prepared.composition.prompt)


# --- resources ------------------------------------------------------------------------------


def uri(kind: Kind, name: str) -> str:
    return f"{SCHEME}{kind}/{quote(name, safe='')}"


def resources(config: Config) -> list[Resource]:
    """Every context, then every role, in definition order."""
    found = [
        Resource(uri("context", c.name), "context", c.name, c.description)
        for c in config.contexts.values()
    ]
    found += [
        Resource(uri("role", r.name), "role", r.name, r.description) for r in config.roles.values()
    ]
    return found


def read(scope: Scope, address: str, owner: Owner | None = None) -> str:
    """The text of a context or role, materialised as a launch materialises it.

    A context's or role's command runs; its files are read through the launch's wall. `owner`
    is as for `compose`.
    """
    kind, name = _parse(address)
    seen = view(scope)
    config = seen.config
    items = config.contexts if kind == "context" else config.roles
    if name not in items:
        message = str(UnknownNameError(kind, name, items))
        if seen.note is not None:
            message += f" (only built-in and global items are offered: {seen.note})"
        raise RequestError(message)
    if kind == "role":
        plan = _plan(config, resolve.Request("prompt", role=name))._replace(contexts=())
    else:
        plan = _plan(config, resolve.Request("prompt", no_role=True))
        plan = plan._replace(contexts=(config.contexts[name],))
    grant, _ = pipeline.grant_for(config)
    reader = Reader(config.root, grant, config.settings.file_size_limit)
    runner = functools.partial(shell.run_all, owner=owner)
    composition = sources.compose(config, plan, pipeline.now(), reader, runner)
    if kind == "role":
        assert composition.role is not None
        return composition.role.text
    (part,) = composition.contexts
    if part.status in ("missing", "failed"):
        raise StartError(f"context '{name}': {part.detail}")
    return part.text


def _parse(address: str) -> tuple[Kind, str]:
    for kind in ("context", "role"):
        prefix = f"{SCHEME}{kind}/"
        if address.startswith(prefix) and len(address) > len(prefix):
            return kind, unquote(address[len(prefix) :])
    raise RequestError(
        f"unknown resource '{address}'; start serves start://context/NAME and start://role/NAME"
    )
