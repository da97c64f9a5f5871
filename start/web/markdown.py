"""Markdown as the page shows an agent's answer, an item's description and a comment: rendered,
and never more than text, links and layout.

markdown-it-py (CommonMark, which rich already installs) with HTML off: a `<script>` or an
`<img onerror>` in the text comes out as the text it is. Its link check drops `javascript:`,
`vbscript:`, `file:` and `data:` targets. An image would load from wherever its address
points, so an image is shown as a link to its address (http and https only), never fetched.
Links leave without a referrer. The page's Content-Security-Policy (start.web.guard) is the
second wall: nothing inline runs, nothing remote loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_REL = "noopener noreferrer nofollow"


def _image(
    self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:  # markdown-it's signature of a render rule
    """An image as a link to its address, which the page never loads."""
    from markdown_it.common.utils import escapeHtml

    token = tokens[idx]
    source = str(token.attrGet("src") or "")
    alt = escapeHtml(token.content or source or "image")
    if not source.lower().startswith(("http://", "https://")):
        return f"[image: {alt}]"
    return f'<a href="{escapeHtml(source)}" rel="{_REL}" class="image">[image: {alt}]</a>'


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """A link that tells the site it leads to nothing of the page."""
    tokens[idx].attrSet("rel", _REL)
    rendered: str = self.renderToken(tokens, idx, options, env)
    return rendered


@cache
def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    renderer.add_render_rule("image", _image)
    renderer.add_render_rule("link_open", _link_open)
    return renderer


def html(text: str) -> str:
    """`text` as HTML that holds no element a script, a style or a remote load could come from."""
    rendered: str = _renderer().render(text)
    return rendered
