"""`start log` (list, show, path, clear) and `start again`: the history of runs
(start.runs.history)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from start import runs as records
from start.base.errors import ExitCode, StartError, UsageError
from start.cli.commands import command, group
from start.cli.inputs import RUN_ID, TEXT, count
from start.cli.options import QUIET, common_options, completer, launch_options
from start.cli.run import print_options
from start.cli.state import Options, get_options
from start.compose.ask import BOARD, CLI, MCP, USER, WORKFLOW, Ask, from_data
from start.runs import Run, history
from start.runs import store as historydb
from start.ui import console, display
from start.ui.console import Styled

if TYPE_CHECKING:
    from start.runs import tokens

# A cell of the listing longer than this is cut, with an ellipsis.
_CELL = 48


@group(
    invoke_without_command=True,
    examples=[
        ("The last 20 runs", "start log"),
        ("The last 5 runs of task gdr, as data", "start log -n 5 --task gdr --json"),
        ("The runs whose prompt or answer mentions retries", "start log --search retry"),
        ("Tokens and cost by day, agent and model, this week", "start log --usage --since 7d"),
        ("One run: its command, prompt and answer", "start log show 12"),
        ("The latest answer alone, for a script", "start log show --answer"),
        ("Run it again, headless, with another agent", "start again 12 --print -a gemini"),
        ("Forget the runs before a date", "start log clear --before 2026-01-01"),
    ],
    epilog="Prompts can hold secrets from context files: see 'start help usage', History.",
)
@click.option("-n", "count", type=count(), default=20, metavar="N", help="Show N runs (20).")
@click.option("--task", metavar="NAME", help="Only the runs of task NAME.")
@click.option("--agent", metavar="NAME", help="Only the runs of agent NAME.")
@click.option(
    "--project", metavar="PATH|NAME", help="Only the runs in this project (root or name)."
)
@click.option(
    "--search",
    "-s",
    metavar="TEXT",
    type=TEXT,
    help="Only the runs whose words, prompt or answer hold TEXT (any case).",
)
@click.option(
    "--since",
    metavar="DATE|AGE",
    help="Only the runs since DATE (YYYY-MM-DD: local midnight, or an ISO 8601 time) or in the "
    "last AGE (30m, 12h, 7d, 4w).",
)
@click.option(
    "--usage",
    "usage",
    is_flag=True,
    help="Sum the tokens and cost of the headless runs, by day, agent and model, instead.",
)
@common_options()
@click.pass_context
def log(
    ctx: click.Context,
    count: int,
    task: str | None,
    agent: str | None,
    project: str | None,
    search: str | None,
    since: str | None,
    usage: bool,
) -> int:
    """List the recorded runs, newest first: every launch and headless run.

    Each run keeps its time, directory, project, command line, agent, model, role, contexts,
    parameters, prompt and role text; a headless run (--print) also its answer, exit status,
    duration and usage. `start log show ID` shows one; `start again ID` repeats it.

    With --usage, the tokens in and out and the cost of every headless run the filters keep are
    summed by day, agent and model, as each agent's CLI reported them.
    """
    if ctx.invoked_subcommand is not None:
        return ExitCode.OK
    options = get_options()
    moment = _since(since) if since is not None else None
    if usage:
        from click.core import ParameterSource

        if ctx.get_parameter_source("count") != ParameterSource.DEFAULT:
            raise UsageError("-n goes with the listing: --usage sums every run the filters keep")
        return _usage(options, task=task, agent=agent, project=project, search=search, since=moment)
    with historydb.opened(create=False) as store:
        runs = store.runs(
            count, task=task, agent=agent, project=project, search=search, since=moment
        )
    if options.json:
        console.print_json([records.summary(run) for run in runs])
        return ExitCode.OK
    if not runs:
        filtered = task or agent or project or search or since
        console.err("No runs are recorded." if not filtered else "No such runs.")
        return ExitCode.OK
    rows = [
        [
            str(run.id),
            console.local_time(run.time),
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


def _what(run: Run) -> str:
    name = f"task {run.task}" if run.task else run.mode
    return _cut(f"{name}: {run.instructions}") if run.instructions else name


def _outcome(run: Run) -> str:
    outcome = run.state
    if run.headless and run.duration is not None:
        outcome += f" ({run.duration:.1f} s)"
    return outcome


# Who started a run that has no command line of its own, by the door its ask came in at.
_STARTED_BY = {BOARD: "start board run", MCP: "start mcp", WORKFLOW: "start workflow run"}


def command_line(run: Run) -> str:
    """How the run was asked for, as one shell line; when it has none, who started it, and
    for a board's or a workflow's run its item: `start board run (item-3)`."""
    from start.proc.shellwords import join

    if run.args is not None:
        return join(["start", *run.args])
    asked = from_data(run.request) if run.request else None
    if asked is None or asked.door not in _STARTED_BY:  # recorded by an earlier start
        return "(start mcp or start board run)"
    who = _STARTED_BY[asked.door]
    return f"{who} ({asked.item})" if asked.item else who


@log.command(
    examples=[
        ("The latest run", "start log show"),
        ("Run 12, printed rather than paged", "start log show 12 --no-pager"),
        ("Run 12 as data", "start log show 12 --json"),
    ]
)
@click.argument(
    "run_id", metavar="[ID]", type=RUN_ID, required=False, shell_complete=completer("complete_runs")
)
@click.option("--no-pager", is_flag=True, help="Print instead of paging on a terminal.")
@click.option(
    "--answer", "answer_only", is_flag=True, help="Print only the answer, as the agent gave it."
)
@click.option("--raw", "raw", is_flag=True, help="With --answer: exactly, even on a terminal.")
@common_options()
def show(run_id: int | None, no_pager: bool, answer_only: bool, raw: bool) -> int:
    """Show one run (default: the latest): its command, role, prompt and answer.

    With --answer, only the answer goes to stdout, as the agent gave it (on a terminal with its
    control characters escaped, as --print shows an answer; exactly when piped, or with --raw);
    a run without one (a launch, a failure) exits 1 and says why.
    """
    options = get_options()
    with historydb.opened(create=False) as store:
        run = store.get(run_id)
    if answer_only:
        return _answer(run, raw or options.raw)
    if options.json:
        console.print_json(records.data(run))
        return ExitCode.OK
    page = display.Page()
    page.line(Styled(f"run {run.id}", "bold"), f"  {console.local_time(run.time, seconds=True)}")
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
            rows.append(("usage", _spent(run.usage)))
    for label, value in rows:
        page.row([label, console.printable(value)], [11], indent=2, gaps=[2])
    sections = [("role", run.role_text), ("prompt", run.prompt)]
    if run.headless:
        sections.append(("answer", run.answer or ""))
        if run.error:
            sections.append(("error", run.error))
    from start.proc.shellwords import join

    sections.append(("agent command", join(run.argv)))
    for title, body in sections:
        page.blank()
        page.line(Styled(f"──── {title} ────", "bold"))
        text = console.printable(body.rstrip("\n"), multiline=True) if body else "(empty)"
        for line in text.split("\n"):
            page.line(line)
    page.show(no_color=options.no_color, pager=not no_pager)
    return ExitCode.OK


def _answer(run: Run, raw: bool) -> int:
    """`start log show --answer`: the answer alone on stdout."""
    if not run.answer:
        why = (
            "it was a launch: the agent answered in its own terminal"
            if not run.headless
            else (f"it {run.state}: {run.error}" if run.error else f"it {run.state}")
        )
        console.err(f"start: run {run.id} has no answer; {why}")
        return ExitCode.ERROR
    text = console.for_stdout(run.answer, raw=raw)
    console.out(text, end="" if text.endswith("\n") else "\n")
    return ExitCode.OK


def _spent(usage: Mapping[str, Any]) -> str:
    """A run's usage as tokens in and out and cost (start.runs.tokens), where its CLI reported
    them; in a shape start does not know, as the CLI reported it (JSON)."""
    from start.runs import tokens

    found = tokens.read(usage)
    if found is None:
        import json

        return json.dumps(dict(usage), ensure_ascii=False, separators=(", ", ": "))
    parts = []
    if found.input is not None:
        parts.append(f"{found.input:,} tokens in")
    if found.output is not None:
        parts.append(f"{found.output:,} out" if parts else f"{found.output:,} tokens out")
    if found.cost is not None:
        parts.append(_dollars(found.cost))
    return ", ".join(parts)


def _dollars(cost: float) -> str:
    """A cost in US dollars: to the cent from a dollar up, to four places below."""
    return f"${cost:,.2f}" if cost >= 1 or cost == 0 else f"${cost:.4f}"


def _usage(options: Options, *, since: float | None, **filters: str | None) -> int:
    """`start log --usage`: the totals of the headless runs by day, agent and model, and of
    them all; as data with --json."""
    from start.runs import tokens

    with historydb.opened(create=False) as store:
        spent = store.spent(since=since, **filters)
    totals = tokens.totals(spent)
    whole = tokens.overall(totals)
    if options.json:
        console.print_json(
            {"totals": [_total_data(total) for total in totals], "total": _total_data(whole)}
        )
        return ExitCode.OK
    if not totals:
        console.err(
            "No headless runs are recorded."
            if not any(filters.values()) and since is None
            else "No such runs."
        )
        return ExitCode.OK
    rows = [
        [total.day, total.agent, total.model or "(default)", *_total_cells(total)]
        for total in totals
    ]
    rows.append(["total", "", "", *_total_cells(whole)])
    headers = ["day", "agent", "model", "runs", "tokens in", "tokens out", "cost"]
    display.print_table(headers, rows, no_color=options.no_color)
    unreported = whole.runs - whole.reported
    if unreported and not options.quiet:
        console.err(
            f"{unreported} of {whole.runs} runs have no usage: their CLI reported none "
            "(their tokens and cost are unknown, not 0)"
        )
    return ExitCode.OK


def _total_cells(total: tokens.Total) -> list[str]:
    if not total.reported:
        return [str(total.runs), "-", "-", "-"]
    cost = _dollars(total.cost) if total.cost is not None else "-"
    return [str(total.runs), f"{total.input:,}", f"{total.output:,}", cost]


def _total_data(total: tokens.Total) -> dict[str, Any]:
    """A total as --usage --json gives it (the day, agent and model of a group's)."""
    found = {"day": total.day, "agent": total.agent, "model": total.model} if total.day else {}
    reported = bool(total.reported)
    return {
        **found,
        "runs": total.runs,
        "reported": total.reported,
        "input_tokens": total.input if reported else None,
        "output_tokens": total.output if reported else None,
        "cost_usd": round(total.cost, 6) if total.cost is not None else None,
    }


def _since(text: str) -> float:
    """--since: a date or time (as `clear --before` takes it), or an age: N followed by m, h, d
    or w (minutes, hours, days, weeks) before now."""
    import time

    units = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    word = text.strip()
    digits = word[:-1]
    if 0 < len(digits) <= 9 and digits.isascii() and digits.isdigit() and word[-1:] in units:
        return time.time() - int(digits) * units[word[-1]]
    try:
        return _moment(text)
    except UsageError:
        raise UsageError(
            f"--since '{text}' is neither a date nor an age: use YYYY-MM-DD, an ISO 8601 time "
            "such as 2026-01-31T18:00, or an age such as 12h, 7d or 4w"
        ) from None


def _ended(run: Run) -> str:
    parts = [run.state]
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
@common_options()
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
@common_options(QUIET)
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


@command(
    examples=[
        ("Repeat the latest run", "start again"),
        ("Repeat run 12, with today's diff and files", "start again 12"),
        ("Repeat it headless, with two agents", "start again 12 --print -a claude,gemini"),
    ],
    epilog="Docs: start help usage",
)
@click.argument(
    "run_id", metavar="[ID]", type=RUN_ID, required=False, shell_complete=completer("complete_runs")
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
    """Repeat a run (default: the latest) with its parameters, in its directory.

    The prompt is composed afresh: today's diff, today's files; the text you gave is the text
    it had. Options given here replace the run's own (-a, -m, -r, -c, -d, --print,
    --permissions, ...). A project whose .start/ is not trusted is asked about, or refused, as
    for any launch.
    """
    options = get_options()
    with historydb.opened(create=False) as store:
        run = store.get(run_id)
    if not run.request:
        raise UsageError(
            f"run {run.id} was recorded by an earlier start, which kept its command line but "
            f"not its parameters; repeat it with: {command_line(run)}  (in {run.cwd})"
            if run.args is not None
            else f"run {run.id} has no parameters to repeat: an earlier start mcp or start "
            "board run started it"
        )
    from start.compose.ask import MODES

    asked = from_data(run.request)
    if asked.mode not in MODES:
        raise UsageError(f"run {run.id}'s parameters cannot be repeated: they name no command")
    if options.directory is None and os.path.isdir(run.cwd):
        os.chdir(run.cwd)
    ask = _repeated(options, asked, run.id, print_, permissions, timeout, output_dir)
    where = ask.directory or os.getcwd()
    if not os.path.isdir(where):
        raise StartError(
            f"run {run.id} ran in {where}, which no longer exists; pass -d DIR to repeat it "
            "elsewhere"
        )
    if ask.mode == "session" and ask.headless:
        raise UsageError(
            f"run {run.id} is a session ('start' alone), which has no --print; "
            "repeat a 'start prompt' or 'start task' run headless"
        )
    from start.cli.run import command_words, shown_words
    from start.cli.run import run as launch
    from start.proc import shellwords

    options.argv = command_words(ask, os.path.realpath(os.getcwd()), shown_words(options))
    options.started_in = os.getcwd()
    if not options.quiet:
        line = shellwords.join(["start", *options.argv])
        console.err(f"start again: {line}  (in {os.getcwd()})")
    return launch(options, ask)


def _repeated(
    given: Options,
    asked: Ask,
    run_id: int | None,
    print_: bool,
    permissions: str | None,
    timeout: int | None,
    output_dir: str | None,
) -> Ask:
    """The ask of the repeated run, the user's own: the recorded ask, each field replaced by
    the one given to `start again` (never both). What shaped the run still bounds it (`most`)."""
    role, no_role = (
        (given.role, given.no_role)
        if given.role is not None or given.no_role
        else (asked.role, asked.no_role)
    )
    headless = (
        print_
        or asked.headless
        or any(value is not None for value in (permissions, timeout, output_dir))
    )
    recorded = permissions is None and asked.permissions is not None
    return asked._replace(
        agents=tuple(given.agents) or asked.agents,
        role=role,
        no_role=no_role,
        model=given.model if given.model is not None else asked.model,
        contexts=tuple(given.contexts) or asked.contexts,
        headless=headless,
        permissions=permissions or asked.permissions,
        permissions_from=f"the run it repeats ({run_id})" if recorded else None,
        timeout=timeout or asked.timeout,
        output=output_dir or asked.output,
        agent_args=tuple(given.agent_args) or asked.agent_args,
        directory=given.workdir if given.directory is not None else asked.directory,
        no_project=given.no_project or asked.no_project,
        door=CLI,
        by=USER,
        item=None,
    )
