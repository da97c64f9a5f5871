"""Headless runs (`--print`): the agent's answer read from what its CLI printed, and success
proven rather than assumed.

Exit 0 alone is not success: aider exits 0 on an authentication error, Claude Code reports
`is_error` with `subtype: success`, and a CLI can exit 0 having printed nothing. A run succeeds
when the agent exits 0, its output parses as its envelope (`print_output`, read by
start.runs.envelopes) says, it reports no error, and the answer is not empty. Anything else is a
failure that quotes the CLI's own words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from start import runs as records
from start.runs import Run
from start.runs.envelopes import Answer, EnvelopeError, TooLargeError, read, size_text

if TYPE_CHECKING:
    from start.compose import pipeline
    from start.config import output
    from start.proc import agents as agentrun
    from start.proc import shell


# How much of a failed agent's output a message quotes.
TAIL_LINES: Final = 20


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last `lines` non-empty lines of `text`."""
    kept = [line for line in text.strip("\n").splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def refused(prepared: pipeline.Prepared, run: Run) -> bool:
    """Whether a run failed because its CLI refused the task's schema option for its model: the
    agent's `print_schema_refused` is in what it printed (llm: "Error: Echo: echo does not
    support schemas"). Such a run is asked again as for an agent without print_schema."""
    agent = prepared.plan.agent
    words = agent.print_schema_refused
    if words is None or run.state != records.FAILED:
        return False
    from start.compose import launch as launcher

    if not launcher.holds_to_schema(agent, prepared.output):
        return False
    return words in run.stderr or words in run.stdout


def _left(timeout: float, spent: Sequence[Run]) -> float:
    """What is left of a run's `timeout` after the refused runs (at least a second)."""
    return max(1.0, timeout - max(run.duration or 0.0 for run in spent))


def _fell_back(prepared: pipeline.Prepared, first: Run, second: Run) -> Run:
    """The second run's result, saying why it was asked again, with the time of both."""
    agent = prepared.plan.agent
    model = f" for model {first.model}" if first.model else ""
    said = tail(first.stderr, 1) or tail(first.stdout, 1)
    note = (
        f"{agent.name} refused the task's schema option{model} ({said}); asked again with the "
        "schema in the prompt, and the answer checked by start"
    )
    return second._replace(
        fallback=note, duration=(first.duration or 0.0) + (second.duration or 0.0)
    )


def run_each(
    each: Sequence[pipeline.Prepared],
    timeout: float,
    cap: int,
    on_state: Callable[[int, str, float], None] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    owner: shell.Owner | None = None,
) -> list[Run]:
    """Run launches prepared for --print (pipeline.prepare_each) at once (agentrun.run_agents:
    at most `cap` together, never two of one CLI), and read each answer: one agent is a list of
    one. Runs in the order given; one whose agent cannot run (`launch.unavailable`) fails alone,
    with the exit status that says why (127: not found), and the others run. On SIGINT, SIGTERM
    or SIGHUP it raises agentrun.Interrupted whose `runs` are every run's record: those that
    ended as they ended, the others `interrupted`.

    `env` is added to each agent's environment (`start mcp` marks its depth there), `owner` is
    told of each agent's process group (shell.Owner), and of each answer check's, and
    `on_state` of each run's state (agentrun.State).
    """
    import os

    from start.proc import agents as agentrun

    able = [index for index, p in enumerate(each) if p.launch.unavailable is None]

    def told(index: int, state: str, elapsed: float) -> None:
        if on_state is not None:
            on_state(able[index], state, elapsed)

    try:
        for index in range(len(each)):
            if index not in able and on_state is not None:
                on_state(index, "failed", 0.0)
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
            for p in (each[index] for index in able)
        ]
        stopped: agentrun.Interrupted | None = None
        try:
            ran = agentrun.run_agents(jobs, cap=cap, on_state=told, owner=owner) if jobs else []
        except agentrun.Interrupted as stop:
            ran, stopped = list(stop.runs), stop
        done = iter(_ended([each[index] for index in able], ran, timeout, owner))
        runs = [next(done) if index in able else _unavailable(p) for index, p in enumerate(each)]
        if stopped is not None:
            # The answers that had arrived are read and checked: the caller prints and records
            # every run, then stops as the signal says.
            raise agentrun.interrupted(stopped.signum, runs) from None
    finally:
        for prepared in each:
            prepared.launch.cleanup()
    asked = [index for index, run in enumerate(runs) if refused(each[index], run)]
    return _asked_again(each, runs, asked, timeout, cap, on_state, env, owner) if asked else runs


def _asked_again(
    each: Sequence[pipeline.Prepared],
    runs: list[Run],
    asked: Sequence[int],
    timeout: float,
    cap: int,
    on_state: Callable[[int, str, float], None] | None,
    env: Mapping[str, str] | None,
    owner: shell.Owner | None,
) -> list[Run]:
    """`runs` with those at `asked` (refused their schema option) run once more without it, the
    schema in the prompt, in what is left of `timeout`."""
    from start.compose import pipeline
    from start.proc import agents as agentrun

    again: list[pipeline.Prepared] = []
    try:
        for index in asked:
            again.append(pipeline.unheld(each[index]))
    except BaseException:
        for prepared in again:
            prepared.launch.cleanup()
        raise

    def told(at: int, state: str, elapsed: float) -> None:
        if on_state is not None:
            on_state(asked[at], state, elapsed)

    first = [runs[index] for index in asked]
    try:
        second = run_each(again, _left(timeout, first), cap, told, env=env, owner=owner)
    except agentrun.Interrupted as stop:
        for at, index in enumerate(asked):
            runs[index] = _fell_back(each[index], first[at], stop.runs[at])
        raise agentrun.interrupted(stop.signum, runs) from None
    for at, index in enumerate(asked):
        runs[index] = _fell_back(each[index], first[at], second[at])
    return runs


# What a CLI's output reports beside the answer (start.runs.envelopes.Answer) that the run keeps as
# it is: each field the two records share, but the answer and the error, which the run decides.
_REPORTED: Final = tuple(
    name for name in Answer._fields if name in Run._fields and name not in ("text", "error")
)


def _reported(answer: Answer | None) -> dict[str, Any]:
    if answer is None:
        return {}
    return {name: getattr(answer, name) for name in _REPORTED}


def _unavailable(prepared: pipeline.Prepared) -> Run:
    """The run of an agent that could not start: its binary missing or not executable."""
    problem = prepared.launch.unavailable
    assert problem is not None
    return records.begun(prepared, headless=True)._replace(
        state=records.FAILED, exit_code=problem.exit_code, duration=0.0, error=str(problem)
    )


def cli_of(prepared: pipeline.Prepared) -> str:
    """The CLI a launch runs, by its program's name: two runs of one CLI never overlap (they can
    share state files), in run_each as in `start board run`."""
    import os

    return os.path.basename(os.path.expanduser(prepared.plan.agent.bin))


def _ended(
    each: Sequence[pipeline.Prepared],
    runs: Sequence[agentrun.AgentRun],
    timeout: float,
    owner: shell.Owner | None = None,
) -> list[Run]:
    """The answers of finished runs, read before their temp files go, and checked against their
    tasks' output formats at once, each within what is left of its run's `timeout`."""
    read = [_read(prepared, done, timeout) for prepared, done in zip(each, runs, strict=True)]
    over = [_over_limit(p, answer, error) for p, (answer, error) in zip(each, read, strict=True)]
    read = [(answer, error or big) for (answer, error), big in zip(read, over, strict=True)]
    asked: list[tuple[output.Spec, str, float]] = []
    held: list[int] = []
    for index, (prepared, done, (answer, error)) in enumerate(zip(each, runs, read, strict=True)):
        spec = prepared.output
        if error is None and answer is not None and spec is not None and not spec.is_text:
            asked.append((spec, answer.text, timeout - done.duration))
            held.append(index)
    checks: list[output.Checked | None] = [None] * len(each)
    if asked:
        from start.config import output

        for index, found in zip(held, output.check_all(asked, owner), strict=True):
            checks[index] = found
    results = []
    for prepared, done, (answer, error), check, big in zip(
        each, runs, read, checks, over, strict=True
    ):
        spec = prepared.output
        if check is not None and not check.ok:
            assert spec is not None
            error = _mismatch(spec, check, timeout)
        if done.stopped is not None:
            state = records.INTERRUPTED
        elif error is None:
            state = records.OK
        elif done.timed_out or (check is not None and check.timed_out):
            state = records.TIMED_OUT
        elif check is not None and not check.ok:
            state = records.OUT_OF_FORMAT
        else:
            state = records.FAILED
        kept = answer is not None and (error is None or check is not None or big is not None)
        results.append(
            records.begun(prepared, headless=True)._replace(
                argv=done.argv,
                state=state,
                exit_code=done.returncode,
                duration=done.duration,
                answer=answer.text if kept and answer is not None else "",
                value=check.value if check is not None else None,
                problems=check.problems if check is not None and not check.ok else (),
                error=error,
                stdout=tail(done.stdout) if error is not None else "",
                stderr=tail(done.stderr),
                **_reported(answer),
            )
        )
    return results


def _read(
    prepared: pipeline.Prepared, done: agentrun.AgentRun, timeout: float
) -> tuple[Answer | None, str | None]:
    """A finished run's answer (None when there is none to read), and why the run failed."""
    if done.stopped is not None:
        from start.base.errors import signal_name

        how = done.error or f"stopped by {signal_name(done.stopped)} before it answered"
        return None, how
    agent = prepared.plan.agent
    assert agent.print_output is not None
    limit = prepared.config.settings.print_answer_limit
    if done.too_large:
        return None, _too_large(limit)
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
                return None, _too_large(limit, str(large))
        except EnvelopeError as wrong:
            problem = f"{wrong} (print_output = '{agent.print_output}')"
    return answer, _failure(done, answer, problem, timeout)


def _over_limit(
    prepared: pipeline.Prepared, answer: Answer | None, error: str | None
) -> str | None:
    """Why an answer that arrived is more than its ask's `answer_limit` (a workflow step's)
    allows; None when it is not, or when there is none."""
    limit = prepared.ask.answer_limit if prepared.ask is not None else None
    if limit is None or answer is None or error is not None:
        return None
    size = len(answer.text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return None
    return (
        f"its answer is {size_text(size)}, more than the step's answer_limit "
        f"({size_text(limit)}) allows"
    )


def _too_large(limit: int, what: str | None = None) -> str:
    """Why an answer was not read: it was `what` (`printed 20 MiB`, `its answer file holds
    20 MiB`); None: the agent was stopped once it had printed more than `limit`."""
    allowed = f"more than settings.print_answer_limit ({size_text(limit)}) allows"
    if what is None:
        return (
            f"printed {allowed}, so it was stopped and its answer was not read; raise the limit "
            "to read such answers"
        )
    return f"{what}, {allowed}, so its answer was not read; raise the limit to read such answers"


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
        from start.base.errors import signal_name

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
