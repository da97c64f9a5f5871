"""`start task NAME --print` of a task with an `output` format: the agent is held to it or told
it, and the answer is checked (issue 28)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO, run_start, running, write_tree
from tests.fake_headless import agent

FAKE = REPO / "tests" / "fake_headless.py"
SCHEMA = (
    '{"type": "object", "required": ["severity"],'
    ' "properties": {"severity": {"enum": ["low", "high"]}}}'
)

RO = 'read-only = "--ro"'
AGENTS = "\n".join(
    [
        agent("fake", levels=RO),
        agent("held", output="result", levels=RO, prefix="FAKE_NAME=held ",
              extra='print_schema = "--json-schema {schema}"\n'),
        agent("filed", levels=RO, prefix="FAKE_NAME=filed ",
              extra="print_schema = \"--output-schema '{schema_file}'\"\n"),
        agent("picky", levels=RO, prefix="FAKE_NAME=picky ",
              extra='print_schema = "--json-schema {schema}"\n'
                    'print_schema_refused = "does not support schemas"\n'),
    ]
)  # fmt: skip

CONFIG = f"""
[settings]
default_agent = "fake"

{AGENTS}

[tasks.notes]
prompt = "Notes."

[tasks.data]
prompt = "Data."
output = "json"

[tasks.triage]
prompt = "Triage."
output = {{ schema = {{ type = "object", required = ["severity"], properties = {{ severity = {{ enum = ["low", "high"] }} }} }} }}

[tasks.filed]
prompt = "Triage."
output = {{ schema = "triage.schema.json" }}
"""

INSTRUCTION = "Answer with one JSON value only, with no other text before or after it."


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(
        isolated.parent / "home" / ".config" / "start",
        {"config.toml": CONFIG, "triage.schema.json": SCHEMA + "\n"},
    )
    return isolated


def start(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_start("-q", *args, cwd=project, env={"FAKE_MODE": "say", **env})


def test_a_text_task_is_not_checked_nor_told(project: Path) -> None:
    record = project.parent / "record.json"
    result = start(
        project, "task", "notes", "--print", FAKE_ANSWER="plain words", FAKE_RECORD=str(record)
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "plain words\n", "")
    assert json.loads(record.read_text())["argv"] == ["--ro", "--", "Notes."]


@pytest.mark.parametrize("task", ["data", "triage", "filed"])
@pytest.mark.parametrize(
    "answer", ['{"severity": "high"}', 'Sure:\n```json\n{"severity": "high"}\n```']
)
def test_a_good_answer_passes_whole_or_fenced(project: Path, task: str, answer: str) -> None:
    result = start(project, "task", task, "--print", FAKE_ANSWER=answer)
    assert (result.returncode, result.stdout, result.stderr) == (0, answer + "\n", "")
    data = start(project, "task", task, "--print", "--json", FAKE_ANSWER=answer)
    value = json.loads(data.stdout)
    assert (data.returncode, value["value"], value["answer"], value["success"]) == (
        0,
        {"severity": "high"},
        answer,
        True,
    )


def test_the_prompt_names_the_format_for_an_agent_without_a_schema_option(project: Path) -> None:
    record = project.parent / "record.json"
    start(project, "task", "data", "--print", FAKE_ANSWER="1", FAKE_RECORD=str(record))
    assert json.loads(record.read_text())["argv"] == ["--ro", "--", f"Data.\n\n{INSTRUCTION}\n"]
    start(project, "task", "filed", "--print", FAKE_ANSWER="1", FAKE_RECORD=str(record))
    schema = json.dumps(json.loads(SCHEMA), separators=(",", ":"))
    assert json.loads(record.read_text())["argv"] == [
        "--ro",
        "--",
        f"Triage.\n\n{INSTRUCTION} It must match this JSON Schema:\n{schema}\n",
    ]


def test_an_agent_with_a_schema_option_gets_the_schema_not_the_instruction(project: Path) -> None:
    record = project.parent / "record.json"
    result = start(
        project, "task", "triage", "--print", "-a", "held", "--json",
        FAKE_MODE="structured", FAKE_ANSWER='{"severity": "low"}', FAKE_RECORD=str(record),
    )  # fmt: skip
    schema = '{"type":"object","required":["severity"],"properties":{"severity":{"enum":["low","high"]}}}'
    assert json.loads(record.read_text())["argv"] == [
        "--ro",
        "--json-schema",
        schema,
        "--",
        "Triage.",
    ]
    data = json.loads(result.stdout)
    assert (result.returncode, data["value"], data["answer"]) == (
        0,
        {"severity": "low"},
        '{"severity": "low"}',
    )


SCHEMA_TEXT = json.dumps(json.loads(SCHEMA), separators=(",", ":"))
TOLD = f"Triage.\n\n{INSTRUCTION} It must match this JSON Schema:\n{SCHEMA_TEXT}\n"
FELL_BACK = (
    "start: ⚠ picky refused the task's schema option (Error: Fake: fake-model does not support "
    "schemas); asked again with the schema in the prompt, and the answer checked by start\n"
)


def test_a_refused_schema_option_is_asked_again_with_the_schema_in_the_prompt(
    project: Path,
) -> None:
    record = project.parent / "record.json"
    result = start(
        project, "task", "filed", "--print", "-a", "picky", FAKE_MODE="refuse-schema",
        FAKE_REFUSES="picky", FAKE_ANSWER='{"severity": "high"}', FAKE_RECORD=str(record),
    )  # fmt: skip
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        '{"severity": "high"}\n',
        FELL_BACK,
    )
    assert json.loads(record.read_text())["argv"] == ["--ro", "--", TOLD]
    as_json = start(
        project, "task", "filed", "--print", "-a", "picky", "--json-fields", "all",
        FAKE_MODE="refuse-schema", FAKE_REFUSES="picky", FAKE_ANSWER='{"severity": "none"}',
    )  # fmt: skip
    data = json.loads(as_json.stdout)
    assert (as_json.returncode, as_json.stderr, data["success"]) == (65, "", False)
    assert data["fallback"] == FELL_BACK.removeprefix("start: ⚠ ").removesuffix("\n")
    assert data["problems"] == ["$.severity: 'none' is not one of ['low', 'high']"]
    assert "--json-schema" not in data["argv"]
    # The history keeps the prompt the agent got, and the command that answered.
    shown = run_start("log", "show", "--json", cwd=project)
    run = json.loads(shown.stdout)
    assert (run["prompt"], run["argv"][-1], run["fallback"]) == (TOLD, TOLD, data["fallback"])


# The refused agent's second run (without the schema option) notes its pid, then waits.
WAITS_WHEN_ASKED_AGAIN = """
import os, sys, time
if os.environ.get("FAKE_NAME") == "picky" and "--json-schema" not in sys.argv:
    open(os.environ["PIDFILE"], "w").write(str(os.getpid()))
    time.sleep(120)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_second_run_keeps_every_answer(
    project: Path, survivors: list[int], signum: int
) -> None:
    pidfile = project.parent / "picky.pid"
    env = {
        **os.environ, "PYTHONPATH": str(REPO), "FAKE_MODE": "refuse-schema",
        "FAKE_REFUSES": "picky", "FAKE_ANSWER": '{"severity": "high"}',
        "FAKE_ANSWER_held": json.dumps(
            {"type": "result", "is_error": False, "result": '{"severity": "low"}'}
        ),
        "FAKE_BEFORE": WAITS_WHEN_ASKED_AGAIN, "PIDFILE": str(pidfile),
    }  # fmt: skip
    runner = subprocess.Popen(
        [sys.executable, "-m", "start", "-q", "task", "triage", "--print", "-a", "held,picky",
         "--json-fields", "all"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text()):
            assert time.monotonic() < deadline, "the second run never started"
            time.sleep(0.05)
        survivors.append(int(pidfile.read_text()))
        runner.send_signal(signum)
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == (130 if signum == signal.SIGINT else 128 + signum), err
    held, picky = json.loads(out)
    assert (held["state"], held["value"]) == ("ok", {"severity": "low"})
    assert (picky["state"], picky["fallback"] is not None) == ("interrupted", True)
    assert "--json-schema" not in picky["argv"]
    assert [run for run in survivors if running(run)] == []
    shown = run_start("log", "--json", cwd=project)
    assert sorted((r["agent"], r["state"]) for r in json.loads(shown.stdout)) == [
        ("held", "ok"),
        ("picky", "interrupted"),
    ]


def test_a_failure_without_the_refusal_words_is_not_asked_again(project: Path) -> None:
    record = project.parent / "record.json"
    result = start(
        project, "task", "filed", "--print", "-a", "picky",
        FAKE_MODE="fail", FAKE_RECORD=str(record),
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith(
        "start: agent 'picky' failed: exited with status 3: Error: unknown option '--bogus'\n"
    )
    assert json.loads(record.read_text())["argv"][:2] == ["--ro", "--json-schema"]


def test_of_several_agents_only_the_refused_one_is_asked_again(project: Path) -> None:
    held_says = {
        "type": "result",
        "is_error": False,
        "result": "",
        "structured_output": {"severity": "low"},
    }
    result = start(
        project, "task", "filed", "--print", "-a", "held,picky", "--json-fields", "all",
        FAKE_MODE="refuse-schema", FAKE_REFUSES="picky", FAKE_ANSWER_held=json.dumps(held_says),
        FAKE_ANSWER_picky='{"severity": "high"}',
    )  # fmt: skip
    held, picky = json.loads(result.stdout)
    assert (result.returncode, held["value"], picky["value"]) == (
        0,
        {"severity": "low"},
        {"severity": "high"},
    )
    assert (held["fallback"], picky["fallback"]) == (
        None,
        FELL_BACK.removeprefix("start: ⚠ ").removesuffix("\n"),
    )
    assert held["argv"][held["argv"].index("--json-schema") + 1] == SCHEMA_TEXT


def test_a_schema_file_option_gets_a_file_holding_the_schema(project: Path) -> None:
    record = project.parent / "record.json"
    result = start(
        project,
        "task",
        "filed",
        "--print",
        "-a",
        "filed",
        FAKE_ANSWER='{"severity": "low"}',
        FAKE_RECORD=str(record),
        FAKE_READ_AFTER="--output-schema",
    )
    recorded = json.loads(record.read_text())
    argv = recorded["argv"]
    assert result.returncode == 0, result.stderr
    assert recorded["read"] == json.dumps(json.loads(SCHEMA), separators=(",", ":")) + "\n"
    assert argv[:2] == ["--ro", "--output-schema"] and argv[3:] == ["--", "Triage."]
    assert not Path(argv[2]).exists()  # a temp file of the run


@pytest.mark.parametrize("task", ["triage", "filed"])
def test_a_mismatch_fails_with_its_own_exit_code_and_the_paths(project: Path, task: str) -> None:
    answer = '{"severity": "urgent"}'
    result = start(project, "task", task, "--print", FAKE_ANSWER=answer)
    where = (
        "tasks.triage.output.schema"
        if task == "triage"
        else str(project.parent / "home" / ".config" / "start" / "triage.schema.json")
    )
    assert (result.returncode, result.stdout) == (65, "")
    assert result.stderr == (
        f"start: agent 'fake' answered, but its answer does not match the task's output schema ({where}):\n"
        "  $.severity: 'urgent' is not one of ['low', 'high']\n"
        "Answer:\n"
        '{"severity": "urgent"}\n'
    )
    data = start(project, "task", task, "--print", "--json", FAKE_ANSWER=answer)
    value = json.loads(data.stdout)
    assert data.returncode == 65
    assert (value["success"], value["value"], value["answer"], value["problems"]) == (
        False,
        None,
        answer,
        ["$.severity: 'urgent' is not one of ['low', 'high']"],
    )


@pytest.mark.parametrize("task", ["data", "triage", "filed"])
def test_prose_is_not_json(project: Path, task: str) -> None:
    result = start(project, "task", task, "--print", FAKE_ANSWER="The severity is high.")
    assert result.returncode == 65
    assert (
        "  the answer is not JSON: Expecting value at line 1 column 1\nAnswer:\nThe severity is high.\n"
        in result.stderr
    )


def test_each_of_several_agents_is_checked_on_its_own(project: Path) -> None:
    held_says = {
        "type": "result",
        "is_error": False,
        "result": "",
        "structured_output": {"severity": "low"},
    }
    env = {"FAKE_ANSWER_held": json.dumps(held_says), "FAKE_ANSWER_filed": '{"severity": "no"}'}
    result = start(project, "task", "triage", "--print", "-a", "held,filed", "--json", **env)
    held, filed = json.loads(result.stdout)
    assert result.returncode == 65
    assert (held["success"], held["value"]) == (True, {"severity": "low"})
    assert (filed["success"], filed["value"], filed["answer"]) == (
        False,
        None,
        '{"severity": "no"}',
    )
    assert filed["problems"] == ["$.severity: 'no' is not one of ['low', 'high']"]


def test_several_agents_show_a_mismatch_whole_under_its_heading(project: Path) -> None:
    """The reason, every line of it, under the agent's heading, then the answer that arrived;
    on stderr the same lines, not one line with `\\n` in it."""
    env = {"FAKE_ANSWER": '{"severity": "low"}', "FAKE_ANSWER_filed": '{"grade": 1}'}
    result = start(project, "task", "triage", "--print", "-a", "fake,filed", **env)
    reason = (
        "its answer does not match the task's output schema (tasks.triage.output.schema):\n"
        "  $: 'severity' is a required property"
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        65,
        '## fake\n\n{"severity": "low"}\n\n'
        f'## filed\n\n(answered, but {reason})\n\n{{"grade": 1}}\n',
        f"start: agent 'filed' answered, but {reason}\n",
    )


def test_config_validate_checks_each_schema_at_its_file_and_line(project: Path) -> None:
    write_tree(
        project,
        {
            ".start/config.toml": (
                "[tasks.inline]\n"
                'prompt = "x"\n'
                "\n"
                "[tasks.inline.output.schema]\n"
                'type = "objekt"\n'
                "\n"
                "[tasks.named]\n"
                'prompt = "x"\n'
                'output = { schema = "named.json" }\n'
                "\n"
                "[tasks.odd]\n"
                'prompt = "x"\n'
                'output = "yaml"\n'
            ),
            ".start/named.json": '{\n  "type" "object"\n}\n',  # worded alike by 3.11+
        },
    )
    result = run_start("config", "validate", cwd=project)
    config = project / ".start" / "config.toml"
    assert result.returncode == 3
    assert result.stdout.split("\n")[:3] == [
        f"{config}:5:1: error: tasks.inline.output.schema.type: 'objekt' is not valid under any "
        "of the given schemas",
        f'{config}:13:1: error: tasks.odd.output: must be "text", "json", or a JSON Schema: '
        '{ schema = "FILE.json" } or { schema = { type = "object", ... } }, not \'yaml\'',
        f"{project / '.start' / 'named.json'}:2:10: error: not JSON: Expecting ':' delimiter",
    ]


def test_a_dry_run_shows_the_prompt_the_agent_gets(project: Path) -> None:
    told = start(project, "task", "data", "--print", "--dry-run", "--json")
    held = start(project, "task", "triage", "--print", "--dry-run", "--json", "-a", "held")
    assert json.loads(told.stdout)["prompt"] == f"Data.\n\n{INSTRUCTION}\n"
    data = json.loads(held.stdout)
    assert data["prompt"] == "Triage."
    assert data["argv"][-4:-2] == [
        "--json-schema",
        json.dumps(json.loads(SCHEMA), separators=(",", ":")),
    ]


def test_a_launch_ignores_the_output_format(project: Path) -> None:
    result = start(project, "task", "data", "--dry-run", "--json")
    assert json.loads(result.stdout)["prompt"] == "Data."


def test_a_project_schema_outside_the_project_is_not_read(project: Path) -> None:
    outside = project.parent / "elsewhere.json"
    outside.write_text("{not JSON: read, it would be reported\n")
    write_tree(
        project,
        {".start/config.toml": f'[tasks.far]\nprompt = "x"\noutput = {{ schema = "{outside}" }}\n'},
    )
    untrusted = {"START_TRUSTED_PATHS": ""}
    assert run_start("trust", "--yes", cwd=project, env=untrusted).returncode == 0
    result = start(project, "task", "far", "--print", FAKE_ANSWER="{}", **untrusted)
    assert (result.returncode, result.stdout) == (5, "")
    assert result.stderr == (
        f"start: {outside} resolves to {outside}, outside the project root, and the approval "
        "does not cover it; run 'start trust' to review it\n"
    )
    validate = run_start("config", "validate", cwd=project, env=untrusted)
    assert (validate.returncode, str(outside) in validate.stdout) == (0, False)


def test_a_project_schema_in_start_dir_is_read_as_approved(project: Path) -> None:
    write_tree(
        project,
        {
            ".start/config.toml": '[tasks.near]\nprompt = "x"\noutput = { schema = "near.json" }\n',
            ".start/near.json": '{"type": "array"}\n',
        },
    )
    assert start(project, "task", "near", "--print", FAKE_ANSWER="[1]").returncode == 0
    result = start(project, "task", "near", "--print", FAKE_ANSWER="{}")
    assert result.returncode == 65
    assert (
        f"({project / '.start' / 'near.json'}):\n  $: {{}} is not of type 'array'\n"
        in result.stderr
    )


def test_config_add_writes_each_form(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    for name, given in (("a", "json"), ("b", "b.schema.json")):
        result = run_start(
            "config", "add", "task", name, "--prompt", "x", "--output", given, cwd=project
        )
        assert result.returncode == 0, result.stderr
    text = config.read_text()
    tasks = tomllib.loads(text)["tasks"]
    assert (tasks["a"], tasks["b"]) == (
        {"output": "json", "prompt": "x"},
        {"prompt": "x", "output": {"schema": "b.schema.json"}},
    )
    # tomlkit 0.12 (the lowest allowed) puts no blank line before a sub-table; newer ones do.
    assert text.replace("\n\n[tasks.b.output]", "\n[tasks.b.output]").endswith(
        '[tasks.a]\noutput = "json"\nprompt = "x"\n\n'
        '[tasks.b]\nprompt = "x"\n[tasks.b.output]\nschema = "b.schema.json"\n'
    )


def test_the_schema_validator_is_never_imported_by_start_itself(project: Path) -> None:
    from tests.test_import_hygiene import imported

    env = {"FAKE_ANSWER": '{"severity": "low"}', "PYTHONPROFILEIMPORTTIME": "1"}
    loaded = {
        task: imported(start(project, "task", task, "--print", **env).stderr)
        for task in ("notes", "data", "triage")
    }
    # jsonschema runs in a child process (start.proc.schemacheck), for a schema only.
    assert ["jsonschema" in names for names in loaded.values()] == [False, False, False]
    assert ["start.config.output" in names for names in loaded.values()] == [False, True, True]
