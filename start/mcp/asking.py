"""`start mcp`'s asking tools: a prompt or a task, run headless by other agents as `--print` runs
it, the answers returned to the agent that asked.

Three rules keep it safe. No loops: a run marks its environment with its depth (DEPTH_VARIABLE),
and the server records itself as running it (start.proc.lineage), so that a `start mcp` inside the
run finds its depth even when its client passes it a whitelisted environment; a server at
`settings.mcp_depth` or deeper offers no asking tools. Least permission: a run is read-only
unless the caller or the task asks for more, and never goes above `settings.mcp_permissions`,
whatever either says. Trust: the agents and tasks come from `library.view`, which leaves an
untrusted project's `.start/` out.

Nothing here imports the MCP SDK, prints or asks.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from start.base import fs, paths
from start.base.errors import StartError, suggest
from start.base.record import Record
from start.compose import pipeline, resolve
from start.config import schema
from start.config.model import Config, Task
from start.mcp import library
from start.mcp.library import RequestError, Scope
from start.proc import lineage, shell
from start.runs import Run, headless

if TYPE_CHECKING:
    from start.proc import agents as agentrun

# The depth of the `start mcp` that started a run, plus one, in the run's environment.
DEPTH_VARIABLE: Final = "START_MCP_DEPTH"
# A depth that cannot be read counts as too deep: the asking tools are then not offered.
UNREADABLE: Final = 1 << 30
# The most agents one ask_agents call runs.
MOST_AGENTS: Final = 16


class Ask(Record):
    """One asking call: who is asked, and what."""

    agents: tuple[str, ...]
    prompt: str | None = None  # free text, as `start prompt TEXT --print`
    task: str | None = None  # a task, as `start task NAME --print`
    values: Mapping[str, str] = MappingProxyType({})  # the task's instructions and parameters
    model: str | None = None
    permissions: str | None = None  # the level asked for; None: the task's, else read-only


def depth(environ: Mapping[str, str] | None = None) -> int:
    """This process's depth: the deeper of what DEPTH_VARIABLE says (0 when unset, UNREADABLE
    when it is not a count) and what the process tree says (lineage.depth)."""
    value = (os.environ if environ is None else environ).get(DEPTH_VARIABLE, "").strip()
    told = 0
    if value:
        told = int(value) if value.isascii() and value.isdigit() else UNREADABLE
    return max(told, lineage.depth())


def closed(scope: Scope, config: Config) -> str | None:
    """Why this server offers no asking tools, or None when it offers them."""
    limit = config.settings.mcp_depth
    if scope.depth < limit:
        return None
    if scope.depth == UNREADABLE:
        at = f"{DEPTH_VARIABLE} is not a whole number"
    else:
        at = f"it runs at depth {scope.depth}"
    levels = "1 level" if limit == 1 else f"{limit} levels"
    return (
        f"the asking tools are not offered: {at}, inside an agent run that start mcp started, "
        f"and settings.mcp_depth allows {levels}, so that agents cannot ask each other in a loop"
    )


def askable(config: Config, which: Callable[[str], str | None] = paths.which) -> list[str]:
    """The agents that may be asked: those of `settings.mcp_agents` (all when it is empty) that
    have a headless form (`print_command`) and whose CLI is on PATH."""
    names = config.settings.mcp_agents or tuple(config.agents)
    found = []
    for name in names:
        agent = config.agents.get(name)
        if agent is None or agent.print_command is None or agent.print_output is None:
            continue
        if which(os.path.expanduser(agent.bin)):
            found.append(name)
    return found


def allowed(config: Config) -> tuple[str, str]:
    """The highest level at which a caller's run may go, and where it is set:
    settings.mcp_permissions, which a project may lower but never raise (start.config.load)."""
    origin = config.settings.origins.get("mcp_permissions")
    where = f"in {origin.path}" if origin is not None else "by default"
    return config.settings.mcp_permissions, f"settings.mcp_permissions {where}"


def run_level(config: Config, asked: str | None, task: Task | None) -> tuple[str, str]:
    """A caller's run's level and where it comes from: the caller's `permissions`, else the
    task's own, else read-only; never above `allowed`. A task's level may lower a run, and is
    capped; a caller asking for more is refused (RequestError)."""
    most, where = allowed(config)
    top = schema.LEVELS.index(most)
    if asked is not None:
        if schema.LEVELS.index(asked) > top:
            raise RequestError(
                f"refused: a run at '{asked}' permissions needs the user's consent, and the user "
                f"allows '{most}' ({where}). Ask again without 'permissions', or ask the user to "
                "raise settings.mcp_permissions"
            )
        return asked, "the caller's 'permissions' argument"
    if task is not None and task.permissions is not None:
        if schema.LEVELS.index(task.permissions) > top:
            return most, f"{where}, below task {task.name}'s '{task.permissions}'"
        origin = task.origin
        return task.permissions, f"task {task.name}'s permissions ({origin.layer}: {origin.path})"
    return "read-only", "the default"


def offered(scope: Scope, config: Config) -> tuple[list[str], str | None]:
    """The agents the asking tools may run now, and why there are none when there are none."""
    why = closed(scope, config)
    if why is not None:
        return [], why
    agents = askable(config)
    if not agents:
        restricted = " of settings.mcp_agents" if config.settings.mcp_agents else ""
        return [], (
            f"the asking tools are not offered: no agent{restricted} with a headless form "
            "(print_command) is on PATH"
        )
    return agents, None


def instructions(scope: Scope) -> str:
    """What the server's instructions say of the asking tools."""
    try:
        agents, why = offered(scope, library.view(scope).config)
    except StartError:  # library.instructions already says why the config cannot be loaded
        return ""
    if why is not None:
        return f" {why[0].upper()}{why[1:]}."
    return (
        " ask_agent(agent, prompt | task + instructions) runs another agent headless on a prompt "
        "or one of the tasks, as `start task NAME --print` does, and returns its answer; "
        "ask_agents asks several at once; ask_start, ask_result and ask_cancel do the same for "
        "runs longer than the client waits for a tool. Runs are read-only unless the user's "
        f"config allows more. Agents that can be asked: {', '.join(agents)}."
    )


# --- one call -------------------------------------------------------------------------------


def check(arguments: Mapping[str, Any], *, several: bool) -> Ask:
    """The arguments of ask_agent (`agent`) or of ask_agents and ask_start (`agents`) as an Ask,
    once they hold to the tool's input schema (start.mcp.tools.ask_call checks them): here only
    what a schema cannot say.

    Raises RequestError naming what is wrong.
    """
    names = tuple(arguments["agents"]) if several else (arguments["agent"],)
    text: str | None = arguments.get("prompt")
    task: str | None = arguments.get("task")
    if (text is None) == (task is None):
        raise RequestError("give either 'prompt' (the text to ask) or 'task' (a task's name)")
    instructions: str | None = arguments.get("instructions")
    params: Mapping[str, str] = arguments.get("params", {})
    if text is not None and (instructions is not None or params):
        raise RequestError("'instructions' and 'params' go with 'task', not with 'prompt'")
    values = dict(params)
    if instructions is not None:
        values["instructions"] = instructions
    return Ask(
        names,
        fs.arg_text(text) if text is not None else None,
        task,
        values,
        arguments.get("model"),
        arguments.get("permissions"),
    )


def vet(scope: Scope, ask: Ask) -> pipeline.LaunchRequest:
    """Check an ask against the config, running nothing; the launch request it makes.

    Raises RequestError for an agent that may not be asked, a task not offered or its arguments
    wrong, or a permission level the user does not allow; ConfigError for a broken config.
    """
    seen = library.view(scope)
    config = seen.config
    why = closed(scope, config)
    if why is not None:
        raise RequestError(why)
    agents = askable(config)
    for name in ask.agents:
        if name not in agents:
            raise RequestError(not_askable(config, name, agents))
    task: Task | None = None
    if ask.task is not None:
        task = library.find(config, ask.task)
        selection = library.selection(task, library.check(task, ask.values))
        selection = selection._replace(model=ask.model)
    else:
        selection = resolve.Request("prompt", model=ask.model, text=ask.prompt)
    level, source = run_level(config, ask.permissions, task)
    return pipeline.LaunchRequest(
        scope.workdir,
        selection,
        seen.use_project,
        headless=True,
        permissions=level,
        permissions_from=source,
    )


def prepare(scope: Scope, ask: Ask, owner: shell.Owner | None = None) -> list[pipeline.Prepared]:
    """Each asked agent's headless launch, composed once (pipeline.prepare_each), after `vet`.

    Raises what `vet` raises, and StartError for anything else that stops the launch. The task's
    and contexts' commands run here, owned by `owner`. The temp files of the result belong to
    the caller, as for `pipeline.prepare`.
    """
    request = vet(scope, ask)
    runner = functools.partial(shell.run_all, owner=owner)
    # One agent takes the model as asked; of several, each the model it knows (prepare_each).
    if len(ask.agents) == 1:
        one = request.selection._replace(agent=ask.agents[0])
        return pipeline.prepare_each(request._replace(selection=one), [None], runner=runner)
    return pipeline.prepare_each(request, ask.agents, runner=runner)


def not_askable(config: Config, name: str, agents: Sequence[str]) -> str:
    listing = f"agents that can be asked: {', '.join(agents)}"
    agent = config.agents.get(name)
    if agent is None:
        close = suggest(name, agents)
        hint = f"; did you mean '{close}'?" if close else ""
        return f"unknown agent '{name}'{hint}; {listing}"
    if config.settings.mcp_agents and name not in config.settings.mcp_agents:
        why = "settings.mcp_agents leaves it out"
    elif agent.print_command is None or agent.print_output is None:
        why = "it has no headless form (print_command and print_output)"
    else:
        why = f"its CLI '{agent.bin}' is not on PATH"
    return f"agent '{name}' cannot be asked: {why}; {listing}"


def run(
    scope: Scope,
    ask: Ask,
    owner: shell.Owner | None = None,
    on_state: agentrun.State | None = None,
) -> list[Run]:
    """Prepare and run every asked agent to its end (headless.run_each), each run's environment
    marked with this server's depth plus one, and this process recorded as running them at that
    depth meanwhile (lineage.registered); results in the order asked.

    `owner` is told of every process group, the composition's commands and the agents';
    `on_state` of each agent's state, as agentrun.run_agents tells it.
    """
    with lineage.registered(scope.depth + 1):
        each = prepare(scope, ask, owner)
        settings = each[0].config.settings
        mark = {DEPTH_VARIABLE: str(scope.depth + 1)}
        results = headless.run_each(
            each, settings.print_timeout, settings.print_agents, on_state, env=mark, owner=owner
        )
    _record(each, results)
    return results


def _record(each: Sequence[pipeline.Prepared], results: Sequence[Run]) -> None:
    """Put each run in the history, as `--print` does (start.runs.history), with no parameters for
    `start again` to repeat. A history that cannot be written never costs the caller an answer."""
    from start.runs import history, recording

    for prepared, result in zip(each, results, strict=True):
        try:
            recording.record(result, prepared.config.settings)
        except history.HistoryError:
            continue
