"""The board's races with real processes: `start mcp` sessions (the SDK's own client over stdio)
claiming the next ready item at once, an archive and a claim of one item meeting round after
round, and an archive of an item that a live session holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_start, write_tree

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

CONFIG = """
[settings]
default_agent = "stand-in"

[agents.stand-in]
bin = "true"
command = "{bin} {prompt}"
"""


@pytest.fixture
def project(isolated: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def start(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_start(*args, cwd=project)


def item(project: Path, id_: str) -> Any:
    shown = start(project, "board", "show", id_, "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def server(project: Path) -> Any:
    """How the SDK's client starts a real `start mcp` for the project."""
    from mcp import StdioServerParameters

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "start", "mcp"], env=env, cwd=str(project)
    )


def test_sessions_claiming_the_next_item_at_once_each_get_other_items(
    project: Path, anyio_backend: str
) -> None:
    """Four `start mcp` processes, each claiming the next ready item until none is left, all at
    once: each of the ten items goes to one session, none twice, the highest priority first in
    the order the claims committed; each session ends on the answer that nothing is ready."""
    import anyio
    from mcp import Client

    for n in range(10):
        start(project, "board", "add", f"item {n}", "--priority", str(n % 3))
    taken: dict[str, list[str]] = {}
    last: list[dict[str, Any]] = []

    async def work(client: Any, go: anyio.Event) -> None:
        await go.wait()
        while True:
            claimed = (await client.call_tool("board_tasks_claim", {})).structured_content
            if claimed.get("item", True) is None:
                last.append(claimed)
                return
            taken.setdefault(claimed["assignee"], []).append(claimed["id"])

    async def race() -> None:
        go = anyio.Event()
        async with (
            Client(server(project), mode="legacy") as a,
            Client(server(project), mode="legacy") as b,
            Client(server(project), mode="legacy") as c,
            Client(server(project), mode="legacy") as d,
            anyio.create_task_group() as group,
        ):
            for client in (a, b, c, d):
                group.start_soon(work, client, go)
            go.set()  # every session is up: they claim at once

    anyio.run(race)
    ids = [id_ for claims in taken.values() for id_ in claims]
    assert sorted(ids, key=lambda id_: int(id_[5:])) == [f"item-{n}" for n in range(1, 11)]
    assert all(name.startswith("mcp:") for name in taken)
    assert (
        last
        == [
            {
                "item": None,
                "blocked": 0,
                "in_progress": 10,
                "message": "nothing is ready to claim: 10 in progress (board_tasks_watch ID waits "
                "for one to end)",
            }
        ]
        * 4
    )
    from start.board import file as boardfile

    # The board's events, in the order the claims committed: one claim of each item, by the
    # session that was told it got it, the highest priority first. (The items are pending again
    # now: the sessions' processes have ended, and their claims with them.)
    with boardfile.opened(str(project)) as opened:
        claims = opened.connection.execute(
            "SELECT e.item, e.actor, i.priority FROM events e JOIN items i ON i.seq = e.item "
            "WHERE e.op = 'claim' ORDER BY e.seq"
        ).fetchall()
    told = {id_: name for name, ids in taken.items() for id_ in ids}
    assert [(f"item-{seq}", actor) for seq, actor, _ in claims] == [
        (id_, told[id_]) for id_ in (f"item-{seq}" for seq, _, _ in claims)
    ]
    assert len(claims) == 10
    assert [priority for _, _, priority in claims] == [0] * 4 + [1] * 3 + [2] * 3


# One racer of the archive-claim race, a process for all its rounds: for round N it says it is
# ready (the file OP-N in argv[1]), waits for go-N, then acts on item-N through the board's own
# API, as `start board archive` and `start board claim` do, and prints [N, won, message].
_RACER = """
import json, os, sys, time
from pathlib import Path
from start.board import Holder, RefusedError
from start.board import file as boardfile
gates, op, rounds, project = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
for n in range(1, rounds + 1):
    (gates / f"{op}-{n}").touch()
    while not (gates / f"go-{n}").exists():
        time.sleep(0.0005)
    with boardfile.opened(project) as opened:
        try:
            if op == "archive":
                opened.archive([f"item-{n}"], Holder("ann"))
            else:
                opened.claim(f"item-{n}", Holder("w"))
        except RefusedError as error:
            print(json.dumps([n, False, str(error)]), flush=True)
        else:
            print(json.dumps([n, True, ""]), flush=True)
"""
ROUNDS = 40


def test_an_archive_and_a_claim_of_one_item_one_wins_round_after_round(project: Path) -> None:
    """Two processes, one archiving and one claiming item-N, released together for each of 40
    rounds: exactly one wins each round, the item ends archived and pending or claimed and not
    archived, never both, and the loser says why in the words the command line prints."""
    from start.board import Holder
    from start.board import file as boardfile

    with boardfile.opened(str(project)) as opened:
        for n in range(1, ROUNDS + 1):
            opened.create(f"item {n}", Holder("ann"))
    gates = project.parent / "gates"
    gates.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(gates), op, str(ROUNDS), str(project)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for op in ("archive", "claim")
    ]
    try:
        for n in range(1, ROUNDS + 1):
            deadline = time.monotonic() + 60
            while not all((gates / f"{op}-{n}").exists() for op in ("archive", "claim")):
                assert time.monotonic() < deadline, "a racer did not reach its gate"
                time.sleep(0.001)
            (gates / f"go-{n}").touch()
        outputs = [racer.communicate(timeout=60) for racer in racers]
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait()
    assert [racer.returncode for racer in racers] == [0, 0], [err for _, err in outputs]
    archived, claimed = ([json.loads(line) for line in out.splitlines()] for out, _ in outputs)
    wins = {"archive": 0, "claim": 0}
    with boardfile.opened(str(project)) as opened:
        for (n, archive_won, archive_said), (m, claim_won, claim_said) in zip(
            archived, claimed, strict=True
        ):
            assert n == m
            found = opened.get(f"item-{n}")
            assert archive_won != claim_won, (n, archive_said, claim_said)
            if archive_won:
                wins["archive"] += 1
                assert claim_said == (
                    f"item-{n} is archived: an archived item cannot be taken (start board "
                    f"unarchive item-{n} brings it back)"
                )
                assert (found.status, found.archived is not None) == ("pending", True)
            else:
                wins["claim"] += 1
                assert archive_said == (
                    f"item-{n} is held by w (in_progress): an item in progress cannot be "
                    f"archived; its holder finishes it or lets it go first (start board done "
                    f"item-{n}, or start board update item-{n} --status pending)"
                )
                assert (found.status, found.assignee, found.archived) == ("in_progress", "w", None)
    assert sum(wins.values()) == ROUNDS
    print(f"of {ROUNDS} rounds: {wins}")  # which wins is the scheduler's: shown with -s


def test_an_item_a_live_session_holds_cannot_be_archived_until_the_session_ends(
    project: Path, anyio_backend: str
) -> None:
    import anyio
    from mcp import Client

    start(project, "board", "add", "Held")
    said: list[Any] = []

    async def hold() -> None:
        async with Client(server(project), mode="legacy") as client:
            claimed = await client.call_tool("board_tasks_claim", {"id": "item-1"})
            said.append(claimed.structured_content["assignee"])
            said.append(start(project, "board", "archive", "item-1"))
        # The session's process has ended: its claim is released at the next opening.

    anyio.run(hold)
    holder, refused = said
    assert (refused.returncode, refused.stdout, refused.stderr) == (
        75,
        "",
        f"start: item-1 is held by {holder} (in_progress): an item in progress cannot be "
        "archived; its holder finishes it or lets it go first (start board done item-1, or "
        "start board update item-1 --status pending)\n",
    )
    archived = start(project, "board", "archive", "item-1")
    assert archived.returncode == 0, archived.stderr
    found = item(project, "item-1")
    assert (found["status"], found["assignee"], found["releases"]) == ("pending", None, 1)
    assert found["archived"] is not None
