"""`start config set | unset | add | remove | edit`: change config files from the command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from start import console
from start.cli.options import common_options, completer, get_options
from start.config import edit, files, schema
from start.config.render import toml_value
from start.errors import ExitCode, Problem, StartError, UsageError

F = TypeVar("F", bound=Callable[..., Any])

_LOCAL = click.option(
    "--local", is_flag=True, help="Edit the project's .start/ instead of the global config."
)

# Help for each item field's flag of `config add`; the kinds it applies to come from the schema.
_FIELD_HELP = {
    "bin": ("PATH", "The agent's executable."),
    "command": ("TEXT", "A shell command whose output the prompt can use; an agent's template."),
    "description": ("TEXT", "One line shown in listings and completion."),
    "url": ("URL", "The agent's home page."),
    "models_url": ("URL", "Where the agent's models are listed."),
    "default_model": ("ALIAS", "The model alias used when none is chosen."),
    "models": ("ALIAS=ID", "A model alias and the id it stands for (repeatable)."),
    "large_prompt": ("TEXT", "The prompt sent instead of one too large; names {prompt_file}."),
    "large_prompt_stdin": (None, "Give the agent a too large prompt on stdin."),
    "file": ("PATH", "A file whose path and contents the prompt can use."),
    "prompt": ("TEXT", "The prompt text; - reads it from stdin."),
    "shell": ("SHELL", "The shell that runs the command."),
    "command_timeout": ("SECONDS", "How long the command may run."),
    "required": (None, "Put the context in every prompt, not only in sessions."),
    "alias": ("NAME", "A short name for the task."),
    "role": ("NAME", "The role the task uses."),
    "agent": ("NAME", "The agent the task uses."),
    "model": ("MODEL", "The model the task uses."),
    "internal": (None, "Leave the task out of listings."),
}
_FIELD_COMPLETION = {
    "role": "complete_roles",
    "agent": "complete_agents",
    "model": "complete_models",
}


def _fields() -> dict[str, str]:
    """Every item field, in schema order, with its type."""
    found: dict[str, str] = {}
    for fields in schema.KINDS.values():
        for field, kind in fields.items():
            found.setdefault(field, kind)
    return found


def _flag(field: str) -> str:
    return "--model-alias" if field == "models" else "--" + field.replace("_", "-")


def _field_options(function: F) -> F:
    for field, kind in reversed(_fields().items()):
        metavar, text = _FIELD_HELP[field]
        users = [s for k, s in schema.KIND_SINGULAR.items() if field in schema.KINDS[k]]
        options: dict[str, Any] = {"help": f"{text} ({', '.join(users)})"}
        if kind == schema.BOOL:
            options["is_flag"] = True
        elif kind == schema.MODELS:
            options.update(multiple=True, metavar=metavar)
        elif kind in (schema.TIMEOUT, schema.SIZE):
            options.update(type=click.IntRange(min=1), metavar=metavar)
        else:
            options["metavar"] = metavar
        if field in _FIELD_COMPLETION:
            options["shell_complete"] = completer(_FIELD_COMPLETION[field])
        function = click.option(_flag(field), field, **options)(function)
    return function


def _scope(local: bool) -> edit.Scope:
    options = get_options()
    if local and options.no_project:
        raise UsageError(
            "--local edits the project's config, so it cannot be used with --no-project"
        )
    layer: edit.Layer = "project" if local else "global"
    return edit.Scope(layer, options.workdir, use_project=not options.no_project)


def _interactive() -> bool:
    return console.is_tty(sys.stdin)


def _show_problems(problems: tuple[Problem, ...]) -> None:
    for problem in problems:
        console.err(f"  {problem.severity}: {problem}")


def _report(outcome: edit.Outcome, done: str, unchanged: str) -> int:
    if get_options().json:
        console.print_json(
            {
                "file": str(outcome.path),
                "changed": outcome.changed,
                "problems": [p.as_dict() for p in outcome.problems],
            }
        )
    else:
        console.err(f"{done if outcome.changed else unchanged} ({outcome.path})")
        _show_problems(outcome.problems)
    return ExitCode.OK


@click.command(
    "set",
    help="Set KEY to VALUE in [settings]. KEY is one of: " + ", ".join(schema.SETTINGS) + ".",
)
@click.argument("key", shell_complete=completer("complete_settings"))
@click.argument("value", shell_complete=completer("complete_setting_values"))
@_LOCAL
@common_options
def set_(key: str, value: str, local: bool) -> int:
    outcome = edit.set_setting(_scope(local), key, value)
    shown = f"{key} = {toml_value(edit.parse_setting(key, value))}"
    return _report(outcome, f"Set {shown}", f"Already set: {shown}")


@click.command()
@click.argument("key", shell_complete=completer("complete_settings"))
@_LOCAL
@common_options
def unset(key: str, local: bool) -> int:
    """Remove KEY from [settings], so the next layer's value or the default applies."""
    scope = _scope(local)
    outcome = edit.unset_setting(scope, key)
    return _report(outcome, f"Unset {key}", f"{key} is not set in the {scope.layer} config")


@click.command()
@click.argument("kind", type=click.Choice(list(edit.KIND_OF)))
@click.argument("name", shell_complete=completer("complete_kind_names"))
@_field_options
@_LOCAL
@common_options
def add(kind: str, name: str, local: bool, **values: Any) -> int:
    """Add agent, role, context or task NAME with the fields given as flags.

    \b
    Examples:
      start config add task review --role code-reviewer --command 'git diff' \\
          --prompt 'Review this: {command_output}'
      start config add context docs --file docs/README.md --required
      start config add agent mine --bin mine --command 'mine {prompt}' --model-alias fast=mine-1
    """
    plural = edit.KIND_OF[kind]
    known = schema.KINDS[plural]
    given = {f: v for f, v in values.items() if v not in (None, False, ())}
    foreign = [_flag(f) for f in given if f not in known]
    if foreign:
        takes = ", ".join(_flag(f) for f in known)
        raise UsageError(f"{', '.join(foreign)}: not a field of a {kind}; a {kind} takes {takes}")
    if given.get("prompt") == "-":
        given["prompt"] = sys.stdin.read()
    if "models" in given:
        given["models"] = _models(given["models"])
    given.update(_missing_fields(plural, kind, given))
    fields = {f: given[f] for f in known if f in given}
    outcome = edit.add_item(_scope(local), plural, name, fields)
    return _report(outcome, f"Added {kind} '{name}'", f"{kind} '{name}' is unchanged")


def _models(pairs: tuple[str, ...]) -> dict[str, str]:
    models: dict[str, str] = {}
    for pair in pairs:
        alias, equals, model = pair.partition("=")
        if not equals or not alias.strip() or not model.strip():
            raise UsageError(f"--model-alias takes ALIAS=ID, such as fast=model-id-1; got '{pair}'")
        models[alias.strip()] = model.strip()
    return models


def _missing_fields(plural: str, kind: str, given: dict[str, Any]) -> dict[str, Any]:
    """Ask for the fields an item needs on a terminal; otherwise say which flags are missing."""
    if plural == "agents":
        needed = [f for f in schema.REQUIRED_FIELDS["agents"] if f not in given]
    elif not any(f in given for f in ("file", "command", "prompt")):
        needed = ["prompt"]
    else:
        needed = []
    if not needed:
        return {}
    if not _interactive():
        if plural == "agents":
            flags = " and ".join(_flag(f) for f in needed)
            raise UsageError(f"an agent needs {flags}")
        raise UsageError(f"a {kind} needs at least one of --file, --command or --prompt")
    return {f: click.prompt(f.replace("_", " ").capitalize(), err=True) for f in needed}


@click.command()
@click.argument("kind", type=click.Choice(list(edit.KIND_OF)))
@click.argument("name", shell_complete=completer("complete_kind_names"))
@_LOCAL
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@common_options
def remove(kind: str, name: str, local: bool, yes: bool) -> int:
    """Remove agent, role, context or task NAME, with its own comments.

    Asks first on a terminal; without one, --yes is required.
    """
    scope = _scope(local)
    plural = edit.KIND_OF[kind]
    if not yes:
        path = edit.find_item(scope, plural, name)
        if not _interactive():
            raise UsageError(f"not removing {kind} '{name}' without confirmation; pass --yes")
        if not click.confirm(f"Remove {kind} '{name}' from {path}?", default=False, err=True):
            console.err("Nothing was removed.")
            return ExitCode.ERROR
    outcome = edit.remove_item(scope, plural, name)
    return _report(outcome, f"Removed {kind} '{name}'", f"{kind} '{name}' is already gone")


@click.command("edit")
@click.argument("file", default=edit.MAIN_FILE, type=click.Choice(files.LAYER_FILES))
@_LOCAL
@common_options
def edit_(file: str, local: bool) -> int:
    """Open FILE (config.toml) in $VISUAL, $EDITOR or vi, then validate it.

    An invalid file is kept as saved and its problems are listed (exit 3); on a terminal you are
    offered to re-open it first.
    """
    target = edit.file_target(_scope(local), file)
    original = edit.current_bytes(target)
    workspace = Path(tempfile.mkdtemp(prefix="start-edit-"))
    keep = False
    try:
        copy = workspace / file
        copy.write_bytes(original)
        data, problems, shown = _edit_until_accepted(target, copy, original)
        if data == original:
            console.err(f"No changes ({target.path})")
            return ExitCode.OK
        try:
            outcome = edit.replace_file(target, data, original)
        except StartError as error:
            keep = True
            raise StartError(f"{error}; your version is kept in {copy}") from error
    finally:
        if not keep:
            shutil.rmtree(workspace, ignore_errors=True)
    invalid = any(p.is_error for p in problems)
    console.err(f"Saved {target.path}" + (", but the config is invalid:" if invalid else ""))
    if not shown:
        _show_problems(outcome.problems)
    return ExitCode.CONFIG if invalid else ExitCode.OK


def _edit_until_accepted(
    target: edit.Target, copy: Path, original: bytes
) -> tuple[bytes, tuple[Problem, ...], bool]:
    """Edit the copy; on a terminal, offer to re-open it while it is invalid.

    Returns the bytes, their problems, and whether the problems were shown already.
    """
    while True:
        _run_editor(copy)
        data = copy.read_bytes()
        if data == original:
            return data, (), False
        problems = edit.check(target, data)
        if not any(p.is_error for p in problems) or not _interactive():
            return data, problems, False
        console.err(f"{target.path} would be invalid:")
        _show_problems(problems)
        if not click.confirm("Re-open the editor?", default=True, err=True):
            return data, problems, True


def _run_editor(path: Path) -> None:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    # As git does: the variable may carry arguments ("code --wait"), and the path is passed as a
    # positional parameter, never parsed by the shell. The editor needs the terminal, so this is
    # not a `start.shell` command (no captured output, no timeout).
    try:
        result = subprocess.run(["/bin/sh", "-c", f'{editor} "$@"', editor, str(path)])
    except OSError as error:
        raise StartError(f"cannot run the editor '{editor}': {error.strerror}") from error
    if result.returncode != 0:
        raise StartError(
            f"the editor '{editor}' exited with status {result.returncode}; nothing was saved"
        )


def register(group: click.Group) -> None:
    """Add the editing commands to the `config` group."""
    for command in (set_, unset, add, remove, edit_):
        group.add_command(command)
