"""`start log` (list, show, path, clear) and `start again`: the history of runs (start.history)."""

from __future__ import annotations

import os
from typing import Any

import click

from start import console, display, history, historydb
from start.cli.commands import command, group
from start.cli.options import common_options, completer, launch_options
from start.cli.run import print_options
from start.cli.state import Options, get_options
from start.console import Styled
from start.errors import ExitCode, StartError, UsageError

# A cell of the listing longer than this is cut, with an ellipsis.
_CELL = 48


@group(
    invoke_without_command=True,
    examples=[
        ("The last 20 runs", "start log"),
        ("The last 5 runs of task gdr, as data", "start log -n 5 --task gdr --json"),
        ("One run: its command, prompt and answer", "start log show 12"),
        ("Run it again, headless, with another agent", "start again 12 --print -a gemini"),
        ("Forget the runs before a date", "start log clear --before 2026-01-01"),
    ],
    epilog="Prompts can hold secrets from context files: see 'start help usage', History.",
)
@click.option(
    "-n", "count", type=click.IntRange(min=1), default=20, metavar="N", help="Show N runs (20)."
)
@click.option("--task", metavar="NAME", help="Only the runs of task NAME.")
@click.option("--agent", metavar="NAME", help="Only the runs of agent NAME.")
@click.option(
    "--project", metavar="PATH|NAME", help="Only the runs in this project (root or name)."
)
@common_options
@click.pass_context
def log(
    ctx: click.Context, count: int, task: str | None, agent: str | None, project: str | None
) -> int:
    """List the recorded runs, newest first: every launch and headless run.

    Each run keeps its time, directory, project, command line, agent, model, role, contexts,
    parameters, prompt and role text; a headless run (--print) also its answer, exit status,
    duration and usage. `start log show ID` shows one; `start again ID` repeats it.
    """
    if ctx.invoked_subcommand is not None:
        return ExitCode.OK
    options = get_options()
    with historydb.opened(create=False) as store:
        runs = store.runs(count, task=task, agent=agent, project=project)
    if options.json:
        console.print_json([_summary(run) for run in runs])
        return ExitCode.OK
    if not runs:
        console.err("No runs are recorded." if not (task or agent or project) else "No such runs.")
        return ExitCode.OK
    rows = [
        [
            str(run.id),
            run.time[:16].replace("T", " "),
            os.path.basename(run.project) or run.project,
            _what(run),
            run.agent + (f" ({run.model})" if run.model else ""),
            _outcome(run),
        ]
        for run in runs
    ]
    headers = ["id", "time", "project", "run", "agent", "outcome"]
    display.print_table(headers, rows, no_color=options.no_color)
    return ExitCode.OK


def _cut(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _CELL else line[: _CELL - 1] + "…"


def _what(run: historydb.Run) -> str:
    name = f"task {run.task}" if run.task else run.mode
    return _cut(f"{name}: {run.instructions}") if run.instructions else name


def _outcome(run: historydb.Run) -> str:
    outcome = run.outcome
    if run.headless and run.duration is not None:
        outcome += f" ({run.duration:.1f} s)"
    return outcome


def _summary(run: historydb.Run) -> dict[str, Any]:
    """A run in `start log --json`: everything but its texts."""
    return {
        "id": run.id,
        "time": run.time,
        "cwd": run.cwd,
        "workdir": run.workdir,
        "project": run.project,
        "args": list(run.args) if run.args is not None else None,
        "mode": run.mode,
        "task": run.task,
        "agent": run.agent,
        "model": run.model,
        "role": run.role,
        "contexts": list(run.contexts),
        "params": dict(run.params),
        "instructions": run.instructions,
        "headless": run.headless,
        "permissions": run.permissions,
        "outcome": run.outcome,
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "duration": None if run.duration is None else round(run.duration, 3),
        "usage": dict(run.usage) if run.usage is not None else None,
    }


def _full(run: historydb.Run) -> dict[str, Any]:
    """A run in `start log show --json`: the summary and its texts."""
    return {
        **_summary(run),
        "role_text": run.role_text,
        "prompt": run.prompt,
        "command": list(run.command),
        "answer": run.answer,
        "error": run.error,
    }


def command_line(run: historydb.Run) -> str:
    """How the run was asked for, as one shell line; when it has none, who started it."""
    import shlex

    return (
        shlex.join(["start", *run.args])
        if run.args is not None
        else "(start mcp or start board run)"
    )


@log.command(
    examples=[
        ("The latest run", "start log show"),
        ("Run 12, printed rather than paged", "start log show 12 --no-pager"),
        ("Run 12 as data", "start log show 12 --json"),
    ]
)
@click.argument(
    "run_id", metavar="[ID]", type=int, required=False, shell_complete=completer("complete_runs")
)
@click.option("--no-pager", is_flag=True, help="Print instead of paging on a terminal.")
@common_options
def show(run_id: int | None, no_pager: bool) -> int:
    """Show one run (default: the latest): its command, role, prompt and answer."""
    options = get_options()
    with historydb.opened(create=False) as store:
        run = store.get(run_id)
    if options.json:
        console.print_json(_full(run))
        return ExitCode.OK
    page = display.Page()
    page.line(Styled(f"run {run.id}", "bold"), f"  {run.time}")
    rows = [
        ("command", command_line(run)),
        ("directory", run.cwd),
        ("project", run.project),
        ("agent", run.agent + (f"  model {run.model}" if run.model else "")),
        ("role", run.role or "none"),
        ("contexts", ", ".join(run.contexts) or "none"),
    ]
    if run.task:
        rows.append(("task", run.task))
    if run.params:
        rows.append(("params", ", ".join(f"{k}={v}" for k, v in run.params.items())))
    if run.headless:
        rows.append(("permissions", run.permissions or ""))
        rows.append(("outcome", _ended(run)))
        if run.usage:
            rows.append(("usage", ", ".join(f"{k} {v}" for k, v in run.usage.items())))
    for label, value in rows:
        page.row([label, console.printable(value)], [11], indent=2, gaps=[2])
    sections = [("role", run.role_text), ("prompt", run.prompt)]
    if run.headless:
        sections.append(("answer", run.answer or ""))
        if run.error:
            sections.append(("error", run.error))
    import shlex

    sections.append(("agent command", shlex.join(run.command)))
    for title, body in sections:
        page.blank()
        page.line(Styled(f"──── {title} ────", "bold"))
        text = console.printable(body.rstrip("\n"), multiline=True) if body else "(empty)"
        for line in text.split("\n"):
            page.line(line)
    page.show(no_color=options.no_color, pager=not no_pager)
    return ExitCode.OK


def _ended(run: historydb.Run) -> str:
    parts = [run.outcome]
    if run.exit_code is not None:
        parts.append(f"exit status {run.exit_code}")
    if run.duration is not None:
        parts.append(f"{run.duration:.1f} s")
    return ", ".join(parts)


@log.command(
    examples=[
        ("Open the history with sqlite3", 'sqlite3 "$(start log path)"'),
        ("The database and its directory as data", "start log path --json"),
    ],
)
@common_options
def path() -> int:
    """Print where the history lives: its SQLite database (in a directory of its own)."""
    if get_options().json:
        console.print_json({"database": history.database(), "directory": history.directory()})
    else:
        console.out(history.database())
    return ExitCode.OK


@log.command(
    examples=[
        ("Forget every run (asks first)", "start log clear"),
        ("Forget the runs before a day (local time)", "start log clear --before 2026-01-01"),
        ("The same in a script", "start log clear --yes"),
    ]
)
@click.option(
    "--before",
    metavar="DATE",
    help="Only the runs before DATE: YYYY-MM-DD (local midnight) or an ISO 8601 time.",
)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@common_options
def clear(before: str | None, yes: bool) -> int:
    """Delete recorded runs: all of them, or those before a date.

    Asks first on a terminal; without one, --yes is required.
    """
    import sys

    options = get_options()
    moment = _moment(before) if before is not None else None
    if not yes:
        which = "every recorded run" if before is None else f"the runs before {before}"
        if not console.is_tty(sys.stdin):
            raise UsageError(f"not deleting {which} without confirmation; pass --yes")
        question = f"Delete {which} from the history ({history.database()})?"
        if not click.confirm(console.printable(question), default=False, err=True):
            console.err("Nothing was deleted.")
            return ExitCode.ERROR
    with historydb.opened(create=False) as store:
        count = store.clear(moment)
    if options.json:
        console.print_json({"deleted": count})
    elif not options.quiet:
        console.err(f"Deleted {count} run{'s' if count != 1 else ''} from the history.")
    return ExitCode.OK


def _moment(text: str) -> float:
    from datetime import datetime

    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--before '{text}' is not a date: use YYYY-MM-DD or an ISO 8601 time "
            "such as 2026-01-31T18:00"
        ) from None
    return when.timestamp()  # a time without an offset is local time


# The options a repeated run may override, by the name click gives them, and the names they
# replace in the repeated command line (-r replaces --no-role, and the reverse).
_REPLACES = {
    "agent": ("agent",),
    "role": ("role", "no_role"),
    "no_role": ("role", "no_role"),
    "model": ("model",),
    "contexts": ("contexts",),
    "directory": ("directory",),
    "verbose": ("verbose",),
    "permissions": ("permissions",),
    "timeout": ("timeout",),
    "output_dir": ("output_dir",),
}


@command(
    examples=[
        ("Repeat the latest run", "start again"),
        ("Repeat run 12, with today's diff and files", "start again 12"),
        ("Repeat it headless, with two agents", "start again 12 --print -a claude,gemini"),
    ],
    epilog="Docs: start help usage",
)
@click.argument(
    "run_id", metavar="[ID]", type=int, required=False, shell_complete=completer("complete_runs")
)
@print_options
@launch_options
def again(
    run_id: int | None,
    print_: bool,
    permissions: str | None,
    timeout: int | None,
    output_dir: str | None,
) -> int:
    """Repeat a run (default: the latest) with its command line, in its directory.

    The prompt is composed afresh: today's diff, today's files. Options given here replace
    the run's own (-a, -m, -r, -c, -d, --print, --permissions, ...). A project whose .start/
    is not trusted is asked about, or refused, as for any launch. A run that read its text
    from stdin reads stdin again.
    """
    options = get_options()
    with historydb.opened(create=False) as store:
        run = store.get(run_id)
    if run.args is None:
        raise UsageError(
            f"run {run.id} has no command line to repeat (start mcp or start board run started it)"
        )
    given = _given(options, print_, permissions, timeout, output_dir)
    if run.mode == "session" and any(name in given for name in ("print_", "permissions")):
        raise UsageError(
            f"run {run.id} is a session ('start' alone), which has no --print; "
            "repeat a 'start prompt' or 'start task' run headless"
        )
    from start.cli import dispatch, new_options, split_agent_args

    stored, tail = split_agent_args(list(run.args))
    words = _without(stored, {old for name in given for old in _REPLACES.get(name, ())})
    words += [word for name in given for word in given[name]]
    if options.agent_args:
        tail = list(options.agent_args)
    argv = [*words, *(["--", *tail] if tail or "--" in run.args else [])]
    where = run.cwd
    if options.directory is None:
        if not os.path.isdir(where):
            raise StartError(
                f"run {run.id} ran in {where}, which no longer exists; "
                "pass -d DIR to repeat it elsewhere"
            )
        os.chdir(where)
    else:
        where = os.getcwd()
    if not options.quiet:
        import shlex

        console.err(f"start again: {shlex.join(['start', *argv])}  (in {where})")
    fresh = new_options(argv)
    fresh.started_in = where
    return dispatch(argv, fresh)


def _given(
    options: Options,
    print_: bool,
    permissions: str | None,
    timeout: int | None,
    output_dir: str | None,
) -> dict[str, list[str]]:
    """The options given to `start again`, as the words that give them, by click's name."""
    words: dict[str, list[str]] = {}
    if options.agents:
        words["agent"] = ["-a", ",".join(options.agents)]
    if options.role is not None:
        words["role"] = ["-r", options.role]
    if options.no_role:
        words["no_role"] = ["--no-role"]
    if options.model is not None:
        words["model"] = ["-m", options.model]
    if options.contexts:
        words["contexts"] = [word for name in options.contexts for word in ("-c", name)]
    if options.directory is not None:
        words["directory"] = ["-d", os.path.abspath(options.directory)]
    for name, flag in (
        ("quiet", "-q"),
        ("dry_run", "--dry-run"),
        ("json", "--json"),
        ("no_color", "--no-color"),
        ("no_project", "--no-project"),
    ):
        if getattr(options, name):
            words[name] = [flag]
    if options.debug and not os.environ.get("START_DEBUG"):  # the run sees START_DEBUG itself
        words["debug"] = ["--debug"]
    if options.verbose:
        words["verbose"] = ["-v"] * options.verbose
    if print_:
        words["print_"] = ["--print"]
    for name, value in (
        ("permissions", permissions),
        ("timeout", timeout),
        ("output_dir", output_dir),
    ):
        if value is not None:
            flag = "--output" if name == "output_dir" else f"--{name}"
            words[name] = [flag, str(value)]
    return words


def _specs() -> dict[str, tuple[str, bool]]:
    """Every option of `start`, `start prompt` and `start task`: its name and whether it
    takes a value."""
    from start.cli import cli
    from start.cli.prompt import prompt
    from start.cli.task import task

    found: dict[str, tuple[str, bool]] = {}
    for each in (cli, prompt, task):
        for param in each.params:
            if isinstance(param, click.Option) and param.name is not None:
                takes = not param.is_flag and not param.count
                for word in (*param.opts, *param.secondary_opts):
                    found[word] = (param.name, takes)
    return found


def _without(words: list[str], names: set[str]) -> list[str]:
    """`words` without the options whose click name is in `names` (and their values)."""
    specs = _specs()
    kept: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        spec = specs.get(word)
        if spec is not None:
            width = 2 if spec[1] else 1
            if spec[0] not in names:
                kept.extend(words[index : index + width])
            index += width
            continue
        if word.startswith("--") and "=" in word:
            spec = specs.get(word.split("=", 1)[0])
        elif word.startswith("-") and not word.startswith("--") and len(word) > 2:
            spec = specs.get(word[:2])  # -aclaude: a short option with its value attached
            spec = spec if spec is not None and spec[1] else None
        else:
            spec = None
        if spec is None or spec[0] not in names:
            kept.append(word)
        index += 1
    return kept
