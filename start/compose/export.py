"""`start export skills DIR`: tasks as Agent Skills folders (`DIR/NAME/SKILL.md`).

The body of each SKILL.md holds the task's text, composed here once: its template filled, its
file read through the wall, `{instructions}` written as `$ARGUMENTS`. It does not call `start`:
of the agents that read skills only Claude Code runs a shell command in one, and a fixed text
works in every one of them. A task whose text changes at each launch (a `command`, `{date}`,
`{model}`, a parameter without a default) cannot be a fixed text and is not exported.

The export is deterministic (the same config writes the same bytes) and idempotent (a folder that
already holds them is not written). Each folder start writes holds MARKER, a JSON record of the
files written and their digests; a folder without it, or whose SKILL.md changed since, is never
overwritten.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Final

from start.base import atomic, fs, jsontext, template
from start.base.errors import StartError, UnknownNameError, UntrustedError
from start.base.paths import expand
from start.base.record import Record
from start.base.wall import Reader, WallError
from start.compose import sources
from start.config.model import Config, Task
from start.config.schema import NAME_PATTERN

MARKER: Final = ".start-export"
SKILL_FILE: Final = "SKILL.md"
MAX_NAME: Final = 64  # the Agent Skills format's longest name
WRITTEN, UNCHANGED = "written", "unchanged"
# A Claude Code argument reference and shell command: escaped or refused in an exported text.
_REFERENCE: Final = re.compile(r"\$(?=ARGUMENTS|\d)")
_SHELL: Final = re.compile(r"(?:^|(?<=\s))!`[^`]+`|^```!", re.MULTILINE)


class ExportError(StartError):
    """An export that would overwrite what start did not write, or cannot write."""


class Skill(Record):
    task: str
    path: str  # the folder
    status: str  # WRITTEN or UNCHANGED


class Skipped(Record):
    task: str
    reason: str


class Export(Record):
    directory: str
    skills: tuple[Skill, ...]
    skipped: tuple[Skipped, ...]


def skills(config: Config, directory: str, names: Sequence[str] = ()) -> Export:
    """Write one skill folder for each task named (every task `start task` lists, by default).

    A task named that cannot be exported is an error (ExportError, exit 1); among all tasks it
    is skipped with its reason. Nothing is written when any folder would be refused.
    """
    from start.compose.details import grant

    granted, trusted, trust_note = grant(config)
    reader = Reader(config.root, granted, config.settings.file_size_limit)
    tasks = [_find(config, name) for name in names] if names else _listed(config)
    planned: list[tuple[Task, str]] = []
    skipped: list[Skipped] = []
    for task in dict.fromkeys(tasks):
        if task.origin.layer == "project" and trusted is False and task.imported is None:
            if names:
                raise UntrustedError(trust_note)
            reason = "its project is not trusted, and start reads none of it; run 'start trust'"
            skipped.append(Skipped(task.name, reason))
            continue
        text = _text(config, task, reader)
        if isinstance(text, Skipped):
            if names:
                raise ExportError(f"task '{task.name}' cannot be a skill: {text.reason}")
            skipped.append(text)
            continue
        planned.append((task, text))
    directory = _target(config, directory)
    writes = [
        (task, os.path.join(directory, task.name), files(task, text)) for task, text in planned
    ]
    refused = [why for _, folder, written in writes if (why := _refusal(folder, written))]
    if refused:
        raise ExportError("\n".join([*refused, "Nothing was written."]))
    done: list[Skill] = []
    changed = [folder for _, folder, written in writes if _current(folder) != written]
    if changed:
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as error:
            raise ExportError(_unwritable(directory, error, ())) from None
    for task, folder, written in writes:
        if folder not in changed:
            done.append(Skill(task.name, folder, UNCHANGED))
            continue
        try:
            os.makedirs(folder, exist_ok=True)
            for name, data in written.items():
                atomic.replace(os.path.join(folder, name), data)
        except OSError as error:
            raise ExportError(_unwritable(folder, error, done)) from None
        done.append(Skill(task.name, folder, WRITTEN))
    return Export(directory, tuple(done), tuple(skipped))


def _target(config: Config, directory: str) -> str:
    """The real directory to write to; ExportError when it cannot be one, or when a path inside
    the project leads out of it through a symlink (the skills would land elsewhere)."""
    named = os.path.abspath(directory)
    real = os.path.realpath(named)
    project = config.project
    if project.start_dir is not None or project.git_root is not None:
        root = os.path.realpath(config.root)
        if fs.within(named, root) and not fs.within(real, root):
            raise ExportError(
                f"{named} leads out of the project through a symlink, to {real}; name {real} "
                "if you mean to write there, or remove the link"
            )
    existing = real
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        cannot = f", so {real} cannot be created" if existing != real else ""
        raise ExportError(
            f"{existing} is not a directory{cannot}; name a directory to write skills to"
        )
    return real


def _unwritable(path: str, error: OSError, done: Sequence[Skill]) -> str:
    reason = (error.strerror or str(error)).lower()
    lines = [f"cannot write {path} ({reason}); name a directory you can write to"]
    written = [skill.path for skill in done if skill.status == WRITTEN]
    if written:
        lines.append(f"Written before it: {', '.join(written)}")
    return "\n".join(lines)


def files(task: Task, text: str) -> dict[str, bytes]:
    """The bytes of a task's folder: SKILL.md, then the marker that records them."""
    description = task.description or f"The start task {task.name}"
    lines = ["---", f"name: {task.name}", f"description: {_quoted(description)}"]
    if "$ARGUMENTS" in text:
        lines.append('argument-hint: "[instructions]"')
    lines.extend(["---", "", text.rstrip("\n"), ""])
    skill = "\n".join(lines).encode("utf-8")
    marker = {"by": "start", "files": {SKILL_FILE: fs.sha256(skill)}, "task": task.name}
    data = json.dumps(marker, indent=2, sort_keys=True) + "\n"
    return {SKILL_FILE: skill, MARKER: data.encode("ascii")}


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is YAML's)."""
    return json.dumps(" ".join(text.split()), ensure_ascii=False)


def _listed(config: Config) -> list[Task]:
    return [task for task in config.tasks.values() if not task.internal]


def _find(config: Config, name: str) -> Task:
    if name in config.tasks:
        return config.tasks[name]
    for task in config.tasks.values():
        if task.alias == name:
            return task
    raise UnknownNameError("task", name, [t.name for t in _listed(config)])


def _text(config: Config, task: Task, reader: Reader) -> str | Skipped:
    """The task's text with `$ARGUMENTS` for its instructions, or why it has none that is fixed."""

    def skip(reason: str) -> Skipped:
        return Skipped(task.name, reason)

    if task.imported is not None:
        return skip(f"it is another agent's file already ({task.origin.path})")
    if not re.fullmatch(NAME_PATTERN, task.name) or len(task.name) > MAX_NAME:
        return skip(
            f"a skill's name is at most {MAX_NAME} lowercase letters, digits and single '-'"
        )
    if task.command is not None:
        return skip(
            "it runs a command at launch, whose output a skill's fixed text cannot hold; run it "
            "with 'start task' or 'start mcp'"
        )
    required = [param.name for param in task.params if param.default is None]
    if required:
        return skip(f"its parameter '{required[0]}' has no default, and a skill has no parameters")
    file = expand(task.file, config.root) if task.file is not None else None
    file_text = ""
    if file is not None and task.file is not None:
        relative = not (task.file.startswith("~") or os.path.isabs(task.file))
        try:
            read = reader.read(file, layer=task.origin.layer, relative=relative)
        except (fs.FileError, WallError) as error:
            return skip(f"its file cannot be read: {error}")
        if read.truncated:
            return skip(f"its file {file} is over settings.file_size_limit")
        file_text = fs.text(read.data)
    # Without a prompt, a task's file is its template (docs/placeholders.md).
    used = template.names(task.prompt if task.prompt is not None else file_text)
    for changing in ("date", "model"):
        if changing in used:
            return skip(f"its text uses {{{changing}}}, which changes at each launch")
    values = {param.name: param.default or "" for param in task.params}
    marker = "\0INSTRUCTIONS\0"
    values["instructions"] = marker
    # The text's own `$0`, `$ARGUMENTS`: literal for Claude Code (`\$`), before ours goes in.
    item = task if task.prompt is None else task._replace(prompt=_escaped(task.prompt))
    text, _ = sources.text_of("task", item, file, _escaped(file_text), "", values)
    if _SHELL.search(text):
        return skip("its text holds `!`...``, which Claude Code would run as a shell command")
    return text.replace(marker, "$ARGUMENTS")


def _escaped(text: str) -> str:
    return _REFERENCE.sub(r"\\$", text)


def _current(folder: str) -> dict[str, bytes] | None:
    """The bytes of a folder's SKILL.md and marker as they are, or None."""
    found: dict[str, bytes] = {}
    for name in (SKILL_FILE, MARKER):
        try:
            found[name] = fs.read(os.path.join(folder, name), 1_048_576, follow=False).data
        except fs.FileError:
            return None
    return found


def _refusal(folder: str, written: dict[str, bytes]) -> str | None:
    """Why `folder` may not be written, or None: start wrote it, and no one changed it since."""
    if not os.path.lexists(folder):
        return None
    if os.path.islink(folder) or not os.path.isdir(folder):
        return f"{folder} is not a folder start wrote (it is not a directory); move it away"
    try:
        data = fs.read(os.path.join(folder, MARKER), 65_536, follow=False).data
        marker = jsontext.loads(fs.text(data))
        recorded = marker["files"][SKILL_FILE] if marker.get("by") == "start" else None
    except (fs.FileError, ValueError, KeyError, TypeError, AttributeError):
        recorded = None
    if not isinstance(recorded, str):
        return (
            f"{folder} exists, and start did not write it (it has no {MARKER}); move it away, "
            "or leave its task out"
        )
    try:
        skill = fs.read(os.path.join(folder, SKILL_FILE), 1_048_576, follow=False).data
    except fs.FileError as error:
        if error.missing:
            return None
        return f"{folder}/{SKILL_FILE}: {error.reason}"
    if fs.sha256(skill) != recorded and skill != written[SKILL_FILE]:
        return (
            f"{folder}/{SKILL_FILE} was changed after start wrote it; move the folder away to "
            "write it again"
        )
    return None
