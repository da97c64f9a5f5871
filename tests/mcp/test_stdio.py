"""`start mcp` as a real process on stdio: the SDK's client, raw JSON-RPC, signals, trust."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, write_tree
from tests.mcp.conftest import CONFIG

SLOW = """
[tasks.slow]
description = "Sleeps past its timeout"
command_timeout = 3
command = "echo $$ > slow.pid; exec sleep 60"
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
    assert tools == ["list_tasks", "run_task"]
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
        "approved); run 'start trust' to review it."
    )
    names = [t["name"] for t in found[2]["result"]["structuredContent"]["tasks"]]
    assert "mine" not in names and "greet" in names


# Waits for a real server to start a command and for the signal to stop both (make check).
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_the_server_and_no_command_outlives_it(
    spawn: Any, isolated: Path, signum: int
) -> None:
    """The running command is killed at its timeout, as in a launch, never orphaned."""
    server = spawn()
    server.send(INITIALIZE)
    server.responses({1})
    server.send(message("tools/call", 2, name="run_task", arguments={"task_name": "slow"}))
    pid_file = isolated / "slow.pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the slow task never started"
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    server.proc.send_signal(signum)
    server.proc.wait(timeout=30)
    assert server.proc.returncode == 128 + signum
    assert server.proc.stderr is not None
    assert server.proc.stderr.read() == b""
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
