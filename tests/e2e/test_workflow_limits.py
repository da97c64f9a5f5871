"""A workflow step's own answer format, its `answer_limit`, the workflow's `timeout`, a value
too large for an item's metadata, and a `for_each` under the concurrency cap, in real processes:
`start workflow run` and the stand-in headless agent (tests/fake_headless.py), which marks in a
file when each run starts and ends (so a test sees what overlapped without a clock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_start, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

WORKFLOWS = """
[workflows.shaped.steps.triage]
prompt = "Give JSON for {instructions}"
output = { schema = { type = "object", properties = { severity = { type = "string" } }, required = ["severity"] } }

[workflows.shaped.steps.plan]
prompt = "Plan for {steps.triage.value.severity} in {steps.triage.value.files[1]}"

[workflows.prose.steps.triage]
prompt = "Give PROSE for {instructions}"
output = "json"

[workflows.prose.steps.plan]
prompt = "Plan for {steps.triage.value.severity}"

[workflows.prose.steps.aside]
prompt = "Aside"

[workflows.big.steps.blob]
prompt = "Give BIG"
output = "json"

[workflows.big.steps.use]
prompt = "Length {length(steps.blob.value.blob)}"

[workflows.bigs.steps.blob]
prompt = "Give BIG {item}"
output = "json"
for_each = ["one", "two"]

[workflows.bigs.steps.use]
prompt = "Lengths {length(steps.blob.value[0].blob)} {length(steps.blob.value[1].blob)}"

[workflows.limited.steps.wordy]
prompt = "Say a lot"
answer_limit = 10

[workflows.limited.steps.after]
prompt = "After {steps.wordy.answer}"

[workflows.limited.steps.terse]
prompt = "Hi"
answer_limit = 100

[workflows.timed]
timeout = 3

[workflows.timed.steps.hold]
prompt = "HOLD"

[workflows.timed.steps.other]
prompt = "Other"

[workflows.fan.steps.each]
prompt = "Review {item}"
for_each = ["a.py", "b.py", "c.py"]
agent = "fake-a"

[workflows.fan.steps.side_b]
prompt = "Side b"
agent = "fake-b"

[workflows.fan.steps.side_c]
prompt = "Side c"
agent = "fake-c"

[workflows.turns.steps.count]
prompt = "Count"
agent = "fake-a"
max_turns = 3

[workflows.fan.steps.sum]
prompt = "Sum {steps.each.answer}"
agent = "fake-b"
"""

# The stand-in's first act (FAKE_BEFORE): mark `start PROMPT` in FAKE_RUNS, and `end PROMPT`
# when it exits; answer 'Give JSON' with JSON, 'Give PROSE' with text, 'Give BIG' with a value
# of 70,000 characters; and hold 'HOLD' for 300 s.
BEFORE = """
import atexit, json, os, sys, time
first = sys.argv[-1].splitlines()[0]
def mark(word, first=first, path=os.environ['FAKE_RUNS']):  # exec'd: no closures
    with open(path, 'a') as out:
        out.write(word + ' ' + first + '\\n')
mark('start')
atexit.register(mark, 'end')
if first.startswith('Give JSON'):
    print(json.dumps({'severity': 'high', 'files': ['a.py', 'b.py']}))
    sys.exit(0)
if first.startswith('Give PROSE'):
    print('Severe, I think')
    sys.exit(0)
if first.startswith('Give BIG'):
    print(json.dumps({'blob': 'x' * 70000}))
    sys.exit(0)
if first.startswith('HOLD'):
    time.sleep(300)
"""


def named(name: str, bin_: Path) -> str:
    """The stand-in as agent NAME whose program is `bin_` (a link to this Python): each CLI
    runs one at a time (start.proc.agents), so agents that may run at once need programs of
    their own."""
    turns = 'print_max_turns = "--max-turns {max_turns}"\n'
    return agent(name, extra=turns).replace(f'bin = "{sys.executable}"', f'bin = "{bin_}"')


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    configure(isolated, 2)
    return isolated


def configure(project: Path, cap: int) -> None:
    """The user's config: the stand-in as `fake`, `fake-a`, `fake-b` and `fake-c`, at most
    `cap` runs at once."""
    links = project.parent / "bin"
    links.mkdir(exist_ok=True)
    agents = [agent("fake")]
    for name in ("fake-a", "fake-b", "fake-c"):
        link = links / name
        if not link.exists():
            link.symlink_to(sys.executable)
        agents.append(named(name, link))
    config = (
        f'[settings]\ndefault_agent = "fake"\nprint_agents = {cap}\n\n'
        + "\n".join(agents)
        + WORKFLOWS
    )
    write_tree(project.parent / "home" / ".config" / "start", {"config.toml": config})


def start(project: Path, *args: str, **more: str) -> subprocess.CompletedProcess[str]:
    env = {"FAKE_BEFORE": BEFORE, "FAKE_RUNS": str(project.parent / "runs"), **more}
    return run_start(*args, cwd=project, env=env, timeout=120)


def marks(project: Path) -> list[str]:
    """`start PROMPT` and `end PROMPT` of each run, in the order they happened."""
    log = project.parent / "runs"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def steps(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[Any, ...]]:
    data = json.loads(done.stdout)
    return {s["name"]: (s["state"], s["answer"], s["value"], s["reason"]) for s in data["steps"]}


def item(project: Path, number: int) -> dict[str, Any]:
    shown = start(project, "board", "show", str(number), "--json")
    assert shown.returncode == 0, shown.stderr
    found: dict[str, Any] = json.loads(shown.stdout)
    return found


def test_a_prompt_step_s_own_schema_checks_its_answer_and_gives_its_value(project: Path) -> None:
    done = start(project, "workflow", "run", "shaped", "the login page", "--json")
    assert done.returncode == 0, done.stderr
    value = {"severity": "high", "files": ["a.py", "b.py"]}
    assert steps(done) == {
        "triage": ("succeeded", json.dumps(value), value, None),
        "plan": ("succeeded", "ANSWER: Plan for high in b.py", None, None),
    }


def test_a_prompt_step_s_answer_out_of_its_format_exits_65_and_stops_what_reads_it(
    project: Path,
) -> None:
    done = start(project, "workflow", "run", "prose", "the login page", "--json")
    assert done.returncode == 65, done.stderr
    reason = (
        "its answer is not the JSON the task's output asks for:\n  the answer is not JSON: "
        "Expecting value at line 1 column 1"
    )
    assert steps(done) == {
        "triage": ("out-of-format", "Severe, I think", None, reason),
        "aside": ("succeeded", "ANSWER: Aside", None, None),
        "plan": ("stopped", None, None, f"step 'triage' answered out of format: {reason}"),
    }
    assert "start Plan for" not in " ".join(marks(project))
    # The answer out of format is kept on the step's item, not only in the history.
    triage = item(project, 2)
    assert triage["status"] == "failed"
    assert triage["metadata"]["workflow"]["answer"] == "Severe, I think"
    assert triage["metadata"]["workflow"]["state"] == "out-of-format"


def test_a_value_too_large_for_the_item_s_metadata_is_read_from_its_answer(
    project: Path,
) -> None:
    done = start(project, "workflow", "run", "big", "--json")
    assert done.returncode == 0, done.stderr
    found = steps(done)
    assert found["blob"][:3] == (
        "succeeded",
        json.dumps({"blob": "x" * 70000}),
        {"blob": "x" * 70000},
    )
    assert found["use"] == ("succeeded", "ANSWER: Length 70000", None, None)
    kept = item(project, 2)["metadata"]["workflow"]
    assert (kept.get("value"), kept["value_from"]) == (None, "answer")
    # `start workflow show` reads the value back the same way.
    shown = start(project, "workflow", "show", "1", "--json")
    assert steps(shown) == found


def test_a_for_each_step_s_values_too_large_for_its_item_are_read_from_its_answers(
    project: Path,
) -> None:
    done = start(project, "workflow", "run", "bigs", "--json")
    assert done.returncode == 0, done.stderr
    found = steps(done)
    answer = json.dumps({"blob": "x" * 70000})
    assert found["blob"][:3] == (
        "succeeded",
        [answer, answer],
        [{"blob": "x" * 70000}, {"blob": "x" * 70000}],
    )
    assert found["use"] == ("succeeded", "ANSWER: Lengths 70000 70000", None, None)
    assert item(project, 2)["metadata"]["workflow"]["value_from"] == "answers"


def test_an_answer_over_the_step_s_answer_limit_fails_it_and_stops_what_reads_it(
    project: Path,
) -> None:
    done = start(project, "workflow", "run", "limited", "--json")
    assert done.returncode == 1, done.stderr
    reason = "its answer is 17 bytes, more than the step's answer_limit (10 bytes) allows"
    assert steps(done) == {
        "wordy": ("failed", "ANSWER: Say a lot", None, reason),
        "terse": ("succeeded", "ANSWER: Hi", None, None),
        "after": ("stopped", None, None, f"step 'wordy' failed: {reason}"),
    }


def test_the_workflow_s_timeout_stops_the_steps_not_started_with_the_reason(
    project: Path,
) -> None:
    configure(project, 1)  # one at a time: `other` waits while `hold` runs
    done = start(project, "workflow", "run", "timed", "--json")
    assert done.returncode == 1, done.stderr
    assert steps(done) == {
        "hold": ("failed", None, None, "timed out after 3 s; its process group was stopped"),
        "other": (
            "stopped",
            None,
            None,
            "the workflow's timeout (3 s) ran out before it started",
        ),
    }
    assert marks(project) == ["start HOLD"]
    other = item(project, 3)
    assert (other["status"], other["reason"]) == (
        "failed",
        "stopped: the workflow's timeout (3 s) ran out before it started",
    )


def test_a_for_each_of_three_runs_under_the_cap(project: Path) -> None:
    """At most print_agents (2) runs at once, read from the marks the runs left in order: the
    three elements (one CLI, so one at a time) and two steps of other CLIs beside them."""
    done = start(project, "workflow", "run", "fan", "--json")
    assert done.returncode == 0, done.stderr
    answers = [f"ANSWER: Review {name}" for name in ("a.py", "b.py", "c.py")]
    assert steps(done)["each"] == ("succeeded", answers, [None, None, None], None)
    found = marks(project)
    summed = "Sum " + json.dumps(answers, separators=(",", ":"))
    assert sorted(found) == sorted(
        f"{word} {prompt}"
        for word in ("start", "end")
        for prompt in ("Review a.py", "Review b.py", "Review c.py", "Side b", "Side c", summed)
    )
    running, most = set(), 0
    for line in found:
        word, prompt = line.split(" ", 1)
        if word == "start":
            running.add(prompt)
        else:
            running.discard(prompt)
        most = max(most, len(running))
    assert 1 <= most <= 2, found
    # The elements of one CLI never overlap.
    reviews = [line for line in found if line.split(" ", 1)[1].startswith("Review")]
    assert [line.split(" ", 1)[0] for line in reviews] == ["start", "end"] * 3


def test_a_for_each_of_three_never_overlaps_at_a_cap_of_one(project: Path) -> None:
    configure(project, 1)
    done = start(project, "workflow", "run", "fan", "--json")
    assert done.returncode == 0, done.stderr
    found = marks(project)
    assert len(found) == 12
    assert [line.split(" ", 1)[0] for line in found] == ["start", "end"] * 6, found


def test_the_stand_in_links_run_this_python(project: Path) -> None:
    """The agents' programs are links to this Python (so each is a CLI of its own)."""
    link = project.parent / "bin" / "fake-a"
    assert os.path.realpath(link) == os.path.realpath(sys.executable)


def test_a_step_s_max_turns_reaches_its_agent_as_its_print_max_turns_says(project: Path) -> None:
    record = project.parent / "argv.json"
    done = start(project, "workflow", "run", "turns", FAKE_RECORD=str(record))
    assert done.returncode == 0, done.stderr
    argv = json.loads(record.read_text(encoding="utf-8"))["argv"]
    assert argv[:4] == ["--ro", "--max-turns", "3", "--"], argv
