"""A task's output format through a real agent CLI: `llm` with the echo model, which answers with
what it received as a JSON object, so the answer is checked for real (issue 28)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_start, write_tree

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

FOUND = shutil.which("llm", path=str(Path(sys.executable).parent)) or shutil.which("llm")
LLM = FOUND or "llm"

# The echo model's answer: {"prompt": ..., "system": ..., "attachments": [], ...}.
CONFIG = f"""
[agents.echo]
bin = "{LLM}"
command = "{{bin}} -m echo --no-log {{prompt}}"
print_command = "{{bin}} prompt -m echo --no-log {{args}} {{prompt}}"
print_output = "text"
print_permissions = {{ read-only = "" }}

[tasks.matches]
agent = "echo"
prompt = "Triage this."
output = {{ schema = "echo.schema.json" }}

[tasks.mismatches]
agent = "echo"
prompt = "Triage this."

[tasks.mismatches.output.schema]
type = "object"
required = ["prompt", "severity"]
properties = {{ prompt = {{ type = "integer" }} }}
"""

SCHEMA = {
    "type": "object",
    "required": ["prompt", "system", "attachments"],
    "properties": {"prompt": {"type": "string"}, "attachments": {"type": "array"}},
}


@pytest.fixture
def project(isolated: Path) -> tuple[Path, dict[str, str]]:
    if FOUND is None:
        pytest.skip("llm is not on PATH (a test dependency, with llm-echo)")
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    config = isolated.parent / "config"
    write_tree(config, {"config.toml": CONFIG, "echo.schema.json": json.dumps(SCHEMA)})
    env = {
        "START_CONFIG_DIR": str(config),
        "LLM_USER_PATH": str(isolated.parent / "llm"),
        "PATH": f"{Path(LLM).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return isolated, env


def test_an_answer_that_matches_its_schema_passes(project: tuple[Path, dict[str, str]]) -> None:
    cwd, env = project
    proc = run_start("task", "matches", "--print", "--json", "-q", cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    instruction = (
        "Answer with one JSON value only, with no other text before or after it. It must match "
        f"this JSON Schema:\n{json.dumps(SCHEMA, separators=(',', ':'))}\n"
    )
    assert data["value"]["prompt"] == f"Triage this.\n\n{instruction}"
    assert (data["success"], data["problems"], json.loads(data["answer"])) == (
        True,
        [],
        data["value"],
    )


def test_an_answer_that_does_not_match_fails_with_the_path(
    project: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = project
    proc = run_start("task", "mismatches", "--print", "-q", cwd=cwd, env=env)
    assert (proc.returncode, proc.stdout) == (65, "")
    head, first, second, answer, *raw = proc.stderr.split("\n")
    assert head == (
        "start: agent 'echo' answered, but its answer does not match the task's output schema "
        "(tasks.mismatches.output.schema):"
    )
    assert first == "  $: 'severity' is a required property"
    assert (
        second
        == "  $.prompt: 'Triage this.\\n\\nAnswer with one JSON value only, with no o… is not of type 'integer'"
    )
    assert answer == "Answer:"
    assert json.loads("\n".join(raw))["prompt"].startswith("Triage this.\n\n")


def test_the_shipped_llm_entry_falls_back_when_the_model_refuses_the_schema(
    project: tuple[Path, dict[str, str]],
) -> None:
    """llm takes the schema (--schema); its echo model refuses schemas, so start asks again with
    the schema in the prompt, and checks the answer."""
    cwd, env = project
    proc = run_start(
        "task", "matches", "--print", "-q", "-a", "llm", "-m", "echo", "--json-fields", "all",
        cwd=cwd, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    data = json.loads(proc.stdout)
    instruction = (
        "Answer with one JSON value only, with no other text before or after it. It must match "
        f"this JSON Schema:\n{json.dumps(SCHEMA, separators=(',', ':'))}\n"
    )
    assert data["value"]["prompt"] == f"Triage this.\n\n{instruction}"
    assert data["fallback"] == (
        "llm refused the task's schema option for model echo (Error: Echo: echo does not support "
        "schemas); asked again with the schema in the prompt, and the answer checked by start"
    )
    assert "--schema" not in data["argv"]
    shown = run_start(
        "task", "matches", "--print", "-q", "-a", "llm", "-m", "echo", cwd=cwd, env=env
    )
    assert shown.returncode == 0
    assert shown.stderr == f"start: ⚠ {data['fallback']}\n"
    assert json.loads(shown.stdout)["prompt"] == f"Triage this.\n\n{instruction}"


def test_an_answer_out_of_the_schema_still_fails_after_the_fallback(
    project: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = project
    proc = run_start(
        "task", "mismatches", "--print", "-q", "-a", "llm", "-m", "echo", "--json-fields", "all",
        cwd=cwd,
        env=env,
    )  # fmt: skip
    data = json.loads(proc.stdout)
    assert (proc.returncode, data["success"], data["fallback"] is not None) == (65, False, True)
    assert data["problems"][0].startswith("$: 'severity' is a required property")
