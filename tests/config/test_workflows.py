"""`[workflows.NAME]`: every early error with its complete message, placed at its line."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from start.base.errors import Problem
from start.config.workflows import Binding, ExpressionError, bindings, parse, references
from tests.conftest import run_start, write_tree

TASKS = """
[agents.claude]
bin = "claude"
command = "{bin} {prompt}"

[tasks.triage]
prompt = "Triage: {instructions}"
output = { schema = { type = "object", properties = { severity = { type = "string" }, files = { type = "array" } } } }

[tasks.summary]
prompt = "Summarize {instructions} for {reader} in {tone}"
params.reader = {}
params.tone = { default = "plain" }
"""


def workflow_problems(conf: Path, text: str) -> list[str]:
    """`severity: LINE:COLUMN: key: message` of the workflows' problems (and the load's)."""
    from start.config import workflows
    from start.config.load import load

    conf.write_text(TASKS + text, encoding="utf-8")
    config = load()
    found = [*config.problems, *workflows.read(config).problems]
    offset = TASKS.count("\n")  # report lines as in `text`
    out = []
    for problem in found:
        line = None if problem.line is None else problem.line - offset
        shown = problem._replace(line=line)
        out.append(f"{problem.severity}: {shown}".replace(f"{conf}:", ""))
    return out


GOOD = """
[workflows.fix-severe]
description = "Triage; if severe, plan; review each file"
params.area = { default = "backend" }

[workflows.fix-severe.steps.triage]
task = "triage"
instructions = "{instructions} in {area}"

[workflows.fix-severe.steps.plan]
prompt = "Plan a fix for {steps.triage.answer}"
when = "steps.triage.value.severity == 'high'"
output = "json"

[workflows.fix-severe.steps.review]
prompt = "Review {item} against {steps.plan.answer}"
for_each = "steps.triage.value.files"
"""


def test_a_good_workflow_has_no_problems_and_its_record(conf: Path) -> None:
    from start.config import workflows
    from start.config.load import load

    assert workflow_problems(conf, GOOD) == []
    found = workflows.read(load()).workflows["fix-severe"]
    assert [s.name for s in found.steps] == ["triage", "plan", "review"]
    assert [s.upstream for s in found.steps] == [(), ("triage",), ("triage", "plan")]
    assert found.params[0].name == "area" and found.params[0].default == "backend"
    assert found.origin.layer == "global"


def step(body: str, name: str = "s", before: str = "") -> str:
    """A workflow `w` with a step `first` (a prompt), `before`, and step NAME of `body`."""
    return (
        '[workflows.w]\nparams.area = {}\n[workflows.w.steps.first]\nprompt = "go"\n'
        f"{before}[workflows.w.steps.{name}]\n{body}"
    )


CASES = [
    pytest.param(
        step('prompt = "{steps.frist.answer}"\n'),
        [
            "error: 6:11: workflows.w.steps.s.prompt: binding {steps.frist.answer} reads step "
            "'frist', which this workflow does not have; its steps: first (did you mean 'first'?)"
        ],
        id="binding-to-a-missing-step",
    ),
    pytest.param(
        step('prompt = "{steps.s.answer}"\n'),
        [
            "error: 6:11: workflows.w.steps.s.prompt: binding {steps.s.answer} reads step 's' "
            "itself: a step reads only the results of steps before it"
        ],
        id="binding-to-itself",
    ),
    pytest.param(
        '[workflows.w.steps.a]\nprompt = "{steps.b.answer}"\n'
        '[workflows.w.steps.b]\nprompt = "x"\nneeds = ["c"]\n'
        '[workflows.w.steps.c]\nprompt = "x"\nwhen = "steps.a.answer"\n',
        [
            "error: 1:1: workflows.w.steps.a: the steps form a cycle: a -> c -> b -> a; a step "
            "can read or need only steps that do not, in turn, read or need it"
        ],
        id="cycle",
    ),
    pytest.param(
        step('prompt = "x"\nwhen = "steps.first.answer =="\n'),
        [
            "error: 7:1: workflows.w.steps.s.when: when 'steps.first.answer ==' is not a "
            "JMESPath expression: it ends too early"
        ],
        id="when-does-not-parse",
    ),
    pytest.param(
        step('prompt = "{steps.first.answer ~ 1}"\n'),
        [
            "error: 6:1: workflows.w.steps.s.prompt: binding {steps.first.answer ~ 1} is not a "
            "JMESPath expression: unknown token ~ at character 20"
        ],
        id="binding-does-not-parse",
    ),
    pytest.param(
        step('prompt = "x"\nwhen = "contians(steps.first.answer, \'x\') && length(area, area)"\n'),
        [
            "error: 7:1: workflows.w.steps.s.when: when 'contians(steps.first.answer, 'x') && "
            "length(area, area)' calls contians(), which JMESPath does not have; its functions: "
            "abs, avg, ceil, contains, ends_with, floor, join, keys, length, map, max, max_by, "
            "merge, min, min_by, not_null, reverse, sort, sort_by, starts_with, sum, to_array, "
            "to_number, to_string, type, values (did you mean 'contains'?)",
            "error: 7:1: workflows.w.steps.s.when: when 'contians(steps.first.answer, 'x') && "
            "length(area, area)' calls length() with 2 arguments; it takes 1",
        ],
        id="unknown-function-and-arity",
    ),
    pytest.param(
        step('prompt = "x"\nfor_each = "steps.first.answer"\n'),
        [
            "error: 7:1: workflows.w.steps.s.for_each: for_each 'steps.first.answer' is not a "
            "list (it is the answer of step 'first', which is text): for_each runs the step "
            "once per element of a list, such as steps.STEP.value.files"
        ],
        id="for-each-over-an-answer",
    ),
    pytest.param(
        step('prompt = "x"\nfor_each = "area"\n'),
        [
            "error: 7:1: workflows.w.steps.s.for_each: for_each 'area' is not a list (it is "
            "text): for_each runs the step once per element of a list, such as "
            "steps.STEP.value.files"
        ],
        id="for-each-over-a-parameter",
    ),
    pytest.param(
        step('prompt = "x"\nfor_each = "`\\"a\\"`"\n'),
        [
            "error: 7:1: workflows.w.steps.s.for_each: for_each '`\"a\"`' is not a list (it is "
            "a literal string): for_each runs the step once per element of a list, such as "
            "steps.STEP.value.files"
        ],
        id="for-each-over-a-literal",
    ),
    pytest.param(
        step('prompt = "x"\nfor_each = "steps.t.value.severity"\n')
        + '[workflows.w.steps.t]\ntask = "triage"\n',
        [
            "error: 7:1: workflows.w.steps.s.for_each: for_each 'steps.t.value.severity' is not "
            "a list (step 't''s output schema gives it type string): for_each runs the step once "
            "per element of a list, such as steps.STEP.value.files"
        ],
        id="for-each-over-a-string-of-the-schema",
    ),
    pytest.param(
        step('prompt = "{steps.first.value}"\n'),
        [
            "error: 6:11: workflows.w.steps.s.prompt: binding {steps.first.value} reads the value "
            "of step 'first', which answers text; read steps.first.answer, or give 'first' "
            'output = "json" or a schema'
        ],
        id="value-of-a-text-step",
    ),
    pytest.param(
        step('prompt = "{steps.first.text}"\n'),
        [
            "error: 6:11: workflows.w.steps.s.prompt: binding {steps.first.text} reads "
            "'steps.first.text': name a step and its answer or value, such as steps.STEP.answer "
            "or steps.STEP.value"
        ],
        id="neither-answer-nor-value",
    ),
    pytest.param(
        step('prompt = "{aera}"\n'),
        [
            "error: 6:11: workflows.w.steps.s.prompt: binding {aera} reads 'aera', which is not in "
            "the scope: instructions, area, steps.STEP.answer, steps.STEP.value (did you mean "
            "'area'?)"
        ],
        id="a-name-outside-the-scope",
    ),
    pytest.param(
        step('prompt = "{item}"\n'),
        [
            "error: 6:11: workflows.w.steps.s.prompt: binding {item} reads 'item', which only a "
            "for_each step's prompt, instructions and params have (the element it runs for)"
        ],
        id="item-outside-for-each",
    ),
    pytest.param(
        step('prompt = "x"\nneeds = ["frist"]\n'),
        [
            "error: 7:1: workflows.w.steps.s.needs: step 'frist' is not a step of this "
            "workflow; its steps: first (did you mean 'first'?)"
        ],
        id="needs-a-missing-step",
    ),
    pytest.param(
        step('task = "triag"\n'),
        [
            "error: 6:1: workflows.w.steps.s.task: task 'triag' is not defined (did you mean 'triage'?)"
        ],
        id="a-missing-task",
    ),
    pytest.param(
        step('prompt = "x"\nagent = "cluade"\nrole = "nobody"\n'),
        [
            "error: 7:1: workflows.w.steps.s.agent: agent 'cluade' is not defined (did you mean "
            "'claude'?)",
            "error: 8:1: workflows.w.steps.s.role: role 'nobody' is not defined",
        ],
        id="a-missing-agent-and-role",
    ),
    pytest.param(
        step('task = "summary"\nparams = { raeder = "me" }\n'),
        [
            "error: 7:1: workflows.w.steps.s.params.raeder: task 'summary' has no parameter "
            "'raeder' (its parameters: reader, tone) (did you mean 'reader'?)",
            "error: 7:1: workflows.w.steps.s.params: task 'summary' needs parameter 'reader': set "
            'params = { reader = "..." } on the step',
        ],
        id="a-task-step-s-parameters",
    ),
    pytest.param(
        step('task = "triage"\nprompt = "x"\n'),
        [
            "error: 5:1: workflows.w.steps.s: a step needs exactly one of 'task' (a task of the "
            "config) or 'prompt' (a prompt of its own), not both"
        ],
        id="task-and-prompt",
    ),
    pytest.param(
        step('prompt = "x"\ninstructions = "y"\n'),
        [
            "error: 7:1: workflows.w.steps.s.instructions: 'instructions' is for a task step's "
            "task; a prompt step puts its text in the prompt"
        ],
        id="instructions-of-a-prompt-step",
    ),
    pytest.param(
        step('promt = "x"\nprompt = "y"\n'),
        ["warning: 6:1: workflows.w.steps.s.promt: unknown key 'promt' (did you mean 'prompt'?)"],
        id="unknown-key",
    ),
    pytest.param(
        step('prompt = "x"\nretries = 11\n'),
        ["error: 7:1: workflows.w.steps.s.retries: must be a whole number from 0 to 10, not 11"],
        id="retries-out-of-range",
    ),
    pytest.param(
        step('prompt = "x"\n', name="Plan-Fix"),
        [
            "error: 5:1: workflows.w.steps.Plan-Fix: invalid step name 'Plan-Fix': use lowercase "
            "letters, digits and underscores, starting with a letter, such as 'triage' or "
            "'plan_fix' (expressions read it as steps.NAME)"
        ],
        id="step-name",
    ),
    pytest.param(
        '[workflows.w]\ndescription = "x"\n',
        [
            "error: 1:1: workflows.w: a workflow needs steps: [workflows.w.steps.NAME] tables, "
            "each with a task or a prompt"
        ],
        id="no-steps",
    ),
    pytest.param(
        '[workflows.w]\nparams.steps = {}\n[workflows.w.steps.a]\nprompt = "x"\n',
        [
            "error: 2:1: workflows.w.params.steps: 'steps' is a name of the scope every "
            "expression reads (instructions, steps, item); give the parameter another name"
        ],
        id="reserved-parameter",
    ),
    pytest.param(
        '[workflows.w]\ntimeout = 0\n[workflows.w.steps.a]\nprompt = "x"\n',
        [
            "error: 2:1: workflows.w.timeout: must be a whole number of seconds from 1 to 86400 "
            "(a day), not 0"
        ],
        id="workflow-timeout",
    ),
    pytest.param(
        step('prompt = "x"\nanswer_limit = "big"\n'),
        ["error: 7:1: workflows.w.steps.s.answer_limit: must be a positive integer, not a string"],
        id="answer-limit-type",
    ),
    pytest.param(
        step('prompt = "x"\nanswer_limit = 999999999999\n'),
        [
            "error: 7:1: workflows.w.steps.s.answer_limit: 999,999,999,999 bytes is more than "
            "settings.print_answer_limit (16,777,216), which stops every headless run's answer "
            "first; lower answer_limit, or raise the setting"
        ],
        id="answer-limit-above-the-setting",
    ),
    pytest.param(
        step('prompt = "x"\noutput = { schema = "plan.schema.json" }\n'),
        [
            "error: 7:1: workflows.w.steps.s.output.schema: a step's own output schema is "
            'written in the step, such as { schema = { type = "object" } }; to use a schema '
            "file, give it to a task and run the task"
        ],
        id="a-step-s-schema-file",
    ),
    pytest.param(
        step('prompt = "x"\nagent = "claude"\nmax_turns = 3\n'),
        [
            "error: 8:1: workflows.w.steps.s.max_turns: agent 'claude' has no turn limit (no "
            "print_max_turns in its entry), so it cannot be held to 3 turns; leave max_turns "
            "out, give the step an agent that has one, or add print_max_turns to [agents.claude]"
        ],
        id="max-turns-of-an-agent-without-a-turn-limit",
    ),
    pytest.param(
        step('prompt = "x"\nagent = "claude"\nmax_turns = 0\n'),
        ["error: 8:1: workflows.w.steps.s.max_turns: must be a positive integer, not 0"],
        id="max-turns-not-positive",
    ),
    pytest.param(
        '[workflow.w.steps.a]\nprompt = "x"\n',
        ["warning: 1:1: workflow: unknown section [workflow] (did you mean 'workflows'?)"],
        id="section-spelled-wrong",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_early_error(conf: Path, text: str, expected: list[str]) -> None:
    assert workflow_problems(conf, text) == expected


def test_max_turns_needs_an_agent_whose_print_max_turns_names_the_turns(conf: Path) -> None:
    agent = '[agents.deep]\nbin = "deep"\ncommand = "{bin} {prompt}"\nprint_max_turns = "--turns"\n'
    text = agent + step('prompt = "x"\nagent = "deep"\nmax_turns = 2\n')
    assert workflow_problems(conf, text) == [
        "error: 4:1: agents.deep.print_max_turns: print_max_turns must name {max_turns} (the "
        'number of turns), such as "--max-turns {max_turns}"'
    ]
    text = text.replace('"--turns"', '"--turns={max_turns}"')
    assert workflow_problems(conf, text) == []


def test_a_for_each_of_a_for_each_step_and_a_literal_list_are_lists(conf: Path) -> None:
    text = step(
        'prompt = "{item} {steps.first.answer}"\nfor_each = "steps.each.answer"\n',
        before='[workflows.w.steps.each]\nprompt = "{item}"\nfor_each = ["a.py", "b.py"]\n',
    )
    assert workflow_problems(conf, text) == []


def test_start_config_validate_reports_them_and_exits_3(isolated: Path) -> None:
    """Through the real command line, in a process: the project's workflow is checked. (The
    `when` that does not parse reads nothing, so no cycle is reported beside it.)"""
    write_tree(
        isolated,
        {
            ".start/config.toml": '[workflows.w.steps.a]\nprompt = "{steps.b.answer}"\n'
            '[workflows.w.steps.b]\nprompt = "x"\nwhen = "steps.a.answer && "\n'
        },
    )
    done = run_start("config", "validate", "--json", cwd=isolated)
    assert done.returncode == 3, done.stderr
    found = [(p["key"], p["line"], p["message"]) for p in json.loads(done.stdout)]
    assert found == [
        (
            "workflows.w.steps.b.when",
            5,
            "when 'steps.a.answer && ' is not a JMESPath expression: it ends too early",
        ),
    ]


def test_start_config_validate_checks_a_step_s_own_schema_against_its_metaschema(
    isolated: Path,
) -> None:
    write_tree(
        isolated,
        {
            ".start/config.toml": '[workflows.w.steps.a]\nprompt = "x"\n'
            'output = { schema = { type = "objekt" } }\n'
        },
    )
    done = run_start("config", "validate", "--json", cwd=isolated)
    assert done.returncode == 3, done.stderr
    found = [(p["key"], p["line"], p["message"]) for p in json.loads(done.stdout)]
    assert found == [
        (
            "workflows.w.steps.a.output.schema.type",
            3,
            "'objekt' is not valid under any of the given schemas",
        ),
    ]


def test_bindings_split_a_template_and_leave_other_braces() -> None:
    assert list(bindings('Fix {steps.a.answer}; {{x}} {"a": 1} {item}')) == [
        "Fix ",
        Binding("steps.a.answer", 4, 20),
        '; {x} {"a": 1} ',
        Binding("item", 37, 43),
    ]


@pytest.mark.parametrize(
    ("expression", "chains"),
    [
        ("steps.triage.value.severity == 'high'", [("steps", "triage", "value", "severity")]),
        (
            "length(steps.a.value.files) > `0` && instructions",
            [("steps", "a", "value", "files"), ("instructions",)],
        ),
        # Inside a filter and after a pipe, names are relative to the elements.
        ("steps.a.value.files[?x == area].name | [0].y", [("steps", "a", "value", "files")]),
        ("`[1, 2]`", []),
        ("steps.each.value[0].blob", [("steps", "each", "value")]),
        ("steps.each.value[*].blob", [("steps", "each", "value")]),
    ],
)
def test_references_are_the_names_read_from_the_scope(
    expression: str, chains: list[tuple[str, ...]]
) -> None:
    assert list(references(parse(expression))) == chains


def test_a_lexer_error_names_the_character() -> None:
    with pytest.raises(ExpressionError, match=r"^unclosed ` delimiter at character 1$"):
        parse("`bad")


def test_a_project_workflow_whose_name_says_trust_is_a_workflow_not_a_trust_key(
    isolated: Path,
) -> None:
    from start.config import workflows
    from start.config.load import load

    write_tree(
        isolated, {".start/config.toml": '[workflows.trusted-review.steps.a]\nprompt = "x"\n'}
    )
    config = load()
    assert [str(p) for p in config.problems] == []
    found = workflows.read(config).workflows
    assert {name: workflow.origin.layer for name, workflow in found.items()} == {
        "fix-severe": "built-in",  # the shipped ones (config/workflows.toml)
        "compare-answers": "built-in",
        "trusted-review": "project",
    }


def test_a_project_file_changed_since_the_load_is_not_read(isolated: Path) -> None:
    """Trust approves the bytes the load read: a workflow read afterwards must be those."""
    from start.config import workflows
    from start.config.load import load

    path = isolated / ".start" / "config.toml"
    write_tree(isolated, {".start/config.toml": '[workflows.w.steps.a]\nprompt = "x"\n'})
    config = load()
    path.write_text('[workflows.w.steps.a]\nprompt = "y"\n', encoding="utf-8")
    found = workflows.read(config)
    assert list(found.workflows) == ["fix-severe", "compare-answers"]  # the shipped ones only
    assert [str(p) for p in found.problems] == [
        f"{path}:1:1: workflows: the file changed since it was read; run the command again"
    ]


def test_the_design_example_is_valid(conf: Path) -> None:
    """docs/workflows-design.md's TOML, with the agents it names, has no problem."""
    import re

    design = (Path(__file__).resolve().parents[2] / "docs" / "workflows-design.md").read_text()
    (example,) = re.findall(r"```toml\n(.*?)```", design, re.S)
    agent = '[agents.codex]\nbin = "codex"\ncommand = "{bin} {prompt}"\n'
    assert workflow_problems(conf, agent + example) == []


def test_a_workflow_defined_twice_in_a_layer_is_an_error_and_a_later_layer_replaces_it(
    conf: Path, isolated: Path
) -> None:
    from start.config import workflows
    from start.config.load import load

    other = conf.parent / "tasks.toml"
    other.write_text('[workflows.w.steps.b]\nprompt = "x"\n', encoding="utf-8")
    conf.write_text('[workflows.w.steps.a]\nprompt = "x"\n', encoding="utf-8")
    found = workflows.read(load())
    assert [str(p) for p in found.problems] == [
        f"{other}:1:1: workflows.w: workflow 'w' is defined twice in the global layer (also in "
        f"{conf})"
    ]
    other.unlink()
    write_tree(isolated, {".start/config.toml": '[workflows.w.steps.c]\nprompt = "x"\n'})
    replaced = workflows.read(load()).workflows["w"]
    assert ([s.name for s in replaced.steps], replaced.origin.layer) == (["c"], "project")


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, set[tuple[int, int]]]:
    """Up to 8 steps and edges (reader, read) between them, in any direction."""
    count = draw(st.integers(1, 8))
    pairs = st.tuples(st.integers(0, count - 1), st.integers(0, count - 1))
    edges = draw(st.sets(pairs.filter(lambda e: e[0] != e[1]), max_size=12))
    return count, edges


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(graphs(), st.booleans())
def test_bindings_and_needs_are_the_upstream_steps_and_a_loop_is_a_cycle(
    conf: Path, graph: tuple[int, set[tuple[int, int]]], by_needs: bool
) -> None:
    """Whatever the graph the bindings (or `needs`) draw: acyclic, it is valid and each step's
    upstream is what it reads, in file order; with a loop, one error names a cycle whose every
    arrow is an edge of the graph."""
    from start.config import workflows
    from start.config.load import load
    from start.config.model import Origin
    from start.config.validate import Collector

    count, edges = graph
    table: dict[str, Any] = {"steps": {}}
    for step in range(count):
        read = sorted(b for a, b in edges if a == step)
        fields: dict[str, Any] = {
            "prompt": "go " + " ".join(f"{{steps.s{b}.answer}}" for b in read)
        }
        if by_needs:
            fields = {"prompt": "go", "needs": [f"s{b}" for b in read]}
        table["steps"][f"s{step}"] = fields
    conf.write_text("", encoding="utf-8")
    problems: list[Problem] = []
    out = Collector(Origin("global", str(conf)), problems)
    found = workflows.check_workflow("w", table, "workflows.w", out, load())
    loop = _has_cycle(count, edges)
    if not loop:
        assert problems == []
        assert found is not None
        assert [s.upstream for s in found.steps] == [
            tuple(f"s{b}" for b in sorted(b for a, b in edges if a == step))
            for step in range(count)
        ]
        return
    assert found is None
    (problem,) = problems
    names = problem.message.split(": ", 1)[1].split(";", 1)[0].split(" -> ")
    assert problem.message.startswith("the steps form a cycle: ")
    assert names[0] == names[-1]
    for before, after in itertools.pairwise(names):  # data flows from before to after
        assert (int(after[1:]), int(before[1:])) in edges


def _has_cycle(count: int, edges: set[tuple[int, int]]) -> bool:
    left = set(range(count))
    while True:
        free = {s for s in left if not any(a == s and b in left for a, b in edges)}
        if not free:
            return bool(left)
        left -= free
