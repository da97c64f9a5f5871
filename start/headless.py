"""Headless runs (`--print`): the agent's answer read from what its CLI printed, and success
proven rather than assumed.

Exit 0 alone is not success: aider exits 0 on an authentication error, Claude Code reports
`is_error` with `subtype: success`, and a CLI can exit 0 having printed nothing. A run succeeds
when the agent exits 0, its output parses as its envelope (`print_output`) says, it reports no
error, and the answer is not empty. Anything else is a failure that quotes the CLI's own words.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from start.config.schema import ENVELOPES
from start.errors import StartError
from start.record import Record

if TYPE_CHECKING:
    from start import agentrun, output, pipeline, shell


class Answer(Record):
    """What a CLI's output says: the answer, or why there is none."""

    text: str
    error: str | None  # the CLI's own words for a failure it reported, else None
    usage: Mapping[str, Any] | None = None  # tokens and cost, as the CLI reported them
    # Actions the CLI reports it refused for lack of permission, one line each: shown, not hidden.
    denied: tuple[str, ...] = ()


class EnvelopeError(StartError):
    """Output that is not what the agent's print_output says it prints."""


def read(envelope: str, stdout: str, answer_file: str | None = None) -> Answer:
    """The answer in `stdout` (and in the file the CLI wrote it to), by `envelope`.

    Raises EnvelopeError when the output is not of that form at all.
    """
    reader = _READERS.get(envelope)
    if reader is None:
        raise EnvelopeError(f"unknown print_output '{envelope}': one of {', '.join(ENVELOPES)}")
    return reader(stdout, answer_file)


def _text(stdout: str, answer_file: str | None) -> Answer:
    return Answer(stdout.strip("\n"), None)


def _objects(stdout: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of `stdout`: one value (an object, or an array of them) or JSON lines.
    A line that is not JSON is skipped, as CLIs print warnings among their events."""
    text = stdout.strip()
    if not text:
        return
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
        for line in text.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value
    if isinstance(whole, dict):
        yield whole
    elif isinstance(whole, list):
        yield from (item for item in whole if isinstance(item, dict))


def _no_json(what: str) -> EnvelopeError:
    return EnvelopeError(f"its output has no {what}")


def _result(stdout: str, answer_file: str | None) -> Answer:
    found = [o for o in _objects(stdout) if o.get("type") == "result" or "is_error" in o]
    if not found:
        raise _no_json("JSON result object")
    result = found[-1]
    text = result.get("result")
    text = text if isinstance(text, str) else ""
    # Held to a JSON Schema (claude --json-schema, qwen --json-schema), the CLI gives the value
    # itself beside the text: Claude Code as structured_output, Qwen Code as structured_result.
    for field in ("structured_output", "structured_result"):
        if result.get(field) is not None:
            text = json.dumps(result[field], ensure_ascii=False)
            break
    usage = _usage(result, "usage", "total_cost_usd", "num_turns")
    subtype = result.get("subtype")
    denied = _denials(result.get("permission_denials"))
    if result.get("is_error") or (isinstance(subtype, str) and subtype.startswith("error")):
        return Answer("", text or str(subtype or "the agent reported an error"), usage, denied)
    return Answer(text, None, usage, denied)


def _denials(found: object) -> tuple[str, ...]:
    """Claude Code's `permission_denials`: each tool call it refused, as `TOOL INPUT`."""
    if not isinstance(found, list):
        return ()
    lines = []
    for denial in found:
        if not isinstance(denial, dict):
            continue
        tool = denial.get("tool_name") or "a tool"
        given = denial.get("tool_input")
        if isinstance(given, dict):
            given = given.get("command") or given.get("file_path") or json.dumps(given)
        lines.append(f"{tool} {given}".strip() if given else str(tool))
    return tuple(lines)


def _gemini(stdout: str, answer_file: str | None) -> Answer:
    found = list(_objects(stdout))
    if not found:
        raise _no_json("JSON object")
    value = found[-1]
    error = value.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        return Answer("", str(message), None)
    text = value.get("response")
    return Answer(text if isinstance(text, str) else "", None, _usage(value, "stats"))


def _codex(stdout: str, answer_file: str | None) -> Answer:
    events = list(_objects(stdout))
    messages, errors, usage = [], [], None
    for event in events:
        kind = event.get("type")
        item = event.get("item")
        if kind == "item.completed" and isinstance(item, dict):
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                messages.append(item["text"])
        elif kind == "error" and event.get("message"):
            errors.append(str(event["message"]))
        elif kind == "turn.failed":
            error = event.get("error")
            errors.append(str(error.get("message") if isinstance(error, dict) else error))
        elif kind == "turn.completed":
            usage = _usage(event, "usage")
    text = _file_text(answer_file) or (messages[-1] if messages else "")
    if errors:
        return Answer("", errors[-1], usage)
    if not events and not text:
        raise _no_json("JSON events")
    return Answer(text, None, usage)


def _opencode(stdout: str, answer_file: str | None) -> Answer:
    events = list(_objects(stdout))
    if not events:
        raise _no_json("JSON events")
    parts, usage = [], None
    for event in events:
        kind, part = event.get("type"), event.get("part")
        if kind == "text" and isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif kind == "error":
            error = event.get("error")
            data = error.get("data") if isinstance(error, dict) else None
            message = data.get("message") if isinstance(data, dict) else None
            name = error.get("name") if isinstance(error, dict) else None
            return Answer("", str(message or name or error), usage)
        elif kind == "step_finish" and isinstance(part, dict):
            usage = _usage(part, "tokens", "cost")
    return Answer("".join(parts), None, usage)


def _continue(stdout: str, answer_file: str | None) -> Answer:
    found = [o for o in _objects(stdout) if "response" in o or "status" in o]
    if not found:
        raise _no_json("JSON response object")
    value = found[-1]
    text = value.get("response")
    text = text if isinstance(text, str) else ""
    if value.get("status") not in (None, "success"):
        return Answer("", text or f"status {value.get('status')}", None)
    return Answer(text, None, None)


def _cline(stdout: str, answer_file: str | None) -> Answer:
    events = list(_objects(stdout))
    runs = [e for e in events if e.get("type") == "run_result"]
    if not runs:
        errors = [e for e in events if e.get("type") == "error"]
        if errors:
            return Answer("", str(errors[-1].get("message") or errors[-1]), None)
        raise _no_json("run_result event")
    run = runs[-1]
    text = run.get("text") if isinstance(run.get("text"), str) else ""
    reason = run.get("finishReason")
    if reason not in (None, "completed"):
        return Answer("", f"finished as {reason}" + (f": {text}" if text else ""), None)
    return Answer(str(text), None, _usage(run, "usage"))


# Lines aider prints around the answer: its banner, and notices it gives on its own.
_AIDER_BANNER: Final = (
    "Aider v",
    "Main model:",
    "Weak model:",
    "Editor model:",
    "Git repo:",
    "Repo-map:",
    "Analytics ",
    "Detected dumb terminal",
    "Warning:",
    "Added ",
    "Git repository created in ",
    "Update git name with:",
    "Update git email with:",
    "Model:",
    "Newer aider version",
    "You can skip this check",
    "https://aider.chat/",
)
# What aider prints instead of an answer when the model call fails (it still exits 0).
_AIDER_ERRORS: Final = ("litellm.", "Error:", "API Error", "Unexpected error", "Traceback")


def _aider(stdout: str, answer_file: str | None) -> Answer:
    lines = stdout.splitlines()
    errors = [line.strip() for line in lines if line.strip().startswith(_AIDER_ERRORS)]
    body = [line for line in lines if not line.startswith(_AIDER_BANNER)]
    usage = None
    # The token count follows the answer; what aider did with the answer (applied edits, its
    # commit) comes after it.
    counts = [i for i, line in enumerate(body) if line.startswith("Tokens:")]
    if counts:
        usage = {"summary": body.pop(counts[-1]).strip()}
    text = "\n".join(body).strip("\n")
    if errors:
        return Answer("", errors[0], usage)
    return Answer(text, None, usage)


def _file_text(path: str | None) -> str:
    if path is None:
        return ""
    from start import fs

    try:
        return fs.text(fs.read(path, 1 << 30).data).strip("\n")
    except fs.FileError:
        return ""


def _usage(value: Mapping[str, Any], *keys: str) -> dict[str, Any] | None:
    found = {key: value[key] for key in keys if value.get(key) is not None}
    return found or None


_READERS: Final[Mapping[str, Callable[[str, str | None], Answer]]] = {
    "text": _text,
    "result": _result,
    "gemini": _gemini,
    "codex": _codex,
    "opencode": _opencode,
    "continue": _continue,
    "cline": _cline,
    "aider": _aider,
}


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
) -> Result:
    """Run a launch prepared for --print (pipeline.prepare with permissions) to its end, and read
    its answer. Raises StoppedError or KeyboardInterrupt on a signal, after the agent's process
    group is gone; every failure of the agent itself is a Result that is not ok."""
    import os

    from start import agentrun

    launch = prepared.launch
    try:
        env = {**os.environ, **launch.env}
        done = agentrun.run_agent(
            launch.argv, env, launch.cwd, timeout=timeout, stdin=launch.stdin, progress=progress
        )
        return _ended(prepared, done, timeout)
    finally:
        launch.cleanup()


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
    is told of each agent's process group (shell.Owner).
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
                key=os.path.basename(os.path.expanduser(p.plan.agent.bin)),
            )
            for p in each
        ]
        runs = agentrun.run_agents(jobs, cap=cap, on_state=on_state, owner=owner)
        return [_ended(p, done, timeout) for p, done in zip(each, runs, strict=True)]
    finally:
        for prepared in each:
            prepared.launch.cleanup()


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
    }


def _ended(prepared: pipeline.Prepared, done: agentrun.AgentRun, timeout: float) -> Result:
    """The answer of a finished run, read before its temp files go."""
    launch, plan = prepared.launch, prepared.plan
    agent = plan.agent
    assert launch.permissions is not None and agent.print_output is not None
    answer: Answer | None = None
    problem: str | None = None
    if done.error is None and not done.timed_out:
        try:
            answer = read(agent.print_output, done.stdout, launch.answer_file)
        except EnvelopeError as wrong:
            problem = f"{wrong} (print_output = '{agent.print_output}')"
    error = _failure(done, answer, problem, timeout)
    checked = None
    spec = prepared.output
    if error is None and answer is not None and spec is not None and not spec.is_text:
        from start import output

        checked = output.check(spec, answer.text)
        if not checked.ok:
            error = _mismatch(spec, checked)
    return Result(
        agent=agent.name,
        model=plan.model,
        permissions=launch.permissions,
        task=plan.task.name if plan.task is not None else None,
        argv=done.argv,
        exit_code=done.returncode,
        timed_out=done.timed_out,
        duration=done.duration,
        answer=answer.text if answer is not None and (error is None or checked is not None) else "",
        error=error,
        stdout=done.stdout,
        stderr=done.stderr,
        usage=answer.usage if answer is not None else None,
        denied=answer.denied if answer is not None else (),
        value=checked.value if checked is not None else None,
        problems=checked.problems if checked is not None and not checked.ok else (),
        permissions_from=launch.permissions_from or "",
    )


def _mismatch(spec: output.Spec, checked: output.Checked) -> str:
    """Why an answer is not in the task's format: the first problems, one a line."""
    if spec.format == "json":
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
