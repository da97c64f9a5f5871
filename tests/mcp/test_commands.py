"""`start mcp`'s owner of the commands' process groups, over the real `shell.run_all`."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from start.mcp.owners import Commands, Request
from start.proc import shell
from start.proc.shell import CommandResult, CommandSpec


def slow(directory: Path, name: str) -> CommandSpec:
    return CommandSpec(f"echo $$ > {name}; exec sleep 300", None, 300, str(directory))


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists() or not path.read_text().endswith("\n"):
        assert time.monotonic() < deadline, f"{path.name} never written"
        time.sleep(0.02)


def in_thread(
    spec: CommandSpec, owner: shell.Owner
) -> tuple[threading.Thread, list[CommandResult]]:
    results: list[CommandResult] = []
    thread = threading.Thread(target=lambda: results.extend(shell.run_all([spec], owner=owner)))
    thread.start()
    return thread, results


def test_a_killed_request_ends_its_commands_and_those_it_starts_later(tmp_path: Path) -> None:
    commands = Commands()
    request, other = Request(commands), Request(commands)
    thread, results = in_thread(slow(tmp_path, "one"), request)
    bystander, spared = in_thread(slow(tmp_path, "two"), other)
    wait_for(tmp_path / "one")
    wait_for(tmp_path / "two")
    commands.kill(request)
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert [result.status for result in results] == ["killed by SIGKILL"]
    assert bystander.is_alive()  # another request's command runs on
    assert list(commands.live.values()) == [other]
    (later,) = shell.run_all([slow(tmp_path, "three")], owner=request)
    assert later.status == "killed by SIGKILL"
    commands.stop()
    bystander.join(timeout=10)
    assert [result.status for result in spared] == ["killed by SIGKILL"]
    assert commands.live == {}


def test_once_stopped_every_command_is_killed_as_it_starts(tmp_path: Path) -> None:
    commands = Commands()
    commands.stop()
    (result,) = shell.run_all([slow(tmp_path, "pid")], owner=Request(commands))
    assert result.status == "killed by SIGKILL"
    assert commands.live == {}
