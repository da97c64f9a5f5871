"""Requests `start board serve` refuses: without the token or with a wrong one, with a foreign
Host (DNS rebinding), and a change with a foreign Origin, none, or a body that is not JSON; and
a page of another origin in the browser, which can neither read the board nor change it."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from start.web.guard import POLICY
from tests.conftest import HANG
from tests.web.conftest import Served, board, shown

if TYPE_CHECKING:
    from playwright.sync_api import Browser

NO_TOKEN = (
    "this request lacks the token: open the address `start board serve` printed, whose token "
    "sets a cookie"
)


def ask(
    served: Served,
    method: str,
    path: str,
    headers: Mapping[str, str],
    body: bytes | None = None,
) -> tuple[int, dict[str, str], Any]:
    """Send one request to the server as a script would: its status, headers and JSON body."""
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=HANG)
    try:
        connection.request(method, path, body=body, headers=dict(headers))
        answer = connection.getresponse()
        data = answer.read()
        return answer.status, dict(answer.getheaders()), json.loads(data) if data else None
    finally:
        connection.close()


def change(served: Served, **headers: str) -> tuple[int, Any]:
    """POST a new title for item-1, with `headers` (names with _ for -)."""
    body = json.dumps({"title": "Taken over"}).encode()
    sent = {name.replace("_", "-"): value for name, value in headers.items()}
    status, _, data = ask(served, "POST", "/api/items/item-1/edit", sent, body)
    return status, data


def test_requests_without_the_token_from_a_foreign_host_or_origin_are_refused(
    project: Path, served: Served
) -> None:
    board(project, "add", "Keep me")
    before = shown(project, "item-1")
    host = f"127.0.0.1:{served.port}"
    bearer = f"Bearer {served.token}"

    assert ask(served, "GET", "/api/board", {"Host": host})[::2] == (
        401,
        {"error": NO_TOKEN, "exit": 2},
    )
    wrong = {"Host": host, "Authorization": f"Bearer {served.token[:-1]}x"}
    assert ask(served, "GET", "/api/board", wrong)[::2] == (401, {"error": NO_TOKEN, "exit": 2})
    cookie = {"Host": host, "Cookie": f"start-board-{served.port}=not-it"}
    assert ask(served, "GET", "/", cookie)[::2] == (401, {"error": NO_TOKEN, "exit": 2})
    rebound = {"Host": f"evil.example:{served.port}", "Authorization": bearer}
    assert ask(served, "GET", "/api/board", rebound)[::2] == (
        403,
        {
            "error": f"this server answers to 127.0.0.1:{served.port} and localhost:"
            f"{served.port} only, not to Host 'evil.example:{served.port}'",
            "exit": 2,
        },
    )
    # Even the token in the address, as a rebound page could carry it, gets nothing.
    first = f"/?token={served.token}"
    assert ask(served, "GET", first, {"Host": f"evil.example:{served.port}"})[0] == 403

    json_ = "application/json"
    assert change(
        served, Host=host, Authorization=bearer, Origin="http://evil.example", Content_Type=json_
    ) == (
        403,
        {
            "error": "a change comes only from this board's own page; this one comes from "
            "Origin 'http://evil.example'",
            "exit": 2,
        },
    )
    assert change(served, Host=host, Authorization=bearer, Content_Type=json_) == (
        403,
        {
            "error": "a change comes only from this board's own page; this one names no Origin",
            "exit": 2,
        },
    )
    form = "application/x-www-form-urlencoded"
    assert change(
        served, Host=host, Authorization=bearer, Origin=served.origin, Content_Type=form
    ) == (415, {"error": "a change is sent as JSON", "exit": 2})
    assert change(served, Host=host, Origin=served.origin, Content_Type=json_)[0] == 401
    assert shown(project, "item-1") == before

    # The same change, from the page's own origin with the token, is made: what was refused
    # would have changed the board.
    status, data = change(
        served, Host=host, Authorization=bearer, Origin=served.origin, Content_Type=json_
    )
    assert (status, data["title"]) == (200, "Taken over")
    assert shown(project, "item-1")["title"] == "Taken over"


def test_every_answer_carries_the_policy_and_the_first_address_sets_a_strict_cookie(
    served: Served,
) -> None:
    host = f"127.0.0.1:{served.port}"
    status, headers, _ = ask(served, "GET", f"/?token={served.token}", {"Host": host})
    assert status == 303
    assert headers["Location"] == "/"
    assert headers["Set-Cookie"] == (
        f"start-board-{served.port}={served.token}; Path=/; HttpOnly; SameSite=Strict"
    )
    for path in ("/", "/app.js", "/api/board"):
        _, headers, _ = (
            ask(served, "GET", path, {"Host": host, "Authorization": f"Bearer {served.token}"})
            if path.startswith("/api")
            else _page(served, path)
        )
        assert headers["Content-Security-Policy"] == POLICY, path
    assert POLICY == (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    _, headers, _ = ask(served, "GET", "/api/board", {"Host": host})
    assert headers["Content-Security-Policy"] == POLICY  # a refusal too


def _page(served: Served, path: str) -> tuple[int, dict[str, str], None]:
    """A file of the page (not JSON), asked with the token."""
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=HANG)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {served.token}"})
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 200, path
        return answer.status, dict(answer.getheaders()), None
    finally:
        connection.close()


class _Elsewhere(BaseHTTPRequestHandler):
    """Another site on this machine: one empty page."""

    def do_GET(self) -> None:
        body = b"<!doctype html><title>elsewhere</title><p>another site</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@contextmanager
def elsewhere() -> Iterator[str]:
    """The address of another origin on loopback (another port: same site, another origin),
    served from a thread until the end."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Elsewhere)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# What a page of another origin tries: read the board with the user's cookie (CORS: no
# answer to read), change an item with a request no preflight guards (text/plain, no-cors: sent,
# its answer withheld by Cross-Origin-Resource-Policy), with one a preflight guards (JSON: the
# server answers no preflight), and post a form (sent, and shown: the server's refusal).
_READ = """async (target) => {
  try {
    const answer = await fetch(`${target}/api/board`, { credentials: "include" });
    return `read ${answer.status}: ${(await answer.text()).slice(0, 40)}`;
  } catch (error) { return `refused: ${error.name}`; }
}"""
_SIMPLE = """async (target) => {
  try {
    await fetch(`${target}/api/items/item-1/edit`, { method: "POST", mode: "no-cors",
      credentials: "include", headers: { "Content-Type": "text/plain" },
      body: JSON.stringify({ title: "Taken over" }) });
    return "answered";
  } catch (error) { return `refused: ${error.name}`; }
}"""
_PREFLIGHTED = """async (target) => {
  try {
    await fetch(`${target}/api/items/item-1/edit`, { method: "POST", credentials: "include",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ title: "Taken over" }) });
    return "sent";
  } catch (error) { return `refused: ${error.name}`; }
}"""
_FORM = """(target) => {
  const form = document.createElement("form");
  form.method = "POST";
  form.enctype = "text/plain";
  form.action = `${target}/api/items/item-1/edit`;
  const field = document.createElement("input");
  field.name = '{"title": "Taken over", "x": "';
  field.value = '"}';
  form.append(field);
  document.body.append(form);
  form.submit();
}"""


def test_a_page_of_another_origin_can_neither_read_the_board_nor_change_it(
    project: Path, served: Served, browser: Browser
) -> None:
    board(project, "add", "Keep me")
    before = shown(project, "item-1")
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(served.address)  # the user opened the board: the browser holds its cookie
        page.wait_for_selector('#column-pending .card[data-id="item-1"]')
        answered: dict[str, int] = {}
        context.on("response", lambda response: answered.update({response.url: response.status}))
        with elsewhere() as other:
            page.goto(other)
            assert page.evaluate(_READ, served.origin) == "refused: TypeError"
            assert page.evaluate(_SIMPLE, served.origin) == "refused: TypeError"
            assert page.evaluate(_PREFLIGHTED, served.origin) == "refused: TypeError"
            with page.expect_navigation():
                page.evaluate(_FORM, served.origin)
            assert page.url == f"{served.origin}/api/items/item-1/edit"
            refused = json.loads(page.locator("body").inner_text())
        assert refused == {
            "error": "a change comes only from this board's own page; this one comes from "
            f"Origin '{other.rstrip('/')}'",
            "exit": 2,
        }
        # The form's request reached the server, which refused it.
        assert answered.get(f"{served.origin}/api/items/item-1/edit") == 403
        assert shown(project, "item-1") == before
    finally:
        context.close()
