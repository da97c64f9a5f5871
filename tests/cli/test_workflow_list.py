"""`start workflow` (the list), `start show workflow`, `start config show workflows`, the
completions of workflow names and runs, and `start help workflow`; a run's items are made here
as start.board.workflow makes them (tests/e2e/test_workflow_board.py lists real runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from start.base import paths
from start.board import Change, Holder
from start.board import file as boardfile
from tests.conftest import invoke, run_start, write_tree
from tests.test_import_hygiene import imported

CONFIG = """
[settings]
default_agent = "stand-in"

[agents.stand-in]
bin = "true"
command = "{bin} {prompt}"

[tasks.triage]
prompt = "Triage: {instructions}"
output = "json"

[tasks.fix-tests]
prompt = "Fix the tests"

[workflows.fix]
description = "Triage, then plan"
params.area = { default = "backend", description = "where to look" }

[workflows.fix.steps.triage]
task = "triage"
instructions = "{instructions} in {area}"

[workflows.fix.steps.plan]
prompt = "Plan a fix for {steps.triage.answer}"
when = "steps.triage.value.severity == 'high'"

[workflows.mine.steps.only]
prompt = "Just this"
"""

PROJECT = """
[workflows.mine]
description = "The project's own"

[workflows.mine.steps.one]
prompt = "One"

[workflows.mine.steps.two]
prompt = "Two {steps.one.answer}"
"""

ME = Holder("me")
# The workflows start ships (config/workflows.toml), listed with the config's own, by name.
SHIPPED = ["compare-answers", "fix-severe"]


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    write_tree(isolated, {".start/config.toml": PROJECT})
    return isolated


@pytest.fixture
def unshipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The built-in layer without its workflows.toml: only the test's own workflows are there."""
    import shutil

    copy = tmp_path / "builtin"
    shutil.copytree(paths.builtin_config_dir(), copy)
    (copy / "workflows.toml").unlink()
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(copy))


def _runs(project: Path) -> None:
    """Two runs of fix, as start.board.workflow.begin makes them: item-1 failed (a step done,
    one failed), then item-4, unfinished (its one step pending)."""
    with boardfile.opened(str(project)) as opened:
        for steps, instructions in ((("triage", "plan"), "the login page"), (("triage",), "")):
            kept = {"name": "fix", "definition": "{}", "instructions": instructions}
            parent = opened.create("workflow fix", ME, metadata={"workflow": kept})
            ids = {}
            for step in steps:
                meta = {"workflow": {"step": step}}
                ids[step] = opened.create(f"fix / {step}", ME, metadata=meta, parent=parent.id).id
            opened.update(parent.id, ME, Change(metadata={"workflow": {"steps": ids}}))
            if len(steps) == 2:
                opened.update("item-2", ME, Change("completed", answer="{}"))
                opened.update("item-3", ME, Change("failed", reason="it broke"))
                opened.update(parent.id, ME, Change("failed", reason="step 'plan': it broke"))


def test_the_list_of_workflows_and_runs_as_data(project: Path) -> None:
    _runs(project)
    # Another item on the board is no run.
    assert invoke("board", "add", "Not a run").exit_code == 0
    for words in (("workflow",), ("workflow", "list")):
        done = invoke(*words, "--json")
        assert (done.exit_code, done.stderr) == (0, "")
        data = json.loads(done.stdout)
        shipped = Path(paths.builtin_config_dir()) / "workflows.toml"
        # By name, the shipped ones too (config/workflows.toml), each from the built-in layer.
        assert [w["name"] for w in data["workflows"]] == [
            "compare-answers",
            "fix",
            "fix-severe",
            "mine",
        ]
        assert [
            (w["name"], w["layer"], w["file"]) for w in data["workflows"] if w["name"] in SHIPPED
        ] == [(name, "built-in", str(shipped)) for name in SHIPPED]
        assert [w for w in data["workflows"] if w["name"] not in SHIPPED] == [
            {
                "name": "fix",
                "description": "Triage, then plan",
                "steps": 2,
                "layer": "global",
                "file": str(project.parent / "home" / ".config" / "start" / "config.toml"),
            },
            {  # the project's replaces the global one whole
                "name": "mine",
                "description": "The project's own",
                "steps": 2,
                "layer": "project",
                "file": str(project / ".start" / "config.toml"),
            },
        ]
        assert [
            {key: run[key] for key in ("id", "workflow", "instructions", "state")}
            | {"counts": (run["done"], run["failed"], run["steps"])}
            for run in data["runs"]
        ] == [
            {"id": "item-4", "workflow": "fix", "instructions": "", "state": "unfinished"}
            | {"counts": (0, 0, 1)},
            {"id": "item-1", "workflow": "fix", "instructions": "the login page"}
            | {"state": "failed", "counts": (1, 1, 2)},
        ]


def test_the_list_reads_as_tables(project: Path) -> None:
    _runs(project)
    done = invoke("workflow", "--limit", "1")
    assert done.exit_code == 0
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:5]] == [
        "WORKFLOW", "compare-answers", "fix", "fix-severe", "mine",
    ]  # fmt: skip
    assert [" ".join(line.split()) for line in (lines[2], lines[4])] == [
        "fix 2 Triage, then plan global",
        "mine 2 The project's own project",
    ]
    assert lines[0].split() == ["WORKFLOW", "STEPS", "DESCRIPTION", "LAYER"]
    assert lines[5] == ""
    assert lines[6].split() == [
        "RUN", "WORKFLOW", "STATE", "DONE", "FAILED", "STEPS", "CHANGED", "INSTRUCTIONS",
    ]  # fmt: skip
    assert lines[7].split()[:6] == ["item-4", "fix", "unfinished", "0", "0", "1"]
    assert len(lines) == 8
    assert done.stderr == "start: 1 more run(s); start workflow --limit 0 lists them all\n"
    verbose = invoke("workflow", "-v").stdout.splitlines()
    assert verbose[0].endswith("LAYER     FILE")
    assert verbose[4].endswith(f"project   {project / '.start' / 'config.toml'}")


def test_no_workflow_and_no_run_says_how_to_write_one(isolated: Path, unshipped: None) -> None:
    done = invoke("workflow")
    assert (done.exit_code, done.stdout, done.stderr) == (
        0,
        "",
        "No workflows are defined. Add a [workflows.NAME] table with its steps "
        "(start help workflow).\n",
    )
    assert json.loads(invoke("workflow", "--json").stdout) == {"workflows": [], "runs": []}


def test_the_list_and_completion_load_no_jmespath(project: Path) -> None:
    """Listing and completing read the tables as they are: neither the checks of
    start.config.workflows nor jmespath (tests/test_import_hygiene.py's way)."""
    _runs(project)
    profiled = {"PYTHONPROFILEIMPORTTIME": "1"}
    for args, env in (
        (("workflow", "--json"), profiled),
        ((), {**profiled, "_START_COMPLETE": "bash_complete", "COMP_WORDS": "start workflow run "}),
        ((), {**profiled, "_START_COMPLETE": "bash_complete", "COMP_WORDS": "start show "}),
    ):
        done = run_start(*args, cwd=project, env={"COMP_CWORD": "3", **env})
        assert done.returncode == 0, done.stderr
        names = imported(done.stderr)
        assert "start.config.load" in names, done.stderr
        off = ("jmespath", "start.config.workflows", "start.compose.workflow")
        assert [name for name in names if name.startswith(off)] == []


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        ("start workflow run ", ["compare-answers", "fix", "fix-severe", "mine"]),
        ("start workflow run m", ["mine"]),
        ("start workflow resume ", ["item-4", "item-1"]),
        ("start workflow show item-", ["item-4", "item-1"]),
        ("start show workflow ", ["compare-answers", "fix", "fix-severe", "mine"]),
        ("start show workflows f", ["fix", "fix-severe"]),
        ("start show wo", ["workflow"]),
        ("start show mi", ["mine"]),
    ],
)
def test_completion_knows_workflows_and_their_runs(
    project: Path, words: str, offered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(project)
    monkeypatch.setenv("_START_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - (0 if words.endswith(" ") else 1)))
    assert invoke().stdout.split() == [f"plain,{name}" for name in offered]


def test_show_workflow_gives_its_file_parameters_and_plan(project: Path) -> None:
    done = invoke("show", "workflow", "fix", "--no-pager")
    assert (done.exit_code, done.stderr) == (0, "")
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    assert done.stdout.splitlines()[:14] == [
        "workflow fix",
        f"  defined in   global ({config})",
        "  description  Triage, then plan",
        "  runs         start workflow run fix [TEXT]",
        "",
        "parameters",
        '  area (default "backend"): where to look',
        "",
        "level 0",
        "  triage: task triage; agent stand-in; output json",
        "",
        "level 1",
        "  plan: prompt; agent stand-in; output text; when steps.triage.value.severity == 'high'",
        "    reads triage: answer, value",
    ]
    assert "```mermaid" in done.stdout
    # Without its kind, a name no other kind has is the workflow's, and its exact name wins
    # over the prefix of a task's (fix-tests).
    assert invoke("show", "fix", "--no-pager").stdout == done.stdout
    data = json.loads(invoke("show", "workflows", "mine", "--json").stdout)
    assert (data["workflow"], data["layer"], data["file"], data["params"]) == (
        "mine",
        "project",
        str(project / ".start" / "config.toml"),
        [],
    )
    assert [step["name"] for step in data["steps"]] == ["one", "two"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("show", "workflow", "fx"), 4, "start: unknown workflow 'fx'; did you mean 'fix'?\n"),
        (
            ("show", "workflow"),
            2,
            "start: 'start show workflow' needs NAME: start show workflow NAME\n",
        ),
    ],
)
def test_show_workflow_errors(
    project: Path, args: tuple[str, ...], code: int, message: str
) -> None:
    done = invoke(*args)
    assert (done.exit_code, done.stdout, done.stderr) == (code, "", message)


def test_config_show_holds_the_workflows_as_their_files_do(project: Path, unshipped: None) -> None:
    done = invoke("config", "show", "workflows", "--no-pager")
    assert (done.exit_code, done.stderr) == (0, "")
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    assert done.stdout == (
        f"# from global ({config})\n"
        "[workflows.fix]\n"
        'description = "Triage, then plan"\n'
        "\n"
        "[workflows.fix.params.area]\n"
        'default = "backend"\n'
        'description = "where to look"\n'
        "\n"
        "[workflows.fix.steps.triage]\n"
        'task = "triage"\n'
        'instructions = "{instructions} in {area}"\n'
        "\n"
        "[workflows.fix.steps.plan]\n"
        'prompt = "Plan a fix for {steps.triage.answer}"\n'
        "when = \"steps.triage.value.severity == 'high'\"\n"
        "\n"
        f"# from project ({project / '.start' / 'config.toml'})\n"
        "[workflows.mine]\n"
        'description = "The project\'s own"\n'
        "\n"
        "[workflows.mine.steps.one]\n"
        'prompt = "One"\n'
        "\n"
        "[workflows.mine.steps.two]\n"
        'prompt = "Two {steps.one.answer}"\n'
    )
    whole = invoke("config", "show", "--no-pager").stdout
    assert whole.endswith("\n\n" + done.stdout)
    data = json.loads(invoke("config", "show", "--json").stdout)["workflows"]
    assert data["mine"]["origin"] == {
        "layer": "project",
        "file": str(project / ".start" / "config.toml"),
    }
    assert list(data["mine"]["steps"]) == ["one", "two"]
    one = json.loads(invoke("config", "show", "workflow", "fix", "--json").stdout)
    assert list(one["workflows"]) == ["fix"]
    wrong = invoke("config", "show", "workflow", "fx")
    assert (wrong.exit_code, wrong.stderr) == (
        4,
        "start: unknown workflow 'fx'; did you mean 'fix'?\n",
    )


def test_help_workflow_teaches_writing_and_running_one() -> None:
    text = invoke("help", "workflow").stdout
    assert "\nA workflow, in a config file (start config validate checks it):\n" in text
    assert "  when = \"steps.triage.value.severity == 'high'\"\n" in text
    assert "start board run\nand start board claim --next leave those to the run" in text
    assert "\nExit codes: 0 every step succeeded or was skipped; 1 a step failed;" in text


def test_config_show_escapes_what_a_terminal_would_hide(isolated: Path, unshipped: None) -> None:
    # As every item's text: a bidi override or a control in a workflow's table is an escape.
    write_tree(
        isolated.parent / "home" / ".config" / "start",
        {"workflows.toml": '[workflows.odd]\ndescription = "a\\u202eb"\n\n'
         '[workflows.odd.steps.one]\nprompt = "x\\u0007y"\n'},
    )  # fmt: skip
    done = invoke("config", "show", "workflows", "--no-pager")
    assert (done.exit_code, done.stderr) == (0, "")
    assert done.stdout.splitlines()[1:] == [
        "[workflows.odd]",
        'description = "a\\u202eb"',
        "",
        "[workflows.odd.steps.one]",
        'prompt = "x\\u0007y"',
    ]
