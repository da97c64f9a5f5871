"""The history of runs (issue 31): every launch and headless run recorded, `start log` and its
subcommands, and `start again`."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from start.runs import history, recording
from start.runs import store as historydb
from tests.cli.test_print import CONFIG as PRINT_CONFIG
from tests.conftest import FAKE_AGENT, invoke, launch, run_start, write_tree
from tests.hostile import Scene, approve, edit


def runs(*args: str) -> list[dict[str, Any]]:
    result = invoke("log", "--json", *args)
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def shown(run_id: int | None = None) -> dict[str, Any]:
    result = invoke("log", "show", *([str(run_id)] if run_id is not None else []), "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.fixture
def headless(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository whose global config has the headless fakes of test_print (`fake`,
    `json`) and the interactive fake agent (`launcher`)."""
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    launcher = (
        f'\n[agents.launcher]\nbin = "{FAKE_AGENT}"\n'
        "command = \"{bin} --model {model} '{prompt}'\"\n"
        'default_model = "s"\nmodels = { s = "sonnet-x" }\n'
    )
    write_tree(
        isolated.parent / "home" / ".config" / "start",
        {"config.toml": PRINT_CONFIG + launcher},
    )
    return isolated


def start(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_start("-q", *args, cwd=cwd, env=env)


# --- recording each kind of run -----------------------------------------------------------------


def test_a_launch_is_recorded_before_the_exec(repo: Path) -> None:
    proc, agent = launch(repo, "-q", "task", "--help")
    proc, agent = launch(repo, "-q", "prompt", "explain", "this")
    assert proc.returncode == 0 and agent is not None, proc.stderr
    [run] = runs()
    from start import runs as records

    # The listing is the record (start.runs) without its long texts, whatever fields it has.
    assert list(run) == [
        *(name for name in records.Run._fields if name not in records.LONG),
        *records.DERIVED,
    ]
    empty = {
        name: records.plain(default)
        for name, default in records.Run._field_defaults.items()
        if name not in records.LONG
    }
    assert run == {
        **empty,
        "time": run["time"],
        "at": run["at"],
        "cwd": str(repo),
        "workdir": str(repo),
        "project": str(repo),
        "mode": "prompt",
        "agent": "fake",
        "headless": False,
        "request": run["request"],
        "args": ["-q", "prompt", "explain", "this"],
        "model": "sonnet-x",
        "role": run["role"],
        "contexts": run["contexts"],
        "instructions": "explain this",
        "state": "launched",
        "id": 1,
        "success": False,
        "timed_out": False,
        "input_tokens": None,
        "output_tokens": None,
        "cost_usd": None,
    }
    assert (run["request"]["mode"], run["request"]["prompt"], run["request"]["headless"]) == (
        "prompt",
        "explain this",
        False,
    )
    full = shown(1)
    assert full["prompt"].endswith("explain this")
    assert full["instructions"] == "explain this"
    assert full["argv"] == [str(FAKE_AGENT), *agent["argv"]]
    assert full["answer"] is None


def test_a_headless_run_keeps_its_answer_status_duration_and_usage(headless: Path) -> None:
    result = start(headless, "prompt", "--print", "-a", "json", "hi", FAKE_MODE="result")
    assert result.returncode == 0, result.stderr
    failed = start(headless, "task", "review", "--print", "the diff", FAKE_MODE="fail")
    assert failed.returncode == 1
    second, first = runs()
    assert (first["agent"], first["state"], first["exit_code"], first["headless"]) == (
        "json",
        "ok",
        0,
        True,
    )
    assert first["usage"] == {
        "usage": {"input_tokens": 3, "output_tokens": 2},
        "total_cost_usd": 0.01,
    }
    assert first["duration"] > 0
    assert shown(first["id"])["answer"] == "ANSWER: hi"
    assert (second["task"], second["state"], second["exit_code"]) == ("review", "failed", 3)
    assert second["permissions"] == "read-only"
    detail = shown()
    assert detail["id"] == second["id"]
    assert detail["answer"] == ""
    assert detail["error"].startswith("exited with status 3")
    assert detail["stderr"] == "Error: unknown option '--bogus'"


def test_a_runs_at_is_when_it_began_the_moment_of_its_time(headless: Path, tmp_path: Path) -> None:
    """`time` and `at` are one moment, when the run began: before its agent started, not when
    it ended (the agent notes when it began and ended)."""
    from datetime import datetime

    noted = tmp_path / "noted"
    result = start(
        headless, "prompt", "--print", "hi", FAKE_MODE="slow", FAKE_SECONDS="0.5",
        FAKE_LOG=str(noted),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [run] = runs()
    _, began, ended = noted.read_text().split()
    assert run["at"] == datetime.fromisoformat(run["time"]).timestamp()
    assert run["at"] <= float(began) < float(ended)


def test_times_are_shown_in_the_viewers_zone_and_json_keeps_the_recorded_one(
    headless: Path,
) -> None:
    """A run recorded by a process in UTC (`start mcp` under an editor, a CI job), listed where
    the zone is UTC+9: one convention, local time, in the listing and on the run's page."""
    from datetime import datetime, timedelta

    assert start(headless, "prompt", "--print", "hi", TZ="UTC0").returncode == 0
    [run] = json.loads(start(headless, "log", "--json", TZ="XYZ-9").stdout)
    assert run["time"].endswith("+00:00")
    there = datetime.fromisoformat(run["time"]) + timedelta(hours=9)
    listed = start(headless, "log", TZ="XYZ-9", COLUMNS="200").stdout.splitlines()
    assert listed[1].split()[:3] == ["1", f"{there:%Y-%m-%d}", f"{there:%H:%M}"]
    page = start(headless, "log", "show", "--no-pager", TZ="XYZ-9").stdout
    assert page.startswith(f"run 1  {there:%Y-%m-%d %H:%M:%S}\n")


def test_an_answer_out_of_the_tasks_format_is_not_called_failed(headless: Path) -> None:
    config = headless.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(config.read_text() + '\n[tasks.data]\nprompt = "Data."\noutput = "json"\n')
    prose = start(headless, "task", "data", "--print", FAKE_MODE="say", FAKE_ANSWER="It is high.")
    assert prose.returncode == 65
    assert start(headless, "task", "data", "--print", FAKE_MODE="fail").returncode == 1
    failed, mismatched = runs()
    assert (mismatched["state"], failed["state"]) == ("out of format", "failed")
    listing = invoke("log").stdout.splitlines()
    assert re.search(r"  failed \(\d+\.\d s\)$", listing[1]), listing
    assert re.search(r"  out of format \(\d+\.\d s\)$", listing[2]), listing
    assert "  outcome      out of format, exit status 0, " in invoke("log", "show", "1").stdout


def test_each_agent_of_several_is_a_run(headless: Path) -> None:
    result = start(headless, "prompt", "--print", "-a", "fake,json", "hi", FAKE_MODE="result")
    assert result.returncode == 0  # `fake` reads text: the JSON object is its answer
    found = runs()
    assert [(r["agent"], r["args"]) for r in found] == [
        ("json", ["-q", "prompt", "--print", "-a", "fake,json", "hi"]),
        ("fake", ["-q", "prompt", "--print", "-a", "fake,json", "hi"]),
    ]


def test_a_dry_run_is_not_recorded(headless: Path) -> None:
    for args in (("prompt", "x", "--dry-run"), ("prompt", "--print", "-a", "fake,json", "x")):
        assert start(headless, *args, "--dry-run").returncode == 0
    assert runs() == []
    assert invoke("log").stderr == "No runs are recorded.\n"


def test_history_false_records_nothing(headless: Path) -> None:
    config = headless.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(config.read_text().replace("[settings]", "[settings]\nhistory = false"))
    assert start(headless, "prompt", "-a", "launcher", "x").returncode == 0
    assert start(headless, "prompt", "--print", "x").returncode == 0
    assert runs() == []
    assert not os.path.exists(history.directory())


def test_a_project_may_turn_the_history_off_but_not_on(headless: Path) -> None:
    config = headless.parent / "home" / ".config" / "start" / "config.toml"
    write_tree(headless, {".start/config.toml": "[settings]\nhistory = false\n"})
    assert start(headless, "prompt", "--print", "x").returncode == 0
    assert runs() == []
    config.write_text(config.read_text().replace("[settings]", "[settings]\nhistory = false"))
    write_tree(headless, {".start/config.toml": "[settings]\nhistory_size_limit = 1\n"})
    result = invoke("config", "validate")
    assert (
        f"{headless}/.start/config.toml:2:1: warning: settings.history_size_limit: the history "
        "is yours: a project may set history = false, but nothing else about it, so this is "
        "ignored (set it in your global config)\n"
    ) in result.stdout


# --- nothing lost when runs end together ---------------------------------------------------------


def test_parallel_runs_lose_nothing(headless: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    commands = [
        *(["prompt", "-a", "launcher", f"launch {i}"] for i in range(10)),
        *(["prompt", "--print", f"print {i}"] for i in range(6)),
    ]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "start", "-q", *args],
            cwd=headless,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for args in commands
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    found = runs("-n", "100")
    assert sorted(r["instructions"] for r in found) == sorted(args[-1] for args in commands)
    assert len({r["id"] for r in found}) == len(commands)
    assert os.listdir(os.path.join(history.directory(), history.PENDING)) == []


_WRITER = """
import sys
from start.runs import history, store as historydb
data = {
    "format": history.FORMAT, "time": "t", "at": 1.0, "cwd": "/", "workdir": "/",
    "project": "/p", "args": ["prompt", sys.argv[1]], "mode": "prompt", "task": None,
    "agent": "a", "model": None, "role": None, "contexts": [], "params": {},
    "instructions": sys.argv[1], "prompt": "p" * 5000, "role_text": "", "argv": ["a"],
    "headless": False, "permissions": None, "limit": 1 << 30,
}
for index in range(5):
    history._write({**data, "instructions": f"{sys.argv[1]}-{index}"})
    with historydb.opened():
        pass  # each process moves the pending runs in while the others write theirs
"""


def test_a_lone_surrogate_in_a_prompt_is_kept_as_a_replacement(isolated: Path) -> None:
    """An MCP caller's JSON can hold "\\ud800": such a run broke every flush of the history
    for good (UnicodeEncodeError)."""
    data = {
        "format": history.FORMAT, "time": "t", "at": 1.0, "cwd": "/", "workdir": "/",
        "project": "/p", "args": None, "mode": "prompt", "task": None, "agent": "a",
        "model": None, "role": None, "contexts": [], "params": {},
        "instructions": "x\ud800y\udc80", "prompt": "p\udfff", "role_text": "", "argv": ["a"],
        "headless": False, "permissions": None, "limit": 1 << 30,
    }  # fmt: skip
    history._write(data)
    with historydb.opened() as store:
        (run,) = store.runs()
    assert (run.instructions, run.prompt) == ("x\ufffdy\udc80", "p\ufffd")


def test_writers_that_move_runs_in_at_once_lose_and_repeat_nothing(isolated: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    processes = [
        subprocess.Popen([sys.executable, "-c", _WRITER, f"w{i}"], env=env, stderr=subprocess.PIPE)
        for i in range(8)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    found = sorted(r["instructions"] for r in runs("-n", "100"))
    assert found == sorted(f"w{i}-{j}" for i in range(8) for j in range(5))


def test_many_launches_move_themselves_into_the_database(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a `start log`, the pending files stay few: a launch moves them in."""
    monkeypatch.setattr(history, "PENDING_LIMIT", 3)
    from start.cli import run
    from start.cli.state import Options
    from start.compose import pipeline

    full = []
    for word in ("a", "b", "c", "d"):
        prepared = pipeline.prepare(_prompt(word, repo), build=True)
        # what a launch calls
        run.record(Options(argv=["prompt", word]), begun(prepared), prepared.config)
        prepared.launch.cleanup()
        pending = os.path.join(history.directory(), history.PENDING)
        full.append(len(os.listdir(pending)))
    assert full == [1, 2, 0, 1]  # the third filled pending/, and was moved in with the others
    assert [r["args"] for r in runs()] == [["prompt", w] for w in "dcba"]


def test_recording_writes_a_pending_file_and_a_full_pending_is_moved_in(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # start.runs.recording.record, the one way every door records a run, writes a file (a launch
    # imports nothing more) named by the key it returns, and moves pending/ into the database
    # once it holds PENDING_LIMIT runs.
    monkeypatch.setattr(history, "PENDING_LIMIT", 2)
    from start.compose import pipeline

    prepared = pipeline.prepare(_prompt("a", repo), build=False)
    pending = os.path.join(history.directory(), history.PENDING)
    settings = prepared.config.settings
    launched = begun(prepared)
    first = recording.record(launched, settings)
    assert first is not None and os.listdir(pending) == [first.key]
    recording.record(launched, settings)
    assert os.listdir(pending) == []
    assert len(runs()) == 2
    recording.record(launched, settings)
    assert len(os.listdir(pending)) == 1
    assert recording.record(launched, settings._replace(history=False)) is None
    assert len(runs()) == 3


LOCKER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()  # until the test closes it
"""


def test_a_locked_history_never_holds_an_answer(headless: Path) -> None:
    """Another process holds history.db while the run that fills pending/ ends: the answer is
    printed, with its id, the run stays pending, and start exits while the lock is still held,
    with no warning; the next flush moves every run in, each under the id it was given."""
    import marshal

    assert start(headless, "prompt", "--print", "first").returncode == 0
    assert [r["instructions"] for r in runs()] == ["first"]  # the database exists
    assert start(headless, "prompt", "--print", "second").returncode == 0
    pending = Path(history.directory()) / history.PENDING
    (spooled,) = pending.iterdir()
    data = marshal.loads(spooled.read_bytes())
    for _ in range(history.PENDING_LIMIT - 2):  # as many runs, each with an id of its own
        history._write({**data, "id": None})
    assert len(list(pending.iterdir())) == history.PENDING_LIMIT - 1
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, history.database()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline() == "locked\n"
        result = start(headless, "prompt", "--print", "third")
        assert (result.returncode, result.stdout, result.stderr) == (0, "ANSWER: third\n", "")
        assert locker.poll() is None  # start ended while the lock was held
        assert len(list(pending.iterdir())) == history.PENDING_LIMIT
        fourth = start(headless, "prompt", "--print", "--json", "fourth")
        assert (fourth.returncode, fourth.stderr) == (0, "")
        assert locker.poll() is None
    finally:
        locker.communicate("")
    printed = json.loads(fourth.stdout)
    assert (printed["answer"], printed["id"]) == ("ANSWER: fourth", history.PENDING_LIMIT + 2)
    assert [r["instructions"] for r in runs()][:3] == ["fourth", "third", "second"]
    assert shown(printed["id"])["instructions"] == "fourth"
    assert len(runs("-n", "100")) == history.PENDING_LIMIT + 2
    assert list(pending.iterdir()) == []


@pytest.mark.parametrize("agents", ["fake", "fake,fake"])
def test_the_answer_is_shown_after_its_pending_file_and_before_the_database(
    headless: Path, monkeypatch: pytest.MonkeyPatch, agents: str
) -> None:
    """The run is recorded (its pending file, its id) before its answer is printed, and the
    pending runs move into the database (a database another process may hold) after."""
    monkeypatch.setattr(history, "PENDING_LIMIT", 1)  # every run moves the pending runs in
    seen: dict[str, list[str]] = {"record": [], "move in": []}
    spool, move_in = recording.record, recording.move_in

    def printed(when: str) -> None:
        sys.stdout.flush()
        seen[when].append(sys.stdout.buffer.getvalue().decode())  # type: ignore[union-attr]

    def record(*args: Any, **kwargs: Any) -> Any:
        printed("record")
        return spool(*args, **kwargs)

    def moving_in() -> None:
        printed("move in")
        move_in()

    monkeypatch.setattr(recording, "record", record)
    monkeypatch.setattr(recording, "move_in", moving_in)
    result = invoke("-q", "prompt", "--print", "--json", "-a", agents, "hi")
    assert result.exit_code == 0, result.stderr
    several = len(agents.split(","))
    assert seen == {"record": [""] * several, "move in": [result.stdout]}
    found = json.loads(result.stdout)
    ids = [run["id"] for run in (found if several > 1 else [found])]
    assert ids == list(range(1, several + 1))
    assert [shown(i)["answer"] for i in ids] == ["ANSWER: hi"] * several


def test_a_history_that_is_not_a_database_says_how_to_start_again(headless: Path) -> None:
    """`start log`, and the run that finds pending/ full, name what is wrong and the fix; the
    runs recorded meanwhile are kept, and go into the new history."""
    from start.compose import pipeline

    assert start(headless, "prompt", "--print", "a").returncode == 0
    assert len(runs()) == 1
    database = Path(history.database())
    database.write_bytes(b"not a database\n" * 300)
    proc = start(headless, "prompt", "--print", "b")  # kept in pending/, which is not full
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "ANSWER: b\n", "")
    aside = f"mv {database} {database}.broken"
    message = (
        f"start: {database} is not a history start can read (file is not a database); move it "
        f"aside ({aside}), and the next command starts a new history with the runs kept "
        "meanwhile\n"
    )
    result = invoke("log")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", message)
    request = _prompt("meanwhile", headless)
    prepared = pipeline.prepare(request, build=False)
    for _ in range(history.PENDING_LIMIT - 2):  # pending/ holds b: one short of full
        recording.record(begun(prepared), prepared.config.settings)
    with pytest.raises(history.HistoryError) as full:  # kept, then not moved in
        recording.record(begun(prepared), prepared.config.settings)
    assert f"start: {full.value}\n" == message
    proc = start(headless, "prompt", "--print", "c")
    assert (proc.returncode, proc.stderr) == (
        0,
        message.replace("start: ", "start: warning: this run is not in the history: ", 1),
    )
    subprocess.run(aside, shell=True, check=True)
    kept = [r["instructions"] for r in runs("-n", "100")]
    assert kept == ["c", *["meanwhile"] * (history.PENDING_LIMIT - 1), "b"]


def test_a_run_is_recorded_under_the_id_reserved_for_it(repo: Path) -> None:
    """recording.record gives the run's id before the database has it (start board run names it
    on its item, --print --json prints it): the id `start log show` takes, once moved in."""
    from start.compose import pipeline

    prepared = pipeline.prepare(_prompt("a", repo), build=False)
    settings = prepared.config.settings
    ids = [recording.record(begun(prepared), settings) for _ in range(3)]
    assert [(found.id, found.full) for found in ids if found is not None] == [
        (1, False),
        (2, False),
        (3, False),
    ]
    assert [run["id"] for run in runs()] == [3, 2, 1]
    assert shown(3)["prompt"] == prepared.composition.prompt
    assert recording.record(begun(prepared), settings._replace(history=False)) is None
    assert len(runs()) == 3


def begun(prepared: Any) -> Any:
    """The run of a prepared launch, as a launch records it."""
    from start import runs as records

    return records.begun(prepared, headless=False)


def _prompt(text: str, where: Path) -> Any:
    from start.compose.ask import Ask

    return Ask(prompt=text, directory=str(where))


# --- the size cap, clear -------------------------------------------------------------------------


def test_the_size_cap_trims_the_oldest_runs(headless: Path) -> None:
    assert start(headless, "prompt", "-a", "launcher", "0" * 1000).returncode == 0
    with historydb.opened() as store:
        (size,) = store.connection.execute("SELECT size FROM runs WHERE id = 1").fetchone()
    assert size > 4000  # the words are in the prompt, the command, the args and the text
    config = headless.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(
        config.read_text().replace(
            "[settings]", f"[settings]\nhistory_size_limit = {size * 5 // 2}"
        )
    )
    for index in range(1, 6):
        assert start(headless, "prompt", "-a", "launcher", f"{index}" * 1000).returncode == 0
    assert [r["id"] for r in runs()] == [6, 5]


def test_a_run_that_cannot_fit_the_cap_is_not_kept(headless: Path) -> None:
    config = headless.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(
        config.read_text().replace("[settings]", "[settings]\nhistory_size_limit = 10")
    )
    for word in ("first", "second"):
        assert start(headless, "prompt", "--print", word).returncode == 0
    assert runs() == []  # a run's names and paths alone are more than 10 bytes


def test_clear_all_and_before_a_date(headless: Path) -> None:
    for word in ("a", "b", "c"):
        assert start(headless, "prompt", "--print", word).returncode == 0
    with historydb.opened() as store:
        store.connection.execute("UPDATE runs SET at = 0 WHERE id = 1")  # the epoch: 1970
    result = invoke("log", "clear", "--before", "2000-01-01", "--yes")
    assert (result.exit_code, result.stderr) == (0, "Deleted 1 run from the history.\n")
    assert [r["id"] for r in runs()] == [3, 2]
    result = invoke("log", "clear", "--json", "-y")
    assert (result.exit_code, json.loads(result.stdout)) == (0, {"deleted": 2})
    assert runs() == []
    assert start(headless, "prompt", "--print", "d").returncode == 0
    assert [r["id"] for r in runs()] == [4]  # ids are never reused


def test_clear_asks_on_a_terminal_and_needs_yes_without_one(headless: Path) -> None:
    from tests.terminal import run_on_terminal

    for word in ("a", "b"):
        assert start(headless, "prompt", "--print", word).returncode == 0
    assert len(runs()) == 2
    proc = start(headless, "log", "clear")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2,
        "",
        "start: not deleting every recorded run without confirmation; pass --yes\n",
    )
    proc = start(headless, "log", "clear", "--before", "2100-01-01")
    assert (proc.returncode, proc.stderr) == (
        2,
        "start: not deleting the runs before 2100-01-01 without confirmation; pass --yes\n",
    )
    assert len(runs()) == 2
    question = f"Delete every recorded run from the history ({history.database()})? [y/N]: "

    def answer(typed: bytes) -> Callable[[str], bytes | None]:
        return lambda shown: typed if shown.endswith(question) else None

    env = {"NO_COLOR": "1"}
    code, screen = run_on_terminal("log", "clear", cwd=headless, env=env, watch=answer(b"\n"))
    assert (code, screen) == (1, f"{question}\nNothing was deleted.\n")
    assert len(runs()) == 2
    code, screen = run_on_terminal("log", "clear", cwd=headless, env=env, watch=answer(b"y\n"))
    assert (code, screen) == (0, f"{question}y\nDeleted 2 runs from the history.\n")
    assert runs() == []


def test_clear_before_something_that_is_not_a_date(headless: Path) -> None:
    result = invoke("log", "clear", "--before", "last week")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: --before 'last week' is not a date: use YYYY-MM-DD or an ISO 8601 time such "
        "as 2026-01-31T18:00\n",
    )


# --- listing and showing -------------------------------------------------------------------------


def test_the_listing_filters_and_counts(headless: Path) -> None:
    assert start(headless, "task", "review", "--print", "one").returncode == 0
    assert (
        start(headless, "prompt", "--print", "-a", "json", "two", FAKE_MODE="result").returncode
        == 0
    )
    assert start(headless, "task", "review", "--print", "three").returncode == 0
    assert [r["instructions"] for r in runs("--task", "review")] == ["three", "one"]
    assert [r["instructions"] for r in runs("--agent", "json")] == ["two"]
    assert [r["instructions"] for r in runs("-n", "1")] == ["three"]
    assert len(runs("--project", headless.name)) == 3
    assert len(runs("--project", str(headless))) == 3
    assert runs("--project", "elsewhere") == []
    table = invoke("log", "--task", "review")
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["ID", "TIME", "PROJECT", "RUN", "AGENT", "OUTCOME"]
    assert [line.split()[0] for line in lines[1:]] == ["3", "1"]
    assert "task review: three" in lines[1] and "ok (" in lines[1]


def test_show_without_a_record(headless: Path) -> None:
    result = invoke("log", "show", "7")
    assert (result.exit_code, result.stdout, result.stderr) == (
        4,
        "",
        "start: no run 7 in the history ('start log' lists the runs)\n",
    )
    result = invoke("again")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: no run is recorded yet ('start log' lists the runs)\n",
    )


def test_show_prints_the_command_role_prompt_and_answer(headless: Path) -> None:
    assert start(headless, "task", "review", "--print", "the diff").returncode == 0
    result = invoke("log", "show", "1", "--no-pager")
    assert result.exit_code == 0
    text = result.stdout
    assert text.startswith("run 1  ")
    assert "  command      start -q task review --print 'the diff'\n" in text
    assert f"  directory    {headless}\n" in text
    assert "  permissions  read-only\n" in text
    assert "  outcome      ok, exit status 0, " in text
    assert "──── prompt ────\nReview: the diff\n" in text
    assert "──── answer ────\nANSWER: Review: the diff\n" in text
    assert text.rstrip("\n").endswith("-- 'Review: the diff'")


def test_show_pages_on_a_terminal(headless: Path, tmp_path: Path) -> None:
    from tests.terminal import run_on_terminal

    assert start(headless, "prompt", "--print", "hello").returncode == 0
    paged = tmp_path / "paged.txt"
    code, screen = run_on_terminal(
        "log", "show", cwd=headless, env={"START_PAGER": f"cat > {paged}", "NO_COLOR": "1"}
    )
    assert code == 0
    assert "──── answer ────" not in screen
    assert "──── answer ────\nANSWER: hello\n" in paged.read_text()


def test_the_path_and_its_privacy(headless: Path) -> None:
    assert invoke("log", "path").stdout == history.database() + "\n"
    assert start(headless, "prompt", "--print", "x").returncode == 0
    assert start(headless, "prompt", "-a", "launcher", "x").returncode == 0
    where = history.directory()
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o700
    for directory, subdirectories, files in os.walk(where):
        for name in subdirectories:
            assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) == 0o700
        for name in files:
            assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) == 0o600, name


def test_a_planted_symlink_is_never_followed(headless: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.makedirs(os.path.dirname(history.directory()), exist_ok=True)
    os.symlink(elsewhere, history.directory())
    result = start(headless, "prompt", "--print", "x")
    assert (result.returncode, result.stdout) == (0, "ANSWER: x\n")
    assert result.stderr == (
        f"start: warning: this run is not in the history: {history.directory()} is not a "
        "directory owned by you; remove it\n"
    )
    assert os.listdir(elsewhere) == []


def test_prompts_are_kept_byte_exact(repo: Path) -> None:
    """A file's bytes that are not UTF-8 (kept as surrogate escapes) come back as they were."""
    from start.compose import pipeline

    prepared = pipeline.prepare(_prompt("caf\udce9 \u00e9", repo))
    recording.record(begun(prepared), prepared.config.settings)
    prepared.launch.cleanup()
    with historydb.opened() as store:
        assert store.get(None).prompt.endswith("caf\udce9 \u00e9")


# --- start again ---------------------------------------------------------------------------------


def test_again_repeats_the_command_line_in_its_directory(repo: Path) -> None:
    (repo / "sub").mkdir()
    proc, first = launch(repo / "sub", "prompt", "-m", "o", "hello")
    assert proc.returncode == 0 and first is not None
    proc, again = launch(repo.parent, "again")
    assert proc.returncode == 0, proc.stderr
    assert again is not None
    assert (again["argv"], again["cwd"]) == (first["argv"], first["cwd"])
    assert proc.stderr.startswith(f"start again: start prompt hello -m o  (in {repo}/sub)\n")
    assert [r["args"] for r in runs()] == [
        ["prompt", "hello", "-m", "o"],
        ["prompt", "-m", "o", "hello"],
    ]


def test_again_takes_overrides(repo: Path) -> None:
    proc, _ = launch(repo, "prompt", "-m", "o", "-ms", "--model=o", "hello", "--", "--extra")
    assert proc.returncode == 0
    proc, agent = launch(repo, "-q", "again", "1", "-m", "s")
    assert proc.returncode == 0, proc.stderr
    assert agent is not None
    assert agent["argv"][:2] == ["--model", "sonnet-x"]
    assert runs()[0]["args"] == ["prompt", "hello", "-m", "s", "-q", "--", "--extra"]


def test_again_headless(headless: Path) -> None:
    assert start(headless, "prompt", "-a", "launcher", "hello").returncode == 0
    result = start(headless, "again", "--print", "-a", "fake,json", FAKE_MODE="result")
    assert result.returncode == 0
    assert result.stdout.startswith("## fake\n")
    found = runs()
    assert [(r["agent"], r["headless"]) for r in found] == [
        ("json", True),
        ("fake", True),
        ("launcher", False),
    ]
    assert found[0]["args"] == ["prompt", "hello", "-a", "fake,json", "-q", "--print"]


def test_again_echoes_a_line_that_bash_runs_as_the_same_run(headless: Path) -> None:
    """The line `start again` echoes is the command that repeats the run (issue 49): piped text
    and words sent as one text, with a newline, quotes and `$` in it, come back through bash as
    the same words, and running them sends the same text."""
    piped = "summarise it's $HOME `id` \\n\n"
    first = run_start("prompt", "--print", "hi", cwd=headless, stdin=piped)
    assert first.returncode == 0, first.stderr
    sent = shown(1)["instructions"]
    assert sent == "summarise it's $HOME `id` \\n\n\nhi"
    again = run_start("again", cwd=headless)
    assert again.returncode == 0, again.stderr
    echoed = again.stderr.splitlines()[0]
    prefix, suffix = "start again: ", f"  (in {headless})"
    assert echoed.startswith(prefix) and echoed.endswith(suffix), echoed
    line = echoed[len(prefix) : -len(suffix)]
    assert line == "start prompt $'summarise it\\'s $HOME `id` \\\\n\\n\\nhi' --print"
    # The words bash reads from the line are the words of the run it repeated.
    words = subprocess.run(
        ["bash", "-c", f"start() {{ printf '%s\\0' \"$@\"; }}; {line}"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    assert words.split("\0")[:-1] == ["prompt", sent, "--print"] == shown(2)["args"]
    # And run by bash, in the run's directory, they send the same text again.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    script = f'start() {{ "{sys.executable}" -m start "$@"; }}; {line}'
    repeated = subprocess.run(
        ["bash", "-c", script], cwd=headless, env=env, capture_output=True, text=True, input=""
    )
    assert repeated.returncode == 0, repeated.stderr
    assert [shown(n)["instructions"] for n in (2, 3)] == [sent, sent]


def test_again_of_a_session_has_no_print(repo: Path) -> None:
    assert launch(repo, "-q")[0].returncode == 0
    result = invoke("again", "--print")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: run 1 is a session ('start' alone), which has no --print; repeat a 'start "
        "prompt' or 'start task' run headless\n",
    )


def test_again_goes_through_trust(scene: Scene) -> None:
    approve(scene)
    first = scene.start("-q", "task", "pwn", "go", "--agent", "fake")
    assert first.returncode == 0, first.stderr
    assert scene.agent_record() is not None
    edit(scene.project, "# v1", "# v2")  # the approval no longer covers the files
    scene.reset()
    result = scene.start("-q", "again", cwd=scene.project.parent)
    assert result.returncode == 5
    assert result.stderr == scene.refused("1 file changed since approval")
    scene.assert_nothing_happened(result.stdout, result.stderr)


def test_completion_offers_the_run_ids(headless: Path) -> None:
    from tests.cli.test_completion import complete

    for word in ("one", "two"):
        assert start(headless, "task", "review", "--print", word).returncode == 0
    offered = complete("start log show ")
    assert [value for value, _ in offered] == ["2", "1"]
    assert offered[0][1] is not None and offered[0][1].endswith(" review fake")
    assert [value for value, _ in complete("start again 1")] == ["1"]


# --- the answer alone, and searching ------------------------------------------------------------


def test_show_answer_prints_the_answer_alone(headless: Path) -> None:
    """As `llm logs -r`: the latest answer, or a run's, exactly, for a script."""
    assert (
        start(
            headless,
            "prompt",
            "--print",
            "first",
            FAKE_MODE="say",
            FAKE_ANSWER="one\n\ttwo\x1b[31m",
        ).returncode
        == 0
    )
    assert start(headless, "prompt", "-a", "launcher", "x").returncode == 0
    latest = invoke("log", "show", "--answer", "1")
    assert (latest.exit_code, latest.stdout, latest.stderr) == (0, "one\n\ttwo\x1b[31m\n", "")
    launched = invoke("log", "show", "--answer")
    assert (launched.exit_code, launched.stdout, launched.stderr) == (
        1,
        "",
        "start: run 2 has no answer; it was a launch: the agent answered in its own terminal\n",
    )
    assert start(headless, "prompt", "--print", "broken", FAKE_MODE="fail").returncode == 1
    failed = invoke("log", "show", "--answer")
    assert failed.exit_code == 1
    assert failed.stderr.startswith("start: run 3 has no answer; it failed: exited with status 3")


def test_show_answer_escapes_a_terminal_unless_raw(headless: Path) -> None:
    from tests.terminal import run_on_terminal

    hostile = "hi \x1b]52;c;cHduZWQ=\x07 there"
    assert (
        start(headless, "prompt", "--print", "x", FAKE_MODE="say", FAKE_ANSWER=hostile).returncode
        == 0
    )
    code, screen = run_on_terminal("log", "show", "--answer", cwd=headless)
    assert (code, screen) == (0, "hi \\x1b]52;c;cHduZWQ=\\x07 there\n")


def test_show_quotes_a_control_in_its_command_lines_so_that_they_paste_back(
    headless: Path,
) -> None:
    """The command lines of `log show` and `again` hold what was asked: a word with ESC in it is
    quoted `$'...'`, which a shell reads back, not `'...'` around an escape it would take as text
    (issue 44)."""
    hostile = "hi\x1b]0;t\x07"
    assert run_start("prompt", "--print", hostile, cwd=headless).returncode == 0
    shown = invoke("log", "show", "--no-pager").stdout
    assert "  command      start prompt --print $'hi\\x1b]0;t\\x07'\n" in shown
    assert shown.endswith(" --ro -- $'hi\\x1b]0;t\\x07'\n")
    again = run_start("again", cwd=headless)
    assert again.stderr.startswith(
        f"start again: start prompt $'hi\\x1b]0;t\\x07' --print  (in {headless})\n"
    ), again.stderr


def test_again_echoes_and_keeps_the_json_fields_it_was_given(headless: Path) -> None:
    """`start again --json-fields ...` prints those keys of the repeated run, and its line says
    so, not `--json`, which would print other keys when pasted."""
    assert run_start("prompt", "--print", "hi", cwd=headless).returncode == 0
    for given, shown in (("request,id", "request,id"), ("all", "all")):
        again = run_start("again", "--json-fields", given, cwd=headless)
        assert again.stderr.startswith(
            f"start again: start prompt hi --json-fields {shown} --print  (in {headless})\n"
        ), again.stderr
        data = json.loads(again.stdout)
        assert data["request"]["prompt"] == "hi"
        assert list(data)[:2] == (["request", "id"] if given != "all" else ["time", "at"])


def test_search_finds_the_runs_whose_words_prompt_or_answer_hold_the_text(headless: Path) -> None:
    for word, answer in (("alpha", "Retry LOOP spins"), ("beta", "fine"), ("Gamma", "ok")):
        result = start(headless, "prompt", "--print", word, FAKE_MODE="say", FAKE_ANSWER=answer)
        assert result.returncode == 0
    assert [r["instructions"] for r in runs("--search", "retry loop")] == ["alpha"]
    assert [r["instructions"] for r in runs("--search", "GAMMA")] == ["Gamma"]
    assert [r["instructions"] for r in runs("-s", "a")] == ["Gamma", "beta", "alpha"]
    nothing = invoke("log", "--search", "nowhere")
    assert (nothing.exit_code, nothing.stdout, nothing.stderr) == (0, "", "No such runs.\n")
