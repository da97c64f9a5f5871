"""Envelope readers: the answer in what an agent CLI prints headless, one reader per envelope
(an agent's `print_output`), each tested against what the installed CLI printed
(tests/fixtures/envelopes, recorded by `python scripts/agents.py --record-envelopes`).

A reader says what the output says: the answer, or the CLI's own words for a failure it
reported. Whether that makes the run a success (exit status, an empty answer) is headless's rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from start.base.errors import StartError
from start.base.record import Record
from start.config.schema import ENVELOPES
from start.runs import agentjson


class Answer(Record):
    """What a CLI's output says: the answer, or why there is none."""

    text: str
    error: str | None  # the CLI's own words for a failure it reported, else None
    usage: Mapping[str, Any] | None = None  # tokens and cost, as the CLI reported them
    # Actions the CLI reports it refused for lack of permission, one line each: shown, not hidden.
    denied: tuple[str, ...] = ()
    session_id: str | None = None  # the CLI's id of the conversation, where it prints one


class EnvelopeError(StartError):
    """Output that is not what the agent's print_output says it prints."""


class TooLargeError(StartError):
    """An answer larger than settings.print_answer_limit: it is not read."""


def read(
    envelope: str,
    stdout: str,
    answer_file: str | None = None,
    limit: int = 1 << 30,
    stderr: str = "",
) -> Answer:
    """The answer in `stdout` (and in the file the CLI wrote it to, read up to `limit` bytes,
    and the error some CLIs print on `stderr`), by `envelope`. Nothing printed at all is an
    empty answer. Every text comes back printable and storable: a lone surrogate that a JSON
    escape made is U+FFFD.

    Raises EnvelopeError when the output is not of that form at all, TooLargeError when the
    answer file holds more than `limit` bytes.
    """
    reader = _READERS.get(envelope)
    if reader is None:
        raise EnvelopeError(f"unknown print_output '{envelope}': one of {', '.join(ENVELOPES)}")
    output = _Output(stdout, stderr, _file_text(answer_file, limit))
    found = reader(output)
    where = _SESSIONS.get(envelope)
    session = where(output) if where is not None else None
    return Answer(
        agentjson.whole(found.text),
        None if found.error is None else agentjson.whole(found.error),
        agentjson.plain(found.usage),
        tuple(agentjson.whole(line) for line in found.denied),
        agentjson.whole(session) if isinstance(session, str) and session else None,
    )


class _Output(Record):
    stdout: str
    stderr: str
    filed: str  # the answer the CLI wrote to its answer file (codex), or ""


def _text(output: _Output) -> Answer:
    return Answer(output.stdout.strip("\n"), None)


def _no_json(what: str) -> EnvelopeError:
    return EnvelopeError(f"its output has no {what}")


def _empty(output: _Output) -> bool:
    return not output.stdout.strip()


def _result(output: _Output) -> Answer:
    """Claude Code, Qwen Code, Auggie (and droid's -o json): a result object, alone, in an array
    or among lines."""
    if _empty(output):
        return Answer("", None)
    found = [
        o for o in agentjson.objects(output.stdout) if o.get("type") == "result" or "is_error" in o
    ]
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
    usage = agentjson.usage(result, "usage", "total_cost_usd", "num_turns")
    subtype = result.get("subtype")
    denied = _denials(result.get("permission_denials"))
    if result.get("is_error") or (isinstance(subtype, str) and subtype.startswith("error")):
        # Qwen Code puts its own words in an `error` object; its subtype says only
        # error_during_execution.
        said = agentjson.message(result.get("error")) or text
        return Answer("", said or str(subtype or "the agent reported an error"), usage, denied)
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


def _gemini(output: _Output) -> Answer:
    """Gemini CLI: {"response", "stats"} on stdout; a failure as {"error"} on stdout, or, when
    the model call failed, on stderr after its stack traces (stdout then empty)."""
    found = list(agentjson.objects(output.stdout))
    if not found and not _empty(output):
        raise _no_json("JSON object")
    errors = [o for o in agentjson.objects(agentjson.last_object(output.stderr)) if o.get("error")]
    value = found[-1] if found else errors[-1] if errors else {}
    error, usage = value.get("error"), agentjson.usage(value, "stats")
    if error:
        return Answer("", _gemini_error(error), usage)
    text = value.get("response")
    return Answer(text if isinstance(text, str) else "", None, usage)


def _gemini_error(error: object) -> str:
    """Gemini's error message, which quotes the API's error body as JSON text when the model
    call failed: that body's message, with its code and status."""
    message = agentjson.message(error) or str(error)
    try:
        body = agentjson.loads(message)
    except ValueError:
        return message
    inner = body.get("error") if isinstance(body, dict) else None
    said = agentjson.message(inner)
    if not isinstance(inner, dict) or said is None:
        return message
    status = " ".join(str(inner[key]) for key in ("code", "status") if inner.get(key))
    return f"{status}: {said}" if status else said


def _codex(output: _Output) -> Answer:
    """Codex: JSON lines of events; the final answer also in the answer file."""
    events = list(agentjson.objects(output.stdout))
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
            errors.append(agentjson.message(error) or str(error))
        elif kind == "turn.completed":
            usage = agentjson.usage(event, "usage")
    text = output.filed or (messages[-1] if messages else "")
    if errors:
        return Answer("", errors[-1], usage)
    if not events and not text and not _empty(output):
        raise _no_json("JSON events")
    return Answer(text, None, usage)


def _opencode(output: _Output) -> Answer:
    """opencode: JSON lines of events; the answer is its text parts joined."""
    events = list(agentjson.objects(output.stdout))
    if not events:
        if _empty(output):
            return Answer("", None)
        raise _no_json("JSON events")
    parts, usage = [], None
    for event in events:
        kind, part = event.get("type"), event.get("part")
        if kind == "text" and isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif kind == "error":
            error = event.get("error")
            data = error.get("data") if isinstance(error, dict) else None
            name = error.get("name") if isinstance(error, dict) else None
            return Answer("", agentjson.message(data) or str(name or error), usage)
        elif kind == "step_finish" and isinstance(part, dict):
            usage = agentjson.usage(part, "tokens", "cost")
    return Answer("".join(parts), None, usage)


# What cn -p --format json wraps an answer that is not JSON in; an answer that is JSON it prints
# as it is (trimmed).
_CONTINUE_NOTE: Final = "Response was not valid JSON, so it was wrapped in a JSON object"


def _continue(output: _Output) -> Answer:
    """cn --format json: a text answer wrapped in {"response", "status", "note"}, or a JSON
    answer printed as it is. Only the exact wrapper (those three keys, that note) is unwrapped:
    `{"response": "x", "items": []}` is an answer of its own. cn prints its failures on stderr."""
    text = output.stdout.strip()
    if not text:
        return Answer("", None)
    try:
        value = agentjson.loads(text)
    except ValueError:
        raise _no_json("JSON answer, nor cn's wrapper of a text answer") from None
    wrapped = (
        isinstance(value, dict)
        and value.keys() == {"response", "status", "note"}
        and value["note"] == _CONTINUE_NOTE
        and value["status"] == "success"
        and isinstance(value["response"], str)
    )
    return Answer(value["response"] if wrapped else text, None)


def _cline(output: _Output) -> Answer:
    """Cline: JSON lines of events ending in a run_result."""
    events = list(agentjson.objects(output.stdout))
    runs = [e for e in events if e.get("type") == "run_result"]
    if not runs:
        errors = [e for e in events if e.get("type") == "error"]
        if errors:
            return Answer("", str(errors[-1].get("message") or errors[-1]), None)
        if _empty(output):
            return Answer("", None)
        raise _no_json("run_result event")
    run = runs[-1]
    text = run.get("text") if isinstance(run.get("text"), str) else ""
    reason, usage = run.get("finishReason"), agentjson.usage(run, "usage")
    if reason not in (None, "completed"):
        return Answer("", f"finished as {reason}" + (f": {text}" if text else ""), usage)
    return Answer(str(text), None, usage)


def _droid(output: _Output) -> Answer:
    """Droid's stream-json: JSON lines of events, the answer in the last `completion`; a
    failure is `error` events, the cause first and droid's own "Exec failed" last."""
    events = list(agentjson.objects(output.stdout))
    errors = [e for e in events if e.get("type") == "error" and agentjson.message(e)]
    if errors:
        causes = [e for e in errors if e.get("source") != "cli"] or errors
        return Answer("", "; ".join(dict.fromkeys(str(agentjson.message(e)) for e in causes)), None)
    done = [e for e in events if e.get("type") == "completion"]
    if not done:
        if _empty(output):
            return Answer("", None)
        raise _no_json("completion event")
    text = done[-1].get("finalText")
    usage = agentjson.usage(done[-1], "usage", "numTurns")
    return Answer(text if isinstance(text, str) else "", None, usage)


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
# What aider prints instead of an answer when the model call fails, or answers nothing (it
# still exits 0).
_AIDER_ERRORS: Final = (
    "litellm.",
    "Error:",
    "API Error",
    "Unexpected error",
    "Traceback",
    "Empty response received from LLM.",
)


def _aider(output: _Output) -> Answer:
    """Aider: its banner, the answer, its `Tokens:` line, and what it did with the answer."""
    lines = output.stdout.splitlines()
    body = [line for line in lines if not line.startswith(_AIDER_BANNER)]
    usage = None
    # The token count follows the answer; what aider did with the answer (applied edits, its
    # commit) comes after it.
    counts = [i for i, line in enumerate(body) if line.startswith("Tokens:")]
    if counts:
        usage = {"summary": body.pop(counts[-1]).strip()}
    errors = [i for i, line in enumerate(body) if line.strip().startswith(_AIDER_ERRORS)]
    if errors:
        # Aider wraps a long message over lines; it ends at the first blank line.
        first = errors[0]
        end = next((i for i in range(first, len(body)) if not body[i].strip()), len(body))
        return Answer("", " ".join(line.strip() for line in body[first:end]), usage)
    return Answer("\n".join(body).strip("\n"), None, usage)


def _llm(output: _Output) -> Answer:
    """llm prompt --json: an array of the records `llm logs --json` shows, the answer in the
    last one's `response`. llm prints its failures on stderr, and nothing on stdout."""
    if _empty(output):
        return Answer("", None)
    records = [o for o in agentjson.objects(output.stdout) if "response" in o]
    if not records:
        raise _no_json("JSON records of responses")
    record = records[-1]
    text = record.get("response")
    usage = agentjson.usage(record, "input_tokens", "output_tokens", "token_details")
    return Answer(text if isinstance(text, str) else "", None, usage)


def _copilot(output: _Output) -> Answer:
    """Copilot CLI's --output-format json: JSON lines of events, the answer in the last
    `assistant.message`, a failure in `session.error` events, the last event a `result`."""
    events = list(agentjson.objects(output.stdout))
    if not events:
        if _empty(output):
            return Answer("", None)
        raise _no_json("JSON events")
    text, errors, usage = "", [], None
    for event in events:
        kind, data = event.get("type"), event.get("data")
        data = data if isinstance(data, dict) else {}
        if kind == "assistant.message" and isinstance(data.get("content"), str):
            text = data["content"]
        elif kind == "session.error":
            errors.append(agentjson.message(data) or str(data.get("errorType") or "an error"))
        elif kind == "result":
            usage = agentjson.usage(event, "usage")
    if errors:
        return Answer("", errors[-1], usage)
    return Answer(text, None, usage)


def _file_text(path: str | None, limit: int) -> str:
    """The answer a CLI wrote to a file (codex's {answer_file}); "" when there is none."""
    if path is None:
        return ""
    from start.base import fs

    try:
        found = fs.read(path, limit)
    except fs.FileError:
        return ""
    if found.truncated:
        raise TooLargeError(f"its answer file holds {size_text(found.size)}")
    return fs.text(found.data).strip("\n")


def size_text(count: int) -> str:
    """A byte count in words: `1,234 bytes`, `16 MiB`, `20.5 MiB`."""
    if count < 1 << 20:
        return f"{count:,} bytes"
    return f"{count / (1 << 20):.1f}".removesuffix(".0") + " MiB"


_READERS: Final[Mapping[str, Callable[[_Output], Answer]]] = {
    "text": _text,
    "result": _result,
    "gemini": _gemini,
    "codex": _codex,
    "opencode": _opencode,
    "continue": _continue,
    "cline": _cline,
    "droid": _droid,
    "aider": _aider,
    "llm": _llm,
    "copilot": _copilot,
}


def _keyed(key: str, kind: str | None = None) -> Callable[[_Output], object]:
    """The last `key` of the JSON objects a CLI printed (of those of type `kind`)."""

    def found(output: _Output) -> object:
        values = [
            o.get(key)
            for o in agentjson.objects(output.stdout)
            if o.get(key) is not None and (kind is None or o.get("type") == kind)
        ]
        return values[-1] if values else None

    return found


# Where each envelope carries the CLI's session id (`claude -p --resume ID`, `codex exec resume
# ID`, `gemini --resume ID`, `llm --cid ID`, ...); the others print none.
_SESSIONS: Final[Mapping[str, Callable[[_Output], object]]] = {
    "result": _keyed("session_id"),
    "gemini": _keyed("session_id"),
    "codex": _keyed("thread_id", "thread.started"),
    "opencode": _keyed("sessionID"),
    "droid": _keyed("session_id"),
    "llm": _keyed("conversation_id"),
    "copilot": _keyed("sessionId", "result"),
}
