"""Recording a run in the history: the one way every door does it, a launch just before its
exec, `--print` after its answer, start mcp's asking tools and `start board run` after each run.

    record(run, settings)     the run's pending file (start.runs.history.spool), and every
                              PENDING_LIMIT-th run the pending runs moved into the database

A pending file costs a run less than an insert into the database, in a fresh process (a launch)
and in one that records again (start mcp): benchmarks/recording.py measures both, and
docs/performance.md has its figures. A launch imports this module and start.runs.history only;
the database's code (start.runs.store, sqlite3) is imported only when the pending runs move in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from start.runs import history

if TYPE_CHECKING:
    from start.config.model import Settings
    from start.runs import Run


def record(run: Run, settings: Settings) -> str | None:
    """Record one run, unless `settings.history` is off: its pending file, and when `pending/`
    is full (or the run is large) every pending run moved into the database. The pending file's
    name, by which `start.runs.store.id_of` finds the run's id once it is in the database; None
    when the history is off. Raises HistoryError when the history cannot be written.

    When another process holds the database, the runs stay pending (start.runs.store.flush):
    they are recorded, and the next opening of the database moves them in.
    """
    written = history.spool(run, settings)
    if written is None:
        return None
    key, full = written
    if full:
        from start.runs import store

        store.flush()
    return key
