"""A hostile-repository pass (issue 22): clones that attack every new surface at once, run through
every command and every `start mcp` method. Nothing may run, nothing outside the clone may be read,
no secret may reach any output, no untrusted byte may reach an MCP reply, and nothing may crash or
hang."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKE_AGENT, HANG, REPO, write_tree

pytestmark = pytest.mark.slow

SECRET = "AKIA-SECRET-3c9d1e"  # lives only outside the clones
MARKER = "UNTRUSTED-BYTES-7a41"  # lives only in the clones' own files

GLOBAL = f"""
[settings]
default_agent = "fake"

[agents.fake]
bin = "{sys.executable}"
command = "{{bin}} {FAKE_AGENT} {{prompt}}"

[tasks.mine]
description = "The user's own task"
prompt = "mine: {{instructions}}"
"""


def outside(home: Path) -> None:
    """The user's secrets, and folders a clone's symlinks point at."""
    write_tree(
        home,
        {
            ".env": f"TOKEN = {SECRET}\nbad line {SECRET}\n",
            ".aws/credentials": f"[default]\naws_access_key_id = {SECRET}\n",
            "cmds/steal.md": f"---\ndescription: {SECRET}\n---\n{SECRET}\n",
            "elsewhere/config.toml": f'[tasks.x]\nprompt = "{SECRET}"\nbad = \n',
        },
    )


def deep(n: int) -> str:
    return "[" * n + "]" * n


CLONES: dict[str, Callable[[Path, Path], None]] = {}


def clone(function: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    CLONES[function.__name__] = function
    return function


@clone
def links_out(project: Path, home: Path) -> None:
    """Config and command directories that are symlinks out of the clone, as git clones them."""
    write_tree(project, {"README.md": "x\n", ".gemini/commands/ok.toml": 'prompt = "ok"\n'})
    (project / ".start").mkdir()
    (project / ".start/config.toml").symlink_to(home / ".env")
    (project / ".start/tasks.toml").symlink_to("../../.aws/credentials")
    (project / ".claude").mkdir()
    (project / ".claude/commands").symlink_to(home / "cmds")
    (project / ".qwen/commands").mkdir(parents=True)
    (project / ".qwen/commands/steal.toml").symlink_to(home / ".env")
    (project / "AGENTS.md").symlink_to(home / ".aws/credentials")


@clone
def start_dir_out(project: Path, home: Path) -> None:
    """`.start` itself a symlink out of the clone."""
    write_tree(project, {"README.md": "x\n"})
    (project / ".start").symlink_to(home / "elsewhere")


@clone
def hostile_toml(project: Path, home: Path) -> None:
    """Numbers past Python's digit limit, nesting past its stack, and text that made regular
    expressions backtrack, in config and command files."""
    big = "1" * 4301
    write_tree(
        project,
        {
            ".start/tasks.toml": f"[tasks.t]\nprompt = 'x'\nn = {big}\n# {MARKER}\n",
            ".gemini/commands/big.toml": f'prompt = "x"\nn = {big}\n',
            ".gemini/commands/deep.toml": f'prompt = "x"\nn = {deep(3000)}\n',
            ".gemini/commands/blank.toml": "\n" * 200_000 + f"{MARKER} = \n",
            ".qwen/commands/deep.toml": f"n = {deep(3000)}\n",
            ".qwen/commands/dots.toml": ".".join(["k"] * 500_000) + " = 1\n",
            ".claude/commands/fences.md": "```!\n" * 50_000,
            ".claude/commands/ats.md": "@." * 200_000,
            ".opencode/command/ats.md": "@a" * 200_000 + "!`" * 100_000,
            ".codex/prompts/long.md": "$ARGUMENTS " * 100_000,
        },
    )
    (project / ".claude/commands/bin.md").write_bytes(os.urandom(1 << 20))
    (project / ".claude/commands/nul.md").write_bytes(b"hello\x00" * 1000)


@clone
def broken_start(project: Path, home: Path) -> None:
    """A plain syntax error whose line holds untrusted bytes, and a task with a huge
    description."""
    write_tree(
        project,
        {
            ".start/config.toml": f'[settings]\ndefault_agent = "{MARKER}\n',
            ".start/tasks.toml": f'[tasks.big]\ndescription = "{"word " * 6400}"\nprompt = "x"\n',
            ".claude/commands/c.md": f"---\ndescription: {MARKER}\n---\n!`touch $CANARY`\n",
        },
    )


CLI = [
    (),
    ("prompt", "hi"),
    ("prompt", "-c", "AGENTS.md", "hi"),
    ("task",),
    ("task", "mine", "x"),
    ("task", "t", "x"),
    ("task", "claude:c", "x"),
    ("task", "AGENTS.md"),
    ("show", "t"),
    ("show", "claude:c"),
    ("show", "mine", "--run"),
    ("config", "show"),
    ("config", "validate"),
    ("config", "path"),
    ("doctor",),
    ("trust", "--show"),
    ("trust", "--list"),
    ("task", "--help"),
    ("--dry-run", "task", "mine", "x"),
]


class World:
    def __init__(self, base: Path, name: str) -> None:
        self.home = base / "home"
        outside(self.home)
        write_tree(self.home / ".config/start", {"config.toml": GLOBAL})
        self.project = self.home / "src" / name
        self.project.mkdir(parents=True)
        CLONES[name](self.project, self.home)
        self.canary = base / "canary"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "START_"))},
            "HOME": str(self.home),
            "CANARY": str(self.canary),
            "PYTHONPATH": str(REPO),
            "FAKE_AGENT_RECORD": str(base / "record.json"),
        }
        self.record = base / "record.json"

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "start", *args],
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )

    def assert_unharmed(self, *outputs: str) -> None:
        assert not self.canary.exists()
        for output in outputs:
            assert SECRET not in output
        if self.record.exists():
            assert SECRET not in self.record.read_text(errors="replace")
            self.record.unlink()


@pytest.fixture(params=sorted(CLONES))
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    yield World(tmp_path, request.param)


def test_every_command_in_a_hostile_clone(world: World) -> None:
    failures: list[tuple[tuple[str, ...], int | None, str]] = []
    for args in CLI:
        try:
            result = world.run(*args, timeout=HANG)
        except subprocess.TimeoutExpired:  # a hang; no command is held to how long it took
            failures.append((args, None, "hung"))
            continue
        world.assert_unharmed(result.stdout, result.stderr)
        # 70 is a bug in start; a launch is refused (5) or fails cleanly, never crashes.
        if result.returncode == 70 or "Traceback" in result.stderr:
            failures.append((args, result.returncode, result.stderr[-600:]))
    assert failures == []


def test_completion_in_a_hostile_clone(world: World) -> None:
    for words, cword in (("start task ", "2"), ("start show ", "2"), ("start -a ", "2")):
        env = {
            **world.env,
            "COMP_WORDS": words,
            "COMP_CWORD": cword,
            "_START_COMPLETE": "bash_complete",
        }
        result = subprocess.run(
            [sys.executable, "-m", "start"],
            cwd=world.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        world.assert_unharmed(result.stdout, result.stderr)
        assert "Traceback" not in result.stderr


# --- start mcp --------------------------------------------------------------------------------


def message(method: str, id_: int | None = None, **params: Any) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        body["id"] = id_
    if params:
        body["params"] = params
    return (json.dumps(body) + "\n").encode()


REQUESTS = [
    message(
        "initialize",
        1,
        protocolVersion="2025-11-25",
        capabilities={},
        clientInfo={"name": "hostile", "version": "0"},
    ),
    message("notifications/initialized"),
    message("tools/list", 2),
    message("prompts/list", 3),
    message("resources/list", 4),
    message("resources/templates/list", 5),
    message("tools/call", 6, name="list_tasks", arguments={}),
    message("tools/call", 7, name="run_task", arguments={"task_name": "t"}),
    message("tools/call", 8, name="run_task", arguments={"task_name": "claude:c"}),
    message("prompts/get", 9, name="t"),
    message("prompts/get", 10, name="claude:c", arguments={"instructions": "a\x00b"}),
    message("resources/read", 11, uri="start://contexts/guide"),
    message("prompts/get", 12, name="mine", arguments={"instructions": "x"}),
    message("tools/call", 13, name="run_task", arguments={"task_name": "mine"}),
    b'{"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": 5}}\n',
    b'{"jsonrpc": "2.0", "id": 15, "method": "prompts/get", "params": []}\n',
    b"not json\n",
]


def test_every_mcp_method_in_a_hostile_clone(world: World) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "start", "mcp"],
        cwd=world.project,
        env=world.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"".join(REQUESTS))
        proc.stdin.flush()
        replies: dict[int, Any] = {}
        buffer, deadline = b"", time.monotonic() + 60
        while not set(range(1, 16)) <= set(replies) and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1)
            if not ready:
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                reply = json.loads(line)
                if isinstance(reply.get("id"), int):
                    replies[reply["id"]] = reply
        _, stderr = proc.communicate(timeout=30)  # closes stdin: the client is done
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sorted(replies) == list(range(1, 16))
    text = json.dumps(replies)
    assert MARKER not in text  # no untrusted byte reaches the model's side
    assert "\\u0000" not in text
    world.assert_unharmed(text, stderr.decode(errors="replace"))
    assert "Traceback" not in stderr.decode(errors="replace")
    # The user's own task is served in every hostile clone.
    assert "mine" in json.dumps(replies[3])
