"""What `start mcp` offers for one directory, computed afresh for every request.

Tasks, prompts and resources come from the same load, trust check and composition as a launch
(`pipeline.prepare`, files through `wall.Reader`, commands through `shell`). Nothing here imports
the MCP SDK, prints or asks: an untrusted project's `.start/` is left out, with a note saying why.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, unquote

from start.base.errors import (
    AgentNotFoundError,
    StartError,
    UnknownNameError,
)
from start.base.record import Record
from start.base.wall import Reader
from start.compose import pipeline, resolve, sources
from start.compose.ask import Ask
from start.config.model import Config, Task
from start.proc import shell
from start.proc.shell import CommandResult, CommandSpec
from start.runs.rules import INSTRUCTIONS, RequestError, Scope, View, check, find, listed, view

if TYPE_CHECKING:
    from start.proc.shell import Owner

Kind = Literal["context", "role"]
SCHEME = "start://"


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


def instructions(scope: Scope) -> str:
    """The server's `instructions` for the agent: what it offers, and what it leaves out."""
    text = (
        f"start serves the user's tasks for {scope.workdir}. Each task is a prompt; the "
        "list_tasks tool lists them and run_task(task_name, instructions) composes one as "
        "`start task NAME INSTRUCTIONS` would, running its command, and returns the command's "
        "output followed by the composed prompt, which you then follow; find_tasks(text) ranks "
        "them by what they do. Contexts and roles are resources: start://context/NAME and "
        "start://role/NAME."
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


def selection(scope: Scope, seen: View, task: Task, values: Mapping[str, object]) -> Ask:
    """The ask `start task NAME INSTRUCTIONS -p NAME=VALUE...` makes, its values checked
    (RequestError for a wrong one)."""
    checked = check(task, values)
    text = checked.pop(INSTRUCTIONS.name, "")
    return Ask(
        "task",
        task=task.name,
        instructions=text if text.strip() else None,
        params={p.name: checked[p.name] for p in task.params if p.name in checked},
        directory=scope.workdir,
        no_project=not seen.use_project,
    )


def compose(
    scope: Scope, name: str, values: Mapping[str, object], owner: Owner | None = None
) -> Composed:
    """`prompts/get`: the task composed exactly as a dry run of `start task` composes it.

    `owner` is told of the process group of every command that runs (shell.Owner).
    """
    seen = view(scope)
    task = find(seen.config, name)
    runner = functools.partial(shell.run_all, owner=owner)
    prepared = _prepare(seen, selection(scope, seen, task, values), runner)
    return _composed(task, prepared)


def run(scope: Scope, name: str, values: Mapping[str, object], owner: Owner | None = None) -> Run:
    """`run_task`: compose the task, keeping its command's stdout, stderr and exit code apart.

    Raises RequestError (and ConfigError) for a request that cannot name a task; every failure
    after that is a Run that is not ok. `owner` is as for `compose`.
    """
    seen = view(scope)
    task = find(seen.config, name)
    request = selection(scope, seen, task, values)
    recorder = _Recorder(owner)
    try:
        prepared = _prepare(seen, request, recorder)
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


def _prepare(seen: View, request: Ask, runner: sources.Runner | None = None) -> pipeline.Prepared:
    """`pipeline.prepare` without building the agent command, so no agent needs installing."""
    try:
        prepared = pipeline.prepare(request, runner, build=False)
    except AgentNotFoundError:
        # Selection failed before anything ran: no agent is chosen and none is on PATH. The
        # composition needs an agent only for {model}, so take the one `start task` would take
        # first once it is installed.
        fallback = _first_agent(seen.config)
        if fallback is None:
            raise
        prepared = pipeline.prepare(request._replace(agents=(fallback,)), runner, build=False)
    prepared.launch.cleanup()
    return prepared


def _plan(config: Config, request: Ask) -> resolve.Plan:
    """`resolve.plan`, with the same fallback as `_prepare` when no agent is on PATH."""
    try:
        return resolve.plan(config, request)
    except AgentNotFoundError:
        fallback = _first_agent(config)
        if fallback is None:
            raise
        return resolve.plan(config, request._replace(agents=(fallback,)))


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
        plan = _plan(config, Ask(role=name))._replace(contexts=())
    else:
        plan = _plan(config, Ask(no_role=True))
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
