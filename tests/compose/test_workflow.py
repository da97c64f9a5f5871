"""A workflow's plan and the evaluation of `when` and `for_each` over given results: pure, no
agent runs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.base.errors import ExitCode
from start.compose.workflow import (
    FAILED,
    OUT_OF_FORMAT,
    RUN,
    SKIP,
    SKIPPED,
    STOP,
    STOPPED,
    SUCCEEDED,
    WAIT,
    Decision,
    EvaluationError,
    Inputs,
    Result,
    Shown,
    collect,
    decide,
    exit_code,
    fill,
    mermaid,
    plan,
    scope,
)
from start.config.model import Origin
from start.config.workflows import Step, Workflow

ORIGIN = Origin("global", "/config.toml")


def workflow(*steps: Step) -> Workflow:
    return Workflow("w", ORIGIN, steps)


def test_the_plan_orders_by_what_feeds_what_and_levels_steps_that_may_run_at_once() -> None:
    found = plan(
        workflow(
            Step("review", upstream=("plan", "triage")),
            Step("plan", upstream=("triage",)),
            Step("triage"),
            Step("notes"),
        )
    )
    assert [(p.step.name, p.level, p.downstream) for p in found] == [
        ("triage", 0, ("review", "plan")),
        ("notes", 0, ()),
        ("plan", 1, ("review",)),
        ("review", 2, ()),
    ]


@st.composite
def acyclic(draw: st.DrawFn) -> Workflow:
    """A workflow of up to 12 steps, each reading any of the steps drawn before it, listed in
    a shuffled order."""
    count = draw(st.integers(1, 12))
    steps = []
    for index in range(count):
        upstream = draw(st.sets(st.integers(0, index - 1))) if index else set()
        steps.append(Step(f"s{index}", upstream=tuple(f"s{u}" for u in sorted(upstream))))
    return workflow(*draw(st.permutations(steps)))


@given(acyclic())
def test_every_step_comes_after_each_step_upstream_of_it_one_level_deeper(
    found: Workflow,
) -> None:
    order = plan(found)
    assert sorted(p.step.name for p in order) == sorted(s.name for s in found.steps)
    place = {p.step.name: index for index, p in enumerate(order)}
    level = {p.step.name: p.level for p in order}
    for planned in order:
        for before in planned.step.upstream:
            assert place[before] < place[planned.step.name]
            assert level[before] < planned.level
            assert planned.step.name in order[place[before]].downstream
        deepest = max((level[b] for b in planned.step.upstream), default=-1)
        assert planned.level == deepest + 1


TRIAGE = Result(SUCCEEDED, '{"severity": "high"}', {"severity": "high", "files": ["a", "b"]})


def test_when_true_runs_and_false_skips_with_the_reason() -> None:
    step = Step("plan", when="steps.triage.value.severity == 'high'", upstream=("triage",))
    assert decide(step, Inputs(), {"triage": TRIAGE}) == Decision(RUN)
    low = TRIAGE._replace(value={"severity": "low"})
    assert decide(step, Inputs(), {"triage": low}) == Decision(
        SKIP, "when 'steps.triage.value.severity == 'high'' is false"
    )


def test_a_step_waits_until_every_upstream_step_has_finished() -> None:
    step = Step("review", upstream=("triage", "plan"))
    assert decide(step, Inputs(), {"triage": TRIAGE}) == Decision(WAIT)


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        (FAILED, "step 'plan' failed: exit 1"),
        (OUT_OF_FORMAT, "step 'plan' answered out of format: exit 1"),
        (STOPPED, "step 'plan' stopped: exit 1"),
    ],
)
def test_a_failed_upstream_step_stops_its_dependents_with_the_reason(
    state: str, reason: str
) -> None:
    step = Step("review", upstream=("triage", "plan"))
    results = {"triage": TRIAGE, "plan": Result(state, reason="exit 1")}
    assert decide(step, Inputs(), results) == Decision(STOP, reason)


def test_a_step_after_a_skipped_one_is_skipped() -> None:
    step = Step("review", upstream=("plan",))
    results = {"plan": Result(SKIPPED, reason="when ... is false")}
    assert decide(step, Inputs(), results) == Decision(SKIP, "step 'plan' was skipped")


def test_for_each_gives_the_elements_in_order() -> None:
    step = Step("review", for_each="steps.triage.value.files", upstream=("triage",))
    assert decide(step, Inputs(), {"triage": TRIAGE}) == Decision(RUN, elements=("a", "b"))
    listed = Step("each", for_each=("x.py", "y.py"))
    assert decide(listed, Inputs(), {}) == Decision(RUN, elements=("x.py", "y.py"))


def test_for_each_over_what_turns_out_not_to_be_a_list_fails_the_step() -> None:
    step = Step("review", for_each="steps.triage.value.severity", upstream=("triage",))
    with pytest.raises(EvaluationError) as raised:
        decide(step, Inputs(), {"triage": TRIAGE})
    assert str(raised.value) == (
        "for_each 'steps.triage.value.severity' gave a string, not a list, so step 'review' "
        "cannot run once per element"
    )


def test_when_reads_the_inputs_with_jmespath_truth() -> None:
    step = Step("s", when="area == 'web' && `0`")  # 0 is true in JMESPath
    assert decide(step, Inputs("text", {"area": "web"}), {}) == Decision(RUN)
    empty = Step("s", when="instructions")
    assert decide(empty, Inputs(""), {}).action == SKIP


def test_fill_puts_strings_as_they_are_values_as_json_and_null_as_nothing() -> None:
    data = scope(Inputs("the bug", {"area": "web"}), {"triage": TRIAGE}, item="a.py")
    template = (
        "{instructions} in {area}: {item}; {steps.triage.value.files}; {steps.triage.value.x}|"
        '{{literal}} {"json": 1}'
    )
    assert fill(template, data) == 'the bug in web: a.py; ["a","b"]; |{literal} {"json": 1}'


def test_a_for_each_result_is_its_elements_in_order_or_the_first_that_did_not_succeed() -> None:
    ok = collect([Result(SUCCEEDED, "1", 1), Result(SUCCEEDED, "2", 2)])
    assert ok == Result(SUCCEEDED, ["1", "2"], [1, 2])
    bad = collect([Result(SUCCEEDED, "1", 1), Result(FAILED, None, None, "timed out")])
    assert bad == Result(FAILED, ["1", None], [1, None], "element 2 failed: timed out")


@pytest.mark.parametrize(
    ("states", "code"),
    [
        ((SUCCEEDED, SKIPPED), ExitCode.OK),
        ((SUCCEEDED, OUT_OF_FORMAT, STOPPED), ExitCode.OUTPUT),
        ((OUT_OF_FORMAT, FAILED, STOPPED), ExitCode.ERROR),
    ],
)
def test_the_exit_code_says_whether_every_step_succeeded(
    states: tuple[str, ...], code: int
) -> None:
    assert exit_code({f"s{i}": Result(state) for i, state in enumerate(states)}) == code


def test_mermaid_ids_are_prefixed_and_labels_escaped() -> None:
    """A step named `end` would end the chart; a quote or `<` in a condition would end or open
    markup in a label."""
    first = Step("end")
    second = Step("b", when='steps.end.answer == "<x>" && `1`', upstream=("end",))
    order = plan(workflow(first, second))
    steps = [
        Shown(order[0], "prompt", None, "text", {}),
        Shown(order[1], "task t", "claude", "json", {"end": ("answer",)}),
    ]
    assert mermaid(steps) == (
        "flowchart TD\n"
        '  step_end["end<br/>prompt · default agent"]\n'
        '  step_b["b<br/>task t · claude<br/>when steps.end.answer == #quot;#lt;x#gt;#quot; '
        '#amp;#amp; `1`"]\n'
        "  step_end -->|answer| step_b"
    )
