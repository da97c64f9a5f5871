"""start.config.output: a task's answer format, and the check of an answer against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from start.base.errors import ConfigError, Problem
from start.config import output
from start.config.model import Origin, Output, Task

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
# How long a check may take: far more than any here needs.
SECONDS = 60.0


def test_text_is_never_checked() -> None:
    assert output.check(output.TEXT, "anything at all", SECONDS) == output.Checked(True)


@pytest.mark.parametrize(
    "answer",
    [GOOD, f"\n{GOOD}\n", f"```json\n{GOOD}\n```", f"Here it is:\n\n```\n{GOOD}\n```\nDone."],
)
def test_json_whole_or_in_one_fenced_block(answer: str) -> None:
    value = {"severity": "high", "summary": "crash on start"}
    assert output.check(output.JSON, answer, SECONDS) == output.Checked(True, value)
    assert output.check(SPEC, answer, SECONDS) == output.Checked(True, value)


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
    assert output.check(output.JSON, answer, SECONDS) == output.Checked(False, None, (problem,))
    assert output.check(SPEC, answer, SECONDS) == output.Checked(False, None, (problem,))


def test_a_mismatch_names_each_problem_with_its_json_path() -> None:
    checked = output.check(SPEC, '{"severity": "urgent", "summary": 3}', SECONDS)
    assert checked == output.Checked(
        False,
        None,
        (
            "$.severity: 'urgent' is not one of ['low', 'medium', 'high']",
            "$.summary: 3 is not of type 'string'",
        ),
    )
    assert output.check(SPEC, "```json\n[]\n```", SECONDS).problems == (
        "$: [] is not of type 'object'",
    )


def test_the_message_shows_the_first_problems() -> None:
    checked = output.Checked(False, None, tuple(f"$[{i}]: bad" for i in range(7)))
    assert (
        checked.message() == "$[0]: bad\n$[1]: bad\n$[2]: bad\n$[3]: bad\n$[4]: bad\n... and 2 more"
    )


def test_a_long_value_is_cut_in_the_message() -> None:
    checked = output.check(SPEC, '{"severity": "' + "x" * 500 + '", "summary": ""}', SECONDS)
    (problem,) = checked.problems
    assert problem == "$.severity: '" + "x" * 58 + "… is not one of ['low', 'medium', 'high']"
    many = output.check(
        SPEC, json.dumps({"severity": "low", "summary": "s"} | {"k": "x" * 300}), SECONDS
    )
    assert many.ok
    wide = output.Spec("schema", {"enum": ["y" * 300]}, "x")
    (problem,) = output.check(wide, '"z"', SECONDS).problems
    assert (
        problem == "$: 'z' is not one of ['" + "y" * 179 + "…"
    )  # the message cut to 200 characters


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


def test_a_ref_outside_the_schema_is_a_problem_of_the_schema_and_never_read(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"enum": ["PRIVATE KEY"]}')
    schema = {
        "properties": {
            "a": {"$ref": secret.as_uri()},
            "b": {"$ref": "https://example.invalid/schema.json"},
            "c": {"$ref": "secret.json"},
            "d": {"$ref": "#/$defs/missing"},
        }
    }
    inline = task(Output("schema", schema=json.dumps(schema)))
    with pytest.raises(ConfigError) as caught:
        output.spec_for(inline, lambda path: b"")
    within = (
        "is not in the schema: a $ref resolves within the schema only (put what it names under "
        "$defs); no file is read and nothing is fetched"
    )
    assert str(caught.value) == (
        "the task's output schema is not a valid JSON Schema\n"
        "  /cfg/tasks.toml\n"
        f"    error: tasks.triage.output.schema.properties.a.$ref: '{secret.as_uri()}' {within}\n"
        "    error: tasks.triage.output.schema.properties.b.$ref: "
        f"'https://example.invalid/schema.json' {within}\n"
        f"    error: tasks.triage.output.schema.properties.c.$ref: 'secret.json' {within}\n"
        f"    error: tasks.triage.output.schema.properties.d.$ref: '#/$defs/missing' {within}\n"
        "Run 'start config validate' to see every problem."
    )


def test_a_ref_resolves_within_the_schema() -> None:
    schema = {
        "$id": "file:///home/you/.config/gcloud/application_default_credentials.json",
        "$defs": {
            "level": {"enum": ["low", "high"]},
            "named": {"$anchor": "named", "type": "string"},
            "tree": {"$dynamicAnchor": "node", "items": {"$dynamicRef": "#node"}},
        },
        "properties": {
            "severity": {"$ref": "#/$defs/level"},
            "title": {"$ref": "#named"},
            "again": {"$ref": "application_default_credentials.json#/$defs/level"},
            "schema": {"$ref": "https://json-schema.org/draft/2020-12/schema"},
            "tree": {"$ref": "#/$defs/tree"},
        },
    }
    spec = output.spec_for(task(Output("schema", schema=json.dumps(schema))), lambda path: b"")
    good = '{"severity": "low", "title": "t", "again": "high", "schema": {}, "tree": [[]]}'
    assert output.check(spec, good, SECONDS).ok
    bad = '{"severity": "no", "title": 1, "again": "x", "schema": {"type": 5}, "tree": 3}'
    assert output.check(spec, bad, SECONDS).problems == (
        "$.severity: 'no' is not one of ['low', 'high']",
        "$.title: 1 is not of type 'string'",
        "$.again: 'x' is not one of ['low', 'high']",
        "$.schema.type: 5 is not valid under any of the given schemas",
    )


def test_a_ref_to_itself_without_end_is_a_problem_not_a_crash() -> None:
    spec = output.spec_for(task(Output("schema", schema='{"$ref": "#"}')), lambda path: b"")
    assert output.check(spec, "{}", SECONDS) == output.Checked(
        False,
        None,
        (
            "$: the check went deeper than Python's stack allows: a $ref of the schema refers "
            "to itself without end, or the answer nests too deep for the schema",
        ),
    )


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def test_an_answer_nested_too_deep_is_not_read() -> None:
    deep = (
        "the answer is nested deeper than 100 levels of arrays and objects; start reads at most 100"
    )
    assert output.check(output.JSON, nested(2000), SECONDS) == output.Checked(False, None, (deep,))
    fenced = f"Here:\n```json\n{nested(101)}\n```"
    assert output.check(output.JSON, fenced, SECONDS).problems == (
        "the fenced block of the answer is nested deeper than 100 levels of arrays and objects; "
        "start reads at most 100",
    )
    assert output.check(output.JSON, nested(100), SECONDS).value == json.loads(nested(100))
    # Brackets in strings are text, not nesting.
    assert output.check(output.JSON, json.dumps("[" * 2000), SECONDS).ok
    tree = {"$defs": {"n": {"type": ["array", "integer"], "items": {"$ref": "#/$defs/n"}}}}
    spec = output.spec_for(
        task(Output("schema", schema=json.dumps({**tree, "$ref": "#/$defs/n"}))), lambda path: b""
    )
    assert output.check(spec, nested(100), SECONDS) == output.Checked(True, json.loads(nested(100)))
    assert output.check(spec, nested(101), SECONDS).problems == (deep,)


@pytest.mark.parametrize(
    ("schema", "answer"),
    [
        ({"type": "string", "pattern": "^(a+)+$"}, json.dumps("a" * 40 + "!")),
        ({"uniqueItems": True}, json.dumps([{"a": i} for i in range(30_000)])),
    ],
)
def test_a_check_that_runs_past_its_deadline_is_stopped(schema: object, answer: str) -> None:
    spec = output.spec_for(task(Output("schema", schema=json.dumps(schema))), lambda path: b"")
    assert output.check(spec, answer, 1.0) == output.Checked(
        False, None, (output.TIMED_OUT,), timed_out=True
    )


def test_a_schema_nested_too_deep_is_refused_before_it_is_checked() -> None:
    deep = json.dumps(json.loads("{" + '"items": {' * 200 + "}" * 201))
    inline = task(Output("schema", schema=deep))
    with pytest.raises(ConfigError) as caught:
        output.spec_for(inline, lambda path: b"")
    assert str(caught.value) == (
        "the task's output schema is not a valid JSON Schema\n"
        "  /cfg/tasks.toml\n"
        "    error: tasks.triage.output.schema: nested deeper than 100 levels of arrays and "
        "objects; start reads at most 100\n"
        "Run 'start config validate' to see every problem."
    )
    named = task(Output("schema", schema_file="s.json"))
    with pytest.raises(ConfigError) as caught:
        output.spec_for(named, lambda path: ("[" * 100_000).encode())
    assert str(caught.value) == (
        "the task's output schema is not a valid JSON Schema\n"
        "  /cfg/s.json\n"
        "    error: nested deeper than 100 levels of arrays and objects; start reads at most 100\n"
        "Run 'start config validate' to see every problem."
    )
    # 100 levels is a schema, checked against its metaschema within Python's stack.
    ok = json.dumps(json.loads('{"not": ' * 99 + "{}" + "}" * 99))
    assert output.spec_for(task(Output("schema", schema=ok)), lambda path: b"").schema


@pytest.mark.parametrize(
    ("schema", "key", "message"),
    [
        ({"$schema": []}, "$schema", "must be a string: the URI of a JSON Schema draft"),
        pytest.param(
            {
                "$schema": "http://json-schema.org/draft-04/schema#",
                "enum": [{"a": i} for i in range(40_000)],  # compared pair by pair: uniqueItems
            },
            "",
            "checking it against its draft's metaschema did not finish in 10 s (start's limit "
            "for a schema); a schema that takes that long is refused",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_a_schema_jsonschema_cannot_take_is_a_problem_not_a_crash(
    schema: object, key: str, message: str
) -> None:
    inline = task(Output("schema", schema=json.dumps(schema)))
    with pytest.raises(ConfigError) as caught:
        output.spec_for(inline, lambda path: b"")
    where = "tasks.triage.output.schema" + (f".{key}" if key else "")
    assert caught.value.problems == (Problem("error", "/cfg/tasks.toml", where, message),)


def test_a_check_with_no_time_left_is_not_started() -> None:
    spec = output.Spec("schema", {"type": "string"}, "x")
    assert output.check(spec, '"a"', 0) == output.Checked(
        False, None, (output.TIMED_OUT,), timed_out=True
    )


def test_a_check_that_ends_without_an_answer_says_how_it_ended(tmp_path: Path) -> None:
    from start.proc import schemacheck, shell

    spec = shell.CommandSpec("", None, 1.0, str(tmp_path))
    crashed = shell.CommandResult(
        spec, ("python",), 1, False, "", "", "Traceback (most recent call last):\nMemoryError\n",
        0, 0.5, None,
    )  # fmt: skip
    killed = crashed._replace(returncode=-9, stderr="")
    answer = str(tmp_path / "absent.json")
    assert schemacheck._outcome(crashed, answer) == schemacheck.Outcome(
        (("$", "jsonschema could not check it (failed with exit code 1): MemoryError"),)
    )
    assert schemacheck._outcome(killed, answer) == schemacheck.Outcome(
        (("$", "jsonschema could not check it (killed by SIGKILL)"),)
    )


def test_the_shipped_gate_schema_is_one_a_strict_cli_takes_and_a_verdict_passes(
    isolated: Path,
) -> None:
    """`start config validate` starts no check for the shipped schemas (compose.audit): this is
    theirs. Every object's properties are all required and no others allowed, as a CLI whose
    schema option is strict (Codex's --output-schema) requires."""
    from start.config.load import load
    from tests.fake_headless import verdict

    gate = load(str(isolated), use_project=False, strict=True).tasks["gate"]
    assert gate.origin.layer == "built-in"
    spec = output.spec_for(gate, lambda path: Path(path).read_bytes())
    assert spec.format == "schema"
    objects = [spec.schema, spec.schema["properties"]["findings"]["items"]]
    for found in objects:
        assert found["type"] == "object"
        assert (sorted(found["required"]), found["additionalProperties"]) == (
            sorted(found["properties"]),
            False,
        )
    diff = "```diff\n+++ b/app.py\n@@ -0,0 +1,2 @@\n+ok\n+KEY = 'SECRET'\n```\n"
    no_line = {"block": True, "findings": [{"file": "app.py", "line": None, "message": "m"}]}
    good = [verdict(diff), verdict("no diff"), no_line]
    assert good[0]["block"] is True
    wrong = [
        {"block": "yes", "findings": []},
        {"block": True},
        {"block": True, "findings": [{"file": "app.py", "message": "m"}]},
        {"block": False, "findings": [], "severity": "low"},
    ]
    checked = output.check_all([(spec, json.dumps(answer), SECONDS) for answer in good + wrong])
    assert [found.ok for found in checked] == [True] * len(good) + [False] * len(wrong)
