"""What `start config validate` checks beyond what a load checks: the files the config names (task
templates, required contexts, output schemas) and its shells on PATH. A launch reads these only
when it uses them; validate reads them here as a launch would, and places each problem at its line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from start.base import paths, template
from start.base.errors import Problem
from start.config import model, params
from start.config.model import Config, Context, Role, Task
from start.config.validate import placed


def check_task_files(config: Config) -> list[Problem]:
    """Placeholder problems of the task files that are templates (a `file` and no `prompt`).

    A launch reads such a file only when it runs the task, so `start config validate` reads them
    here, the way a launch would: a file whose real path a symlink leads out of the project root
    is not read, nor is a project task's file outside the root (an untrusted project cannot make
    validate read, and name placeholders of, a file of yours). A file that cannot be read is left
    to the launch to report. Every finding is a warning: the file is not config.
    """
    import os

    from start.base import fs
    from start.base.paths import expand

    real_root = os.path.realpath(config.root)
    problems: list[Problem] = []
    for task in config.tasks.values():
        if task.file is None or task.prompt is not None:
            continue
        path = expand(task.file, config.root)
        lexical = os.path.normpath(path)
        inside = fs.within(lexical, real_root)
        if task.origin.layer == "project" and not inside:
            continue
        try:
            read = fs.read(path, config.settings.file_size_limit)
        except fs.FileError:
            continue
        if inside and not fs.within(read.real, real_root):
            continue
        text = fs.text(read.data)
        key = f"tasks.{task.name}.file"
        extra = frozenset(p.name for p in task.params)
        for finding in template.check(text, template.TASK_PROMPT, extra):
            # Warnings: the file is not config, and a launch uses it as it is.
            message = f"{path}: {finding.message}"
            problems.append(Problem("warning", task.origin.path, key, message, finding.suggestion))
        used = set(template.names(text))
        command = task.command or ""
        for param in task.params:
            if param.name not in used and params.env_name(param.name) not in command:
                problems.append(
                    Problem(
                        "warning",
                        task.origin.path,
                        f"tasks.{task.name}.params.{param.name}",
                        f"parameter '{param.name}' is never used: put {{{param.name}}} in "
                        f"{path}, or ${params.env_name(param.name)} in the command",
                    )
                )
    return problems


def check_context_files(config: Config) -> list[Problem]:
    """A warning for each required context whose `file` does not exist: it goes into every
    prompt, and a prompt that names `{file}` only would tell the agent to read nothing.

    For `start config validate` (a launch reads the file only for `{file_contents}`). Nothing is
    read: a project context's file is looked up only inside the project root, and not at all when
    a symlink leads it out (an untrusted project cannot learn which files of yours exist).
    """
    import os

    from start.base import fs
    from start.base.paths import expand

    real_root = os.path.realpath(config.root)
    problems: list[Problem] = []
    for context in config.contexts.values():
        if not context.required or context.file is None:
            continue
        path = expand(context.file, config.root)
        if context.origin.layer == "project" and not (
            fs.within(os.path.normpath(path), real_root)
            and fs.within(os.path.realpath(path), real_root)
        ):
            continue
        if os.path.exists(path):
            continue
        message = (
            f"{path} does not exist, and this required context names it in every prompt; "
            "create it, or fix the path"
        )
        key = f"contexts.{context.name}.file"
        problems.append(Problem("warning", context.origin.path, key, message))
    return placed(problems)


def check_shells(config: Config, which: Callable[[str], str | None] | None = None) -> list[Problem]:
    """A warning for each configured shell that is not on PATH.

    PATH is not part of the config, so `start config validate` asks this on top of the problems
    that loading found (which a cache may keep); a launch reports a missing shell when it runs.
    """
    import os

    find = which or paths.which
    problems: list[Problem] = []
    settings = config.settings
    users: list[tuple[str, str | None, str]] = []
    if settings.shell is not None:
        origin = settings.origins.get("shell")
        users.append((settings.shell, origin.path if origin else None, "settings.shell"))
    for section in ("roles", "contexts", "tasks"):
        items: Mapping[str, Role | Context | Task] = getattr(config, section)
        for item in items.values():
            if item.shell is not None:
                users.append((item.shell, item.origin.path, f"{section}.{item.name}.shell"))
    for shell, path, key in users:
        if find(os.path.expanduser(shell)) is None:
            message = f"shell '{shell}' is not on PATH, so the commands that use it cannot run"
            problems.append(Problem("warning", path, key, message))
    return problems


def check_output_schemas(config: Config) -> list[Problem]:
    """Errors of the tasks' output schemas, each placed at its file and line: a schema that is not
    JSON, or not a JSON Schema (checked against its own metaschema).

    Like `check_task_files`, for `start config validate`: a run checks the schema again before
    the agent starts. A project task's schema file is read only inside the project root; a file
    that cannot be read is left to the run to report. The shipped tasks' schemas (`gate`'s) are
    held valid by tests/config/test_output.py, so a validate starts no check for them.
    """
    from start.config.load import BUILT_IN

    declared = [
        task
        for task in config.tasks.values()
        if task.output is not None
        and task.output.format == model.OUTPUT_SCHEMA
        and task.origin.layer != BUILT_IN
    ]
    if not declared:
        return []  # no schema: the module that checks them (and json) is not imported
    import functools
    import os

    from start.base import fs
    from start.base.errors import ConfigError
    from start.config import output

    real_root = os.path.realpath(config.root)
    problems: list[Problem] = []
    for task in declared:
        path = output.schema_path(task)
        data = b""
        if path is not None:
            if task.origin.layer == "project" and not fs.within(os.path.realpath(path), real_root):
                continue
            try:
                data = fs.read(path, config.settings.file_size_limit).data
            except fs.FileError as error:
                key = f"tasks.{task.name}.output.schema"
                message = f"{path}: {error.reason}"
                problems.append(Problem("error", task.origin.path, key, message))
                continue
        try:
            output.spec_for(task, functools.partial(_given, data))
        except ConfigError as error:
            problems.extend(error.problems)
    return placed(problems)


def _given(data: bytes, path: str) -> bytes:
    return data
