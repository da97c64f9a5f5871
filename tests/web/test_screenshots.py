"""A small board as a person sees it: the board, an item with its answer rendered (a table and
code) and the graph of dependencies. With START_SCREENSHOTS=DIR the pages are saved there as
board.png, item.png and graph.png at 1280x800 (docs/board.md and the README show them);
without it they are rendered and checked all the same."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tests.web.conftest import SCREENSHOTS, board, expect

if TYPE_CHECKING:
    from playwright.sync_api import Page

ANSWER = """The schema has three tables, `agents`, `roles` and `tasks`; each agent names its binary
and its command line:

| key | type | default |
|---|---|---|
| `bin` | string | required |
| `command` | template | `{bin} {prompt}` |

```toml
[agents.claude]
bin = "claude"
command = "{bin} --model {model} {prompt}"
```

An unknown key is reported with a *did you mean* suggestion.
"""


def save(page: Page, name: str) -> None:
    """The viewport as DIR/NAME.png, when START_SCREENSHOTS=DIR is set."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"))


def test_the_board_an_item_and_the_graph_as_a_person_sees_them(project: Path, page: Page) -> None:
    board(project, "add", "Design the config schema", "--label", "design", "--priority", "1")
    board(project, "add", "Write the loader", "--after", "item-1", "--label", "core")
    board(project, "add", "Validate every field", "--after", "item-2", "--label", "core",
          "--priority", "1")  # fmt: skip
    board(project, "add", "Document the options", "--after", "item-1", "--label", "docs",
          "--priority", "3")  # fmt: skip
    board(project, "add", "Set up CI", "--label", "infra")
    board(project, "add", "Release 0.2", "--after", "item-3", "--after", "item-4", "--after",
          "item-5", "--priority", "0")  # fmt: skip
    board(project, "claim", "item-1", "--as", "alice")
    board(project, "done", "item-1", "--as", "alice", "--answer", ANSWER)
    board(project, "claim", "item-2", "--as", "bob")
    board(project, "comment", "item-2", "Reading the files with tomllib; errors next.")

    columns = {
        "pending": ["item-6", "item-3", "item-5", "item-4"],
        "in_progress": ["item-2"],
        "completed": ["item-1"],
        "failed": [],
    }
    for status, ids in columns.items():
        cards = page.locator(f"#column-{status} .card")
        expect(cards).to_have_count(len(ids))
        assert sorted(cards.evaluate_all("(cards) => cards.map((c) => c.dataset.id)")) == sorted(
            ids
        )
    expect(page.locator('#running li[data-id="item-2"]')).to_contain_text(
        "item-2 Write the loader · bob · "
    )
    expect(page.locator('#column-pending .card[data-id="item-6"] .waits')).to_have_text(
        "waits on item-3, item-4, item-5"
    )
    save(page, "board")

    page.evaluate("location.hash = '#/item/item-1'")
    answer = page.locator("#answer .rendered")
    expect(answer.locator("table tbody tr")).to_have_count(2)
    expect(answer.locator("pre code")).to_have_text(
        '[agents.claude]\nbin = "claude"\ncommand = "{bin} --model {model} {prompt}"\n'
    )
    expect(page.locator("#item-status")).to_have_text("completed, by alice (epoch 1)")
    save(page, "item")

    page.evaluate("location.hash = '#/graph'")
    nodes = page.locator("#graph svg.graph g[data-id]")
    expect(nodes).to_have_count(5)  # the unfinished items
    assert sorted(nodes.evaluate_all("(nodes) => nodes.map((n) => n.dataset.id)")) == [
        "item-2",
        "item-3",
        "item-4",
        "item-5",
        "item-6",
    ]
    edges = page.locator("#graph svg.graph path[data-from]").evaluate_all(
        "(paths) => paths.map((p) => `${p.dataset.from}>${p.dataset.to}`)"
    )
    assert sorted(edges) == ["item-2>item-3", "item-3>item-6", "item-4>item-6", "item-5>item-6"]
    save(page, "graph")
