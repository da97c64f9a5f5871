"""`start mcp`'s stdio: the SDK writes stdout, and stdin is read here, split into lines in
linear time, each line parsed as a JSON-RPC message or answered with the error JSON-RPC asks for.

A daemon thread reads stdin, so that a signal stops a server whose client keeps stdin open.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any, Final, cast

import anyio
import anyio.from_thread
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

# The most bytes one message may take on stdin, its newline not counted.
MESSAGE_LIMIT: Final = 16 << 20

logger = logging.getLogger("start.mcp")

Received = MemoryObjectReceiveStream[SessionMessage | Exception]


@asynccontextmanager
async def streams() -> AsyncIterator[tuple[Received, Any]]:
    """The server's two streams: the messages read from stdin, and the SDK's stream of those it
    writes to stdout.

    `stdio_server` only writes: `_stdin` reads stdin, and answers what it cannot pass on.
    """
    async with (
        stdio_server(stdin=cast("anyio.AsyncFile[str]", _NoLines())) as (unread, write),
        _stdin(write.send) as read,
    ):
        unread.close()
        yield read, write


Reply = Callable[[SessionMessage], Awaitable[None]]


class _NoLines:
    """An empty stdin for `stdio_server`, so that it claims only stdout."""

    def __aiter__(self) -> _NoLines:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


@asynccontextmanager
async def _stdin(
    reply: Reply,
) -> AsyncIterator[MemoryObjectReceiveStream[SessionMessage | Exception]]:
    """The messages on stdin, read and parsed by a daemon thread, which sends its own error
    replies (`_parse`) with `reply`.

    The SDK reads stdin in a worker thread that a cancelled server waits for: a signal could not
    stop a server whose client keeps stdin open (on a terminal, not before Enter). A daemon thread
    is left behind instead. File descriptor 0 points at /dev/null meanwhile, as the SDK does.
    """
    fd = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception]()
    try:
        async with anyio.from_thread.BlockingPortal() as portal:
            pump = threading.Thread(
                target=_pump, args=(fd, send, reply, portal), name="start mcp stdin", daemon=True
            )
            pump.start()
            try:
                yield receive
            finally:
                await portal.stop(cancel_remaining=True)
                send.close()
    finally:
        os.dup2(fd, 0)  # the thread may still read `fd`: it is left open until the process ends


def _pump(
    fd: int,
    send: MemoryObjectSendStream[SessionMessage | Exception],
    reply: Reply,
    portal: anyio.from_thread.BlockingPortal,
) -> None:
    lines = Lines()
    try:
        while chunk := os.read(fd, 65536):
            for line, size in lines.feed(chunk):
                _deliver(_parse(line, size), send, reply, portal)
        rest = lines.rest()
        if rest is not None:
            _deliver(_parse(*rest), send, reply, portal)
        portal.call(send.close)
    except Exception:  # the server stopped (portal gone, stream closed): nothing to do
        return


def _deliver(
    parsed: SessionMessage | types.JSONRPCError | None,
    send: MemoryObjectSendStream[SessionMessage | Exception],
    reply: Reply,
    portal: anyio.from_thread.BlockingPortal,
) -> None:
    if isinstance(parsed, SessionMessage):
        portal.call(send.send, parsed)
    elif parsed is not None:
        logger.debug("refused a message: %s", parsed.error.message)
        portal.call(reply, SessionMessage(parsed))


class Lines:
    """Bytes split into lines, in time linear in their length.

    A line over MESSAGE_LIMIT keeps only its first HEAD bytes (where its id is), and its size.
    """

    HEAD: Final = 4096

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def feed(self, chunk: bytes) -> Iterator[tuple[bytes, int]]:
        """Each line that `chunk` completes, without its newline, and its size."""
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._keep(chunk[start:end])
            yield self._take()
            start = end + 1
        self._keep(chunk[start:])

    def rest(self) -> tuple[bytes, int] | None:
        """The last line, when the input does not end with a newline."""
        return self._take() if self.size else None

    def _keep(self, piece: bytes) -> None:
        if self.size <= MESSAGE_LIMIT:
            self.parts.append(piece)
            if self.size + len(piece) > MESSAGE_LIMIT:
                self.parts = [b"".join(self.parts)[: self.HEAD]]
        self.size += len(piece)

    def _take(self) -> tuple[bytes, int]:
        line, size = b"".join(self.parts), self.size
        self.parts, self.size = [], 0
        return line, size


def _parse(line: bytes, size: int) -> SessionMessage | types.JSONRPCError | None:
    """A line of stdin as a message, or the error reply to it: JSON-RPC wants every request
    answered, with the id null when its id cannot be read. None: nothing to answer."""
    if size > MESSAGE_LIMIT:
        return _refusal(
            _head_id(line),
            types.INVALID_REQUEST,
            f"Invalid Request: the message has {size:,} bytes, over the limit of "
            f"{MESSAGE_LIMIT:,} bytes",
        )
    text = line.decode("utf-8", "replace")
    if not text.strip():
        return None
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        return _refused(text, invalid=True)
    # The SDK reads a request whose id is null or not a string or integer as a notification,
    # which gets no answer.
    if isinstance(message, types.JSONRPCNotification) and '"id"' in text:
        refused = _refused(text, invalid=False)
        if refused is not None:
            return refused
    return SessionMessage(message)


def _refused(text: str, *, invalid: bool) -> types.JSONRPCError | None:
    """Why `text` is not a valid message, as the reply. None for a response, which is never
    answered, and for a message with no fault named here unless the SDK found it `invalid`."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return _refusal(None, types.PARSE_ERROR, "Parse error: the message is not valid JSON")
    if not isinstance(body, dict):
        return _refusal(None, types.INVALID_REQUEST, "Invalid Request: not a JSON object")
    id_ = body.get("id")
    if "id" in body and not _is_id(id_):
        problem = '"id" must be a string or an integer'
        return _refusal(None, types.INVALID_REQUEST, f"Invalid Request: {problem}")
    method = body.get("method")
    if method is None:
        if "result" in body or "error" in body:
            logger.debug("dropped a response that is not valid JSON-RPC")
            return None
        return _refusal(id_, types.INVALID_REQUEST, 'Invalid Request: no "method"')
    if body.get("jsonrpc") != "2.0":
        return _refusal(id_, types.INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if not isinstance(method, str):
        return _refusal(id_, types.INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    if not isinstance(body.get("params", {}), dict):
        return _refusal(id_, types.INVALID_PARAMS, 'Invalid params: "params" must be an object')
    if invalid:  # JSON to Python, not to the SDK: a lone surrogate in a string
        return _refusal(id_, types.PARSE_ERROR, "Parse error: the message is not valid JSON")
    return None


def _refusal(id_: types.RequestId | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=id_, error=types.ErrorData(code=code, message=message)
    )


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


_SPACE: Final = re.compile(r"[ \t\n\r]*")


def _head_id(head: bytes) -> types.RequestId | None:
    """The top-level "id" of a JSON object cut short, when it comes before the cut."""
    text = head.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return None
    at += 1
    try:
        while True:
            key, at = decoder.raw_decode(text, _skip(text, at))
            at = _skip(text, at)
            if not text.startswith(":", at):
                return None
            value, at = decoder.raw_decode(text, _skip(text, at + 1))
            if key == "id":
                return value if _is_id(value) else None
            at = _skip(text, at)
            if not text.startswith(",", at):
                return None
            at += 1
    except (ValueError, RecursionError):
        return None


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    assert match is not None
    return match.end()
