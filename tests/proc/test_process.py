"""start.proc.process: a child in a session of its own, awaited without being reaped, its group ended
with SIGTERM, a grace, then SIGKILL, and its owner told before it is reaped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from start.proc import process
from tests.conftest import NOTING, running

# One that ignores SIGTERM, and leaves a child (which inherits that) in its group.
STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
open(sys.argv[1], "a").write(f"ready {child.pid}\\n")
time.sleep(300)
"""


def unreaped(pid: int) -> bool:
    """Whether `pid` is a child of this process that is not reaped yet (running or a zombie)."""
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


class Told:
    """An owner that notes what it is told, and whether the leader was unreaped then."""

    def __init__(self) -> None:
        self.told: list[tuple[str, int, bool]] = []

    def adopt(self, pgid: int) -> None:
        self.told.append(("adopt", pgid, unreaped(pgid)))

    def release(self, pgid: int) -> None:
        self.told.append(("release", pgid, unreaped(pgid)))


def read(path: Path) -> str:
    deadline = time.monotonic() + 30
    while not path.exists() or not path.read_text().endswith("\n"):
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.02)
    return path.read_text()


def spawn(tmp_path: Path, argv: list[str], owner: Told | None = None) -> process.Child:
    return process.spawn(
        argv, cwd=str(tmp_path), env=None, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, owner=owner,
    )  # fmt: skip


def test_end_gives_sigterm_then_the_grace_then_sigkill_and_tells_the_owner_first(
    tmp_path: Path,
) -> None:
    owner = Told()
    noting, stubborn = tmp_path / "noting", tmp_path / "stubborn"
    children = [
        spawn(tmp_path, [sys.executable, "-c", NOTING, str(noting)], owner),
        spawn(tmp_path, [sys.executable, "-c", STUBBORN, str(stubborn)], owner),
    ]
    read(noting)
    left_behind = int(read(stubborn).split()[1])

    process.end(children, grace=0.5)

    assert noting.read_text() == "ready\nSIGTERM\n"
    assert [child.returncode for child in children] == [0, -9]
    a, b = (child.pid for child in children)
    assert owner.told == [
        ("adopt", a, True), ("adopt", b, True), ("release", a, True), ("release", b, True)
    ]  # fmt: skip
    assert not unreaped(a) and not unreaped(b)
    deadline = time.monotonic() + 30
    while running(left_behind):  # its parent's end made it init's: it is reaped there
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_end_without_a_grace_kills_at_once(tmp_path: Path) -> None:
    stubborn = tmp_path / "stubborn"
    child = spawn(tmp_path, [sys.executable, "-c", STUBBORN, str(stubborn)])
    read(stubborn)

    process.end([child], grace=0)

    assert child.returncode == -9


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polled"])
def test_wait_returns_once_a_leader_has_exited_and_reaps_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfd: bool
) -> None:
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    quick = spawn(tmp_path, ["sh", "-c", "sleep 0.2; exit 3"])
    slow = spawn(tmp_path, ["sleep", "300"])
    try:
        while not quick.exited():
            process.wait([quick, slow], time.monotonic() + 60)
        assert (quick.watch() is not None) == pidfd
        assert unreaped(quick.pid) and quick.returncode is None
        assert not slow.exited()
    finally:
        process.end([quick, slow], grace=0)
    assert [child.returncode for child in (quick, slow)] == [3, -9]


def test_stdin_is_the_file_given_or_dev_null(tmp_path: Path) -> None:
    given = tmp_path / "prompt"
    given.write_text("the prompt\n")
    said = []
    for stdin in (str(given), None):
        out = tmp_path / "out"
        with out.open("wb") as file:
            child = process.spawn(
                ["sh", "-c", "cat; readlink /proc/self/fd/0"], cwd=str(tmp_path), env=None,
                stdout=file, stderr=file, stdin=stdin,
            )  # fmt: skip
        while not child.exited():
            process.wait([child], time.monotonic() + 60)
        assert child.reap() == 0
        said.append(out.read_text())

    assert said == [f"the prompt\n{given}\n", "/dev/null\n"]


def test_a_program_that_cannot_start_raises_and_leaves_no_descriptor(tmp_path: Path) -> None:
    given = tmp_path / "prompt"
    given.write_text("x")
    before = sorted(os.listdir("/proc/self/fd"))

    with pytest.raises(FileNotFoundError):
        process.spawn(
            [str(tmp_path / "missing")], cwd=str(tmp_path), env=None,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=str(given),
        )  # fmt: skip

    assert sorted(os.listdir("/proc/self/fd")) == before
