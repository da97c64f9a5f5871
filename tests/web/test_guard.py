"""start.web.guard: what each request to `start board serve` must carry, decided before anything
is read (the server's own tests, tests/web/test_api.py, send these over HTTP)."""

from __future__ import annotations

from start.web import guard

GATE = guard.Gate("s3cret-token", 8123)
HOST = {"host": "127.0.0.1:8123"}
BEARER = {"authorization": "Bearer s3cret-token"}
CHANGE = {"origin": "http://127.0.0.1:8123", "content-type": "application/json"}


def test_a_request_with_the_token_and_this_host_goes_on() -> None:
    assert guard.check(GATE, "GET", "/api/board", HOST | BEARER, "") is None
    assert (
        guard.check(GATE, "GET", "/api/board", {"host": "localhost:8123"}, "token=s3cret-token")
        is None
    )
    cookie = {"cookie": "other=1; start-board-8123=s3cret-token"}
    assert guard.check(GATE, "GET", "/api/board", HOST | cookie, "") is None


def test_a_request_without_the_token_or_with_another_is_refused() -> None:
    lacks = guard.Refusal(
        401,
        "this request lacks the token: open the address `start board serve` printed, whose "
        "token sets a cookie",
    )
    assert guard.check(GATE, "GET", "/api/board", HOST, "") == lacks
    assert guard.check(GATE, "GET", "/api/board", HOST, "token=s3cret-tokeN") == lacks
    assert guard.check(GATE, "GET", "/api/board", HOST | {"authorization": "Bearer "}, "") == lacks
    # Another port's cookie is another server's: cookies do not tell ports apart.
    assert (
        guard.check(
            GATE, "GET", "/api/board", HOST | {"cookie": "start-board-8124=s3cret-token"}, ""
        )
        == lacks
    )


def test_a_foreign_host_is_refused_even_with_the_token() -> None:
    """DNS rebinding: a name the attacker controls, pointed at 127.0.0.1, carries its own name."""
    for host in ("evil.example:8123", "127.0.0.1:8124", "127.0.0.1", "localhost.evil:8123", ""):
        refused = guard.check(GATE, "GET", "/api/board", {"host": host} | BEARER, "")
        assert refused == guard.Refusal(
            403,
            f"this server answers to 127.0.0.1:8123 and localhost:8123 only, not to Host '{host}'",
        )
    assert guard.check(GATE, "GET", "/api/board", BEARER, "") is not None  # no Host at all


def test_a_change_comes_only_from_the_page_and_as_json() -> None:
    assert guard.check(GATE, "POST", "/api/items", HOST | BEARER | CHANGE, "") is None
    for origin in ("http://evil.example", "null", "http://127.0.0.1:8124", None):
        headers = HOST | BEARER | {"content-type": "application/json"}
        if origin is not None:
            headers["origin"] = origin
        named = "names no Origin" if origin is None else f"comes from Origin '{origin}'"
        assert guard.check(GATE, "POST", "/api/items", headers, "") == guard.Refusal(
            403, f"a change comes only from this board's own page; this one {named}"
        )
    form = CHANGE | {"content-type": "application/x-www-form-urlencoded"}
    assert guard.check(GATE, "POST", "/api/items", HOST | BEARER | form, "") == guard.Refusal(
        415, "a change is sent as JSON"
    )


def test_the_cookie_is_this_ports_out_of_scripts_reach_and_never_cross_site() -> None:
    assert guard.set_cookie(GATE) == (
        "start-board-8123=s3cret-token; Path=/; HttpOnly; SameSite=Strict"
    )
    assert GATE.address() == "http://127.0.0.1:8123/?token=s3cret-token"


def test_the_policy_lets_nothing_inline_or_remote_run_or_load() -> None:
    policy = dict(part.strip().split(" ", 1) for part in guard.POLICY.split(";"))
    assert policy == {
        "default-src": "'none'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self'",
        "connect-src": "'self'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
        "base-uri": "'none'",
    }


def test_tokens_are_new_each_time_and_long() -> None:
    tokens = {guard.new_token() for _ in range(20)}
    assert len(tokens) == 20
    assert all(len(token) >= 43 for token in tokens)


def test_a_read_another_page_makes_is_refused_and_the_page_itself_may_be_opened() -> None:
    """Fetch metadata: another page's <img> or <script> pointed at the stream of events (the
    cookie goes along to another port of 127.0.0.1, the same site) reads nothing; the person
    may open the page from anywhere, a link in another site's page too."""
    for site in ("cross-site", "same-site"):
        for mode, dest in (("no-cors", "image"), ("cors", "empty"), ("no-cors", "script")):
            headers = HOST | BEARER | {"sec-fetch-site": site, "sec-fetch-mode": mode}
            assert guard.check(
                GATE, "GET", "/api/events", headers | {"sec-fetch-dest": dest}, ""
            ) == (
                guard.Refusal(
                    403,
                    f"/api/events is read only by this board's own page, not by a {site} page's "
                    "request",
                )
            )
        opened = HOST | BEARER | {"sec-fetch-site": site, "sec-fetch-mode": "navigate"}
        assert guard.check(GATE, "GET", "/", opened, "") is None
        assert guard.check(GATE, "GET", "/api/board", opened, "") is not None
    for site in ("same-origin", "none"):
        headers = HOST | BEARER | {"sec-fetch-site": site, "sec-fetch-mode": "cors"}
        assert guard.check(GATE, "GET", "/api/events", headers, "") is None
