"""`--fail-if PATH` (exit 6 when a JSON answer holds true at PATH) and the shipped task `gate`,
whose verdict it reads, in real processes: a stand-in reviewer (tests/fake_headless.py,
FAKE_MODE=gate) flags each line the staged diff adds that holds SECRET (issue 49)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.fake_headless import agent

RO = 'read-only = "--ro"'
CONFIG = f"""
[settings]
default_agent = "fake"

{agent("fake", levels=RO)}
{agent("one", levels=RO, prefix="FAKE_NAME=one ")}
{agent("two", levels=RO, prefix="FAKE_NAME=two ")}

[tasks.notes]
prompt = "Notes."

[tasks.data]
prompt = "Data."
output = "json"

[tasks.verdict]
prompt = "Judge."
output = {{ schema = {{ type = "object", required = ["block"], properties = {{ block = {{ type = "boolean" }} }} }} }}
"""

NO_VERDICT = (
    "hint: name a true or false the answer holds (the answer is above; --json shows it as "
    "value), or hold the task to a JSON Schema that requires one there\n"
)

FLAGGED = {"file": "app.py", "line": 2, "message": "it adds SECRET: keep it out of the repository"}


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def start(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_start("-q", *args, cwd=project, env={"FAKE_MODE": "say", **env})


def stage(project: Path, text: str) -> None:
    (project / "app.py").write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", "app.py"], cwd=project, check=True)


def test_the_gate_blocks_a_change_the_reviewer_flags_and_passes_one_it_does_not(
    project: Path,
) -> None:
    stage(project, "print('hi')\nKEY = 'SECRET'\n")
    blocked = start(project, "task", "gate", "--print", "--fail-if", "block", FAKE_MODE="gate")
    verdict = {"block": True, "findings": [FLAGGED]}
    assert (blocked.returncode, json.loads(blocked.stdout), blocked.stderr) == (
        6,
        verdict,
        "start: blocked: agent 'fake' answered true at --fail-if block\n"
        "  app.py:2: it adds SECRET: keep it out of the repository\n",
    )
    # Without --fail-if, the same verdict is an answer like any other.
    told = start(project, "task", "gate", "--print", FAKE_MODE="gate")
    assert (told.returncode, json.loads(told.stdout), told.stderr) == (0, verdict, "")
    stage(project, "print('hi')\nKEY = 'from the environment'\n")
    passed = start(project, "task", "gate", "--print", "--fail-if", "block", FAKE_MODE="gate")
    assert (passed.returncode, json.loads(passed.stdout), passed.stderr) == (
        0,
        {"block": False, "findings": []},
        "",
    )


def test_with_json_the_record_is_printed_and_the_code_is_the_same(project: Path) -> None:
    stage(project, "SECRET\n")
    done = start(project, "task", "gate", "--print", "--json", "--fail-if=block", FAKE_MODE="gate")
    record = json.loads(done.stdout)
    assert (done.returncode, record["success"], record["value"]["block"]) == (6, True, True)
    assert done.stderr == (
        "start: blocked: agent 'fake' answered true at --fail-if block\n"
        "  app.py:1: it adds SECRET: keep it out of the repository\n"
    )


def test_a_path_reaches_into_objects_and_lists(project: Path) -> None:
    answer = '{"checks": [{"failed": false}, {"failed": true}]}'
    done = start(
        project, "task", "data", "--print", "--fail-if", "checks.1.failed", FAKE_ANSWER=answer
    )
    assert (done.returncode, done.stdout) == (6, answer + "\n")
    assert (
        done.stderr == "start: blocked: agent 'fake' answered true at --fail-if checks.1.failed\n"
    )


def test_an_answer_without_true_or_false_there_fails_out_of_format(project: Path) -> None:
    """A gate that cannot say does not let the change pass (tests/runs/test_verdict.py has
    each way an answer can hold no true or false)."""
    answer = '{"verdict": {"block": "yes"}}'
    done = start(
        project, "task", "data", "--print", "--fail-if", "verdict.block", FAKE_ANSWER=answer
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        65,
        answer + "\n",
        "start: agent 'fake' answered, but not true or false at --fail-if verdict.block: "
        '$.verdict.block is the string "yes", not true or false\n' + NO_VERDICT,
    )


def test_an_answer_without_the_path_says_what_it_holds_and_the_fix(project: Path) -> None:
    answer = '{"blocked": true, "why": "a key"}'
    done = start(project, "task", "data", "--print", "--fail-if", "block", FAKE_ANSWER=answer)
    assert (done.returncode, done.stdout, done.stderr) == (
        65,
        answer + "\n",
        "start: agent 'fake' answered, but not true or false at --fail-if block: "
        "$.block is missing: $ has 'blocked', 'why'\n" + NO_VERDICT,
    )


def test_an_answer_that_is_not_json_names_the_path_the_answer_and_the_fix(
    project: Path,
) -> None:
    """The shipped gate's schema, an answer that is not JSON: out of format (65), its problem
    and the answer as ever, then why --fail-if does not let it pass, and what to do."""
    stage(project, "SECRET\n")
    done = start(
        project, "task", "gate", "--print", "--fail-if", "block", FAKE_ANSWER="Looks fine to me."
    )
    schema = REPO / "config" / "gate.schema.json"
    assert (done.returncode, done.stdout, done.stderr) == (
        65,
        "",
        f"start: agent 'fake' answered, but its answer does not match the task's output schema "
        f"({schema}):\n"
        "  the answer is not JSON: Expecting value at line 1 column 1\n"
        "Answer:\n"
        "Looks fine to me.\n"
        "start: --fail-if block: agent 'fake' gave no verdict to read (its answer, above, is out "
        "of the task's output format), so it does not pass\n"
        "hint: run it again; an agent whose entry has print_schema (claude, codex, qwen, llm) "
        "holds its answer to the task's schema itself (start help agents)\n",
    )


def test_of_several_agents_each_answer_is_read(project: Path) -> None:
    done = start(
        project, "task", "verdict", "--print", "-a", "one,two", "--fail-if", "block",
        FAKE_ANSWER_one='{"block": false}', FAKE_ANSWER_two='{"block": true}',
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        6,
        "start: blocked: agent 'two' answered true at --fail-if block\n",
    )
    assert done.stdout == '## one\n\n{"block": false}\n\n## two\n\n{"block": true}\n'


def test_a_run_that_failed_keeps_its_own_code(project: Path) -> None:
    done = start(project, "task", "verdict", "--print", "--fail-if", "block", FAKE_MODE="fail")
    assert done.returncode == 1
    assert "blocked" not in done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("task", "notes"),
            "start: --fail-if block reads a JSON answer, and task 'notes' answers text: give "
            'the task an output format (output = "json", or a JSON Schema; start help '
            "configuration)\n",
        ),
        (
            ("prompt", "hi"),
            "start: --fail-if block reads a JSON answer, and a prompt's answer is text: give "
            'the task an output format (output = "json", or a JSON Schema; start help '
            "configuration)\n",
        ),
    ],
)
def test_a_text_answer_is_refused_before_the_agent_runs(
    project: Path, args: tuple[str, ...], said: str
) -> None:
    record = project.parent / "record.json"
    done = start(project, *args, "--print", "--fail-if", "block", FAKE_RECORD=str(record))
    assert (done.returncode, done.stdout, done.stderr) == (2, "", said)
    assert not record.exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("task", "verdict", "--fail-if", "block"),
            "start: --fail-if goes with --print (a headless run)\n",
        ),
        (
            ("task", "verdict", "--print", "--fail-if", ".block"),
            "start: --fail-if '.block': PATH is keys separated by dots, with none empty, such as "
            "block or verdict.block (--fail-if block)\n",
        ),
    ],
)
def test_fail_if_without_print_or_with_an_empty_key_is_a_usage_error(
    project: Path, args: tuple[str, ...], said: str
) -> None:
    record = project.parent / "record.json"
    done = start(project, *args, FAKE_RECORD=str(record))
    assert (done.returncode, done.stdout, done.stderr) == (2, "", said)
    assert not record.exists()


def test_start_again_takes_fail_if_and_shows_it_in_the_command_line(project: Path) -> None:
    stage(project, "SECRET\n")
    first = start(project, "task", "gate", "--print", FAKE_MODE="gate")
    assert first.returncode == 0, first.stderr
    again = run_start("again", "--fail-if", "block", cwd=project, env={"FAKE_MODE": "gate"})
    assert again.returncode == 6, again.stderr
    assert again.stderr.startswith(
        f"start again: start task gate --fail-if block --print  (in {project})\n"
    )
    assert again.stderr.endswith(
        "start: blocked: agent 'fake' answered true at --fail-if block\n"
        "  app.py:1: it adds SECRET: keep it out of the repository\n"
    )
