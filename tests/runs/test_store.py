"""The history's store across releases: named migrations, and a new field's column."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from start import runs
from start.base import sqlite
from start.config.model import Settings
from start.runs import history, recording
from start.runs import store as historydb
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "history-0.1.0"


def _install_fixture() -> Path:
    """The history that start 0.1.0 wrote, copied to where this start reads it."""
    target = Path(history.directory())
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(FIXTURE, target, ignore=shutil.ignore_patterns("README.md"))
    target.chmod(0o700)
    for path in target.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    return target


def test_a_history_of_release_0_1_0_opens_and_keeps_every_run(isolated: Path) -> None:
    _install_fixture()
    with historydb.opened() as store:
        found = store.runs()
    assert [(run.id, run.agent, run.mode, run.task, run.state, run.exit_code) for run in found] == [
        (8, "fake", "prompt", None, "ok", 0),  # the run 0.1.0 left pending
        (7, "fake", "prompt", None, "ok", 0),
        (6, "fake", "prompt", None, "ok", 0),
        (5, "launcher", "prompt", None, "launched", None),
        (4, "fake", "task", "data", "out of format", 0),
        (3, "fake", "prompt", None, "failed", 3),
        (2, "fake", "task", "hello", "ok", 0),
        (1, "fake", "prompt", None, "ok", 0),
    ]
    first = found[-1]
    assert (first.answer, first.instructions, first.argv[-1]) == (
        "ANSWER: first question",
        "first question",
        "first question",
    )
    assert first.args == ("prompt", "--print", "-q", "first question")
    assert first.request == {}  # 0.1.0 kept no parameters: `start again` says so
    assert found[4].answer is not None and found[4].answer.startswith("ANSWER: Give JSON")
    assert found[0].instructions == "left pending"
    with sqlite3.connect(history.database()) as connection:
        applied = [row[0] for row in connection.execute("SELECT name FROM migrations")]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
    assert applied == [name for name, _ in historydb.MIGRATIONS]
    assert version == len(historydb.MIGRATIONS)


def test_a_run_recorded_now_goes_beside_the_old_ones(isolated: Path) -> None:
    _install_fixture()
    run = runs.Run(
        time="t", at=1.0, cwd="/", workdir="/", project="/", mode="prompt", agent="a",
        prompt="p", role_text="", argv=("a", "p"), headless=True, state=runs.OK, answer="yes",
        denied=("Bash rm",), usage={"tokens": 3},
    )  # fmt: skip
    settings = _settings()
    # Its id is reserved above the database's last (7) as it is recorded; the run 0.1.0 left
    # pending, which reserved none, gets the next as it moves in.
    recorded = recording.record(run, settings)
    assert recorded is not None and recorded.id == 8
    with historydb.opened() as store:
        again = store.get(8)
        left = store.get(9)
    assert again == run._replace(id=8)
    assert (left.agent, left.state) == ("fake", runs.OK)


def test_a_database_of_a_newer_release_is_refused(isolated: Path) -> None:
    _install_fixture()
    with historydb.opened():
        pass
    with sqlite3.connect(history.database()) as connection:
        connection.execute("INSERT INTO migrations VALUES ('m999_future', 'then')")
        connection.execute(f"PRAGMA user_version = {len(historydb.MIGRATIONS) + 1}")
    with pytest.raises(history.HistoryError) as raised, historydb.opened():
        pass
    assert str(raised.value) == (
        f"{history.database()} was written by a newer start (its history has migrations this "
        "one does not know); upgrade start, or move the file away"
    )


def test_a_field_added_to_the_record_gets_its_column_and_old_rows_its_default(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new field is one line in start.runs: the column is added when the database is
    opened, and the rows before it read as the field's default."""
    _install_fixture()
    with historydb.opened():
        pass
    with sqlite3.connect(history.database()) as connection:
        connection.execute("ALTER TABLE runs DROP COLUMN denied")
        assert "denied" not in sqlite.columns(connection, "runs")
    with historydb.opened() as store:
        assert store.get(1).denied == ()
    with sqlite3.connect(history.database()) as connection:
        assert "denied" in sqlite.columns(connection, "runs")


def test_every_field_of_a_run_has_a_kind() -> None:
    assert {name: runs.Run.__annotations__[name] in runs.KINDS for name in runs.Run._fields} == {
        name: True for name in runs.Run._fields
    }


def _settings() -> Settings:
    return Settings()
