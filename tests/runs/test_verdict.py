"""start.runs.verdict: --fail-if's PATH and the true or false an answer holds there."""

from __future__ import annotations

from typing import Any

import pytest

from start.base.errors import UsageError
from start.runs import verdict


@pytest.mark.parametrize(
    ("text", "keys"),
    [("block", ("block",)), ("verdict.block", ("verdict", "block")), ("a b.0", ("a b", "0"))],
)
def test_a_path_is_keys_separated_by_dots(text: str, keys: tuple[str, ...]) -> None:
    assert verdict.parse(text) == keys


@pytest.mark.parametrize(
    ("text", "fix"),
    [(".block", " (--fail-if block)"), ("$.a..b.", " (--fail-if a.b)"), ("", ""), ("..", "")],
)
def test_a_path_with_an_empty_key_is_refused_with_the_path_it_may_mean(text: str, fix: str) -> None:
    with pytest.raises(UsageError) as raised:
        verdict.parse(text)
    assert str(raised.value) == (
        f"--fail-if '{text}': PATH is keys separated by dots, with none empty, such as block "
        f"or verdict.block{fix}"
    )


@pytest.mark.parametrize(
    ("value", "text", "said"),
    [
        ({"block": True}, "block", True),
        ({"block": False, "findings": []}, "block", False),
        ({"verdict": {"block": True}}, "verdict.block", True),
        ({"checks": [{"failed": False}, {"failed": True}]}, "checks.1.failed", True),
        ([False], "0", False),
        ({"0": True}, "0", True),
        ({"a-b": {"c d": True}}, "a-b.c d", True),
    ],
)
def test_the_true_or_false_at_a_path(value: Any, text: str, said: bool) -> None:
    assert verdict.holds(value, verdict.parse(text)) is said


@pytest.mark.parametrize(
    ("value", "text", "why"),
    [
        ({"verdict": True}, "block", "$.block is missing: $ has 'verdict'"),
        ({}, "a-b", "$['a-b'] is missing: $ is an empty object"),
        (
            {"x": {str(n): n for n in range(10)}},
            "x.block",
            "$.x.block is missing: $.x has '0', '1', '2', '3', '4', '5', '6', '7' and 2 more",
        ),
        (
            {"k" * 70: 1},
            "block",
            f"$.block is missing: $ has '{'k' * 60}…'",
        ),
        ({"block": "yes"}, "block", '$.block is the string "yes", not true or false'),
        (
            {"block": "y" * 70},
            "block",
            f'$.block is the string "{"y" * 59}…, not true or false',
        ),
        ({"block": 1}, "block", "$.block is the number 1, not true or false"),
        ({"block": None}, "block", "$.block is null, not true or false"),
        ({"block": {}}, "block", "$.block is an object, not true or false"),
        ({"block": []}, "block", "$.block is a list, not true or false"),
        (None, "block", "$ is null, which has no 'block'"),
        ({"verdict": True}, "verdict.block", "$.verdict is true, which has no 'block'"),
        ({"checks": [True]}, "checks.2", "$.checks[2] is missing: $.checks has 1 item"),
        ([], "0", "$[0] is missing: $ has 0 items"),
        ({"checks": [True]}, "checks.first", "$.checks is a list: 'first' is not an index of it"),
        ([True], "-1", "$ is a list: '-1' is not an index of it"),
        ([True], "١", "$ is a list: '١' is not an index of it"),  # a digit, but not 0-9
    ],
)
def test_an_answer_without_true_or_false_there_says_what_is_there(
    value: Any, text: str, why: str
) -> None:
    with pytest.raises(verdict.VerdictError) as raised:
        verdict.holds(value, verdict.parse(text))
    assert str(raised.value) == why


@pytest.mark.parametrize(
    ("value", "text", "lines"),
    [
        (
            {
                "block": True,
                "findings": [
                    {"file": "app.py", "line": 2, "message": "a key"},
                    {"file": "app.py", "line": None, "message": "no line"},
                    {"file": "", "line": True, "message": "nowhere"},
                    "a finding as text",
                    {"file": "app.py"},
                    7,
                ],
            },
            "block",
            ["app.py:2: a key", "app.py: no line", "nowhere", "a finding as text"],
        ),
        ({"v": {"block": True, "findings": [{"message": "m"}]}}, "v.block", ["m"]),
        ([{"block": True, "findings": ["m"]}], "0.block", ["m"]),
        ({"block": True, "findings": "m"}, "block", []),
        ({"block": True}, "block", []),
    ],
)
def test_the_findings_beside_the_verdict_one_line_each(
    value: Any, text: str, lines: list[str]
) -> None:
    assert verdict.findings(value, verdict.parse(text)) == lines
