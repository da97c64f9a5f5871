"""The one registry of the process groups that start runs (`Groups`), and the one scheduler of the
work that runs them from threads (`Workers`).

Every group has an owner from its leader's start to its leader's reaping (process.Owner): a
registry, or one of its `Request`s, which hold the groups of one piece of work (a request of
`start mcp`, a run of `start board run`). A request's groups can be killed alone, with those it
starts later (a cancelled MCP request); `stop` ends every group, and kills each one that starts
after it. The registry tells its watchdog (start.proc.watchdog) of each group, for when start
itself is killed. `--print` (`watching`), `start mcp` and `start board run` each keep one.

`Workers` runs jobs in threads of their own, `size` at once, each with a request of its own:
`start board run`'s items, and `start mcp`'s calls that may run commands and its ask_start runs.
On a stop no job starts any more, and the running ones' groups get SIGTERM, a grace, then
SIGKILL (or SIGKILL at once). A stop for a signal (`start board run`'s Ctrl-C: its `cause`)
reaches the agents a job runs as that signal reaches `--print`'s: start.proc.agents ends them
(`stopped_by`) and raises its Interrupted in the job, so that they are recorded as interrupted,
not as failed by the SIGTERM that ended them. Within a job, its agents are scheduled by
start.proc.agents (run_agents: a cap, and never two of one CLI at once in this process, whichever
job asks), as `--print`'s are in the main thread. concurrent.futures is imported only when a job
is submitted.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from start.proc import process

if TYPE_CHECKING:
    from concurrent.futures import Future

    from start.proc.process import Owner
    from start.proc.watchdog import Watchdog

R = TypeVar("R")


class Groups:
    """The process groups of one start process, each with its request (None: the registry's own),
    from their leaders' start to their reaping. Safe to use from several threads.

    It is a process.Owner itself, for groups of no request (`--print`'s); `request()` gives the
    owner of one piece of work's groups.
    """

    def __init__(self, watchdog: Watchdog | None = None) -> None:
        self.lock = threading.Lock()
        self.live: dict[int, Request | None] = {}  # process group id -> its request
        self.stopped = False
        # The signal that stopped the work (`stop`'s cause), and the groups whose leaders still
        # ran then: the agents it interrupted (`stopped_by`).
        self.cause: int | None = None
        self.cut: set[int] = set()
        self.watchdog = watchdog

    def request(self) -> Request:
        """The owner (process.Owner) of the groups of a new piece of work."""
        return Request(self)

    def adopt(self, pgid: int, request: Request | None = None) -> None:
        with self.lock:
            self.live[pgid] = request
            if self.watchdog is not None:
                self.watchdog.adopt(pgid)
            if self.stopped or (request is not None and request.killed):
                if self.cause is not None:
                    self.cut.add(pgid)
                process.kill_group(pgid)

    def release(self, pgid: int) -> None:
        with self.lock:
            self.live.pop(pgid, None)
            self.cut.discard(pgid)
            if self.watchdog is not None:
                self.watchdog.release(pgid)

    def kill(self, request: Request) -> None:
        """SIGKILL to the request's groups, now and from now on; the others run on."""
        with self.lock:
            request.killed = True
            for pgid, owner in self.live.items():
                if owner is request:
                    process.kill_group(pgid)

    def stop(self, signum: int = signal.SIGKILL, cause: int | None = None) -> None:
        """`signum` to every group now, and SIGKILL to every group that starts from now on.

        `cause`: the signal that stopped the work (SIGINT: Ctrl-C), which `stopped_by` tells
        the loops that run agents in these groups, so that they end them as on that signal; the
        groups whose leaders had not exited by themselves are the ones it cut short. The first
        stop's cause holds."""
        with self.lock:
            self.stopped = True
            if cause is not None and self.cause is None:
                self.cause = cause
                # A leader that exited by itself is not cut short, whatever it is sent now.
                self.cut = {pgid for pgid in self.live if not process.pid_exited(pgid)}
            for pgid in self.live:
                process.kill_group(pgid, signum)

    def close(self) -> None:
        """Stop, and let the watchdog go: it kills what is left, which no longer runs."""
        self.stop()
        with self.lock:
            watchdog, self.watchdog = self.watchdog, None
        if watchdog is not None:
            watchdog.close()


class Request:
    """process.Owner of the groups of one piece of work, in its registry."""

    __slots__ = ("groups", "killed")

    def __init__(self, groups: Groups) -> None:
        self.groups = groups
        self.killed = False

    def adopt(self, pgid: int) -> None:
        self.groups.adopt(pgid, self)

    def release(self, pgid: int) -> None:
        self.groups.release(pgid)


def stopped_by(owner: Owner, pgid: int | None = None) -> int | None:
    """The signal that stopped the work of `owner`'s registry (Groups.stop's cause), if one did;
    with `pgid`, only if that group was cut short by it. None for an owner that is no registry's
    (a watchdog, a caller's own)."""
    registry = owner.groups if isinstance(owner, Request) else owner
    if not isinstance(registry, Groups):
        return None
    with registry.lock:
        if registry.cause is None or (pgid is not None and pgid not in registry.cut):
            return None
        return registry.cause


@contextlib.contextmanager
def watched() -> Iterator[Groups]:
    """A registry for the block, with a watchdog that ends its groups should start be killed
    (none when none can start: the system is out of processes; the run goes on without one),
    closed at the block's end."""
    from start.proc.watchdog import Watchdog

    try:
        dog: Watchdog | None = Watchdog.start()
    except OSError:
        dog = None
    groups = Groups(dog)
    try:
        yield groups
    finally:
        groups.close()


@contextlib.contextmanager
def watching(owner: Owner | None = None) -> Iterator[Owner]:
    """`owner` when there is one (it answers for its groups); else a registry of the block's own
    (`watched`)."""
    if owner is not None:
        yield owner
        return
    with watched() as groups:
        yield groups


# --- the scheduler ---------------------------------------------------------------------------


class Job(Generic[R]):
    """One piece of work of a Workers: `work(request)`, whose outcome `future` holds."""

    __slots__ = ("future", "request", "work")

    def __init__(self, work: Callable[[Request], R], request: Request) -> None:
        from concurrent.futures import Future

        self.work = work
        self.request = request
        self.future: Future[R] = Future()

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return  # cancelled before it started
        try:
            result = self.work(self.request)
        except BaseException as error:  # the future holds it for whoever waits
            self.future.set_exception(error)
        else:
            self.future.set_result(result)


class Workers:
    """Jobs run in worker threads, `size` at once; the others wait their turn, in order.

    Each job has a request of its own in `groups`. The threads are daemons: a `start mcp` that
    stops does not wait for them (their groups are killed); who must wait for its jobs `join`s.
    Who must decide before a job waits submits it only when its turn has come: `start board run`
    claims an item only for a free thread, and `start mcp`'s calls wait their turn in its event
    loop, where a call cancelled with the others as the server ends leaves the queue at once.
    """

    def __init__(self, groups: Groups, size: int, name: str) -> None:
        self.groups = groups
        self.size = max(1, size)
        self.name = name  # its threads'
        self.lock = threading.Lock()
        self.waiting: deque[Job[Any]] = deque()
        self.running: set[Job[Any]] = set()
        self.stopped = False

    def submit(self, work: Callable[[Request], R]) -> Job[R]:
        """`work(request)` in a thread once one of the `size` is free (cancelled at once after
        `stop`)."""
        job = Job(work, self.groups.request())
        with self.lock:
            if self.stopped:
                _drop(job)
                return job
            if len(self.running) >= self.size:
                self.waiting.append(job)
                return job
            self.running.add(job)
        try:
            threading.Thread(target=self._serve, args=(job,), name=self.name, daemon=True).start()
        except BaseException:
            with self.lock:
                self.running.discard(job)
            raise
        return job

    def _serve(self, job: Job[Any] | None) -> None:
        """Run `job`, then the jobs waiting, one after another, until none waits."""
        while job is not None:
            job.run()
            with self.lock:
                self.running.discard(job)
                job = self.waiting.popleft() if self.waiting and not self.stopped else None
                if job is not None:
                    self.running.add(job)

    def cancel(self, job: Job[Any]) -> None:
        """A waiting job never starts; a running one's groups are killed, now and from now on (it
        ends on its own, and its outcome is its own)."""
        with self.lock:
            waiting = job in self.waiting
            if waiting:
                self.waiting.remove(job)
        if waiting:
            _drop(job)
        else:
            job.future.cancel()  # in case it is about to start
        self.groups.kill(job.request)

    def stop(self, grace: float = 0.0, cause: int | None = None) -> None:
        """No job starts any more, and every group of the registry ends: SIGTERM, up to `grace`
        seconds for the running jobs to end, then SIGKILL (at once without a grace). A group
        that starts meanwhile is killed as it starts. `cause`: the signal that stopped the work,
        as for Groups.stop."""
        from concurrent.futures import wait

        with self.lock:
            self.stopped = True
            waiting, self.waiting = list(self.waiting), deque()
            running = [job.future for job in self.running]
        for job in waiting:
            _drop(job)
        if grace > 0:
            self.groups.stop(signal.SIGTERM, cause)
            wait(running, timeout=grace)
        self.groups.stop(cause=cause)

    def join(self) -> None:
        """Wait until every job submitted has ended (or was cancelled)."""
        from concurrent.futures import wait

        with self.lock:
            jobs = [job.future for job in (*self.running, *self.waiting)]
        wait(jobs)


def _drop(job: Job[Any]) -> None:
    """Cancel a job that will never start, and tell who waits for it (concurrent.futures.wait
    counts a cancelled future as done only once it is told: set_running_or_notify_cancel)."""
    job.future.cancel()
    job.future.set_running_or_notify_cancel()
