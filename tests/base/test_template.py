"""The placeholder scanner: scanning, single-pass filling, escapes and scope checks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from start.base import template
from start.base.template import Finding, Placeholder


def test_scan_splits_text_and_placeholders() -> None:
    assert template.scan("Review {command_output} now") == (
        "Review ",
        Placeholder("command_output", 7),
        " now",
    )


def test_double_braces_are_literal_text() -> None:
    assert template.fill("{{prompt}} and {date}", {"date": "D", "prompt": "P"}) == "{prompt} and D"


def test_other_braces_are_plain_text() -> None:
    text = 'json {"a": {"b": 1}} code { x } {Upper} {1abc} {}'
    assert template.scan(text) == (text,)
    assert template.fill(text, {}) == text


def test_inserted_values_are_never_scanned_again() -> None:
    values = {"instructions": "{command_output} {{date}}", "command_output": "OUT"}
    assert template.fill("{instructions}|{command_output}", values) == (
        "{command_output} {{date}}|OUT"
    )


def test_missing_values_stay_literal() -> None:
    assert template.fill("a {unknown} b", {}) == "a {unknown} b"


def test_names_in_order_of_first_use() -> None:
    assert template.names("{b} {a} {b} {{c}}") == ["b", "a"]


def test_out_of_scope_placeholder_is_an_error_saying_where_it_is_allowed() -> None:
    assert template.check("{instructions}", template.ITEM_PROMPT) == [
        Finding(
            "error",
            "instructions",
            "placeholder {instructions} is not available in role and context prompts; "
            "it is allowed in task prompts",
        )
    ]
    assert template.check("{prompt}", template.TASK_PROMPT) == [
        Finding(
            "error",
            "prompt",
            "placeholder {prompt} is not available in task prompts; it is allowed in agent commands",
        )
    ]


def test_near_miss_is_an_error_with_a_suggestion() -> None:
    assert template.check("{instruction} {command_ouput}", template.TASK_PROMPT) == [
        Finding("error", "instruction", "unknown placeholder {instruction}", "{instructions}"),
        Finding(
            "error", "command_ouput", "unknown placeholder {command_ouput}", "{command_output}"
        ),
    ]


def test_other_words_are_warnings_and_stay_literal() -> None:
    assert template.check("{banana}", template.TASK_PROMPT) == [
        Finding(
            "warning",
            "banana",
            "unknown placeholder {banana} is kept as literal text; write {{banana}} to silence this",
        )
    ]


def test_each_problem_is_reported_once() -> None:
    assert len(template.check("{banana} {banana}", template.TASK_PROMPT)) == 1


@given(st.text())
def test_text_without_placeholders_is_filled_unchanged(text: str) -> None:
    # Oracle: with no values at all, filling changes only `{{x}}` escapes.
    filled = template.fill(text, {})
    if "{{" not in text:
        assert filled == text


@given(st.text(), st.text())
def test_values_arrive_verbatim(before: str, value: str) -> None:
    safe = before.replace("{", "(").replace("}", ")")
    assert template.fill(safe + "{prompt}", {"prompt": value}) == safe + value


# The regular expression that placeholders were found with before the scanner; the oracle.
_TOKEN = r"\{\{([a-z][a-z0-9_]*)\}\}|\{([a-z][a-z0-9_]*)\}"
_BRACY = st.lists(
    st.sampled_from(["{", "}", "{{", "}}", "a", "b_1", "Z", "9", "-", " ", "é", "\n", "{x}"]),
    max_size=20,
).map("".join)


@given(st.one_of(_BRACY, st.text()))
def test_the_scanner_finds_what_the_regular_expression_found(text: str) -> None:
    import re

    segments: list[template.Segment] = []
    literal, pos = "", 0
    for match in re.finditer(_TOKEN, text):
        literal += text[pos : match.start()]
        if match.group(1) is not None:
            literal += "{" + match.group(1) + "}"
        else:
            if literal:
                segments.append(literal)
            literal = ""
            segments.append(Placeholder(match.group(2), match.start()))
        pos = match.end()
    literal += text[pos:]
    if literal:
        segments.append(literal)
    assert template.scan(text) == tuple(segments)
    found = [name for _, name in re.findall(_TOKEN, text) if name]
    assert template.names(text) == list(dict.fromkeys(found))


def test_a_brace_that_starts_no_placeholder_leaves_the_next_one_found() -> None:
    assert template.scan("{{a}b}") == ("{", Placeholder("a", 1), "b}")
    assert template.scan("{{}}{{x}}{y") == ("{{}}{x}{y",)
    assert template.names("{A}{a-b}{_x}{x_1}") == ["x_1"]
