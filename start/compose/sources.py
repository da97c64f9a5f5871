"""Materialises roles, contexts and tasks from their `file`, `command` and `prompt`, lazily.

A file is read only when its contents are used and a command runs only when its output is used.
All the commands of one launch run at once. File contents and command output are data: only a
`prompt` is a template, or, without a `prompt`, a task's `file` (and the `file` of a role or
context that also has a `command`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from start.base import fs, template
from start.base.errors import CommandError, NothingToDoError, StartError, UsageError
from start.base.paths import expand
from start.base.record import Record
from start.base.wall import Reader
from start.compose.resolve import Plan
from start.config import params
from start.config.model import COMMAND_LINE, Config, SourceItem, Task
from start.proc.shell import CommandResult, CommandSpec, run_all

Status = Literal["ok", "missing", "failed", "empty"]
Runner = Callable[[Sequence[CommandSpec]], list[CommandResult]]


class Part(Record):
    """One materialised role, context or task."""

    kind: str
    name: str
    text: str
    status: Status
    detail: str
    source: str
    file: str | None
    cut: int = 0  # bytes of the file left out by settings.file_size_limit
    output_cut: int = 0  # bytes of its command's output left out by settings.command_output_limit


class Composition(Record):
    role: Part | None
    contexts: tuple[Part, ...]
    task: Part | None
    prompt: str
    notes: tuple[str, ...] = ()  # what the launch summary says about an imported task


class _Pending:
    """An item on its way to a Part: its file read and its command queued."""

    __slots__ = (
        "command_index", "cut", "file", "file_missing", "file_text", "item", "kind", "result",
        "shell_fix",
    )  # fmt: skip

    def __init__(self, kind: str, item: SourceItem) -> None:
        self.kind = kind
        self.item = item
        self.file: str | None = None
        self.file_text: str | None = None
        self.file_missing = False
        self.cut = 0  # bytes of the file left out by the size limit
        self.command_index: int | None = None
        self.shell_fix = ""  # where the shell that runs the command is chosen
        self.result: CommandResult | None = None


def _uses(item: SourceItem, *names: str) -> bool:
    """Whether the item's content needs any of these values."""
    if item.prompt is None:
        return True
    used = template.names(item.prompt)
    return any(name in used for name in names)


def _prepare(
    kind: str,
    item: SourceItem,
    config: Config,
    reader: Reader,
    specs: list[CommandSpec],
    env: Mapping[str, str] | None = None,
) -> _Pending:
    pending = _Pending(kind, item)
    if item.file is not None:
        pending.file = expand(item.file, config.root)
        if _uses(item, "file_contents"):
            # A path from the command line is judged by the wall wherever it points
            # (start.compose.adhoc).
            adhoc = item.origin.layer == COMMAND_LINE
            relative = adhoc or not (item.file.startswith("~") or os.path.isabs(item.file))
            try:
                read = reader.read(pending.file, layer=item.origin.layer, relative=relative)
            except fs.FileError as error:
                if adhoc:
                    raise UsageError(f"{kind} '{item.name}': cannot read {error}") from None
                if not error.missing:
                    raise StartError(
                        f"{kind} '{item.name}': cannot read {pending.file}: {error.reason}\n"
                        f"Fix {kind}s.{item.name}.file in {item.origin.path}"
                    ) from None
                pending.file_missing = True
            else:
                pending.cut = read.truncated
                pending.file_text = fs.capped_text(read.data, read.truncated)
    if item.command is not None and (_uses(item, "command_output") or _stops_when_silent(item)):
        pending.shell_fix = _shell_fix(kind, item, config)
        pending.command_index = len(specs)
        specs.append(command_spec(config, item, f"{kind} {item.name}", env))
    return pending


def command_spec(
    config: Config, item: SourceItem, label: str, env: Mapping[str, str] | None
) -> CommandSpec:
    """How to run an item's `command`: its shell and timeout, else the settings'."""
    assert item.command is not None
    return CommandSpec(
        command=item.command,
        shell=item.shell or config.settings.shell,
        timeout=float(item.command_timeout or config.settings.command_timeout),
        cwd=config.root,
        output_limit=config.settings.command_output_limit,
        label=label,
        env=env,
    )


def _stops_when_silent(item: SourceItem) -> bool:
    return isinstance(item, Task) and item.if_no_output is not None


def _shell_fix(kind: str, item: SourceItem, config: Config) -> str:
    """Where the shell that runs the item's command is chosen, as a fix to a command that did
    not start."""
    if item.shell is not None:
        return f"fix {kind}s.{item.name}.shell in {item.origin.path}"
    origin = config.settings.origins.get("shell")
    if origin is not None:
        return f"fix settings.shell in {origin.path}"
    return "install bash (or sh), or set settings.shell"


def _source(item: SourceItem, file: str | None) -> str:
    parts = []
    if file is not None:
        parts.append(f"file {file}")
    if item.command is not None:
        parts.append(f"command `{item.command}`")
    if item.prompt is not None:
        parts.append("prompt")
    return ", ".join(parts)


def _fill(pending: _Pending, values: dict[str, str]) -> tuple[str, bool]:
    """The item's text, and whether its template used {instructions}."""
    output = pending.result.output if pending.result is not None else ""
    return text_of(
        pending.kind, pending.item, pending.file, pending.file_text or "", output, values
    )


def text_of(
    kind: str,
    item: SourceItem,
    file: str | None,
    file_text: str,
    output: str,
    values: Mapping[str, str],
) -> tuple[str, bool]:
    """An item's text from its file's text and its command's output, by the rules of
    docs/placeholders.md; and whether its template used {instructions}.

    `values` fills the other placeholders; one without a value stays as written.
    """
    values = dict(values)
    values["file"] = str(file) if file is not None else ""
    values["file_contents"] = file_text
    values["command"] = item.command or ""
    values["command_output"] = output
    if item.prompt is not None:
        body = item.prompt
    elif file is not None and (item.command is not None or kind == "task"):
        body = file_text
    elif file is not None:
        return file_text, False
    else:
        return output, False
    segments = template.scan(body)
    used = any(isinstance(s, template.Placeholder) and s.name == "instructions" for s in segments)
    return template.fill(segments, values), used


def compose(
    config: Config,
    plan: Plan,
    date: str,
    reader: Reader | None = None,
    runner: Runner = run_all,
) -> Composition:
    """Read, run and fill everything the plan needs, then assemble the prompt.

    `reader` is the launch's door to files (the project root wall, and the approved bytes of the
    project layer); without one, files are read with the wall and no project grant.
    """
    reader = reader or Reader(config.root)
    specs: list[CommandSpec] = []
    role = _prepare("role", plan.role, config, reader, specs) if plan.role else None
    contexts = [_prepare("context", c, config, reader, specs) for c in plan.contexts]
    task = None
    imported = None
    if plan.task is not None and plan.task.imported is not None:
        # Another agent's command file: its own rules, in start.config.interop.
        from start.compose.expand import Expansion

        imported = Expansion(plan.task, plan.instructions, plan.params, config, reader, plan.agent)
        imported.queue(specs)
    elif plan.task is not None:
        # Parameters and instructions reach the task's command as variables, never as its text.
        env = params.environment(plan.params, plan.instructions)
        task = _prepare("task", plan.task, config, reader, specs, env)
    results = runner(specs) if specs else []
    for pending in (role, *contexts, task):
        if pending is not None and pending.command_index is not None:
            pending.result = results[pending.command_index]

    base = {"date": date, "model": plan.model or ""}
    role_part = _finish_required(role, base) if role else None
    context_parts = tuple(_finish_context(p, base) for p in contexts)
    task_part = None
    if task is not None:
        assert isinstance(task.item, Task)
        task_values = {
            **plan.params,
            **base,
            "instructions": plan.instructions if plan.instructions is not None else "None",
        }
        task_part = _finish_required(task, task_values, instructions=plan.instructions)
    notes: tuple[str, ...] = ()
    if imported is not None:
        item = plan.task
        assert item is not None
        text = imported.finish(results)
        kind = "skill" if imported.imported.folder is not None else f"{imported.format} command"
        source = f"{kind} {item.origin.path}"
        task_part = Part("task", item.name, text, "ok", "", source, None)
        notes = tuple(imported.notes)

    pieces = [p.text for p in context_parts if p.status == "ok"]
    if task_part is not None:
        pieces.append(task_part.text)
    if plan.text is not None:
        pieces.append(plan.text)
    prompt = "\n\n".join([*(p.rstrip("\n") for p in pieces[:-1]), *pieces[-1:]])
    return Composition(role_part, context_parts, task_part, prompt, notes)


def _failed(pending: _Pending) -> CommandError:
    result = pending.result
    assert result is not None
    reason = f"{result.error}; {pending.shell_fix}" if result.error is not None else None
    return CommandError(
        f"{pending.kind} '{pending.item.name}'",
        pending.item.command or "",
        returncode=result.returncode,
        output=result.output,
        timeout=result.spec.timeout if result.timed_out else None,
        reason=reason,
    )


def _finish_required(
    pending: _Pending, values: dict[str, str], instructions: str | None = None
) -> Part:
    """A role or task: a failing command stops the launch; a missing file is a warning."""
    if pending.result is not None and not pending.result.ok:
        raise _failed(pending)
    item = pending.item
    if (
        isinstance(item, Task)
        and item.if_no_output is not None
        and pending.result is not None
        and not pending.result.output.strip()
    ):
        raise NothingToDoError(item.if_no_output)
    if pending.file_missing and pending.kind == "role":
        raise StartError(
            f"role '{item.name}': file not found: {pending.file}\n"
            f"Fix roles.{item.name}.file in {item.origin.path}, or pick another role with "
            "--role NAME or --no-role"
        )
    text, used_instructions = _fill(pending, values)
    if instructions is not None and not used_instructions:
        text = text.rstrip("\n") + "\n\n" + instructions if text.strip() else instructions
    status: Status = "ok"
    detail = ""
    if pending.file_missing:
        status, detail = "missing", f"file not found: {pending.file}"
    return Part(
        pending.kind,
        pending.item.name,
        text,
        status,
        detail,
        _source(pending.item, pending.file),
        pending.file,
        pending.cut,
        _output_cut(pending),
    )


def _finish_context(pending: _Pending, values: dict[str, str]) -> Part:
    """A context: a missing file or failing command skips it with a warning."""
    item = pending.item
    source = _source(item, pending.file)
    if pending.file_missing:
        return Part(
            "context",
            item.name,
            "",
            "missing",
            f"file not found: {pending.file}",
            source,
            pending.file,
        )
    result = pending.result
    if result is not None and not result.ok:
        why = result.error or f"command {result.status}"
        return Part("context", item.name, "", "failed", why, source, pending.file)
    text, _ = _fill(pending, values)
    if not text.strip():
        return Part("context", item.name, "", "empty", "empty, left out", source, pending.file)
    return Part(
        "context",
        item.name,
        text,
        "ok",
        "",
        source,
        pending.file,
        pending.cut,
        _output_cut(pending),
    )


def _output_cut(pending: _Pending) -> int:
    return pending.result.truncated if pending.result is not None else 0
