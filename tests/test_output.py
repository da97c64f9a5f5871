"""start.output: a task's answer format, and the check of an answer against it."""

from __future__ import annotations

import json

import pytest

from start import output
from start.config.model import Origin, Output, Task
from start.errors import ConfigError

SCHEMA = {
    "type": "object",
    "required": ["severity", "summary"],
    "properties": {
        "severity": {"enum": ["low", "medium", "high"]},
        "summary": {"type": "string"},
    },
}
SPEC = output.Spec("schema", SCHEMA, "triage.schema.json")
GOOD = '{"severity": "high", "summary": "crash on start"}'


def test_text_is_never_checked() -> None:
    assert output.check(output.TEXT, "anything at all") == output.Checked(True)


@pytest.mark.parametrize(
    "answer",
    [GOOD, f"\n{GOOD}\n", f"```json\n{GOOD}\n```", f"Here it is:\n\n```\n{GOOD}\n```\nDone."],
)
def test_json_whole_or_in_one_fenced_block(answer: str) -> None:
    value = {"severity": "high", "summary": "crash on start"}
    assert output.check(output.JSON, answer) == output.Checked(True, value)
    assert output.check(SPEC, answer) == output.Checked(True, value)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("", "the answer is empty, not JSON"),
        ("The severity is high.", "the answer is not JSON: Expecting value at line 1 column 1"),
        (
            '```json\n{"a" 1}\n```',  # a message every Python 3.11+ words alike
            "the fenced block of the answer is not JSON: Expecting ':' delimiter at line 1 column 6",
        ),
        (
            "```\n1\n```\nand\n```\n2\n```",
            "the answer is not JSON, and it holds 2 fenced blocks, not one",
        ),
    ],
)
def test_not_json(answer: str, problem: str) -> None:
    assert output.check(output.JSON, answer) == output.Checked(False, None, (problem,))
    assert output.check(SPEC, answer) == output.Checked(False, None, (problem,))


def test_a_mismatch_names_each_problem_with_its_json_path() -> None:
    checked = output.check(SPEC, '{"severity": "urgent", "summary": 3}')
    assert checked == output.Checked(
        False,
        None,
        (
            "$.severity: 'urgent' is not one of ['low', 'medium', 'high']",
            "$.summary: 3 is not of type 'string'",
        ),
    )
    assert output.check(SPEC, "```json\n[]\n```").problems == ("$: [] is not of type 'object'",)


def test_the_message_shows_the_first_problems() -> None:
    checked = output.Checked(False, None, tuple(f"$[{i}]: bad" for i in range(7)))
    assert (
        checked.message() == "$[0]: bad\n$[1]: bad\n$[2]: bad\n$[3]: bad\n$[4]: bad\n... and 2 more"
    )


def test_a_long_value_is_cut_in_the_message() -> None:
    checked = output.check(SPEC, '{"severity": "' + "x" * 500 + '", "summary": ""}')
    (problem,) = checked.problems
    assert problem == "$.severity: '" + "x" * 58 + "… is not one of ['low', 'medium', 'high']"
    many = output.check(SPEC, json.dumps({"severity": "low", "summary": "s"} | {"k": "x" * 300}))
    assert many.ok
    wide = output.Spec("schema", {"enum": ["y" * 300]}, "x")
    (problem,) = output.check(wide, '"z"').problems
    assert (
        problem == "$: 'z' is not one of ['" + "y" * 179 + "…"
    )  # the message cut to 200 characters


def test_a_ref_outside_the_schema_is_not_fetched() -> None:
    spec = output.Spec("schema", {"$ref": "https://example.invalid/schema.json"}, "x")
    (problem,) = output.check(spec, "{}").problems
    assert problem.startswith("the schema's $ref cannot be resolved (")


def test_the_instruction_names_the_format() -> None:
    assert output.with_instruction("Triage.\n", output.TEXT) == "Triage.\n"
    assert output.with_instruction("Triage.", output.JSON) == (
        "Triage.\n\nAnswer with one JSON value only, with no other text before or after it.\n"
    )
    small = output.Spec("schema", {"type": "object"}, "x")
    assert output.with_instruction("Triage.\n", small) == (
        "Triage.\n\nAnswer with one JSON value only, with no other text before or after it. "
        'It must match this JSON Schema:\n{"type":"object"}\n'
    )


def task(out: Output | None, path: str = "/cfg/tasks.toml") -> Task:
    return Task("triage", Origin("global", path), prompt="x", output=out)


def test_spec_of_each_form(tmp_path: object) -> None:
    def read(path: str) -> bytes:
        assert path == "/cfg/triage.schema.json"  # beside the config file
        return b'{"type": "object"}'

    assert output.spec_for(None, read) is output.TEXT
    assert output.spec_for(task(None), read) is output.TEXT
    assert output.spec_for(task(Output("json")), read) is output.JSON
    inline = task(Output("schema", schema='{"type": "array"}'))
    assert output.spec_for(inline, read) == output.Spec(
        "schema", {"type": "array"}, "tasks.triage.output.schema"
    )
    named = task(Output("schema", schema_file="triage.schema.json"))
    assert output.spec_for(named, read) == output.Spec(
        "schema", {"type": "object"}, "/cfg/triage.schema.json"
    )


def test_a_schema_that_is_not_one_is_a_config_error() -> None:
    inline = task(Output("schema", schema='{"type": "objekt", "required": "a"}'))
    with pytest.raises(ConfigError) as caught:
        output.spec_for(inline, lambda path: b"")
    assert str(caught.value) == (
        "the task's output schema is not a valid JSON Schema\n"
        "  /cfg/tasks.toml\n"
        "    error: tasks.triage.output.schema.required: 'a' is not of type 'array'\n"
        "    error: tasks.triage.output.schema.type: 'objekt' is not valid under any of the "
        "given schemas\n"
        "Run 'start config validate' to see every problem."
    )
    named = task(Output("schema", schema_file="s.json"))
    with pytest.raises(ConfigError) as caught:
        output.spec_for(named, lambda path: b'{\n  "type" "object"\n}\n')
    assert str(caught.value) == (
        "the task's output schema is not JSON\n"
        "  /cfg/s.json\n"
        "    2:10: error: not JSON: Expecting ':' delimiter\n"
        "Run 'start config validate' to see every problem."
    )
