"""A task's output schema and the answers held to it, checked by jsonschema in a child process
that is killed at a deadline.

In a child, because neither check can be bounded in this process: a backtracking `pattern`
(`^(a+)+$` against `aaaa…!`) runs in `re`, which holds the GIL and cannot be interrupted, and
jsonschema compares the items of an array pair by pair (`uniqueItems`, also in the metaschemas'
`enum`, `required` and `type`), so a hostile schema or answer can take hours. The child is this
interpreter running `main` on a request file; it writes its answer, JSON, to a file beside it.
jsonschema is imported in the child only.

A `$ref` resolves within the schema only: the registry retrieves nothing, so no file is read and
nothing goes over the network, and a `$ref` the schema does not hold is a problem of the schema,
found before any agent runs. A draft's metaschema, which jsonschema ships, resolves too.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

from start.base.record import Record

if TYPE_CHECKING:
    from start.proc.shell import CommandResult, Owner

# How long checking a schema against its draft's metaschema may take: far more than a real
# schema needs, so that only a hostile one meets the deadline.
SCHEMA_SECONDS: Final = 10.0
# How many problems of an answer a check keeps (the first ones).
PROBLEMS_KEPT: Final = 100
# How much of one problem's text a message keeps: a validator quotes the value it refused.
_WIDTH: Final = 200
# How much of a refused value a problem quotes: the rest of the message says what is wrong.
_QUOTED: Final = 60
# A key that a JSON path writes as `.key` (as jsonschema's `json_path` does); others as ['key'].
_PLAIN_KEY: Final = re.compile(r"[a-zA-Z][a-zA-Z0-9_]*")

# The problems of a check: (JSON path, message) pairs.
Problems = tuple[tuple[str, str], ...]


class Job(Record):
    """One check: a schema against its metaschema, or (`answer`) a value against the schema."""

    schema: Any
    seconds: float  # the deadline: the child is killed this long after it starts
    answer: bool = False
    value: Any = None


class Outcome(Record):
    """What a check found; `timed_out` when it was stopped at its deadline."""

    problems: Problems = ()
    timed_out: bool = False


def run(jobs: Sequence[Job], owner: Owner | None = None) -> list[Outcome]:
    """Each job in a child of its own, all at once, each killed at its deadline (start.proc.shell
    runs them: own process group, stdin from /dev/null; `owner` is told of each group)."""
    import tempfile

    from start.proc import shell

    outcomes = [Outcome(timed_out=True)] * len(jobs)  # what a job with no time left gets
    with tempfile.TemporaryDirectory(prefix="start-check-") as directory:
        specs: list[shell.CommandSpec] = []
        started: list[tuple[int, str]] = []  # each started job, and where its child answers
        for index, job in enumerate(jobs):
            if job.seconds <= 0:
                continue
            request = os.path.join(directory, f"{index}.json")
            answer = os.path.join(directory, f"{index}.out.json")
            with open(request, "x", encoding="utf-8") as file:
                json.dump({"schema": job.schema, "answer": job.answer, "value": job.value}, file)
            code = (
                f"import sys; sys.path[0] = {_package_parent()!r}; "
                f"from start.proc.schemacheck import main; main({request!r}, {answer!r})"
            )
            specs.append(
                shell.CommandSpec(
                    command=code,
                    shell=sys.executable,
                    timeout=job.seconds,
                    cwd=directory,
                    separate=True,
                    label="output schema check",
                )
            )
            started.append((index, answer))
        results = shell.run_all(specs, owner=owner) if specs else []
        for (index, answer), result in zip(started, results, strict=True):
            outcomes[index] = _outcome(result, answer)
    return outcomes


def _package_parent() -> str:
    """The directory that holds this package: the child imports it from there, whatever its
    working directory holds (the child's `sys.path[0]` would be that directory)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _outcome(result: CommandResult, answer: str) -> Outcome:
    """What a child found: its answer file, once it exited 0."""
    if result.timed_out:
        return Outcome(timed_out=True)
    if result.returncode == 0:
        try:
            with open(answer, encoding="utf-8") as file:
                found = json.load(file)
            return Outcome(tuple((str(path), str(message)) for path, message in found))
        except (OSError, ValueError, TypeError):
            pass
    said = [line for line in result.stderr.splitlines() if line.strip()]
    why = f": {clip(said[-1].strip())}" if said else ""
    return Outcome((("$", f"jsonschema could not check it ({result.status}){why}"),))


def main(request: str, answer: str) -> None:
    """The child: the check a request file asks for; its problems as JSON in `answer`."""
    with open(request, encoding="utf-8") as file:
        asked = json.load(file)
    if asked["answer"]:
        found = mismatches(asked["schema"], asked["value"])
    else:
        found = schema_problems(asked["schema"])
    with open(answer, "x", encoding="utf-8") as file:
        json.dump(found, file)


def schema_problems(schema: Any) -> list[tuple[str, str]]:
    """What makes `schema` not a JSON Schema of its draft, and each `$ref` it does not hold.
    In this process: the child's work (`run` bounds it)."""
    if not isinstance(schema, dict | bool):
        kind = type(schema).__name__
        return [("$", f"a JSON Schema is an object (or true or false), not {kind}")]
    if isinstance(schema, bool):
        return []
    if "$schema" in schema and not isinstance(schema["$schema"], str):
        return [("$.$schema", "must be a string: the URI of a JSON Schema draft")]
    cls = _validator_class(schema)
    meta = cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER, registry=_registry())
    errors = islice(meta.iter_errors(schema), PROBLEMS_KEPT)
    found = sorted((e.json_path, clip(e.message)) for e in errors)
    return found or _unresolved(cls, schema)


def mismatches(schema: Any, value: Any) -> list[tuple[str, str]]:
    """Where `value` does not match `schema`, at most PROBLEMS_KEPT of them. In this process:
    the child's work (`run` bounds it)."""
    validator = _validator_class(schema)(schema, registry=_registry())
    found: list[tuple[str, str]] = []
    try:
        for error in validator.iter_errors(value):
            found.append((error.json_path, clip(shorter(error.message, error.instance))))
            if len(found) == PROBLEMS_KEPT:
                break
    except RecursionError:
        found.append(
            (
                "$",
                "the check went deeper than Python's stack allows: a $ref of the schema refers "
                "to itself without end, or the answer nests too deep for the schema",
            )
        )
    return found


def _validator_class(schema: Any) -> Any:
    import jsonschema.validators

    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def _registry() -> Any:
    """A registry that holds nothing and retrieves nothing (jsonschema adds the metaschemas it
    ships): a `$ref` resolves within the schema, or not at all."""
    import referencing

    return referencing.Registry()


def _unresolved(cls: Any, schema: dict[str, Any]) -> list[tuple[str, str]]:
    """Each `$ref` (`$dynamicRef`, `$recursiveRef`) that does not resolve within `schema`, found
    by walking its subschemas as jsonschema does, each with the base URI its `$id`s give."""
    import referencing.exceptions
    import referencing.jsonschema
    from jsonschema_specifications import REGISTRY  # the metaschemas; it retrieves nothing

    where = _paths(schema)
    specification = referencing.jsonschema.specification_with(
        cls.ID_OF(cls.META_SCHEMA) or "urn:unknown-dialect",
        default=referencing.Specification.OPAQUE,
    )
    root = specification.create_resource(schema)
    found: list[tuple[str, str]] = []
    stack = [(REGISTRY.resolver_with_root(root), root)]
    while stack:
        resolver, resource = stack.pop()
        contents = resource.contents
        if isinstance(contents, dict):
            for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
                ref = contents.get(keyword)
                if not isinstance(ref, str):
                    continue
                try:
                    resolver.lookup(ref)
                except referencing.exceptions.Unresolvable:
                    found.append(
                        (
                            f"{where.get(id(contents), '$')}.{keyword}",
                            f"'{clip(ref)}' is not in the schema: a $ref resolves within the "
                            "schema only (put what it names under $defs); no file is read and "
                            "nothing is fetched",
                        )
                    )
        stack.extend((resolver.in_subresource(sub), sub) for sub in resource.subresources())
    return sorted(found)


def _paths(schema: Any) -> dict[int, str]:
    """The JSON path of every object and array in `schema`, by identity (`id`)."""
    paths: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(schema, "$")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            paths[id(value)] = path
            for key, item in value.items():
                stack.append((item, path + step(key)))
        elif isinstance(value, list):
            paths[id(value)] = path
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))
    return paths


def step(key: str) -> str:
    """A key in a JSON path, as jsonschema writes it (`$ref`, `$defs` too as `.key`)."""
    if _PLAIN_KEY.fullmatch(key.removeprefix("$")):
        return f".{key}"
    return "['" + key.replace("\\", "\\\\").replace("'", "\\'") + "']"


def clip(text: str) -> str:
    """`text` on one line, cut to _WIDTH characters."""
    text = " ".join(text.split())
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def shorter(message: str, value: Any) -> str:
    """A validator's message with the value it quotes cut short, so that what is wrong shows."""
    quoted = repr(value)
    if len(quoted) <= _QUOTED or quoted not in message:
        return message
    return message.replace(quoted, quoted[: _QUOTED - 1] + "…", 1)
