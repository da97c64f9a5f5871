"""`start continue`: continue the conversation of a headless run, through its CLI's own resume
option and the session id the run recorded (start.runs.Run.session_id)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import click

from start.base.errors import UsageError
from start.cli.inputs import RUN_ID
from start.cli.options import (
    DEBUG_LAUNCH,
    DIRECTORY,
    NO_PROJECT,
    QUIET,
    VERBOSE_LAUNCH,
    common_options,
    completer,
)
from start.cli.run import ask_of, json_fields_option, run
from start.cli.state import get_options
from start.cli.text import (
    SAFE_FORM,
    TextCommand,
    required_text,
    text_options,
)
from start.config import schema
from start.config.model import Agent
from start.runs import Run
from start.runs import store as historydb
from start.ui import console


@click.command(
    "continue",
    cls=TextCommand,
    epilog=SAFE_FORM,
    examples=[
        ("Ask the last headless run's agent a follow-up", 'start continue "and the tests?"'),
        ("Continue run 12's conversation", 'start continue --run 12 "now fix it"'),
        ("The follow-up's answer as data", 'start continue --json "shorter, please"'),
        ("Piped text, then the words", 'pytest 2>&1 | start continue "still failing"'),
    ],
)
@click.argument("words", metavar="TEXT...", nargs=-1)
@text_options
@click.option(
    "--run",
    "run_id",
    type=RUN_ID,
    metavar="ID",
    help="The run whose conversation to continue (default: the latest headless run).",
    shell_complete=completer("complete_runs"),
)
@click.option("-m", "--model", metavar="MODEL", help="Another model of the same agent.")
@click.option(
    "--permissions",
    type=click.Choice(schema.LEVELS),
    help="What the agent may do (default: what the run it continues had).",
)
@click.option(
    "--timeout",
    type=click.IntRange(min=1, max=schema.MAX_TIMEOUT),
    metavar="SECONDS",
    help="Stop the agent after SECONDS (default: settings.print_timeout).",
)
@click.option(
    "--output",
    "output_dir",
    metavar="DIR",
    help="Write AGENT.md and summary.json to DIR too.",
)
@json_fields_option
@common_options(DIRECTORY, QUIET, NO_PROJECT, verbose=VERBOSE_LAUNCH, debug=DEBUG_LAUNCH)
def continue_(
    words: tuple[str, ...],
    text_option: str | None,
    text_file: str | None,
    no_stdin: bool,
    run_id: int | None,
    model: str | None,
    permissions: str | None,
    timeout: int | None,
    output_dir: str | None,
) -> int:
    """Continue the conversation of a headless run (default: the latest) with TEXT.

    The same agent answers in the same directory, through its CLI's own resume option and the
    session id the run recorded, so it has the first turn's prompt and answer; TEXT alone is
    sent. The follow-up is a run like any other: recorded, and --json and --output as --print
    has them. The words of TEXT are joined by spaces; - reads TEXT from stdin. Text piped to
    stdin goes before the words, a blank line between (--no-stdin leaves it unread).
    """
    options = get_options()
    text = required_text(words, text_option, text_file, no_stdin, options.no_color)
    earlier = _earlier(run_id, options.workdir)
    # The run's own project, with its config: an agent the project defines continues there.
    where = options.workdir if options.directory is not None else earlier.workdir
    if options.directory is None and not os.path.isdir(where):
        raise UsageError(
            f"run {earlier.id} ran in {earlier.workdir}, which no longer exists; pass -d DIR "
            "to continue it from elsewhere (its CLI may keep the session by directory)"
        )
    agents = _agents(where)
    agent = agents.get(earlier.agent)
    if agent is None or agent.resume_command is None:
        raise UsageError(
            f"run {earlier.id}'s agent, {earlier.agent}, cannot continue a conversation: it has "
            "no resume_command (see \"Continuing a conversation\" in 'start help agents'). "
            f"{_who_can(agents)}"
        )
    if earlier.session_id is None:
        raise UsageError(
            f"run {earlier.id} ({earlier.agent}) has no session id to continue: its CLI "
            f"reported none. {_who_can(agents)}"
        )
    if not options.quiet:
        console.err(f"start: continuing run {earlier.id} ({earlier.agent}) of {earlier.project}")
    options.agents = [earlier.agent]
    options.agent = earlier.agent
    options.model = model if model is not None else earlier.model
    options.directory = where
    ask = ask_of(
        options,
        "continue",
        prompt=text,
        headless=True,
        permissions=permissions or earlier.permissions,
        permissions_from=None if permissions else f"the run it continues ({earlier.id})",
        timeout=timeout,
        output=output_dir,
        session=earlier.session_id,
    )
    return run(options, ask._replace(role=None, no_role=True, contexts=()))


def _earlier(run_id: int | None, workdir: str) -> Run:
    """The run to continue: run `run_id`, or this project's latest headless run that has a
    session id (else its latest headless run, which then says it has none)."""
    from start.base import paths

    with historydb.opened(create=False) as store:
        if run_id is not None:
            found = store.get(run_id)
            if not found.headless:
                raise UsageError(
                    f"run {found.id} was a launch: its conversation is the agent's own, in its "
                    "terminal. Continue a headless run (--print)"
                )
            return found
        root = os.path.realpath(paths.find_project(workdir).root)
        ours = [found for found in store.runs(200, project=root) if found.headless]
        # The latest conversation: a run that failed before its CLI named a session has none.
        for found in ours:
            if found.session_id is not None:
                return found
        if ours:
            return ours[0]
    raise UsageError(
        f"no headless run of {root} is recorded yet: run one with --print (start prompt "
        "--print TEXT), then continue it; or continue another project's with --run ID "
        "('start log' lists the runs)"
    )


def _agents(workdir: str) -> Mapping[str, Agent]:
    from start.config.load import load

    return load(workdir).agents


def _who_can(agents: Mapping[str, Agent]) -> str:
    """The agents whose conversations `start continue` can continue."""
    from start.compose.launch import able_to_continue

    able = able_to_continue(agents)
    return f"Agents that can continue: {', '.join(able)}." if able else ""
