"""`start task taskfile:NAME [-- ARGS...]`: one of the project's Taskfile tasks
(start.runs.taskfile), run by go-task's `task` for the user. On the terminal, `task` replaces
start, as an agent does in a launch: its output is on the terminal and its exit status is
start's. With --print it runs to its end (for at most settings.taskfile_timeout seconds, or
--timeout): its output is the answer, printed, and the run is recorded in the history as a
headless run is.

The words after `--` are the task's {{.CLI_ARGS}}, as with `task NAME -- ARGS`; they are the
user's own, so they pass as they are (an agent's words, through start mcp, are held to
settings.mcp_permissions). start.cli.run sends every ask of a `taskfile:` task here, so `start
again` repeats such a run too.
"""

from __future__ import annotations

import sys

from start.base.errors import ExitCode, UsageError
from start.cli.state import Options
from start.compose.ask import USER, Ask, data
from start.config.model import Settings
from start.runs import Run
from start.runs import taskfile as taskfiles
from start.runs.taskfile import Taskfile
from start.ui import console


def run(options: Options, ask: Ask) -> int:
    """Run the ask's Taskfile task: exec `task` (a launch), show it (--dry-run), or run it to
    its end and print its output (--print)."""
    name = taskfiles.named(ask.task) or ""
    _refuse(options, ask, name)
    from start.runs.rules import Scope

    try:
        found = taskfiles.find(Scope(options.workdir, not options.no_project), by=USER)
    except taskfiles.TaskfileError as error:
        raise type(error)(f"cannot run {ask.task}: {error}") from None
    if ask.timeout is not None:
        found = found._replace(timeout=ask.timeout, timeout_from="--timeout")
    words = ask.agent_args
    if options.dry_run:
        return _dry_run(options, found, name, words)
    if ask.headless:
        return _print(options, ask, found, name, words)
    return _launch(options, ask, found, name, words)


def _refuse(options: Options, ask: Ask, name: str) -> None:
    """UsageError for what a Taskfile task does not take: an agent's options, instructions."""
    shown = f"{taskfiles.PREFIX}{name}"
    # Each is for an agent, which a Taskfile task has none of.
    for flag, given in (
        ("-a/--agent", bool(ask.agents)),
        ("-r/--role", ask.role is not None),
        ("--no-role", ask.no_role),
        ("-m/--model", ask.model is not None),
        ("-c/--context", bool(ask.contexts)),
        ("-p/--param", bool(ask.params)),
        ("--permissions", ask.permissions is not None),
        ("--output", ask.output is not None),
    ):
        if given:
            raise UsageError(
                f"{flag} is for an agent, and {shown} runs the project's Taskfile with `task`, "
                "not an agent"
            )
    if ask.instructions is not None:
        raise UsageError(
            f"{shown} takes no instructions: the words for its {{{{.CLI_ARGS}}}} go after --, "
            f"as for `task`: start task {shown} -- ARGS"
        )
    if options.raw and not ask.headless:
        raise UsageError("--raw goes with --print (a headless run)")
    if options.json and not options.dry_run and not ask.headless:
        raise UsageError("--json prints a Taskfile task's run only with --dry-run or --print")


def _color(options: Options) -> bool:
    """Whether `task` may colour what it prints: on a terminal, unless --no-color or NO_COLOR."""
    return console.color_enabled(sys.stdout, options.no_color)


def _dry_run(options: Options, found: Taskfile, name: str, words: tuple[str, ...]) -> int:
    from start.proc import shellwords

    argv = taskfiles.argv(found, taskfiles.run_words(name, words), color=_color(options))
    if options.json:
        console.print_json({"argv": list(argv), "cwd": found.root, "taskfile": found.path})
        return ExitCode.OK
    console.out(shellwords.join(argv))
    if not options.quiet:
        console.err(f"start: would run {found.name}'s task {name} in {found.root} (dry run)")
    return ExitCode.OK


def _launch(options: Options, ask: Ask, found: Taskfile, name: str, words: tuple[str, ...]) -> int:
    """Check the name, record the run as a launch, and exec `task`: the terminal and the exit
    status are its own."""
    from start.compose import launch as launcher

    taskfiles.check(found, name, words)
    color = _color(options)
    begun = _begun(options, ask, found, name, words, color)
    if not options.quiet:
        console.err(f"start ▸ {begun.task}  ({found.name}, run by task in {found.root})")
    _record(options, begun, found.settings)
    launcher.exec_agent(
        launcher.Launch(found.binary, begun.argv, {}, found.root, uses_shell=False),
        keep_stdin=True,
    )


def _print(options: Options, ask: Ask, found: Taskfile, name: str, words: tuple[str, ...]) -> int:
    """Run the task to its end, its output the answer: printed first, then recorded."""
    from start import runs
    from start.proc import groups
    from start.proc.process import signal_of

    taskfiles.check(found, name, words)
    begun = _begun(options, ask, found, name, words, color=False)
    if not options.quiet and not options.json:
        console.err(f"start ▸ {begun.task}  ({found.name}, at most {found.timeout} s)")
    try:
        with groups.watching() as owner:
            done = taskfiles.checked(found, name, words, owner)
    except BaseException as error:
        if signal_of(error) is None:
            raise
        # Stopped: nothing arrived; the run is in the history as interrupted.
        _record(options, begun._replace(headless=True, state=runs.INTERRUPTED), found.settings)
        raise
    ended = taskfiles.ended(begun, done)
    code = _show(options, ended, done)
    _record(options, ended, found.settings)
    return code


def _begun(
    options: Options,
    ask: Ask,
    found: Taskfile,
    name: str,
    words: tuple[str, ...],
    color: bool,
) -> Run:
    from start.base.paths import current_dir

    run = taskfiles.begun(found, name, words, options.workdir, color=color)
    return run._replace(
        request=data(ask), args=tuple(options.argv), cwd=options.started_in or current_dir()
    )


def _show(options: Options, run: Run, done: taskfiles.Done) -> int:
    """The task's output (stdout on stdout, stderr on stderr) or, with --json, the run as data;
    then why it failed. Its exit status: the task's own, 124 when it ran out of time."""
    from start import runs

    if options.json:
        console.print_json(runs.data(run))
        sys.stdout.flush()
    else:
        if done.stdout:
            console.out(console.for_stdout(done.stdout, raw=options.raw), end="")
        sys.stdout.flush()
        if done.stderr:
            console.err_through(done.stderr, raw=options.raw)
        if not done.ok:
            console.error(f"task '{run.task}' failed: {done.error}", no_color=options.no_color)
    if done.ok:
        return ExitCode.OK
    if done.timed_out:
        return ExitCode.TIMED_OUT
    if done.exit_code is None:  # it did not start
        return ExitCode.ERROR
    if done.exit_code < 0:  # a signal ended it
        return 128 - done.exit_code
    return done.exit_code or ExitCode.ERROR


def _record(options: Options, run: Run, settings: Settings) -> None:
    """Put the run in the history; a history that cannot be written is a warning."""
    from start.runs import history, recording

    try:
        recording.record(run, settings)
    except history.HistoryError as error:
        console.warning(f"this run is not in the history: {error}", no_color=options.no_color)
