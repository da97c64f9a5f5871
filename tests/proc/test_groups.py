"""start.proc.groups: the one registry of process groups and the one scheduler of the work that runs
them from threads, over real commands (start.proc.shell) and a real watchdog. Nothing here holds
a wall clock: a wait gives up only on a hang (conftest HANG), and order is shown by files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from start.proc import groups, shell
from start.proc.groups import Groups, Request, Workers
from start.proc.shell import CommandResult, CommandSpec
from start.proc.watchdog import Watchdog
from tests.conftest import HANG, REPO, read_pids, running, wait_gone

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def slow(directory: Path, name: str, *, before: str = "") -> CommandSpec:
    """A command that writes its pid to `name` and runs five minutes (after `before`)."""
    return CommandSpec(f"{before}echo $$ > {name}; exec sleep 300", None, 300, str(directory))


def in_thread(
    spec: CommandSpec, owner: shell.Owner
) -> tuple[threading.Thread, list[CommandResult]]:
    results: list[CommandResult] = []
    thread = threading.Thread(target=lambda: results.extend(shell.run_all([spec], owner=owner)))
    thread.start()
    return thread, results


def statuses(results: list[CommandResult]) -> list[str]:
    return [result.status for result in results]


def adopted(groups: Groups, path: Path) -> int:
    """The pid a command wrote to `path`, once its registry holds its group: the command runs
    before the thread that started it adopts its group, and a stop between the two would find
    nothing to send SIGTERM to (and SIGKILL it on adoption, as a group that starts after it)."""
    (pid,) = read_pids(path)
    deadline = time.monotonic() + HANG
    while pid not in groups.live:
        assert time.monotonic() < deadline, f"the group of {pid} was never adopted"
        time.sleep(0.01)
    return pid


def command(spec: CommandSpec) -> Callable[[Request], str]:
    """A job that runs `spec` with its request as owner; the command's status."""
    return lambda request: shell.run_all([spec], owner=request)[0].status


def trapping(directory: Path, name: str, note: Path) -> CommandSpec:
    """A command that writes its pid to `name`, then on SIGTERM notes it and exits 3."""
    trap = f"trap 'echo TERM > {note}; exit 3' TERM; echo $$ > {name}; sleep 300"
    return CommandSpec(trap, None, 300, str(directory))


# --- the registry -------------------------------------------------------------------------------


def test_a_killed_request_ends_its_groups_and_those_it_starts_later(tmp_path: Path) -> None:
    registry = Groups()
    request, other = registry.request(), registry.request()
    thread, results = in_thread(slow(tmp_path, "one"), request)
    bystander, spared = in_thread(slow(tmp_path, "two"), other)
    (one,) = read_pids(tmp_path / "one")
    read_pids(tmp_path / "two")
    registry.kill(request)
    thread.join(timeout=HANG)
    assert statuses(results) == ["killed by SIGKILL"]
    assert not running(one)
    assert bystander.is_alive()  # another request's command runs on
    assert list(registry.live.values()) == [other]
    (later,) = shell.run_all([slow(tmp_path, "three")], owner=request)
    assert later.status == "killed by SIGKILL"
    registry.stop()
    bystander.join(timeout=HANG)
    assert statuses(spared) == ["killed by SIGKILL"]
    assert registry.live == {}


def test_once_stopped_every_group_is_killed_as_it_starts_the_registrys_own_too(
    tmp_path: Path,
) -> None:
    registry = Groups()
    registry.stop()
    for owner in (registry, registry.request()):
        (result,) = shell.run_all([slow(tmp_path, "pid")], owner=owner)
        assert result.status == "killed by SIGKILL"
    assert registry.live == {}


def test_stop_with_sigterm_lets_a_group_end_as_it_will(tmp_path: Path) -> None:
    registry = Groups()
    note = tmp_path / "note"
    thread, results = in_thread(trapping(tmp_path, "pid", note), registry)
    adopted(registry, tmp_path / "pid")
    registry.stop(signal.SIGTERM)
    thread.join(timeout=HANG)
    assert statuses(results) == ["failed with exit code 3"]
    assert note.read_text() == "TERM\n"


# An owner of a registry with a watchdog, with a group of one request and one of the registry's
# own; prints their pids, then waits to be killed.
OWNER = """
import subprocess, sys, time
from start.proc import groups
with groups.watched() as registry:
    first = subprocess.Popen(["sleep", "300"], start_new_session=True)
    second = subprocess.Popen(["sleep", "300"], start_new_session=True)
    registry.request().adopt(first.pid)
    registry.adopt(second.pid)
    print(registry.watchdog.pid, first.pid, second.pid, flush=True)
    time.sleep(300)
"""


def test_the_registry_tells_its_watchdog_of_each_group(
    tmp_path: Path, survivors: list[int]
) -> None:
    """Its owner killed with SIGKILL, the watchdog ends what the registry was told of."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    owner = subprocess.Popen([sys.executable, "-c", OWNER], env=env, stdout=subprocess.PIPE)
    survivors.append(owner.pid)
    assert owner.stdout is not None
    pids = [int(word) for word in owner.stdout.readline().split()]
    survivors.extend(pids)
    owner.kill()
    owner.wait()
    assert wait_gone(pids) == []


def test_watching_uses_an_owner_it_is_given_and_else_a_registry_for_the_block() -> None:
    given = Groups()
    with groups.watching(given) as found:
        assert found is given
    with groups.watching() as started:
        assert isinstance(started, Groups)
        dog = started.watchdog
        assert isinstance(dog, Watchdog)
        assert running(dog.pid)
    assert started.watchdog is None
    with pytest.raises(ChildProcessError):  # closed and reaped
        os.waitpid(dog.pid, os.WNOHANG)


# --- the scheduler ------------------------------------------------------------------------------


def test_jobs_run_size_at_once_and_the_others_wait_their_turn_in_order(tmp_path: Path) -> None:
    """Each job waits for its own gate file; the third starts only once one of two has ended."""
    workers = Workers(Groups(), 2, "test")
    order = tmp_path / "order"

    def job(name: str) -> Callable[[Request], str]:
        gate = tmp_path / f"gate-{name}"
        wait = f"echo {name} >> {order}; while [ ! -e {gate} ]; do sleep 0.01; done"
        return command(CommandSpec(wait, None, HANG, str(tmp_path)))

    jobs = [workers.submit(job(name)) for name in "abc"]
    assert (len(workers.running), [j.future for j in workers.waiting]) == (2, [jobs[2].future])
    # Both running jobs' commands have started (a loaded machine may start either later).
    deadline = time.monotonic() + HANG
    while sorted(order.read_text().split() if order.exists() else []) != ["a", "b"]:
        assert time.monotonic() < deadline, "the two running jobs never started their commands"
        time.sleep(0.01)
    (tmp_path / "gate-c").touch()
    (tmp_path / "gate-b").touch()
    assert jobs[1].future.result(timeout=HANG) == "succeeded"
    assert jobs[2].future.result(timeout=HANG) == "succeeded"
    (tmp_path / "gate-a").touch()
    workers.join()
    assert [job.future.result() for job in jobs] == ["succeeded"] * 3
    assert sorted(order.read_text().split()[:2]) == ["a", "b"]
    assert order.read_text().split()[2] == "c"


def test_a_cancelled_job_never_starts_or_has_its_groups_killed(tmp_path: Path) -> None:
    workers = Workers(Groups(), 1, "test")
    running_job = workers.submit(command(slow(tmp_path, "one")))
    waiting = workers.submit(command(slow(tmp_path, "two")))
    read_pids(tmp_path / "one")
    workers.cancel(waiting)
    workers.cancel(running_job)
    assert running_job.future.result(timeout=HANG) == "killed by SIGKILL"
    assert waiting.future.cancelled()
    workers.join()
    assert not (tmp_path / "two").exists()  # it never ran


def test_stop_gives_sigterm_and_waits_up_to_the_grace_and_nothing_starts_after(
    tmp_path: Path,
) -> None:
    """The job's command ends on SIGTERM, within the grace. A job that waited, or comes after
    the stop, never runs."""
    workers = Workers(Groups(), 1, "test")
    note = tmp_path / "note"
    job = workers.submit(command(trapping(tmp_path, "one", note)))
    waited = workers.submit(command(slow(tmp_path, "two")))
    adopted(workers.groups, tmp_path / "one")
    workers.stop(grace=HANG)
    assert job.future.done()  # the grace ends once the jobs have
    workers.join()
    assert job.future.result() == "failed with exit code 3"
    assert note.read_text() == "TERM\n"
    late = workers.submit(command(slow(tmp_path, "three")))
    assert waited.future.cancelled() and late.future.cancelled()
    assert not (tmp_path / "two").exists() and not (tmp_path / "three").exists()
    assert workers.groups.live == {}


def test_a_group_that_ignores_sigterm_gets_sigkill_after_the_grace(tmp_path: Path) -> None:
    workers = Workers(Groups(), 1, "test")
    job = workers.submit(command(slow(tmp_path, "one", before="trap '' TERM; ")))
    (pid,) = read_pids(tmp_path / "one")
    workers.stop(grace=0.1)
    workers.join()
    assert job.future.result() == "killed by SIGKILL"
    assert not running(pid)


def test_a_jobs_error_is_its_futures_and_the_worker_goes_on(tmp_path: Path) -> None:
    workers = Workers(Groups(), 1, "test")

    def fails(request: Request) -> str:
        raise ValueError("no")

    failed = workers.submit(fails)
    after = workers.submit(lambda request: "ran")
    assert after.future.result(timeout=HANG) == "ran"
    with pytest.raises(ValueError, match=r"^no$"):
        failed.future.result()
