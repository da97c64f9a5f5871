"""The dynamic completions the shells ask for: names of agents, roles, contexts, tasks, models,
settings and parameters, loaded from config when a shell asks (see options.completer).

Completions only load and parse config: they never run a command or read a context's file, so they
are safe in a project whose `.start/` is not trusted. The one exception is `task --list-all`, for
the Taskfile tasks of `start task taskfile:<TAB>`, in a project whose Taskfile the user vouches
for (start.runs.taskfile).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress

import click
from click.shell_completion import CompletionItem

from start.base.errors import StartError
from start.cli.state import Options
from start.compose import resolve
from start.config import schema
from start.config.load import load
from start.config.model import Agent, Config, Item, Task
from start.ui import console

Completer = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]


def escaped(item: CompletionItem) -> CompletionItem:
    help_text = console.printable(item.help) if item.help else item.help
    return CompletionItem(console.printable(str(item.value)), type=item.type, help=help_text)


def _options(ctx: click.Context) -> Options:
    return ctx.find_object(Options) or Options()


def _config(ctx: click.Context) -> Config | None:
    options = _options(ctx)
    try:
        return load(options.workdir, use_project=not options.no_project)
    except (StartError, OSError):
        return None


def _matching(items: Iterable[tuple[str, str | None]], incomplete: str) -> list[CompletionItem]:
    return [
        CompletionItem(value, help=text) for value, text in items if value.startswith(incomplete)
    ]


def _named(items: Mapping[str, Item], incomplete: str) -> list[CompletionItem]:
    return _matching(((name, item.description) for name, item in items.items()), incomplete)


def _in_section(ctx: click.Context, section: str | None, incomplete: str) -> list[CompletionItem]:
    """The names of one section of the config (`agents`, `roles`, ...) that match."""
    config = _config(ctx) if section else None
    return _named(getattr(config, section), incomplete) if config and section else []


def _names_in(section: str) -> Completer:
    def complete(
        ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return _in_section(ctx, section, incomplete)

    return complete


complete_agents = _names_in("agents")
complete_roles = _names_in("roles")
complete_contexts = _names_in("contexts")


def complete_tasks(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Task names and aliases, with descriptions; internal tasks are left out, as in listings."""
    config = _config(ctx)
    if config is None:
        return []
    shown = [task for task in config.tasks.values() if not task.internal]
    names = [(task.name, _task_help(task)) for task in shown]
    aliases = [
        (
            task.alias,
            f"alias of {task.name}" + (f": {task.description}" if task.description else ""),
        )
        for task in shown
        if task.alias and task.alias not in config.tasks
    ]
    return _matching([*names, *aliases], incomplete)


def _task_help(task: Task) -> str | None:
    """A task's description; for another agent's command, with its source first."""
    if task.imported is None:
        return task.description
    source = "skill" if task.imported.folder is not None else f"{task.imported.format} command"
    return f"{source}: {task.description}" if task.description else source


def complete_models(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Model aliases of the agent chosen so far on the command line, else of the default agent."""
    config = _config(ctx)
    agent = _agent(ctx, config) if config else None
    if agent is None:
        return []
    return _matching(agent.models.items(), incomplete)


def _agent(ctx: click.Context, config: Config) -> Agent | None:
    # `config add task --agent NAME` is a parameter; the launch flag `-a NAME` is kept in Options.
    wanted = ctx.params.get("agent") or _options(ctx).agent
    task = None
    # While completing an option's value, click leaves the positional arguments unparsed in args.
    name = ctx.params.get("name") or next(iter(ctx.args), None)
    if ctx.command.name == "task" and name:
        with suppress(StartError):
            task = resolve.find_task(config.tasks, name)
    from start.compose.ask import Ask

    request = Ask("session", agents=(wanted,) if wanted else ())
    try:
        return resolve.select_agent(config, request, task)[0]
    except StartError:
        if wanted is not None:
            return None
        return next(iter(config.agents.values()), None)


def complete_settings(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    return _matching(((key, None) for key in schema.SETTINGS), incomplete)


def complete_setting_values(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    section = {"default_agent": "agents", "default_role": "roles"}.get(ctx.params.get("key") or "")
    return _in_section(ctx, section, incomplete)


def complete_kind_names(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """For `config remove KIND NAME`, the names in the layer being edited; for `config add`, the
    names from other layers (a new item of the same name overrides them)."""
    section = schema.SECTION_OF.get(ctx.params.get("kind") or "")
    config = _config(ctx) if section else None
    if config is None or section is None:
        return []
    layer = "project" if ctx.params.get("project") else "global"
    removing = ctx.command.name == "remove"
    items: Mapping[str, Item] = getattr(config, section)
    kept = {n: i for n, i in items.items() if (i.origin.layer == layer) == removing}
    return _named(kept, incomplete)


# --- a name or a file: -r, -c, `start task NAME|PATH` --------------------------------------


def _then_files(names: list[CompletionItem], incomplete: str) -> list[CompletionItem]:
    """The names that match, then the shell's own file completion: when no name matches, or the
    word can only be a path (`./`, `../`, `/`, `~`; see start.compose.adhoc)."""
    from start.compose import adhoc

    if names and not adhoc.forced_path(incomplete) and "/" not in incomplete:
        return names
    return [CompletionItem(incomplete, type="file")]


def _or_files(names: Completer) -> Completer:
    def complete(
        ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return _then_files(names(ctx, param, incomplete), incomplete)

    return complete


complete_role_or_file = _or_files(complete_roles)
complete_context_or_file = _or_files(complete_contexts)


def complete_tasks_and_taskfile(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """`start task`'s names: start's tasks, then the project's Taskfile tasks (`taskfile:NAME`),
    listed by `task` only for a word that can begin such a name, in a Taskfile the user vouches
    for (start.runs.taskfile)."""
    from start.compose.ask import USER
    from start.runs import taskfile
    from start.runs.rules import Scope

    found = complete_tasks(ctx, param, incomplete)
    prefix = taskfile.PREFIX
    if not (incomplete.startswith(prefix) or prefix.startswith(incomplete)):
        return found

    options = _options(ctx)
    try:
        offered = taskfile.find(Scope(options.workdir, not options.no_project), by=USER)
        listed = taskfile.tasks(offered)
    except (StartError, OSError):
        return found
    names = [(prefix + task["name"], f"Taskfile: {task['description']}") for task in listed]
    return [*found, *_matching(names, incomplete)]


complete_task_or_file = _or_files(complete_tasks_and_taskfile)


def complete_params(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """`NAME=` for each parameter of the task on the command line, and `NAME=DEFAULT`.

    Offering both leaves the cursor after `=` (the shells complete the common prefix).
    """
    config = _config(ctx)
    name = ctx.params.get("name") or next(iter(ctx.args), None)
    if config is None or not name:
        return []
    try:
        task = resolve.find_task(config.tasks, name)
    except StartError:
        return []
    items: list[tuple[str, str | None]] = []
    for declared in task.params:
        items.append((f"{declared.name}=", declared.description))
        if declared.default:
            items.append((f"{declared.name}={declared.default}", "the default"))
    return _matching(items, incomplete)


# --- `start show [KIND] NAME` ----------------------------------------------------------------


def complete_show_first(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """A kind, or a name of any kind."""
    from start.cli.workflow_index import declared

    config = _config(ctx)
    kinds = [(kind, f"then a {kind} name") for kind in (*schema.KIND_OF.values(), "workflow")]
    found = _matching(kinds, incomplete)
    if config is None:
        return found
    for section in schema.ITEM_SECTIONS:
        items: Mapping[str, Item] = getattr(config, section)
        found.extend(_named(items, incomplete))
    workflows = declared(config)
    found.extend(_matching(((n, w.description) for n, w in workflows.items()), incomplete))
    return found


def complete_show_name(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The names of the kind given first."""
    from start.cli.workflow_index import WORKFLOW_WORDS
    from start.compose import details

    first = ctx.params.get("first") or ""
    if first in WORKFLOW_WORDS:
        return complete_workflows(ctx, param, incomplete)
    return _in_section(ctx, details.SECTION_OF_WORD.get(first), incomplete)


def complete_runs(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The ids of the recorded runs, newest first, each with what it ran."""
    from start.runs import store as historydb
    from start.ui.console import local_time

    try:
        with historydb.opened(create=False) as store:
            runs = store.runs(50)
    except (StartError, OSError):
        return []
    return _matching(
        (
            (str(run.id), f"{local_time(run.time)} {run.task or run.mode} {run.agent}")
            for run in runs
        ),
        incomplete,
    )


def complete_items(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The ids of this project's board items, each with its status and title: for `claim`, the
    ready ones; for `show` and `comment` (a finished item takes comments too), every one;
    elsewhere, those not completed (what can still change).
    The board is read as it is (no claim is released while completing)."""
    from start.board import COMPLETED, STATUSES
    from start.board import file as boardfile
    from start.board.rows import Filter

    try:
        opened = boardfile.open_board(_options(ctx).workdir, create=False, sweep=False)
    except (StartError, OSError):
        return []
    if opened is None:
        return []
    found = Filter()
    if ctx.command.name == "claim":
        found = Filter(ready=True)
    elif ctx.command.name not in ("show", "comment"):
        found = Filter(tuple(status for status in STATUSES if status != COMPLETED))
    try:
        items, _ = opened.items(found)
    except Exception:  # a completion never fails the shell
        return []
    finally:
        opened.close()
    return _matching(((item.id, f"{item.status}: {item.title}") for item in items), incomplete)


# --- workflows --------------------------------------------------------------------------------


def complete_workflows(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The config's workflows, each with its description (read as `start workflow` lists them:
    neither checked nor parsed, so no JMESPath is loaded on a TAB)."""
    from start.cli.workflow_index import declared

    config = _config(ctx)
    if config is None:
        return []
    found = declared(config)
    return _matching(((name, found[name].description) for name in sorted(found)), incomplete)


def complete_workflow_runs(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The workflow runs on this project's board, the latest changed first, each with its
    workflow and state; a run is offered by its id (item-4), as `start board` names items."""
    from start.cli.workflow_index import runs

    try:
        found, _ = runs(_options(ctx).workdir, 50)
    except Exception:  # a completion never fails the shell
        return []
    return _matching(((run.id, f"{run.state}: {run.workflow}") for run in found), incomplete)
