"""start.web.markdown: agents' answers rendered, with nothing that runs or loads (the browser's
own check of the same is tests/web/test_hostile.py)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from start.web import markdown

HOSTILE = (
    "<script>alert(1)</script>\n\n"
    "<img src=x onerror=alert(2)>\n\n"
    "[click](javascript:alert(3)) [data](data:text/html,<b>x</b>) [v](VBScript:x)\n\n"
    "![remote](http://203.0.113.9/x.png) ![local](/etc/passwd)\n\n"
    '<a href="javascript:alert(4)">a</a> <style>body{}</style> <iframe src=//e></iframe>\n'
)


def test_html_in_the_text_comes_out_as_text() -> None:
    assert markdown.html(HOSTILE) == (
        "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"
        "<p>&lt;img src=x onerror=alert(2)&gt;</p>\n"
        "<p>[click](javascript:alert(3)) [data](data:text/html,&lt;b&gt;x&lt;/b&gt;) [v](VBScript:x)</p>\n"
        '<p><a href="http://203.0.113.9/x.png" rel="noopener noreferrer nofollow" '
        'class="image">[image: remote]</a> [image: local]</p>\n'
        "<p>&lt;a href=&quot;javascript:alert(4)&quot;&gt;a&lt;/a&gt; &lt;style&gt;body{}"
        "&lt;/style&gt; &lt;iframe src=//e&gt;&lt;/iframe&gt;</p>\n"
    )


def test_markdown_renders_as_markdown() -> None:
    text = "# Plan\n\n- **one**\n- `two`\n\n```python\nx = '<b>'\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    rendered = markdown.html(text)
    assert "<h1>Plan</h1>" in rendered
    assert "<li><strong>one</strong></li>" in rendered
    assert "<pre><code class=\"language-python\">x = '&lt;b&gt;'\n</code></pre>" in rendered
    assert "<td>1</td>" in rendered
    link = markdown.html("[docs](https://example.org/a?b=1&c=2)")
    assert link == (
        '<p><a href="https://example.org/a?b=1&amp;c=2" rel="noopener noreferrer nofollow">'
        "docs</a></p>\n"
    )


# Every element markdown-it makes of CommonMark with tables; none loads or runs anything.
ALLOWED = {
    "p", "a", "em", "strong", "code", "pre", "ul", "ol", "li", "blockquote", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "s",
}  # fmt: skip


@settings(max_examples=400)
@given(
    st.text(
        alphabet=st.sampled_from(list("<>\"'=:/()[]!*`#-_ \n\tabcjsrptvimgonerlhf&;~|.1")),
        max_size=200,
    )
)
def test_whatever_the_text_only_harmless_elements_and_web_links_come_out(text: str) -> None:
    rendered = markdown.html(text)
    tags = {tag.lower() for tag in re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", rendered)}
    assert tags <= ALLOWED, rendered
    attributes = set(re.findall(r"\s([a-zA-Z-]+)=\"", rendered))
    assert attributes <= {"href", "rel", "class", "start", "title"}, rendered
    for href in re.findall(r'href="([^"]*)"', rendered):
        assert not re.match(r"\s*(javascript|vbscript|data|file):", href, re.IGNORECASE), rendered
