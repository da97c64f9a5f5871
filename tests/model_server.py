"""An offline model server: answers every API the catalog agent CLIs speak with one fixed text.

`with serve(answer="ANSWER-x") as server:` gives `server.url` and `server.requests`. From a shell,
`python -m tests.model_server --answer TEXT [--port N]` prints its URL on the first line of stdout
and serves until killed or until its stdin closes, logging each request to stderr. It binds only
to 127.0.0.1 and records every request.

It calls no tool, unless told to: with `serve(call_tool=NAME, tool_input={...})` (from a shell,
`--call-tool NAME --tool-input JSON`), the first Anthropic Messages request that offers a tool
NAME is answered with a call of that tool (id `TOOL_USE_ID`), and every later request as usual;
`server.tool_results()` gives what came back for that call.

It answers no model request at all when told to fail: with `serve(error=401)` (from a shell,
`--error 401`), every model request (and model list) gets that HTTP status with a body in its
API's own error shape (tests.model_answers.api_error); 401 is a refused key. Reachability checks
are still answered. The answer text may be anything, JSON text or empty included.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.model_answers import (
    NAME,
    TOOL_USE_ID,
    anthropic,
    anthropic_tool_use,
    api_error,
    augment,
    chat,
    gemini,
    model_entry,
    model_list,
    ollama,
    reply_text,
    responses,
    tokens,
)

MAX_BODY = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Request:
    """One request as received: the body is its parsed JSON, or None."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ModelServer:
    url: str
    answer: str
    call_tool: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)
    error: int | None = None  # the HTTP status of every model request, if not 200
    _requests: list[Request] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _tool_called: bool = False

    @property
    def requests(self) -> list[Request]:
        """A snapshot of every request so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def tool_called(self) -> bool:
        """Whether the server has answered with its tool call."""
        with self._lock:
            return self._tool_called

    def take_tool_call(self, body: dict[str, Any]) -> bool:
        """Whether to answer BODY with the tool call: the first request that offers the tool."""
        tools = body.get("tools")
        offered = isinstance(tools, list) and any(
            isinstance(tool, dict) and tool.get("name") == self.call_tool for tool in tools
        )
        with self._lock:
            if self.call_tool is None or self._tool_called or not offered:
                return False
            self._tool_called = True
            return True

    def tool_results(self) -> list[Any]:
        """The content of each `tool_result` block answering the server's tool call, in order."""
        found: list[Any] = []
        for request in self.requests:
            body = request.body if isinstance(request.body, dict) else {}
            turns = body.get("messages")
            for turn in turns if isinstance(turns, list) else []:
                content = turn.get("content") if isinstance(turn, dict) else None
                for block in content if isinstance(content, list) else []:
                    if (
                        isinstance(block, dict)
                        and block.get("type") == "tool_result"
                        and block.get("tool_use_id") == TOOL_USE_ID
                    ):
                        found.append(block.get("content"))
        return found


# --- HTTP --------------------------------------------------------------------------------------


class BodyError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        port: int,
        answer: str,
        verbose: bool,
        call_tool: str | None = None,
        tool_input: dict[str, Any] | None = None,
        error: int | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        host, bound = self.server_address[:2]
        self.state = ModelServer(
            url=f"http://{host!s}:{bound}",
            answer=answer,
            call_tool=call_tool,
            tool_input=dict(tool_input or {}),
            error=error,
        )
        self.verbose = verbose


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = NAME
    # An idle keep-alive connection ends after this many seconds.
    timeout = 60
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def do_HEAD(self) -> None:
        self.handle_any("HEAD")

    def do_GET(self) -> None:
        self.handle_any("GET")

    def do_POST(self) -> None:
        self.handle_any("POST")

    def do_PUT(self) -> None:
        self.handle_any("PUT")

    def do_DELETE(self) -> None:
        self.handle_any("DELETE")

    def do_PATCH(self) -> None:
        self.handle_any("PATCH")

    def handle_any(self, method: str) -> None:
        headers = dict(self.headers)
        try:
            raw = self.read_body()
        except BodyError as error:
            self.server.state.record(Request(method, self.path, headers, None))
            self.close_connection = True
            self.send_error_json(error.status, str(error))
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.server.state.record(Request(method, self.path, headers, body))
        path = urlsplit(self.path).path.rstrip("/") or "/"
        if method == "HEAD":
            self.send_json(200, {"ok": True}, head=True)
        elif method == "GET":
            self.route_get(path)
        elif method == "POST" and (isinstance(body, dict) or not raw):
            self.route_post(path, body if isinstance(body, dict) else {})
        elif method == "POST":
            self.send_error_json(400, f"{NAME}: the body of POST {path} is not a JSON object")
        else:
            self.not_found(method, path)

    def read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            total = 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise BodyError(400, f"{NAME}: a malformed chunked body") from None
                total += size
                if total > MAX_BODY:
                    raise BodyError(413, f"{NAME}: the body is over {MAX_BODY} bytes")
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        if not length.strip().isdigit():
            raise BodyError(400, f"{NAME}: Content-Length is not a number")
        if int(length) > MAX_BODY:
            raise BodyError(413, f"{NAME}: the body is over {MAX_BODY} bytes")
        return self.rfile.read(int(length))

    def route_get(self, path: str) -> None:
        error = self.server.state.error
        if path in ("/", "/api/hello") or path.endswith("/api/hello"):
            self.send_json(200, {"ok": True})
        elif error is not None and (path.endswith(("/models", "/api/tags")) or "/models/" in path):
            self.send_api_error(self.list_api(path), error)
        elif path.endswith(("/models", "/api/tags")):
            self.send_json(200, model_list())
        elif "/models/" in path:
            self.send_json(200, model_entry(path.rsplit("/models/", 1)[1]))
        else:
            self.not_found("GET", path)

    def list_api(self, path: str) -> str:
        """Whose model list a GET asks for: Anthropic's clients send their version header."""
        headers = {name.lower() for name in self.headers}
        if path.endswith("/api/tags"):
            return "ollama"
        if "anthropic-version" in headers:
            return "anthropic"
        return "gemini" if "x-goog-api-key" in headers or "/v1beta/" in path else "chat"

    def route_post(self, path: str, body: dict[str, Any]) -> None:
        answer = self.server.state.answer
        used = tokens(json.dumps(body))
        stream = body.get("stream") is True
        api = post_api(path)
        error = self.server.state.error
        if error is not None and api is not None:
            self.send_api_error(api, error)
        elif path.endswith("/messages/count_tokens"):
            self.send_json(200, {"input_tokens": used})
        elif path.endswith("/messages") and self.server.state.take_tool_call(body):
            name, arguments = self.server.state.call_tool, self.server.state.tool_input
            self.send_answer(anthropic_tool_use(str(name), arguments, body, stream, used), stream)
        elif path.endswith("/messages"):
            text = reply_text(answer, "anthropic", body)
            self.send_answer(anthropic(text, body, stream, used), stream)
        elif path.endswith("/completions"):
            self.send_answer(chat(reply_text(answer, "chat", body), body, stream, used), stream)
        elif path.endswith("/responses"):
            text = reply_text(answer, "responses", body)
            self.send_answer(responses(text, body, stream, used), stream)
        elif "/models/" in path and ":" in path.rsplit("/", 1)[1]:
            model, _, action = path.rsplit("/", 1)[1].partition(":")
            text = reply_text(answer, "gemini", body)
            if action == "countTokens":
                self.send_json(200, {"totalTokens": used})
            elif action == "generateContent":
                self.send_json(200, gemini(text, model, False, used))
            elif action == "streamGenerateContent":
                chunks = gemini(text, model, True, used)
                if "alt=sse" in urlsplit(self.path).query:
                    self.send_answer([(None, c) for c in chunks], True)
                else:
                    self.send_json(200, chunks)
            else:
                self.not_found("POST", path)
        elif path.endswith(("/chat-stream", "/prompt-enhancer")):
            self.send_lines(augment(answer))
        elif path.endswith(("/api/chat", "/api/generate")):
            lines = ollama(answer, body, path)
            if len(lines) == 1:
                self.send_json(200, lines[0])
            else:
                self.send_lines(lines)
        else:
            self.not_found("POST", path)

    def send_api_error(self, api: str, status: int) -> None:
        self.send_json(status, api_error(api, status))

    def not_found(self, method: str, path: str) -> None:
        self.send_error_json(404, f"{NAME}: no route for {method} {path}")

    def send_error_json(self, status: int, message: str) -> None:
        kind = "not_found_error" if status == 404 else "invalid_request_error"
        error = {"message": message, "type": kind, "code": status, "status": kind}
        self.send_json(status, {"type": "error", "error": error})

    def send_json(self, status: int, value: Any, head: bool = False) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def send_answer(self, answer: Any, stream: bool) -> None:
        """A JSON body, or, when streamed, server-sent events (a name, or None for data only)."""
        if not stream:
            self.send_json(200, answer)
            return
        self.start_chunks("text/event-stream")
        for name, data in answer:
            text = data if isinstance(data, str) else json.dumps(data)
            self.send_chunk((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
        self.send_chunk("")

    def send_lines(self, lines: list[dict[str, Any]]) -> None:
        self.start_chunks("application/x-ndjson")
        for line in lines:
            self.send_chunk(json.dumps(line) + "\n")
        self.send_chunk("")

    def start_chunks(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, text: str) -> None:
        """One chunk of a chunked body; the empty text ends the body."""
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def post_api(path: str) -> str | None:
    """The API a POST to PATH speaks (tests.model_answers' names), or None for no model API."""
    if path.endswith(("/messages", "/messages/count_tokens")):
        return "anthropic"
    if path.endswith("/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    if "/models/" in path and ":" in path.rsplit("/", 1)[1]:
        return "gemini"
    if path.endswith(("/chat-stream", "/prompt-enhancer")):
        return "augment"
    if path.endswith(("/api/chat", "/api/generate")):
        return "ollama"
    return None


@contextmanager
def serve(
    answer: str = "ANSWER",
    port: int = 0,
    verbose: bool = False,
    call_tool: str | None = None,
    tool_input: dict[str, Any] | None = None,
    error: int | None = None,
) -> Iterator[ModelServer]:
    """A server on 127.0.0.1 (PORT 0: one the system chooses) for the duration of the block.

    CALL_TOOL: the name of a tool the model calls once, with TOOL_INPUT; ERROR: the HTTP status
    every model request gets instead of an answer (see the module's text).
    """
    server = Server(port, answer, verbose, call_tool, tool_input, error)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name=NAME, daemon=True)
    thread.start()
    try:
        yield server.state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not JSON: {error}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a JSON object: {text}")
    return value


def error_status(text: str) -> int:
    if not text.isdigit() or not 400 <= int(text) <= 599:
        raise argparse.ArgumentTypeError(f"not an HTTP error status (400 to 599): {text}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {NAME}", description=__doc__)
    parser.add_argument("--answer", required=True, help="the text every model answers")
    parser.add_argument("--port", type=int, default=0, help="the port (default: any free one)")
    parser.add_argument(
        "--call-tool",
        metavar="NAME",
        help="call the tool NAME once, in answer to the first Messages request offering it",
    )
    parser.add_argument(
        "--tool-input",
        metavar="JSON",
        type=json_object,
        default={},
        help="the arguments of that call, a JSON object (default: {})",
    )
    parser.add_argument(
        "--error",
        metavar="STATUS",
        type=error_status,
        help="answer every model request with this HTTP error status (401: a refused key)",
    )
    args = parser.parse_args(argv)
    with serve(args.answer, args.port, True, args.call_tool, args.tool_input, args.error) as server:
        print(server.url, flush=True)
        try:
            while sys.stdin.buffer.read(65536):
                pass
        except KeyboardInterrupt:
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
