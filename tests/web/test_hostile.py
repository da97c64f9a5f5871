"""Hostile text in the page: an agent's answer, a description, a comment and a run's prompt and
answer holding a script, an image with a handler, a `javascript:` link and a remote image run
nothing and load nothing in the browser, and read as the text they are."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.web.conftest import Served, board, expect, start

if TYPE_CHECKING:
    from playwright.sync_api import Page

SCRIPT = "<script>alert(1)</script>"
HOSTILE = (
    f"{SCRIPT}\n\n"
    "<img src=x onerror=alert(2)>\n\n"
    "[click](javascript:alert(3))\n\n"
    "![remote](http://203.0.113.9/x.png)\n"
)

# Everything in the page that could run or load: elements, handlers, and addresses a click
# or the page itself would follow that run script.
_DANGERS = """() => {
  const found = [];
  for (const node of document.querySelectorAll("*")) {
    const tag = node.tagName.toLowerCase();
    if (["script", "img", "iframe", "object", "embed", "style", "link", "video", "audio", "image"]
        .includes(tag) && !node.closest("head")) found.push(tag);
    for (const attr of node.attributes) {
      const value = attr.value.replace(/[\\s\\u0000-\\u001f]/g, "").toLowerCase();
      if (attr.name.startsWith("on")) found.push(`${tag}[${attr.name}]`);
      if (value.startsWith("javascript:") || value.startsWith("data:") || value.startsWith("vbscript:"))
        found.push(`${tag}[${attr.name}=${attr.value}]`);
      if (attr.name === "style") found.push(`${tag}[style]`);
    }
  }
  return found;
}"""

# What the page's Content-Security-Policy blocked: the renderer let nothing through for it to.
_WATCH = """() => {
  window.__violations = [];
  document.addEventListener("securitypolicyviolation",
    (event) => window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`));
}"""


class Watched:
    """What the browser did besides showing the page: dialogs opened, requests sent."""

    def __init__(self, page: Page) -> None:
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        page.on("dialog", self._dialog)
        page.context.on("request", lambda request: self.requests.append(request.url))

    def _dialog(self, dialog: object) -> None:
        from playwright.sync_api import Dialog

        assert isinstance(dialog, Dialog)
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def elsewhere(self, served: Served) -> list[str]:
        return [url for url in self.requests if not url.startswith(f"{served.origin}/")]


@pytest.fixture
def watched(page: Page) -> Iterator[Watched]:
    page.evaluate(_WATCH)
    yield Watched(page)


def assert_harmless(page: Page, watched: Watched, served: Served, boxes: int) -> None:
    """`boxes` rendered texts on the page show HOSTILE as text; nothing ran, loaded or left."""
    rendered = page.locator(".rendered")
    expect(rendered).to_have_count(boxes)
    assert page.evaluate(_DANGERS) == []
    assert page.evaluate("window.__violations") == []
    assert watched.dialogs == []
    assert watched.elsewhere(served) == []
    for box in range(boxes):
        # Each line of HOSTILE is read as itself; the image is a link to its address, unloaded.
        expect(rendered.nth(box).locator("p")).to_have_text(
            [
                SCRIPT,
                "<img src=x onerror=alert(2)>",
                "[click](javascript:alert(3))",
                "[image: remote]",
            ]
        )
        link = rendered.nth(box).locator("a.image")
        expect(link).to_have_attribute("href", "http://203.0.113.9/x.png")
        expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
    expect(page.get_by_text(SCRIPT, exact=True).first).to_be_visible()


def test_a_hostile_answer_description_and_comment_run_and_load_nothing(
    project: Path, served: Served, page: Page, watched: Watched
) -> None:
    board(project, "add", "Summarise the page", "-d", HOSTILE)
    board(project, "comment", "item-1", HOSTILE)
    board(project, "done", "item-1", "--answer", HOSTILE)
    # The board first (its live update brings the item), then the item's page, in one document.
    expect(page.locator('#column-completed .card[data-id="item-1"]')).to_be_visible()
    page.evaluate("location.hash = '#/item/item-1'")
    expect(page.locator('#item[data-id="item-1"]')).to_be_visible()
    expect(page.locator("#answer .rendered")).to_have_count(1)
    expect(page.locator("#comments .rendered")).to_have_count(1)
    assert_harmless(page, watched, served, boxes=3)  # the description, the answer, the comment
    # The watchers see what they watch for: the page's own requests, a dialog, a violation.
    assert f"{served.origin}/api/items/item-1" in watched.requests
    page.evaluate("alert('seen')")
    page.evaluate("fetch('http://203.0.113.9/y.png').catch(() => null)")
    assert watched.dialogs == ["seen"]
    page.wait_for_function("window.__violations.length > 0")
    assert page.evaluate("window.__violations") == ["connect-src http://203.0.113.9/y.png"]


def test_a_hostile_prompt_and_answer_of_a_run_run_and_load_nothing(
    project: Path, served: Served, page: Page, watched: Watched
) -> None:
    ran = start(project, "-q", "prompt", "--print", HOSTILE, FAKE_MODE="say", FAKE_ANSWER=HOSTILE)
    assert ran.returncode == 0, ran.stderr
    page.evaluate("location.hash = '#/runs'")
    link = page.locator("#runs tr[data-run] a")
    expect(link).to_have_count(1)
    link.click()
    expect(page.locator("#run[data-run]")).to_be_visible()
    expect(page.locator("#prompt")).to_have_text(HOSTILE)
    expect(page.locator("#answer .rendered")).to_have_count(1)
    assert_harmless(page, watched, served, boxes=1)
