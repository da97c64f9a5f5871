"""--print: run the agent's headless form, one agent or several at once, and show the answers
(on stdout, with --json as data, with --output also as files in a directory).

start.cli.run runs them through the path of every door (start.runs.path: one agent is a list of
one) and imports this module only for --print, so a plain launch does without it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from start import runs as records
from start.base.errors import ExitCode
from start.cli.state import Options
from start.compose import pipeline
from start.runs import Run
from start.ui import console

T = TypeVar("T")

if TYPE_CHECKING:
    from start.proc import agents as agentrun


@contextmanager
def following(
    options: Options, each: Sequence[pipeline.Prepared]
) -> Iterator[agentrun.State | None]:
    """While the headless launches run (one agent is a list of one): of several, which agents
    run, before they start; on a terminal, a board of each one's progress, told each agent's
    state (what this yields)."""
    if not options.quiet and len(each) > 1:
        agents = ", ".join(
            p.plan.agent.name + (f" ({p.plan.model})" if p.plan.model else "") for p in each
        )
        launch = each[0].launch
        console.err(
            f"start ▸ {agents}  ({launch.permissions} permissions: {launch.permissions_from})"
        )
        for prepared in each:
            if prepared.plan.model_reason == pipeline.NOT_ITS_MODEL:
                console.err(f"  {prepared.plan.agent.name}: {pipeline.NOT_ITS_MODEL}")
    if not options.quiet and console.is_tty(sys.stderr):
        from start.ui.display import Board

        with Board([p.plan.agent.name for p in each], no_color=options.no_color) as board:
            yield board.update
        return
    yield None


def show(options: Options, runs: list[Run], *, several: bool, output: str | None) -> int:
    """The answers on stdout, first and flushed (one agent's alone; several, each under its
    heading, in the order given; with --json, each run's record: its brief keys, or those of
    --json-fields), anything else on stderr; with --output, in files too. The exit code of them
    all: a failed write of the files makes it a failure, but never costs an answer."""
    if options.json:
        fields = options.json_fields or records.BRIEF
        found = [records.brief(run, fields) for run in runs]
        console.print_json(found if several else found[0])
    elif several:
        _each(options, runs)
    else:
        _one(options, runs[0])
    sys.stdout.flush()
    code = exit_code(runs)
    if options.fail_if is not None:
        code = _judged(options, options.fail_if, runs, code)
    if output is not None:
        try:
            write_answers(output, runs)
        except OSError as error:
            console.error(
                f"cannot write the answers to {output}: {error.strerror or error}; they are "
                "printed above and kept in the history ('start log show')",
                no_color=options.no_color,
            )
            code = code or ExitCode.ERROR
    return code


def _one(options: Options, run: Run) -> None:
    agent = run.agent
    if run.fallback is not None:
        console.err(f"start: ⚠ {run.fallback}")
    if run.denied:
        # A refused action can explain a thin answer: say so, whatever the outcome.
        console.err(
            f"start: ⚠ {agent} was refused {len(run.denied)} action(s) at {run.permissions} "
            "permissions (--permissions grants more):"
        )
        for line in run.denied:
            console.err(f"  {line}")
    if run.ok:
        if options.verbose and run.stderr.strip():
            console.err(run.stderr.rstrip("\n"))
        answer = answer_text(options, run.answer or "")
        console.out(answer, end="" if answer.endswith("\n") else "\n")
        return
    printer = console.Printer("stderr", no_color=options.no_color)
    if run.problems:
        # The agent did answer (out of format, or its check ran out of time): the answer is
        # kept, whole, for whoever reads the log.
        head, *rest = (run.error or "").split("\n")
        printer.line(f"start: agent '{agent}' answered, but {head}")
        for line in rest:
            printer.line(line)
        printer.line("Answer:")
        printer.block((run.answer or "").rstrip("\n") or "(empty)")
        return
    printer.line(f"start: agent '{agent}' failed: {run.error}")
    # Seed 000's failure format: the output, the error output and the exit code, each cut to
    # its last lines.
    for title, text in (("Output", run.stdout), ("Error Output", run.stderr)):
        printer.line(f"{title}:" if text else f"{title}: (none)")
        if text:
            printer.block(text)
    exited = "none (it did not exit by itself)" if run.exit_code is None else run.exit_code
    printer.line(f"Exit Code: {exited}")


def _each(options: Options, runs: list[Run]) -> None:
    for index, run in enumerate(runs):
        model = f" ({run.model})" if run.model else ""
        if index:
            console.out()
        console.out(answer_text(options, f"## {run.agent}{model}"))
        console.out()
        if run.ok:
            console.out(answer_text(options, (run.answer or "").rstrip("\n")))
        elif run.problems:
            # The answer arrived: under its heading, after why it is out of format.
            console.out(answer_text(options, f"(answered, but {run.error})"))
            console.out()
            console.out(answer_text(options, (run.answer or "").rstrip("\n") or "(empty)"))
        else:
            console.out(answer_text(options, f"(no answer: {run.error})"))
    sys.stdout.flush()
    printer = console.Printer("stderr", no_color=True)
    for run in runs:
        if run.fallback is not None:
            printer.line(f"start: ⚠ {run.fallback}")
        if run.ok:
            continue
        said = "answered, but" if run.problems else "failed:"
        head, *rest = (run.error or "").split("\n")
        printer.line(f"start: agent '{run.agent}' {said} {head}")
        for line in rest:
            printer.line(line)


def _judged(options: Options, fail_if: str, runs: list[Run], code: int) -> int:
    """--fail-if PATH: what start.runs.verdict says of each answer, on stderr, and its code."""
    from start.runs import verdict

    judgement = verdict.judge(runs, fail_if, code)
    for said in judgement.said:
        console.error(said.message, said.hints, no_color=options.no_color)
    return judgement.code


def answer_text(options: Options, answer: str) -> str:
    """An answer as it goes to stdout: escaped on a terminal (console.for_stdout); piped, or
    with --raw, exactly."""
    return console.for_stdout(answer, raw=options.raw)


def exit_code(runs: list[Run]) -> int:
    """Of headless runs: OK when every one succeeded; else TIMED_OUT when every failed one timed
    out, OUTPUT when every failed one answered out of format, the one exit status of agents that
    could not start (127: not found) when every failed one is such, ERROR otherwise."""
    failed = [run for run in runs if not run.ok]
    if not failed:
        return ExitCode.OK
    if all(r.timed_out for r in failed):
        return ExitCode.TIMED_OUT
    if all(r.mismatched for r in failed):
        return ExitCode.OUTPUT
    unstarted = {r.exit_code for r in failed if r.duration == 0.0 and r.exit_code in _UNSTARTED}
    if len(unstarted) == 1 and all(r.duration == 0.0 for r in failed):
        return unstarted.pop() or ExitCode.ERROR
    return ExitCode.ERROR


# The exit statuses of an agent that could not start.
_UNSTARTED = (ExitCode.NOT_EXECUTABLE, ExitCode.NOT_FOUND)


def check_output(directory: str) -> None:
    """--output DIR, checked before any agent starts: a directory start can write, made (0700)
    when missing. Raises UsageError naming what is wrong."""
    import os

    from start.base.errors import UsageError

    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise UsageError(
            f"--output {directory}: it is not a directory; name a directory for the answers "
            "(start makes it when it is missing)"
        )
    try:
        _private_directory(directory)
    except OSError as error:
        raise UsageError(
            f"--output {directory}: cannot make it: {error.strerror or error}"
        ) from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"--output {directory}: you cannot write to it")


def write_answers(directory: str, results: list[Run]) -> None:
    """--output DIR: AGENT.md per answer (AGENT-2.md for a second run of one agent) and
    summary.json, so that the answers can be diffed. They hold the prompts and the answers, so
    they are private, as the history is: the files 0600, and each directory start creates 0700."""
    import os

    from start.base import atomic

    if os.path.lexists(directory) and not os.path.isdir(directory):
        import errno

        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory)
    _private_directory(directory)
    seen: dict[str, int] = {}
    summary = []
    for result in results:
        seen[result.agent] = seen.get(result.agent, 0) + 1
        count = seen[result.agent]
        name = f"{result.agent}.md" if count == 1 else f"{result.agent}-{count}.md"
        text = (result.answer or "") if result.answered else f"(no answer: {result.error})\n"
        atomic.replace(os.path.join(directory, name), text.encode("utf-8"), mode=0o600)
        summary.append({"file": name, **records.data(result)})
    import json

    data = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    atomic.replace(os.path.join(directory, "summary.json"), data.encode("utf-8"), mode=0o600)


def _private_directory(directory: str) -> None:
    """`directory`, made with its missing parents, each 0700 (a directory there is kept as is)."""
    import os

    if os.path.isdir(directory):
        return
    parent = os.path.dirname(os.path.abspath(directory))
    if parent != os.path.abspath(directory):
        _private_directory(parent)
    os.mkdir(directory, 0o700)
