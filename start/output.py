"""A task's answer format (`output`): the format resolved, the instruction for agents that cannot
be held to it, and the check of an answer.

`check` is pure: the CLI, `start mcp` and the run history call it on an answer they already have.
The schema validator (jsonschema) is imported only when a schema is used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Final

from start.config.model import OUTPUT_JSON, OUTPUT_SCHEMA, OUTPUT_TEXT, Task
from start.errors import ConfigError, Problem
from start.record import Record

# How many of a failed check's problems a message names.
SHOWN: Final = 5
# How much of one problem's text a message keeps: a validator quotes the value it refused.
_WIDTH: Final = 200


class Spec(Record):
    """A task's output format, resolved: its schema read and parsed."""

    format: str  # OUTPUT_TEXT, OUTPUT_JSON or OUTPUT_SCHEMA
    schema: Any = None  # the JSON Schema (an object, or true or false), for OUTPUT_SCHEMA
    # Where the schema is, for messages: its file, or the key of an inline schema.
    where: str | None = None

    @property
    def is_text(self) -> bool:
        return self.format == OUTPUT_TEXT

    def schema_text(self) -> str:
        """The schema as compact JSON, as an agent's `{schema}` receives it."""
        return json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False)


TEXT: Final = Spec(OUTPUT_TEXT)
JSON: Final = Spec(OUTPUT_JSON)


class Checked(Record):
    """An answer checked against a Spec: its parsed value, or the problems found."""

    ok: bool
    value: Any = None  # the parsed JSON value; None for a text answer or a failed check
    # What is wrong, first problems first: `$.path: message`, or one line when it is not JSON.
    problems: tuple[str, ...] = ()

    def message(self, shown: int = SHOWN) -> str:
        """The problems, one a line, at most `shown` of them."""
        lines = list(self.problems[:shown])
        rest = len(self.problems) - shown
        if rest > 0:
            lines.append(f"... and {rest} more")
        return "\n".join(lines)


def check(spec: Spec, answer: str) -> Checked:
    """Whether `answer` is what `spec` declares; its parsed value when it is.

    A JSON answer is the whole answer, or the content of the only fenced block (```json ... ```)
    in it. A schema's `$ref` resolves within the schema only: nothing is fetched.
    """
    if spec.is_text:
        return Checked(True)
    try:
        value = extract(answer)
    except ValueError as error:
        return Checked(False, None, (str(error),))
    if spec.format != OUTPUT_SCHEMA:
        return Checked(True, value)
    problems = list(_mismatches(spec.schema, value))
    if problems:
        return Checked(False, None, tuple(problems))
    return Checked(True, value)


def extract(answer: str) -> Any:
    """The JSON value of an answer: all of it, or the only fenced block in it.

    Raises ValueError naming what is wrong.
    """
    text = answer.strip()
    if not text:
        raise ValueError("the answer is empty, not JSON")
    try:
        return json.loads(text)
    except ValueError as whole:
        first = whole
    blocks = list(fenced_blocks(text))
    if len(blocks) > 1:
        raise ValueError(
            f"the answer is not JSON, and it holds {len(blocks)} fenced blocks, not one"
        ) from None
    if not blocks:
        raise ValueError(f"the answer is not JSON: {_json_error(first)}") from None
    try:
        return json.loads(blocks[0])
    except ValueError as inner:
        raise ValueError(
            f"the fenced block of the answer is not JSON: {_json_error(inner)}"
        ) from None


def fenced_blocks(text: str) -> Iterator[str]:
    """The content of each fenced block (a line of three or more backticks or tildes, with an
    optional info string, to the next such fence line). Line by line: linear in the text."""
    lines = text.split("\n")
    opened: str | None = None
    body: list[str] = []
    for line in lines:
        stripped = line.strip()
        if opened is None:
            fence = _fence(stripped)
            if fence is not None:
                opened, body = fence, []
        elif stripped.startswith(opened) and not stripped.strip(opened[0]):
            yield "\n".join(body)
            opened = None
        else:
            body.append(line)


def _fence(line: str) -> str | None:
    for mark in ("`", "~"):
        if line.startswith(mark * 3):
            size = len(line) - len(line.lstrip(mark))
            return mark * size
    return None


def _json_error(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at line {error.lineno} column {error.colno}"
    return str(error)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


# How much of a refused value a problem quotes: the rest of the message says what is wrong.
_QUOTED: Final = 60


def _shorter(message: str, value: Any) -> str:
    """A validator's message with the value it quotes cut short, so that what is wrong shows."""
    quoted = repr(value)
    if len(quoted) <= _QUOTED or quoted not in message:
        return message
    return message.replace(quoted, quoted[: _QUOTED - 1] + "…", 1)


def _validator(schema: Any) -> Any:
    import jsonschema.validators  # about 75 ms: only a task with a schema pays it

    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def _mismatches(schema: Any, value: Any) -> Iterator[str]:
    import referencing.exceptions

    validator = _validator(schema)(schema)
    try:
        for error in validator.iter_errors(value):
            yield f"{error.json_path}: {_clip(_shorter(error.message, error.instance))}"
    except referencing.exceptions.Unresolvable as error:
        yield f"the schema's $ref cannot be resolved ({error}): a schema refers only within itself"


def schema_problems(schema: object) -> list[tuple[str, str]]:
    """What makes `schema` not a JSON Schema: (JSON path in the schema, message) pairs."""
    if not isinstance(schema, dict | bool):
        kind = type(schema).__name__
        return [("$", f"a JSON Schema is an object (or true or false), not {kind}")]
    if isinstance(schema, bool):
        return []
    cls = _validator(schema)
    meta = cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER)
    found = [(e.json_path, _clip(e.message)) for e in meta.iter_errors(schema)]
    return sorted(found)


def parse_schema_file(data: bytes, path: str) -> Any:
    """A schema file's JSON; ConfigError with the line and column of a syntax error."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError([Problem("error", path, "", f"not UTF-8 text: {error.reason}")]) from None
    except json.JSONDecodeError as error:
        problem = Problem(
            "error", path, "", f"not JSON: {error.msg}", line=error.lineno, column=error.colno
        )
        raise ConfigError([problem], "the task's output schema is not JSON") from None


def schema_path(task: Task) -> str | None:
    """The file of a task's schema, absolute: a relative path is beside the task's config file."""
    output = task.output
    if output is None or output.schema_file is None:
        return None
    import os

    from start.paths import expand

    return expand(output.schema_file, os.path.dirname(task.origin.path))


def spec_for(task: Task | None, read: Callable[[str], bytes]) -> Spec:
    """The output format of `task` (text without one), its schema read by `read` and checked.

    Raises ConfigError (exit 3) when the schema cannot be read or is not a JSON Schema; `read`
    may raise what the caller's reader raises (fs.FileError, WallError).
    """
    if task is None or task.output is None or task.output.format == OUTPUT_TEXT:
        return TEXT
    output = task.output
    if output.format == OUTPUT_JSON:
        return JSON
    key = f"tasks.{task.name}.output.schema"
    path = schema_path(task)
    if path is not None:
        from start import fs

        try:
            data = read(path)
        except fs.FileError as error:
            problem = Problem("error", task.origin.path, key, f"{path}: {error.reason}")
            raise ConfigError([problem], "the task's output schema cannot be read") from None
        schema = parse_schema_file(data, path)
        where, file, prefix = path, path, ""
    else:
        assert output.schema is not None
        schema = json.loads(output.schema)
        where, file, prefix = key, task.origin.path, key
    found = schema_problems(schema)
    if found:
        problems = [
            Problem("error", file, _join(prefix, pointer), message) for pointer, message in found
        ]
        raise ConfigError(problems, "the task's output schema is not a valid JSON Schema")
    return Spec(OUTPUT_SCHEMA, schema, where)


def _join(prefix: str, json_path: str) -> str:
    """A schema's JSON path (`$.properties.a`) as a key: below `prefix` for an inline schema."""
    inner = json_path[1:].lstrip(".") if json_path.startswith("$") else json_path
    if not prefix:
        return json_path
    return f"{prefix}.{inner}" if inner else prefix


def instruction(spec: Spec) -> str:
    """The fixed instruction a prompt gets for an agent that cannot be held to the format."""
    if spec.is_text:
        return ""
    text = "Answer with one JSON value only, with no other text before or after it."
    if spec.format == OUTPUT_SCHEMA:
        text += f" It must match this JSON Schema:\n{spec.schema_text()}"
    return text


def with_instruction(prompt: str, spec: Spec) -> str:
    """`prompt` with the instruction for `spec` after it, a blank line between."""
    said = instruction(spec)
    if not said:
        return prompt
    if not prompt:
        return said + "\n"
    gap = "" if prompt.endswith("\n\n") else "\n" if prompt.endswith("\n") else "\n\n"
    return f"{prompt}{gap}{said}\n"
