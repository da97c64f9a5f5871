"""Run ids for scripts (issue 49): `start prompt --print --json | jq .id` gives the id of the run
it made, which `start log show` finds, in real processes (several at once too), through a real
shell and jq; an id is reserved as the run is recorded, so neither a database another process
holds nor a stopped holder of the ids' lock delays the answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from start import runs as records
from start.config.model import Settings
from start.runs import history, recording
from start.runs import store as historydb
from tests.cli.test_log import LOCKER, runs, shown
from tests.conftest import REPO, run_start, write_tree
from tests.fake_headless import agent


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    config = f'[settings]\ndefault_agent = "fake"\n{agent("fake")}'
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": config})
    return isolated


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_json_piped_to_jq_gives_an_id_that_log_show_finds(project: Path) -> None:
    """Six runs at once, each `start -q prompt --print --json WORD | jq .id` in a shell."""
    script = (
        "for word in one two three four five six; do\n"
        '  "$PY" -m start -q prompt --print --json "$word" | jq .id > "ids.$word" &\n'
        "done\n"
        "wait\n"
    )
    env = {**os.environ, "PY": sys.executable, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["/bin/sh", "-c", script], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stderr) == (0, "")
    words = ("one", "two", "three", "four", "five", "six")
    ids = {word: (project / f"ids.{word}").read_text() for word in words}
    assert all(text.strip().isdigit() for text in ids.values()), ids
    assert sorted(int(text) for text in ids.values()) == list(range(1, 7))
    for word, text in ids.items():
        found = run_start("log", "show", text.strip(), "--json", cwd=project)
        assert found.returncode == 0, found.stderr
        record = json.loads(found.stdout)
        assert (record["id"], record["instructions"], record["answer"]) == (
            int(text),
            word,
            f"ANSWER: {word}",
        )


def test_the_id_is_the_runs_through_every_door(project: Path) -> None:
    """--print --json's id, start again's and continue's (after other runs, so an id that
    `start log`'s latest only happened to match would not pass)."""
    first = json.loads(run_start("-q", "prompt", "--print", "--json", "a", cwd=project).stdout)
    launch = run_start("-q", "prompt", "a launch", cwd=project)
    assert launch.returncode == 0, launch.stderr
    again = json.loads(run_start("-q", "again", str(first["id"]), "--json", cwd=project).stdout)
    assert (first["id"], again["id"]) == (1, 3)
    assert [run["id"] for run in runs()] == [3, 2, 1]
    assert shown(3)["answer"] == again["answer"] == "ANSWER: a"


HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""


def test_a_stopped_holder_of_the_ids_costs_the_id_only(project: Path) -> None:
    """A process that holds the lock of the ids (one stopped while it reserved one) never holds
    the answer: it is printed without an id, the run is recorded, and the database gives it the
    next id as it moves it in."""
    assert run_start("-q", "prompt", "--print", "first", cwd=project).returncode == 0
    ids = os.path.join(history.directory(), history.IDS)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, ids],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        result = run_start("-q", "prompt", "--print", "--json", "second", cwd=project)
        assert (result.returncode, result.stderr) == (0, "")
        assert holder.poll() is None  # start ended while the lock was held
    finally:
        holder.communicate("")
    printed = json.loads(result.stdout)
    assert (printed["answer"], printed["id"]) == ("ANSWER: second", None)
    assert [(run["id"], run["instructions"]) for run in runs()] == [(2, "second"), (1, "first")]
    third = json.loads(run_start("-q", "prompt", "--print", "--json", "3", cwd=project).stdout)
    assert third["id"] == 3 and shown(3)["instructions"] == "3"


def test_a_locked_database_does_not_cost_the_id(project: Path) -> None:
    assert run_start("-q", "prompt", "--print", "first", cwd=project).returncode == 0
    assert len(runs()) == 1  # the database exists
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, history.database()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline() == "locked\n"
        result = run_start("-q", "prompt", "--print", "--json", "second", cwd=project)
        assert (result.returncode, result.stderr) == (0, "")
    finally:
        locker.communicate("")
    assert json.loads(result.stdout)["id"] == 2
    assert shown(2)["instructions"] == "second"


def _run(word: str) -> records.Run:
    return records.Run(
        time="t", at=1.0, cwd="/", workdir="/", project="/p", mode="prompt", agent="a",
        prompt=word, role_text="", argv=("a",), headless=True, instructions=word,
    )  # fmt: skip


def test_threads_that_record_at_once_get_an_id_each(isolated: Path) -> None:
    """start mcp and start board run record from several threads: flock, a lock of each open
    file, keeps them apart as it keeps processes apart."""

    def record(index: int) -> int | None:
        found = recording.record(_run(f"r{index}"), Settings())
        return None if found is None else found.id

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(record, range(80)))
    assert sorted(i for i in ids if i is not None) == list(range(1, 81))
    with historydb.opened() as store:
        found = {run.id: run.instructions for run in store.runs()}
    assert found == {i: f"r{index}" for index, i in enumerate(ids)}


def test_no_id_is_given_twice_when_the_counter_is_lost_or_behind(isolated: Path) -> None:
    """The counter removed while pending runs hold ids starts above them and the database's; a
    run whose id another took meanwhile (an earlier release gives ids of its own) is kept under
    the next."""
    settings = Settings()
    for word in ("a", "b"):
        recording.record(_run(word), settings)
    with historydb.opened():
        pass  # a and b are in: 1 and 2
    pending = [recording.record(_run(word), settings) for word in ("c", "d")]
    assert [found.id for found in pending if found is not None] == [3, 4]
    os.unlink(os.path.join(history.directory(), history.IDS))
    e = recording.record(_run("e"), settings)
    assert e is not None and e.id == 5  # above c and d, which wait in pending/
    import sqlite3

    with sqlite3.connect(history.database()) as connection:  # an earlier release's run
        connection.execute(
            "INSERT INTO runs (id, time, at, cwd, workdir, project, mode, agent, contexts,"
            " params, prompt, role_text, argv, headless, size) VALUES (6, 't', 1.0, '/', '/',"
            " '/p', 'prompt', 'old', '[]', '{}', 'p', '', '[]', 1, 10)"
        )
    f = recording.record(_run("f"), settings)  # reserved before the database is opened again
    assert f is not None and f.id == 6
    with historydb.opened() as store:
        found = {
            run.id: run.agent if run.agent == "old" else run.instructions for run in store.runs()
        }
    assert found == {1: "a", 2: "b", 3: "c", 4: "d", 5: "e", 6: "old", 7: "f"}
    g = recording.record(_run("g"), settings)
    assert g is not None and g.id == 8
