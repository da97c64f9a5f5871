"""`start task`: run a task with instructions; without a name, list the tasks.

Its own module, so that a launch defines the options of the command it runs and no other's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from start.base import fs
from start.base.errors import ExitCode, UsageError
from start.cli.options import completer, launch_options_showing
from start.cli.run import TASKFILE_PREFIX, ask_of, headless, print_options, run
from start.cli.state import Options, get_options
from start.cli.text import (
    SAFE_FORM,
    TextCommand,
    text_options,
    user_text,
    with_piped,
)
from start.config.load import load
from start.ui import console

if TYPE_CHECKING:
    from start.runs.taskfile import Taskfile


@click.command(
    cls=TextCommand,
    epilog=SAFE_FORM,
    examples=[
        ("List the tasks", "start task"),
        ("Review the staged diff, focusing on security", 'start task gdr "focus on security"'),
        ("Another role and agent for one run", 'start task gdr -r code-reviewer -a gemini "why?"'),
        ("Text that starts with a dash, exactly", 'start task gdr --instructions="$TEXT"'),
        ("Piped text, then the words, as instructions", 'pytest | start task fix "the auth tests"'),
        ("A task's parameter", "start task review -p focus=performance"),
        ("A Markdown file as the task, with a file as a context", "start task ./t.md -c NOTES.md"),
        ("A Claude Code command, run by Gemini", 'start task claude:review -a gemini "auth"'),
        ("A task of the project's Taskfile, with its CLI_ARGS", "start task taskfile:test -- -v"),
        ("The same to its end, its output the answer", "start task taskfile:test --print"),
        ("Every task, internal ones too, as data", "start task --all --json"),
    ],
)
@click.argument(
    "name", metavar="[NAME|PATH]", required=False, shell_complete=completer("complete_task_or_file")
)
@click.argument("instructions", nargs=-1)
@click.option(
    "-p",
    "--param",
    "param_words",
    metavar="NAME=VALUE",
    multiple=True,
    help="Set a task parameter; repeatable. Its command sees it as $START_PARAM_NAME.",
    shell_complete=completer("complete_params"),
)
@click.option("--all", "show_all", is_flag=True, help="List internal tasks too.")
@text_options
@print_options
@launch_options_showing(
    "Show the agent's command line in the summary (with --print, its stderr too);"
    " listing the tasks, each one's file."
)
def task(
    name: str | None,
    instructions: tuple[str, ...],
    param_words: tuple[str, ...],
    show_all: bool,
    text_option: str | None,
    text_file: str | None,
    no_stdin: bool,
    print_: bool,
    permissions: str | None,
    timeout: int | None,
    output_dir: str | None,
) -> int:
    """Run a task with INSTRUCTIONS; without NAME, list the tasks.

    NAME is a task's name, its alias, or a unique prefix of either; PATH is a Markdown or text
    file used as the task's template (./NAME forces a path). Text piped to stdin goes before the
    INSTRUCTIONS, a blank line between (--no-stdin leaves it unread). The listing shows each task's
    alias, description, parameters and layer; -v adds the file it comes from.

    taskfile:NAME is a task of the project's go-task Taskfile, run by `task`: on the terminal,
    or with --print to its end (settings.taskfile_timeout); the words after -- are its CLI_ARGS.
    """
    from start.config import params

    options = get_options()
    text = user_text(instructions, text_option, text_file)
    given = tuple(params.split(fs.arg_text(word)) for word in param_words)
    asked = headless(print_, permissions, timeout, output_dir)
    if name is None and asked:
        raise UsageError("--print needs a task: start task NAME --print")
    if name is None:
        if text is not None:
            raise UsageError("instructions need a task: start task NAME --instructions=TEXT")
        if given:
            raise UsageError("parameters need a task: start task NAME -p NAME=VALUE")
        return _list_tasks(options, show_all)
    if name.startswith(TASKFILE_PREFIX):
        # A Taskfile task (start.cli.taskfile): `task` gets stdin as it is, unread.
        ask = ask_of(options, "task", task=name, instructions=text, params=dict(given), **asked)
        return run(options, ask)
    text = with_piped(text, text_file, no_stdin, options.no_color)
    ask = ask_of(
        options,
        "task",
        task=name,
        instructions=text if text is not None and text.strip() else None,
        params=dict(given),
        **asked,
    )
    return run(options, ask)


def _list_tasks(options: Options, show_all: bool) -> int:
    from start.runs import taskfile as taskfiles

    config = load(options.workdir, use_project=not options.no_project, strict=True)
    tasks = sorted(
        (t for t in config.tasks.values() if show_all or not t.internal), key=lambda t: t.name
    )
    found, listed = _taskfile_tasks(options)
    if options.json:
        entries = [
            {
                "name": t.name,
                "alias": t.alias,
                "description": t.description,
                "layer": t.origin.layer,
                "file": str(t.origin.path),
                "internal": t.internal,
                "params": [
                    {"name": p.name, "default": p.default, "description": p.description}
                    for p in t.params
                ],
                # Where it comes from: another agent's command files (their format), the
                # project's Taskfile (`taskfile`), else None.
                "source": t.imported.source if t.imported is not None else None,
            }
            for t in tasks
        ]
        entries += [
            {
                "name": name,
                "alias": None,
                "description": description,
                "layer": "project",
                "file": found.path if found is not None else None,
                "internal": False,
                "params": [],
                "source": taskfiles.SOURCE,
            }
            for name, description in listed
        ]
        console.print_json(entries)
        return ExitCode.OK
    if not tasks and not listed:
        console.err("No tasks are defined. Add one with 'start config add task NAME ...'.")
        return ExitCode.OK
    from start.config import params
    from start.ui import display

    headers = ["task", "alias", "description", "layer"]
    rows = [[t.name, t.alias or "", t.description or "", t.origin.layer] for t in tasks]
    if any(t.params for t in tasks):
        headers.insert(3, "params")
        for row, t in zip(rows, tasks, strict=True):
            row.insert(3, ", ".join(params.describe(p) for p in t.params))
    if any(t.imported is not None for t in tasks) or listed:
        headers.insert(-1, "source")
        for row, t in zip(rows, tasks, strict=True):
            row.insert(-1, t.imported.source if t.imported is not None else "start")
    if options.verbose:
        headers.append("file")
        for row, t in zip(rows, tasks, strict=True):
            row.append(str(t.origin.path))
    for name, description in listed:
        row = [name, "", description]
        if "params" in headers:
            row.append("")
        row += [taskfiles.SOURCE, "project"]
        if options.verbose and found is not None:
            row.append(found.path)
        rows.append(row)
    display.print_table(headers, rows, no_color=options.no_color)
    return ExitCode.OK


def _taskfile_tasks(options: Options) -> tuple[Taskfile | None, list[tuple[str, str]]]:
    """The project's Taskfile and its tasks, as start's tasks name them (`taskfile:NAME`); none
    when there is no Taskfile. Why a Taskfile's tasks are not listed goes to stderr."""
    from start.base.errors import StartError
    from start.compose.ask import USER
    from start.runs import taskfile as taskfiles
    from start.runs.rules import Scope

    try:
        found = taskfiles.find(Scope(options.workdir, not options.no_project), by=USER)
        listed = taskfiles.tasks(found)
    except taskfiles.NoTaskfileError:
        return None, []
    except StartError as error:
        if not options.quiet:
            console.warning(
                f"the Taskfile's tasks are not listed: {error}", no_color=options.no_color
            )
        return None, []
    return found, [(taskfiles.PREFIX + task["name"], task["description"]) for task in listed]
