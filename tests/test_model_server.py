"""The offline model server speaks each API the catalog CLIs use, streamed or not."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import REPO
from tests.model_answers import MODELS, TOOL_USE_ID, api_error, fit, pieces
from tests.model_server import MAX_BODY, ModelServer, main, serve

ANSWER = "ANSWER-test-5f1c9e02"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with serve(answer=ANSWER) as running:
        yield running


def call(
    server: ModelServer, path: str, body: Any = None, method: str | None = None
) -> tuple[int, str, bytes]:
    """Status, Content-Type and body of one request."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers["Content-Type"], error.read()


def post_json(server: ModelServer, path: str, body: Any) -> Any:
    status, kind, data = call(server, path, body)
    assert (status, kind) == (200, "application/json")
    return json.loads(data)


def sse(server: ModelServer, path: str, body: Any) -> list[tuple[str | None, Any]]:
    """The (event name, data) of each server-sent event; data is parsed JSON or the raw text."""
    status, kind, data = call(server, path, body)
    assert (status, kind) == (200, "text/event-stream")
    events: list[tuple[str | None, Any]] = []
    for block in data.decode().split("\n\n"):
        if not block:
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        text = fields["data"]
        events.append((fields.get("event"), text if text == "[DONE]" else json.loads(text)))
    return events


def test_pieces_split_the_answer_in_three() -> None:
    assert pieces("ANSWER-x") == ["AN", "SWE", "R-x"]
    assert pieces("ab") == ["a", "b"]
    assert pieces("") == [""]


# --- Anthropic Messages ------------------------------------------------------------------------

MESSAGES = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 100,
    "system": "You are terse.",
    "messages": [{"role": "user", "content": "say hi"}],
}


def test_anthropic_streams_events_in_order(server: ModelServer) -> None:
    events = sse(server, "/v1/messages?beta=true", {**MESSAGES, "stream": True})
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert {delta["type"] for delta in deltas} == {"text_delta"}
    assert "".join(delta["text"] for delta in deltas) == ANSWER
    assert events[0][1]["message"]["model"] == "claude-sonnet-4-5"
    assert events[7][1]["delta"]["stop_reason"] == "end_turn"
    assert events[7][1]["usage"]["output_tokens"] > 0


def test_anthropic_answers_a_plain_message(server: ModelServer) -> None:
    message = post_json(server, "/v1/messages", MESSAGES)
    assert message["type"] == "message"
    assert message["role"] == "assistant"
    assert message["content"] == [{"type": "text", "text": ANSWER}]
    assert message["stop_reason"] == "end_turn"


def test_anthropic_counts_tokens(server: ModelServer) -> None:
    counted = post_json(server, "/v1/messages/count_tokens", MESSAGES)
    assert list(counted) == ["input_tokens"]
    assert counted["input_tokens"] > 0


# --- Anthropic Messages: a tool call, when told to make one ---------------------------------------

TOOL = "mcp__start__ask_agent"
TOOL_INPUT = {"agent": "llm", "model": "echo", "prompt": "say hi"}
OFFERING = {
    **MESSAGES,
    "tools": [
        {"name": "Read", "input_schema": {"type": "object"}},
        {"name": TOOL, "input_schema": {"type": "object"}},
    ],
}


def answered(result: str) -> dict[str, Any]:
    """OFFERING, continued by the tool call and a tool_result holding RESULT."""
    call = {"type": "tool_use", "id": TOOL_USE_ID, "name": TOOL, "input": TOOL_INPUT}
    back = {"type": "tool_result", "tool_use_id": TOOL_USE_ID, "content": result}
    return {
        **OFFERING,
        "messages": [
            {"role": "user", "content": "say hi"},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [back]},
        ],
    }


def test_the_first_request_offering_the_tool_gets_a_streamed_call() -> None:
    with serve(answer=ANSWER, call_tool=TOOL, tool_input=TOOL_INPUT) as server:
        plain = sse(server, "/v1/messages", {**MESSAGES, "stream": True})
        assert not server.tool_called
        called = sse(server, "/v1/messages", {**OFFERING, "stream": True})
        assert server.tool_called
        again = sse(server, "/v1/messages", {**OFFERING, "stream": True})
        after = sse(server, "/v1/messages", {**answered("the tool's answer"), "stream": True})
        assert server.tool_results() == ["the tool's answer"]
    assert [name for name, _ in called] == [name for name, _ in plain]
    assert called[1][1]["content_block"] == {
        "type": "tool_use",
        "id": TOOL_USE_ID,
        "name": TOOL,
        "input": {},
    }
    deltas = [data["delta"] for name, data in called if name == "content_block_delta"]
    assert {delta["type"] for delta in deltas} == {"input_json_delta"}
    assert json.loads("".join(delta["partial_json"] for delta in deltas)) == TOOL_INPUT
    assert called[7][1]["delta"]["stop_reason"] == "tool_use"
    for events in (plain, again, after):
        texts = [data["delta"]["text"] for name, data in events if name == "content_block_delta"]
        assert "".join(texts) == ANSWER
        assert events[7][1]["delta"]["stop_reason"] == "end_turn"


def test_the_tool_call_unstreamed() -> None:
    with serve(answer=ANSWER, call_tool=TOOL, tool_input=TOOL_INPUT) as server:
        message = post_json(server, "/v1/messages", OFFERING)
        after = post_json(server, "/v1/messages", answered("ok"))
        assert server.tool_results() == ["ok"]
    assert message["content"] == [
        {"type": "tool_use", "id": TOOL_USE_ID, "name": TOOL, "input": TOOL_INPUT}
    ]
    assert message["stop_reason"] == "tool_use"
    assert after["content"] == [{"type": "text", "text": ANSWER}]
    assert after["stop_reason"] == "end_turn"


def test_no_tool_is_called_unless_told(server: ModelServer) -> None:
    message = post_json(server, "/v1/messages", OFFERING)
    assert message["content"] == [{"type": "text", "text": ANSWER}]
    assert not server.tool_called
    assert server.tool_results() == []


def test_a_tool_result_for_another_call_is_not_taken() -> None:
    with serve(answer=ANSWER, call_tool=TOOL) as server:
        body = answered("not ours")
        body["messages"][-1]["content"][0]["tool_use_id"] = "toolu_other"
        post_json(server, "/v1/messages", body)
        assert server.tool_results() == []


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("[1]", "not a JSON object: [1]"),
        (
            "{",
            "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
    ],
)
def test_tool_input_must_be_a_json_object(
    capsys: pytest.CaptureFixture[str], given: str, why: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--answer", ANSWER, "--call-tool", TOOL, "--tool-input", given])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == f"python -m tests.model_server: error: argument --tool-input: {why}"


# --- OpenAI Chat Completions -------------------------------------------------------------------

CHAT = {"model": "gpt-4o", "messages": [{"role": "system", "content": "Be terse."}]}


def test_chat_streams_chunks_usage_and_done(server: ModelServer) -> None:
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    events = sse(server, "/v1/chat/completions", body)
    assert {name for name, _ in events} == {None}
    assert events[-1][1] == "[DONE]"
    chunks = [data for _, data in events[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == ANSWER
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None] * 4 + ["stop"]
    assert chunks[-2]["usage"]["completion_tokens"] > 0
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == chunks[-2]["usage"]


def test_chat_sends_a_usage_only_chunk_only_when_asked(server: ModelServer) -> None:
    events = sse(server, "/v1/chat/completions", {**CHAT, "stream": True})
    assert [data["choices"][0]["finish_reason"] for _, data in events[:-1]][-1] == "stop"
    assert all(data["choices"] for _, data in events[:-1])


def test_chat_answers_without_streaming(server: ModelServer) -> None:
    completion = post_json(server, "/v1/chat/completions", CHAT)
    assert completion["object"] == "chat.completion"
    assert completion["model"] == "gpt-4o"
    choice = completion["choices"][0]
    assert choice["message"]["content"] == ANSWER
    assert choice["finish_reason"] == "stop"
    assert completion["usage"]["total_tokens"] > 0


def test_legacy_completions(server: ModelServer) -> None:
    body = {"model": "gpt-3.5-turbo-instruct", "prompt": "say hi"}
    assert post_json(server, "/v1/completions", body)["choices"][0]["text"] == ANSWER
    events = sse(server, "/v1/completions", {**body, "stream": True})
    assert events[-1] == (None, "[DONE]")
    assert "".join(data["choices"][0]["text"] for _, data in events[:-1]) == ANSWER


# --- OpenAI Responses --------------------------------------------------------------------------

RESPONSES = {"model": "gpt-5.5", "instructions": "Be terse.", "input": "say hi"}


def test_responses_streams_events_in_order(server: ModelServer) -> None:
    events = sse(server, "/v1/responses", {**RESPONSES, "stream": True})
    assert [name for name, _ in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["type"] for _, data in events] == [name for name, _ in events]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    deltas = [data["delta"] for name, data in events if name == "response.output_text.delta"]
    assert "".join(deltas) == ANSWER
    assert events[7][1]["text"] == ANSWER
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed"
    assert completed["output"][0]["content"][0]["text"] == ANSWER
    assert completed["usage"]["output_tokens"] > 0


def test_responses_answers_without_streaming(server: ModelServer) -> None:
    response = post_json(server, "/v1/responses", RESPONSES)
    assert response["object"] == "response"
    assert response["status"] == "completed"
    assert response["output"][0]["content"][0] == {
        "type": "output_text",
        "text": ANSWER,
        "annotations": [],
        "logprobs": [],
    }


# --- Gemini ------------------------------------------------------------------------------------

GEMINI = {"contents": [{"role": "user", "parts": [{"text": "say hi"}]}]}
GEMINI_PATH = "/v1beta/models/gemini-2.5-pro"


def test_gemini_generates_content(server: ModelServer) -> None:
    answer = post_json(server, f"{GEMINI_PATH}:generateContent", GEMINI)
    candidate = answer["candidates"][0]
    assert candidate["content"] == {"role": "model", "parts": [{"text": ANSWER}]}
    assert candidate["finishReason"] == "STOP"
    assert answer["modelVersion"] == "gemini-2.5-pro"
    assert answer["usageMetadata"]["totalTokenCount"] > 0


def joined_gemini(chunks: list[Any]) -> str:
    assert [("finishReason" in c["candidates"][0]) for c in chunks] == [False, False, True]
    assert "usageMetadata" in chunks[-1]
    return "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)


def test_gemini_streams_server_sent_events(server: ModelServer) -> None:
    events = sse(server, f"{GEMINI_PATH}:streamGenerateContent?alt=sse", GEMINI)
    assert {name for name, _ in events} == {None}
    assert joined_gemini([data for _, data in events]) == ANSWER


def test_gemini_streams_a_json_array_without_sse(server: ModelServer) -> None:
    chunks = post_json(server, f"{GEMINI_PATH}:streamGenerateContent", GEMINI)
    assert joined_gemini(chunks) == ANSWER


def test_gemini_counts_tokens(server: ModelServer) -> None:
    counted = post_json(server, f"{GEMINI_PATH}:countTokens", GEMINI)
    assert list(counted) == ["totalTokens"]


# --- Augment tenant, Ollama --------------------------------------------------------------------


def lines(server: ModelServer, path: str, body: Any) -> list[Any]:
    status, kind, data = call(server, path, body)
    assert (status, kind) == (200, "application/x-ndjson")
    return [json.loads(line) for line in data.decode().splitlines()]


@pytest.mark.parametrize("path", ["/chat-stream", "/prompt-enhancer"])
def test_augment_tenant_streams_lines_and_ends_the_turn(server: ModelServer, path: str) -> None:
    answer = lines(server, path, {"message": "say hi", "model": None})
    assert answer[-1] == {"text": "", "stop_reason": 1}
    assert [line["text"] for line in answer[:-1]] == pieces(ANSWER)


@pytest.mark.parametrize("path,key", [("/api/chat", "message"), ("/api/generate", "response")])
def test_ollama_streams_lines_unless_told_not_to(server: ModelServer, path: str, key: str) -> None:
    def text(line: Any) -> str:
        return str(line[key]["content"] if key == "message" else line[key])

    answer = lines(server, path, {"model": "llama3", "prompt": "say hi"})
    assert [line["done"] for line in answer] == [False, False, False, True]
    assert "".join(text(line) for line in answer) == ANSWER
    whole = post_json(server, path, {"model": "llama3", "stream": False})
    assert (text(whole), whole["done"]) == (ANSWER, True)


# --- model lists, reachability, the rest -------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/models", "/v1beta/models", "/api/tags"])
def test_model_lists_carry_each_shape(server: ModelServer, path: str) -> None:
    status, _, data = call(server, path)
    listing = json.loads(data)
    assert status == 200
    assert [entry["id"] for entry in listing["data"]] == list(MODELS)
    assert listing["has_more"] is False
    assert {entry["type"] for entry in listing["data"]} == {"model"}
    assert [entry["name"] for entry in listing["models"]] == [f"models/{m}" for m in MODELS]


def test_one_model(server: ModelServer) -> None:
    status, _, data = call(server, "/v1/models/gpt-4o")
    entry = json.loads(data)
    assert status == 200
    assert (entry["id"], entry["display_name"], entry["name"]) == (
        "gpt-4o",
        "gpt-4o",
        "models/gpt-4o",
    )


@pytest.mark.parametrize("path", ["/", "/api/hello"])
def test_reachability(server: ModelServer, path: str) -> None:
    assert call(server, path) == (200, "application/json", b'{"ok": true}')


def test_head_answers_anything(server: ModelServer) -> None:
    status, _, data = call(server, "/api/hello", method="HEAD")
    assert (status, data) == (200, b"")
    status, _, data = call(server, "/no/such/thing", method="HEAD")
    assert (status, data) == (200, b"")
    assert [(r.method, r.path) for r in server.requests] == [
        ("HEAD", "/api/hello"),
        ("HEAD", "/no/such/thing"),
    ]


def test_anything_else_is_recorded_and_not_found(server: ModelServer) -> None:
    status, kind, data = call(server, "/v1/embeddings", {"input": "hi"})
    assert (status, kind) == (404, "application/json")
    assert json.loads(data) == {
        "type": "error",
        "error": {
            "message": "tests.model_server: no route for POST /v1/embeddings",
            "type": "not_found_error",
            "code": 404,
            "status": "not_found_error",
        },
    }
    status, _, data = call(server, "/get-models", method="GET")
    assert status == 404
    assert (
        json.loads(data)["error"]["message"] == "tests.model_server: no route for GET /get-models"
    )
    assert [(r.method, r.path, r.body) for r in server.requests] == [
        ("POST", "/v1/embeddings", {"input": "hi"}),
        ("GET", "/get-models", None),
    ]


def test_a_body_that_is_not_json_is_refused(server: ModelServer) -> None:
    request = urllib.request.Request(server.url + "/v1/messages", data=b"\xff{", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    with caught.value as error:
        assert error.code == 400
        assert json.loads(error.read())["error"]["message"] == (
            "tests.model_server: the body of POST /v1/messages is not a JSON object"
        )
    assert [(r.path, r.body) for r in server.requests] == [("/v1/messages", None)]


def test_records_each_request_with_its_body(server: ModelServer) -> None:
    post_json(server, "/v1/messages", MESSAGES)
    post_json(server, "/v1/chat/completions", CHAT)
    recorded = server.requests
    assert [(r.method, r.path, r.body) for r in recorded] == [
        ("POST", "/v1/messages", MESSAGES),
        ("POST", "/v1/chat/completions", CHAT),
    ]
    assert recorded[0].headers["Content-Type"] == "application/json"


def test_a_body_over_the_bound_is_refused_unread(server: ModelServer) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.putrequest("POST", "/v1/messages")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(MAX_BODY + 1))
        connection.endheaders()
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["error"]["message"] == (
            "tests.model_server: the body is over 67108864 bytes"
        )
    finally:
        connection.close()
    assert [(r.method, r.path, r.body) for r in server.requests] == [("POST", "/v1/messages", None)]


def test_a_chunked_request_body_is_read(server: ModelServer) -> None:
    body = json.dumps(CHAT).encode()
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request(
            "POST", "/v1/chat/completions", body=iter([body[:10], body[10:]]), encode_chunked=True
        )
        response = connection.getresponse()
        assert response.status == 200
        assert json.loads(response.read())["choices"][0]["message"]["content"] == ANSWER
    finally:
        connection.close()
    assert server.requests[0].body == CHAT


# --- JSON output -------------------------------------------------------------------------------

ROUTER_SCHEMA = {
    "type": "object",
    "properties": {
        "complexity_reasoning": {"type": "string"},
        "complexity_score": {"type": "integer", "minimum": 1, "maximum": 100},
    },
    "required": ["complexity_reasoning", "complexity_score"],
}
ROUTER_ANSWER = {"complexity_reasoning": ANSWER, "complexity_score": 1}


def test_fit_builds_a_value_for_each_kind() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {
            "text": {"type": "STRING"},
            "mood": {"type": "string", "enum": ["calm", "busy"]},
            "count": {"type": "integer"},
            "low": {"type": "number", "minimum": 0.5},
            "above": {"type": "integer", "exclusiveMinimum": 3},
            "capped": {"type": "integer", "maximum": 0},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "none": {"type": "array", "items": {"type": "string"}},
            "maybe": {"type": ["null", "integer"]},
            "either": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
            "fixed": {"const": "k"},
            "node": {"$ref": "#/$defs/node"},
        },
        "$defs": {"node": {"properties": {"name": {"type": "string"}}}},
    }
    assert fit(schema, "A") == {
        "text": "A",
        "mood": "calm",
        "count": 1,
        "low": 0.5,
        "above": 4,
        "capped": 0,
        "flag": True,
        "tags": ["A", "A"],
        "none": [],
        "maybe": 1,
        "either": True,
        "fixed": "k",
        "node": {"name": "A"},
    }


def test_fit_stops_at_a_reference_cycle() -> None:
    schema = {"$ref": "#/$defs/loop", "$defs": {"loop": {"$ref": "#/$defs/loop"}}}
    assert fit(schema, "A") is None


def test_gemini_router_gets_json_fitting_its_schema(server: ModelServer) -> None:
    for key, schema in (
        ("responseJsonSchema", ROUTER_SCHEMA),
        ("responseSchema", {**ROUTER_SCHEMA, "type": "OBJECT"}),
    ):
        config = {"responseMimeType": "application/json", key: schema}
        body = {**GEMINI, "generationConfig": config}
        answer = post_json(server, "/v1beta/models/gemini-3.5-flash-lite:generateContent", body)
        text = answer["candidates"][0]["content"]["parts"][0]["text"]
        assert json.loads(text) == ROUTER_ANSWER
        events = sse(server, f"{GEMINI_PATH}:streamGenerateContent?alt=sse", body)
        assert json.loads(joined_gemini([data for _, data in events])) == ROUTER_ANSWER


def test_chat_gets_json_fitting_its_schema(server: ModelServer) -> None:
    spec = {"name": "router", "schema": ROUTER_SCHEMA, "strict": True}
    body = {**CHAT, "response_format": {"type": "json_schema", "json_schema": spec}}
    completion = post_json(server, "/v1/chat/completions", body)
    assert json.loads(completion["choices"][0]["message"]["content"]) == ROUTER_ANSWER
    plain = {**CHAT, "response_format": {"type": "json_object"}}
    completion = post_json(server, "/v1/chat/completions", plain)
    assert json.loads(completion["choices"][0]["message"]["content"]) == {"answer": ANSWER}
    text = {**CHAT, "response_format": {"type": "text"}}
    assert (
        post_json(server, "/v1/chat/completions", text)["choices"][0]["message"]["content"]
        == ANSWER
    )


def test_responses_get_json_fitting_its_schema(server: ModelServer) -> None:
    spec = {"type": "json_schema", "name": "router", "schema": ROUTER_SCHEMA}
    events = sse(server, "/v1/responses", {**RESPONSES, "stream": True, "text": {"format": spec}})
    deltas = [data["delta"] for name, data in events if name == "response.output_text.delta"]
    assert json.loads("".join(deltas)) == ROUTER_ANSWER


@pytest.mark.parametrize("key", ["output_format", "output_config"])
def test_anthropic_gets_json_fitting_its_schema(server: ModelServer, key: str) -> None:
    spec = {"type": "json_schema", "schema": ROUTER_SCHEMA}
    body = {**MESSAGES, key: spec if key == "output_format" else {"format": spec}}
    message = post_json(server, "/v1/messages", body)
    assert json.loads(message["content"][0]["text"]) == ROUTER_ANSWER


# --- the command line --------------------------------------------------------------------------


def test_command_line_prints_its_url_and_exits_when_stdin_closes() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.model_server", "--answer", ANSWER],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        url = process.stdout.readline().decode().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        request = urllib.request.Request(
            url + "/v1/chat/completions", data=json.dumps(CHAT).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read())["choices"][0]["message"]["content"] == ANSWER
        process.stdin.close()
        assert process.wait(timeout=10) == 0
        assert process.stdout.read() == b""
        assert process.stderr is not None
        assert '"POST /v1/chat/completions HTTP/1.1" 200 -' in process.stderr.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_command_line_calls_the_tool_it_is_told_to() -> None:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "tests.model_server", "--answer", ANSWER),
            *("--call-tool", TOOL, "--tool-input", json.dumps(TOOL_INPUT)),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        url = process.stdout.readline().decode().strip()
        request = urllib.request.Request(
            url + "/v1/messages", data=json.dumps(OFFERING).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            message = json.loads(response.read())
        assert message["content"][0]["input"] == TOOL_INPUT
        assert message["stop_reason"] == "tool_use"
        process.stdin.close()
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# --- every model request refused -----------------------------------------------------------------

REFUSED = "tests.model_server: invalid API key (this server answers every request with status 401)"


@pytest.fixture
def refusing() -> Iterator[ModelServer]:
    with serve(answer=ANSWER, error=401) as running:
        yield running


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        (
            "/v1/messages",
            MESSAGES,
            {"type": "error", "error": {"type": "authentication_error", "message": REFUSED}},
        ),
        (
            "/v1/messages/count_tokens",
            MESSAGES,
            {"type": "error", "error": {"type": "authentication_error", "message": REFUSED}},
        ),
        *(
            (
                path,
                body,
                {
                    "error": {
                        "message": REFUSED,
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_api_key",
                    }
                },
            )
            for path, body in (("/v1/chat/completions", CHAT), ("/v1/responses", RESPONSES))
        ),
        *(
            (
                f"{GEMINI_PATH}:{action}",
                GEMINI,
                {"error": {"code": 401, "message": REFUSED, "status": "UNAUTHENTICATED"}},
            )
            for action in ("generateContent", "streamGenerateContent?alt=sse", "countTokens")
        ),
        ("/chat-stream", {"message": "say hi"}, {"error": REFUSED}),
        ("/api/chat", {"model": "m", "messages": []}, {"error": REFUSED}),
    ],
)
def test_a_refusing_server_answers_each_api_in_its_own_error_shape(
    refusing: ModelServer, path: str, body: Any, expected: Any
) -> None:
    status, kind, data = call(refusing, path, {**body, "stream": True})
    assert (status, kind, json.loads(data)) == (401, "application/json", expected)


@pytest.mark.parametrize(
    ("path", "headers", "api"),
    [
        ("/v1/models", {}, "chat"),
        ("/v1/models", {"anthropic-version": "2023-06-01"}, "anthropic"),
        ("/v1beta/models", {}, "gemini"),
        ("/v1/models", {"x-goog-api-key": "k"}, "gemini"),
        ("/v1/models/gpt-4o", {}, "chat"),
        ("/api/tags", {}, "ollama"),
    ],
)
def test_a_refusing_server_refuses_model_lists_in_the_askers_shape(
    refusing: ModelServer, path: str, headers: dict[str, str], api: str
) -> None:
    """Whose list it is shows in the path or the client's headers (the shapes: above)."""
    request = urllib.request.Request(refusing.url + path, headers=headers)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    with caught.value as error:
        assert (error.code, json.loads(error.read())) == (401, api_error(api, 401))


def test_a_refusing_server_still_answers_reachability_checks(refusing: ModelServer) -> None:
    assert call(refusing, "/api/hello") == (200, "application/json", b'{"ok": true}')
    status, _, _ = call(refusing, "/v1/messages", method="HEAD")
    assert status == 200


def test_other_error_statuses_have_their_own_kind() -> None:
    with serve(error=429) as server:
        status, _, data = call(server, "/v1/messages", MESSAGES)
        assert (status, json.loads(data)["error"]["type"]) == (429, "rate_limit_error")
        status, _, data = call(server, "/v1/chat/completions", CHAT)
        assert (status, json.loads(data)["error"]["code"]) == (429, "rate_limit_exceeded")
    with serve(error=503) as server:
        status, _, data = call(server, GEMINI_PATH + ":generateContent", GEMINI)
        assert (status, json.loads(data)["error"]["status"]) == (503, "INTERNAL")
    with serve(error=418) as server:
        status, _, data = call(server, "/v1/messages", MESSAGES)
        assert (status, json.loads(data)["error"]["type"]) == (418, "invalid_request_error")


def test_an_empty_answer_is_streamed_as_one_empty_piece() -> None:
    with serve(answer="") as server:
        assert post_json(server, "/v1/chat/completions", CHAT)["choices"][0]["message"] == {
            "role": "assistant",
            "content": "",
            "refusal": None,
        }
        deltas = [
            data["choices"][0]["delta"].get("content")
            for _, data in sse(server, "/v1/chat/completions", {**CHAT, "stream": True})
            if data != "[DONE]" and data["choices"]
        ]
        assert deltas == ["", "", None]


@pytest.mark.parametrize("given", ["200", "600", "x", "-401"])
def test_the_error_option_takes_an_http_error_status(
    given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--answer", ANSWER, "--error", given])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.endswith(
        f"argument --error: not an HTTP error status (400 to 599): {given}\n"
    )


# --- a real client library ---------------------------------------------------------------------


@pytest.fixture
def client(server: ModelServer) -> Any:
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=server.url + "/v1", api_key="sk-fake-key", max_retries=0)


def test_openai_client_chat_streamed_and_not(client: Any) -> None:
    messages = [{"role": "user", "content": "say hi"}]
    completion = client.chat.completions.create(model="gpt-4o", messages=messages)
    assert completion.choices[0].message.content == ANSWER
    stream = client.chat.completions.create(
        model="gpt-4o", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
    assert chunks[-1].usage.completion_tokens > 0


def test_openai_client_responses_streamed_and_not(client: Any) -> None:
    assert client.responses.create(model="gpt-5.5", input="say hi").output_text == ANSWER
    with client.responses.stream(model="gpt-5.5", input="say hi") as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == ANSWER
    assert final.output_text == ANSWER


def test_openai_client_parses_structured_output(client: Any) -> None:
    from pydantic import BaseModel

    class Route(BaseModel):
        complexity_reasoning: str
        complexity_score: int
        easy: bool
        steps: list[str]

    expected = Route(complexity_reasoning=ANSWER, complexity_score=1, easy=True, steps=[])
    messages = [{"role": "user", "content": "route this"}]
    parsed = client.chat.completions.parse(model="gpt-4o", messages=messages, response_format=Route)
    assert parsed.choices[0].message.parsed == expected
    response = client.responses.parse(model="gpt-5.5", input="route this", text_format=Route)
    assert response.output_parsed == expected
