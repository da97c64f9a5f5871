"""A task's answer format (`output`): the format resolved, the instruction for agents that cannot
be held to it, and the check of an answer.

`check` and `check_all` take an answer a run already has (start.runs.headless calls them for the CLI
and `start mcp`). JSON is read here, its nesting bounded (start.base.jsontext); a schema is checked
in a child process with a deadline (start.proc.schemacheck), which alone imports jsonschema.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from start.base.errors import ConfigError, Problem
from start.base.record import Record
from start.config.model import OUTPUT_JSON, OUTPUT_SCHEMA, OUTPUT_TEXT, Task
from start.proc import schemacheck

if TYPE_CHECKING:
    from start.proc.shell import Owner

# How many of a failed check's problems a message names.
SHOWN: Final = 5


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
    timed_out: bool = False  # the check of the schema was stopped at its deadline

    def message(self, shown: int = SHOWN) -> str:
        """The problems, one a line, at most `shown` of them."""
        lines = list(self.problems[:shown])
        rest = len(self.problems) - shown
        if rest > 0:
            lines.append(f"... and {rest} more")
        return "\n".join(lines)


def check(spec: Spec, answer: str, seconds: float, owner: Owner | None = None) -> Checked:
    """Whether `answer` is what `spec` declares; its parsed value when it is. A schema is
    checked in a child process (start.proc.schemacheck) stopped after `seconds`."""
    return check_all([(spec, answer, seconds)], owner)[0]


def check_all(
    asked: Sequence[tuple[Spec, str, float]], owner: Owner | None = None
) -> list[Checked]:
    """Each answer checked against its Spec, each within its seconds; the schema checks at once.

    A JSON answer is the whole answer, or the content of the only fenced block (```json ... ```)
    in it, nested at most jsontext.DEPTH_LIMIT deep. A schema's `$ref` resolves within the schema
    only: nothing is read or fetched. `owner` is told of each check's process group
    (shell.Owner).
    """
    found: list[Checked | None] = []
    jobs: list[schemacheck.Job] = []
    for spec, answer, seconds in asked:
        if spec.is_text:
            found.append(Checked(True))
            continue
        try:
            value = extract(answer)
        except ValueError as error:
            found.append(Checked(False, None, (str(error),)))
            continue
        if spec.format != OUTPUT_SCHEMA:
            found.append(Checked(True, value))
            continue
        found.append(None)
        jobs.append(schemacheck.Job(spec.schema, seconds, answer=True, value=value))
    outcomes = iter(zip(jobs, schemacheck.run(jobs, owner) if jobs else [], strict=True))
    checked = []
    for done in found:
        if done is None:
            job, outcome = next(outcomes)
            if outcome.timed_out:
                done = Checked(False, None, (TIMED_OUT,), timed_out=True)
            elif outcome.problems:
                done = Checked(False, None, tuple(f"{at}: {said}" for at, said in outcome.problems))
            else:
                done = Checked(True, job.value)
        checked.append(done)
    return checked


# The problem of a check stopped at its deadline.
TIMED_OUT: Final = (
    "the check did not finish in the time the run had left (--timeout); a `pattern` that "
    "backtracks, or `uniqueItems` over many items, can take that long"
)


def extract(answer: str) -> Any:
    """The JSON value of an answer: all of it, or the only fenced block in it.

    Raises ValueError naming what is wrong.
    """
    from start.base import jsontext

    text = answer.strip()
    if not text:
        raise ValueError("the answer is empty, not JSON")
    first: ValueError | None = None
    try:
        return jsontext.loads(text)
    except jsontext.TooDeepError as deep:
        too_deep: ValueError | None = deep
    except ValueError as whole:
        first, too_deep = whole, None
    blocks = list(fenced_blocks(text))
    if len(blocks) > 1:
        raise ValueError(
            f"the answer is not JSON, and it holds {len(blocks)} fenced blocks, not one"
        ) from None
    if not blocks:
        if too_deep is not None:
            raise ValueError(f"the answer is {too_deep}") from None
        assert first is not None
        raise ValueError(f"the answer is not JSON: {_json_error(first)}") from None
    try:
        return jsontext.loads(blocks[0])
    except jsontext.TooDeepError as deep:
        raise ValueError(f"the fenced block of the answer is {deep}") from None
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


def parse_schema_file(data: bytes, path: str) -> Any:
    """A schema file's JSON; ConfigError with the line and column of a syntax error."""
    from start.base import jsontext

    try:
        return jsontext.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError([Problem("error", path, "", f"not UTF-8 text: {error.reason}")]) from None
    except jsontext.TooDeepError as error:
        raise ConfigError([Problem("error", path, "", str(error))], _NOT_ONE) from None
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

    from start.base.paths import expand

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
        from start.base import fs

        try:
            data = read(path)
        except fs.FileError as error:
            problem = Problem("error", task.origin.path, key, f"{path}: {error.reason}")
            raise ConfigError([problem], "the task's output schema cannot be read") from None
        schema = parse_schema_file(data, path)
        where, file, prefix = path, path, ""
    else:
        assert output.schema is not None
        from start.base import jsontext

        try:
            schema = jsontext.loads(output.schema)
        except jsontext.TooDeepError as error:
            problem = Problem("error", task.origin.path, key, str(error))
            raise ConfigError([problem], _NOT_ONE) from None
        where, file, prefix = key, task.origin.path, key
    return _checked_schema(schema, where, file, prefix)


def spec_of(given: str, where: str) -> Spec:
    """A workflow step's own answer format as its ask carries it (start.compose.ask's
    `answer_format`): "text", "json", or an inline JSON Schema as JSON text, checked as a task's
    is; `where` names the step's key in messages. Raises ConfigError as `spec_for` does."""
    if given == OUTPUT_TEXT:
        return TEXT
    if given == OUTPUT_JSON:
        return JSON
    from start.base import jsontext

    try:
        schema = jsontext.loads(given)
    except ValueError as error:
        raise ConfigError([Problem("error", "", where, str(error))], _NOT_ONE) from None
    return _checked_schema(schema, where, "", where)


def _checked_schema(schema: Any, where: str, file: str, prefix: str) -> Spec:
    """The Spec of `schema` once it is checked against its draft's metaschema; ConfigError
    with a problem per finding, placed in `file` below the key `prefix`."""
    (outcome,) = schemacheck.run([schemacheck.Job(schema, schemacheck.SCHEMA_SECONDS)])
    found = outcome.problems
    if outcome.timed_out:
        seconds = schemacheck.SCHEMA_SECONDS
        found = (
            (
                "$",
                f"checking it against its draft's metaschema did not finish in {seconds:g} s "
                "(start's limit for a schema); a schema that takes that long is refused",
            ),
        )
    if found:
        problems = [
            Problem("error", file, _join(prefix, pointer), message) for pointer, message in found
        ]
        raise ConfigError(problems, _NOT_ONE)
    return Spec(OUTPUT_SCHEMA, schema, where)


_NOT_ONE: Final = "the task's output schema is not a valid JSON Schema"


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
