"""A workflow run's items are its own (start.board.rows.STEP_MARK): a claim of the next ready
item passes them by, but for its steps when its runner claims them (tests/e2e/
test_workflow_board.py holds the same with real processes and the items a run makes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from start.board import Holder
from start.board import file as boardfile
from start.board.rows import Filter
from start.board.store import Board
from tests.board.test_board import spec

ALICE = Holder("alice")


@pytest.fixture
def opened(isolated: Path) -> Iterator[Board]:
    with boardfile.opened(str(isolated)) as found:
        yield found


def test_claim_next_takes_a_workflows_steps_only_for_its_runner(opened: Board) -> None:
    run = {"workflow": {"name": "fix", "definition": "{}"}}
    opened.create("workflow fix", ALICE, metadata=run)
    step = {"workflow": {"step": "triage"}}
    opened.create("fix / triage", ALICE, metadata=step, run=spec(prompt="p"), parent="item-1")
    element = {"workflow": {"step": "review", "element": 0}}
    opened.create("fix / review [1]", ALICE, metadata=element, run=spec(prompt="p"))
    # A metadata key of the user's own that happens to be called workflow is no run's mark.
    opened.create("Mine", ALICE, metadata={"workflow": "ci"}, run=spec(prompt="p"))
    assert opened.claim_next(ALICE, runnable=True).id == "item-4"  # type: ignore[union-attr]
    assert opened.claim_next(ALICE) is None  # nor the run's parent, which runs nothing
    assert opened.claim_next(ALICE, runnable=True, steps=True).id == "item-2"  # type: ignore[union-attr]
    assert opened.claim_next(ALICE, steps=True).id == "item-3"  # type: ignore[union-attr]
    assert opened.claim_next(ALICE, steps=True) is None  # its runner never takes the parent


def test_a_workflows_items_are_not_listed_as_ready(opened: Board) -> None:
    """`start board --ready` lists what a claim of the next item takes."""
    opened.create("workflow fix", ALICE, metadata={"workflow": {"definition": "{}"}})
    opened.create("fix / a", ALICE, metadata={"workflow": {"step": "a"}}, run=spec(prompt="p"))
    opened.create("Mine", ALICE)
    assert [item.id for item in opened.items(Filter(ready=True))[0]] == ["item-3"]
    # Its runner's: the steps, never the parent (which runs nothing).
    steps = Filter(ready=True, steps=True)
    assert [item.id for item in opened.items(steps)[0]] == ["item-2", "item-3"]
