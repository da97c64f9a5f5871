"""The review shown before approval: what the project config would run, read and choose."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from start.base import paths
from start.base.record import Record
from start.config.model import Config, Item, Origin
from start.trust.scan import (
    FILE,
    FILE_LIMIT,
    OUTSIDE,
    SYMLINK,
    Entry,
    Named,
    Scan,
    current_bytes,
    within,
)
from start.trust.store import COPY_LIMIT, Approval, Copy, records


class Mention(Record):
    """A command, binary, path or setting the project config uses, for the review."""

    key: str
    value: str
    where: str = ""  # "outside project root", "inside the project", "on PATH" or ""


class Defined(Record):
    """An item that the project layer defines, with every field its file sets. It replaces an
    item of the same kind and name in the layers below, whole: these fields are all it has."""

    section: str  # "agents", "roles", "contexts", "tasks" or "workflows"
    name: str
    path: str  # the file that defines it
    fields: tuple[Mention, ...]  # keys below the item ("print_permissions.read-only")
    data: Mapping[str, Any]  # the same fields as the config spells them (`config show --json`)
    replaces: Origin | None = None  # where the item of that name it replaces is defined

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"


# The fields that are text for the agent, or for a model (a description is listed to MCP
# callers): the terminal's question shows their first lines. Commands and options always show
# whole.
_TEXT_FIELDS = frozenset({"prompt", "large_prompt", "template", "description"})


def is_text(key: str) -> bool:
    """Whether a field of an item (`prompt`, `params.focus.default`, a workflow's
    `steps.plan.prompt`) is text, not a command."""
    parts = key.split(".")
    if parts[0] == "params":
        return parts[-1] in ("default", "description")
    if parts[0] == "steps" and len(parts) == 3:
        return parts[2] in _TEXT_FIELDS
    return key in _TEXT_FIELDS


class Change(Record):
    label: str
    status: str  # "added", "changed", "removed" or "same"
    diff: tuple[str, ...] = ()
    what: str = FILE  # what the entry is (scan.FILE, SYMLINK, OUTSIDE, ...)
    taskfile: bool = False  # the Taskfile, pinned apart from the files (scan.Scan.taskfile)


class Review(Record):
    """Everything approval allows, and how it differs from the last approval of this root."""

    scan: Scan
    commands: tuple[Mention, ...]
    binaries: tuple[Mention, ...]
    environment: tuple[Mention, ...]  # NAME=value words of agent commands
    files: tuple[Mention, ...]
    items: tuple[Defined, ...]  # every field of every project item
    settings: tuple[Mention, ...]  # every project setting that applies
    # The project's Taskfile, which start mcp offers to agents once the project is approved.
    taskfiles: tuple[Mention, ...]
    previous: Approval | None
    changes: tuple[Change, ...]
    errors: int
    warnings: tuple[str, ...]


# --- reviewing ------------------------------------------------------------------------------


def changes(found: Scan, previous: Approval, *, diff: bool = True) -> list[Change]:
    """How the files now differ from an earlier approval, with a unified diff of text files;
    the Taskfile's change last."""
    old = {(c.label, c.what): c for c in previous.copies}
    new = {(e.label, e.what): e for e in found.entries}
    result = [
        _change(label, what, old.get((label, what)), new.get((label, what)), diff)
        for label, what in sorted(old.keys() | new.keys())
    ]
    # The Taskfile: one place at a time, compared whatever its path (a record from before
    # approvals pinned it has none, so it is added).
    before, after = previous.taskfile, found.taskfile
    if after is not None and after.what != FILE:  # never pinned: the review says why
        if before is not None:
            status = "changed" if before.label == after.label else "removed"
            result.append(Change(before.label, status, taskfile=True))
        return result
    if before is not None and (after is None or before.label != after.label):
        result.append(_change(before.label, FILE, before, None, diff)._replace(taskfile=True))
        before = None
    if after is not None:
        result.append(_change(after.label, FILE, before, after, diff)._replace(taskfile=True))
    return result


def _change(label: str, what: str, before: Copy | None, after: Entry | None, diff: bool) -> Change:
    """How one entry differs from its approved copy, with a diff of a text file's lines."""
    import difflib

    if after is None:
        return Change(label, "removed", what=what)
    if before is not None and before.digest == after.digest:
        return Change(label, "same", what=what)
    status = "added" if before is None else "changed"
    lines: tuple[str, ...] = ()
    if diff and what == FILE:
        old_text = before.text if before is not None else ""
        new_text = _text(current_bytes(after))
        if old_text is not None and new_text is not None:
            lines = tuple(
                line.rstrip("\n")
                for line in difflib.unified_diff(
                    old_text.splitlines(keepends=True),
                    new_text.splitlines(keepends=True),
                    f"a/{label}" if before is not None else "/dev/null",
                    f"b/{label}",
                )
            )
    elif diff and what == SYMLINK and before is not None:
        lines = (f"symlink now points to {after.target}",)
    return Change(label, status, lines, what)


def _text(data: bytes) -> str | None:
    if len(data) > COPY_LIMIT:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def review(config: Config, found: Scan, warnings: tuple[str, ...] = ()) -> Review:
    """What approving `found` allows: every field of every item and every setting of the
    project layer, and, gathered from them, the commands, binaries, variables and files."""
    from start.proc import argv as agent

    real_root = os.path.realpath(found.root)
    commands: list[Mention] = []
    binaries: list[Mention] = []
    environment: list[Mention] = []
    items: list[Defined] = []
    below = _below(config)

    def where(path: str) -> str:
        real = os.path.realpath(path)
        return "inside the project" if within(real, real_root) else "outside project root"

    for section in ("agents", "roles", "contexts", "tasks"):
        defined: Mapping[str, Any] = getattr(config, section)
        for name, item in defined.items():
            if item.origin.layer != "project":
                continue
            key = f"{section}.{name}"
            items.append(_defined(section, item, below))
            if section == "agents":
                bin_ = item.bin
                place = "on PATH"
                if os.sep in bin_:
                    place = where(paths.expand(bin_, found.root))
                binaries.append(Mention(f"{key}.bin", bin_, place))
                for field in ("command", "print_command", "resume_command"):
                    template = getattr(item, field)
                    if template is None:
                        continue
                    commands.append(Mention(f"{key}.{field}", template))
                    for variable, value in agent.assignments(template):
                        environment.append(Mention(f"{key}.{field}", f"{variable}={value}"))
                continue
            imported = getattr(item, "imported", None)
            if imported is not None:
                # Another agent's command file: its shell commands, as they run.
                for snippet in imported.snippets():
                    commands.append(Mention(f"{key}: line {snippet.line}", snippet.command))
            if item.command is not None:
                commands.append(Mention(f"{key}.command", item.command))
            if item.shell is not None:
                binaries.append(Mention(f"{key}.shell", item.shell))
    items += _workflows(config, below)
    files = [_file(named) for named in found.named]
    settings = []
    for name, origin in config.settings.origins.items():
        if origin.layer == "project":
            value = getattr(config.settings, name)
            import json  # a launch imports this module (start.trust), but never reviews

            settings.append(Mention(f"settings.{name}", json.dumps(value)))
            if name == "shell":
                binaries.append(Mention("settings.shell", str(value)))
    taskfiles = [] if found.taskfile is None else [_taskfile_mention(found.taskfile)]
    earlier, more = records(found.root)
    previous = earlier[-1] if earlier else None
    diff = tuple(changes(found, previous)) if previous is not None else ()
    return Review(
        found,
        tuple(commands),
        tuple(binaries),
        tuple(environment),
        tuple(files),
        tuple(items),
        tuple(settings),
        tuple(taskfiles),
        previous,
        diff,
        len(config.errors),
        (*warnings, *(m for m in more if m not in warnings)),
    )


def _taskfile_mention(entry: Entry) -> Mention:
    """The Taskfile, where it is, and why it is not offered when it cannot be pinned."""
    if entry.what == FILE:
        return Mention("taskfile", entry.label, "inside the project")
    if entry.what == OUTSIDE:
        return Mention("taskfile", f"{entry.label} -> {entry.target}", "outside project root")
    return Mention(
        "taskfile", entry.label, f"not a regular file of at most {FILE_LIMIT:,} bytes: not offered"
    )


def _below(config: Config) -> Config | None:
    """The config of the user's own layers, whose items the project's replace; None when it
    cannot be loaded (the review then names nothing replaced). Parsed from the files, as the
    review's own config is: never the cache."""
    from start.base.errors import StartError
    from start.config.load import load

    try:
        return load(config.project.workdir, use_project=False, use_cache=False)
    except (StartError, OSError):
        return None


def _defined(section: str, item: Item, below: Config | None) -> Defined:
    """A project item with every field it sets; nested tables as dotted keys."""
    from start.config.show import item_fields

    data = item_fields(item)
    fields = tuple(Mention(key, _shown(value)) for key, value in _flat("", data))
    earlier = getattr(below, section).get(item.name) if below is not None else None
    replaces = earlier.origin if earlier is not None else None
    return Defined(section, item.name, item.origin.path, fields, data, replaces)


def _workflows(config: Config, below: Config | None) -> list[Defined]:
    """The project's workflows with every field their tables set, as their files hold them:
    each step's prompt or task, agent, permissions, conditions and bindings decide what runs."""
    from start.config.workflow_tables import tables

    earlier = tables(below) if below is not None else {}
    found = []
    for name, (origin, table) in tables(config).items():
        if origin.layer != "project":
            continue
        fields = tuple(Mention(key, _shown(value)) for key, value in _flat("", table))
        replaces = earlier[name][0] if name in earlier else None
        found.append(Defined("workflows", name, origin.path, fields, table, replaces))
    return found


def _flat(prefix: str, value: Any) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of each field; a task's inline output schema stays whole."""
    if isinstance(value, dict) and value and prefix != "output.schema":
        for key, inner in value.items():
            yield from _flat(f"{prefix}.{key}" if prefix else str(key), inner)
    else:
        yield prefix, value


def _shown(value: Any) -> str:
    """A value as the review shows it: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    import json  # a launch imports this module (start.trust), but never reviews

    return json.dumps(value, ensure_ascii=False)


_WHERE = {
    "start": "in .start/, covered by its bytes",
    "inside": "inside the project, read as it is at launch",
    "outside": "outside project root",
}


def _file(named: Named) -> Mention:
    """A named file, with its real target when a symlink (or `..`) leads elsewhere."""
    shown = str(named.path)
    if os.path.normpath(shown) != named.real:
        shown = f"{shown} -> {named.real}"
    return Mention(named.key, shown, _WHERE[named.where])
