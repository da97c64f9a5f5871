"""Changes made in the page are the board's: the command line shows them (`start board show`);
and a change the board's rules refuse shows, in the page, the sentence the command line gives
for the same change by the same person."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tests.web.conftest import board, expect, shown, start, typed

if TYPE_CHECKING:
    from playwright.sync_api import Page


def test_changes_made_in_the_page_show_on_the_command_line(project: Path, page: Page) -> None:
    board(project, "add", "Write the parser", "--label", "core")
    me = shown(project, "item-1")["created_by"]  # the login name: the page acts as it too

    # Add, from the board's form.
    page.locator("details.add summary").click()
    add = page.locator("#add")
    add.locator("[name=title]").fill("Test the parser")
    add.locator("[name=description]").fill("Cover the *edge* cases.")
    add.locator("[name=priority]").select_option("1")
    add.locator("[name=labels]").fill("tests, core")
    add.locator("[name=after]").fill("item-1")
    add.get_by_role("button", name="Add item").click()
    expect(page.locator('#item[data-id="item-2"]')).to_be_visible()
    added = shown(project, "item-2")
    assert (added["title"], added["description"], added["priority"]) == (
        "Test the parser",
        "Cover the *edge* cases.",
        1,
    )
    assert (added["labels"], added["blocked_by"], added["created_by"]) == (
        ["core", "tests"],
        ["item-1"],
        me,
    )

    # Edit, comment and archive, from item-1's page.
    page.evaluate("location.hash = '#/item/item-1'")
    expect(page.locator('#item[data-id="item-1"]')).to_be_visible()  # not item-2's form
    edit = page.locator("#edit")
    typed(page, "#edit [name=title]", "Write the parser, with errors")
    edit.locator("[name=description]").fill("Report the line and column.")
    edit.locator("[name=labels]").fill("core, errors")
    edit.get_by_role("button", name="Save").click()
    expect(page.locator("#item-title")).to_have_text("Write the parser, with errors")
    edited = shown(project, "item-1")
    assert (edited["title"], edited["description"], edited["labels"]) == (
        "Write the parser, with errors",
        "Report the line and column.",
        ["core", "errors"],
    )
    assert edited["events"][-1]["actor"] == me

    typed(page, "#comment [name=text]", "Started on the lexer.")
    page.locator("#comment").get_by_role("button", name="Comment").click()
    expect(page.locator("#comments .comment")).to_have_count(1)
    comments = shown(project, "item-1")["comments"]
    assert [(note["author"], note["text"]) for note in comments] == [(me, "Started on the lexer.")]

    page.locator("#archive").click()
    expect(page.locator("#unarchive")).to_be_visible()
    assert shown(project, "item-1")["archived"] is not None
    assert page.locator("#action-error").inner_text() == ""


def test_a_change_the_rules_refuse_shows_the_command_lines_sentence(
    project: Path, page: Page
) -> None:
    board(project, "add", "Write the parser")
    page.evaluate("location.hash = '#/item/item-1'")
    expect(page.locator('#item[data-id="item-1"][data-status="pending"]')).to_be_visible()
    # A title typed, not yet saved: the form stays as it is across the live updates.
    typed(page, "#edit [name=title]", "Mine now")

    board(project, "claim", "item-1", "--as", "bob")
    expect(page.locator('#item[data-id="item-1"][data-status="in_progress"]')).to_be_visible()
    expect(page.locator("#item-status")).to_have_text("in_progress, held by bob (epoch 1)")
    expect(page.locator("#edit [name=title]")).to_have_value("Mine now")
    page.locator("#edit").get_by_role("button", name="Save").click()
    error = page.locator("#action-error")
    expect(error).not_to_have_text("")

    # The same change on the command line, by the same person (the login name, as the page).
    refused = start(project, "board", "update", "item-1", "--title", "Mine now")
    assert refused.returncode == 75
    sentence = (
        "item-1 is held by bob: only its holder changes it "
        "(start board reassign item-1 NAME hands it over)"
    )
    assert refused.stderr == f"start: {sentence}\n"
    assert error.inner_text() == sentence
    assert shown(project, "item-1")["title"] == "Write the parser"
