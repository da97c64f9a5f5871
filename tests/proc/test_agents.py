"""start.proc.agents: headless agents run from one loop on start.proc.process; a signal ends every running
group, starts nothing more, and raises with every run, those that had finished whole (issue 38)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from start.proc import agents as agentrun
from start.proc.agents import AgentJob, AgentRun
from tests.conftest import HANG, REPO, read_pids, running, wait_gone

FAKE = REPO / "tests" / "fake_headless.py"

# run_agents over stand-in agents (tests/fake_headless.py, FAKE_MODE=slow): a answers at once;
# b and c take 300 s; d has b's key, so it waits for b. Each state change is printed as it is
# told, then the exception's kind and every run it carries, as JSON. argv: the stand-in, where
# the agents write their pids, the grace, and `one` to run b alone with run_agent.
SCRIPT = """
import json, os, sys
from start.proc import agents as agentrun, process

fake, pids, grace, how = sys.argv[1:]
def job(name, seconds, key=""):
    env = {**os.environ, "FAKE_MODE": "slow", "FAKE_NAME": name, "FAKE_SECONDS": seconds,
           "FAKE_PIDS": pids}
    return agentrun.AgentJob((sys.executable, fake, "hi"), env, os.getcwd(), 600, key=key)
def told(index, state, elapsed):
    print(index, state, flush=True)
try:
    if how == "one":
        b = job("b", "300")
        agentrun.run_agent(b.argv, b.env, b.cwd, timeout=600, grace=float(grace))
    else:
        jobs = [job("a", "0"), job("b", "300", "k"), job("c", "300"), job("d", "0", "k")]
        agentrun.run_agents(jobs, cap=3, on_state=told, grace=float(grace))
except agentrun.Interrupted as stopped:
    kinds = [kind.__name__ for kind in (KeyboardInterrupt, process.StoppedError)
             if isinstance(stopped, kind)]
    runs = [dict(zip(run._fields, run)) for run in stopped.runs]
    print(json.dumps({"signum": stopped.signum, "kinds": kinds, "runs": runs,
                      "exit_code": getattr(stopped, "exit_code", None)}))
"""


def run_script(
    tmp_path: Path, how: str, ready: list[str], survivors: list[int], signum: int
) -> tuple[dict[str, Any], list[str]]:
    """Run SCRIPT; once each agent of `ready` has written its pids (and, with several agents, a
    has finished), send it `signum`. What it printed: the JSON, and the states told."""
    pids = tmp_path / "pids"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(FAKE), str(pids), "5", how],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        states: list[str] = []
        if how != "one":
            while "0 done" not in states:
                line = proc.stdout.readline()
                assert line, f"the script ended early: {states}"
                states.append(line.rstrip("\n"))
        for name in ready:
            survivors.extend(read_pids(Path(f"{pids}.{name}")))
        proc.send_signal(signum)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    *told, data = [*states, *rest.splitlines()]
    return json.loads(data), told


def run(**fields: Any) -> dict[str, Any]:
    """An AgentRun as the script prints it, but its duration: nothing written, no error, nothing
    stopped, unless `fields` say."""
    base = AgentRun((sys.executable, str(FAKE), "hi"), None, False, "", "", 0.0, None)
    data = dict(zip(base._fields, base, strict=True))
    del data["duration"]
    return {**data, "argv": [*base.argv], **fields}


@pytest.mark.parametrize(
    ("signum", "kinds", "code"),
    [
        (signal.SIGINT, ["KeyboardInterrupt"], None),
        (signal.SIGTERM, ["StoppedError"], 143),
        (signal.SIGHUP, ["StoppedError"], 129),
    ],
    ids=["SIGINT", "SIGTERM", "SIGHUP"],
)
def test_a_signal_keeps_the_answer_that_arrived_and_ends_every_group(
    tmp_path: Path, survivors: list[int], signum: int, kinds: list[str], code: int | None
) -> None:
    """The issue's case: Ctrl-C during `-a slow,llm` after llm had answered."""
    data, told = run_script(tmp_path, "several", ["a", "b", "c"], survivors, signum)

    name = signal.Signals(signum).name
    assert (data["signum"], data["kinds"], data["exit_code"]) == (signum, kinds, code)
    durations = [found.pop("duration") for found in data["runs"]]
    a, b, c, d = data["runs"]
    answer = "a is thinking\nANSWER: hi from a\n"
    assert a == run(returncode=0, stdout=answer, stderr="a started\n", stdout_size=len(answer))
    for found, agent in ((b, "b"), (c, "c")):
        # SIGTERM, which the stand-in does not handle, ended it; what it had written is kept.
        said = f"{agent} is thinking\n"
        assert found == run(
            returncode=-signal.SIGTERM, stdout=said, stderr=f"{agent} started\n",
            stdout_size=len(said), stopped=signum,
        )  # fmt: skip
    assert d == run(error=f"not started: stopped by {name}", stopped=signum)
    assert durations[3] == 0.0
    assert told[:7] == [
        "0 waiting", "1 waiting", "2 waiting", "3 waiting", "0 running", "1 running", "2 running",
    ]  # fmt: skip
    assert told[7:] == ["0 done", "1 stopped", "2 stopped", "3 stopped"]
    assert len(survivors) == 6  # each agent, and the child it started in its group
    assert wait_gone(survivors) == []


def test_run_agent_is_a_list_of_one_and_raises_with_its_run(
    tmp_path: Path, survivors: list[int]
) -> None:
    data, _ = run_script(tmp_path, "one", ["b"], survivors, signal.SIGINT)

    assert (data["signum"], data["kinds"]) == (signal.SIGINT, ["KeyboardInterrupt"])
    [found] = data["runs"]
    del found["duration"]
    assert found == run(
        returncode=-signal.SIGTERM, stdout="b is thinking\n", stderr="b started\n",
        stdout_size=14, stopped=signal.SIGINT,
    )  # fmt: skip
    assert wait_gone(survivors) == []


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


def test_a_registry_stopped_for_a_signal_interrupts_the_runs_of_its_jobs_as_the_signal_would(
    tmp_path: Path, survivors: list[int]
) -> None:
    """`start board run`'s Ctrl-C: its workers run agents in threads, which no signal reaches,
    and its stop gives their groups SIGTERM. The stop's cause reaches them (groups.stopped_by):
    the run it cut short is stopped by SIGINT, not failed by the SIGTERM that ended it, the one
    waiting for its key never starts, and the one that had answered keeps its answer."""
    from start.proc.groups import Groups, Workers

    answered = threading.Event()

    def told(index: int, state: str, elapsed: float) -> None:
        if (index, state) == (0, "done"):
            answered.set()

    jobs = [
        job(tmp_path, "a", "slow", seconds="0"),
        job(tmp_path, "b", "slow", key="k", seconds="300"),
        job(tmp_path, "c", "text", key="k"),
    ]
    workers = Workers(Groups(), 1, "test")
    work = workers.submit(
        lambda request: agentrun.run_agents(jobs, cap=2, on_state=told, owner=request)
    )
    assert answered.wait(HANG)
    survivors.extend(read_pids(tmp_path / "p.b"))
    workers.stop(grace=HANG, cause=signal.SIGINT)
    workers.join()

    with pytest.raises(agentrun.Interrupted) as raised:
        work.future.result()
    assert isinstance(raised.value, KeyboardInterrupt)
    assert raised.value.signum == signal.SIGINT
    a, b, c = raised.value.runs
    assert (a.returncode, a.stdout, a.stopped) == (0, "a is thinking\nANSWER: hi from a\n", None)
    stopped = (-signal.SIGTERM, "b is thinking\n", signal.SIGINT)
    assert (b.returncode, b.stdout, b.stopped) == stopped
    assert (c.returncode, c.error, c.stopped) == (
        None, "not started: stopped by SIGINT", signal.SIGINT,
    )  # fmt: skip
    assert wait_gone(survivors) == []


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
    assert (late.timed_out, late.returncode, late.stopped) == (True, None, None)
    assert (slow.timed_out, slow.returncode, slow.stdout) == (
        False,
        0,
        "b is thinking\nANSWER: hi from b\n",
    )
    assert wait_gone(survivors) == []


def test_an_agent_that_prints_past_its_limit_is_stopped_then(
    tmp_path: Path, survivors: list[int]
) -> None:
    """Its answer will not be read: its group is ended once its stdout passes the limit, not at
    its exit (it would finish 300 s on) nor at its timeout (60 s); the others run as they would."""
    told: list[tuple[int, str]] = []
    huge = job(tmp_path, "a", "huge")
    huge = huge._replace(env={**huge.env, "FAKE_MIB": "2"}, limit=1 << 20)
    fits = job(tmp_path, "b", "huge")
    fits = fits._replace(env={**fits.env, "FAKE_MIB": "1", "FAKE_PIDS": ""}, limit=1 << 20)

    stopped, whole = agentrun.run_agents(
        [huge, fits], cap=2, on_state=lambda i, s, _: told.append((i, s))
    )

    survivors.extend(read_pids(tmp_path / "p.a"))
    assert wait_gone(survivors) == []
    assert not (tmp_path / "p.a.finished").exists()
    assert (stopped.too_large, stopped.timed_out, stopped.returncode, stopped.stopped) == (
        True, False, None, None
    )  # fmt: skip
    assert stopped.stdout_size > 1 << 20
    assert (whole.too_large, whole.returncode, whole.stdout_size) == (False, 0, 1 << 20)
    assert len(whole.stdout) == 1 << 20
    assert sorted(told[-2:]) == [(0, "failed"), (1, "done")]


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
            deadline = time.monotonic() + HANG
            while running(left_behind) or (b, signal.SIGTERM) not in [s[:2] for s in signalled]:
                assert time.monotonic() < deadline
                time.sleep(0.02)
        finally:
            os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=interrupt)
    sender.start()
    with pytest.raises(agentrun.Interrupted) as caught:
        agentrun.run_agents(jobs, cap=3, grace=0.5)
    sender.join()

    b, c = read_pids(tmp_path / "p.b")[0], read_pids(tmp_path / "p.c")[0]
    survivors.extend(pid for name in "abc" for pid in read_pids(tmp_path / f"p.{name}"))
    left, late, cut = caught.value.runs
    assert (left.returncode, left.stopped) == (0, None)
    assert (late.timed_out, late.stopped) == (True, None)
    assert (cut.timed_out, cut.stopped) == (False, signal.SIGINT)
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
    assert (only.returncode, only.error, only.stopped) == (None, error, None)
