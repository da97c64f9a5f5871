"""start.proc.watchdog: the groups it was told of end once their owner is gone, however it went; with
SIGTERM and a grace when the owner was killed, with SIGKILL at once after `close`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from start.proc.watchdog import Watchdog
from tests.conftest import HANG, NOTING, REPO, running, wait_gone

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

# One that ignores SIGTERM.
STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1], "a").write("ready\\n")
time.sleep(300)
"""
# An owner that starts a watchdog, a group it names to it, and one it names and lets go; prints
# their pids, then waits to be killed.
OWNER = """
import subprocess, sys, time
from start.proc.watchdog import Watchdog
dog = Watchdog.start(grace=float(sys.argv[1]))
kept = subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[3]], start_new_session=True)
let_go = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                          start_new_session=True)
dog.adopt(kept.pid)
dog.adopt(let_go.pid)
dog.release(let_go.pid)
print(dog.pid, kept.pid, let_go.pid, flush=True)
time.sleep(300)
"""


def wait_ready(note: Path) -> None:
    deadline = time.monotonic() + HANG
    while not (note.exists() and note.read_text().startswith("ready\n")):
        assert time.monotonic() < deadline, "the group never got ready"
        time.sleep(0.02)


def killed_owner(
    tmp_path: Path, survivors: list[int], leader: str, grace: float
) -> tuple[int, int, int]:
    """Start OWNER with `leader` as its group, SIGKILL it once the group is ready; the pids of
    the watchdog, the group's leader, and the group it let go."""
    note = tmp_path / "note"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(grace), leader, str(note)],
        env=env, stdout=subprocess.PIPE,
    )  # fmt: skip
    survivors.append(owner.pid)
    assert owner.stdout is not None
    dog, kept, let_go = map(int, owner.stdout.readline().split())
    survivors += [kept, let_go]
    wait_ready(note)
    owner.kill()
    owner.wait()
    return dog, kept, let_go


def test_a_killed_owners_groups_get_sigterm_and_a_released_one_is_left(
    tmp_path: Path, survivors: list[int]
) -> None:
    dog, kept, let_go = killed_owner(tmp_path, survivors, NOTING, grace=60)
    assert wait_gone([kept, dog]) == []
    assert (tmp_path / "note").read_text() == "ready\nSIGTERM\n"
    assert running(let_go)


def test_a_group_that_ignores_sigterm_gets_sigkill_after_the_grace(
    tmp_path: Path, survivors: list[int]
) -> None:
    dog, kept, _ = killed_owner(tmp_path, survivors, STUBBORN, grace=0.5)
    assert wait_gone([kept, dog]) == []


def test_close_kills_what_is_still_listed_at_once_and_reaps_the_watchdog(
    tmp_path: Path, survivors: list[int]
) -> None:
    note = tmp_path / "note"
    dog = Watchdog.start(grace=60)
    survivors.append(dog.pid)
    group = subprocess.Popen([sys.executable, "-c", NOTING, str(note)], start_new_session=True)
    survivors.append(group.pid)
    wait_ready(note)
    dog.adopt(group.pid)
    dog.close()
    assert group.wait(timeout=30) == -signal.SIGKILL
    assert note.read_text() == "ready\n"
    with pytest.raises(ChildProcessError):
        os.waitpid(dog.pid, os.WNOHANG)
    dog.adopt(group.pid)  # after close: nothing to tell, and no error
    dog.close()


def test_the_watchdog_is_in_a_session_of_its_own_and_holds_no_pipe_of_the_caller(
    survivors: list[int],
) -> None:
    """A signal to start's process group misses it, and a caller reading start's stdout and
    stderr to their end never waits for it."""
    dog = Watchdog.start()
    survivors.append(dog.pid)
    try:
        assert os.getsid(dog.pid) == dog.pid != os.getsid(0)
        for fd in (1, 2):
            assert os.readlink(f"/proc/{dog.pid}/fd/{fd}") == os.devnull
    finally:
        dog.close()
