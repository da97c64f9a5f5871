"""start.agentrun: headless agents run from one loop on start.process (issue 38)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from start import agentrun
from start.agentrun import AgentJob
from tests.conftest import REPO, running

FAKE = REPO / "tests" / "fake_headless.py"


@pytest.fixture
def survivors() -> Iterator[list[int]]:
    """Pids a test saw; any still alive at the end are killed, so a failure leaves nothing."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def read_pids(path: Path, seconds: float = 30) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            return [int(pid) for pid in path.read_text().split()]
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


def wait_gone(pids: list[int], seconds: float = 30) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if running(pid)]
        if not alive:
            return []
        time.sleep(0.05)
    return alive


def job(
    tmp_path: Path, name: str, mode: str, key: str = "", timeout: float = 60, seconds: str = "1"
) -> AgentJob:
    """A stand-in agent run `name`, answering as FAKE_MODE `mode` says, its pids in p.NAME."""
    env = {
        **os.environ, "FAKE_MODE": mode, "FAKE_NAME": name, "FAKE_PIDS": str(tmp_path / "p"),
        "FAKE_SECONDS": seconds,
    }  # fmt: skip
    return AgentJob((sys.executable, str(FAKE), "hi"), env, str(tmp_path), timeout, key=key)


def test_a_job_waiting_for_its_key_leaves_its_slot_to_the_next(tmp_path: Path) -> None:
    told: list[tuple[int, str]] = []
    jobs = [
        job(tmp_path, "a", "text", key="k"),
        job(tmp_path, "b", "text", key="k"),
        job(tmp_path, "c", "text"),
    ]

    runs = agentrun.run_agents(jobs, cap=2, on_state=lambda i, s, _: told.append((i, s)))

    assert [r.stdout for r in runs] == ["ANSWER: hi\n"] * 3
    # c starts beside a at once, and b only once a has ended.
    assert told[:5] == [
        (0, "waiting"),
        (1, "waiting"),
        (2, "waiting"),
        (0, "running"),
        (2, "running"),
    ]
    assert told.index((1, "running")) > told.index((0, "done"))


def test_an_error_that_is_no_signal_ends_every_group_and_propagates(
    tmp_path: Path, survivors: list[int]
) -> None:
    jobs = [job(tmp_path, "a", "sleep"), job(tmp_path, "b", "sleep")]

    def told(index: int, state: str, elapsed: float) -> None:
        if (index, state) == (1, "running"):
            survivors.extend(read_pids(tmp_path / "p.a") + read_pids(tmp_path / "p.b"))
            raise RuntimeError("a bug in on_state")

    with pytest.raises(RuntimeError, match=r"^a bug in on_state$"):
        agentrun.run_agents(jobs, cap=2, on_state=told, grace=0.5)

    assert len(survivors) == 4
    assert wait_gone(survivors) == []


def test_a_timeout_ends_one_group_while_the_others_run_on(
    tmp_path: Path, survivors: list[int]
) -> None:
    jobs = [job(tmp_path, "a", "stubborn", timeout=1), job(tmp_path, "b", "slow", seconds="2")]

    late, slow = agentrun.run_agents(jobs, cap=2, grace=0.5)

    survivors.extend(read_pids(tmp_path / "p.a") + read_pids(tmp_path / "p.b"))
    assert (late.timed_out, late.returncode) == (True, None)
    assert (slow.timed_out, slow.returncode, slow.stdout) == (
        False,
        0,
        "b is thinking\nANSWER: hi from b\n",
    )
    assert wait_gone(survivors) == []


def test_no_group_is_signalled_after_its_leader_was_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, survivors: list[int]
) -> None:
    """Every kill goes to a group whose leader is still this process's unreaped child: else its
    id could be another process's by now. Here on every way a run ends: by itself leaving a
    child behind, at its timeout, and on SIGINT (sent by this test to its own process)."""
    signalled: list[tuple[int, int, bool]] = []
    killpg = os.killpg

    def recorded(pgid: int, signum: int) -> None:
        try:
            os.waitid(os.P_PID, pgid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            ours = True
        except ChildProcessError:
            ours = False
        signalled.append((pgid, signum, ours))
        killpg(pgid, signum)

    monkeypatch.setattr(os, "killpg", recorded)
    jobs = [
        job(tmp_path, "a", "leave-child"),
        job(tmp_path, "b", "sleep", timeout=1),
        job(tmp_path, "c", "sleep"),
    ]

    def interrupt() -> None:
        """SIGINT once a has ended (the child it left is killed) and b has timed out."""
        try:
            [left_behind], [b, _], _ = (read_pids(tmp_path / f"p.{name}") for name in "abc")
            deadline = time.monotonic() + 30
            while running(left_behind) or (b, signal.SIGTERM) not in [s[:2] for s in signalled]:
                assert time.monotonic() < deadline
                time.sleep(0.02)
        finally:
            os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=interrupt)
    sender.start()
    with pytest.raises(KeyboardInterrupt):
        agentrun.run_agents(jobs, cap=3, grace=0.5)
    sender.join()

    b, c = read_pids(tmp_path / "p.b")[0], read_pids(tmp_path / "p.c")[0]
    survivors.extend(pid for name in "abc" for pid in read_pids(tmp_path / f"p.{name}"))
    kills = {(pgid, signum) for pgid, signum, _ in signalled}
    assert kills >= {(b, signal.SIGTERM), (b, signal.SIGKILL), (c, signal.SIGTERM)}
    assert [kill for kill in signalled if not kill[2]] == []
    assert wait_gone(survivors) == []


def test_an_agent_that_cannot_start_fails_alone(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    alone = job(tmp_path, "a", "text")._replace(argv=(missing, "hi"))

    runs = agentrun.run_agents([alone, job(tmp_path, "b", "text")], cap=1)
    [only] = agentrun.run_agents([alone], cap=1)

    error = f"cannot start '{missing}': No such file or directory"
    assert [(r.returncode, r.stdout, r.error) for r in runs] == [
        (None, "", error),
        (0, "ANSWER: hi\n", None),
    ]
    assert (only.returncode, only.error) == (None, error)
