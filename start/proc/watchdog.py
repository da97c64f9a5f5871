"""The watchdog: a small process that ends the process groups `start` runs once `start` is gone,
however it went, SIGKILL included (the OOM killer, a CI job's kill).

`start` tells it each group over a pipe: `+PGID` when the group's leader has started, `-PGID`
just before the leader is reaped. Only `start` holds the pipe's write end (it is close-on-exec,
so no agent or command inherits it), so the kernel closes it when `start` ends. At end of file
the watchdog gives every group still listed SIGTERM, up to GRACE seconds (process.GRACE) to go,
then SIGKILL, as a headless agent's own timeout does (process.end); after `close`, which comes
from a `start` that has already dealt with its groups, it gives SIGKILL at once. (It cannot run
process.end itself: the groups' leaders are not its children, and it imports nothing of start.)

It runs in a session of its own (a signal to start's process group, as a terminal's Ctrl-C or
an MCP client sends, misses it), with stdout and stderr on /dev/null (it never holds a pipe the
caller of `start` waits on), as `python -I -S`: nothing but the standard library.

A registry of process groups (start.proc.groups) tells it of each group: `--print`'s, `start
mcp`'s and `start board run`'s. A launch, which execs the agent, never starts one
(tests/test_import_hygiene.py).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Final

from start.proc.process import GRACE

# argv[1]: the grace in seconds. A line "!" (from `close`) takes the grace away.
_SCRIPT: Final = """
import os, signal, sys, time
os.chdir("/")
grace = float(sys.argv[1])
groups = set()
for line in sys.stdin.buffer:
    if line[:1] == b"!":
        grace = 0.0
    elif line[:1] in (b"+", b"-"):
        (groups.add if line[:1] == b"+" else groups.discard)(int(line[1:]))
def tell(groups, signum):
    alive = set()
    for group in groups:
        try:
            os.killpg(group, signum)
        except OSError:
            continue
        alive.add(group)
    return alive
if grace > 0:
    groups = tell(groups, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while groups and time.monotonic() < deadline:
        time.sleep(0.05)
        groups = tell(groups, 0)
tell(groups, signal.SIGKILL)
"""


class Watchdog:
    """The running watchdog, and the write end of its pipe: a process.Owner (`adopt` and `release`
    tell it of a group), safe to use from several threads."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self._fd: int | None = fd
        self._lock = threading.Lock()

    @classmethod
    def start(cls, grace: float = GRACE) -> Watchdog:
        """Start one. Raises OSError when it cannot."""
        read, write = os.pipe()  # both close-on-exec: only the watchdog gets `read`, as stdin
        try:
            pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-I", "-S", "-c", _SCRIPT, repr(float(grace))],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                ],
                setsid=True,
            )
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        return cls(pid, write)

    def adopt(self, pgid: int) -> None:
        self._tell(f"+{pgid}\n")

    def release(self, pgid: int) -> None:
        self._tell(f"-{pgid}\n")

    def _tell(self, line: str) -> None:
        with self._lock:
            if self._fd is None:
                return
            # One line is far under PIPE_BUF: each write is whole, whatever other threads write.
            with contextlib.suppress(OSError):  # the watchdog is gone: nothing to tell
                os.write(self._fd, line.encode("ascii"))

    def close(self) -> None:
        """Let it go, and wait for it to end: it kills at once what is still listed (nothing,
        once every group was released)."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            with contextlib.suppress(OSError):
                os.write(fd, b"!\n")
            os.close(fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
