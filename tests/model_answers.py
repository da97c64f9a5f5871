"""What the offline model server answers, API by API: one fixed text, JSON fitting a schema, or
the API's own error body.

Each function takes the answer text and the request's body and returns the JSON answer, or, when
streamed, the events in order: (name, data), the name None for data-only events.
"""

from __future__ import annotations

import json
import time
from itertools import pairwise
from typing import Any

NAME = "tests.model_server"
# Offered by the model lists; any other model name is answered too.
MODELS = ("answer-model", "gpt-4o", "gpt-5.5", "claude-sonnet-4-5", "gemini-2.5-pro")
# The id of the one tool call the server makes when told to call a tool.
TOOL_USE_ID = "toolu_model_server_1"
# A JSON schema nested deeper than this (or a $ref cycle) gets null there.
MAX_DEPTH = 32


# --- JSON answers ------------------------------------------------------------------------------


def fit(schema: Any, text: str, root: Any = None, depth: int = 0) -> Any:
    """A value fitting the JSON schema (or Gemini's upper-case OpenAPI subset).

    Strings are TEXT, enums their first value, numbers their minimum or 1, booleans true, arrays
    `minItems` long, objects have every property.
    """
    root = schema if root is None else root
    if depth > MAX_DEPTH or not isinstance(schema, dict):
        return None if depth > MAX_DEPTH else text
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        return fit(target, text, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return fit(schema[key][0], text, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind).lower() if kind is not None else None
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return {}
        return {key: fit(value, text, root, depth + 1) for key, value in properties.items()}
    if kind == "array":
        count = str(schema.get("minItems", 0))
        items = range(min(int(count), 100) if count.isdigit() else 0)
        return [fit(schema.get("items"), text, root, depth + 1) for _ in items]
    if kind in ("integer", "number"):
        return number(schema, kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return text


def number(schema: dict[str, Any], integer: bool) -> int | float:
    """The minimum (or 1), above an exclusive minimum and at most the maximum."""

    def given(key: str) -> int | float | None:
        value = schema.get(key)
        return value if type(value) in (int, float) else None

    low, above, high = given("minimum"), given("exclusiveMinimum"), given("maximum")
    if above is not None:  # JSON schema: exclusiveMinimum is a number
        value = above + 1
    elif low is not None:  # OpenAPI 3.0: exclusiveMinimum is a flag on minimum
        value = low + 1 if schema.get("exclusiveMinimum") is True else low
    else:
        value = 1
    if high is not None and value > high:
        value = high
    return int(value) if integer else value


def json_schema(api: str, body: dict[str, Any]) -> tuple[bool, Any]:
    """Whether the request demands JSON output, and the schema it gives (or None)."""
    if api == "gemini":
        config = body.get("generationConfig") or body.get("generation_config") or {}
        if not isinstance(config, dict):
            return False, None
        mime = config.get("responseMimeType") or config.get("response_mime_type")
        schema = next(
            (
                config[key]
                for key in ("responseJsonSchema", "responseSchema", "response_schema")
                if key in config
            ),
            None,
        )
        return mime == "application/json" or schema is not None, schema
    if api == "chat":
        spec = body.get("response_format")
        inner = spec.get("json_schema") if isinstance(spec, dict) else None
        schema = inner.get("schema") if isinstance(inner, dict) else None
    elif api == "responses":
        text = body.get("text")
        spec = text.get("format") if isinstance(text, dict) else None
        schema = spec.get("schema") if isinstance(spec, dict) else None
    else:  # anthropic
        config = body.get("output_config")
        spec = body.get("output_format") or (
            config.get("format") if isinstance(config, dict) else None
        )
        schema = spec.get("schema") if isinstance(spec, dict) else None
    wanted = isinstance(spec, dict) and spec.get("type") in ("json_schema", "json_object", "json")
    return wanted, schema


def reply_text(answer: str, api: str, body: dict[str, Any]) -> str:
    """The answer, or a JSON object fitting the schema when the request demands JSON."""
    wanted, schema = json_schema(api, body)
    if not wanted:
        return answer
    value = fit(schema, answer) if schema is not None else {"answer": answer}
    return json.dumps(value)


def pieces(text: str) -> list[str]:
    """TEXT in three pieces (fewer if it is shorter), so that clients must join deltas."""
    size = len(text)
    cuts = [0, size // 3, 2 * size // 3, size]
    parts = [text[a:b] for a, b in pairwise(cuts)]
    return [part for part in parts if part] or [""]


def tokens(text: str) -> int:
    return max(1, len(text) // 4)


# --- the APIs ----------------------------------------------------------------------------------

Events = list[tuple[str | None, Any]]


def anthropic(text: str, body: dict[str, Any], stream: bool, used: int) -> Any:
    block = {"type": "text", "text": text}
    deltas = [{"type": "text_delta", "text": piece} for piece in pieces(text)]
    return messages(block, {**block, "text": ""}, deltas, "end_turn", body, stream, used)


def anthropic_tool_use(
    name: str, arguments: dict[str, Any], body: dict[str, Any], stream: bool, used: int
) -> Any:
    """A Messages answer that calls the tool NAME with ARGUMENTS (id TOOL_USE_ID), and stops."""
    block = {"type": "tool_use", "id": TOOL_USE_ID, "name": name, "input": arguments}
    deltas = [
        {"type": "input_json_delta", "partial_json": piece}
        for piece in pieces(json.dumps(arguments))
    ]
    return messages(block, {**block, "input": {}}, deltas, "tool_use", body, stream, used)


def messages(
    block: dict[str, Any],
    empty: dict[str, Any],
    deltas: list[dict[str, Any]],
    stop: str,
    body: dict[str, Any],
    stream: bool,
    used: int,
) -> Any:
    """An Anthropic message of one content BLOCK; streamed, EMPTY starts it and DELTAS fill it."""
    model = str(body.get("model") or MODELS[0])
    output = tokens(block["text"] if block["type"] == "text" else json.dumps(block["input"]))
    zero = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message = {
        "id": "msg_answer",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": used, "output_tokens": output, **zero},
    }
    if not stream:
        return message
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": used, "output_tokens": 1, **zero},
    }
    events: Events = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": empty},
        ),
        ("ping", {"type": "ping"}),
    ]
    for delta in deltas:
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": output},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def chat(text: str, body: dict[str, Any], stream: bool, used: int) -> Any:
    """OpenAI Chat Completions, or the legacy completions when the body has a `prompt`."""
    legacy = "messages" not in body and "prompt" in body
    model = str(body.get("model") or MODELS[0])
    usage = {
        "prompt_tokens": used,
        "completion_tokens": tokens(text),
        "total_tokens": used + tokens(text),
    }
    head = {"id": "chatcmpl-answer", "created": int(time.time()), "model": model}

    def choice(content: str | None, finish: str | None) -> dict[str, Any]:
        if legacy:
            return {"index": 0, "text": content or "", "logprobs": None, "finish_reason": finish}
        if not stream:
            message = {"role": "assistant", "content": content, "refusal": None}
            return {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        delta = {} if content is None else {"content": content}
        if content == "":
            delta["role"] = "assistant"
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}

    kind = "text_completion" if legacy else "chat.completion"
    if not stream:
        return {**head, "object": kind, "choices": [choice(text, "stop")], "usage": usage}
    kind = kind if legacy else "chat.completion.chunk"
    chunk = {**head, "object": kind}
    contents: list[str | None] = [*([] if legacy else [""]), *pieces(text)]
    events: Events = [(None, {**chunk, "choices": [choice(c, None)]}) for c in contents]
    events.append((None, {**chunk, "choices": [choice(None, "stop")], "usage": usage}))
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        events.append((None, {**chunk, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return events


def responses(text: str, body: dict[str, Any], stream: bool, used: int) -> Any:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    item = {
        "id": "msg_answer",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [part],
    }
    usage = {
        "input_tokens": used,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": tokens(text),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": used + tokens(text),
    }
    done = {
        "id": "resp_answer",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": str(body.get("model") or MODELS[0]),
        "output": [item],
        "usage": usage,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "text": body.get("text") or {"format": {"type": "text"}},
    }
    if not stream:
        return done
    running = {**done, "status": "in_progress", "output": [], "usage": None}
    at = {"item_id": "msg_answer", "output_index": 0, "content_index": 0}
    empty = {**part, "text": ""}
    payloads: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": running}),
        ("response.in_progress", {"response": running}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": {**item, "status": "in_progress", "content": []}},
        ),
        ("response.content_part.added", {**at, "part": empty}),
        *[("response.output_text.delta", {**at, "delta": p, "logprobs": []}) for p in pieces(text)],
        ("response.output_text.done", {**at, "text": text, "logprobs": []}),
        ("response.content_part.done", {**at, "part": part}),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": done}),
    ]
    return [
        (name, {"type": name, "sequence_number": number, **payload})
        for number, (name, payload) in enumerate(payloads)
    ]


def gemini(text: str, model: str, stream: bool, used: int) -> Any:
    usage = {
        "promptTokenCount": used,
        "candidatesTokenCount": tokens(text),
        "totalTokenCount": used + tokens(text),
    }

    def chunk(piece: str, last: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": piece}]}}
        candidate["index"] = 0
        result: dict[str, Any] = {"candidates": [candidate], "modelVersion": model}
        if last:
            candidate["finishReason"] = "STOP"
            result["usageMetadata"] = usage
        return result

    if not stream:
        return chunk(text, True)
    parts = pieces(text)
    return [chunk(piece, n == len(parts) - 1) for n, piece in enumerate(parts)]


def augment(text: str) -> list[dict[str, Any]]:
    """Augment's tenant `/chat-stream`: `{"text": …}` lines, then END_TURN (stop_reason 1)."""
    return [*({"text": piece} for piece in pieces(text)), {"text": "", "stop_reason": 1}]


def ollama(text: str, body: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """Ollama's `/api/chat` or `/api/generate` lines; the last is `done`."""
    model = str(body.get("model") or MODELS[0])
    stamp = "2025-01-01T00:00:00Z"
    chat_api = path.endswith("/api/chat")

    def line(piece: str, last: bool) -> dict[str, Any]:
        content: dict[str, Any] = (
            {"message": {"role": "assistant", "content": piece}}
            if chat_api
            else {"response": piece}
        )
        extra = {"done_reason": "stop", "eval_count": tokens(text)} if last else {}
        return {"model": model, "created_at": stamp, **content, "done": last, **extra}

    if body.get("stream") is False:
        return [line(text, True)]
    return [*(line(piece, False) for piece in pieces(text)), line("", True)]


# --- errors ------------------------------------------------------------------------------------

# What each API calls an error status (Anthropic's type, OpenAI's code, Google's status), and
# the message the server gives with it; another status is named as 400 or 500 is.
ERRORS = {
    400: ("invalid_request_error", "invalid_request", "INVALID_ARGUMENT", "bad request"),
    401: ("authentication_error", "invalid_api_key", "UNAUTHENTICATED", "invalid API key"),
    403: ("permission_error", "insufficient_quota", "PERMISSION_DENIED", "permission denied"),
    429: ("rate_limit_error", "rate_limit_exceeded", "RESOURCE_EXHAUSTED", "rate limit reached"),
    500: ("api_error", "server_error", "INTERNAL", "internal server error"),
}


def api_error(api: str, status: int) -> dict[str, Any]:
    """The body an API answers an error STATUS with, in its own shape: Anthropic's `type: error`,
    OpenAI's `error.code`, Google's `error.status`, Ollama's and Augment's bare `error`."""
    other = ERRORS[500] if status >= 500 else ERRORS[400]
    anthropic_type, openai_code, google_status, said = ERRORS.get(status, other)
    message = f"{NAME}: {said} (this server answers every request with status {status})"
    if api == "anthropic":
        return {"type": "error", "error": {"type": anthropic_type, "message": message}}
    if api == "gemini":
        return {"error": {"code": status, "message": message, "status": google_status}}
    if api in ("chat", "responses"):
        kind = "invalid_request_error" if status < 500 else "server_error"
        error = {"message": message, "type": kind, "param": None, "code": openai_code}
        return {"error": error}
    return {"error": message}


def model_entry(name: str) -> dict[str, Any]:
    """One model in the OpenAI, Anthropic and Gemini shapes at once."""
    return {
        "id": name,
        "object": "model",
        "created": 0,
        "owned_by": NAME,
        "type": "model",
        "display_name": name,
        "created_at": "2025-01-01T00:00:00Z",
        "name": f"models/{name}",
        "model": name,
        "displayName": name,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
        "inputTokenLimit": 1_000_000,
        "outputTokenLimit": 65_536,
    }


def model_list() -> dict[str, Any]:
    entries = [model_entry(name) for name in MODELS]
    return {
        "object": "list",
        "data": entries,
        "has_more": False,
        "first_id": MODELS[0],
        "last_id": MODELS[-1],
        "models": entries,
    }
