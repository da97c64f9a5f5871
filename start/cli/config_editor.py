"""`start config edit`: a config file in $VISUAL, $EDITOR or vi, validated once it is saved."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import click

from start.base.errors import ExitCode, Problem, StartError, UsageError
from start.cli import config_edit
from start.cli.commands import Choice, command
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options, printer
from start.cli.state import get_options
from start.config import files
from start.setup import layerfile


@command(
    "edit",
    examples=[
        ("Your global config.toml", "start config edit"),
        ("The project's tasks.toml", "start config edit --project tasks.toml"),
    ],
)
@click.argument(
    "file", default=layerfile.MAIN_FILE, type=Choice(files.LAYER_FILES), metavar="[FILE]"
)
@config_edit.project_option
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def edit_(file: str, project: bool) -> int:
    """Open a config file in $VISUAL, $EDITOR or vi, then validate it.

    FILE is config.toml (the default), agents.toml, roles.toml, contexts.toml, tasks.toml or
    workflows.toml. An invalid file is kept as saved and its problems are listed (exit 3); on a
    terminal you are offered to re-open it first. A missing global config.toml can start as the
    commented starter that 'start init' writes.
    """
    scope = config_edit.layer_scope(project)
    if _named_editor() is None and not config_edit.interactive():
        # vi on a pipe or /dev/null draws to nothing and waits for keys that never come. An
        # editor the user named may need no terminal (a script, "code --wait"): it is run.
        raise UsageError(
            "vi (the editor when $VISUAL and $EDITOR are unset) needs a terminal, and stdin is "
            "not one; run 'start config edit' on a terminal, name an editor in $VISUAL or "
            "$EDITOR, or change the config with 'start config set', 'add' or 'remove'"
        )
    target = layerfile.file_target(scope, file)
    if scope.layer == "global" and file == layerfile.MAIN_FILE and not os.path.exists(target.path):
        _offer_starter(target.path)
    original = layerfile.current_bytes(target)
    workspace = tempfile.mkdtemp(prefix="start-edit-")
    keep = False
    try:
        copy = os.path.join(workspace, file)
        with open(copy, "wb") as handle:
            handle.write(original)
        data, problems = _edit_until_accepted(target, copy, original)
        if data == original:
            if get_options().json:
                config_edit.print_result(target.path, False, ())
            else:
                printer().note(f"No changes ({target.path})")
            return ExitCode.OK
        try:
            outcome = layerfile.replace_file(target, data, original)
        except StartError as error:
            keep = True
            raise StartError(f"{error}; your version is kept in {copy}") from error
    finally:
        if not keep:
            shutil.rmtree(workspace, ignore_errors=True)
    invalid = any(p.is_error for p in problems)
    if get_options().json:
        config_edit.print_result(target.path, True, outcome.problems)
        return ExitCode.CONFIG if invalid else ExitCode.OK
    if invalid:
        # Shown again when the user chose not to re-open the editor: the line ends in a colon.
        printer().line(f"Saved {target.path}, but the config is invalid:")
    else:
        printer().note(f"Saved {target.path}")
    config_edit.show_file_problems(outcome.problems)
    return ExitCode.CONFIG if invalid else ExitCode.OK


def _offer_starter(path: str) -> None:
    """On a terminal, offer the commented starter config of `start init` for a new global file."""
    if not config_edit.interactive():
        return
    if not config_edit.confirm(
        f"{path} does not exist. Start from the commented starter config?", default=True
    ):
        return
    from start.setup import init as starter

    options = get_options()
    detection = starter.detect(options.workdir)
    agent, _reason = starter.choose_agent(detection, None)
    text = starter.global_text(agent, detection, starter.taken(os.path.dirname(path), path))
    written = starter.create(path, text, force=False)
    printer().note(f"start: wrote {written.target}")


def _edit_until_accepted(
    target: layerfile.Target, copy: str, original: bytes
) -> tuple[bytes, tuple[Problem, ...]]:
    """Edit the copy; on a terminal, offer to re-open it while it is invalid.

    Returns the bytes and their problems.
    """
    while True:
        _run_editor(copy)
        with open(copy, "rb") as handle:
            data = handle.read()
        if data == original:
            return data, ()
        problems = layerfile.check(target, data)
        if not any(p.is_error for p in problems) or not config_edit.interactive():
            return data, problems
        printer().line(f"{target.path} would be invalid:")
        config_edit.show_file_problems(problems)
        if not config_edit.confirm("Re-open the editor?", default=True):
            return data, problems


def _named_editor() -> str | None:
    """The editor the user named: $VISUAL, else $EDITOR (None: vi)."""
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or None


def _run_editor(path: str) -> None:
    editor = _named_editor() or "vi"
    # As git does: the variable may carry arguments ("code --wait"), and the path is passed as a
    # positional parameter, never parsed by the shell. The editor needs the terminal, so this is
    # not a `start.proc.shell` command (no captured output, no timeout).
    try:
        result = subprocess.run(["/bin/sh", "-c", f'{editor} "$@"', editor, str(path)])
    except OSError as error:
        raise StartError(f"cannot run the editor '{editor}': {error.strerror}") from error
    if result.returncode != 0:
        raise StartError(
            f"the editor '{editor}' exited with status {result.returncode}; nothing was saved"
        )


def register(group: click.Group) -> None:
    """Add `start config edit` to the `config` group."""
    group.add_command(edit_)
