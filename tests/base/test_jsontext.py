"""start.base.jsontext: how deep JSON text nests, measured before it is parsed, against json itself."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.base import jsontext

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n,:'),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=3), inner, max_size=3)
    ),
    max_leaves=30,
)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@given(VALUES, st.sampled_from([None, 2]), st.booleans())
def test_the_nesting_of_json_is_the_depth_of_its_value(
    value: Any, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert jsontext.nesting(text) == depth(value)


@given(st.text(alphabet='[]{}"\\a1,: \n'))
def test_json_gets_no_deeper_than_the_nesting_of_any_text(text: str) -> None:
    deep = "[" * 2000  # json would run out of stack here if it got this far
    at = jsontext.nesting(text)
    try:
        value = json.loads(text)
    except ValueError:
        pass
    else:
        assert at == depth(value)
    with pytest.raises(ValueError):  # not RecursionError
        jsontext.loads(text + deep)


@pytest.mark.parametrize(
    "text",
    [
        '"\\' * 100_000,  # an escape before every quote: one string to the end
        '"' * 100_001,  # strings, and one left open
        "\\" * 100_000,
        '"\\"' * 50_000 + "[" * 200,  # the brackets are in an unclosed string
    ],
)
def test_strings_never_count_and_never_rescan(text: str) -> None:
    assert jsontext.nesting(text) == 0


def test_loads_refuses_text_nested_too_deep_before_parsing() -> None:
    assert jsontext.loads("[" * 100 + "]" * 100) == json.loads("[" * 100 + "]" * 100)
    with pytest.raises(jsontext.TooDeepError) as caught:
        jsontext.loads("[" * 100_000)
    assert str(caught.value) == (
        "nested deeper than 100 levels of arrays and objects; start reads at most 100"
    )
    assert jsontext.loads('{"a": [[1]]}', limit=3) == {"a": [[1]]}
    with pytest.raises(jsontext.TooDeepError):
        jsontext.loads('{"a": [[1]]}', limit=2)
