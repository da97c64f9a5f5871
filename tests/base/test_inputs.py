"""start.base.inputs: each input's rule, against an oracle written another way (the digits an id has,
json's strict writer, a walk with recursion), and the JSON Schema each rule declares for the MCP
door against the rule itself. The doors are in tests/cli/test_inputs.py and
tests/e2e/test_inputs.py."""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from start.base import inputs
from start.base.inputs import InputError

ID_RULE = (
    "is not an item id: ids read item-N (or N), and item-PREFIX.N for another machine's item (as "
    "the board shows it), N a number of 1 to 18 digits that does not start with 0"
)
# Text that looks like an id, or nearly: prefixes, signs, zeros, too many digits, other digits.
NEAR_IDS = st.from_regex(r"\A(item-|item|ITEM-|-|\+| )?(0|[1-9])[0-9]{0,22}(\n| |\.0)?\Z")
TEXTS = NEAR_IDS | st.text() | st.sampled_from(["٣", "item-١", "1\n", "", "item-"])


def number_of(text: str) -> int | None:
    """The oracle: what an id means, read digit by digit."""
    digits = text.removeprefix("item-")
    if not digits or not all("0" <= c <= "9" for c in digits) or digits[0] == "0":
        return None
    return int(digits) if len(digits) <= 18 else None


@given(TEXTS)
@example(str(2**63))
@example("9" * 18)
@example("9" * 19)
def test_an_id_is_read_iff_it_is_item_n_with_n_of_1_to_18_digits(text: str) -> None:
    expected = number_of(text)
    if expected is None:
        with pytest.raises(InputError) as caught:
            inputs.item_number(text)
        assert str(caught.value) == f"{inputs.quoted(text)} {ID_RULE}"
        assert caught.value.exit_code == 2
    else:
        assert inputs.item_number(text) == expected < 2**63


@given(TEXTS)
def test_the_mcp_schema_of_an_id_refuses_what_the_rule_refuses(text: str) -> None:
    """The schema, as start.mcp.tools.check applies it: what it accepts, the rule reads, but for
    a trailing newline, which Python's `$` lets through and the rule then refuses."""
    accepted = jsonschema.Draft202012Validator(dict(inputs.ITEM_ID_SCHEMA)).is_valid(text)
    read = number_of(text) is not None
    assert accepted == read or (accepted and text.endswith("\n") and not read)


@given(TEXTS)
def test_a_run_id_is_a_number_of_1_to_18_digits(text: str) -> None:
    expected = None if text.startswith("item-") else number_of(text)
    if expected is None:
        with pytest.raises(InputError) as caught:
            inputs.run_number(text)
        assert str(caught.value) == (
            f"{inputs.quoted(text)} is not a run id: a run id is a number of 1 to 18 digits that "
            "does not start with 0 ('start log' lists the runs)"
        )
    else:
        assert inputs.run_number(text) == expected


@given(TEXTS | st.integers().map(str), st.integers(0, 3), st.integers(0, 10**18))
def test_a_count_is_a_whole_number_in_its_range(text: str, least: int, most: int) -> None:
    plain = text.isascii() and text.isdigit()
    if plain and least <= int(text) <= most:
        assert inputs.count(text, least, most) == int(text)
        return
    with pytest.raises(InputError) as caught:
        inputs.count(text, least, most)
    # A number is told as the number it is (as a JSON number at the MCP door), other text quoted.
    shown = str(int(text)) if plain and len(text) < 40 else inputs.quoted(text)
    assert str(caught.value) == f"{shown} is not a whole number from {least} to {most}"


def test_a_count_from_a_json_number_is_told_as_the_schema_of_the_mcp_door_tells_it() -> None:
    assert inputs.count_schema(1, 200) == {"type": "integer", "minimum": 1, "maximum": 200}
    with pytest.raises(InputError) as caught:
        inputs.count(500, 1, 200)
    assert (
        str(caught.value)
        == inputs.not_in_range(500, 1, 200)
        == ("500 is not a whole number from 1 to 200")
    )


def test_every_id_and_count_fits_sqlite() -> None:
    assert inputs.MOST == 10**18 - 1 < 2**63 - 1
    assert inputs.item_number("item-" + "9" * 18) == inputs.MOST


# --- text -----------------------------------------------------------------------------------


def test_text_is_held_to_its_length_in_characters() -> None:
    assert inputs.text("x" * 1000, inputs.TITLE_LIMIT, least=1) == "x" * 1000
    for value, message in [
        ("x" * 1001, "1,001 characters, over the limit of 1,000"),
        ("", "empty; give at least one character"),
    ]:
        with pytest.raises(InputError) as caught:
            inputs.text(value, inputs.TITLE_LIMIT, least=1)
        assert str(caught.value) == message
    assert inputs.TITLE_SCHEMA == {"type": "string", "minLength": 1, "maxLength": 1000}
    assert inputs.TEXT_SCHEMA == {"type": "string", "maxLength": 1 << 20}


@given(st.lists(st.integers(0xD7F0, 0xE010).map(chr)).map("".join))
def test_valid_text_has_no_lone_surrogate_and_keeps_the_rest(text: str) -> None:
    found = inputs.valid(text)
    found.encode("utf-8")  # strict: no surrogate left
    assert len(found) == len(text)
    assert all(
        a == b or (0xD800 <= ord(b) <= 0xDFFF and a == "\ufffd")
        for a, b in zip(found, text, strict=True)
    )


def test_a_refused_value_is_quoted_short_and_printable() -> None:
    assert inputs.quoted("abc") == "'abc'"
    assert inputs.quoted("a\x1b[31m\ud800") == "'a\\x1b[31m\\ud800'"
    assert inputs.quoted("x" * 100) == "'" + "x" * 39 + "…'"
    assert inputs.quoted(500) == "500"


# --- metadata -------------------------------------------------------------------------------

NUMBERS = st.floats(allow_nan=True, allow_infinity=True) | st.integers()
VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=20,
)


def strict(value: Any) -> bool:
    """Whether json's strict writer takes `value` and its text is UTF-8: the oracle."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return False
    return True


def depth(value: Any) -> int:
    if isinstance(value, dict | list):
        inner = value.values() if isinstance(value, dict) else value
        return 1 + max((depth(v) for v in inner), default=0)
    return 0


@given(st.dictionaries(st.text(max_size=3), VALUES, max_size=4))
def test_metadata_is_taken_iff_strict_json_holds_it(value: dict[str, Any]) -> None:
    if strict(value):
        assert inputs.metadata(value) is value
    else:
        with pytest.raises(InputError):
            inputs.metadata(value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"a": 1, "x": math.nan},
            "metadata at 'x': NaN is not a number JSON can hold; give a finite number (or "
            '"NaN" as text)',
        ),
        (
            {"x": [1, {"y": -math.inf}], "z": math.inf},
            "metadata at 'x/1/y': -Infinity is not a number JSON can hold; give a finite number "
            '(or "-Infinity" as text)',
        ),
        (
            {"x": "caf\ud800"},
            "metadata at 'x': 'caf\\ud800' holds a lone surrogate (a \\ud800-\\udfff escape "
            "without its pair), which is not Unicode text; give valid text",
        ),
        (
            {"\udcff": 1},
            "metadata: the key '\\udcff' holds a lone surrogate (a \\ud800-\\udfff escape "
            "without its pair), which is not Unicode text; give valid text",
        ),
        (
            {"x": "é" * 40_000},
            "metadata takes 80,008 bytes as JSON, over the limit of 65,536; keep long text in "
            "the description",
        ),
    ],
)
def test_metadata_refusals_name_the_key_and_the_fix(value: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        inputs.metadata(value)
    assert str(caught.value) == message


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def test_metadata_nests_at_most_100_deep_however_deep_it_is_given() -> None:
    assert depth(nested(100)) == 100
    assert inputs.metadata(nested(100))
    for levels in (101, 50_000):  # deeper than Python's stack: the walk keeps its own
        with pytest.raises(InputError) as caught:
            inputs.metadata(nested(levels))
        assert str(caught.value) == (
            "metadata is nested deeper than 100 levels of objects and arrays; start keeps at "
            "most 100"
        )


def test_a_meta_value_is_json_when_it_is_json_and_deep_json_is_refused_unread() -> None:
    assert inputs.metadata_value('{"a": [1]}') == {"a": [1]}
    assert inputs.metadata_value("plain words") == "plain words"
    assert depth(inputs.metadata_value("[" * 99 + "]" * 99)) == 99
    for text in ("[" * 100 + "]" * 100, '{"a":' * 5000 + "1" + "}" * 5000, "[" * 10**6):
        with pytest.raises(InputError) as caught:
            inputs.metadata_value(text)
        assert str(caught.value).startswith("metadata is nested deeper than 100 levels")


def test_the_merged_metadata_of_an_item_is_held_to_the_same_limit() -> None:
    inputs.merged_metadata({"x": "y" * 65_000}, "item-3")
    with pytest.raises(InputError) as caught:
        inputs.merged_metadata({"x": "y" * 40_000, "z": "y" * 40_000}, "item-3")
    assert str(caught.value) == (
        "item-3's metadata would take 80,015 bytes as JSON after this change, over the limit of "
        "65,536; delete keys (a null value deletes its key)"
    )


@given(VALUES | st.dictionaries(st.text(max_size=3), VALUES, max_size=4))
def test_what_a_store_kept_is_written_out_as_strict_json(value: Any) -> None:
    found = inputs.readable(value)
    assert strict(found)
    if strict(value):
        assert found == value


def test_readable_writes_each_value_json_cannot_hold_as_one_it_can() -> None:
    kept = {"a": "\ud800", "n": math.nan, "i": [math.inf, -math.inf], "\udcff": 1}
    assert inputs.readable(kept) == {
        "a": "\ufffd",
        "n": "NaN",
        "i": ["Infinity", "-Infinity"],
        "\ufffd": 1,
    }
    cut = inputs.readable(nested(150))
    assert depth(cut) == 100  # deeper than any door takes: null
