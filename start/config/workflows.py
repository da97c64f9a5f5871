"""Workflows (`[workflows.NAME]`): their records, their bindings, and every early error.

A workflow is steps, each one ask, whose inputs are bound to the workflow's inputs and to
earlier steps' results by JMESPath expressions over one scope (docs/workflows-design.md). No
launch reads a workflow, so the load (start.config.load) only lets the section through, and
`read` reads the layer files again when `start config validate` or a workflow command needs
them: the config cache and the launch path stay as they are. jmespath is imported inside the
functions that parse an expression, never at import.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from start.base.errors import Problem, suggest
from start.base.record import Record
from start.config import model, schema
from start.config.model import Config, Origin, Output, Param, Task

if TYPE_CHECKING:
    from start.config.validate import Collector

SECTION: Final = "workflows"
# A step's name is a JMESPath identifier, so `steps.NAME` needs no quotes.
STEP_NAME: Final = r"[a-z][a-z0-9_]*"
# The names of the scope every expression reads, besides the workflow's parameters.
INSTRUCTIONS, STEPS, ITEM = "instructions", "steps", "item"
RESERVED: Final = (INSTRUCTIONS, STEPS, ITEM)
# What a step's result offers to expressions: `steps.S.answer`, `steps.S.value`.
ANSWER, VALUE = "answer", "value"
MAX_RETRIES: Final = 10
# The most files a `for_each = { files = "GLOB" }` step runs for: a pattern that matches more is
# a failure of the step, named, before any agent runs (narrow the pattern).
MAX_FILES: Final = 100

_WORKFLOW_FIELDS: Final[Mapping[str, str]] = {
    "description": schema.STR,
    "params": schema.PARAMS,
    "timeout": schema.TIMEOUT,
    "steps": "steps",
}
_STEP_FIELDS: Final[Mapping[str, str]] = {
    "task": schema.STR,
    "prompt": schema.STR,
    "instructions": schema.STR,
    "params": "templates",
    "agent": schema.STR,
    "model": schema.STR,
    "role": schema.STR,
    "permissions": schema.LEVEL,
    "output": schema.OUTPUT,
    "needs": schema.NAMES,
    "when": schema.STR,
    "for_each": "for_each",
    "retries": "retries",
    "timeout": schema.TIMEOUT,
    "answer_limit": schema.SIZE,
    "max_turns": schema.SIZE,
}


@dataclass(frozen=True, slots=True)
class Files:
    """`for_each = { files = "GLOB" }`: the files of the project that `pattern` matches, by
    their paths relative to the project root (start.board.workflow matches them). Not a tuple,
    so that nothing takes it for a literal list of elements."""

    pattern: str


class Step(Record):
    """One step of a workflow, as validated."""

    name: str
    task: str | None = None
    prompt: str | None = None  # a template of bindings
    instructions: str | None = None  # a task step's {instructions}: a template of bindings
    params: tuple[tuple[str, str], ...] = ()  # a task step's parameters: name, template
    agent: str | None = None
    model: str | None = None
    role: str | None = None
    permissions: str | None = None
    # None: a prompt step answers text, a task step as its task says; "text" or an Output: set.
    output: Output | str | None = None
    needs: tuple[str, ...] = ()
    when: str | None = None  # JMESPath
    # JMESPath, the elements themselves, or the project's files a pattern matches.
    for_each: str | tuple[str, ...] | Files | None = None
    retries: int = 0
    timeout: int | None = None
    answer_limit: int | None = None
    max_turns: int | None = None  # the agent's turns at most (its print_max_turns)
    # The steps it reads or needs, in the workflow's step order: `needs` and every `steps.S`.
    upstream: tuple[str, ...] = ()


class Workflow(Record):
    """A workflow: its inputs and its steps, in the order of the file."""

    name: str
    origin: Origin
    steps: tuple[Step, ...]
    description: str | None = None
    params: tuple[Param, ...] = ()
    timeout: int | None = None

    def step(self, name: str) -> Step:
        return next(step for step in self.steps if step.name == name)


class Binding(Record):
    """A `{EXPR}` of a template: the expression, and where it is (offsets of the braces)."""

    expression: str
    start: int
    end: int  # after the closing brace


def bindings(text: str) -> Iterator[Binding | str]:
    """A template's pieces: plain text (with `{{` as `{`) and bindings.

    A binding is `{`, a lowercase letter, and everything to the next `}`; `{{` and `}}` are
    `{` and `}`; any other brace is text, so a prompt may hold JSON such as `{"a": 1}`.
    """
    at, plain = 0, []
    while at < len(text):
        brace = text.find("{", at)
        if brace < 0:
            plain.append(text[at:].replace("}}", "}"))
            break
        plain.append(text[at:brace].replace("}}", "}"))
        if text.startswith("{{", brace):
            plain.append("{")
            at = brace + 2
            continue
        close = text.find("}", brace)
        if "a" <= text[brace + 1 : brace + 2] <= "z" and close > 0:
            if plain:
                yield "".join(plain)
                plain = []
            yield Binding(text[brace + 1 : close], brace, close + 1)
            at = close + 1
            continue
        plain.append("{")
        at = brace + 1
    if plain and "".join(plain):
        yield "".join(plain)


class ExpressionError(ValueError):
    """An expression JMESPath does not parse; str() says why and where."""


def parse(expression: str) -> dict[str, Any]:
    """The syntax tree of a JMESPath expression; ExpressionError if it does not parse."""
    from jmespath import exceptions, parser

    if not expression.strip():
        raise ExpressionError("it is empty")
    try:
        tree: dict[str, Any] = dict(parser.Parser().parse(expression).parsed)
    except exceptions.LexerError as error:
        message = error.message[:1].lower() + error.message[1:]
        raise ExpressionError(f"{message} at character {error.lexer_position + 1}") from None
    except exceptions.IncompleteExpressionError:
        raise ExpressionError("it ends too early") from None
    except exceptions.ParseError as error:
        at = f"at character {error.lex_position + 1}"
        if error.token_value is not None and error.msg.startswith("Unexpected token"):
            raise ExpressionError(f"unexpected '{error.token_value}' {at}") from None
        raise ExpressionError(f"{error.msg[:1].lower()}{error.msg[1:]} {at}") from None
    except exceptions.JMESPathError as error:
        raise ExpressionError(str(error).splitlines()[0]) from None
    return tree


# The nodes whose first child is evaluated where the node is, and whose other children are
# evaluated on what that child gives (a projection's elements, a pipe's result): the chain of
# names of `steps.plan.value.files[0]` starts at the scope, and `[?x]` does not.
_PATHS: Final = frozenset(
    {
        "subexpression",
        "index_expression",
        "projection",
        "value_projection",
        "filter_projection",
        "flatten",
    }
)


def _chain(node: Mapping[str, Any]) -> tuple[tuple[str, ...], bool]:
    """The names a path node reads from where it is evaluated, and whether that is all it does
    (a plain `a.b.c`, with no index, projection or filter)."""
    kind = node["type"]
    if kind == "field":
        return (node["value"],), True
    if kind == "subexpression":
        names, whole = _chain(node["children"][0])
        for right in node["children"][1:]:
            if not whole:
                return names, False
            if right["type"] != "field":  # `value[0]`: the names before its index count too
                return (*names, *_chain(right)[0]), False
            names = (*names, right["value"])
        return names, whole
    if kind in _PATHS:
        return _chain(node["children"][0])[0], False
    return (), False


def references(tree: Mapping[str, Any]) -> Iterator[tuple[str, ...]]:
    """The chains of names an expression reads from the scope: `steps.plan.value.files` for
    `length(steps.plan.value.files) > 0`. Names read inside a projection, a filter or on the
    right of a pipe are relative to what they project, not the scope, and are not listed."""
    kind = tree["type"]
    if kind == "field" or kind in _PATHS:
        names, _ = _chain(tree)
        if names:
            yield names
            return
        leaf = tree
        while leaf["type"] in _PATHS:
            leaf = leaf["children"][0]
        yield from references(leaf)
        return
    children = tree.get("children", [])
    if kind == "pipe":
        yield from references(children[0])
        return
    if kind == "expref":
        return
    for child in children:
        if isinstance(child, dict):
            yield from references(child)


def scope_names(workflow_params: Sequence[str]) -> list[str]:
    return [INSTRUCTIONS, *workflow_params, f"{STEPS}.STEP.{ANSWER}", f"{STEPS}.STEP.{VALUE}"]


class _Checker:
    """The checks of one workflow's expressions: each problem reported at its key."""

    def __init__(
        self,
        key: str,
        steps: Mapping[str, Mapping[str, Any]],
        params: Sequence[str],
        outputs: Mapping[str, Output | None],
        out: Collector,
    ) -> None:
        self.key = key
        self.steps = steps  # each step's validated fields, by name, in file order
        self.params = params
        self.outputs = outputs  # each step's answer format: None for text (no `value`)
        self.out = out

    def expression(
        self, step: str, field: str, expression: str, item: bool, what: str
    ) -> tuple[dict[str, Any] | None, set[str]]:
        """Parse one expression and check its references; its tree (None if it does not
        parse) and the steps it reads."""
        where = f"{self.key}.steps.{step}.{field}"
        try:
            tree = parse(expression)
        except ExpressionError as error:
            self.out.error(
                where, f"{_quoted(what, expression)} is not a JMESPath expression: {error}"
            )
            return None, set()
        for problem in _function_problems(tree):
            self.out.error(where, f"{_quoted(what, expression)} {problem[0]}", problem[1])
        read: set[str] = set()
        for names in references(tree):
            found = self._reference(step, where, names, item, what, expression)
            if found is not None:
                read.add(found)
        return tree, read

    def _reference(
        self, step: str, where: str, names: tuple[str, ...], item: bool, what: str, text: str
    ) -> str | None:
        root = names[0]
        if root == STEPS:
            if len(names) < 3 or names[2] not in (ANSWER, VALUE):
                shown = ".".join(names)
                self.out.error(
                    where,
                    f"{_quoted(what, text)} reads '{shown}': name a step and its answer or value, "
                    f"such as {STEPS}.STEP.{ANSWER} or {STEPS}.STEP.{VALUE}",
                )
                return names[1] if len(names) > 1 and names[1] in self.steps else None
            name = names[1]
            if name not in self.steps:
                known = [s for s in self.steps if s != step]
                self.out.error(
                    where,
                    f"{_quoted(what, text)} reads step '{name}', which this workflow does not have"
                    + (f"; its steps: {', '.join(known)}" if known else ""),
                    suggest(name, known),
                )
                return None
            if name == step:
                self.out.error(
                    where,
                    f"{_quoted(what, text)} reads step '{name}' itself: a step reads only the "
                    "results of steps before it",
                )
                return None
            if names[2] == VALUE and self.outputs[name] is None:
                self.out.error(
                    where,
                    f"{_quoted(what, text)} reads the value of step '{name}', which answers text; "
                    f"read {STEPS}.{name}.{ANSWER}, or give '{name}' output = \"json\" or a schema",
                )
            return name
        if root == ITEM:
            if not item:
                self.out.error(
                    where,
                    f"{_quoted(what, text)} reads '{ITEM}', which only a for_each step's prompt, "
                    "instructions and params have (the element it runs for)",
                )
            return None
        if root == INSTRUCTIONS or root in self.params:
            if len(names) > 1:
                self.out.error(
                    where,
                    f"{_quoted(what, text)} reads '{'.'.join(names)}', but '{root}' is text",
                )
            return None
        names_in_scope = scope_names(self.params)
        self.out.error(
            where,
            f"{_quoted(what, text)} reads '{root}', which is not in the scope: "
            f"{', '.join(names_in_scope)}" + (", item" if item else ""),
            suggest(root, [INSTRUCTIONS, *self.params, STEPS, *([ITEM] if item else [])]),
        )
        return None

    def not_a_list(self, step: str, tree: Mapping[str, Any], text: str) -> None:
        """A for_each over something known not to be a list: text, a literal, or a value whose
        inline schema has another type there."""
        where = f"{self.key}.steps.{step}.for_each"
        why = self._kind(tree)
        if why is not None:
            self.out.error(
                where,
                f"for_each '{text}' is not a list ({why}): for_each runs the step once per "
                f"element of a list, such as {STEPS}.STEP.{VALUE}.files",
            )

    def _kind(self, tree: Mapping[str, Any]) -> str | None:
        if tree["type"] == "literal":
            value = tree["value"]
            return None if isinstance(value, list) else f"it is a literal {_json_kind(value)}"
        names, whole = _chain(tree)
        if not whole or not names:
            return None
        root = names[0]
        if (root == INSTRUCTIONS or root in self.params) and len(names) == 1:
            return "it is text"
        if root != STEPS or len(names) < 3 or names[1] not in self.steps:
            return None
        fields = self.steps[names[1]]
        if "for_each" in fields:
            return None  # its answer and value are lists
        if names[2] == ANSWER and len(names) == 3:
            return f"it is the answer of step '{names[1]}', which is text"
        if names[2] != VALUE:
            return None
        output = self.outputs[names[1]]
        if output is None or output.schema is None:
            return None
        import json

        node: Any = json.loads(output.schema)
        for name in names[3:]:
            properties = node.get("properties") if isinstance(node, dict) else None
            if not isinstance(properties, dict) or name not in properties:
                return None
            node = properties[name]
        kind = node.get("type") if isinstance(node, dict) else None
        kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else None
        if kinds is None or "array" in kinds:
            return None
        return f"step '{names[1]}''s output schema gives it type {' or '.join(map(str, kinds))}"


def _function_problems(tree: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    """A call of a function JMESPath does not have, or with a number of arguments it does not
    take: JMESPath's parser leaves both to the evaluation, which would fail mid-run."""
    from jmespath import functions

    table: Mapping[str, Any] = functions.Functions().FUNCTION_TABLE
    if tree["type"] == "function_expression":
        name, given = tree["value"], len(tree["children"])
        known = table.get(name)
        if known is None:
            yield (
                f"calls {name}(), which JMESPath does not have; its functions: "
                f"{', '.join(sorted(table))}",
                suggest(name, table),
            )
        else:
            signature = known["signature"]
            variadic = bool(signature) and signature[-1].get("variadic", False)
            if given < len(signature) or (given > len(signature) and not variadic):
                takes = f"{len(signature)}{' or more' if variadic else ''}"
                yield (
                    f"calls {name}() with {given} argument{'s' * (given != 1)}; it takes {takes}",
                    None,
                )
    for child in tree.get("children", []):
        if isinstance(child, dict):
            yield from _function_problems(child)


def _quoted(what: str, expression: str) -> str:
    """An expression in a message: a binding as it is written, `{steps.a.answer}` (where the
    problem is placed, at its column: start.config.positions), any other in quotes."""
    return f"binding {{{expression}}}" if what == "binding" else f"{what} '{expression}'"


def _json_kind(value: object) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def check_workflow(
    name: str,
    table: Mapping[str, Any],
    key: str,
    out: Collector,
    config: Config,
) -> Workflow | None:
    """Validate one `[workflows.NAME]` table against the merged config's tasks, agents and
    roles; its record, or None when an error leaves no workflow to plan (no steps, a cycle)."""
    tasks = config.tasks
    from start.config import validate

    bad_name = validate.check_name("workflow", name)
    if bad_name:
        out.error(key, bad_name)
    good = _fields(table, _WORKFLOW_FIELDS, key, out)
    declared: tuple[Param, ...] = ()
    if "params" in good:
        declared = validate._check_params(good["params"], f"{key}.params", out)
        for param in declared:
            if param.name in RESERVED:
                out.error(
                    f"{key}.params.{param.name}",
                    f"'{param.name}' is a name of the scope every expression reads "
                    f"({', '.join(RESERVED)}); give the parameter another name",
                )
    body = table.get("steps")
    if not isinstance(body, dict) or not body:
        out.error(
            key,
            f"a workflow needs steps: [{key}.steps.NAME] tables, each with a task or a prompt",
        )
        return None
    steps: dict[str, dict[str, Any]] = {}
    for step, fields in body.items():
        where = f"{key}.steps.{step}"
        if not isinstance(fields, dict):
            out.error(where, f"must be a table ([{where}])")
            continue
        if not re.fullmatch(STEP_NAME, step):
            out.error(
                where,
                f"invalid step name '{step}': use lowercase letters, digits and underscores, "
                "starting with a letter, such as 'triage' or 'plan_fix' (expressions read it "
                f"as {STEPS}.NAME)",
            )
            continue
        steps[step] = _step_fields(fields, where, out, config)
    params = [p.name for p in declared]
    outputs = {step: _output(fields, tasks) for step, fields in steps.items()}
    checker = _Checker(key, steps, params, outputs, out)
    upstream: dict[str, list[str]] = {}
    for step, fields in steps.items():
        where = f"{key}.steps.{step}"
        reads: set[str] = set()
        item = "for_each" in body[step]  # a wrong for_each is its own error, not also {item}'s
        for field in ("prompt", "instructions"):
            if field in fields:
                reads |= _template(checker, step, field, fields[field], item)
        for param, value in fields.get("params", ()):
            reads |= _template(checker, step, f"params.{param}", value, item)
        for field in ("when", "for_each"):
            value = fields.get(field)
            if isinstance(value, str):
                tree, read = checker.expression(step, field, value, False, field)
                reads |= read
                if tree is not None and field == "for_each":
                    checker.not_a_list(step, tree, value)
        for need in fields.get("needs", ()):
            if need == step:
                out.error(f"{where}.needs", f"step '{step}' needs itself")
            elif need not in steps:
                known = [s for s in steps if s != step]
                out.error(
                    f"{where}.needs",
                    f"step '{need}' is not a step of this workflow"
                    + (f"; its steps: {', '.join(known)}" if known else ""),
                    suggest(need, known),
                )
            else:
                reads.add(need)
        upstream[step] = [s for s in steps if s in reads]
    cycle = _cycle(upstream)
    if cycle is not None:
        out.error(
            f"{key}.steps.{cycle[0]}",
            f"the steps form a cycle: {' -> '.join(cycle)}; a step can read or need only "
            "steps that do not, in turn, read or need it",
        )
        return None
    records = tuple(
        Step(name=step, upstream=tuple(upstream[step]), **_record_fields(fields))
        for step, fields in steps.items()
    )
    return Workflow(
        name=name,
        origin=out.origin,
        steps=records,
        description=good.get("description"),
        params=declared,
        timeout=good.get("timeout"),
    )


def _template(checker: _Checker, step: str, field: str, text: str, item: bool) -> set[str]:
    reads: set[str] = set()
    for piece in bindings(text):
        if isinstance(piece, Binding):
            read = checker.expression(step, field, piece.expression, item, "binding")[1]
            reads |= read
    return reads


def _fields(
    table: Mapping[str, Any], known: Mapping[str, str], key: str, out: Collector
) -> dict[str, Any]:
    """The well-typed fields of a table, the workflow's own types checked here."""
    from start.config import validate

    plain = {f: t for f, t in known.items() if t in _PLAIN}
    for field in table:
        if field not in known:
            out.warning(f"{key}.{field}", f"unknown key '{field}'", suggest(field, known))
    good = validate.fields({f: v for f, v in table.items() if f in plain}, plain, key, out)
    for field, value in table.items():
        kind = known.get(field)
        if kind is None or kind in _PLAIN:
            continue
        wrong = _type_error(kind, value)
        if wrong:
            out.error(f"{key}.{field}", wrong)
        else:
            good[field] = value
    return {f: good[f] for f in table if f in good}


_PLAIN: Final = frozenset(
    {
        schema.STR,
        schema.BOOL,
        schema.TIMEOUT,
        schema.SIZE,
        schema.LEVEL,
        schema.OUTPUT,
        schema.NAMES,
        schema.PARAMS,
    }
)


def _type_error(kind: str, value: object) -> str | None:
    shown = schema.describe_value(value)
    if kind == "steps":
        return None if isinstance(value, dict) else f"must be a table of steps, not {shown}"
    if kind == "templates":
        if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            return None
        return (
            'must be a table of parameter = "template", such as { focus = "{area}" }, '
            f"not {shown}"
        )
    if kind == "retries":
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_RETRIES:
            return None
        return f"must be a whole number from 0 to {MAX_RETRIES}, not {value!r}"
    if kind == "for_each":
        if isinstance(value, str):
            return None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return None
        if isinstance(value, dict) and list(value) == ["files"]:
            return files_problem(value["files"])
        return (
            'must be a JMESPath expression, such as "steps.plan.value.files", an array of '
            'strings (the elements themselves), or { files = "GLOB" } (the project\'s files it '
            f"matches), not {shown}"
        )
    raise AssertionError(f"unknown field type {kind}")


def files_problem(pattern: object) -> str | None:
    """What is wrong with the pattern of `for_each = { files = "GLOB" }`, or None. It is matched
    inside the project root, so it is relative and never climbs out of it."""
    example = 'such as { files = "src/**/*.py" }'
    if not isinstance(pattern, str):
        shown = schema.describe_value(pattern)
        return f"files must be a pattern (a string), {example}, not {shown}"
    if not pattern.strip():
        return f"files is empty: give a pattern of the project's files, {example}"
    if pattern.startswith(("/", "~")) or "\\" in pattern:
        return (
            f"files '{pattern}' is not relative: a pattern is matched inside the project root, "
            f"with / between directories, {example}"
        )
    if ".." in pattern.split("/"):
        return (
            f"files '{pattern}' climbs out with '..': a pattern is matched inside the project "
            f"root only, {example}"
        )
    return None


def _step_fields(
    table: Mapping[str, Any], key: str, out: Collector, config: Config
) -> dict[str, Any]:
    from start.config import validate

    tasks = config.tasks
    good = _fields(table, _STEP_FIELDS, key, out)
    if "output" in good:
        output = good.pop("output")
        good["output"] = (
            model.OUTPUT_TEXT
            if output == model.OUTPUT_TEXT
            else validate._check_output(output, f"{key}.output", out)
        )
        if good["output"] is None:
            del good["output"]
        elif isinstance(good["output"], Output) and good["output"].schema_file is not None:
            # A run carries a step's own format in its ask, where a file would be read again
            # on every resume; a task's schema file is read as the task's (start.config.output).
            out.error(
                f"{key}.output.schema",
                "a step's own output schema is written in the step, such as { schema = { type "
                '= "object" } }; to use a schema file, give it to a task and run the task',
            )
            del good["output"]
    turns = good.get("max_turns")
    if isinstance(turns, int):
        _check_max_turns(good, key, turns, config, out)
    limit = good.get("answer_limit")
    most = config.settings.print_answer_limit
    if isinstance(limit, int) and limit > most:
        out.error(
            f"{key}.answer_limit",
            f"{limit:,} bytes is more than settings.print_answer_limit ({most:,}), which stops "
            "every headless run's answer first; lower answer_limit, or raise the setting",
        )
    if "params" in good:
        good["params"] = tuple(good["params"].items())
    if "needs" in good:
        good["needs"] = tuple(good["needs"])
    if isinstance(good.get("for_each"), list):
        good["for_each"] = tuple(good["for_each"])
    elif isinstance(good.get("for_each"), dict):
        good["for_each"] = Files(good["for_each"]["files"])
    has_task, has_prompt = "task" in table, "prompt" in table
    if has_task == has_prompt:
        out.error(
            key,
            "a step needs exactly one of 'task' (a task of the config) or 'prompt' (a prompt of "
            "its own)" + (", not both" if has_task else ""),
        )
    known: Mapping[str, Mapping[str, Any]] = {
        "task": tasks,
        "agent": config.agents,
        "role": config.roles,
    }
    for kind, items in known.items():
        name = good.get(kind)
        if name is not None and name not in items:
            out.error(f"{key}.{kind}", f"{kind} '{name}' is not defined", suggest(name, items))
    task = good.get("task")
    task_record = tasks.get(task) if isinstance(task, str) and not has_prompt else None
    if task_record is not None:
        declared = [param.name for param in task_record.params]
        given = dict(good.get("params", ()))
        for param in given:
            if param not in declared:
                listed = ", ".join(declared) if declared else "none"
                out.error(
                    f"{key}.params.{param}",
                    f"task '{task}' has no parameter '{param}' (its parameters: {listed})",
                    suggest(param, declared),
                )
        for param in task_record.params:
            if param.default is None and param.name not in given:
                out.error(
                    f"{key}.params",
                    f"task '{task}' needs parameter '{param.name}': set params = "
                    f'{{ {param.name} = "..." }} on the step',
                )
    if has_prompt and not has_task:
        for field in ("instructions", "params"):
            if field in table:
                out.error(
                    f"{key}.{field}",
                    f"'{field}' is for a task step's task; a prompt step puts its text in the "
                    "prompt",
                )
                good.pop(field, None)
    return good


def _check_max_turns(
    good: Mapping[str, Any], key: str, turns: int, config: Config, out: Collector
) -> None:
    """A step's `max_turns` needs an agent whose CLI has a turn limit (its print_max_turns):
    the step's agent, else its task's, else the default agent."""
    task = config.tasks.get(good.get("task") or "")
    name = good.get("agent") or (task.agent if task else None) or config.settings.default_agent
    agent = config.agents.get(name) if name else None
    if agent is None or agent.print_max_turns is not None:
        return  # no agent to hold: an unknown agent is its own error
    able = [n for n, a in config.agents.items() if a.print_max_turns is not None]
    out_of = f" (agents that have one: {', '.join(able)})" if able else ""
    out.error(
        f"{key}.max_turns",
        f"agent '{name}' has no turn limit (no print_max_turns in its entry), so it cannot be "
        f"held to {turns} turns; leave max_turns out, give the step an agent that has one"
        f"{out_of}, or add print_max_turns to [agents.{name}]",
    )


def _output(fields: Mapping[str, Any], tasks: Mapping[str, Task]) -> Output | None:
    """A step's answer format: its own, else its task's; None for text."""
    output = fields.get("output")
    if output is None and fields.get("task") in tasks:
        output = tasks[fields["task"]].output
    return output if isinstance(output, Output) else None


def _record_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {f: v for f, v in fields.items() if f in Step._fields}


def _cycle(upstream: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle of the graph, as the steps around it with the first again at the end, or None."""
    state: dict[str, int] = {}  # 1: on the path being walked; 2: done
    path: list[str] = []

    def walk(step: str) -> list[str] | None:
        state[step] = 1
        path.append(step)
        for before in upstream.get(step, ()):
            if state.get(before) == 1:
                return [*path[path.index(before) :], before]
            if before not in state:
                found = walk(before)
                if found is not None:
                    return found
        path.pop()
        state[step] = 2
        return None

    for step in upstream:
        if step not in state:
            found = walk(step)
            if found is not None:
                # Read in the direction data flows: each step feeds the next.
                return found[::-1]
    return None


def reads(step: Step) -> dict[str, tuple[str, ...]]:
    """What `step` reads of each upstream step: ("answer",), ("value",), both, or () for a step
    it only `needs`; in the order of `step.upstream`. The workflow is valid (validated)."""
    texts = [step.prompt, step.instructions, *(value for _, value in step.params)]
    expressions = [
        piece.expression
        for text in texts
        if text is not None
        for piece in bindings(text)
        if isinstance(piece, Binding)
    ]
    expressions += [e for e in (step.when, step.for_each) if isinstance(e, str)]
    found: dict[str, set[str]] = {name: set() for name in step.upstream}
    for expression in expressions:
        for names in references(parse(expression)):
            if names[0] == STEPS and len(names) >= 3 and names[1] in found:
                found[names[1]].add(names[2])
    return {name: tuple(sorted(parts)) for name, parts in found.items()}


class Workflows(Record):
    """The merged workflows of a config, and every problem of their tables."""

    workflows: Mapping[str, Workflow]
    problems: tuple[Problem, ...] = ()
    # Each workflow's table as read: what a run keeps on its parent item, so that a resume
    # checks and follows the definition it began with, not an edited config.
    tables: Mapping[str, Mapping[str, Any]] = MappingProxyType({})


def read(config: Config) -> Workflows:
    """The `[workflows]` tables of the config's layer files, merged by name (a later layer's
    workflow replaces an earlier one whole) and validated, each problem placed at its line.

    Files are read again (the load does not keep tables): a project file whose bytes are not
    those the load read and trust approved is a problem, not a workflow.
    """
    from start.base import fs
    from start.config import files
    from start.config.validate import Collector, placed

    problems: list[Problem] = []
    tables: dict[str, tuple[Origin, Any]] = {}  # a later layer's replaces an earlier one's
    seen: dict[tuple[str, str], str] = {}  # (layer, name): the file that defined it
    for layer_file in config.files:
        if not layer_file.parsed:
            continue
        root = config.root if layer_file.layer == "project" else None
        data, problem = files.read_bytes(layer_file.path, root)
        if data is None:
            if problem is not None:
                problems.append(problem)
            continue
        if layer_file.digest and fs.sha256(data) != layer_file.digest:
            problems.append(
                Problem(
                    "error",
                    layer_file.path,
                    SECTION,
                    "the file changed since it was read; run the command again",
                )
            )
            continue
        table = files.read(layer_file.path, data).table
        if table is None or SECTION not in table:
            continue
        origin = Origin(layer_file.layer, layer_file.path)
        body = table[SECTION]
        if not isinstance(body, dict):
            out = Collector(origin, problems)
            out.error(SECTION, f"must be a table of workflows, such as [{SECTION}.example]")
            continue
        for name, workflow in body.items():
            earlier = seen.get((layer_file.layer, name))
            if earlier is not None:
                where = "earlier in this file" if earlier == origin.path else f"also in {earlier}"
                Collector(origin, problems).error(
                    f"{SECTION}.{name}",
                    f"workflow '{name}' is defined twice in the {origin.layer} layer ({where})",
                )
                continue
            seen[(layer_file.layer, name)] = origin.path
            tables[name] = (origin, workflow)
    found: dict[str, Workflow] = {}
    kept: dict[str, Mapping[str, Any]] = {}
    for name, (origin, workflow) in tables.items():
        out = Collector(origin, problems)
        key = f"{SECTION}.{name}"
        if not isinstance(workflow, dict):
            out.error(key, f"must be a table ([{key}])")
            continue
        record = check_workflow(name, workflow, key, out, config)
        if record is not None:
            found[name] = record
            kept[name] = workflow
    return Workflows(found, tuple(placed(problems)) if problems else (), kept)


def check_schemas(found: Workflows) -> list[Problem]:
    """Errors of the steps' own output schemas (not a JSON Schema, by its draft's metaschema),
    each placed at its line: for `start config validate`, as compose.audit checks the tasks'; a
    run checks a step's schema again before its agent starts (start.config.output.spec_of)."""
    asked = [
        (workflow, step.name, step.output.schema)
        for workflow in found.workflows.values()
        for step in workflow.steps
        if isinstance(step.output, Output) and step.output.schema is not None
    ]
    if not asked:
        return []  # no schema: no child process (nor json, nor the schema check, imported)
    import json

    from start.config.validate import placed
    from start.proc import schemacheck

    jobs = [schemacheck.Job(json.loads(text), schemacheck.SCHEMA_SECONDS) for *_, text in asked]
    problems: list[Problem] = []
    for (workflow, step, _), outcome in zip(asked, schemacheck.run(jobs), strict=True):
        key = f"{SECTION}.{workflow.name}.steps.{step}.output.schema"
        said = outcome.problems
        if outcome.timed_out:
            seconds = schemacheck.SCHEMA_SECONDS
            said = (("$", f"checking it against its metaschema did not finish in {seconds:g} s"),)
        for pointer, message in said:
            inner = pointer.removeprefix("$").lstrip(".")
            where = f"{key}.{inner}" if inner else key
            problems.append(Problem("error", workflow.origin.path, where, message))
    return placed(problems)
