"""The record of a run's jobs (start.ui.progress), told from the threads that run them, and the two
views that read it: the terminal's live board (start.ui.display.Board) and `start mcp`'s progress
(start.mcp.jobs)."""

from __future__ import annotations

import io
import threading

import pytest

from start.ui.progress import Job, Progress


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_each_job_counts_from_its_start_to_its_end() -> None:
    clock = Clock()
    progress = Progress(["claude", "gemini", "codex"], clock)
    assert progress.jobs() == [
        Job("claude", "waiting", None),
        Job("gemini", "waiting", None),
        Job("codex", "waiting", None),
    ]
    clock.now = 101.0
    progress.update(0, "running", 1.0)
    progress.update(1, "running", 1.0)
    clock.now = 104.0
    progress.update(0, "done", 4.0)
    clock.now = 110.0
    progress.update(1, "timed out", 10.0)
    clock.now = 200.0
    assert progress.jobs() == [
        Job("claude", "done", 3.0),
        Job("gemini", "timed out", 9.0),
        Job("codex", "waiting", None),
    ]
    assert progress.elapsed() == 100.0


def test_a_change_is_taken_once() -> None:
    progress = Progress(["a"])
    assert progress.take_change() is True  # the first state is news
    assert progress.take_change() is False
    progress.update(0, "running", 0.0)
    assert (progress.take_change(), progress.take_change()) == (True, False)


def test_threads_tell_it_at_once() -> None:
    progress = Progress([f"job{n}" for n in range(8)])
    go = threading.Barrier(8)

    def work(index: int) -> None:
        go.wait()
        for state in ("running", "done"):
            progress.update(index, state, 0.0)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [job.state for job in progress.jobs()] == ["done"] * 8


def test_the_terminal_board_and_mcp_read_the_same_record(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp")
    from start.mcp import jobs
    from start.ui.display import Board, rich_console

    clock = Clock()
    progress = Progress(["claude", "gemini"], clock)
    board = Board(["claude", "gemini"], io.StringIO(), progress=progress)
    clock.now = 101.0
    board.update(0, "running", 1.0)
    clock.now = 113.4
    board.update(0, "failed", 13.4)
    board.update(1, "running", 13.4)
    clock.now = 120.0
    out = io.StringIO()
    rich_console(out, color=False, width=80).print(board.render())
    assert out.getvalue() == "  claude  failed      12 s\n  gemini  running      7 s\n"
    assert jobs.message(progress) == "claude: failed, gemini: running (20 s)"
    assert jobs.states(progress) == [
        {"agent": "claude", "state": "failed"},
        {"agent": "gemini", "state": "running"},
    ]
