"""The page shows the board the command line made, and follows another process's changes live:
an item claimed, then completed, moves columns without a reload (how soon: make bench, 15c)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tests.web.conftest import board, expect

if TYPE_CHECKING:
    from playwright.sync_api import Page


def test_the_board_the_command_line_made_and_its_changes_live(project: Path, page: Page) -> None:
    board(project, "add", "Write the parser", "--label", "core")
    board(project, "add", "Test the parser", "--after", "item-1")
    board(project, "add", "Write the docs", "--priority", "1")
    # Added after the page opened: the live update brings them too.
    pending = page.locator("#column-pending")
    for id_, title in (
        ("item-1", "Write the parser"),
        ("item-2", "Test the parser"),
        ("item-3", "Write the docs"),
    ):
        expect(pending.locator(f'.card[data-id="{id_}"] .title')).to_have_text(title)
    expect(pending.locator('.card[data-id="item-1"] .chip')).to_have_text(["core"])
    expect(pending.locator('.card[data-id="item-2"] .waits')).to_have_text("waits on item-1")
    expect(pending.locator('.card[data-id="item-3"] .top')).to_contain_text("P1")
    expect(page.locator("#column-pending h2 .count")).to_have_text("(3)")
    expect(page.locator("#running")).to_contain_text("Nothing is in progress.")
    # A mark on this document: a reload or a navigation would make a new one, without it.
    page.evaluate("window.__marker = 'still here'")

    board(project, "claim", "item-1", "--as", "alice")
    claimed = page.locator('#column-in_progress .card[data-id="item-1"]')
    expect(claimed).to_be_visible()
    expect(claimed.locator(".meta")).to_have_text("held by alice")
    expect(pending.locator('.card[data-id="item-1"]')).to_have_count(0)
    expect(page.locator('#running li[data-id="item-1"]')).to_contain_text(
        "item-1 Write the parser · alice · "
    )

    board(project, "done", "item-1", "--as", "alice")
    expect(page.locator('#column-completed .card[data-id="item-1"]')).to_be_visible()
    expect(page.locator('#column-in_progress .card[data-id="item-1"]')).to_have_count(0)
    expect(page.locator("#running")).to_contain_text("Nothing is in progress.")
    # What waited on it waits no longer.
    expect(pending.locator('.card[data-id="item-2"] .waits')).to_have_count(0)
    assert page.evaluate("window.__marker") == "still here"
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
