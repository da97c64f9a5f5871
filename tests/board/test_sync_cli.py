"""`start board sync` through the real `start` in subprocesses: a bare repository is the remote,
and each clone is a machine with its own HOME and state directory (so its own board). Items made
on one machine reach the others; two machines that claim one item end with one holder on both."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, git, run_start
from tests.fake_headless import agent

pytestmark = pytest.mark.slow


class Machine:
    """A clone of the remote with a home and a state directory of its own."""

    def __init__(
        self, root: Path, remote: Path, name: str, setting: bool = True, more: str = ""
    ) -> None:
        self.repo = root / name / "work"
        home = root / name / "home"
        (home / ".config" / "start").mkdir(parents=True)
        if setting:
            (home / ".config" / "start" / "config.toml").write_text(
                f'[settings]\nboard_remote = "origin"\n{more}'
            )
        git(root, "clone", "--quiet", str(remote), str(self.repo))
        self.env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".local" / "state")}
        self.name = name

    def start(self, *args: str, code: int = 0) -> str:
        done = run_start("-d", str(self.repo), *args, env=self.env)
        assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
        return done.stdout

    @contextlib.contextmanager
    def offline(self) -> Iterator[None]:
        """This machine without its remote for a while (its url names no repository): a claim
        made then stays here, provisional, until a sync pushes it."""
        url = git(self.repo, "config", "--get", "remote.origin.url").strip()
        git(self.repo, "config", "remote.origin.url", str(self.repo.parent / "gone.git"))
        try:
            yield
        finally:
            git(self.repo, "config", "remote.origin.url", url)

    def sync(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.start("board", "sync", "--json"))
        return found

    def syncing(self) -> subprocess.Popen[str]:
        """`start board sync --json`, started and not waited for: machines that sync at once."""
        env = {**os.environ, **self.env}
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        return subprocess.Popen(
            [sys.executable, "-m", "start", "-d", str(self.repo), "board", "sync", "--json"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    def run(self, code: int = 0) -> subprocess.CompletedProcess[str]:
        """`start board run --until-empty` with the stand-in agent (tests.fake_headless)."""
        done = run_start(
            "-d", str(self.repo), "board", "run", "--until-empty", "--no-color", env=self.env
        )
        assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
        return done

    def items(self) -> list[dict[str, Any]]:
        """The listing's rows in the board's order (an export's), the same on every machine
        once synced; ids are not: each shows its own items as item-N, another's as
        item-PREFIX.N."""
        found: list[dict[str, Any]] = json.loads(self.start("board", "--all", "--json"))
        exported = self.start("board", "export").splitlines()[1:]
        order = [json.loads(line)["id"] for line in exported]
        return sorted(found, key=lambda each: order.index(each["id"]))

    def id_of(self, title: str) -> str:
        """The id this machine shows the item of that title by."""
        (found,) = [str(each["id"]) for each in self.items() if each["title"] == title]
        return found


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    made = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(made))
    seed = tmp_path / "seed"
    git(tmp_path, "init", "--quiet", "-b", "main", str(seed))
    (seed / "README").write_text("the project\n")
    git(seed, "add", "README")
    git(seed, "commit", "--quiet", "-m", "the project")
    git(seed, "push", "--quiet", str(made), "main")
    return made


def test_items_made_on_one_machine_reach_another_by_sync(tmp_path: Path, remote: Path) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Plan the release", "--as", "ann")
    ann.start("board", "add", "Write the notes", "--as", "ann")
    first = ann.sync()
    assert set(first) == {"arrived", "pushed", "refused", "lost", "last_sync"}
    assert (first["arrived"], len(first["pushed"]), first["refused"], first["lost"]) == (
        [], 2, [], []
    )  # fmt: skip
    assert first["last_sync"]
    second = bob.sync()
    assert (sorted(second["arrived"]), second["pushed"]) == (sorted(first["pushed"]), [])
    # ann's items, shown on bob's board by the shortest prefix of ann's origin (4 characters:
    # no other origin on it shares them... but for a chance of 2 in a million).
    titles = [(each["id"], each["title"], each["status"]) for each in bob.items()]
    prefix = titles[0][0].removeprefix("item-").partition(".")[0]
    assert len(prefix) == 4
    assert titles == [
        (f"item-{prefix}.1", "Plan the release", "pending"),
        (f"item-{prefix}.2", "Write the notes", "pending"),
    ]
    # bob's item goes back to ann; the project's branch never carries the board.
    bob.start("board", "add", "Review", "--as", "bob")
    bob.sync()
    ann.sync()
    assert [each["title"] for each in ann.items()] == [
        "Plan the release", "Write the notes", "Review"
    ]  # fmt: skip
    # The listing says when the board last synced, on stderr: --json stays a list of rows.
    listed = run_start("-d", str(ann.repo), "board", "--json", env=ann.env)
    last = ann.sync()["last_sync"]
    assert isinstance(json.loads(listed.stdout), list)
    listed = run_start("-d", str(ann.repo), "board", "--json", env=ann.env)
    assert listed.stderr == f"start: last synced {last} (start board sync)\n"
    assert git(ann.repo, "ls-tree", "-r", "--name-only", "HEAD").split() == ["README"]
    assert git(ann.repo, "status", "--porcelain") == ""


def test_three_machines_claiming_one_item_end_with_one_holder_on_all(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob, cat = (Machine(tmp_path, remote, name) for name in ("ann", "bob", "cat"))
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    for machine in (ann, bob, cat):
        machine.sync()
    for machine in (ann, bob, cat):  # offline: each holds it here
        with machine.offline():
            machine.start("board", "claim", machine.id_of("Fix the retry"), "--as", machine.name)
    assert ann.sync()["lost"] == []  # ann's claim is pushed first
    for machine in (bob, cat):
        lost = machine.sync()["lost"]
        assert len(lost) == 1
        assert lost[0]["why"].startswith(f"{machine.name}'s claim of ")
        assert ": lost to ann's claim (" in lost[0]["why"]
        assert lost[0]["why"].endswith("), first on the remote")
    ann.sync()
    for machine in (ann, bob, cat):
        held = [(each["title"], each["status"], each["assignee"]) for each in machine.items()]
        assert held == [("Fix the retry", "in_progress", "ann")], machine.name


def test_a_claim_not_yet_pushed_is_unconfirmed_in_the_listing_until_a_sync_pushes_it(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, "ann", setting=False)
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.start("board", "add", "Write the notes", "--as", "ann")
    ann.start("board", "claim", "item-1", "--as", "ann")
    # Sync off: a claim is this machine's alone, and nothing is provisional.
    assert [row["confirmed"] for row in ann.items()] == [True, True]
    config = Path(ann.env["HOME"]) / ".config" / "start" / "config.toml"
    config.write_text('[settings]\nboard_remote = "origin"\n')
    ann.sync()
    assert [row["confirmed"] for row in ann.items()] == [True, True]
    with ann.offline():  # else the claim is pushed at once (automatic sync)
        ann.start("board", "claim", "item-2", "--as", "ann")
    assert [(r["status"], r["confirmed"]) for r in ann.items()] == [
        ("in_progress", True), ("in_progress", False)
    ]  # fmt: skip
    assert [line.split("  ")[:3] for line in ann.start("board", "--all").splitlines()[1:]] == [
        ["item-2", "P2", " in_progress (unconfirmed)"], ["item-1", "P2", " in_progress"]
    ]  # fmt: skip
    tree = json.loads(ann.start("board", "tree", "--json"))
    assert sorted((each["id"], each["confirmed"]) for each in tree) == [
        ("item-1", True), ("item-2", False)
    ]  # fmt: skip
    ann.sync()
    assert [row["confirmed"] for row in ann.items()] == [True, True]
    assert "(unconfirmed)" not in ann.start("board", "--all")


def test_without_board_remote_sync_says_which_setting_to_set(tmp_path: Path, remote: Path) -> None:
    alone = Machine(tmp_path, remote, "alone", setting=False)
    done = run_start("-d", str(alone.repo), "board", "sync", env=alone.env)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == (
        "start: board_remote is not set: the board syncs through a git remote of the project; "
        'set it in the config (board_remote = "origin" under [settings], or start config set '
        "board_remote origin)\n"
    )


def test_offline_a_sync_fails_saying_so_and_the_next_pushes_what_was_made_meanwhile(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Before", "--as", "ann")
    ann.sync()
    away = remote.rename(tmp_path / "away.git")
    ann.start("board", "add", "Offline", "--as", "ann")
    done = run_start("-d", str(ann.repo), "board", "sync", env=ann.env)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("start: the board's remote 'origin' could not be fetched: ")
    assert done.stderr.endswith(
        "; the board works on here, and the next sync brings it up to date\n"
    )
    assert [each["title"] for each in ann.items()] == ["Before", "Offline"]
    away.rename(remote)
    assert len(ann.sync()["pushed"]) == 1
    bob.sync()
    assert [each["title"] for each in bob.items()] == ["Before", "Offline"]


def test_a_remote_that_refuses_pushes_confirms_no_claim_and_loses_nothing(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.sync()
    bob.sync()
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n")
    hook.chmod(0o755)
    ann.start("board", "claim", "item-1", "--as", "ann")
    for _ in range(2):
        done = run_start("-d", str(ann.repo), "board", "sync", env=ann.env)
        assert (done.returncode, done.stderr) == (
            1,
            "start: the board's remote 'origin' did not take the push: remote: pushes are "
            "closed today; the board works on here, and the next sync pushes again\n",
        )
    hook.unlink()
    bob.start("board", "claim", bob.id_of("Fix the retry"), "--as", "bob")
    assert bob.sync()["lost"] == []  # ann's claim never reached the remote: bob's is first
    lost = ann.sync()["lost"]
    assert [each["why"].split(": ", 1)[1].split(" (")[0] for each in lost] == [
        "lost to bob's claim"
    ]
    for machine in (ann, bob):
        held = [(each["status"], each["assignee"]) for each in machine.items()]
        assert held == [("in_progress", "bob")], machine.name


def test_a_machine_offline_for_a_hundred_operations_syncs_to_the_same_board_everywhere(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.sync()  # sync on, an empty board
    bob.sync()
    bob.start("board", "add", "From bob", "--as", "bob")
    bob.sync()
    away = remote.rename(tmp_path / "away.git")
    plan = tmp_path / "plan.jsonl"
    plan.write_text("".join(f'{{"title": "Offline {n}"}}\n' for n in range(1, 98)))
    ann.start("board", "add", "--file", str(plan), "--as", "ann")
    ann.start("board", "claim", "item-1", "--as", "ann")
    ann.start("board", "comment", "item-2", "seen offline", "--as", "ann")
    ann.start("board", "done", "item-1", "--answer", "done offline", "--as", "ann")
    ann.start("board", "sync", code=1)
    away.rename(remote)
    assert len(ann.sync()["pushed"]) == 100
    assert len(bob.sync()["arrived"]) == 100
    # The same board on both, but for provenance: each takes the other's items at read-only.
    exports = {}
    for machine in (ann, bob):
        lines = [json.loads(line) for line in machine.start("board", "export").splitlines()]
        exports[machine.name] = [
            {**each, "level": 0, "answer_level": 0, "id": None} for each in lines
        ]  # ids too: each machine shows its own items as item-N, the other's as item-PREFIX.N
        assert [each.get("title") for each in lines[1:]] == [
            "From bob", *(f"Offline {n}" for n in range(1, 98))
        ]  # fmt: skip
        mine, theirs = ("full", "read-only") if machine is bob else ("read-only", "full")
        assert [lines[1]["level"], lines[2]["level"]] == [mine, theirs]
    assert exports["ann"] == exports["bob"]
    item = exports["bob"][2]
    assert (item["status"], item["answer"], item["comments"]) == ("completed", "done offline", [])
    assert [c["text"] for c in exports["bob"][3]["comments"]] == ["seen offline"]


def test_board_remote_level_is_the_most_another_machines_operations_set(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, "ann")
    bob = Machine(tmp_path, remote, "bob", more='board_remote_level = "edit"\n')
    cat = Machine(tmp_path, remote, "cat")  # the default: read-only
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.sync()
    levels = {}
    for machine in (ann, bob, cat):
        machine.sync()
        exported = machine.start("board", "export").splitlines()[1:]
        levels[machine.name] = [json.loads(line)["level"] for line in exported]
    # ann's own as written; bob's at most edit; cat's at most read-only; never raised.
    assert levels == {"ann": ["full"], "bob": ["edit"], "cat": ["read-only"]}


def test_three_machines_racing_claim_next_through_real_pushes_get_one_winner_an_item(
    tmp_path: Path, remote: Path
) -> None:
    machines = [Machine(tmp_path, remote, name) for name in ("ann", "bob", "cat")]
    ann = machines[0]
    for n in range(1, 4):
        ann.start("board", "add", f"Task {n}", "--as", "ann")
    for machine in machines:
        machine.sync()
    for round_ in range(1, 4):
        for machine in machines:  # offline, so that the syncs below race
            with machine.offline():
                machine.start("board", "claim", "--next", "--as", machine.name)
        started = [machine.syncing() for machine in machines]  # at once: pushes race
        for each in started:
            out, err = each.communicate(timeout=120)
            assert each.returncode == 0, err
            assert set(json.loads(out)) == {"arrived", "pushed", "refused", "lost", "last_sync"}
        for machine in machines:
            machine.sync()
        boards = [[(i["title"], i["assignee"]) for i in m.items()] for m in machines]
        assert boards[0] == boards[1] == boards[2]
        held = [who for _, who in boards[0] if who is not None]
        assert len(held) == round_  # one winner for each item claimed so far
        assert set(held) <= {"ann", "bob", "cat"}


# Kills `start` (the parent of the git that runs it) once, when a push has been taken and the
# sync moves refs/start/remote-board to it: a sync killed between its push and keeping what it
# pushed. Only the `start board sync` this test starts, and only with KILL_MARK there.
KILLER = """#!/bin/sh
[ "$1" = committed ] || exit 0
grep -q ' refs/start/remote-board$' || exit 0
[ -n "$KILL_MARK" ] && [ -e "$KILL_MARK" ] || exit 0
rm -f "$KILL_MARK"
kill -9 "$(awk '{print $4}' /proc/$PPID/stat)"
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the hook finds start in /proc")
def test_a_sync_killed_after_its_push_is_finished_by_the_next_without_pushing_again(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob = Machine(tmp_path, remote, "ann"), Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.sync()
    bob.sync()
    hook = ann.repo / ".git" / "hooks" / "reference-transaction"
    hook.write_text(KILLER)
    hook.chmod(0o755)
    mark = tmp_path / "kill-once"
    mark.write_text("")
    with ann.offline():  # pushed by the sync below, not by the claim's own
        ann.start("board", "claim", "item-1", "--as", "ann")
    killed = run_start(
        "-d", str(ann.repo), "board", "sync", env={**ann.env, "KILL_MARK": str(mark)}
    )
    assert (killed.returncode, mark.exists()) == (-9, False)
    assert ann.sync()["pushed"] == []  # the push was taken: the next sync keeps it
    with bob.offline():
        bob.start("board", "claim", bob.id_of("Fix the retry"), "--as", "bob")
    lost = bob.sync()["lost"]
    assert [each["why"].split(": ", 1)[1].split(" (")[0] for each in lost] == [
        "lost to ann's claim"
    ]
    for machine in (ann, bob):
        held = [(each["status"], each["assignee"]) for each in machine.items()]
        assert held == [("in_progress", "ann")], machine.name


RUNS = f'default_agent = "fake"\n{agent("fake")}'


def test_board_run_runs_only_an_item_whose_claim_a_push_confirmed(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, "ann", more=RUNS)
    bob = Machine(tmp_path, remote, "bob")
    ann.start("board", "add", "Taken elsewhere", "--prompt", "one", "--as", "ann")
    ann.start("board", "add", "Free", "--prompt", "two", "--as", "ann")
    ann.sync()
    bob.sync()
    bob.start("board", "claim", bob.id_of("Taken elsewhere"), "--as", "bob")
    bob.sync()  # bob's claim is on the remote; ann has not fetched it
    ran = ann.run()
    lines = ran.stderr.splitlines()
    assert lines[0].startswith("start · item-1 not run, its claim lost: ")
    assert ": lost to bob's claim (" in lines[0]
    assert lines[1].startswith("start ▸ item-2 claimed by run:")
    assert lines[2].startswith("start ✓ item-2 completed by fake, run ")
    assert not any("item-1 claimed" in line for line in lines)
    bob.sync()  # ann's finish is on the remote: start board run pushed it
    for machine in (ann, bob):
        held = [(i["title"], i["status"], i["assignee"]) for i in machine.items()]
        assert [h[:2] for h in held] == [("Taken elsewhere", "in_progress"), ("Free", "completed")]
        assert held[0][2] == "bob", machine.name


def test_board_run_lets_an_item_go_when_its_claim_cannot_be_pushed_and_says_why(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, "ann", more=RUNS)
    ann.start("board", "add", "Fix the retry", "--prompt", "one", "--as", "ann")
    ann.start("board", "add", "Write the notes", "--prompt", "two", "--as", "ann")
    ann.sync()
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n")
    hook.chmod(0o755)
    ran = ann.run(code=1)
    refused = (
        "the board's remote 'origin' did not take the push: remote: pushes are closed today; "
        "the board works on here, and the next sync pushes again"
    )
    assert ran.stderr == (
        f"start · item-1 released, pending again: its claim was not confirmed: {refused}\n"
        f"start: item-1 was let go without running: start board run runs an item only once its "
        f"claim is pushed, and {refused}; start board run again once start board sync "
        "succeeds\n"
    )
    rows = [(row["status"], row["assignee"], row["confirmed"]) for row in ann.items()]
    assert rows == [("pending", None, True), ("pending", None, True)]
    hook.unlink()
    ran = ann.run()
    assert [row["status"] for row in ann.items()] == ["completed", "completed"]
    assert [line.split(" ")[:3] for line in ran.stderr.splitlines()[:1]] == [
        ["start", "▸", "item-1"]
    ]  # fmt: skip


def test_board_run_with_sync_on_and_no_board_remote_claims_nothing(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, "ann", more=RUNS)
    ann.start("board", "add", "Fix the retry", "--prompt", "one", "--as", "ann")
    ann.sync()
    config = Path(ann.env["HOME"]) / ".config" / "start" / "config.toml"
    config.write_text(f"[settings]\n{RUNS}")
    done = run_start("-d", str(ann.repo), "board", "run", "--until-empty", env=ann.env)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == (
        "start: board_remote is not set: the board syncs through a git remote of the project; "
        'set it in the config (board_remote = "origin" under [settings], or start config set '
        "board_remote origin)\n"
    )
    assert [(row["status"], row["assignee"]) for row in ann.items()] == [("pending", None)]


def test_an_operation_forged_under_a_name_not_yet_pushed_is_written_again_under_a_free_one(
    tmp_path: Path, remote: Path
) -> None:
    """Mallory pushes operations under the names ann's next ones take: ann's sync writes her
    claim again under the first name free on the remote, pushes it, and refuses the forgeries."""
    from start.board import gitlog
    from start.board.oplog import Clock, Op, encode

    ann = Machine(tmp_path, remote, "ann")
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.sync()
    listed = git(tmp_path, "--git-dir", str(remote), "ls-tree", "-r", "--name-only", gitlog.REF)
    origin = listed.split()[1].split("/")[1]  # ops/ORIGIN/0/1: the item made before sync
    with ann.offline():
        ann.start("board", "claim", "item-1", "--as", "ann")  # ORIGIN/2, not yet pushed
    mallory = tmp_path / "mallory"
    git(tmp_path, "clone", "--quiet", str(remote), str(mallory))
    forged = {
        f"{origin}/{seq}": encode(Op(origin, seq, Clock(5000), "mallory", "full", "claim",
                                     f"{origin}.1", 0, {}))
        for seq in (2, 3)
    }  # fmt: skip
    gitlog.sync(mallory, "origin", "cccccccccccc")
    gitlog.append(mallory, forged)
    gitlog.sync(mallory, "origin", "cccccccccccc")
    synced = ann.sync()
    assert (synced["arrived"], synced["pushed"], synced["lost"]) == ([], [f"{origin}/4"], [])
    assert synced["refused"] == [
        {"name": f"{origin}/2", "why": (
            f"operation {origin}/2: the board's log on 'origin' holds another operation under "
            "this name, which this machine wrote and had not pushed (a forged name); it is "
            f"written again as {origin}/4, and pushed under that name")},
        *({"name": name, "why": (
            f"operation {name}: it names this machine's origin ({origin}), and this machine "
            "did not write it: a forged origin; it is not read")} for name in sorted(forged)),
    ]  # fmt: skip
    held = [(row["status"], row["assignee"], row["confirmed"]) for row in ann.items()]
    assert held == [("in_progress", "ann", True)]
    # The next sync has nothing left to write again, and the forgeries stay refused.
    again = ann.sync()
    assert (again["pushed"], [r["name"] for r in again["refused"]]) == ([], sorted(forged))
    ann.start("board", "add", "Write the notes", "--as", "ann")
    assert ann.sync()["pushed"] == [f"{origin}/5"]


def test_an_operation_with_a_clock_years_ahead_is_held_back_and_pins_no_title(
    tmp_path: Path, remote: Path
) -> None:
    """Taken, an update stamped in the year 6429 would win every later write of its field."""
    from start.board import gitlog
    from start.board.oplog import MOST_WALL, Clock, Op, encode

    ann = Machine(tmp_path, remote, "ann")
    ann.start("board", "add", "Fix the retry", "--as", "ann")
    ann.sync()
    listed = git(tmp_path, "--git-dir", str(remote), "ls-tree", "-r", "--name-only", gitlog.REF)
    item = listed.split()[1].split("/")[1] + ".1"
    mallory = tmp_path / "mallory"
    git(tmp_path, "clone", "--quiet", str(remote), str(mallory))
    far = Op("cccccccccccc", 1, Clock(MOST_WALL), "mallory", "full", "update", item, 0,
             {"title": "Mine forever"})  # fmt: skip
    gitlog.append(mallory, {far.name: encode(far)})
    gitlog.sync(mallory, "origin", "cccccccccccc")
    synced = ann.sync()
    assert synced["arrived"] == []
    assert [each["name"] for each in synced["refused"]] == [far.name]
    why = synced["refused"][0]["why"]
    assert why.startswith(
        f"operation {far.name}: its clock says 6429-10-17T02:45:55+00:00, more than 24 hours "
        "ahead of this machine's "
    )
    assert why.endswith(
        "; it is held back, and taken by a sync once this machine's clock is within that of it "
        "(if the clock of the machine that wrote it is wrong, set it right there)"
    )
    ann.start("board", "update", "item-1", "--title", "Fix the retry, today", "--as", "ann")
    ann.sync()
    assert [row["title"] for row in ann.items()] == ["Fix the retry, today"]
