"""One item in detail, for `start show`: where it is defined and what it replaces there, its
fields, its text with its files read, and for a task the role, agent and model it would select.

Files are read as a launch reads them (start.base.wall.Reader, with the project's grant). In an
untrusted project, the files of project items are not read and no command runs; elsewhere a
command runs only when asked (`run`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from start.base import fs, template
from start.base.errors import StartError, UnknownNameError, UntrustedError, UsageError, suggest
from start.base.paths import expand
from start.base.record import Record
from start.base.wall import Grant, Reader
from start.compose import resolve, sources
from start.compose.ask import Ask
from start.config import files, params, positions, schema
from start.config.load import load
from start.config.model import LAYERS, Agent, Config, Item, Param, Task

# The words for a kind on the command line, singular or plural (as `config show` takes them),
# and the section each one names.
SECTION_OF_WORD: Mapping[str, str] = {
    **{section: section for section in schema.ITEM_SECTIONS},
    **schema.SECTION_OF,
}


class Place(Record):
    """Where an item is defined: its layer, file and line (None when it cannot be found)."""

    layer: str
    path: str
    line: int | None

    def __str__(self) -> str:
        at = f":{self.line}" if self.line is not None else ""
        return f"{self.layer}: {self.path}{at}"


class Choice(Record):
    """What a task would select (`role`, `agent` or `model`), and why."""

    what: str
    value: str | None  # None: none, or it cannot be chosen (the reason says why)
    reason: str


class Continuing(Record):
    """Whether `start continue` can continue an agent's headless runs, and why."""

    able: bool
    reason: str


class Details(Record):
    section: str  # agents, roles, contexts or tasks
    item: Item
    place: Place
    replaces: tuple[Place, ...]  # the same name in lower layers, nearest first
    text: str | None  # the item's text; None for an agent
    notes: tuple[str, ...]  # what was not read or run, and why
    choices: tuple[Choice, ...]  # a task's role, agent and model
    trust: str  # the project's trust, in a few words
    continuing: Continuing | None = None  # for an agent

    @property
    def kind(self) -> str:
        return schema.KIND_OF[self.section]

    @property
    def params(self) -> tuple[Param, ...]:
        return self.item.params if isinstance(self.item, Task) else ()


# --- finding the item ----------------------------------------------------------------------


def find(config: Config, kind_word: str | None, name: str) -> tuple[str, Item]:
    """The item NAME of KIND; without KIND, the one item of any kind with that name.

    Tasks are found as `start task` finds them (name, alias, unique prefix). Raises UsageError
    for an unknown KIND, UnknownNameError (exit 4) for an unknown or ambiguous name.
    """
    if kind_word is not None:
        section = SECTION_OF_WORD.get(kind_word)
        if section is None:
            close = suggest(kind_word, SECTION_OF_WORD)
            hint = (
                f"did you mean '{close}'?"
                if close
                else f"choose from {', '.join(schema.ITEM_SECTIONS)}"
            )
            raise UsageError(f"unknown kind '{kind_word}'; {hint}")
        if section == "tasks":
            return section, resolve.find_task(config.tasks, name)
        items: Mapping[str, Item] = getattr(config, section)
        if name not in items:
            raise UnknownNameError(schema.KIND_OF[section], name, items)
        return section, items[name]
    exact: list[tuple[str, Item]] = []
    for section in schema.ITEM_SECTIONS:
        items = getattr(config, section)
        if name in items:
            exact.append((section, items[name]))
    if not any(section == "tasks" for section, _ in exact):
        aliased = next((t for t in config.tasks.values() if t.alias == name), None)
        if aliased is not None:
            exact.append(("tasks", aliased))
    if len(exact) == 1:
        return exact[0]
    if exact:
        raise AmbiguousNameError(name, [(schema.KIND_OF[k], i.name) for k, i in exact])
    try:
        return "tasks", resolve.find_task(config.tasks, name)
    except UnknownNameError as error:
        if error.candidates:
            raise
        meaning = error.meaning
    everything = [n for section in schema.ITEM_SECTIONS for n in getattr(config, section)]
    everything += [task.alias for task in config.tasks.values() if task.alias]
    raise UnknownNameError("name", name, everything, meaning=meaning)


class AmbiguousNameError(UnknownNameError):
    """A name that items of several kinds have (exit 4): the kind must be given."""

    def __init__(self, name: str, found: list[tuple[str, str]]) -> None:
        super().__init__("name", name, (), candidates=[f"{kind} {item}" for kind, item in found])
        self.args = (f"{self.args[0]}\nName its kind: start show {found[0][0]} {name}",)


# --- where it is defined -------------------------------------------------------------------


def place(section: str, item: Item) -> Place:
    """The item's layer, file and the line of its table (or first key)."""
    line = None
    data, _ = files.read_bytes(item.origin.path)
    if data is not None:
        entries = positions.scan(data.decode("utf-8", "replace"))
        spellings = [section, *(s for s, c in schema.SECTION_SYNONYMS.items() if c == section)]
        for spelling in spellings:
            entry = entries.get(f"{spelling}.{item.name}")
            if entry is not None:
                line = entry.line
                break
    return Place(item.origin.layer, item.origin.path, line)


def replaced(config: Config, section: str, item: Item) -> tuple[Place, ...]:
    """The items of the same kind and name in the layers below the item's own, nearest first.

    Each layer is loaded on its own (as `config show --layer` does), off the launch path.
    """
    if item.origin.layer not in LAYERS:
        return ()
    below = LAYERS[: LAYERS.index(item.origin.layer)]
    found: list[Place] = []
    for layer in reversed(below):
        if config.layer_dirs.get(layer) is None:
            continue
        alone = load(config.project.workdir, use_project=False, layers=(layer,))
        items: Mapping[str, Item] = getattr(alone, section)
        if item.name in items:
            found.append(place(section, items[item.name]))
    return tuple(found)


# --- its text ------------------------------------------------------------------------------


def grant(config: Config) -> tuple[Grant | None, bool | None, str]:
    """The project's grant, whether the project is trusted (None: there is no project layer),
    and why; never asks."""
    if not config.has_project:
        return None, None, "no project config"
    from start import trust

    try:
        found, _ = trust.grant(config)
    except UntrustedError as error:
        return None, False, str(error)
    if found is None:
        return None, None, "no project config"
    return found, True, f"trusted ({found.reason})"


def describe(config: Config, section: str, item: Item, *, run: bool = False) -> Details:
    """Everything `start show` says about one item. Runs the item's command only with `run`,
    and never in an untrusted project."""
    granted, trusted, trust_note = grant(config)
    choices: tuple[Choice, ...] = ()
    text: str | None = None
    notes: list[str] = []
    if section != "agents":
        from start.compose.pipeline import now

        values: dict[str, str] = {"date": now()}
        env: dict[str, str] | None = None
        if isinstance(item, Task):
            choices, model = _choices(config, item)
            if model is not None:
                values["model"] = model
            bound = {p.name: p.default for p in item.params if p.default is not None}
            values.update(bound)
            env = params.environment(bound, None)
            notes.extend(
                f"parameter '{p.name}' has no default: {{{p.name}}} is shown as written"
                for p in item.params
                if p.default is None
            )
        reader = Reader(config.root, granted, config.settings.file_size_limit)
        if isinstance(item, Task) and item.imported is not None:
            text = _imported_text(config, item, reader, trusted, run, notes)
        else:
            text = _text(config, section, item, reader, trusted, run, values, env, notes)
    return Details(
        section,
        item,
        place(section, item),
        replaced(config, section, item),
        text,
        tuple(notes),
        choices,
        trust_note,
        continuing(item, config.agents) if isinstance(item, Agent) else None,
    )


def continuing(agent: Agent, agents: Mapping[str, Agent]) -> Continuing:
    """Whether `start continue` can continue the agent's headless runs: only through a
    resume_command, which its CLI's headless form must have a way to take."""
    from start.compose.launch import able_to_continue

    if agent.resume_command is not None:
        return Continuing(True, "start continue resumes its headless runs' conversations")
    if agent.print_command is None:
        return Continuing(False, "it has no headless form (print_command) to continue")
    able = ", ".join(able_to_continue(agents)) or "none"
    return Continuing(
        False,
        'it has no resume_command, which start continue needs ("Continuing a conversation" '
        f"in 'start help agents' says which CLIs can resume headless). Agents that can: {able}",
    )


def _choices(config: Config, task: Task) -> tuple[tuple[Choice, ...], str | None]:
    """The role, agent and model `start task NAME` would select, and why."""
    request = Ask("task", task=task.name)
    choices: list[Choice] = []
    try:
        role, why = resolve.select_role(config, request, task)
        choices.append(Choice("role", role.name if role else None, why))
    except StartError as error:
        choices.append(Choice("role", None, str(error)))
    model = None
    try:
        agent, why = resolve.select_agent(config, request, task)
    except StartError as error:
        choices.append(Choice("agent", None, str(error)))
        return tuple(choices), None
    choices.append(Choice("agent", agent.name, why))
    try:
        model, why = resolve.select_model(agent, request, task)
        choices.append(Choice("model", model, why))
    except StartError as error:
        choices.append(Choice("model", None, str(error)))
    return tuple(choices), model


def _text(
    config: Config,
    section: str,
    item: Any,
    reader: Reader,
    trusted: bool | None,
    run: bool,
    values: dict[str, str],
    env: dict[str, str] | None,
    notes: list[str],
) -> str:
    from start.base.wall import WallError

    kind = schema.KIND_OF[section]
    used = template.names(item.prompt) if item.prompt is not None else None
    file = expand(item.file, config.root) if item.file is not None else None
    file_text = ""
    if file is not None and (used is None or "file_contents" in used):
        if item.origin.layer == "project" and trusted is False:
            file_text = f"[{file}: not read, the project is not trusted]"
            notes.append(f"{file} was not read: the project is not trusted; run 'start trust'")
        else:
            relative = not (item.file.startswith("~") or os.path.isabs(item.file))
            try:
                read = reader.read(file, layer=item.origin.layer, relative=relative)
            except (fs.FileError, WallError) as error:
                file_text = f"[{file}: not read]"
                reason = error.reason if isinstance(error, fs.FileError) else str(error)
                notes.append(f"{file} was not read: {reason}")
            else:
                file_text = fs.capped_text(read.data, read.truncated)
                if read.truncated:
                    notes.append(
                        f"{file} is cut to its first {len(read.data):,} bytes "
                        "(settings.file_size_limit)"
                    )
    output = ""
    if item.command is not None and (used is None or "command_output" in used):
        if trusted is False:
            output = "[command output: not run]"
            notes.append("the command was not run: commands never run in an untrusted project")
        elif not run:
            output = "[command output: not run]"
            notes.append("the command was not run: --run runs it")
        else:
            output = _run(config, kind, item, env, notes)
    text, _ = sources.text_of(kind, item, file, file_text, output, values)
    return text


def _imported_text(
    config: Config, task: Task, reader: Reader, trusted: bool | None, run: bool, notes: list[str]
) -> str:
    """An imported task's text without instructions: its files read and its shell commands run
    as a launch would (start.compose.expand), when allowed."""
    from start.base.errors import CommandError
    from start.compose.expand import Expansion

    untrusted = task.origin.layer == "project" and trusted is False
    if untrusted and task.imported is not None and task.imported.includes():
        notes.append("its files were not read: the project is not trusted; run 'start trust'")
    # A parameter without a default is shown as the source wrote it (Codex's $KEY).
    values = {
        p.name: p.default if p.default is not None else f"${p.name.upper()}" for p in task.params
    }
    expansion = Expansion(task, None, values, config, None if untrusted else reader)
    results = None
    if expansion.specs:
        if trusted is False:
            notes.append("the commands were not run: commands never run in an untrusted project")
        elif not run:
            notes.append("the commands were not run: --run runs them")
        else:
            from start.proc import shell

            results = shell.run_all(expansion.specs)
    try:
        text = expansion.finish(results)
    except CommandError as error:
        notes.append(str(error))
        text = expansion.finish(None)
    notes.extend(dict.fromkeys(expansion.notes))
    return text


def _run(config: Config, kind: str, item: Any, env: dict[str, str] | None, notes: list[str]) -> str:
    from start.proc import shell

    spec = sources.command_spec(config, item, f"{kind} {item.name}", env)
    result = shell.run_all([spec])[0]
    if not result.ok:
        notes.append(f"the command {result.status}")
    return result.output


def as_data(details: Details) -> dict[str, Any]:
    """The details as JSON data."""
    from start.config import show

    def where(found: Place) -> dict[str, Any]:
        return {"layer": found.layer, "file": str(found.path), "line": found.line}

    fields = show.item_fields(details.item)
    fields.pop("params", None)
    data: dict[str, Any] = {
        "kind": details.kind,
        "name": details.item.name,
        **where(details.place),
        "replaces": [where(found) for found in details.replaces],
        "fields": fields,
        "params": [
            {
                "name": p.name,
                "default": p.default,
                "description": p.description,
                "env": params.env_name(p.name),
            }
            for p in details.params
        ],
        "text": details.text,
        "notes": list(details.notes),
        "trust": details.trust,
    }
    if details.continuing is not None:
        data["continue"] = {
            "able": details.continuing.able,
            "reason": details.continuing.reason,
        }
    if details.choices:
        data["selects"] = {
            choice.what: {"value": choice.value, "reason": choice.reason}
            for choice in details.choices
        }
    return data
