"""The map of docs/architecture.md, held against the code: every package of start/ is on it, and
each module imports only from its own package and the packages on lower floors (deferred and
type-only imports count), so no import circle joins the parts and no rule lives in a door."""

from __future__ import annotations

import re

from tests.conftest import REPO
from tests.test_meta import _import_graph

# A row of the map: | floor | `package/` | its job |
_ROW = re.compile(r"^\| (\d+) \| `(\w+)/` \|", re.MULTILINE)


def floors() -> dict[str, int]:
    """Each package's floor, as docs/architecture.md states it."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    return {package: int(floor) for floor, package in _ROW.findall(text)}


def part(module: str) -> str | None:
    """The package of start/ a module belongs to (None: start/__init__.py, __main__.py)."""
    parts = module.split(".")
    if len(parts) < 2 or not (REPO / "start" / parts[1]).is_dir():
        return None
    return parts[1]


def test_the_map_names_every_package_of_start() -> None:
    packages = {
        path.name
        for path in (REPO / "start").iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    }
    assert sorted(floors()) == sorted(packages)


def test_ls_start_shows_at_most_twenty_entries() -> None:
    entries = [p.name for p in (REPO / "start").iterdir() if p.name != "__pycache__"]
    assert len(entries) <= 20, sorted(entries)


def test_no_module_imports_a_package_on_its_floor_or_above() -> None:
    known = floors()
    wrong = []
    for module, imported in sorted(_import_graph().items()):
        mine = part(module)
        if mine is None:
            continue
        for other in sorted(imported):
            theirs = part(other)
            if theirs is None or theirs == mine:
                continue
            if known[theirs] >= known[mine]:
                wrong.append(f"{module} ({mine}, floor {known[mine]}) imports {other} "
                             f"({theirs}, floor {known[theirs]})")  # fmt: skip
    assert wrong == []


def test_nothing_below_the_doors_imports_them() -> None:
    """The board's runner, the ask rules and the path of every ask import neither the command
    line nor the MCP adapter: only `python -m start` (start/__main__.py) enters the command
    line."""
    graph = _import_graph()
    doors = {name for name in graph if name.startswith(("start.mcp", "start.cli"))}
    below = {
        name
        for name in graph
        if not name.startswith(("start.mcp", "start.cli")) and name != "start.__main__"
    }
    reaching = sorted(
        f"{module} imports {other}" for module in below for other in graph[module] & doors
    )
    assert reaching == []
