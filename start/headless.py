"""Headless runs (`--print`): the agent's answer read from what its CLI printed, and success
proven rather than assumed.

Exit 0 alone is not success: aider exits 0 on an authentication error, Claude Code reports
`is_error` with `subtype: success`, and a CLI can exit 0 having printed nothing. A run succeeds
when the agent exits 0, its output parses as its envelope (`print_output`, read by
start.envelopes) says, it reports no error, and the answer is not empty. Anything else is a
failure that quotes the CLI's own words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from start.envelopes import Answer, EnvelopeError, TooLargeError, read, size_text
from start.record import Record

if TYPE_CHECKING:
    from start import agentrun, output, pipeline, shell


class Result(Record):
    """One headless run: what was run, how it ended, and the answer or why there is none."""

    agent: str
    model: str | None
    permissions: str
    task: str | None
    argv: tuple[str, ...]
    exit_code: int | None  # the agent's; None if it timed out or never started
    timed_out: bool
    duration: float  # seconds
    answer: str  # "" unless ok
    error: str | None  # why the run failed, in the CLI's own words where it gave them
    stdout: str
    stderr: str
    usage: Mapping[str, Any] | None
    denied: tuple[str, ...] = ()  # actions the agent was refused, as its CLI reported them
    # The task's output format (start.output): the answer's parsed JSON value when it is one and
    # matches; else the problems of the check, first first (`answer` keeps the raw answer).
    value: Any = None
    problems: tuple[str, ...] = ()
    permissions_from: str = ""  # where the permission level comes from (pipeline.level)
    # Why the run was asked again with the task's schema in its prompt: its CLI refused the
    # schema option for its model (the agent's print_schema_refused); None when it was not.
    fallback: str | None = None
    # The prompt the agent got when it is not the composed one: the fallback's, the schema's
    # instruction after it (start.output.with_instruction).
    prompt: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def mismatched(self) -> bool:
        """Whether the agent answered, but not in the task's output format."""
        return bool(self.problems)


# How much of a failed agent's output a message quotes.
TAIL_LINES: Final = 20


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last `lines` non-empty lines of `text`."""
    kept = [line for line in text.strip("\n").splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def run(
    prepared: pipeline.Prepared,
    timeout: float,
    progress: Callable[[float], None] | None = None,
    owner: shell.Owner | None = None,
) -> Result:
    """Run a launch prepared for --print (pipeline.prepare with permissions) to its end, and read
    its answer. Raises StoppedError or KeyboardInterrupt on a signal, after the agent's process
    group is gone; every failure of the agent itself is a Result that is not ok. `owner` is told
    of the agent's process group (shell.Owner). A CLI that refuses the task's schema option for
    its model is asked once more with the schema in the prompt (`refused`)."""
    result = _run(prepared, timeout, progress, owner)
    if not refused(prepared, result):
        return result
    from start import pipeline

    again = pipeline.unheld(prepared)
    second = _run(again, _left(timeout, [result]), progress, owner)
    return _fell_back(prepared, again, result, second)


def _run(
    prepared: pipeline.Prepared,
    timeout: float,
    progress: Callable[[float], None] | None,
    owner: shell.Owner | None,
) -> Result:
    import os

    from start import agentrun

    launch = prepared.launch
    try:
        env = {**os.environ, **launch.env}
        done = agentrun.run_agent(
            launch.argv, env, launch.cwd, timeout=timeout, stdin=launch.stdin, progress=progress,
            limit=prepared.config.settings.print_answer_limit, owner=owner,
        )  # fmt: skip
        return _ended([prepared], [done], timeout)[0]
    finally:
        launch.cleanup()


def refused(prepared: pipeline.Prepared, result: Result) -> bool:
    """Whether a run failed because its CLI refused the task's schema option for its model: the
    agent's `print_schema_refused` is in what it printed (llm: "Error: Echo: echo does not
    support schemas"). Such a run is asked again as for an agent without print_schema."""
    agent = prepared.plan.agent
    words = agent.print_schema_refused
    if words is None or result.ok or result.mismatched or result.timed_out:
        return False
    from start import launch as launcher

    if not launcher.holds_to_schema(agent, prepared.output):
        return False
    return words in result.stderr or words in result.stdout


def _left(timeout: float, spent: Sequence[Result]) -> float:
    """What is left of a run's `timeout` after the refused runs (at least a second)."""
    return max(1.0, timeout - max(result.duration for result in spent))


def _fell_back(
    prepared: pipeline.Prepared, again: pipeline.Prepared, first: Result, second: Result
) -> Result:
    """The second run's result, saying why it was asked again, with the time of both."""
    agent = prepared.plan.agent
    model = f" for model {first.model}" if first.model else ""
    said = tail(first.stderr, 1) or tail(first.stdout, 1)
    note = (
        f"{agent.name} refused the task's schema option{model} ({said}); asked again with the "
        "schema in the prompt, and the answer checked by start"
    )
    return second._replace(
        fallback=note, prompt=again.composition.prompt, duration=first.duration + second.duration
    )


def run_each(
    each: Sequence[pipeline.Prepared],
    timeout: float,
    cap: int,
    on_state: Callable[[int, str, float], None] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    owner: shell.Owner | None = None,
) -> list[Result]:
    """Run several launches prepared for --print at once (agentrun.run_agents: at most `cap`
    together, never two of one CLI), and read each answer; results in the order given.

    `env` is added to each agent's environment (`start mcp` marks its depth there), and `owner`
    is told of each agent's process group (shell.Owner), and of each answer check's.
    """
    import os

    from start import agentrun

    try:
        jobs = [
            agentrun.AgentJob(
                p.launch.argv,
                {**os.environ, **p.launch.env, **(env or {})},
                p.launch.cwd,
                timeout,
                p.launch.stdin,
                key=cli_of(p),
                limit=p.config.settings.print_answer_limit,
            )
            for p in each
        ]
        runs = agentrun.run_agents(jobs, cap=cap, on_state=on_state, owner=owner)
        results = _ended(each, runs, timeout, owner)
    finally:
        for prepared in each:
            prepared.launch.cleanup()
    asked = [index for index, found in enumerate(results) if refused(each[index], found)]
    if not asked:
        return results
    from start import pipeline

    again = [pipeline.unheld(each[index]) for index in asked]

    def state(at: int, what: str, elapsed: float) -> None:
        if on_state is not None:
            on_state(asked[at], what, elapsed)

    first = [results[index] for index in asked]
    seconds = _left(timeout, first)
    second = run_each(again, seconds, cap, state, env=env, owner=owner)
    for at, index in enumerate(asked):
        results[index] = _fell_back(each[index], again[at], first[at], second[at])
    return results


def cli_of(prepared: pipeline.Prepared) -> str:
    """The CLI a launch runs, by its program's name: two runs of one CLI never overlap (they can
    share state files), in run_each as in `start board run`."""
    import os

    return os.path.basename(os.path.expanduser(prepared.plan.agent.bin))


def result_data(result: Result) -> dict[str, Any]:
    """The documented --print --json object of a run (docs/usage.md, "Headless runs"), which is
    also the structured content of `start mcp`'s ask_agent: the one place both are built."""
    return {
        "task": result.task,
        "agent": result.agent,
        "model": result.model,
        "permissions": result.permissions,
        "permissions_from": result.permissions_from,
        "success": result.ok,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "duration": round(result.duration, 3),
        "answer": result.answer,
        "value": result.value,
        "problems": list(result.problems),
        "error": result.error,
        "stderr": tail(result.stderr),
        "usage": dict(result.usage) if result.usage is not None else None,
        "denied": list(result.denied),
        "argv": list(result.argv),
        "fallback": result.fallback,
    }


def _ended(
    each: Sequence[pipeline.Prepared],
    runs: Sequence[agentrun.AgentRun],
    timeout: float,
    owner: shell.Owner | None = None,
) -> list[Result]:
    """The answers of finished runs, read before their temp files go, and checked against their
    tasks' output formats at once, each within what is left of its run's `timeout`."""
    read = [_read(prepared, done, timeout) for prepared, done in zip(each, runs, strict=True)]
    asked: list[tuple[output.Spec, str, float]] = []
    held: list[int] = []
    for index, (prepared, done, (answer, error)) in enumerate(zip(each, runs, read, strict=True)):
        spec = prepared.output
        if error is None and answer is not None and spec is not None and not spec.is_text:
            asked.append((spec, answer.text, timeout - done.duration))
            held.append(index)
    checks: list[output.Checked | None] = [None] * len(each)
    if asked:
        from start import output

        for index, found in zip(held, output.check_all(asked, owner), strict=True):
            checks[index] = found
    results = []
    for prepared, done, (answer, error), check in zip(each, runs, read, checks, strict=True):
        plan, launch = prepared.plan, prepared.launch
        if check is not None and not check.ok:
            assert prepared.output is not None
            error = _mismatch(prepared.output, check, timeout)
        assert launch.permissions is not None
        results.append(
            Result(
                agent=plan.agent.name,
                model=plan.model,
                permissions=launch.permissions,
                task=plan.task.name if plan.task is not None else None,
                argv=done.argv,
                exit_code=done.returncode,
                timed_out=done.timed_out or (check is not None and check.timed_out),
                duration=done.duration,
                answer=answer.text
                if answer is not None and (error is None or check is not None)
                else "",
                error=error,
                stdout=done.stdout,
                stderr=done.stderr,
                usage=answer.usage if answer is not None else None,
                denied=answer.denied if answer is not None else (),
                value=check.value if check is not None else None,
                problems=check.problems if check is not None and not check.ok else (),
                permissions_from=launch.permissions_from or "",
            )
        )
    return results


def _read(
    prepared: pipeline.Prepared, done: agentrun.AgentRun, timeout: float
) -> tuple[Answer | None, str | None]:
    """A finished run's answer (None when there is none to read), and why the run failed."""
    agent = prepared.plan.agent
    assert agent.print_output is not None
    limit = prepared.config.settings.print_answer_limit
    answer: Answer | None = None
    problem: str | None = None
    if done.error is None and not done.timed_out:
        try:
            if done.stdout_size > limit:
                raise TooLargeError(f"printed {size_text(done.stdout_size)}")
            answer = read(
                agent.print_output, done.stdout, prepared.launch.answer_file, limit, done.stderr
            )
        except TooLargeError as large:
            if done.returncode == 0:  # else its exit status says what went wrong
                return None, _too_large(str(large), limit)
        except EnvelopeError as wrong:
            problem = f"{wrong} (print_output = '{agent.print_output}')"
    return answer, _failure(done, answer, problem, timeout)


def _too_large(what: str, limit: int) -> str:
    return (
        f"{what}, more than settings.print_answer_limit ({size_text(limit)}) allows, so its answer "
        "was not read; raise the limit to read such answers"
    )


def _mismatch(spec: output.Spec, checked: output.Checked, timeout: float) -> str:
    """Why an answer is not in the task's format: the first problems, one a line."""
    if checked.timed_out:
        head = (
            f"timed out after {timeout:g} s checking its answer against the task's output "
            f"schema ({spec.where}); the check was stopped"
        )
    elif spec.format == "json":
        head = "its answer is not the JSON the task's output asks for"
    else:
        head = f"its answer does not match the task's output schema ({spec.where})"
    lines = checked.message().split("\n")
    return head + ":\n" + "\n".join(f"  {line}" for line in lines)


def _failure(
    done: agentrun.AgentRun, answer: Answer | None, problem: str | None, timeout: float
) -> str | None:
    """Why the run failed, or None when it succeeded (the rule in the module docstring)."""
    if done.error is not None:
        return done.error
    if done.timed_out:
        return f"timed out after {timeout:g} s; its process group was stopped"
    own = answer.error if answer is not None else None
    said = own or tail(done.stderr, 5) or tail(done.stdout, 5)
    if done.returncode != 0:
        from start.errors import signal_name

        code = done.returncode or 0
        how = f"was killed by {signal_name(-code)}" if code < 0 else f"exited with status {code}"
        return f"{how}: {said}" if said else how
    if problem is not None:
        return f"{problem}: {said}" if said else problem
    if own is not None:
        return own
    if answer is None or not answer.text.strip():
        return "exited 0 but printed no answer" + (f": {said}" if said else "")
    return None
