"""`start board serve`'s server over real HTTP: the gate on every request, the views a page at a
time, a person's changes through the board's own calls (the command line's sentences when they
are refused), and the stream of changes. The server runs in this process, on a free port of
127.0.0.1; the command line beside it is `start` itself (in-process, `invoke`)."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from start import board
from start.web import server as webserver
from tests.conftest import HANG, Result, invoke, run_start, write_tree
from tests.fake_headless import agent


class Client:
    """Requests to the server, as the page sends them unless told otherwise."""

    def __init__(self, running: webserver.Server) -> None:
        self.port = running.gate.port
        self.token = running.gate.token

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        *,
        token: bool = True,
    ) -> tuple[int, Any, http.client.HTTPResponse]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HANG)
        sent = {"Host": f"127.0.0.1:{self.port}"}
        if token:
            sent["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent |= {
                "Content-Type": "application/json",
                "Origin": f"http://127.0.0.1:{self.port}",
                "Content-Length": str(len(data)),
            }
        sent |= headers or {}
        connection.putrequest(method, path, skip_host=True)
        for name, value in sent.items():
            connection.putheader(name, value)
        connection.endheaders(data)
        answer = connection.getresponse()
        raw = answer.read()
        connection.close()
        kind = answer.getheader("Content-Type", "")
        return answer.status, json.loads(raw) if "json" in kind else raw, answer

    def get(self, path: str) -> Any:
        status, data, _ = self.request("GET", path)
        assert status == 200, data
        return data

    def stream(self) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """The stream of events, opened: its connection, to close, and its response."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HANG)
        headers = {"Host": f"127.0.0.1:{self.port}", "Authorization": f"Bearer {self.token}"}
        connection.request("GET", "/api/events", headers=headers)
        return connection, connection.getresponse()

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        status, data, _ = self.request("POST", path, body)
        return status, data


@pytest.fixture
def served(isolated: Path) -> Iterator[Client]:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    with webserver.running(0, str(isolated), board.person(board.login())) as running:
        thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        try:
            yield Client(running)
        finally:
            running.shutdown()
            thread.join()


def ok(*args: str) -> Result:
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    return result


def test_every_request_needs_the_token_this_host_and_for_a_change_this_origin(
    served: Client,
) -> None:
    ok("board", "add", "One")
    status, data, answer = served.request("GET", "/api/board", token=False)
    assert (status, data["exit"]) == (401, 2)
    assert answer.getheader("Content-Security-Policy", "").startswith("default-src 'none'")
    status, _, _ = served.request("GET", "/", token=False)
    assert status == 401
    status, data, _ = served.request("GET", "/api/board", headers={"Host": "evil.example"})
    assert status == 403
    assert data["error"].endswith("not to Host 'evil.example'")
    before = ok("board", "show", "item-1", "--json").stdout
    for headers, expected in (
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "null"}, 403),
        ({"Content-Type": "text/plain"}, 415),
    ):
        status, _, _ = served.request("POST", "/api/items/item-1/edit", {"title": "x"}, headers)
        assert status == expected
    assert ok("board", "show", "item-1", "--json").stdout == before


def test_another_pages_load_of_a_read_is_refused_as_chromium_sends_it(served: Client) -> None:
    """Another page's <img> pointed at the stream of events: Chromium says so in its fetch
    metadata (the cookie goes along to another port of 127.0.0.1, the same site)."""
    loaded = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
    status, data, _ = served.request("GET", "/api/events", headers=loaded)
    assert (status, data["error"]) == (
        403, "/api/events is read only by this board's own page, not by a same-site page's request"
    )  # fmt: skip
    own = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    status, _, _ = served.request("GET", "/api/board", headers=own)
    assert status == 200
    followed = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
    status, _, _ = served.request("GET", "/", headers=followed)
    assert status == 200


def test_the_first_address_sets_the_cookie_and_drops_the_token(served: Client) -> None:
    status, _, answer = served.request("GET", f"/?token={served.token}", token=False)
    assert status == 303
    assert answer.getheader("Location") == "/"
    cookie = answer.getheader("Set-Cookie")
    assert cookie == f"start-board-{served.port}={served.token}; Path=/; HttpOnly; SameSite=Strict"
    name_value = cookie.split(";")[0]
    status, page, answer = served.request("GET", "/", headers={"Cookie": name_value}, token=False)
    assert status == 200
    assert b'<script src="/app.js" defer></script>' in page
    assert answer.getheader("Content-Type") == "text/html; charset=utf-8"
    for path in ("/app.js", "/app.css"):
        status, _, _ = served.request("GET", path, headers={"Cookie": name_value}, token=False)
        assert status == 200
    status, data, _ = served.request("GET", "/../../etc/passwd")
    assert (status, data["error"]) == (404, "no such page: /../../etc/passwd")


def test_the_board_comes_a_page_of_each_column_at_a_time(served: Client) -> None:
    from start.board import file as boardfile

    with boardfile.opened(str(Path.cwd())) as opened:
        me = board.person("me")
        for number in range(120):
            opened.create(f"Item {number}", me, priority=number % 5)
    data = served.get("/api/board")
    pending = data["columns"][0]
    assert [c["status"] for c in data["columns"]] == [
        "pending", "in_progress", "completed", "failed"
    ]  # fmt: skip
    assert (pending["total"], len(pending["items"])) == (120, 50)
    seen = [item["id"] for item in pending["items"]]
    following = pending["next"]
    while following:
        page = served.get(f"/api/column/pending?after={following}")
        seen += [item["id"] for item in page["items"]]
        following = page["next"]
    # Every item once, the highest priority first and the oldest first among equals.
    expected = [f"item-{n + 1}" for p in range(5) for n in range(120) if n % 5 == p]
    assert seen == expected
    status, answer, _ = served.request("GET", "/api/column/pending?after=nonsense")
    assert (status, answer["error"]) == (
        400, "'nonsense' is not a page's key: give back the `next` a page sent"
    )  # fmt: skip
    status, answer, _ = served.request("GET", "/api/column/done")
    assert status == 400
    assert answer["error"] == (
        "'done' is not a status: one of pending, in_progress, completed, failed"
    )
    found = served.get("/api/board?q=Item+11")  # words that begin with each word given
    titles = [i["title"] for i in found["columns"][0]["items"]]
    matching = [n for n in range(120) if str(n).startswith("11")]
    assert titles == [f"Item {n}" for n in sorted(matching, key=lambda n: (n % 5, n))]


def test_the_graph_has_the_unfinished_items_and_what_each_waits_on(served: Client) -> None:
    ok("board", "add", "Plan")
    ok("board", "add", "Build", "--after", "1")
    ok("board", "add", "Ship", "--after", "2", "--after", "1")
    ok("board", "add", "Old")
    ok("board", "done", "4")
    data = served.get("/api/graph")
    assert [n["id"] for n in data["nodes"]] == ["item-1", "item-2", "item-3"]
    assert data["edges"] == [
        {"from": "item-1", "to": "item-2"},
        {"from": "item-2", "to": "item-3"},
        {"from": "item-1", "to": "item-3"},
    ]


def test_an_items_page_has_its_text_rendered_its_history_and_what_may_be_done(
    served: Client,
) -> None:
    ok("board", "add", "Plan", "-d", "**Do** <script>alert(1)</script>", "--label", "ui")
    ok("board", "comment", "1", "see [docs](javascript:alert(2))")
    data = served.get("/api/items/1")
    assert data["id"] == "item-1"
    assert data["description_html"] == (
        "<p><strong>Do</strong> &lt;script&gt;alert(1)&lt;/script&gt;</p>\n"
    )
    assert data["comments"][0]["html"] == "<p>see [docs](javascript:alert(2))</p>\n"
    assert [e["op"] for e in data["events"]] == ["create"]
    assert data["offers"] == ["comment", "edit", "archive", "reassign"]
    status, answer, _ = served.request("GET", "/api/items/item-9")
    assert status == 404
    assert answer["error"] == invoke("board", "show", "item-9").stderr.removeprefix(
        "start: "
    ).rstrip("\n")


def test_each_change_of_the_page_is_the_command_lines(served: Client) -> None:
    status, added = served.post(
        "/api/items",
        {"title": "Plan", "description": "the *plan*", "priority": 1, "labels": ["ui"]},
    )
    assert status == 200
    assert (added["id"], added["priority"], added["labels"]) == ("item-1", 1, ["ui"])
    shown = json.loads(ok("board", "show", "1", "--json").stdout)
    assert (shown["title"], shown["description"], shown["created_by"]) == (
        "Plan", "the *plan*", board.login()
    )  # fmt: skip
    status, _ = served.post("/api/items/1/edit", {"title": "Plan it", "add_labels": ["x"]})
    assert status == 200
    status, _ = served.post("/api/items/1/comment", {"text": "looks good"})
    assert status == 200
    status, _ = served.post("/api/items/1/reassign", {"to": "alice"})
    assert status == 200
    shown = json.loads(ok("board", "show", "1", "--json").stdout)
    assert (shown["title"], shown["labels"], shown["status"], shown["assignee"]) == (
        "Plan it", ["ui", "x"], "in_progress", "alice"
    )  # fmt: skip
    assert [c["text"] for c in shown["comments"]] == ["looks good"]
    ok("board", "fail", "1", "--as", "alice", "--reason", "no")
    status, reopened = served.post("/api/items/1/reopen", {})
    assert (status, reopened["status"]) == (200, "pending")
    status, archived = served.post("/api/items/1/archive", {})
    assert archived["archived"] is not None
    status, back = served.post("/api/items/1/unarchive", {})
    assert back["archived"] is None


@pytest.mark.parametrize(
    ("setup", "path", "body", "command"),
    [
        # An item another holds: only its holder edits it.
        (
            ["board", "claim", "1", "--as", "bob"],
            "/api/items/1/edit",
            {"title": "Mine"},
            ["board", "update", "1", "--title", "Mine"],
        ),
        # A completed item keeps everything but its metadata, and is not reopened.
        (
            ["board", "done", "1"],
            "/api/items/1/reopen",
            {},
            ["board", "update", "1", "--status", "pending"],
        ),
        # An item in progress is not archived.
        (
            ["board", "claim", "1", "--as", "bob"],
            "/api/items/1/archive",
            {},
            ["board", "archive", "1"],
        ),
        # A finished item is not reassigned.
        (
            ["board", "done", "1"],
            "/api/items/1/reassign",
            {"to": "carol"},
            ["board", "reassign", "1", "carol"],
        ),
    ],
)
def test_a_change_the_rules_refuse_says_what_the_command_line_says(
    served: Client, setup: list[str], path: str, body: dict[str, Any], command: list[str]
) -> None:
    ok("board", "add", "Plan")
    ok(*setup)
    before = ok("board", "show", "1", "--json").stdout
    status, answer = served.post(path, body)
    refused = invoke(*command)
    assert refused.exit_code == 75
    assert (status, answer["exit"]) == (409, 75)
    assert answer["error"] == refused.stderr.removeprefix("start: ").rstrip("\n")
    assert ok("board", "show", "1", "--json").stdout == before


def test_a_change_with_fields_it_does_not_take_is_refused_by_name(served: Client) -> None:
    ok("board", "add", "Plan")
    status, answer = served.post("/api/items/1/edit", {"status": "completed"})
    assert (status, answer["error"]) == (
        400, "edit takes add_labels, description, parent, priority, remove_labels, title, not "
        "'status'"
    )  # fmt: skip
    status, answer = served.post("/api/items/1/promote", {})
    assert status == 400
    assert answer["error"] == (
        "'promote' is no change the page makes: add, edit, comment, archive, unarchive, "
        "reassign, reopen"
    )
    status, answer = served.post("/api/items", {"title": "x" * 1001})
    assert (status, answer["error"]) == (
        400, "title: 1,001 characters, over the limit of 1,000"
    )  # fmt: skip
    status, answer = served.post("/api/items", [1])
    assert (status, answer["error"]) == (400, "a change is a JSON object of its fields")


def test_the_stream_tells_each_change_of_another_process(served: Client) -> None:
    connection, answer = served.stream()
    assert answer.status == 200
    assert answer.getheader("Content-Type") == "text/event-stream; charset=utf-8"

    def event() -> str:
        lines = []
        while (line := answer.readline().decode()) != "\n":
            lines.append(line)
        return "".join(lines)

    assert event() == "retry: 1000\nevent: hello\ndata: 0\n"
    ok("board", "add", "Plan")
    assert event() == "event: change\ndata: 1\n"
    ok("board", "claim", "1", "--as", "bob")
    assert event() == "event: change\ndata: 2\n"
    connection.close()


def _recorded(project: str, number: int, **fields: Any) -> int:
    from start import runs
    from start.config.model import Settings
    from start.runs import recording

    run = runs.Run(
        time=f"2026-12-08T00:00:{number % 60:02d}+00:00", at=float(number), cwd=project,
        workdir=project, project=project, mode="prompt", agent="codex", prompt=f"prompt {number}",
        role_text="", argv=("codex", "exec"), headless=True, state=runs.OK,
        answer=f"answer {number}", duration=1.5, usage={"input_tokens": 10, "output_tokens": 2},
        permissions="read-only",
    )._replace(**fields)  # fmt: skip
    recorded = recording.record(run, Settings())
    assert recorded is not None and recorded.id is not None
    return recorded.id


def test_the_history_comes_a_page_at_a_time_newest_first_this_projects_only(
    served: Client, isolated: Path
) -> None:
    ids = [_recorded(str(isolated), n) for n in range(120)]
    _recorded("/elsewhere", 999)
    seen: list[int] = []
    page = served.get("/api/runs")
    while True:
        seen += [run["id"] for run in page["runs"]]
        if page["next"] is None:
            break
        assert len(page["runs"]) == 50
        page = served.get(f"/api/runs?before={page['next']}")
    assert seen == sorted(ids, reverse=True)
    found = served.get("/api/runs?q=answer+7")  # the runs whose prompt or answer hold it
    assert [run["id"] for run in found["runs"]] == [
        ids[n] for n in sorted((n for n in range(120) if "answer 7" in f"answer {n}"), reverse=True)
    ]
    first = found["runs"][0]
    assert {key: first[key] for key in ("agent", "permissions", "state", "duration")} == {
        "agent": "codex", "permissions": "read-only", "state": "ok", "duration": 1.5
    }  # fmt: skip
    status, answer, _ = served.request("GET", "/api/runs?before=x")
    assert status == 400
    assert answer["error"] == (
        "'x' is not a run id: a run id is a number of 1 to 18 digits that does not start with 0 "
        "('start log' lists the runs)"
    )


def test_a_runs_page_has_its_prompt_and_its_answer_rendered(served: Client, isolated: Path) -> None:
    number = _recorded(
        str(isolated), 1, prompt="Review <b>this</b>", answer="# Verdict\n\n<script>x()</script>"
    )
    run = served.get(f"/api/runs/{number}")
    assert (run["prompt"], run["answer"]) == (
        "Review <b>this</b>",
        "# Verdict\n\n<script>x()</script>",
    )
    assert run["answer_html"] == "<h1>Verdict</h1>\n<p>&lt;script&gt;x()&lt;/script&gt;</p>\n"
    status, answer, _ = served.request("GET", "/api/runs/99999")
    assert (status, answer["error"]) == (
        404, "no run 99999 in the history ('start log' lists the runs)"
    )  # fmt: skip


def test_an_item_finished_by_a_run_links_the_run(served: Client, isolated: Path) -> None:
    from start.board import Change
    from start.board import file as boardfile

    number = _recorded(str(isolated), 5, model="gpt-5")
    ok("board", "add", "Review")
    with boardfile.opened(str(isolated)) as opened:
        opened.update(
            "item-1", board.person("me"), Change("completed", answer="done", history=number)
        )
    item = served.get("/api/items/1")
    assert {key: item["record"][key] for key in ("id", "agent", "model", "exit_code")} == {
        "id": number, "agent": "codex", "model": "gpt-5", "exit_code": None
    }  # fmt: skip


def test_an_item_start_board_run_finishes_reaches_the_stream_with_its_run(
    served: Client, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real path of a run: `start board run` (another process) claims the item, runs a
    headless agent, records the run and finishes the item; the stream tells each change, and
    the item's page has the run behind it."""
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    config = f'[settings]\ndefault_agent = "fake"\n\n{agent("fake")}\n'
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": config})
    ok("board", "add", "Review", "--prompt", "say hi")
    connection, stream = served.stream()
    assert stream.readline() == b"retry: 1000\n"
    ran = run_start("board", "run", "--until-empty", cwd=isolated)
    assert ran.returncode == 0, ran.stderr
    changes = 0
    while True:  # each change told, until the item's end is among them
        line = stream.readline()
        changes += line.startswith(b"event: change")
        if changes and served.get("/api/items/1")["status"] == "completed":
            break
    item = served.get("/api/items/1")
    assert item["answer"] == "ANSWER: say hi"
    assert (item["record"]["agent"], item["record"]["state"]) == ("fake", "ok")
    assert served.get("/api/runs")["runs"][0]["id"] == item["record"]["id"]
    connection.close()


def test_a_bug_answers_500_saying_so_and_the_server_goes_on(
    served: Client, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from start.web import views

    def broken(*args: Any) -> Any:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(views, "graph", broken)
    status, answer, _ = served.request("GET", "/api/graph")
    assert (status, answer) == (
        500,
        {"error": "internal error in start board serve: ZeroDivisionError: division by zero",
         "exit": 70},
    )  # fmt: skip
    assert "ZeroDivisionError: division by zero" in capsys.readouterr().err
    assert served.get("/api/board")["columns"][0]["status"] == "pending"
