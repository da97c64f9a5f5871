"""Where `start mcp`'s requests do their blocking work (worker threads), and the owner of every
process group they start, until the group is gone: start.proc.groups (the registry and the
workers that `start board run` uses too), adapted to the server's event loop.

A cancelled request's groups are killed at once, the server kills all of them when it stops, and
a watchdog process (start.proc.watchdog) kills those left when the server itself is killed. The
agents that the asking tools run are such groups too, whether their call waits for them
(ask_agent, ask_agents) or not (ask_start).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeVar

import anyio
import anyio.to_thread

from start.proc.groups import Groups, Job, Request, Workers

if TYPE_CHECKING:
    from start.proc.watchdog import Watchdog

# How many requests that may run commands (run_task, prompts/get, resources/read, ask_agent and
# ask_agents) run at once; more wait their turn, and listings never wait for them.
COMMAND_CALLS: Final = 16

P = ParamSpec("P")
R = TypeVar("R")


async def beside(work: Awaitable[R], tell: Callable[[], Coroutine[Any, Any, None]]) -> R:
    """`await work` while `tell` (a loop that reports progress) runs beside it, ended with it;
    an exception of `work` is raised as itself, not in the task group's ExceptionGroup."""
    failure: Exception | None = None
    done: list[R] = []
    async with anyio.create_task_group() as group:
        group.start_soon(tell)
        try:
            done.append(await work)
        except Exception as error:
            failure = error
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return done[0]


async def off_loop(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run blocking work that runs no command in a worker thread, so other requests go on
    meanwhile; work that may run one goes through `Commands.run`."""
    return await anyio.to_thread.run_sync(functools.partial(function, *args, **kwargs))


class Commands:
    """The server's registry of process groups (`groups`: each group with its request), and the
    workers of the requests that may run commands, COMMAND_CALLS at once.

    A cancelled request's groups are killed at once, and after `stop` every group is, including
    those that start later. The watchdog is told of each group, for when the server is killed.
    """

    def __init__(self, watchdog: Watchdog | None = None) -> None:
        self.groups = Groups(watchdog)
        self.workers = Workers(self.groups, COMMAND_CALLS, "start mcp")
        # Calls wait their turn here, in the event loop, rather than in the workers' queue: the
        # server's end cancels every call at once, and one that waits here leaves at once, where
        # a worker ending then could start it before it knew.
        self.limiter = anyio.CapacityLimiter(COMMAND_CALLS)

    async def run(self, work: Callable[[Request], R]) -> R:
        """`work(owner)` in a worker thread, COMMAND_CALLS at most at once.

        Cancelled (the client cancelled the request, or the server stops), it kills the groups of
        the commands that `work` runs and returns at once, or `work` never starts if it had not;
        the thread then ends on its own.
        """
        async with self.limiter:
            job: Job[R] = self.workers.submit(work)
            try:
                # The server runs on anyio's asyncio backend (anyio.run's default), whose
                # futures wait for a thread's without holding a thread.
                return await asyncio.wrap_future(job.future)
            except anyio.get_cancelled_exc_class():
                self.workers.cancel(job)
                raise

    def kill(self, request: Request) -> None:
        """Kill a request's groups, now and from now on."""
        self.groups.kill(request)

    def stop(self) -> None:
        """Kill every group, now and from now on; a request that waits for a worker never runs."""
        self.workers.stop()

    def close(self) -> None:
        """Stop, and let the watchdog go: it kills what is left, which is no longer running."""
        self.stop()
        self.groups.close()
