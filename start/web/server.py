"""`start board serve`'s HTTP server: the standard library's, on loopback, one thread a request.

Why the standard library: the page is a few JSON reads, six changes and one stream of events,
for one person on this machine, so http.server's request parsing (bounded lines and headers)
and a fixed table of routes are all it needs; nothing of it serves files from a directory.
An ASGI framework and server would add their import time and a dependency to keep up for no
request this server has. Every request passes start.web.guard first.

Live updates are Server-Sent Events: one thread (`Watcher`) looks at the board's
PRAGMA data_version every start.board.store.POLL seconds, as `start board --watch` does, and at
the history's files; each change wakes every open stream, and the page reads again what it
shows. So a change by any process (the command line, an agent over MCP, `start board run`)
reaches the page within a poll and a read.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

from start.base.errors import ExitCode, StartError
from start.web import guard

if TYPE_CHECKING:
    from start.board import Holder
    from start.board.store import Board

# The files of the page: fixed names, read from the package, never a path from a request.
_STATIC: Final[Mapping[str, str]] = {
    "/": "index.html",
    "/app.js": "app.js",
    "/app.css": "app.css",
}
_TYPES: Final = {"html": "text/html", "js": "text/javascript", "css": "text/css"}
# The largest change a page sends: a description at its limit (start.base.inputs.TEXT_LIMIT
# characters), each as JSON writes it at its longest (\uXXXX, 6 bytes), and the rest.
BODY_LIMIT: Final = 6 * (1 << 20) + (64 << 10)
STREAMS: Final = 32  # the most event streams open at once (each holds a thread)
KEEP_ALIVE: Final = 15.0  # seconds between comments on a quiet stream
_STATUS: Final[Mapping[int, int]] = {
    ExitCode.USAGE: HTTPStatus.BAD_REQUEST,
    ExitCode.UNKNOWN_NAME: HTTPStatus.NOT_FOUND,
    ExitCode.REFUSED: HTTPStatus.CONFLICT,
}


class NoSuchPageError(StartError):
    """An address the page does not have."""

    exit_code = ExitCode.UNKNOWN_NAME


class Watcher(threading.Thread):
    """Counts the changes of the board and the history, and wakes whoever waits for one."""

    def __init__(self, workdir: str) -> None:
        super().__init__(name="start-board-watcher", daemon=True)
        self.workdir = workdir
        self.changes = 0
        self.woken = threading.Condition()
        self.stopping = threading.Event()

    def _history(self) -> tuple[int, ...]:
        """When the history's database and its pending runs last changed."""
        from start.runs import history

        stamps = []
        for name in (history.database(), history.database() + "-wal", history.directory()):
            try:
                stamps.append(os.stat(name).st_mtime_ns)
            except OSError:
                stamps.append(0)
        try:
            stamps.append(os.stat(os.path.join(history.directory(), "pending")).st_mtime_ns)
        except OSError:
            stamps.append(0)
        return tuple(stamps)

    def run(self) -> None:
        from start.board import file as boardfile
        from start.board import store as boarddb

        while not self.stopping.is_set():
            try:
                with boardfile.opened(self.workdir, sweep=False) as opened:
                    self._watch(opened)
            except StartError:
                # The board or the history busy or unreadable a moment (another process
                # migrating it, say): the watch goes on after a pause; the page reads anew.
                self.stopping.wait(boarddb.SWEEP_EVERY)
                self._changed()

    def _watch(self, opened: Board) -> None:
        from start.board import store as boarddb

        seen, runs, swept = opened.version(), self._history(), time.monotonic()
        while not self.stopping.wait(boarddb.POLL):
            changed = False
            if time.monotonic() - swept >= boarddb.SWEEP_EVERY:
                # A holder that ended lets its item go, as every reader of the board does.
                changed = bool(opened.sweep())
                swept = time.monotonic()
            version, stamps = opened.version(), self._history()
            if changed or version != seen or stamps != runs:
                seen, runs = version, stamps
                self._changed()

    def _changed(self) -> None:
        with self.woken:
            self.changes += 1
            self.woken.notify_all()

    def wait(self, seen: int, most: float) -> int:
        """The count of changes once it is no longer `seen`, or after `most` seconds."""
        with self.woken:
            self.woken.wait_for(lambda: self.changes != seen or self.stopping.is_set(), most)
            return self.changes

    def stop(self) -> None:
        self.stopping.set()
        with self.woken:
            self.woken.notify_all()


class Server(ThreadingHTTPServer):
    """The server, with what each request needs: the gate, the project, the person it acts as,
    and the watcher."""

    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, port: int, workdir: str, person: Holder) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.gate = guard.Gate(guard.new_token(), self.server_address[1])
        self.workdir = workdir
        self.root = workdir  # the project's root, once the board is open
        self.person = person
        self.watcher = Watcher(workdir)
        self.streams = threading.BoundedSemaphore(STREAMS)


class Handler(BaseHTTPRequestHandler):
    """One request: guarded, routed to a view or an action, answered as JSON or a file."""

    server: Server
    protocol_version = "HTTP/1.1"
    # Seconds a connection may keep the server waiting for a request or a read: a local
    # process that opens connections and sends nothing ties up no thread for long.
    timeout = 60

    def version_string(self) -> str:
        return "start"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the address goes to stdout once; a request is no news."""

    # --- answers --------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, kind: str, extra: Mapping[str, str] = {}) -> None:
        self.send_response(status)
        for name, value in {**guard.HEADERS, **extra}.items():
            self.send_header(name, value)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(data, ensure_ascii=False).encode("utf-8", "replace")
        self._send(status, body, "application/json")

    def _refuse(self, status: int, why: str, code: int = ExitCode.USAGE) -> None:
        self._json(status, {"error": why, "exit": code})

    def _headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    # --- methods --------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        address = urlsplit(self.path)
        refusal = guard.check(
            self.server.gate, method, address.path, self._headers(), address.query
        )
        if refusal is not None:
            self._refuse(refusal.status, refusal.why)
            return
        query = parse_qs(address.query)
        if method == "GET" and "token" in query:
            # The first address: the cookie carries the token from now on, and the address
            # the browser keeps (and shows, and may share) has none.
            self.send_response(HTTPStatus.SEE_OTHER)
            for name, value in guard.HEADERS.items():
                self.send_header(name, value)
            self.send_header("Set-Cookie", guard.set_cookie(self.server.gate))
            self.send_header("Location", address.path or "/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        try:
            if method == "GET":
                self._get(address.path, query)
            else:
                self._post(address.path)
        except StartError as error:
            status = _STATUS.get(error.exit_code, HTTPStatus.INTERNAL_SERVER_ERROR)
            self._refuse(status, str(error), error.exit_code)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as error:  # a bug: the page says so, the terminal has its traceback
            import traceback

            from start.ui import console

            console.err(traceback.format_exc().rstrip("\n"))
            why = f"internal error in start board serve: {type(error).__name__}: {error}"
            self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR, why, ExitCode.SOFTWARE)

    def _get(self, path: str, query: dict[str, list[str]]) -> None:
        if path in _STATIC:
            self._file(_STATIC[path])
            return
        if path == "/favicon.ico":  # asked by every browser: the page has none
            self._send(HTTPStatus.NO_CONTENT, b"", "text/plain")
            return
        if path == "/api/events":
            self._events()
            return
        parts = [unquote(part) for part in path.strip("/").split("/")]
        if parts[:1] != ["api"]:
            self._refuse(HTTPStatus.NOT_FOUND, f"no such page: {path}", ExitCode.UNKNOWN_NAME)
            return
        self._json(HTTPStatus.OK, self._read(path, parts[1:], query))

    def _read(self, path: str, rest: list[str], query: dict[str, list[str]]) -> Any:
        """The data of GET /api/...: the board's columns, a column's next page, the graph, an
        item, the runs, a run."""
        from start.board import file as boardfile
        from start.runs import store as historydb
        from start.web import views

        given = views.Query(query)
        with boardfile.opened(self.server.workdir, sweep=False) as opened:
            if rest == ["board"]:
                return views.columns(opened, given)
            if len(rest) == 2 and rest[0] == "column":
                return views.column(opened, rest[1], given)
            if rest == ["graph"]:
                return views.graph(opened, given)
            root = opened.root
            with historydb.opened(create=False) as history:
                if len(rest) == 2 and rest[0] == "items":
                    return views.item_page(opened, rest[1], history)
                if rest == ["runs"]:
                    before = query["before"][-1] if query.get("before") else None
                    return views.runs_page(history, root, given.search, before)
                if len(rest) == 2 and rest[0] == "runs":
                    return views.run_page(history, rest[1])
        raise NoSuchPageError(f"no such page: {path}")

    def _post(self, path: str) -> None:
        from start.web import actions

        parts = [unquote(part) for part in path.strip("/").split("/")]
        if parts == ["api", "items"]:
            action, id_ = "add", None
        elif len(parts) == 4 and parts[:2] == ["api", "items"]:
            action, id_ = parts[3], parts[2]
        else:
            self._refuse(HTTPStatus.NOT_FOUND, f"no such change: {path}", ExitCode.UNKNOWN_NAME)
            return
        body = self._body()
        if body is None:
            return
        from start.board import file as boardfile

        server = self.server
        with boardfile.opened(server.workdir) as opened:
            data = actions.act(opened, server.workdir, server.person, action, id_, body)
        self._json(HTTPStatus.OK, data)

    def _body(self) -> Any:
        """The request's JSON body, or None after refusing it (no length, too long, not JSON)."""
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._refuse(HTTPStatus.LENGTH_REQUIRED, "a change gives its Content-Length")
            return None
        if not 0 <= length <= BODY_LIMIT:
            too_long = f"a change is at most {BODY_LIMIT:,} bytes"
            self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, too_long)
            return None
        try:
            return json.loads(self.rfile.read(length))
        except ValueError as error:
            self._refuse(HTTPStatus.BAD_REQUEST, f"a change is a JSON object: {error}")
            return None

    # --- reads ----------------------------------------------------------------------------

    def _file(self, name: str) -> None:
        from importlib import resources

        body = resources.files("start.web").joinpath("static", name).read_bytes()
        self._send(HTTPStatus.OK, body, _TYPES[name.rsplit(".", 1)[1]])

    def _events(self) -> None:
        """A stream of Server-Sent Events: `change` at each change of the board or the history,
        a comment when quiet (so a closed page is noticed), until the page or the server goes."""
        streams = self.server.streams
        if not streams.acquire(blocking=False):
            self._refuse(HTTPStatus.SERVICE_UNAVAILABLE, f"at most {STREAMS} pages watch at once")
            return
        try:
            self.send_response(HTTPStatus.OK)
            for name, value in guard.HEADERS.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.end_headers()
            self.close_connection = True
            watcher = self.server.watcher
            seen = watcher.changes
            self.wfile.write(f"retry: 1000\nevent: hello\ndata: {seen}\n\n".encode())
            self.wfile.flush()
            while not watcher.stopping.is_set():
                now = watcher.wait(seen, KEEP_ALIVE)
                if now != seen:
                    seen = now
                    self.wfile.write(f"event: change\ndata: {now}\n\n".encode())
                else:
                    self.wfile.write(b": quiet\n\n")
                self.wfile.flush()
        finally:
            streams.release()


@contextmanager
def running(port: int, workdir: str, person: Holder) -> Iterator[Server]:
    """A server listening on 127.0.0.1 (`port`, or any free one with 0), its watcher going;
    both stopped at the end."""
    from start.board import file as boardfile

    with boardfile.opened(workdir) as opened:
        root = opened.root  # the board exists and is readable before it is watched or shown
    try:
        server = Server(port, workdir, person)
        server.root = root
    except OSError as error:
        raise StartError(
            f"start board serve cannot listen on 127.0.0.1:{port}: {error.strerror}; give "
            "another --port, or none for any free one"
        ) from None
    server.watcher.start()
    try:
        yield server
    finally:
        server.watcher.stop()
        server.server_close()


def serve(server: Server, opened: Callable[[str], object] | None = None) -> None:
    """Answer requests until interrupted (Ctrl-C, SIGTERM); `opened`, given the address with
    its token, opens it in a browser once the server listens."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        if opened is not None:
            opened(server.gate.address())
        with suppress(KeyboardInterrupt):
            server.serve_forever(poll_interval=0.2)
    finally:
        signal.signal(signal.SIGTERM, previous)
