"""Where `start mcp`'s requests do their blocking work (worker threads), and the owner of every
process group they start, until the group is gone.

A cancelled request's groups are killed at once, the server kills all of them when it stops, and
a watchdog process (start.proc.watchdog) kills those left when the server itself is killed. The
agents that the asking tools run are such groups too, whether their call waits for them
(ask_agent, ask_agents) or not (ask_start).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, ParamSpec, TypeVar

import anyio
import anyio.to_thread

from start.proc.shell import kill_group

if TYPE_CHECKING:
    from start.proc.watchdog import Watchdog

# How many requests that may run commands (run_task, prompts/get, resources/read, ask_agent and
# ask_agents) run at once; more wait their turn, and listings never wait for them.
COMMAND_CALLS: Final = 16

P = ParamSpec("P")
R = TypeVar("R")


async def off_loop(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run blocking work that runs no command in a worker thread, so other requests go on
    meanwhile; work that may run one goes through `Commands.run`."""
    return await anyio.to_thread.run_sync(functools.partial(function, *args, **kwargs))


class Commands:
    """The process groups of the commands that requests run, each with its request (shell.Owner).

    A cancelled request's groups are killed at once, and after `stop` every group is, including
    those that start later. The watchdog is told of each group, for when the server is killed.
    """

    def __init__(self, watchdog: Watchdog | None = None) -> None:
        self.lock = threading.Lock()
        self.live: dict[int, Request] = {}  # process group id -> its request
        self.stopped = False
        self.watchdog = watchdog
        self.limiter = anyio.CapacityLimiter(COMMAND_CALLS)

    def request(self) -> Request:
        """A new request's owner (shell.Owner) of the groups it starts."""
        return Request(self)

    async def run(self, work: Callable[[Request], R]) -> R:
        """`work(owner)` in a worker thread, COMMAND_CALLS at most at once.

        Cancelled (the client cancelled the request, or the server stops), it kills the groups of
        the commands that `work` runs and returns at once; the thread then ends on its own.
        """
        request = self.request()
        try:
            return await anyio.to_thread.run_sync(
                work, request, limiter=self.limiter, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            self.kill(request)
            raise

    def adopt(self, request: Request, pgid: int) -> None:
        with self.lock:
            self.live[pgid] = request
            if self.watchdog is not None:
                self.watchdog.adopt(pgid)
            if self.stopped or request.killed:
                kill_group(pgid)

    def release(self, pgid: int) -> None:
        with self.lock:
            del self.live[pgid]
            if self.watchdog is not None:
                self.watchdog.release(pgid)

    def kill(self, request: Request) -> None:
        with self.lock:
            request.killed = True
            for pgid in [pgid for pgid, owner in self.live.items() if owner is request]:
                kill_group(pgid)

    def stop(self) -> None:
        """Kill every group, now and from now on."""
        with self.lock:
            self.stopped = True
            for pgid in self.live:
                kill_group(pgid)

    def close(self) -> None:
        """Stop, and let the watchdog go: it kills what is left, which is no longer running."""
        self.stop()
        with self.lock:
            watchdog, self.watchdog = self.watchdog, None
        if watchdog is not None:
            watchdog.close()


class Request:
    """shell.Owner for the commands of one request."""

    def __init__(self, commands: Commands) -> None:
        self.commands = commands
        self.killed = False

    def adopt(self, pgid: int) -> None:
        self.commands.adopt(self, pgid)

    def release(self, pgid: int) -> None:
        self.commands.release(pgid)
