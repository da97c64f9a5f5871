"""The log on refs/start/board through real git (start.board.gitlog): a bare repository is the
remote and clones are the machines. A push confirms a claim, the earlier push wins, the project's
index, work tree and branches are never touched, and a hostile remote's forged, malformed or
rewritten log is refused with nothing local lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from start.board import Change, Holder, gitlog
from start.board.gitlog import REF, GitLogError, OfflineError
from start.board.oplog import MOST_WALL, Clock, Op, Refused, encode
from start.board.replay import Replayed, replay
from tests.conftest import git


class Machine:
    """A clone of the remote that writes operations of its own origin."""

    def __init__(self, root: Path, remote: Path, origin: str, person: str) -> None:
        self.repo = root / person
        git(root, "clone", "--quiet", str(remote), str(self.repo))
        self.origin, self.person, self.seq = origin, person, 0

    def write(self, kind: str, item: str, epoch: int = 0, **fields: Any) -> Op:
        self.seq += 1
        made = Op(self.origin, self.seq, Clock(1000 + self.seq), self.person, "full", kind, item,
                  epoch, fields)  # fmt: skip
        gitlog.append(self.repo, {made.name: encode(made)})
        return made

    def board(self) -> Replayed:
        found, refused = gitlog.entries(self.repo)
        assert refused == ()
        return replay(found)


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    made = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(made))
    # The project's own history: a branch with a file, which the board must never touch.
    work = tmp_path / "seed"
    git(tmp_path, "init", "--quiet", "-b", "main", str(work))
    (work / "README").write_text("the project\n")
    git(work, "add", "README")
    git(work, "commit", "--quiet", "-m", "the project")
    git(work, "push", "--quiet", str(made), "main")
    return made


A = "aaaaaaaaaaaa"
B = "bbbbbbbbbbbb"
C = "cccccccccccc"
ITEM = f"{A}.1"


def test_a_sync_pushes_this_machines_operations_and_brings_the_others(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, B, "bob")
    made = ann.write("create", ITEM, title="Fix the retry")
    synced = gitlog.sync(ann.repo, "origin", A)
    assert (synced.arrived, synced.pushed, synced.refused) == ((), (made.name,), ())
    assert gitlog.sync(bob.repo, "origin", B).arrived == (made.name,)
    claim = bob.write("claim", ITEM)
    # Unconfirmed until pushed: bob's machine holds it, and says so.
    assert (bob.board().items[ITEM].holder, bob.board().items[ITEM].confirmed) == ("bob", False)
    gitlog.sync(bob.repo, "origin", B)
    assert bob.board().items[ITEM].confirmed
    assert gitlog.sync(ann.repo, "origin", A).arrived == (claim.name,)
    assert ann.board() == bob.board()


def test_of_two_claims_the_first_pushed_wins_on_every_machine(tmp_path: Path, remote: Path) -> None:
    ann, bob = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, B, "bob")
    ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    gitlog.sync(bob.repo, "origin", B)
    bob.write("claim", ITEM)  # bob claims first by the clock, offline
    ann.write("claim", ITEM)
    gitlog.sync(ann.repo, "origin", A)  # ann's push lands first
    synced = gitlog.sync(bob.repo, "origin", B)  # fetches ann's claim, pushes his own after it
    assert len(synced.pushed) == 1
    gitlog.sync(ann.repo, "origin", A)
    for machine in (ann, bob):
        found = machine.board()
        assert (found.items[ITEM].holder, found.items[ITEM].confirmed) == ("ann", True)
        assert [lost.why for lost in found.lost] == [
            f"bob's claim of {ITEM} ({B}/1) at epoch 0: lost to ann's claim ({A}/2), first on "
            "the remote"
        ]


def test_the_board_never_touches_the_index_the_work_tree_or_a_branch(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, A, "ann")
    (ann.repo / "README").write_text("edited, not staged\n")
    (ann.repo / "new").write_text("staged\n")
    git(ann.repo, "add", "new")
    before = (git(ann.repo, "status", "--porcelain"), git(ann.repo, "rev-parse", "HEAD"))
    ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    assert (git(ann.repo, "status", "--porcelain"), git(ann.repo, "rev-parse", "HEAD")) == before
    assert git(ann.repo, "branch", "-a", "--format=%(refname)").split() == [
        "refs/heads/main",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/main",
    ]
    assert git(tmp_path, "ls-remote", str(remote)).split()[1::2] == [
        "HEAD",
        "refs/heads/main",
        "refs/start/board",
    ]
    assert git(ann.repo, "ls-tree", "-r", "--name-only", REF).split() == [
        "format",
        f"ops/{A}/0/1",
    ]


def test_a_forged_origin_and_bytes_that_are_no_operation_are_refused_and_nothing_is_lost(
    tmp_path: Path, remote: Path
) -> None:
    ann, mallory = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, C, "mallory")
    made = ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    gitlog.sync(mallory.repo, "origin", C)
    # Mallory writes an operation under ann's origin, and garbage at an operation's path.
    forged = Op(A, 7, Clock(5000), "ann", "full", "finish", ITEM, 0, {"status": "failed"})
    gitlog.append(mallory.repo, {forged.name: encode(forged), f"{C}/1": b"not an operation"})
    gitlog.sync(mallory.repo, "origin", C)
    synced = gitlog.sync(ann.repo, "origin", A)
    assert synced.refused == (
        Refused(f"{A}/7", (
            f"operation {A}/7: it names this machine's origin ({A}), and this machine did not "
            "write it: a forged origin; it is not read")),
        Refused(f"{C}/1", f"operation {C}/1: not JSON in UTF-8 (JSONDecodeError); it is not read"),
    )  # fmt: skip
    found = ann.board()
    assert found.items[ITEM].status == "pending"
    assert found.items[ITEM].transitions == (made.name,)
    # Ann goes on writing and syncing: the remote keeps growing, and her log stays her own.
    ann.write("claim", ITEM)
    gitlog.sync(ann.repo, "origin", A)
    assert ann.board().items[ITEM].confirmed


def test_a_rewritten_remote_log_is_refused_whole_and_the_local_log_is_kept(
    tmp_path: Path, remote: Path
) -> None:
    ann, mallory = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, C, "mallory")
    ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    # Mallory force-pushes a log of her own in place of the remote's.
    own = Op(C, 1, Clock(9), "mallory", "full", "create", f"{C}.1", 0, {"title": "Mine"})
    gitlog.append(mallory.repo, {own.name: encode(own)})
    git(mallory.repo, "push", "--quiet", "--force", "origin", f"{REF}:{REF}")
    local = gitlog.tip(ann.repo, REF)
    seen = gitlog.tip(ann.repo, gitlog.REMOTE_REF)
    with pytest.raises(GitLogError) as caught:
        gitlog.sync(ann.repo, "origin", A)
    rewritten = gitlog.tip(mallory.repo, REF)
    assert str(caught.value) == (
        f"the board's log on 'origin' was rewritten ({rewritten} does not follow it) since this "
        f"machine fetched {seen}. Nothing was taken from it, and nothing here is lost; to put the "
        "log back as it was: git push --force origin refs/start/remote-board:refs/start/board"
    )
    assert (gitlog.tip(ann.repo, REF), gitlog.tip(ann.repo, gitlog.REMOTE_REF)) == (local, seen)
    assert list(ann.board().items) == [ITEM]


def test_offline_the_log_grows_here_and_the_sync_says_the_remote_is_out_of_reach(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, A, "ann")
    remote.rename(tmp_path / "gone.git")
    ann.write("create", ITEM, title="Fix the retry")
    with pytest.raises(OfflineError) as caught:
        gitlog.sync(ann.repo, "origin", A)
    assert str(caught.value).startswith("the board's remote 'origin' could not be fetched: ")
    assert str(caught.value).endswith(
        "; the board works on here, and the next sync brings it up to date"
    )
    (tmp_path / "gone.git").rename(remote)
    assert gitlog.sync(ann.repo, "origin", A).pushed == (f"{A}/1",)
    assert ann.board().items[ITEM].confirmed


def test_a_remote_that_refuses_pushes_confirms_nothing_and_loses_nothing(
    tmp_path: Path, remote: Path
) -> None:
    ann = Machine(tmp_path, remote, A, "ann")
    ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n")
    hook.chmod(0o755)
    ann.write("claim", ITEM)
    for _ in range(2):
        with pytest.raises(OfflineError) as caught:
            gitlog.sync(ann.repo, "origin", A)
        assert str(caught.value) == (
            "the board's remote 'origin' did not take the push: remote: pushes are closed "
            "today; the board works on here, and the next sync pushes again"
        )
        assert (ann.board().items[ITEM].holder, ann.board().items[ITEM].confirmed) == (
            "ann",
            False,
        )
    hook.unlink()
    assert gitlog.sync(ann.repo, "origin", A).pushed == (f"{A}/2",)
    assert ann.board().items[ITEM].confirmed


@pytest.mark.slow
def test_machines_racing_to_claim_through_real_pushes_get_one_winner_each_round(
    tmp_path: Path, remote: Path
) -> None:
    """Three clones claim each item at once and sync at once: a machine that sees its claim
    confirmed after its own sync is the one every machine ends up agreeing holds the item."""
    from concurrent.futures import ThreadPoolExecutor

    machines = [
        Machine(tmp_path, remote, origin, person)
        for origin, person in ((A, "ann"), (B, "bob"), (C, "cat"))
    ]
    for round_ in range(1, 9):
        item = f"{A}.{round_}"
        machines[0].write("create", item, title=f"Round {round_}")
        gitlog.sync(machines[0].repo, "origin", A)
        for machine in machines[1:]:
            gitlog.sync(machine.repo, "origin", machine.origin)

        def claim(machine: Machine, item: str = item) -> bool:
            epoch = machine.board().items[item].epoch
            machine.write("claim", item, epoch)
            gitlog.sync(machine.repo, "origin", machine.origin)
            mine = machine.board().items[item]
            return mine.holder == machine.person and mine.confirmed

        with ThreadPoolExecutor(len(machines)) as pool:
            confirmed = list(pool.map(claim, machines))
        for machine in machines:
            gitlog.sync(machine.repo, "origin", machine.origin)
        boards = [machine.board() for machine in machines]
        assert boards[0] == boards[1] == boards[2]
        holder = boards[0].items[item].holder
        assert confirmed.count(True) == 1
        assert machines[confirmed.index(True)].person == holder


def test_another_operation_under_a_name_this_machine_wrote_confirms_nothing_of_it(
    tmp_path: Path, remote: Path
) -> None:
    ann, mallory = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, C, "mallory")
    ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    gitlog.sync(mallory.repo, "origin", C)
    claim = ann.write("claim", ITEM)  # not yet pushed
    # Mallory guesses the name of ann's next operation and pushes another under it.
    forged = claim._replace(author="mallory")
    gitlog.append(mallory.repo, {forged.name: encode(forged)})
    gitlog.sync(mallory.repo, "origin", C)
    with pytest.raises(GitLogError) as caught:
        gitlog.sync(ann.repo, "origin", A)
    assert str(caught.value) == (
        f"the board's log on 'origin' holds other operations under names this machine wrote "
        f"({claim.name}): they cannot be pushed under those names. Nothing here is lost; start "
        "board sync writes those not yet pushed again under free names, and who writes the "
        "remote's log can put back the others"
    )
    item = ann.board().items[ITEM]
    assert (item.holder, item.confirmed) == ("ann", False)


def test_a_sync_that_dies_after_its_push_is_completed_by_the_next(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = Machine(tmp_path, remote, A, "ann")
    ann.write("create", ITEM, title="Fix the retry")
    moved = gitlog.move

    def dies(repo: Path, ref: str, new: str, old: str | None) -> bool:
        if ref == REF:  # the push went through; the process is killed before it notes so
            raise KeyboardInterrupt
        return moved(repo, ref, new, old)

    monkeypatch.setattr(gitlog, "move", dies)
    with pytest.raises(KeyboardInterrupt):
        gitlog.sync(ann.repo, "origin", A)
    monkeypatch.setattr(gitlog, "move", moved)
    synced = gitlog.sync(ann.repo, "origin", A)
    assert (synced.arrived, synced.pushed) == ((), ())  # it was pushed: nothing twice
    assert ann.board().items[ITEM].confirmed
    assert gitlog.tip(ann.repo, REF) == git(tmp_path, "ls-remote", str(remote), REF).split()[0]


def test_a_remote_log_of_paths_and_sizes_no_operation_has_is_read_around_them(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann, mallory = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, C, "mallory")
    made = ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    gitlog.sync(mallory.repo, "origin", C)
    big = Op(C, 1, Clock(9), "mallory", "full", "create", f"{C}.1", 0, {"title": "x" * 200})
    gitlog.append(mallory.repo, {big.name: encode(big)})
    # A file at a path that keeps no operation, written into mallory's log with plumbing.
    at = gitlog.tip(mallory.repo, REF)
    assert at is not None
    files = {
        where: (mode, kind, oid)
        for mode, kind, oid, _, where in gitlog._tree(mallory.repo, at, REF)
    }
    (mallory.repo / "evil").write_text("#!/bin/sh\n")
    evil = git(mallory.repo, "hash-object", "-w", "evil").strip()
    tree = gitlog._mktree(mallory.repo, {**files, "hooks/evil": ("100755", "blob", evil)})
    commit = git(mallory.repo, "commit-tree", tree, "-p", at, "-m", "x").strip()
    git(mallory.repo, "push", "--quiet", "origin", f"{commit}:{REF}")
    monkeypatch.setattr(gitlog, "MOST_OP_BYTES", 200)
    synced = gitlog.sync(ann.repo, "origin", A)
    assert synced.refused == (
        Refused(f"{C}/1", f"operation {C}/1: {len(encode(big))} bytes, over the limit of 200; it "
                          "is not read"),
        Refused("hooks/evil", "hooks/evil: no operation's path in the board's log; it is not read"),
    )  # fmt: skip
    assert list(ann.board().items) == [made.item]
    # Nothing of it reaches this machine's log, and nothing at such a path is pushed again.
    assert git(ann.repo, "ls-tree", "-r", "--name-only", REF).split() == ["format", f"ops/{A}/0/1"]


def test_a_removed_remote_log_is_refused_and_the_message_puts_it_back(
    tmp_path: Path, remote: Path
) -> None:
    ann, bob = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, B, "bob")
    ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    gitlog.sync(bob.repo, "origin", B)
    git(tmp_path, "--git-dir", str(remote), "update-ref", "-d", REF)
    ann.write("claim", ITEM)
    with pytest.raises(GitLogError) as caught:
        gitlog.sync(ann.repo, "origin", A)
    seen = gitlog.tip(ann.repo, gitlog.REMOTE_REF)
    assert str(caught.value) == (
        f"the board's log on 'origin' was removed since this machine fetched {seen}. Nothing "
        "was taken from it, and nothing here is lost; to put the log back as it was: git push "
        "--force origin refs/start/remote-board:refs/start/board"
    )
    git(ann.repo, "push", "--quiet", "--force", "origin", f"{gitlog.REMOTE_REF}:{REF}")
    assert gitlog.sync(ann.repo, "origin", A).pushed == (f"{A}/2",)
    gitlog.sync(bob.repo, "origin", B)
    assert bob.board() == ann.board()
    assert ann.board().items[ITEM].confirmed


def test_a_remote_log_of_more_entries_than_the_limit_is_refused_as_git_lists_it(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree of more entries than a log may hold is refused after reading one more than the
    limit, never listed whole; nothing of it is taken, and the next sync reads it again."""
    ann, mallory = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, C, "mallory")
    made = ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    gitlog.sync(mallory.repo, "origin", C)
    for number in range(1, 41):
        mallory.write("create", f"{C}.{number}", title=f"Flood {number}")
    gitlog.sync(mallory.repo, "origin", C)
    listed = []
    fields = gitlog._fields

    def counted(repo: Path, *args: str) -> Any:
        for field in fields(repo, *args):
            listed.append(args[0])
            yield field

    monkeypatch.setattr(gitlog, "_fields", counted)
    monkeypatch.setattr(gitlog, "MOST_OPS", 5)
    seen = gitlog.tip(ann.repo, gitlog.REMOTE_REF)
    ann.write("claim", ITEM)
    listed.clear()
    with pytest.raises(GitLogError) as caught:
        gitlog.sync(ann.repo, "origin", A)
    assert str(caught.value) == (
        "the board's log on 'origin' holds more than 5 entries, over the limit of 5 operations "
        "a log may hold: start reads none of it, and nothing here is lost; ask who writes the "
        "board's log to start a new one"
    )
    assert listed == ["ls-tree"] * (3 + 7)  # ann's own log (3), then the remote's to the 7th
    assert gitlog.tip(ann.repo, gitlog.REMOTE_REF) == seen  # as last taken: read again next time
    monkeypatch.setattr(gitlog, "MOST_OPS", 500_000)
    found = ann.board()
    assert (list(found.items), found.items[ITEM].confirmed) == ([made.item], False)
    synced = gitlog.sync(ann.repo, "origin", A)
    assert (len(synced.arrived), synced.pushed) == (40, (f"{A}/2",))


def test_a_sync_reads_at_most_its_limit_of_bytes_and_only_operations_it_has_not_read(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann, mallory = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, C, "mallory")
    made = ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    big = [mallory.write("create", f"{C}.{n}", title="x" * 900) for n in (1, 2, 3)]
    gitlog.sync(mallory.repo, "origin", C)
    total = sum(len(encode(op)) for op in big)
    monkeypatch.setattr(gitlog, "MOST_READ_BYTES", 2000)
    with pytest.raises(GitLogError) as caught:
        gitlog.sync(ann.repo, "origin", A)
    assert str(caught.value) == (
        f"the board's log on 'origin' holds {total:,} bytes of operations this machine has not "
        "read, over the limit of 2,000 a sync reads: start reads none of it, and nothing here is "
        "lost; ask who writes the board's log to start a new one"
    )
    assert list(ann.board().items) == [made.item]
    monkeypatch.setattr(gitlog, "MOST_READ_BYTES", total)
    assert gitlog.sync(ann.repo, "origin", A).arrived == tuple(op.name for op in big)
    # What was read is not read again: a sync after it reads only what is new.
    monkeypatch.setattr(gitlog, "MOST_READ_BYTES", 2000)
    small = mallory.write("comment", f"{C}.1", text="small")
    gitlog.sync(mallory.repo, "origin", C)
    assert gitlog.sync(ann.repo, "origin", A).arrived == (small.name,)
    assert sorted(ann.board().items) == sorted([made.item, *(op.item for op in big)])


def test_an_operation_with_a_clock_far_ahead_is_held_back_and_pins_no_field(
    tmp_path: Path, remote: Path
) -> None:
    """An update whose clock is years ahead would win every later write of its field: it is
    held back (refused, read again by each sync) until this machine's clock nears it."""
    ann, mallory = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, C, "mallory")
    ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    gitlog.sync(mallory.repo, "origin", C)
    far = Op(C, 1, Clock(MOST_WALL), "mallory", "full", "update", ITEM, 0,
             {"title": "Mine forever"})  # fmt: skip
    gitlog.append(mallory.repo, {far.name: encode(far)})
    gitlog.sync(mallory.repo, "origin", C)
    now = 1_800_000_000_000  # 2027-01-15T08:00:00Z
    for _ in range(2):
        synced = gitlog.sync(ann.repo, "origin", A, now)
        assert synced.refused == (
            Refused(far.name, (
                f"operation {far.name}: its clock says 6429-10-17T02:45:55+00:00, more than 24 "
                "hours ahead of this machine's 2027-01-15T08:00:00+00:00; it is held back, and "
                "taken by a sync once this machine's clock is within that of it (if the clock "
                "of the machine that wrote it is wrong, set it right there)")),
        )  # fmt: skip
    ann.write("update", ITEM, title="Fix the retry, today")
    gitlog.sync(ann.repo, "origin", A, now)
    assert ann.board().items[ITEM].title == "Fix the retry, today"
    # Once this machine's time is within a day of it, it is taken like any other.
    synced = gitlog.sync(ann.repo, "origin", A, far.clock.wall - 3600_000)
    assert (synced.arrived, synced.refused) == ((far.name,), ())
    assert ann.board().items[ITEM].title == "Mine forever"


@pytest.mark.slow
def test_a_sync_after_ten_thousand_operations_checks_only_those_that_are_new(
    tmp_path: Path, remote: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each operation is read from git and checked once, when it arrives: the syncs after it
    (start board run syncs at each claim) read and check only what is new, however long the
    log; the board is made again from the operations the store keeps."""
    from start.board import file as boardfile
    from start.board import oplog, syncing

    bob = Machine(tmp_path, remote, B, "bob")
    made = [
        Op(B, n, Clock(1000 + n), "bob", "full", "create", f"{B}.{n}", 0, {"title": f"Item {n}"})
        for n in range(1, 10_001)
    ]
    gitlog.append(bob.repo, {op.name: encode(op) for op in made})
    gitlog.sync(bob.repo, "origin", B)
    checked = []
    check = oplog._checked

    def counted(found: Any, where: str) -> Op:
        checked.append(where)
        return check(found, where)

    monkeypatch.setattr(oplog, "_checked", counted)
    ann = tmp_path / "ann"
    git(tmp_path, "clone", "--quiet", str(remote), str(ann))
    with boardfile.opened(str(ann)) as opened:
        first = syncing.sync(opened, "origin", "read-only")
        assert len(first.arrived) == 10_000
        assert len(checked) >= 10_000
        bob.seq = 10_000
        last = bob.write("update", f"{B}.1", title="Item 1, again")
        gitlog.sync(bob.repo, "origin", B)
        checked.clear()
        again = syncing.sync(opened, "origin", "read-only")
        assert again.arrived == (last.name,)
        # Read by the union, by this machine's log's new entries, and written to the store.
        assert checked == [last.name] * 3
        assert opened.get(f"item-{B}.1").title == "Item 1, again"
        assert len(opened.connection.execute("SELECT seq FROM items").fetchall()) == 10_000


def test_a_remote_log_with_a_path_longer_than_any_log_has_is_refused_whole(
    tmp_path: Path, remote: Path
) -> None:
    ann, mallory = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, C, "mallory")
    made = ann.write("create", ITEM, title="Fix the retry")
    gitlog.sync(ann.repo, "origin", A)
    gitlog.sync(mallory.repo, "origin", C)
    at = gitlog.tip(mallory.repo, REF)
    assert at is not None
    files = {w: (m, k, o) for m, k, o, _, w in gitlog._tree(mallory.repo, at, REF)}
    long = "x" * 70_000
    tree = gitlog._mktree(mallory.repo, {**files, long: files["format"]})
    commit = git(mallory.repo, "commit-tree", tree, "-p", at, "-m", "x").strip()
    git(mallory.repo, "push", "--quiet", "origin", f"{commit}:{REF}")
    seen = gitlog.tip(ann.repo, gitlog.REMOTE_REF)
    with pytest.raises(GitLogError) as caught:
        gitlog.sync(ann.repo, "origin", A)
    assert str(caught.value) == (
        f"git ls-tree in {ann.repo} listed a path or line of more than 65,536 bytes, which no "
        "board's log has: start reads none of it, and nothing here is lost; ask who writes the "
        "board's log to start a new one"
    )
    assert gitlog.tip(ann.repo, gitlog.REMOTE_REF) == seen
    assert list(ann.board().items) == [made.item]


def test_a_sync_that_brings_nothing_reads_no_log_and_rebuilds_nothing(
    tmp_path: Path, remote: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the board took the log, a sync with nothing new lists no tree and replays no item;
    one that brings an operation replays its item alone; one killed after its push, before the
    board took what it pushed, is finished by the next, which reads the log again."""
    from start.board import file as boardfile
    from start.board import journal, syncing

    bob = Machine(tmp_path, remote, B, "bob")
    for n in range(1, 6):
        bob.write("create", f"{B}.{n}", title=f"Item {n}")
    gitlog.sync(bob.repo, "origin", B)
    ann = tmp_path / "ann"
    git(tmp_path, "clone", "--quiet", str(remote), str(ann))
    reads: list[str] = []
    read = gitlog.read

    def counted(repo: Path, ref: str, **kwargs: Any) -> gitlog.Log:
        reads.append(ref)
        return read(repo, ref, **kwargs)

    monkeypatch.setattr(gitlog, "read", counted)
    monkeypatch.setattr(journal, "_MOST_IN_PART", 1)
    with boardfile.opened(str(ann)) as opened:
        assert len(syncing.sync(opened, "origin", "read-only").arrived) == 5
        reads.clear()
        with monkeypatch.context() as patched:
            patched.setattr(journal, "_rebuilt", None)  # a full rebuild would fail
            patched.setattr(journal, "_rebuilt_in_part", None)
            again = syncing.sync(opened, "origin", "read-only")
        assert (again.arrived, again.pushed, reads) == ((), (), [])
        last = bob.write("update", f"{B}.2", title="Item 2, again")
        gitlog.sync(bob.repo, "origin", B)
        replayed: list[set[str]] = []
        part = journal._rebuilt_in_part

        def watched(*args: Any) -> Any:
            made = part(*args)
            assert made is not None  # in part: no number moves
            replayed.append(set(made.items))
            return made

        monkeypatch.setattr(journal, "_rebuilt_in_part", watched)
        assert syncing.sync(opened, "origin", "read-only").arrived == (last.name,)
        assert replayed == [{f"{B}.2"}]
        assert opened.get(opened.shown_key(f"{B}.2")).title == "Item 2, again"
        # A sync killed after its push: the board has not taken what it pushed.
        opened.update(opened.shown_key(f"{B}.3"), Holder("ann"), Change(title="Ann's"))
        monkeypatch.setattr(journal, "take", _killed)
        with pytest.raises(KeyboardInterrupt):
            syncing.sync(opened, "origin", "read-only")
        monkeypatch.undo()
        monkeypatch.setattr(gitlog, "read", counted)
        reads.clear()
        done = syncing.sync(opened, "origin", "read-only")
        assert (done.arrived, done.pushed) == ((), ())
        assert reads  # the log is read again: it moved since the board took it
        # The push's place is taken: every operation is on the remote, the change confirmed.
        assert None not in journal.known(opened.connection).values()
        assert opened.get(opened.shown_key(f"{B}.3")).title == "Ann's"


def _killed(*args: Any, **kwargs: Any) -> set[str]:
    raise KeyboardInterrupt


def test_what_a_sync_says_of_the_log_it_left_is_what_reading_that_log_gives(
    tmp_path: Path, remote: Path
) -> None:
    """`Synced.log` (so that the board takes a sync's operations without listing the logs
    again) holds each operation, its place and its bytes as reading the logs whole does: after
    a push, after an arrival, after both, and for a first push to a remote with no log."""
    ann, bob = Machine(tmp_path, remote, A, "ann"), Machine(tmp_path, remote, B, "bob")
    said: list[gitlog.Log] = []
    for machine, kind in ((ann, "create"), (bob, "claim"), (ann, "update"), (bob, "comment")):
        if kind == "create":
            machine.write(kind, ITEM, title="Fix the retry")
        elif kind == "update":
            machine.write(kind, ITEM, title="again")
        elif kind == "comment":
            machine.write(kind, ITEM, text="hi")
        else:
            machine.write(kind, ITEM)
        for each in (machine, ann, bob):
            synced = gitlog.sync(each.repo, "origin", each.origin)
            if not (synced.arrived or synced.pushed):
                assert synced.log is None  # nothing moved: nothing was listed
                continue
            assert synced.log is not None
            said.append(synced.log)
            fast = gitlog.taking(each.repo, {}, None, synced.log)
            assert fast == gitlog.taking(each.repo, {})
            assert fast.entries and all(e.position is not None for e in fast.entries)
    assert len(said) == 8  # each write pushed once, and brought once to the other machine
    # Another machine's log moved meanwhile: what the sync said is not taken.
    synced = gitlog.sync(ann.repo, "origin", A)
    ann.write("comment", ITEM, text="after")
    assert gitlog.taking(ann.repo, {}, None, synced.log) == gitlog.taking(ann.repo, {})
