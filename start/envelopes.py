"""Envelope readers: the answer in what an agent CLI prints headless, one reader per envelope
(an agent's `print_output`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from start.config.schema import ENVELOPES
from start.errors import StartError
from start.record import Record


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
