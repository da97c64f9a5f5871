"""The ask rules: what an ask may do, by who asked and where it came in, applied once below
every door (start.runs.path), so that no door applies them on its own.

The user's own asks (the command line, `start again`, `start continue`, a board item the user
wrote) run as asked. An agent's ask (an MCP session's `ask_agent`, a board item an agent wrote)
is held to what the user allows agents:

- **no loops**: a run marks its environment with its depth (DEPTH_VARIABLE), and the server
  records itself as running it (start.proc.lineage), so that a `start mcp` inside the run finds
  its depth even when its client passes it a whitelisted environment; at `settings.mcp_depth` or
  deeper, an agent asks nothing;
- **least permission**: its run is read-only unless it or the task asks for more, and never above
  `settings.mcp_permissions`, whatever either says (`run_level`);
- **what may be asked**: the agents of `settings.mcp_agents` that have a headless form and are on
  PATH (`askable`), and the tasks offered (`listed`: with a description, not internal), by name or
  alias, never by prefix; only the fields an agent may give (start.compose.ask.ONLY_THE_USER);
- **trust**: the agents and tasks come from `view`, which leaves an untrusted project's
  `.start/` out.

Whoever asked, a run never goes above the ask's `most` (who shaped it: start.board.cap), which
start.compose.pipeline.level applies. Nothing here imports the MCP SDK, prints or asks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Final

from start.base import fs, paths
from start.base.errors import (
    ConfigError,
    ExitCode,
    StartError,
    UnknownNameError,
    UntrustedError,
    suggest,
)
from start.base.record import Record
from start.compose import pipeline
from start.compose.ask import AGENT, ONLY_THE_USER, Ask
from start.config import schema
from start.config.load import load
from start.config.model import Config, Task


class RequestError(StartError):
    """A request that names nothing offered, or gives arguments a task does not take."""

    exit_code = ExitCode.USAGE


class Scope(Record):
    """Where the server works (`start mcp -d DIR`), and whether a project's `.start/` may count."""

    workdir: str
    use_project: bool = True
    # How many `start mcp` runs this server runs inside (DEPTH_VARIABLE): 0 when a user's
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


def arguments(task: Task) -> tuple[Argument, ...]:
    """A task's prompt arguments: the instructions, then its parameters (start.config.params)."""
    found = [INSTRUCTIONS]
    for param in task.params:
        description = param.description or f"The task's parameter {param.name}"
        if param.default is not None:
            import json  # only an agent's listing of a task's arguments

            description += f" (default: {json.dumps(param.default, ensure_ascii=False)})"
        found.append(Argument(param.name, description, required=param.default is None))
    return tuple(found)


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


# The depth of the `start mcp` that started a run, plus one, in the run's environment.
DEPTH_VARIABLE: Final = "START_MCP_DEPTH"
# A depth that cannot be read counts as too deep: the asking tools are then not offered.
UNREADABLE: Final = 1 << 30
# The most agents one ask_agents call runs.
MOST_AGENTS: Final = 16


def depth(environ: Mapping[str, str] | None = None) -> int:
    """This process's depth: the deeper of what DEPTH_VARIABLE says (0 when unset, UNREADABLE
    when it is not a count) and what the process tree says (lineage.depth)."""
    from start.proc import lineage  # the process tree: only where an agent may ask

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


# --- one ask --------------------------------------------------------------------------------


def vet(scope: Scope, ask: Ask) -> Ask:
    """The ask as the rules let it run, running nothing: the user's as it is; an agent's with
    its task named as offered, its instructions and parameters checked, its level set and where
    that comes from, and the project's `.start/` left out when it is not trusted.

    Raises RequestError for an agent that may not be asked, a task not offered or its arguments
    wrong, a field an agent may not give, or a permission level the user does not allow;
    ConfigError for a broken config.
    """
    if ask.by != AGENT:
        return ask
    defaults = Ask()
    given = [
        name
        for name in sorted(ONLY_THE_USER - _SET_BY_THE_DOOR)
        if getattr(ask, name) != getattr(defaults, name)
    ]
    if given:
        raise RequestError(f"an agent cannot ask for {given[0]}: only the user's own asks give it")
    seen = view(scope)
    config = seen.config
    why = closed(scope, config)
    if why is not None:
        raise RequestError(why)
    agents = askable(config)
    if not ask.agents:
        raise RequestError("name at least one agent")
    for name in ask.agents:
        if name not in agents:
            raise RequestError(not_askable(config, name, agents))
    task: Task | None = None
    if ask.task is not None:
        task = find(config, ask.task)
        values = dict(ask.params)
        if ask.instructions is not None:
            values[INSTRUCTIONS.name] = ask.instructions
        checked = check(task, values)
        text = checked.pop(INSTRUCTIONS.name, "")
        params = {p.name: checked[p.name] for p in task.params if p.name in checked}
        ask = ask._replace(
            task=task.name,
            instructions=text if text.strip() else None,
            params=MappingProxyType(params),
        )
    level, source = run_level(config, ask.permissions, task)
    return ask._replace(
        permissions=level,
        permissions_from=source,
        no_project=not seen.use_project,
        directory=scope.workdir,
    )


# What the door says of an agent's ask, which the agent cannot: `timeout` is the user's own
# (`start board run --timeout`) when the board runs an item an agent wrote, and `item` names that
# item for the log.
_SET_BY_THE_DOOR: Final = frozenset(
    {
        "mode",
        "headless",
        "directory",
        "door",
        "by",
        "most",
        "most_from",
        "no_project",
        "timeout",
        "item",
    }
)
