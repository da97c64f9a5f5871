"""The live state of the jobs of one run of several agents: each job's state and times, told by the
threads that run them (agentrun.State) and read by whoever shows them, the terminal's live board
(start.ui.display.Board) and `start mcp`'s progress notifications and ask_result (start.mcp.jobs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Final

from start.base.record import Record

# A job's first states (agentrun.run_agents): waiting for a free slot or for another run of its
# CLI, then running; any other state is an end (done, failed, timed out).
WAITING: Final = "waiting"
RUNNING: Final = "running"


class Job(Record):
    """One job as it stands: its name, its state, and the seconds it has run (None before it
    started); they stop counting when it ends."""

    name: str
    state: str
    seconds: float | None


class Progress:
    """Each job's state and the times it started and ended, in the order of `names`.

    `update` may be called from any thread; every read takes a consistent copy.
    """

    def __init__(self, names: Sequence[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.names = tuple(names)
        self.clock = clock
        self.began = clock()
        self._lock = threading.Lock()
        self._states = [WAITING] * len(self.names)
        self._started: list[float | None] = [None] * len(self.names)
        self._ended: list[float | None] = [None] * len(self.names)
        self._changed = True

    def update(self, index: int, state: str, elapsed: float = 0.0) -> None:
        """Job `index` is now in `state` (an agentrun.State; `elapsed` is not needed: the times
        are this record's own clock's)."""
        with self._lock:
            now = self.clock()
            self._states[index] = state
            if state == RUNNING:
                self._started[index] = now
            elif state != WAITING:
                self._ended[index] = now
            self._changed = True

    def jobs(self) -> list[Job]:
        with self._lock:
            now = self.clock()
            return [
                Job(
                    name,
                    state,
                    None if began is None else (now if ended is None else ended) - began,
                )
                for name, state, began, ended in zip(
                    self.names, self._states, self._started, self._ended, strict=True
                )
            ]

    def elapsed(self) -> float:
        """The seconds since the run began (since this record was made)."""
        return self.clock() - self.began

    def take_change(self) -> bool:
        """Whether a job's state changed since the last call (or the record was made)."""
        with self._lock:
            changed, self._changed = self._changed, False
            return changed
