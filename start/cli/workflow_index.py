"""What workflows and runs there are, read cheaply: the config's `[workflows]` tables as their
files hold them (for `start workflow`, `start config show` and a shell's completion), and the
workflow runs on the board, each with its steps' states.

Nothing here checks a workflow or parses an expression (start.config.workflows does, and loads
jmespath), and nothing imports the command line's modules: the completers import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from start.base.record import Record
from start.config.workflow_tables import tables

if TYPE_CHECKING:
    from start.board import Item
    from start.config.model import Config

# The kind words of a workflow in `start show [KIND] NAME` (and `start config show SECTION`).
WORKFLOW_WORDS: Final = ("workflow", "workflows")


class Declared(Record):
    """A workflow of the config as its table says, unchecked (`start config validate` checks)."""

    name: str
    description: str | None
    steps: int
    layer: str
    file: str


def declared(config: Config) -> dict[str, Declared]:
    """The config's workflows, each as its table says (see `tables`): its description and
    how many steps it has."""
    found = {}
    for name, (origin, table) in tables(config).items():
        description = table.get("description")
        steps = table.get("steps")
        found[name] = Declared(
            name,
            description if isinstance(description, str) else None,
            len(steps) if isinstance(steps, dict) else 0,
            origin.layer,
            origin.path,
        )
    return found


def tables_toml(config: Config, name: str | None = None) -> str:
    """`start config show`'s TOML of the config's workflows (or of workflow `name`), as their
    files hold them, each under a comment of where it is from; empty when there is none.
    Written as `start config show` writes every item (start.config.show: a control or invisible
    character an escape, whatever the file held), a table to a header."""
    found = tables(config)
    if name is not None:
        found = {name: found[name]} if name in found else {}
    return "\n\n".join(
        f"# from {origin}\n" + "\n\n".join(_blocks(f"workflows.{_key(key)}", table))
        for key, (origin, table) in found.items()
    )


def _key(name: str) -> str:
    from start.config.show import toml_key

    return toml_key(name)


def _blocks(path: str, table: dict[str, Any]) -> list[str]:
    """A table as TOML: its header and its values, then each table in it at its own header (a
    table that holds only tables gets none, as a file would write it)."""
    from start.config.show import toml_value

    plain = [(key, value) for key, value in table.items() if not isinstance(value, dict)]
    nested = [(key, value) for key, value in table.items() if isinstance(value, dict)]
    blocks = []
    if plain or not nested:
        lines = [f"[{path}]", *(f"{_key(key)} = {toml_value(value)}" for key, value in plain)]
        blocks.append("\n".join(lines))
    for key, value in nested:
        blocks += _blocks(f"{path}.{_key(key)}", value)
    return blocks


def tables_data(config: Config, name: str | None = None) -> dict[str, Any]:
    """`start config show --json`'s workflows: each table as its file holds it, with its
    origin (layer and file) as every item has."""
    found = tables(config)
    if name is not None:
        found = {name: found[name]} if name in found else {}
    return {
        key: {**table, "origin": {"layer": origin.layer, "file": origin.path}}
        for key, (origin, table) in found.items()
    }


class Listed(Record):
    """A workflow run on the board, as the listing shows it."""

    id: str
    workflow: str
    instructions: str
    state: str  # succeeded, failed, running (a step is in progress) or unfinished
    done: int  # steps completed, skipped ones too
    failed: int  # steps failed, stopped ones too
    steps: int
    created: str
    updated: str


def runs(workdir: str, limit: int | None) -> tuple[list[Listed], int]:
    """The workflow runs on the board of `workdir`'s project, the latest changed first, at most
    `limit`; and how many there are in all. None (and no board made) when it has no board."""
    from start.board import COMPLETED, FAILED, IN_PROGRESS
    from start.board import file as boardfile
    from start.board.rows import Filter

    opened = boardfile.open_board(workdir, create=False, sweep=False)
    if opened is None:
        return [], 0
    try:
        # A run is a parent item that keeps its steps (start.board.workflow.begin): there is no
        # listing by metadata, and a board's items are few enough to look at each.
        items, _ = opened.items(Filter(archived=None), newest=True)
        parents = [item for item in items if _steps_of(item)]
        shown = parents if limit is None else parents[:limit]
        ids = [id_ for item in shown for id_ in _steps_of(item).values()]
        steps, _ = opened.items(Filter(ids=tuple(ids), archived=None)) if ids else ([], 0)
    finally:
        opened.close()
    status = {step.id: step.status for step in steps}
    found = []
    for item in shown:
        kept = item.metadata["workflow"]
        states = [status.get(id_) for id_ in _steps_of(item).values()]
        state = {COMPLETED: "succeeded", FAILED: "failed"}.get(item.status)
        if state is None:
            state = "running" if IN_PROGRESS in states else "unfinished"
        found.append(
            Listed(
                item.id,
                str(kept.get("name")),
                str(kept.get("instructions") or ""),
                state,
                states.count(COMPLETED),
                states.count(FAILED),
                len(states),
                item.created,
                item.updated,
            )
        )
    return found, len(parents)


def _steps_of(item: Item) -> dict[str, str]:
    """A run's parent item's steps (name: item id); empty for any other item."""
    kept = item.metadata.get("workflow")
    if not isinstance(kept, dict) or not isinstance(kept.get("definition"), str):
        return {}
    steps = kept.get("steps")
    if not isinstance(steps, dict):
        return {}
    return {str(name): str(id_) for name, id_ in steps.items()}
