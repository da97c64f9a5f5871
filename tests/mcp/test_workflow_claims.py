"""An agent's board_tasks_claim without an id passes a workflow run's items by, and says so
when they are all that is left (start.board.rows.STEP_MARK), through the SDK's own client."""

from __future__ import annotations

from pathlib import Path

import pytest

from start.board import Holder
from start.board import file as boardfile
from start.compose.ask import Ask
from tests.mcp.conftest import connect
from tests.mcp.test_board_agents import call

pytestmark = pytest.mark.anyio

ME = Holder("alice")


async def test_claim_without_an_id_leaves_a_workflows_items_to_its_run(
    global_dir: Path, isolated: Path
) -> None:
    with boardfile.opened(str(isolated)) as opened:
        opened.create("workflow fix", ME, metadata={"workflow": {"definition": "{}"}})
        meta = {"workflow": {"step": "triage"}}
        opened.create("fix / triage", ME, metadata=meta, run=Ask(prompt="p"), parent="item-1")
    async with connect(isolated, "legacy") as client:
        answer = await call(client, "board_tasks_claim")
    assert (answer.is_error, answer.structured_content) == (
        False,
        {
            "item": None,
            "blocked": 0,
            "in_progress": 0,
            "message": "nothing is ready to claim: 2 a workflow run's (its run claims them: "
            "start workflow resume ID)",
        },
    )
