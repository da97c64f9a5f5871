"""`workflows.toml` as a layer file, and `for_each = { files = "GLOB" }`: its early errors, its
matching inside the project root on real files (a hostile symlink included), and a run of it in
real processes with the stand-in headless agent (tests/fake_headless.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from start.board.workflow import FilesError, matched
from start.config.workflows import Files
from tests.config.test_workflows import step, workflow_problems
from tests.conftest import invoke, run_start, write_tree
from tests.fake_headless import agent


def test_workflows_toml_is_a_layer_file_read_and_checked_in_place(isolated: Path) -> None:
    from start.config import workflows
    from start.config.load import load

    directory = isolated.parent / "home" / ".config" / "start"
    write_tree(
        directory,
        {
            "workflows.toml": '[workflows.w.steps.a]\nprompt = "go"\n\n'
            '[workflows.w.steps.b]\nprompt = "{steps.c.answer}"\n'
        },
    )
    config = load()
    assert [str(problem) for problem in config.problems] == []
    [problem] = workflows.read(config).problems
    assert str(problem) == (
        f"{directory / 'workflows.toml'}:5:11: workflows.w.steps.b.prompt: binding "
        "{steps.c.answer} reads step 'c', which this workflow does not have; its steps: a"
    )
    (directory / "workflows.toml").write_text(
        '[workflows.w.steps.a]\nprompt = "go"\n', encoding="utf-8"
    )
    found = workflows.read(load()).workflows["w"]
    assert found.origin.path == str(directory / "workflows.toml")
    result = invoke("config", "validate")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.endswith(" in 6 files\n")  # the five shipped, and this one


CASES = [
    pytest.param(
        "/etc/*",
        "files '/etc/*' is not relative: a pattern is matched inside the project root, with / "
        'between directories, such as { files = "src/**/*.py" }',
        id="absolute",
    ),
    pytest.param(
        "~/notes/*.md",
        "files '~/notes/*.md' is not relative: a pattern is matched inside the project root, "
        'with / between directories, such as { files = "src/**/*.py" }',
        id="home",
    ),
    pytest.param(
        "src\\\\*.py",
        "files 'src\\*.py' is not relative: a pattern is matched inside the project root, with "
        '/ between directories, such as { files = "src/**/*.py" }',
        id="backslash",
    ),
    pytest.param(
        "src/../../secrets/*",
        "files 'src/../../secrets/*' climbs out with '..': a pattern is matched inside the "
        'project root only, such as { files = "src/**/*.py" }',
        id="dot-dot",
    ),
    pytest.param(
        " ",
        'files is empty: give a pattern of the project\'s files, such as { files = "src/**/*.py" }',
        id="empty",
    ),
]


@pytest.mark.parametrize(("pattern", "message"), CASES)
def test_a_files_pattern_that_leaves_the_project_is_an_early_error(
    conf: Path, pattern: str, message: str
) -> None:
    text = step(f'prompt = "{{item}}"\nfor_each = {{ files = "{pattern}" }}\n')
    assert workflow_problems(conf, text) == [f"error: 7:1: workflows.w.steps.s.for_each: {message}"]


def test_files_must_be_a_string_and_the_table_hold_nothing_else(conf: Path) -> None:
    text = step('prompt = "{item}"\nfor_each = { files = 3 }\n') + (
        '[workflows.w.steps.t]\nprompt = "{item}"\nfor_each = { files = "*.py", limit = 3 }\n'
    )
    assert workflow_problems(conf, text) == [
        "error: 7:1: workflows.w.steps.s.for_each: files must be a pattern (a string), such as "
        '{ files = "src/**/*.py" }, not an integer',
        "error: 10:1: workflows.w.steps.t.for_each: must be a JMESPath expression, such as "
        '"steps.plan.value.files", an array of strings (the elements themselves), or { files = '
        '"GLOB" } (the project\'s files it matches), not a table',
    ]


def test_a_good_files_pattern_is_kept_on_the_step(conf: Path) -> None:
    from start.config import workflows
    from start.config.load import load

    text = step('prompt = "Review {item}"\nfor_each = { files = "src/**/*.py" }\n')
    assert workflow_problems(conf, text) == []
    found = workflows.read(load()).workflows["w"].step("s")
    assert (found.for_each, found.upstream) == (Files("src/**/*.py"), ())


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project root with files, hidden ones, a symlink inside it and an outside directory."""
    root = tmp_path / "project"
    write_tree(
        root,
        {
            "README.md": "",
            "src/b.py": "",
            "src/a.py": "",
            "src/sub/c.py": "",
            "src/sub/deeper/d.py": "",
            "src/.hidden.py": "",
            "src/.cache/e.py": "",
            "src/notes.txt": "",
        },
    )
    (root / "src" / "dir.py").mkdir()  # a directory is never an element
    (root / "src" / "link.py").symlink_to("a.py")  # inside the root: its own path is the element
    write_tree(tmp_path / "outside", {"secret.py": "", "deep/x.py": ""})
    return root


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("src/*.py", ("src/a.py", "src/b.py", "src/link.py")),
        (
            "src/**/*.py",
            ("src/a.py", "src/b.py", "src/link.py", "src/sub/c.py", "src/sub/deeper/d.py"),
        ),
        (
            "src/**",
            (
                "src/a.py",
                "src/b.py",
                "src/link.py",
                "src/notes.txt",
                "src/sub/c.py",
                "src/sub/deeper/d.py",
            ),
        ),
        ("**/c.py", ("src/sub/c.py",)),
        ("src/**/**/d.py", ("src/sub/deeper/d.py",)),
        ("src/.*.py", ("src/.hidden.py",)),
        ("src/.cache/*.py", ("src/.cache/e.py",)),
        ("./src/sub/c.py", ("src/sub/c.py",)),
        ("README.md", ("README.md",)),
        ("src/[ab].py", ("src/a.py", "src/b.py")),
        ("nowhere/*.py", ()),
        ("src/a.py/*", ()),
    ],
)
def test_files_are_matched_in_the_root_sorted(
    tree: Path, pattern: str, expected: tuple[str]
) -> None:
    assert matched(pattern, str(tree)) == expected


def test_a_symlink_out_of_the_root_is_refused_not_matched(tree: Path) -> None:
    outside = tree.parent / "outside"
    (tree / "src" / "evil.py").symlink_to(outside / "secret.py")
    with pytest.raises(FilesError) as raised:
        matched("src/*.py", str(tree))
    assert str(raised.value) == (
        f"for_each files 'src/*.py' matches src/evil.py, which leads outside the project root "
        f"(to {outside / 'secret.py'}) through a symlink; start does not follow it"
    )


def test_a_directory_symlink_out_of_the_root_is_not_walked_and_refused_when_named(
    tree: Path,
) -> None:
    outside = tree.parent / "outside"
    (tree / "src" / "out").symlink_to(outside)
    # `**` enters no symlinked directory, so the walk never leaves the root.
    assert "src/out/deep/x.py" not in matched("src/**/*.py", str(tree))
    for pattern in ("src/out/*.py", "src/*/secret.py"):
        with pytest.raises(FilesError) as raised:
            matched(pattern, str(tree))
        assert str(raised.value) == (
            f"for_each files '{pattern}' matches src/out, which leads outside the project root "
            f"(to {outside}) through a symlink; start does not follow it"
        )


def test_more_files_than_the_cap_is_an_error(tree: Path) -> None:
    assert len(matched("src/**/*.py", str(tree), cap=5)) == 5
    with pytest.raises(FilesError) as raised:
        matched("src/**/*.py", str(tree), cap=4)
    assert str(raised.value) == (
        "for_each files 'src/**/*.py' matches more than 4 files; a step runs for at most 4: "
        "narrow the pattern"
    )


CONFIG = f"""
[settings]
default_agent = "fake"

{agent("fake")}

[workflows.files.steps.review]
prompt = "Review {{item}}"
for_each = {{ files = "src/**/*.py" }}

[workflows.files.steps.sum]
prompt = "Sum up {{steps.review.answer}}"
"""


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    write_tree(isolated, {"src/b.py": "", "src/a.py": "", "src/sub/c.py": "", "docs/x.py": ""})
    return isolated


@pytest.mark.slow
def test_a_run_reviews_each_file_by_its_relative_path_in_order(project: Path) -> None:
    # From a subdirectory: the pattern is matched in the project root all the same.
    done = run_start("workflow", "run", "files", "--json", cwd=project / "docs", timeout=120)
    assert done.returncode == 0, done.stderr
    found = {s["name"]: (s["state"], s["answer"]) for s in json.loads(done.stdout)["steps"]}
    answers = ["ANSWER: Review src/a.py", "ANSWER: Review src/b.py", "ANSWER: Review src/sub/c.py"]
    assert found["review"] == ("succeeded", answers)
    assert found["sum"] == (
        "succeeded",
        f"ANSWER: Sum up {json.dumps(answers, separators=(',', ':'))}",
    )
    shown = run_start("workflow", "run", "files", "--dry-run", cwd=project)
    assert "  review: prompt; agent fake; output text; for each file of src/**/*.py" in (
        shown.stdout.splitlines()
    )
    data = json.loads(
        run_start("workflow", "run", "files", "--dry-run", "--json", cwd=project).stdout
    )
    assert data["steps"][0]["for_each"] == {"files": "src/**/*.py"}


@pytest.mark.slow
def test_a_run_with_a_hostile_symlink_fails_the_step_and_runs_no_agent(project: Path) -> None:
    secret = project.parent / "secret.py"
    secret.write_text("TOKEN=1\n", encoding="utf-8")
    (project / "src" / "evil.py").symlink_to(secret)
    done = run_start("workflow", "run", "files", "--json", cwd=project, timeout=120)
    assert done.returncode == 1, done.stderr
    record = json.loads(done.stdout)
    reason = (
        "step 'review' did not run: for_each files 'src/**/*.py' matches src/evil.py, which "
        f"leads outside the project root (to {secret}) through a symlink; start does not follow it"
    )
    assert [(s["name"], s["state"], s["reason"]) for s in record["steps"]] == [
        ("review", "failed", reason),
        ("sum", "stopped", f"step 'review' failed: {reason}"),
    ]
    # No element item was made, so no agent ran.
    listed = json.loads(run_start("board", "--all", "--json", cwd=project).stdout)
    assert sorted(item["title"] for item in listed) == [
        "files / review",
        "files / sum",
        "workflow files",
    ]


def test_the_guide_examples_are_valid(conf: Path) -> None:
    """docs/workflows.md's first TOML example (a task and a workflow), with the agents it names,
    has no problem; its example of an early error has exactly the problem the page shows."""
    import re

    from tests.conftest import REPO

    guide = (REPO / "docs" / "workflows.md").read_text(encoding="utf-8")
    examples = re.findall(r"```toml\n(.*?)```", guide, re.S)
    # The tests' TASKS define claude.
    agents = '[agents.codex]\nbin = "codex"\ncommand = "{bin} {prompt}"\n'
    assert workflow_problems(conf, agents + examples[0]) == []
    assert workflow_problems(conf, examples[-1]) == [
        "error: 6:28: workflows.fix.steps.review.prompt: binding {steps.plam.answer} reads step "
        "'plam', which this workflow does not have; its steps: plan (did you mean 'plan'?)"
    ]
    assert (
        "workflows.toml:6:28: error: workflows.fix.steps.review.prompt: binding "
        "{steps.plam.answer} reads step 'plam', which this workflow does not have; its steps: "
        "plan (did you mean 'plan'?)\n"
    ) in guide
