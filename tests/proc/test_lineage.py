"""start.proc.lineage: a run recorded by pid and start time gives its depth to every process under it,
and to no other, whatever the environment; from /proc, and from ps as on macOS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from start.base import paths
from start.proc import lineage
from start.proc.lineage import RegistryError
from start.runs import rules
from tests.conftest import REPO, running

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

# A child that prints its depth, reading the process tree as `mode` says, and the records in
# the directories given (the test's own: see private_directories).
CHILD = """
import json, sys
from start.proc import lineage
from start.runs import rules
if sys.argv[1] == "ps":
    lineage.has_proc = lambda: False
lineage.directories = lambda: json.loads(sys.argv[2])
print(lineage.depth(), rules.depth())
"""

DIRECTORIES = lineage.directories


@pytest.fixture(autouse=True)
def private_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records go to start's runtime directory (the test's own) and to /tmp/start-UID, which
    every start of this user shares: the user's runs and other test sessions. Here the second
    is the test's own too: a record written from ps names its start time as ps gives it, which
    a sweep from /proc takes for a reused pid (and the other way round), so two sessions of the
    suite at once swept each other's records, and the user's."""
    fallback = tmp_path / "tmp" / f"start-{os.getuid()}"
    found = [paths.runtime_dir(), str(fallback)]
    monkeypatch.setattr(lineage, "directories", lambda: found)


def test_records_go_to_the_runtime_directory_and_the_one_without_its_environment() -> None:
    assert DIRECTORIES() == list(dict.fromkeys([paths.runtime_dir(), paths.runtime_dir({})]))


@pytest.fixture(params=["proc", "ps"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The process tree from /proc (Linux) or from ps (as on macOS, where there is no /proc)."""
    if request.param == "ps":
        monkeypatch.setattr(lineage, "has_proc", lambda: False)
    return str(request.param)


def child_depth(mode: str, *, env: dict[str, str] | None = None) -> tuple[int, int]:
    """lineage.depth() and rules.depth() in a child of this process, with only `env` (and
    PYTHONPATH) for environment, as an MCP client starts its servers."""
    full = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], **(env or {})}
    full["PYTHONPATH"] = str(REPO)
    found = subprocess.run(
        [sys.executable, "-c", CHILD, mode, json.dumps(lineage.directories())],
        env=full, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    told, derived = found.stdout.split()
    return int(told), int(derived)


def records() -> list[str]:
    found = []
    for directory in lineage.directories():
        where = Path(directory) / lineage.DIRECTORY
        found += sorted(p.name for p in where.iterdir()) if where.is_dir() else []
    return found


@pytest.fixture
def clean() -> Iterator[None]:
    """The records this test's process leaves are its own to remove."""
    yield
    mine = f"{os.getpid()}-"
    for directory in lineage.directories():
        where = Path(directory) / lineage.DIRECTORY
        for path in where.glob(f"{mine}*") if where.is_dir() else []:
            path.unlink()


def test_a_run_gives_its_depth_to_the_processes_under_it_for_its_time(
    mode: str, clean: None
) -> None:
    assert child_depth(mode) == (0, 0)
    with lineage.registered(2):
        mine = [name for name in records() if name.startswith(f"{os.getpid()}-")]
        # In start's runtime directory, and in the one a start without XDG_RUNTIME_DIR finds.
        assert len(mine) == len(lineage.directories()) == 2
        assert child_depth(mode) == (2, 2)
        # Deeper still under a grandchild, and the deepest of two runs counts.
        with lineage.registered(1):
            assert child_depth(mode) == (2, 2)
    assert child_depth(mode) == (0, 0)
    assert not [name for name in records() if name.startswith(f"{os.getpid()}-")]


def test_the_depth_is_never_lower_than_start_mcp_depth_says(mode: str, clean: None) -> None:
    with lineage.registered(1):
        assert child_depth(mode, env={"START_MCP_DEPTH": "3"}) == (1, 3)
        assert child_depth(mode, env={"START_MCP_DEPTH": "0"}) == (1, 1)
        assert child_depth(mode, env={"START_MCP_DEPTH": "x"}) == (1, rules.UNREADABLE)


def test_a_record_counts_only_for_an_ancestor_with_the_recorded_start_time(
    mode: str, clean: None
) -> None:
    """A pid that another process has reused, and a process that is no ancestor, give nothing;
    the next run sweeps the records of processes that are gone."""
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    other = ""
    try:
        table = lineage._Table()  # ps lists the processes once: after the stranger started
        started = table.entry(os.getpid())
        theirs = table.entry(stranger.pid)
        assert started is not None
        assert theirs is not None
        reused = f"{os.getpid()}-1{started[1]}-5-0123abcd"  # this pid, another start time
        other = f"{stranger.pid}-{theirs[1]}-6-0123abcd"  # a live process, not an ancestor
        gone = f"{stranger.pid}-1{theirs[1]}-7-0123abcd"
        for directory in lineage.directories():
            where = Path(directory) / lineage.DIRECTORY
            where.mkdir(mode=0o700, parents=True, exist_ok=True)
            for name in (reused, other, gone):
                (where / name).touch()
        assert child_depth(mode) == (0, 0)
        with lineage.registered(1):
            assert child_depth(mode) == (1, 1)
            left = records()
            assert reused not in left and gone not in left
            assert other in left
    finally:
        stranger.kill()
        stranger.wait()
        for directory in lineage.directories():
            if other:
                (Path(directory) / lineage.DIRECTORY / other).unlink(missing_ok=True)


def test_ps_and_proc_see_the_same_ancestors() -> None:
    me = os.getpid()
    from_proc = lineage._Table().ancestors(me)
    table = lineage.ps_table()
    assert table[me][0] == os.getppid()
    walked: list[int] = []
    pid = me
    while pid in table and table[pid][0] > 0 and len(walked) < 100:
        pid = table[pid][0]
        walked.append(pid)
    assert walked == list(from_proc)
    assert all(len(table[pid][1]) == 14 and table[pid][1].isdigit() for pid in walked)


def test_the_names_of_records() -> None:
    assert lineage.parse("812-4711-1-0123abcd") == (812, "4711", 1)
    for name in (
        "812-4711-1",
        "812-4711-1-0123ABCD",
        "812-4711-x-0123abcd",
        "-4711-1-0123abcd",
        "812-４７-1-0123abcd",
        ".swept",
        "812-4711-1-0123abcd-1",
    ):
        assert lineage.parse(name) is None, name


def test_a_registry_that_is_not_private_stops_the_run(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A link planted at asking/ (or anything not a directory of this user's) is never used:
    the run does not start, and the message says where and how to fix it."""
    runtime = Path(paths.runtime_dir())
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (runtime / lineage.DIRECTORY).symlink_to(elsewhere)
    with pytest.raises(RegistryError) as raised, lineage.registered(1):
        pass
    assert str(raised.value) == (
        f"cannot record this run for the loop guard of start mcp in {runtime}/asking: it is "
        "not a directory owned by you; an unrecorded run could ask other agents in a loop, so "
        "it does not start. Remove it (ask an administrator if another user owns it): start "
        "makes it again, private"
    )
    assert list(elsewhere.iterdir()) == []
    assert not [name for name in records() if name.startswith(f"{os.getpid()}-")]


def test_the_registry_is_private(clean: None) -> None:
    with lineage.registered(1):
        for directory in lineage.directories():
            where = Path(directory) / lineage.DIRECTORY
            assert where.stat().st_mode & 0o777 == 0o700
            for record in where.glob(f"{os.getpid()}-*"):
                assert record.stat().st_mode & 0o777 == 0o600
                assert record.stat().st_size == 0
    assert running(os.getpid())
