"""Why the board refuses a change: who may change, claim or finish an item beyond the SQL
conditions of start.board.store, and the words that say why one changed nothing (docs/board.md,
"Rules" and "Who shaped it"), in the order the conditions are tried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from start.board import (
    COMPLETED,
    FAILED,
    FINISHED,
    IN_PROGRESS,
    Change,
    Holder,
    Item,
    RefusedError,
    shaping,
)

if TYPE_CHECKING:
    import sqlite3


def holds(row: sqlite3.Row, holder: Holder) -> bool:
    """Whether `holder` holds the item of `row` (its process too, for a process's claim)."""
    return (
        row["status"] == IN_PROGRESS
        and row["assignee"] == holder.name
        and (row["holder_pid"] is None or (row["holder_pid"], row["holder_started"])
             == (holder.pid, holder.started))
    )  # fmt: skip


def may(item: Item, row: sqlite3.Row, by: Holder, change: Change) -> None:
    """Refuse a change that `by` may not make for who it is (docs/board.md, "Who shaped it"):
    of what runs above its level, or (an agent) the end of a run it does not hold. Metadata
    never reaches a run: anyone may merge it, under the other rules."""
    if change.status is None and not change.shapes:
        return
    finishing = change.status in FINISHED
    why = shaping(item, by, "finish" if finishing else "change")
    if why is not None:
        raise RefusedError(why)
    if by.agent and finishing and item.run is not None and not holds(row, by):
        raise RefusedError(
            f"{item.id} says what start board run runs: an agent finishes it only while it holds "
            f"it (board_tasks_claim), so that its end is its run's or its holder's work"
        )


def refusal(item: Item, what: str) -> str:
    """Why a claim or a reassign of `item` was refused."""
    if item.archived is not None and item.status not in FINISHED:
        return (
            f"{item.id} is archived: an archived item cannot be taken (start board unarchive "
            f"{item.id} brings it back)"
        )
    if item.status in FINISHED:
        return (
            f"{item.id} is {item.status}: a finished item cannot be taken (reopen a failed one: "
            f"start board update {item.id} --status pending)"
        )
    if item.status == IN_PROGRESS and what == "claim":
        return (
            f"{item.id} is held by {item.assignee}; it is theirs until they finish or release "
            f"it, or it is reassigned (start board reassign {item.id} NAME)"
        )
    return f"{item.id} is blocked: {'; '.join(item.blocked)}"


def why_not(item: Item, row: sqlite3.Row, by: Holder, change: Change, epoch: int | None) -> str:
    """Why `update` changed nothing, in the order its conditions are tried."""
    if item.status == IN_PROGRESS:
        if item.assignee != by.name:
            return (
                f"{item.id} is held by {item.assignee}: only its holder changes it (start board "
                f"reassign {item.id} NAME hands it over)"
            )
        if epoch is not None and epoch != item.epoch:
            return (
                f"{item.id} was reassigned since your claim (epoch {epoch}; it is now at "
                f"epoch {item.epoch}): this write is fenced out; claim it again to act on it"
            )
        if not holds(row, by):
            return (
                f"{item.id} is held by another process of {item.assignee} (pid {row['holder_pid']})"
            )
    if item.status == COMPLETED:
        return (
            f"{item.id} is completed: only its metadata, priority, labels and parent can change now"
        )
    if item.status == FAILED:
        if change.status in FINISHED:
            return f"{item.id} failed already; reopen it first (status pending)"
        return (
            f"{item.id} failed: reopen it (status pending) to change more than its metadata, "
            "priority, labels and parent"
        )
    return (
        f"{item.id} cannot complete while it is blocked: {'; '.join(item.blocked)}"
        if item.blocked
        else f"{item.id} cannot change that way now ({item.status})"
    )
