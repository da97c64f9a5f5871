"""--print: run the agent's headless form, one agent or several at once, and show the answers
(on stdout, with --json as data, with --output also as files in a directory).

start.cli.run prepares the runs, records them in the history and imports this module only for
--print, so a plain launch does without it.
"""

from __future__ import annotations

import sys

from start import console, headless, pipeline
from start.cli.state import Options
from start.errors import ExitCode


def run_one(options: Options, prepared: pipeline.Prepared, timeout: int) -> headless.Result:
    """Run the headless form to its end; on a terminal, a status line counts the seconds."""
    agent = prepared.plan.agent.name
    status = None
    if not options.quiet and console.is_tty(sys.stderr):
        from start.status import StatusLine

        status = StatusLine(sys.stderr)

    def progress(elapsed: float) -> None:
        if status is not None:
            status([f"{agent} ({int(elapsed)} s)"])

    try:
        return headless.run(prepared, timeout, progress)
    finally:
        if status is not None:
            status([])


def show_one(options: Options, prepared: pipeline.Prepared, result: headless.Result) -> int:
    """The answer on stdout, anything else on stderr; the exit code of the run."""
    agent = prepared.plan.agent.name
    code = exit_code([result])
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
        console.out(result.answer, end="" if result.answer.endswith("\n") else "\n")
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
    options: Options, each: list[pipeline.Prepared], timeout: int | None
) -> list[headless.Result]:
    """Several agents at once (--print -a A,B,C), at most settings.print_agents at a time; on a
    terminal, a board shows each one's progress."""
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
            return headless.run_each(each, timeout, config.settings.print_agents, board.update)
    return headless.run_each(each, timeout, config.settings.print_agents)


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
            console.out(f"## {result.agent}{model}")
            console.out()
            if result.ok:
                console.out(result.answer.rstrip("\n"))
            else:
                console.out(f"(no answer: {result.error.splitlines()[0] if result.error else ''})")
        sys.stdout.flush()
        for result in results:
            if result.mismatched:
                console.err(f"start: agent '{result.agent}' answered, but {result.error}")
            elif not result.ok:
                console.err(f"start: agent '{result.agent}' failed: {result.error}")
    return exit_code(results)


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
    summary.json, so that the answers can be diffed."""
    import os

    from start import atomic

    os.makedirs(directory, exist_ok=True)
    seen: dict[str, int] = {}
    summary = []
    for result in results:
        seen[result.agent] = seen.get(result.agent, 0) + 1
        count = seen[result.agent]
        name = f"{result.agent}.md" if count == 1 else f"{result.agent}-{count}.md"
        text = result.answer if result.ok or result.mismatched else f"(no answer: {result.error})\n"
        atomic.replace(os.path.join(directory, name), text.encode("utf-8"), mode=0o644)
        summary.append({"file": name, **headless.result_data(result)})
    import json

    data = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    atomic.replace(os.path.join(directory, "summary.json"), data.encode("utf-8"), mode=0o644)
