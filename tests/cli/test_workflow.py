"""`start workflow run NAME --dry-run` (and what a run refuses) through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_start, write_tree

CONFIG = """
[settings]
default_agent = "stand-in"

[agents.stand-in]
bin = "true"
command = "{bin} {prompt}"

[agents.other]
bin = "true"
command = "{bin} {prompt}"

[tasks.triage]
prompt = "Triage: {instructions}"
output = { schema = { type = "object", properties = { files = { type = "array" } } } }

[workflows.fix]
description = "Triage, plan, review each file"
params.area = { default = "backend" }

[workflows.fix.steps.triage]
task = "triage"
instructions = "{instructions} in {area}"

[workflows.fix.steps.plan]
prompt = "Plan a fix for {steps.triage.answer}"
when = "steps.triage.value.files != `[]`"
output = "json"

[workflows.fix.steps.review]
prompt = "Review {item} against {steps.plan.answer}"
for_each = "steps.triage.value.files"
agent = "other"
retries = 1

[workflows.fix.steps.end]
prompt = "Sum up {steps.review.answer}"
needs = ["plan"]

[workflows.port]
params.target = { description = "the platform to port to" }

[workflows.port.steps.only]
prompt = "Port it to {target}"
"""


@pytest.fixture
def project(isolated: Path) -> Path:
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def test_the_plan_as_text_and_as_a_mermaid_graph(project: Path) -> None:
    done = run_start("workflow", "run", "fix", "the login page", "--dry-run", cwd=project)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "workflow fix: Triage, plan, review each file\n"
        "instructions: the login page\n"
        "area = backend\n"
        "\n"
        "level 0\n"
        "  triage: task triage; agent stand-in; output schema\n"
        "\n"
        "level 1\n"
        "  plan: prompt; agent stand-in; output json; when steps.triage.value.files != `[]`\n"
        "    reads triage: answer, value\n"
        "\n"
        "level 2\n"
        "  review: prompt; agent other; output text; for each of steps.triage.value.files; "
        "retries 1\n"
        "    reads triage: value\n"
        "    reads plan: answer\n"
        "\n"
        "level 3\n"
        "  end: prompt; agent stand-in; output text\n"
        "    reads plan: needs it done\n"
        "    reads review: answer\n"
        "\n"
        "```mermaid\n"
        "flowchart TD\n"
        '  step_triage["triage<br/>task triage · stand-in"]\n'
        '  step_plan["plan<br/>prompt · stand-in<br/>when steps.triage.value.files != `[]`"]\n'
        '  step_review["review<br/>prompt · other<br/>for each element"]\n'
        '  step_end["end<br/>prompt · stand-in"]\n'
        "  step_triage -->|answer, value| step_plan\n"
        "  step_triage -->|value| step_review\n"
        "  step_plan -->|answer| step_review\n"
        "  step_plan -.-> step_end\n"
        "  step_review -->|answer| step_end\n"
        "```\n"
    )


def test_the_plan_as_data(project: Path) -> None:
    done = run_start("workflow", "run", "fix", "-p", "area=web", "--dry-run", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["params"] == {"area": "web"}
    assert [(s["name"], s["level"], s["reads"], s["feeds"]) for s in data["steps"]] == [
        ("triage", 0, {}, ["plan", "review"]),
        ("plan", 1, {"triage": ["answer", "value"]}, ["review", "end"]),
        ("review", 2, {"triage": ["value"], "plan": ["answer"]}, ["end"]),
        ("end", 3, {"plan": [], "review": ["answer"]}, []),
    ]
    assert data["mermaid"].startswith("flowchart TD\n")


@pytest.mark.parametrize(
    ("args", "code", "stderr"),
    [
        (
            ("fxi", "--dry-run"),
            4,
            "start: unknown workflow 'fxi'; did you mean 'fix'?\n",
        ),
        (
            ("fix", "-p", "aera=web", "--dry-run"),
            2,
            "start: workflow 'fix' has no parameter 'aera'; did you mean 'area'?\n",
        ),
        (("port",), 2, "start: workflow 'port' needs -p target=VALUE\n"),
        (("port", "--dry-run"), 2, "start: workflow 'port' needs -p target=VALUE\n"),
    ],
)
def test_what_it_refuses(project: Path, args: tuple[str, ...], code: int, stderr: str) -> None:
    done = run_start("workflow", "run", *args, cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (code, "", stderr)


def test_a_workflow_with_an_error_exits_3_naming_it(project: Path) -> None:
    path = project.parent / "home" / ".config" / "start" / "config.toml"
    path.write_text(CONFIG.replace("{steps.review.answer}", "{steps.reveiw.answer}"))
    done = run_start("workflow", "run", "fix", "--dry-run", cwd=project)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == (
        "start: configuration is invalid (1 error)\n"
        f"  {path}\n"
        "    37:18: error: workflows.fix.steps.end.prompt: binding {steps.reveiw.answer} reads "
        "step 'reveiw', which this workflow does not have; its steps: triage, plan, review "
        "(did you mean 'review'?)\n"
        "Run 'start config validate' to see every problem.\n"
    )
