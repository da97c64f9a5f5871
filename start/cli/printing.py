"""--print: run the agent's headless form, one agent or several at once, and show the answers
(on stdout, with --json as data, with --output also as files in a directory).

start.cli.run prepares the runs, records them in the history and imports this module only for
--print, so a plain launch does without it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from start import console, headless, pipeline
from start.cli.state import Options
from start.errors import ExitCode

if TYPE_CHECKING:
    from start.shell import Owner


def run_one(
    options: Options, prepared: pipeline.Prepared, timeout: int, owner: Owner | None = None
) -> headless.Result:
    """Run the headless form to its end; on a terminal, a status line counts the seconds.
    `owner` is told of the agent's process group (shell.Owner)."""
    agent = prepared.plan.agent.name
    status = None
    if not options.quiet and console.is_tty(sys.stderr):
        from start.status import StatusLine

        status = StatusLine(sys.stderr)

    def progress(elapsed: float) -> None:
        if status is not None:
            status([f"{agent} ({int(elapsed)} s)"])

    try:
        return headless.run(prepared, timeout, progress, owner)
    finally:
        if status is not None:
            status([])


def show_one(options: Options, prepared: pipeline.Prepared, result: headless.Result) -> int:
    """The answer on stdout, anything else on stderr; the exit code of the run."""
    agent = prepared.plan.agent.name
    code = exit_code([result])
    if result.fallback is not None and not options.json:
        console.err(f"start: ⚠ {result.fallback}")
    if result.denied and not options.json:
        # A refused action can explain a thin answer: say so, whatever the outcome.
        level = result.permissions
        console.err(
            f"start: ⚠ {agent} was refused {len(result.denied)} action(s) at {level} "
            "permissions (--permissions grants more):"
        )
        for line in result.denied:
            console.err(f"  {line}")
    if options.json:
        console.print_json(headless.result_data(result))
        return code
    if result.ok:
        if options.verbose and result.stderr.strip():
            console.err(result.stderr.rstrip("\n"))
        answer = answer_text(options, result.answer)
        console.out(answer, end="" if answer.endswith("\n") else "\n")
        sys.stdout.flush()
        return code
    printer = console.Printer("stderr", no_color=options.no_color)
    if result.mismatched:
        # The agent did answer: the answer is kept, whole, for whoever reads the log.
        head, *rest = (result.error or "").split("\n")
        printer.line(f"start: agent '{agent}' answered, but {head}")
        for line in rest:
            printer.line(line)
        printer.line("Answer:")
        printer.block(result.answer.rstrip("\n") or "(empty)")
        return code
    printer.line(f"start: agent '{agent}' failed: {result.error}")
    # Seed 000's failure format: the output, the error output and the exit code, each cut to
    # its last lines.
    for title, text in (("Output", result.stdout), ("Error Output", result.stderr)):
        shown = headless.tail(text)
        printer.line(f"{title}:" if shown else f"{title}: (none)")
        if shown:
            printer.block(shown)
    exited = "none (it did not exit by itself)" if result.exit_code is None else result.exit_code
    printer.line(f"Exit Code: {exited}")
    return code


def run_each(
    options: Options,
    each: list[pipeline.Prepared],
    timeout: int | None,
    owner: Owner | None = None,
) -> list[headless.Result]:
    """Several agents at once (--print -a A,B,C), at most settings.print_agents at a time; on a
    terminal, a board shows each one's progress. `owner` is told of their process groups."""
    config = each[0].config
    if not options.quiet:
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
    timeout = timeout or config.settings.print_timeout
    tty = not options.quiet and console.is_tty(sys.stderr)
    if tty:
        from start.display import Board

        with Board(list(options.agents)) as board:
            return headless.run_each(
                each, timeout, config.settings.print_agents, board.update, owner=owner
            )
    return headless.run_each(each, timeout, config.settings.print_agents, owner=owner)


def show_each(options: Options, results: list[headless.Result], output: str | None) -> int:
    """Every answer, in the order given (and with --output, in files); the exit code of all."""
    if output is not None:
        write_answers(output, results)
    if options.json:
        console.print_json([headless.result_data(result) for result in results])
    else:
        for index, result in enumerate(results):
            model = f" ({result.model})" if result.model else ""
            if index:
                console.out()
            console.out(answer_text(options, f"## {result.agent}{model}"))
            console.out()
            if result.ok:
                console.out(answer_text(options, result.answer.rstrip("\n")))
            elif result.mismatched:
                # The answer arrived: under its heading, after why it is out of format.
                console.out(answer_text(options, f"(answered, but {result.error})"))
                console.out()
                console.out(answer_text(options, result.answer.rstrip("\n") or "(empty)"))
            else:
                console.out(answer_text(options, f"(no answer: {result.error})"))
        sys.stdout.flush()
        printer = console.Printer("stderr", no_color=True)
        for result in results:
            if result.fallback is not None:
                printer.line(f"start: ⚠ {result.fallback}")
            if result.ok:
                continue
            said = "answered, but" if result.mismatched else "failed:"
            head, *rest = (result.error or "").split("\n")
            printer.line(f"start: agent '{result.agent}' {said} {head}")
            for line in rest:
                printer.line(line)
    return exit_code(results)


def answer_text(options: Options, answer: str) -> str:
    """An answer as it goes to stdout: on a terminal, with its control characters and escape
    sequences shown escaped (an answer could set the clipboard, or hide text); piped, or with
    --raw, exactly."""
    if options.raw or not console.is_tty(sys.stdout):
        return answer
    return console.printable(answer, multiline=True)


def exit_code(results: list[headless.Result]) -> int:
    """Of headless runs: OK when every one succeeded; else TIMED_OUT when every failed one timed
    out, OUTPUT when every failed one answered out of format, ERROR otherwise."""
    failed = [result for result in results if not result.ok]
    if not failed:
        return ExitCode.OK
    if all(r.timed_out for r in failed):
        return ExitCode.TIMED_OUT
    if all(r.mismatched for r in failed):
        return ExitCode.OUTPUT
    return ExitCode.ERROR


def write_answers(directory: str, results: list[headless.Result]) -> None:
    """--output DIR: AGENT.md per answer (AGENT-2.md for a second run of one agent) and
    summary.json, so that the answers can be diffed. They hold the prompts and the answers, so
    they are private, as the history is: the files 0600, and each directory start creates 0700."""
    import os

    from start import atomic

    _private_directory(directory)
    seen: dict[str, int] = {}
    summary = []
    for result in results:
        seen[result.agent] = seen.get(result.agent, 0) + 1
        count = seen[result.agent]
        name = f"{result.agent}.md" if count == 1 else f"{result.agent}-{count}.md"
        text = result.answer if result.ok or result.mismatched else f"(no answer: {result.error})\n"
        atomic.replace(os.path.join(directory, name), text.encode("utf-8"), mode=0o600)
        summary.append({"file": name, **headless.result_data(result)})
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
