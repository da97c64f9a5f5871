"""Recording a run in the history: the one way every door does it, a launch just before its
exec, `--print` before it shows its answer, start mcp's asking tools and `start board run` after
each run.

    record(run, settings)     the run's pending file (start.runs.history.spool), under the id
                              reserved for it, and every PENDING_LIMIT-th run the pending runs
                              moved into the database (`move_in`: a door that shows an
                              answer moves them after it has shown it)

A pending file costs a run less than an insert into the database, in a fresh process (a launch)
and in one that records again (start mcp): benchmarks/recording.py measures both, and
docs/performance.md has its figures. Neither it nor the id waits for the database, which another
process may hold. A launch imports this module and start.runs.history only; the database's code
(start.runs.store, sqlite3) is imported only when the pending runs move in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from start.runs import history

if TYPE_CHECKING:
    from start.config.model import Settings
    from start.runs import Run
    from start.runs.history import Spooled


def record(run: Run, settings: Settings, *, flush: bool = True) -> Spooled | None:
    """Record one run, unless `settings.history` is off (None then): its pending file, with the
    id reserved for it (`start log show ID` finds it; None when none could be reserved, and the
    database gives it one), and when `pending/` is full (or the run is large) every pending run
    moved into the database, unless `flush` is off: the caller then calls `move_in()` when
    the result says it is `full`. Raises HistoryError when the history cannot be written.

    When another process holds the database, the runs stay pending (start.runs.store.flush):
    they are recorded, and the next opening of the database moves them in.
    """
    written = history.spool(run, settings)
    if written is not None and written.full and flush:
        move_in()
    return written


def move_in() -> None:
    """Move the pending runs into the database, unless another process holds it for long
    (start.runs.store.flush). Raises HistoryError for a history that cannot be used."""
    from start.runs import store

    store.flush()
