"""Selection: the command line's choices plus the config become a Plan (it searches PATH)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Literal, TypeVar

from start.base import paths
from start.base.errors import AgentNotFoundError, ExitCode, StartError, UnknownNameError, UsageError
from start.base.record import Record
from start.compose.ask import Ask
from start.config.model import COMMAND_LINE, Agent, Config, Context, Role, Task, column

# `continue`: the text alone, sent to continue a conversation the agent keeps (start continue).
Mode = Literal["session", "prompt", "task", "continue"]
Which = Callable[[str], str | None]
Named = TypeVar("Named", Role, Context)


_NO_PARAMS: Mapping[str, str] = {}

# The reason for a model no one chose (see first_model); the launch summary notes it.
FIRST_MODEL = "the first of the agent's models"


class Plan(Record):
    """Everything chosen for one launch, with the reason for each choice."""

    mode: Mode
    agent: Agent
    agent_reason: str
    model: str | None
    model_reason: str
    role: Role | None
    role_reason: str
    contexts: tuple[Context, ...]
    task: Task | None
    instructions: str | None
    text: str | None
    params: Mapping[str, str] = _NO_PARAMS  # every parameter of the task, with its value


def find_task(tasks: Mapping[str, Task], name: str) -> Task:
    """An exact task name, then an alias, then a unique prefix of a name or alias.

    Only the task found is decoded from a cached config (model.column). A name that is none of
    these raises UnknownNameError with the names it may have meant, by spelling and by its
    words (start.config.finding)."""
    if name in tasks:
        return tasks[name]
    aliases: Mapping[str, str] = column(tasks, "alias")
    for task, alias in aliases.items():
        if alias == name:
            return tasks[task]
    matches: dict[str, None] = {}
    for task in tasks:
        if task.startswith(name) or aliases.get(task, "").startswith(name):
            matches.setdefault(task, None)
    if len(matches) == 1:
        return tasks[next(iter(matches))]
    known = [*tasks, *aliases.values()]
    if matches:
        raise UnknownNameError("task", name, known, candidates=sorted(matches))
    from start.config import finding  # only on this error path: it decodes every task

    raise UnknownNameError("task", name, known, meaning=finding.by_meaning(tasks, name))


def _named(kind: str, items: Mapping[str, Named]) -> Callable[[str], Named]:
    """A lookup by exact name that raises UnknownNameError (with "did you mean")."""

    def by_name(name: str) -> Named:
        if name not in items:
            raise UnknownNameError(kind, name, items)
        return items[name]

    return by_name


def find_role(config: Config, word: str) -> Role:
    """A role by name, or a role file by path (start.compose.adhoc)."""
    if word in config.roles:
        return config.roles[word]
    from start.compose import adhoc

    return adhoc.pick("role", word, config.project.workdir, _named("role", config.roles), Role)


def find_context(config: Config, word: str) -> Context:
    """A context by name, or a context file by path (start.compose.adhoc)."""
    if word in config.contexts:
        return config.contexts[word]
    from start.compose import adhoc

    by_name = _named("context", config.contexts)
    return adhoc.pick("context", word, config.project.workdir, by_name, Context)


def find_task_or_file(config: Config, word: str) -> Task:
    """A task by name, alias or unique prefix (find_task), or a task file by path."""
    try:
        # No path that start.compose.adhoc forces (`./x`, `/x`, `~/x`) can match a name, alias or
        # prefix.
        return find_task(config.tasks, word)
    except UnknownNameError:
        pass
    from start.compose import adhoc

    def by_name(name: str) -> Task:
        return find_task(config.tasks, name)

    return adhoc.pick("task", word, config.project.workdir, by_name, Task)


def select_role(config: Config, request: Ask, task: Task | None) -> tuple[Role | None, str]:
    if request.mode == "continue":
        return None, "the conversation has it"
    if request.no_role:
        return None, "--no-role"
    if request.role is not None:
        return find_role(config, request.role), "--role"
    for name, reason in (
        (task.role if task else None, f"task '{task.name}'" if task else ""),
        (config.settings.default_role, "settings.default_role"),
    ):
        if name is not None:
            if name not in config.roles:
                raise UnknownNameError("role", name, config.roles)
            return config.roles[name], reason
    for role in config.roles.values():
        return role, "first role defined"
    return None, "no roles are defined"


def select_agent(
    config: Config, request: Ask, task: Task | None, which: Which = paths.which
) -> tuple[Agent, str]:
    for name, reason in (
        (request.agent, "--agent"),
        (task.agent if task else None, f"task '{task.name}'" if task else ""),
        (config.settings.default_agent, "settings.default_agent"),
    ):
        if name is not None:
            if name not in config.agents:
                raise UnknownNameError("agent", name, config.agents)
            return config.agents[name], reason
    user = [a for a in config.agents.values() if a.origin.layer != "built-in"]
    shipped = [a for a in config.agents.values() if a.origin.layer == "built-in"]
    for agents, reason in (
        (user, "first configured agent on PATH"),
        (shipped, "first agent on PATH"),
    ):
        for agent in agents:
            if which(os.path.expanduser(agent.bin)):
                return agent, reason
    looked = ", ".join(f"{a.name} ({a.bin})" for a in config.agents.values()) or "none defined"
    raise AgentNotFoundError(
        f"no agent found on PATH; looked for: {looked}.\n"
        "Install one of them, or choose one with --agent NAME, or set "
        f"default_agent under [settings] in {paths.global_config_file()}"
    )


class UnknownModelError(StartError):
    """A model value that looks like a mistyped or ambiguous alias of the agent's models."""

    exit_code = ExitCode.UNKNOWN_NAME


def resolve_model(agent: Agent, wanted: str) -> tuple[str | None, str]:
    """A model alias (any case), a unique alias prefix, or a model id of the agent's table.

    A value one or two letters off an alias is taken for a typo, and a prefix of several aliases
    is ambiguous: both raise UnknownModelError (exit 4). Anything else is a literal model id.
    The empty value means no model: the agent's own default applies.
    """
    if not wanted:
        return None, "none: the agent's own default applies"
    folded = wanted.casefold()
    aliases = {alias.casefold(): alias for alias in agent.models}
    if folded in aliases:
        alias = aliases[folded]
        return agent.models[alias], f"alias '{alias}'"
    prefixed = [alias for key, alias in aliases.items() if key.startswith(folded)]
    if len({agent.models[alias] for alias in prefixed}) == 1:
        return agent.models[prefixed[0]], f"alias prefix of '{prefixed[0]}'"
    if prefixed:
        raise UnknownModelError(
            f"model '{wanted}' is ambiguous for agent '{agent.name}'; it matches: "
            + ", ".join(sorted(prefixed))
        )
    for alias, model in agent.models.items():
        if model == wanted:
            return model, f"model id of alias '{alias}'"
    close = [alias for key, alias in aliases.items() if _typo(folded, key)]
    if close:
        raise UnknownModelError(
            f"unknown model '{wanted}' for agent '{agent.name}'; did you mean "
            + " or ".join(f"'{alias}'" for alias in close)
            + "?"
        )
    return wanted, f"literal id, not an alias of {agent.name}"


def _typo(word: str, alias: str) -> bool:
    """One edit off an alias of 3 to 7 characters, two off a longer one (transpositions too)."""
    if len(alias) < 3:
        return False
    limit = 1 if len(alias) < 8 else 2
    if abs(len(word) - len(alias)) > limit:
        return False
    return _distance(word, alias) <= limit


def _distance(a: str, b: str) -> int:
    """Levenshtein distance with adjacent transpositions (optimal string alignment)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def select_model(agent: Agent, request: Ask, task: Task | None) -> tuple[str | None, str]:
    """--model, else the task's model, else the agent's default_model, else none at all; but
    when the agent's command needs {model}, the first of its models (see first_model)."""
    if request.model is not None:
        model, how = resolve_model(agent, request.model)
        return model, f"--model ({how})"
    if task is not None and task.model is not None:
        try:
            model, how = resolve_model(agent, task.model)
        except UnknownModelError as error:
            raise UnknownModelError(f"task '{task.name}': {error}") from None
        return model, f"task '{task.name}' ({how})"
    imported = task.imported if task is not None else None
    # A command file's `model` is for the agent it was written for (start.config.interop).
    if imported is not None and imported.model is not None and agent.runs(imported.format):
        assert task is not None
        try:
            model, how = resolve_model(agent, imported.model)
        except UnknownModelError as error:
            raise UnknownModelError(f"task '{task.name}': {error}") from None
        return model, f"task '{task.name}' ({how}, from its front matter)"
    if agent.default_model is not None and agent.default_model in agent.models:
        return agent.models[agent.default_model], f"agent default_model '{agent.default_model}'"
    if "{model}" in agent.command:  # else no {model} at all: the template need not be lexed
        from start.proc import argv as agent_template

        if "model" in agent_template.required(agent.command):
            return first_model(agent)
    return None, "none chosen: the agent's own default applies"


def first_model(agent: Agent) -> tuple[str | None, str]:
    """The first of the agent's models, as roles and agents fall back to the first defined: for
    a command that needs {model} when none was chosen. None when the agent has no models."""
    for alias, model in agent.models.items():
        return model, f"{FIRST_MODEL} (alias '{alias}'): its command needs {{model}}"
    return None, "none chosen, and the agent has no models"


def select_contexts(config: Config, mode: Mode, extra: tuple[str, ...] = ()) -> tuple[Context, ...]:
    """Every context for a session; only required ones otherwise; and those named with -c.

    Contexts of the config keep definition order; files named with -c follow, in command-line
    order. A context named twice is included once.
    """
    if mode == "continue":
        return ()  # the agent has them from the conversation's first turn
    named: set[str] = set()
    files: dict[str, Context] = {}
    for word in extra:
        context = find_context(config, word)
        if context.origin.layer == COMMAND_LINE:
            files.setdefault(str(context.origin.path), context)
        else:
            named.add(context.name)
    required = column(config.contexts, "required")  # decoding only the contexts chosen
    chosen = [
        config.contexts[name]
        for name in config.contexts
        if mode == "session" or name in required or name in named
    ]
    return (*chosen, *files.values())


def plan(config: Config, request: Ask, which: Which = paths.which) -> Plan:
    """What the ask selects of the config, with the reason for each choice."""
    task = find_task_or_file(config, request.task) if request.task is not None else None
    values: Mapping[str, str] = _NO_PARAMS
    if task is not None and (task.params or request.params):
        from start.config import params

        values = params.bind(task, tuple(request.params.items()))
    elif request.params:
        raise UsageError("parameters (-p NAME=VALUE) need a task: start task NAME -p ...")
    role, role_reason = select_role(config, request, task)
    agent, agent_reason = select_agent(config, request, task, which)
    model, model_reason = select_model(agent, request, task)
    return Plan(
        mode=request.mode,  # type: ignore[arg-type]
        agent=agent,
        agent_reason=agent_reason,
        model=model,
        model_reason=model_reason,
        role=role,
        role_reason=role_reason,
        contexts=select_contexts(config, request.mode, request.contexts),  # type: ignore[arg-type]
        task=task,
        instructions=request.instructions,
        text=request.prompt,
        params=values,
    )
