"""The command files found, parsed into tasks: the imported layer (user-level directories) and the
project layer's imported part (project-level directories).

Every finding is a warning that names the file (and line): a command file is another program's
config, so a broken one is skipped, never a reason for a launch to fail.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from start.base import fs
from start.base.errors import Problem
from start.base.record import Record
from start.config.interop import frontmatter
from start.config.interop.common import Parsed, UnusableError
from start.config.interop.dirs import PROJECT, Discovery, Found
from start.config.interop.model import Imported, segment_ok
from start.config.model import LayerFile, Origin, Task

IMPORTED = "imported"  # the layer of user-level command directories


class Layer(Record):
    """The tasks of one layer's command files, and the files as read."""

    tasks: dict[str, Task]
    files: list[LayerFile]


class Library(Record):
    user: Layer
    project: Layer
    problems: list[Problem]


def build(found: Discovery, enabled: Iterable[str]) -> Library:
    """The tasks of the enabled sources' files; the others are left alone, unread."""
    wanted = set(enabled)
    problems: list[Problem] = []
    for place, why in found.problems:
        if place.format in wanted:
            severity = "error" if place.scope == PROJECT else "warning"
            message = f"{why}; turn it off with [settings] import_commands, or move files out"
            problems.append(Problem(severity, place.directory, "", message))
    layers = {scope: Layer({}, []) for scope in ("user", PROJECT)}
    where: dict[tuple[str, str], str] = {}
    for file in found.files:
        if file.place.format not in wanted:
            continue
        task = _task(file, problems)
        scope = file.place.scope
        layer = layers[scope]
        if file.data is not None:
            digest = fs.sha256(file.data) if scope == PROJECT else ""
            layer.files.append(
                LayerFile(PROJECT if scope == PROJECT else IMPORTED, file.path, digest, bool(task))
            )
        if task is None:
            continue
        earlier = where.get((scope, task.name))
        if earlier is not None:
            problems.append(
                Problem(
                    "warning",
                    earlier,
                    "",
                    f"not used: {file.path} is also '{task.name}', and it is read later",
                )
            )
        where[(scope, task.name)] = file.path
        layer.tasks[task.name] = task
    user, project = layers["user"], layers[PROJECT]
    for name, task in user.tasks.items():
        if name in project.tasks:
            note = (
                " (Claude Code itself would use this personal one)"
                if name.startswith("claude:")
                else ""
            )
            problems.append(
                Problem(
                    "warning",
                    task.origin.path,
                    "",
                    f"'{name}' is shadowed by the project's {project.tasks[name].origin.path}: "
                    f"the project layer wins{note}",
                )
            )
    return Library(user, project, problems)


def name(file: Found) -> tuple[str, str] | str:
    """The task name and the source CLI's command for a file, or why it cannot have one."""
    form = file.place.format
    *folders, base = file.parts
    stem = base[: -len(".toml")] if base.endswith(".toml") else base[: -len(".md")]
    segments = [*folders, stem]
    if form == "gemini":
        # FileCommandLoader.ts: every character outside [a-zA-Z0-9_\-.] becomes `_`; a segment
        # longer than 50 characters is cut to 47 and `...`.
        segments = [re.sub(r"[^a-zA-Z0-9_\-.]", "_", s) for s in segments]
        segments = [s[:47] + "..." if len(s) > 50 else s for s in segments]
    elif form == "qwen":
        segments = [s.replace(":", "_") for s in segments]  # command-factory.ts
    for segment in segments:
        # A `:` in a name (`svelte:a11y.md`) separates segments, as in the source CLI's own
        # name for it (Claude Code's /svelte:svelte:a11y).
        if not all(segment_ok(piece) for piece in segment.split(":")):
            return (
                f"'{segment}' cannot be part of a task name (letters, digits, '_', '.' and '-', "
                "not starting with '.' or '-'; a ':' between two such parts)"
            )
    task = f"{form}:{':'.join(segments)}"
    if form == "codex":
        return task, f"/prompts:{stem}"
    if form == "opencode":
        return task, "/" + "/".join(segments)
    return task, "/" + ":".join(segments)


def _task(file: Found, problems: list[Problem]) -> Task | None:
    def warn(message: str, key: str = "", line: int | None = None) -> None:
        problems.append(Problem("warning", file.path, key, message, line=line))

    if file.data is None:
        warn(f"not imported: {file.problem}")
        return None
    named = name(file)
    if isinstance(named, str):
        warn(f"not imported: {named}")
        return None
    task_name, command = named
    text = frontmatter.normalize(fs.text(file.data))
    try:
        parsed = _parse(file, text)
    except UnusableError as error:
        warn(f"not imported: {error.message}", line=error.line)
        return None
    for note in parsed.notes:
        warn(note.message, note.key, note.line)
    layer = PROJECT if file.place.scope == PROJECT else IMPORTED
    imported = Imported(
        file.place.format, command, parsed.body, parsed.segments, parsed.hint, parsed.model
    )
    return Task(
        name=task_name,
        origin=Origin(layer, file.path),
        description=parsed.description,
        params=parsed.params,
        imported=imported,
    )


def _parse(file: Found, text: str) -> Parsed:
    form = file.place.format
    if form == "claude":
        from start.config.interop import claude

        return claude.parse(text)
    if form in ("gemini", "qwen"):
        from start.config.interop import gemini

        name = os.path.basename(file.path)
        if name.endswith(".toml"):
            return gemini.parse_toml(text, name, qwen=form == "qwen")
        return gemini.parse_markdown(text)
    if form == "codex":
        from start.config.interop import codex

        return codex.parse(text)
    from start.config.interop import opencode

    return opencode.parse(text)
