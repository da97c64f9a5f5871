"""The "Done means" of issue 47 through the real `start`, beyond tests/board/test_sync_cli.py: its
machines (a bare repository as the remote, clones with their own HOME and state directory)
racing `claim --next` over many rounds through real pushes, held at a barrier so that their
pushes meet; a clone offline for a hundred operations of every kind while the others work; a
`start board sync` killed at each of its steps; and a remote that refuses pushes for a while.

Processes are released together by FIFOs that git hooks open (never a sleep), and each test
signals only the process group it started. The hooks act only for a process whose environment
names their FIFOs, so the other machines' syncs pass through them untouched. With board_remote
set a claim syncs by itself (automatic sync, docs/board-sync-design.md §9): a claim that loses
says so at once (exit 1), one whose push fails stays unconfirmed (exit 0, a warning); a hook
holds whichever `start` of the tested process reaches the step first, which is the claim's own
sync where the process claims first."""

from __future__ import annotations

import fcntl
import json
import os
import select
import shlex
import signal
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.board import test_sync_cli
from tests.board.test_sync_cli import Machine
from tests.conftest import REPO, git, run_start

remote = test_sync_cli.remote  # the fixture: a bare repository holding the project's `main`

FIELDS = {"arrived", "pushed", "refused", "lost", "last_sync"}
PIDFD = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waits on a pidfd (Linux)")


def board(machine: Machine) -> list[dict[str, Any]]:
    """The machine's board as `start board export` writes it, but for what docs/board-sync-design.md
    says differs between machines by design: provenance (`level`, `answer_level`), and ids (each
    machine shows its own items as item-N, another's as item-PREFIX.N), here each item's title."""
    lines = [json.loads(line) for line in machine.start("board", "export").splitlines()][1:]
    title = {each["id"]: each["title"] for each in lines}
    return [
        {
            **each,
            "id": title[each["id"]],
            "parent": None if each["parent"] is None else title[each["parent"]],
            "blocked_by": [title[other] for other in each["blocked_by"]],
            "level": None,
            "answer_level": None,
        }
        for each in lines
    ]


def held(machine: Machine) -> dict[str, str | None]:
    """Each item's title to its holder (None: nobody's), from the listing's --json."""
    rows = json.loads(machine.start("board", "--all", "--limit", "0", "--json"))
    return {row["title"]: row["assignee"] for row in sorted(rows, key=lambda row: row["title"])}


def rows(machine: Machine) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(
        machine.start("board", "--all", "--limit", "0", "--json")
    )
    return found


def hook(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def started(
    machine: Machine, commands: Sequence[Sequence[str]], more: Mapping[str, str] = {}
) -> subprocess.Popen[str]:
    """`start -d REPO ARGS` for each of `commands`, one after another in one `sh` (stopping at
    the first that fails), in a process group of its own; not waited for."""
    env = {**os.environ, **machine.env, **more}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    line = " && ".join(
        shlex.join([sys.executable, "-m", "start", "-d", str(machine.repo), *args])
        for args in commands
    )
    return subprocess.Popen(
        ["sh", "-c", line], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def claiming(
    machine: Machine, commands: Sequence[Sequence[str]], more: Mapping[str, str] = {}
) -> subprocess.Popen[str]:
    """As `started`, but each of `commands` runs whatever the one before it came to, and each
    one's output ends with a line `exit CODE` on stdout and on stderr (see `parted`)."""
    env = {**os.environ, **machine.env, **more}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    line = "; ".join(
        shlex.join([sys.executable, "-m", "start", "-d", str(machine.repo), *args])
        + '; code=$?; echo "exit $code"; echo "exit $code" >&2'
        for args in commands
    )
    return subprocess.Popen(
        ["sh", "-c", line], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def parted(out: str, err: str) -> list[tuple[int, str, str]]:
    """Each command's exit code, stdout and stderr, from the output of `claiming`."""

    def split(text: str) -> list[tuple[int, str]]:
        found: list[tuple[int, str]] = []
        lines: list[str] = []
        for line in text.splitlines(keepends=True):
            if line.startswith("exit ") and line.strip().removeprefix("exit ").isdigit():
                found.append((int(line.strip().removeprefix("exit ")), "".join(lines)))
                lines = []
            else:
                lines.append(line)
        assert lines == [], lines
        return found

    outs, errs = split(out), split(err)
    assert [code for code, _ in outs] == [code for code, _ in errs], (out, err)
    return [(code, o, e) for (code, o), (_, e) in zip(outs, errs, strict=True)]


def heard(ready: int, processes: Sequence[subprocess.Popen[str]], count: int = 1) -> list[str]:
    """`count` lines hooks wrote to the FIFO `ready` (open here for reading and writing, so that
    it never reads an end); fails with a process's words when one ends before the hooks spoke."""
    ends = {os.pidfd_open(process.pid): process for process in processes}
    text = b""
    try:
        while text.count(b"\n") < count:
            readable, _, _ = select.select([ready, *ends], [], [])
            if ready in readable:
                text += os.read(ready, 4096)
                continue
            process = ends[next(fd for fd in readable if fd in ends)]
            out, err = process.communicate(timeout=120)
            raise AssertionError(f"it ended before the step: {process.returncode} {out} {err}")
    finally:
        for fd in ends:
            os.close(fd)
    return text.decode().splitlines()


def killed(process: subprocess.Popen[str]) -> None:
    """SIGKILL the process group this test started (start, its git, the hook), and reap it."""
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=120)


# --- racing `claim --next` ----------------------------------------------------------------------

# Held once (armed by a file) at the push of the process that names RACE_DIR: says so on
# RACE_DIR/ready and waits to be let go on RACE_DIR/NAME.go, so that three machines' pushes,
# all leased on the tip they fetched, meet at the remote.
BARRIER = """[ -n "$RACE_DIR" ] && [ -e "$RACE_DIR/$RACE_NAME.armed" ] || exit 0
rm -f "$RACE_DIR/$RACE_NAME.armed"
echo "$RACE_NAME" > "$RACE_DIR/ready"
read go < "$RACE_DIR/$RACE_NAME.go"
"""


def race(tmp_path: Path, remote: Path, rounds: int) -> None:
    """Three machines, `rounds` rounds: in each, ann makes one `claim --next`, bob two and cat
    three, one after another, each pushed at once by the claim itself (automatic sync). The
    first claim of each is held at its push until all three are there (the barrier): claiming
    the first ready item of boards that are the same, the three push at once, each leased on
    the tip it fetched. Each item claimed ends held by exactly one of those who claimed it, the
    one whose claim exited 0, on every board; every claim that lost is told so at once (exit 1,
    the item with "confirmed": false and why, and the holder's name on stderr); a later sync
    tells only of claims this machine lost; the boards are the same."""
    machines = [Machine(tmp_path, remote, name) for name in ("ann", "bob", "cat")]
    ann = machines[0]
    counts = {"ann": 1, "bob": 2, "cat": 3}
    # A round takes at most four items: the three first claims take one, each other one.
    plan = tmp_path / "plan.jsonl"
    plan.write_text("".join(f'{{"title": "Task {n:03}"}}\n' for n in range(1, 4 * rounds + 1)))
    ann.start("board", "add", "--file", str(plan), "--as", "ann")
    for machine in machines:
        machine.sync()
    # The ids (as each machine shows them) of every claim each machine lost.
    beaten: dict[str, set[str]] = {m.name: set() for m in machines}
    gate = tmp_path / "race"
    gate.mkdir()
    ready = os.open(fifo(gate / "ready"), os.O_RDWR | os.O_NONBLOCK)
    for machine in machines:
        fifo(gate / f"{machine.name}.go")
        hook(machine.repo / ".git" / "hooks" / "pre-push", BARRIER)
    try:
        for round_ in range(rounds):
            before = held(ann)
            pending = [title for title, who in before.items() if who is None]
            for machine in machines:
                (gate / f"{machine.name}.armed").write_text("")
            going = [
                claiming(
                    machine,
                    [
                        *(["board", "claim", "--next", "--json", "--as", machine.name]
                          for _ in range(counts[machine.name])),
                        ["board", "sync", "--json"],
                    ],
                    {"RACE_DIR": str(gate), "RACE_NAME": machine.name},
                )
                for machine in machines
            ]  # fmt: skip
            try:
                assert sorted(heard(ready, going, 3)) == ["ann", "bob", "cat"]
            except BaseException:
                for process in going:
                    killed(process)
                raise
            for machine in machines:  # let the three pushes go at once
                with open(gate / f"{machine.name}.go", "w") as go:
                    go.write("go\n")
            done: dict[str, list[tuple[int, str, str]]] = {}
            later: dict[str, list[dict[str, str]]] = {}
            for machine, process in zip(machines, going, strict=True):
                out, err = process.communicate(timeout=300)
                assert process.returncode == 0, (machine.name, out, err)
                *claims, (code, out, err) = parted(out, err)
                assert (len(claims), code, err) == (counts[machine.name], 0, ""), round_
                synced = json.loads(out)
                assert set(synced) == FIELDS
                done[machine.name], later[machine.name] = claims, synced["lost"]
            for machine in machines:  # each takes what the others pushed
                later[machine.name] += machine.sync()["lost"]
            boards = [board(machine) for machine in machines]
            assert boards[0] == boards[1] == boards[2], round_
            holders = held(ann)
            assert {t: h for t, h in holders.items() if before[t]} == {
                t: h for t, h in before.items() if h
            }  # what earlier rounds took stays as it was
            claimants: dict[str, list[str]] = {}
            winners: dict[str, list[str]] = {}
            for name, claims in done.items():
                for n, (code, out, err) in enumerate(claims):
                    item = json.loads(out)
                    title, shown = item["title"], item["id"]
                    if n == 0:  # the three first claims: the first ready item, the same on all
                        assert title == pending[0], (round_, name)
                    claimants.setdefault(title, []).append(name)
                    holder = holders[title]
                    assert item["assignee"] == holder, (round_, name, item)
                    if code == 0:
                        assert (holder, item["confirmed"], err) == (name, True, ""), round_
                        winners.setdefault(title, []).append(name)
                        continue
                    assert (code, item["confirmed"]) == (1, False), (round_, name, err)
                    assert holder not in (None, name)
                    why = item["lost"]
                    assert why.startswith(f"{name}'s claim of {shown} ("), why
                    assert f": lost to {holder}'s claim (" in why
                    assert why.endswith("), first on the remote")
                    assert err == (
                        f"start: your claim of {shown} lost: {why}; {shown} is held by {holder} "
                        "(start board sync brought it); claim another item (start board claim "
                        "--next)\n"
                    )
                    beaten[name].add(shown)
            # Exactly one winner an item, every claim of it the others', all told they lost.
            assert winners == {title: [holders[title]] for title in claimants}, round_
            taken = [title for title, who in holders.items() if who is not None]
            assert sorted(taken) == sorted({*(t for t, h in before.items() if h), *claimants})
            for name, told in later.items():  # a sync tells only of claims this machine lost
                for each in told:
                    assert each["item"] in beaten[name], (round_, name, each)
                    assert each["why"].startswith(f"{name}'s claim of {each['item']} (")
                    assert each["why"].endswith("), first on the remote")
    finally:
        os.close(ready)


@PIDFD
def test_three_machines_racing_claim_next_at_once_get_one_winner_an_item(
    tmp_path: Path, remote: Path
) -> None:
    race(tmp_path, remote, rounds=1)


@pytest.mark.slow
@PIDFD
def test_three_machines_racing_claim_next_for_twenty_rounds_get_one_winner_an_item_each_time(
    tmp_path: Path, remote: Path
) -> None:
    race(tmp_path, remote, rounds=20)


# --- a sync killed at each of its steps ---------------------------------------------------------

# Held once (armed by STEP_MARK) at step STEP_AT of the process whose environment names it: says
# so on the FIFO STEP_READY and, when STEP_HOLD is set, waits on that FIFO, which nothing ever
# opens to write, until the test kills the process group it started (this hook with it).
STEP = """[ -n "$STEP_MARK" ] && [ "$STEP_AT" = {step} ] || exit 0
{more}[ -e "$STEP_MARK" ] || exit 0
rm -f "$STEP_MARK"
echo {step} > "$STEP_READY"
[ -z "$STEP_HOLD" ] || read held < "$STEP_HOLD"
"""

# Where each step is held: after the fetch, when refs/start/remote-board was moved to what it
# fetched (a hook of the clone); before the push (the clone's pre-push); while git holds the
# lock of the log's ref to add this machine's operations to it (the clone's hook, prepared);
# once the remote took
# the push, before `start` heard so (the remote's post-receive); and in the rebuild, after the
# push (the remote's post-receive says the push was taken, and the test waits for the board's
# write transaction to begin).
STEPS = {
    "fetched": ("clone", "reference-transaction",
                '[ "$1" = committed ] && grep -q " refs/start/remote-board$" || exit 0\n'),
    "fetching": ("clone", "reference-transaction",
                 '[ "$1" = prepared ] && grep -q " refs/start/remote-board$" || exit 0\n'),
    "pushing": ("clone", "pre-push", ""),
    "locked": ("clone", "reference-transaction",
               '[ "$1" = prepared ] && grep -q " refs/start/board$" || exit 0\n'),
    "taken": ("remote", "post-receive", ""),
    "rebuilding": ("remote", "post-receive", ""),
}  # fmt: skip

# SQLite's write lock of a database in WAL mode: byte 120 of its `-shm` file, held (an fcntl
# lock) from a write transaction's BEGIN to its end (sqlite3.c, WALINDEX_LOCK_OFFSET).
_WAL_WRITE_LOCK = 120
_FLOCK = "hhqqi4x"  # struct flock on Linux: type, whence, start, len, pid


def writer(shm: Path) -> int | None:
    """The process that holds the write lock of the database whose `-shm` file is `shm`, asked
    of the kernel (F_GETLK) without taking the lock: None when nobody holds it (or no process
    has the database open: the last to close it removes the file)."""
    try:
        fd = os.open(shm, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        asked = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, _WAL_WRITE_LOCK, 1, 0)
        kind, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, asked))
    finally:
        os.close(fd)
    return None if kind == fcntl.F_UNLCK else int(pid)


def in_transaction(shm: Path, process: subprocess.Popen[str]) -> None:
    """Return once a process of `process`'s group holds the board's write lock: asked again and
    again, without a clock; fails when the process ends first."""
    while process.poll() is None:
        pid = writer(shm)
        if pid is not None and os.getpgid(pid) == process.pid:
            return
    out, err = process.communicate(timeout=120)
    raise AssertionError(f"it ended before its rebuild: {process.returncode} {out} {err}")


@pytest.mark.slow
@PIDFD
@pytest.mark.parametrize("step", list(STEPS))
def test_a_sync_killed_at_each_step_is_finished_by_the_next_and_confirms_only_what_was_pushed(
    tmp_path: Path, remote: Path, step: str
) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    for title in ("Fix the retry", "Write the notes"):
        ann.start("board", "add", title, "--as", "ann")
    many = 500 if step == "rebuilding" else 0  # a rebuild long enough to be caught in
    if many:
        plan = tmp_path / "plan.jsonl"
        plan.write_text("".join(f'{{"title": "Filler {n:03}"}}\n' for n in range(many)))
        ann.start("board", "add", "--file", str(plan), "--as", "ann")
    ann.sync()
    bob.sync()
    bob.start("board", "add", "From bob", "--as", "bob")
    bob.sync()  # the remote moved since ann fetched: her fetch moves refs/start/remote-board
    ann.start("board", "update", "item-2", "--title", "Write the release notes", "--as", "ann")
    ann.start("board", "comment", "item-2", "seen before the kill", "--as", "ann")
    ann.start("board", "add", "Made before the kill", "--as", "ann")
    where, name, more = STEPS[step]
    hook((ann.repo / ".git" if where == "clone" else remote) / "hooks" / name,
         STEP.format(step=step, more=more))  # fmt: skip
    gate = tmp_path / "gate"
    gate.mkdir()
    ready = os.open(fifo(gate / "ready"), os.O_RDWR | os.O_NONBLOCK)
    (gate / "mark").write_text("")
    steps = {"STEP_AT": step, "STEP_MARK": str(gate / "mark"), "STEP_READY": str(gate / "ready")}
    if step != "rebuilding":
        steps["STEP_HOLD"] = str(fifo(gate / "hold"))
    before = run_start("-d", str(ann.repo), "board", "--json", env=ann.env).stderr
    # Held (and killed) in the claim's own automatic sync: the claim is committed here first.
    process = started(ann, [["board", "claim", "item-1", "-q", "--as", "ann"],
                            ["board", "sync", "--json"]], steps)  # fmt: skip
    try:
        assert heard(ready, [process]) == [step]
        if step == "rebuilding":
            (db,) = Path(ann.env["XDG_STATE_HOME"]).glob("start/boards/*.db")
            in_transaction(db.with_name(db.name + "-shm"), process)
    finally:
        killed(process)
        os.close(ready)
    assert process.returncode == -signal.SIGKILL
    # Nothing the killed sync did reached the board's rows: the claim is unconfirmed, whether or
    # not the remote took it, and the board has not synced since.
    mine = {row["title"]: row for row in rows(ann)}
    assert (mine["Fix the retry"]["assignee"], mine["Fix the retry"]["confirmed"]) == (
        "ann", False
    )  # fmt: skip
    assert run_start("-d", str(ann.repo), "board", "--json", env=ann.env).stderr == before
    pushed = step in ("taken", "rebuilding")  # the remote holds ann's claim
    # bob's claim of it syncs at once: it loses (exit 1, saying to whom) where the remote holds
    # ann's claim, and is confirmed where it does not; no later sync tells bob of it again.
    theirs = ids(bob)["Fix the retry"]  # (Machine.id_of lists one page, short of 500 fillers)
    claim = run_start("-d", str(bob.repo), "board", "claim", theirs, "-q", "--as", "bob",
                      env=bob.env)  # fmt: skip
    if pushed:
        assert (claim.returncode, claim.stdout) == (1, "")
        said = claim.stderr.removeprefix(f"start: your claim of {theirs} lost: ")
        assert said.startswith(f"bob's claim of {theirs} (")
        assert ": lost to ann's claim (" in said
        assert said.endswith(
            f"), first on the remote; {theirs} is held by ann (start board sync brought it); "
            "claim another item (start board claim --next)\n"
        )
    else:
        assert (claim.returncode, claim.stdout, claim.stderr) == (0, f"{theirs}\n", "")
    assert bob.sync()["lost"] == []
    if step in ("fetching", "locked"):  # git's lock of a ref, left by the kill: named, and why
        ref = "refs/start/remote-board" if step == "fetching" else "refs/start/board"
        lock = ann.repo / ".git" / f"{ref}.lock"
        done = run_start("-d", str(ann.repo), "board", "sync", env=ann.env)
        assert (done.returncode, done.stderr) == (1, (
            f"start: {lock} is there: a git process is writing {ref} in {ann.repo}, "
            "or one was killed while it did, and git leaves its lock behind; nothing here is "
            f"lost. If no git is running in {ann.repo}, remove {lock} and sync again\n"))  # fmt: skip
        lock.unlink()
    synced = ann.sync()  # the next sync finishes what the killed one began
    assert synced["refused"] == []
    assert len(synced["pushed"]) == (0 if pushed else 4)  # update, comment, add, claim
    assert [each["why"].split(": ", 1)[1].split(" (")[0] for each in synced["lost"]] == (
        [] if pushed else ["lost to bob's claim"]
    )
    bob.sync()
    assert board(ann) == board(bob)
    for machine in (ann, bob):
        found = {row["title"]: row for row in rows(machine)}
        assert sorted(found) == ["Filler " + f"{n:03}" for n in range(many)] + [
            "Fix the retry",
            "From bob",
            "Made before the kill",
            "Write the release notes",
        ]
        holder = found["Fix the retry"]
        assert (holder["assignee"], holder["confirmed"]) == ("ann" if pushed else "bob", True)
    exported = [each for each in board(bob) if each["title"] == "Write the release notes"]
    assert [c["text"] for c in exported[0]["comments"]] == ["seen before the kill"]


# --- a remote that refuses pushes, and a machine offline -----------------------------------------

REFUSER = """[ -e "{flag}" ] || exit 0
echo 'pushes are closed today' >&2
exit 1
"""


def ids(machine: Machine) -> dict[str, str]:
    """Each item's title to its id, as the listing names it."""
    return {row["title"]: row["id"] for row in rows(machine)}


@pytest.mark.slow
def test_while_the_remote_refuses_pushes_no_claim_is_confirmed_and_after_it_nothing_is_lost(
    tmp_path: Path, remote: Path
) -> None:
    machines = [Machine(tmp_path, remote, name) for name in ("ann", "bob", "cat")]
    ann = machines[0]
    for n in (1, 2, 3):
        ann.start("board", "add", f"Task {n}", "--as", "ann")
    for machine in machines:
        machine.sync()
    tip = git(tmp_path, "--git-dir", str(remote), "rev-parse", "refs/start/board").strip()
    flag = tmp_path / "closed"
    flag.write_text("")
    hook(remote / "hooks" / "pre-receive", REFUSER.format(flag=flag))
    for machine in machines:  # each claims Task 1 and Task 2, and works on, while refused
        machine.start("board", "add", f"From {machine.name}", "--as", machine.name)
        machine.start("board", "comment", ids(machine)["Task 3"], f"{machine.name} was here",
                      "--as", machine.name)  # fmt: skip
        for _ in range(2):  # each pushed at once, refused: kept here, unconfirmed, exit 0
            done = run_start("-d", str(machine.repo), "board", "claim", "--next", "--json",
                             "--as", machine.name, env=machine.env)  # fmt: skip
            item = json.loads(done.stdout)
            assert (done.returncode, item["assignee"], item["confirmed"]) == (
                0, machine.name, False
            )  # fmt: skip
            assert done.stderr == (
                f"start: warning: {item['id']}'s claim is not confirmed: the board's remote "
                "'origin' did not take the push: remote: pushes are closed today; the board "
                "works on here, and the next sync pushes again; it is yours on this machine "
                "only, and another machine's earlier claim may take it: start board sync "
                "confirms it\n"
            )
    for _ in range(2):
        for machine in machines:
            done = run_start("-d", str(machine.repo), "board", "sync", env=machine.env)
            assert (done.returncode, done.stderr) == (
                1,
                "start: the board's remote 'origin' did not take the push: remote: pushes are "
                "closed today; the board works on here, and the next sync pushes again\n",
            )
    assert git(tmp_path, "--git-dir", str(remote), "rev-parse", "refs/start/board").strip() == tip
    for machine in machines:  # no claim confirmed, and nothing of another machine's arrived
        mine = {row["title"]: (row["assignee"], row["confirmed"]) for row in rows(machine)}
        assert mine == {
            "Task 1": (machine.name, False), "Task 2": (machine.name, False),
            "Task 3": (None, True), f"From {machine.name}": (None, True),
        }  # fmt: skip
    flag.unlink()
    going = [machine.syncing() for machine in machines]  # at once, once it takes them
    # What each machine is told it lost: by a sync that replayed the winner's claims (one of
    # these, or the one after; a sync tells of what it replayed, so maybe both).
    lost: dict[str, dict[str, tuple[str, str]]] = {m.name: {} for m in machines}
    for machine, process in zip(machines, going, strict=True):
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        synced = json.loads(out)
        assert set(synced) == FIELDS
        lost[machine.name].update((e["name"], (e["item"], e["why"])) for e in synced["lost"])
    for machine in machines:
        again = machine.sync()["lost"]
        lost[machine.name].update((e["name"], (e["item"], e["why"])) for e in again)
    assert board(ann) == board(machines[1]) == board(machines[2])
    for machine in machines:
        found = {row["title"]: row for row in rows(machine)}
        assert sorted(found) == ["From ann", "From bob", "From cat", "Task 1", "Task 2", "Task 3"]
        assert [found[t]["confirmed"] for t in sorted(found)] == [True] * 6
        winner = found["Task 1"]["assignee"]
        assert found["Task 2"]["assignee"] == winner  # one push carried both claims
        told = sorted(lost[machine.name].values())
        if machine.name == winner:
            assert told == []
        else:
            shown = ids(machine)
            assert [item for item, _ in told] == sorted([shown["Task 1"], shown["Task 2"]])
            for item, why in told:
                assert why.startswith(f"{machine.name}'s claim of {item} (")
                assert f": lost to {winner}'s claim (" in why
                assert why.endswith("), first on the remote")
    comments = [c["text"] for c in board(ann)[2]["comments"]]
    assert sorted(comments) == ["ann was here", "bob was here", "cat was here"]


@pytest.mark.slow
def test_a_clone_offline_for_a_hundred_operations_of_every_kind_loses_nothing_once_synced(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob, cat = (Machine(tmp_path, remote, name) for name in ("ann", "bob", "cat"))
    for n in range(1, 6):
        bob.start("board", "add", f"Shared {n}", "--as", "bob")
    for machine in (bob, ann, cat):
        machine.sync()
    url = git(ann.repo, "remote", "get-url", "origin").strip()
    git(ann.repo, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    plan = tmp_path / "plan.jsonl"
    plan.write_text("".join(f'{{"title": "Offline {n:02}"}}\n' for n in range(1, 41)))
    ann.start("board", "add", "--file", str(plan), "--as", "ann")  # 40 operations
    named = ids(ann)

    def offline(*args: str) -> None:
        ann.start("board", *args, "--as", "ann")  # every command works without the remote

    for n in range(1, 16):  # 15
        offline("update", named[f"Offline {n:02}"], "--title", f"Offline {n:02}, revised")
    for n in range(16, 31):  # 15
        offline("comment", named[f"Offline {n:02}"], f"offline note {n}")
    for n in range(31, 41):  # 10 and 10
        offline("claim", named[f"Offline {n:02}"])
        offline("done", named[f"Offline {n:02}"], "--answer", f"answer {n}")
    for n in range(1, 6):  # 5 and 5
        offline("claim", named[f"Shared {n}"])
        offline("comment", named[f"Shared {n}"], f"ann on shared {n}")
    # Meanwhile the others work, and claim three of the shared items first.
    bob.start("board", "claim", ids(bob)["Shared 1"], "--as", "bob")
    bob.start("board", "comment", ids(bob)["Shared 1"], "bob on shared 1", "--as", "bob")
    bob.start("board", "add", "From bob", "--as", "bob")
    bob.sync()
    cat.sync()
    for n in (2, 3):
        cat.start("board", "claim", ids(cat)[f"Shared {n}"], "--as", "cat")
    cat.start("board", "add", "From cat", "--as", "cat")
    cat.sync()
    ann.start("board", "sync", code=1)  # still offline
    git(ann.repo, "remote", "set-url", "origin", url)
    synced = ann.sync()
    assert (len(synced["pushed"]), synced["refused"]) == (100, [])
    assert sorted(each["why"].split(": ", 1)[1].split(" (")[0] for each in synced["lost"]) == [
        "lost to bob's claim", "lost to cat's claim", "lost to cat's claim"
    ]  # fmt: skip
    for machine in (bob, cat):
        machine.sync()
    assert board(ann) == board(bob) == board(cat)
    exported = {each["title"]: each for each in board(cat)}
    assert sorted(exported) == sorted(
        [f"Offline {n:02}, revised" for n in range(1, 16)]
        + [f"Offline {n:02}" for n in range(16, 41)]
        + [f"Shared {n}" for n in range(1, 6)]
        + ["From bob", "From cat"]
    )
    for n in range(16, 31):
        assert [c["text"] for c in exported[f"Offline {n:02}"]["comments"]] == [f"offline note {n}"]
    for n in range(31, 41):
        item = exported[f"Offline {n:02}"]
        assert (item["status"], item["answer"]) == ("completed", f"answer {n}")
    holders = {n: exported[f"Shared {n}"]["assignee"] for n in range(1, 6)}
    assert holders == {1: "bob", 2: "cat", 3: "cat", 4: "ann", 5: "ann"}
    said = sorted(c["text"] for c in exported["Shared 1"]["comments"])
    assert said == ["ann on shared 1", "bob on shared 1"]
    for n in range(2, 6):
        assert [c["text"] for c in exported[f"Shared {n}"]["comments"]] == [f"ann on shared {n}"]
