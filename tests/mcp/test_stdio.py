"""`start mcp` as a real process on stdio: the SDK's client, raw JSON-RPC, signals, trust, and
every way a client can leave while a command runs."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HANG, REPO, running, write_tree
from tests.growth import assert_linear
from tests.mcp.conftest import BOARD_TOOLS, CONFIG, NO_ASKING, no_taskfile

SLOW = """
[tasks.slow]
description = "Sleeps for five minutes"
command_timeout = 300
command = "echo $$ >> slow.pids; exec sleep 300"
"""


@pytest.fixture
def env(isolated: Path, tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "global"
    write_tree(config, {"config.toml": CONFIG + SLOW})
    write_tree(isolated, {"GUIDE.md": "The guide.\n"})
    return {
        **os.environ,
        "START_CONFIG_DIR": str(config),
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }


def message(method: str, id_: int | None = None, **params: Any) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        body["id"] = id_
    if params:
        body["params"] = params
    return (json.dumps(body) + "\n").encode()


INITIALIZE = message(
    "initialize",
    1,
    protocolVersion="2025-11-25",
    capabilities={},
    clientInfo={"name": "test", "version": "0"},
) + message("notifications/initialized")


class Server:
    """`start mcp` in a subprocess; every stdout line must be a JSON-RPC message."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "start", "mcp", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.buffer = b""
        self.lines: list[dict[str, Any]] = []

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def responses(self, ids: set[int], timeout: float = 60) -> dict[int, dict[str, Any]]:
        """Read stdout until every id has its response."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        found: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout
        while not ids <= set(found):
            left = deadline - time.monotonic()
            assert left > 0, f"no response for {ids - set(found)}; got {self.lines}"
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            assert chunk, f"stdout closed; got {self.lines}"
            self.buffer += chunk
            *complete, self.buffer = self.buffer.split(b"\n")
            for line in complete:
                parsed = json.loads(line)  # nothing but protocol on stdout
                assert parsed["jsonrpc"] == "2.0"
                self.lines.append(parsed)
                if "id" in parsed and "method" not in parsed:
                    found[parsed["id"]] = parsed
        return found

    def silent(self, ids: set[int]) -> bool:
        """Whether no response for any of `ids` has been read."""
        return not any(line.get("id") in ids for line in self.lines if "method" not in line)

    def close(self, timeout: float = 60) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)  # closes stdin: the client is done
        return self.proc.returncode, (self.buffer + out).decode(), err.decode()


@pytest.fixture
def spawn(env: dict[str, str], isolated: Path) -> Iterator[Any]:
    started: list[Server] = []

    def start(*args: str) -> Server:
        server = Server(list(args), isolated, env)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


def test_stdout_carries_only_the_protocol_and_logs_go_to_stderr(spawn: Any) -> None:
    server = spawn("--debug")
    server.send(INITIALIZE)
    call = {"name": "run_task", "arguments": {"task_name": "greet"}}
    server.send(message("tools/call", 2, **call))
    server.send(b"this is not json\n")
    server.send(message("prompts/get", 3, name="nope"))
    server.send(message("no/such/method", 4))
    call = {"name": "run_task", "arguments": {"task_name": "both-streams"}}
    server.send(message("tools/call", 5, **call))
    found = server.responses({1, 2, 3, 4, 5})
    code, rest, stderr = server.close()
    assert code == 0, stderr
    assert rest == ""
    assert found[1]["result"]["serverInfo"]["name"] == "start"
    greet = found[2]["result"]
    assert greet["isError"] is False
    assert greet["content"][0]["text"] == (
        "Task 'greet' completed successfully. Output:\nHello from your custom Taskfile!\n"
        "Error Output:\n"
    )
    assert found[3]["error"]["code"] == -32602
    assert found[3]["error"]["message"].startswith("unknown task 'nope'")
    assert found[4]["error"]["code"] == -32601
    assert found[5]["result"]["structuredContent"]["stderr"] == "to stderr\n"
    # The commands' own output reaches the client only inside the results.
    assert "start mcp: DEBUG" in stderr
    assert "Hello from your custom Taskfile!" not in stderr


def test_the_sdk_client_talks_to_the_real_process(
    env: dict[str, str], isolated: Path, anyio_backend: str
) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    async def session() -> tuple[list[str], str]:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp", "-d", str(isolated)], env=env
        )
        async with Client(parameters, mode="legacy") as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("run_task", {"task_name": "deliberate-fail"})
        first = result.content[0]
        assert result.is_error is True
        return tools, getattr(first, "text", "")

    tools, text = anyio.run(session)
    assert tools == ["list_tasks", "run_task", "find_tasks", *BOARD_TOOLS]
    assert text.startswith("Task 'deliberate-fail' failed. Output:\nThis task will fail!\n")


def test_an_untrusted_project_is_served_without_a_question(spawn: Any, isolated: Path) -> None:
    write_tree(
        isolated, {".start/config.toml": '[tasks.mine]\ndescription = "Mine"\nprompt = "m"\n'}
    )
    server = spawn()
    server.send(INITIALIZE)
    server.send(message("tools/call", 2, name="list_tasks", arguments={}))
    found = server.responses({1, 2})
    code, _, stderr = server.close()
    assert code == 0, stderr
    assert found[1]["result"]["instructions"].endswith(
        f" Only built-in and global items are offered: {isolated}/.start is not trusted (never "
        f"approved); run 'start trust' to review it.{NO_ASKING}" + no_taskfile(isolated)
    )
    names = [t["name"] for t in found[2]["result"]["structuredContent"]["tasks"]]
    assert "mine" not in names and "greet" in names


# --- every way out ends the commands ---------------------------------------------------------


def run_slow(server: Server, id_: int) -> None:
    server.send(message("tools/call", id_, name="run_task", arguments={"task_name": "slow"}))


def started(workdir: Path, count: int = 1) -> list[int]:
    """The pids of the slow commands, once `count` of them have started."""
    pid_file = workdir / "slow.pids"
    deadline = time.monotonic() + 60
    while True:
        text = pid_file.read_text() if pid_file.exists() else ""
        if text.endswith("\n") and text.count("\n") >= count:
            return [int(word) for word in text.split()]
        assert time.monotonic() < deadline, f"{count} slow commands never started"
        time.sleep(0.05)


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def assert_gone(pids: list[int]) -> None:
    """Every one of `pids` ends (a command runs for five minutes; only a hang takes HANG)."""
    deadline = time.monotonic() + HANG
    while survivors := [pid for pid in pids if running(pid)]:
        assert time.monotonic() < deadline, f"still running: {survivors}"
        time.sleep(0.05)


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


@needs_proc
def test_closing_stdin_kills_the_running_commands(spawn: Any, isolated: Path) -> None:
    server = spawn()
    server.send(INITIALIZE)
    server.responses({1})
    run_slow(server, 2)
    pids = started(isolated)
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.proc.wait(timeout=HANG) == 0
    assert_gone(pids)


# A real server per signal (make check).
@pytest.mark.slow
@needs_proc
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_kills_the_running_commands_and_stops_the_server(
    spawn: Any, isolated: Path, signum: int
) -> None:
    server = spawn()
    server.send(INITIALIZE)
    server.responses({1})
    run_slow(server, 2)
    pids = started(isolated)
    server.proc.send_signal(signum)
    assert server.proc.wait(timeout=HANG) == 128 + signum
    assert_gone(pids)
    assert server.proc.stderr is not None
    assert server.proc.stderr.read() == b""


@needs_proc
def test_sigkill_of_the_server_kills_the_running_commands(spawn: Any, isolated: Path) -> None:
    """The watchdog does it: the server can do nothing, so look for every child it had."""
    server = spawn()
    server.send(INITIALIZE)
    server.responses({1})
    run_slow(server, 2)
    pids = started(isolated)
    family = children(server.proc.pid)
    assert set(pids) < set(family)  # the command's leader, and the watchdog
    server.proc.kill()
    server.proc.wait(timeout=HANG)
    assert_gone(family)


@needs_proc
def test_a_cancelled_request_kills_its_command_and_is_not_answered(
    spawn: Any, isolated: Path
) -> None:
    server = spawn()
    server.send(INITIALIZE)
    server.responses({1})
    run_slow(server, 2)
    run_slow(server, 3)
    first, second = started(isolated, 2)
    server.send(message("notifications/cancelled", requestId=2, reason="the user stopped it"))
    server.send(message("notifications/cancelled", requestId=3))
    assert_gone([first, second])
    server.send(message("tools/list", 4))
    assert server.responses({4})[4]["result"]["tools"]
    code, _, stderr = server.close()
    assert code == 0, stderr
    assert server.silent({2, 3})


# Forty commands at once on a real server (make check).
@pytest.mark.slow
@needs_proc
def test_listings_never_wait_for_slow_tool_calls(spawn: Any, isolated: Path) -> None:
    from start.mcp.owners import COMMAND_CALLS

    server = spawn()
    server.send(INITIALIZE)
    server.responses({1})
    for id_ in range(100, 140):  # every default worker thread and more
        run_slow(server, id_)
    started(isolated, COMMAND_CALLS)
    server.send(message("tools/list", 2))
    server.send(message("prompts/list", 3))
    server.send(message("resources/list", 4))
    server.send(message("tools/call", 5, name="list_tasks", arguments={}))
    # Each command runs for five minutes: an answer in time was not queued behind them.
    found = server.responses({2, 3, 4, 5}, timeout=30)
    assert "slow" in [t["name"] for t in found[5]["result"]["structuredContent"]["tasks"]]
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.proc.wait(timeout=HANG) == 0
    pids = started(isolated, COMMAND_CALLS)
    assert len(pids) == COMMAND_CALLS  # the rest waited their turn, and never ran
    assert_gone(pids)


@needs_proc
def test_the_sdk_client_leaving_mid_call_leaves_no_command_behind(
    env: dict[str, str], isolated: Path, anyio_backend: str
) -> None:
    """The SDK's stdio client closes stdin, then signals the server's process group."""
    import anyio
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    async def session() -> list[int]:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp", "-d", str(isolated)], env=env
        )
        call = message("tools/call", 2, name="run_task", arguments={"task_name": "slow"})
        async with stdio_client(parameters) as (read, write):
            for line in (INITIALIZE + call).splitlines():
                parsed = jsonrpc_message_adapter.validate_json(line, by_name=False)
                await write.send(SessionMessage(parsed))
            answer = await read.receive()
            assert isinstance(answer, SessionMessage)
            while not (isolated / "slow.pids").exists():
                await anyio.sleep(0.05)
            return started(isolated)

    pids = anyio.run(session)
    assert_gone(pids)


# --- input it cannot take ----------------------------------------------------------------------


def test_every_malformed_request_with_an_id_is_answered(spawn: Any) -> None:
    server = spawn()
    server.send(INITIALIZE)
    lines = [
        b"this is not json",
        b"[1, 2]",
        b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": 10, "method": 5}',
        b'{"id": 11, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": 12}',
        b'{"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": "run_task"}',
        b'{"jsonrpc": "2.0", "id": 14, "method": "tools/list", "params": []}',
        b'{"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": 5}}',
        b'{"jsonrpc": "2.0", "id": 16, "method": "tools/list", "params": {"a": "\\ud800"}}',
        b'{"jsonrpc": "2.0", "id": 17, "result": {}}',  # a response: never answered
        b"",
    ]
    server.send(b"\n".join(lines) + b"\n")
    server.send(message("tools/list", 18))
    found = server.responses(set(range(10, 17)) | {18})
    code, _, stderr = server.close()
    assert code == 0, stderr
    errors = [(line["id"], line["error"]["code"], line["error"]["message"])
              for line in server.lines if "error" in line]  # fmt: skip
    assert errors[:4] == [
        (None, -32700, "Parse error: the message is not valid JSON"),
        (None, -32600, "Invalid Request: not a JSON object"),
        (None, -32600, 'Invalid Request: "id" must be a string or an integer'),
        (None, -32600, 'Invalid Request: "id" must be a string or an integer'),
    ]
    assert {id_: found[id_]["error"]["code"] for id_ in range(10, 17)} == {
        10: -32600, 11: -32600, 12: -32600, 13: -32602, 14: -32602, 15: -32602, 16: -32700
    }  # fmt: skip
    assert found[10]["error"]["message"] == 'Invalid Request: "method" must be a string'
    assert found[11]["error"]["message"] == 'Invalid Request: "jsonrpc" must be "2.0"'
    assert found[12]["error"]["message"] == 'Invalid Request: no "method"'
    assert found[13]["error"]["message"] == 'Invalid params: "params" must be an object'
    assert "tools" in found[18]["result"]
    assert server.silent({17})
    assert len(errors) == 11


def test_lines_are_split_in_time_linear_in_their_length() -> None:
    """A message was read in quadratic time (32 MiB took 9 s): here lines over the limit, fed
    as the server reads them, cost in proportion to their length (32 MiB, then 256 MiB)."""
    from start.mcp import stdio

    chunk = b"x" * (1 << 16)

    def feeding(size: int) -> Callable[[], object]:
        def work() -> object:
            lines = stdio.Lines()
            for _ in range(size // len(chunk)):
                for _ in lines.feed(chunk):
                    pass
            return list(lines.feed(b"\n"))

        return work

    assert_linear(feeding, 2 * stdio.MESSAGE_LIMIT)


# 48 MiB through a real server (make check).
@pytest.mark.slow
def test_a_message_over_the_limit_is_refused_and_answered(spawn: Any) -> None:
    """It was never answered (and read in quadratic time: see the test above)."""
    from start.mcp.stdio import MESSAGE_LIMIT

    server = spawn()
    server.send(INITIALIZE)
    pad = "x" * (MESSAGE_LIMIT + 1)
    call = '"method": "tools/call", "params": {"name": "list_tasks", "arguments": {"pad": "%s"}}'
    server.send(b'{"jsonrpc": "2.0", "id": 2, %s}\n' % (call % pad).encode())
    server.send(b'{"jsonrpc": "2.0", %s, "id": 3}\n' % (call % pad).encode())
    just_under = '{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"pad": "%s"}}'
    just_under %= "x" * (MESSAGE_LIMIT - len(just_under) + 2)
    assert len(just_under) == MESSAGE_LIMIT
    server.send(just_under.encode() + b"\n")
    found = server.responses({2, 4}, timeout=HANG)
    code, _, stderr = server.close()
    assert code == 0, stderr
    size = len(call % pad) + len('{"jsonrpc": "2.0", "id": 2, }')
    refusal = f"Invalid Request: the message has {size:,} bytes, over the limit of {MESSAGE_LIMIT:,} bytes"
    assert found[2]["error"] == {"code": -32600, "message": refusal}
    # The id comes after the part kept: the refusal cannot name it.
    assert {"code": -32600, "message": refusal} in [
        line["error"] for line in server.lines if line.get("id") is None and "error" in line
    ]
    assert "tools" in found[4]["result"]


@pytest.mark.parametrize(
    ("head", "found"),
    [
        ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"a": "xx', 7),
        ('{ "id" : "seven" , "params": {', "seven"),
        ('{"params": {"id": 5, "a": "xx', None),  # not the top level's
        ('{"jsonrpc": "2.0", "params": {"a": "xx', None),
        ('{"id": true, "method": "x"', None),
        ('[{"id": 7}', None),
        ("", None),
    ],
)
def test_the_id_of_a_message_cut_short(head: str, found: object) -> None:
    from start.mcp.stdio import _head_id

    assert _head_id(head.encode()) == found


def test_lines_are_split_across_chunks_and_cut_over_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from start.mcp import stdio

    monkeypatch.setattr(stdio, "MESSAGE_LIMIT", 10)
    monkeypatch.setattr(stdio.Lines, "HEAD", 4)
    lines = stdio.Lines()
    got = [*lines.feed(b"one\ntw"), *lines.feed(b"o"), *lines.feed(b"\n0123456789")]
    got += [*lines.feed(b"0123456789"), *lines.feed(b"\n\nrest")]
    assert got == [(b"one", 3), (b"two", 3), (b"0123", 20), (b"", 0)]
    assert lines.rest() == (b"rest", 4)
    assert lines.rest() is None
