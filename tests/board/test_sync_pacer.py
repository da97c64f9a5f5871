"""start.board.syncing.Pacer: the syncs of a command that waits, at most one every `every`
seconds however often it is asked, none without board_remote, and each failure told once per
distinct reason (the syncs themselves are test_sync_auto.py's, through the real git)."""

from __future__ import annotations

from typing import Any

import pytest

from start.board import syncing
from start.board.gitlog import OfflineError


def test_a_pacer_syncs_at_most_once_every_its_seconds_and_tells_each_reason_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]
    tried: list[float] = []
    reasons = iter(["down", "down", "down", "refused"])

    def failing(opened: Any, remote: str, level: str) -> Any:
        tried.append(now[0])
        raise OfflineError(next(reasons))

    monkeypatch.setattr(syncing, "sync", failing)
    warned: list[str] = []
    given = syncing.Setting("origin", "read-only")
    pacer = syncing.Pacer(given, warned.append, every=10.0, clock=lambda: now[0])
    board: Any = object()
    for step in range(0, 40):  # asked every half second for twenty seconds and more
        now[0] = step / 2
        pacer.tick(board)
    assert tried == [0.0, 10.0]
    now[0] = 20.0
    assert pacer.tick(board) and not pacer.tick(board)
    assert tried == [0.0, 10.0, 20.0]
    pacer.now(board)  # a finish to push: now, counted against the rate
    assert tried == [0.0, 10.0, 20.0, 20.0]
    tell = (
        "the board could not sync with 'origin': {}; what changed here is kept, and the next "
        "sync pushes it (start board sync)"
    )
    assert warned == [tell.format("down"), tell.format("refused")]


def test_without_board_remote_a_pacer_never_syncs(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(opened: Any, remote: str, level: str) -> Any:
        raise AssertionError("synced without board_remote")

    monkeypatch.setattr(syncing, "sync", never)
    pacer = syncing.Pacer(syncing.Setting(None, "read-only"), print, clock=lambda: 0.0)
    board: Any = object()
    assert pacer.tick(board) is False
    assert pacer.now(board) is None
