"""Who may use the page `start board serve` serves, decided before anything is read or changed.

The server listens on loopback only, yet every page the user's browser opens can send it
requests (a form posted across sites, a script's fetch, a name that DNS rebinding points at
127.0.0.1), and so can every local user. So each request must:

- carry the secret token: the first address has it in its query, which sets a cookie for this
  port only (HttpOnly, SameSite=Strict) and sends the browser on to the address without it; a
  script may send it as `Authorization: Bearer TOKEN` instead;
- name this server in `Host`: 127.0.0.1 or localhost with this port, nothing a rebound name
  could carry;
- for a read (GET), not be another page's load of it: a browser says who asks in
  `Sec-Fetch-Site`, and only this page's own requests, or the person opening the page itself
  (an address typed, or a link followed to `/`), may read (another page's `<img>` or `<script>`
  pointed at the stream of events would hold its threads);
- for a change (POST), come from this page: `Origin` names this server, and the body is JSON,
  which no cross-site form can send.

Every answer carries a Content-Security-Policy that allows the page's own script and style and
nothing else: no inline script or handler, no style attribute, no image, frame, font or
connection to any other place. Agents' answers and items' text are hostile; what the Markdown
renderer (start.web.markdown) lets through runs nothing and loads nothing even if it erred.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from http import HTTPStatus
from typing import Final
from urllib.parse import parse_qs

from start.base.record import Record

# The page's own script and style, and requests to itself; nothing else, inline or remote.
POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS: Final[Mapping[str, str]] = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
# The names this server answers to: loopback by number or by the name every system maps to it.
HOSTS: Final = ("127.0.0.1", "localhost")


def new_token() -> str:
    """A secret for one server's life: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


class Gate(Record):
    """What a request is held against: the server's token and port."""

    token: str
    port: int

    @property
    def cookie(self) -> str:
        """The cookie's name: cookies do not tell ports apart, so each server has its own."""
        return f"start-board-{self.port}"

    @property
    def origins(self) -> tuple[str, ...]:
        return tuple(f"http://{host}:{self.port}" for host in HOSTS)

    def address(self, path: str = "/") -> str:
        """The first address, printed and opened: its token sets the cookie."""
        return f"http://127.0.0.1:{self.port}{path}?token={self.token}"


class Refusal(Record):
    """Why a request is refused: its HTTP status and the sentence the page or script gets."""

    status: int
    why: str


def host_ok(gate: Gate, host: str | None) -> bool:
    """Whether `Host` names this server: one of HOSTS with this port (HTTP/1.1 always sends
    it; a name that DNS rebinding pointed here carries its own name)."""
    return host is not None and host.lower() in {f"{name}:{gate.port}" for name in HOSTS}


def given_token(gate: Gate, headers: Mapping[str, str], query: str) -> str | None:
    """The token a request carries: in the query (the first address), as a bearer, or in the
    port's cookie; None when it carries none."""
    found = parse_qs(query).get("token")
    if found:
        return found[-1]
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return bearer[len("bearer ") :].strip()
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == gate.cookie:
            return value
    return None


def token_ok(gate: Gate, token: str | None) -> bool:
    """Whether `token` is the server's, compared in constant time."""
    return token is not None and hmac.compare_digest(token.encode(), gate.token.encode())


def check(
    gate: Gate, method: str, path: str, headers: Mapping[str, str], query: str
) -> Refusal | None:
    """Why a request for `path` may not go on, or None: a foreign Host, a token missing or
    wrong, a read another page made, and for a change a foreign or missing Origin or a body
    that is not JSON. `headers` has lowercase names."""
    if not host_ok(gate, headers.get("host")):
        return Refusal(
            HTTPStatus.FORBIDDEN,
            f"this server answers to 127.0.0.1:{gate.port} and localhost:{gate.port} only, "
            f"not to Host '{headers.get('host', '')}'",
        )
    if not token_ok(gate, given_token(gate, headers, query)):
        return Refusal(
            HTTPStatus.UNAUTHORIZED,
            "this request lacks the token: open the address `start board serve` printed, "
            "whose token sets a cookie",
        )
    if method in ("GET", "HEAD"):
        return _read(path, headers)
    origin = headers.get("origin")
    if origin not in gate.origins:
        named = "names no Origin" if origin is None else f"comes from Origin '{origin}'"
        return Refusal(
            HTTPStatus.FORBIDDEN,
            f"a change comes only from this board's own page; this one {named}",
        )
    if headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return Refusal(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "a change is sent as JSON")
    return None


def _read(path: str, headers: Mapping[str, str]) -> Refusal | None:
    """Whether a browser's read is this page's own (Sec-Fetch-Site same-origin), the person's
    (none: an address typed or opened), or a link followed to the page itself; a client that
    is no browser sends no such header, and has the token to show."""
    site = headers.get("sec-fetch-site")
    if site is None or site in ("same-origin", "none"):
        return None
    if path == "/" and headers.get("sec-fetch-mode") == "navigate":
        return None
    return Refusal(
        HTTPStatus.FORBIDDEN,
        f"{path} is read only by this board's own page, not by a {site} page's request",
    )


def set_cookie(gate: Gate) -> str:
    """The Set-Cookie that lets the page's later requests carry the token: for this port's
    cookie only, out of scripts' reach, and never sent with a request another site starts."""
    return f"{gate.cookie}={gate.token}; Path=/; HttpOnly; SameSite=Strict"
