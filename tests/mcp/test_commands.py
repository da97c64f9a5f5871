"""`start mcp`'s owner of the commands' process groups (start.mcp.owners, over start.proc.groups),
over the real `shell.run_all`: what a cancelled call and a stopped server do to them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from start.mcp.owners import Commands
from start.proc import shell
from start.proc.groups import Request
from start.proc.shell import CommandSpec
from tests.conftest import read_pids, running, wait_gone

pytestmark = pytest.mark.anyio


def slow(directory: Path, name: str) -> CommandSpec:
    return CommandSpec(f"echo $$ > {name}; exec sleep 300", None, 300, str(directory))


def work(spec: CommandSpec) -> Callable[[Request], str]:
    def run(owner: Request) -> str:
        return shell.run_all([spec], owner=owner)[0].status

    return run


async def test_a_cancelled_call_kills_its_commands_and_returns_at_once(tmp_path: Path) -> None:
    commands = Commands()
    async with anyio.create_task_group() as group:
        group.start_soon(commands.run, work(slow(tmp_path, "one")))
        pids = await anyio.to_thread.run_sync(read_pids, tmp_path / "one")
        group.cancel_scope.cancel()
    assert wait_gone(pids) == []
    commands.close()


async def test_a_call_cancelled_while_it_waits_its_turn_never_runs(tmp_path: Path) -> None:
    commands = Commands()
    commands.limiter = anyio.CapacityLimiter(1)  # one at a time: the first takes the turn
    quick = CommandSpec("echo ran > two", None, 300, str(tmp_path))
    async with anyio.create_task_group() as first:
        first.start_soon(commands.run, work(slow(tmp_path, "one")))
        (pid,) = await anyio.to_thread.run_sync(read_pids, tmp_path / "one")
        async with anyio.create_task_group() as second:
            second.start_soon(commands.run, work(quick))
            while not commands.limiter.statistics().tasks_waiting:
                await anyio.sleep(0)
            second.cancel_scope.cancel()
        first.cancel_scope.cancel()
    await anyio.to_thread.run_sync(commands.workers.join)
    assert not running(pid)
    assert not (tmp_path / "two").exists()  # its turn came, and it never ran
    assert commands.groups.live == {}
    commands.close()


async def test_calls_cancelled_at_once_as_the_server_ends_start_none_that_waited(
    tmp_path: Path,
) -> None:
    """The server's end cancels every call together: as the running one's command is killed,
    the one that waited its turn must not be started in its place."""
    commands = Commands()
    commands.limiter = anyio.CapacityLimiter(1)
    quick = CommandSpec("echo ran > two", None, 300, str(tmp_path))
    async with anyio.create_task_group() as calls:
        calls.start_soon(commands.run, work(slow(tmp_path, "one")))
        (pid,) = await anyio.to_thread.run_sync(read_pids, tmp_path / "one")
        calls.start_soon(commands.run, work(quick))
        while not commands.limiter.statistics().tasks_waiting:
            await anyio.sleep(0)
        calls.cancel_scope.cancel()
    await anyio.to_thread.run_sync(commands.workers.join)
    assert not running(pid)
    assert not (tmp_path / "two").exists()
    commands.close()


async def test_once_stopped_a_call_never_runs(tmp_path: Path) -> None:
    commands = Commands()
    commands.stop()
    with pytest.raises(anyio.get_cancelled_exc_class()):
        await commands.run(work(slow(tmp_path, "pid")))
    assert not (tmp_path / "pid").exists()
    commands.close()
