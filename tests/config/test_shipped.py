"""Every shipped file under config/ passes the product's own validation, without warnings."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from start.base import paths
from start.config.files import LAYER_FILES
from start.config.load import load
from tests.conftest import REPO, invoke


def test_shipped_config_is_the_builtin_layer() -> None:
    assert Path(paths.builtin_config_dir()) == REPO / "config"


def test_shipped_config_has_no_problems() -> None:
    # As `config validate` loads it: every check, the agents' command templates lexed too (a
    # launch leaves that to this test, see `start.config.load.load`).
    config = load(layers=("built-in",), use_cache=False)
    assert [str(p) for p in config.problems] == []
    assert {Path(f.path).name for f in config.files} == {
        p.name for p in (REPO / "config").glob("*.toml")
    }


def test_every_shipped_file_is_a_layer_file() -> None:
    for path in (REPO / "config").glob("*.toml"):
        assert path.name in LAYER_FILES


def test_config_validate_passes_on_shipped_defaults_in_an_empty_project(isolated: Path) -> None:
    result = invoke("config", "validate")
    assert (result.exit_code, result.stdout) == (0, "✓ 0 errors, 0 warnings in 5 files\n")


def test_starter_items_exist() -> None:
    config = load(layers=("built-in",))
    assert {"claude", "gemini", "codex", "aider", "llm"} <= set(config.agents)
    assert "code-reviewer" in config.roles
    gdr = config.tasks["git-diff-review"]
    assert (gdr.alias, gdr.role, gdr.shell) == ("gdr", "code-reviewer", "sh")
    assert gdr.command == (
        "git rev-parse --is-inside-work-tree >/dev/null 2>&1 || "
        '{ echo "not a git repository: run this task inside one" >&2; exit 1; }\n'
        "git diff --staged\n"
    )
    assert gdr.if_no_output == "nothing is staged: stage changes with 'git add' first"


def test_shipped_agents_leave_the_model_to_the_cli_and_handle_large_prompts() -> None:
    from start.proc.argv import required

    for agent in load(layers=("built-in",)).agents.values():
        assert agent.default_model is None, agent.name
        assert "model" not in required(agent.command), agent.name
        if "prompt" in required(agent.command):
            assert agent.large_prompt is not None, agent.name


@pytest.mark.slow
def test_wheel_ships_the_config_the_docs_and_project_urls(tmp_path: Path) -> None:
    """The built wheel holds config/ as start/_builtin, the lowest layer, docs/ as start/_docs
    for `start help TOPIC`, and Project-URLs in its metadata."""
    import subprocess
    import sys

    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for path in (REPO / "config").glob("*.toml"):
        assert f"start/_builtin/{path.name}" in names
    for document in ("global", "project"):
        assert f"start/setup/starter/{document}.toml" in names
    from start.cli import TOPICS

    for topic in TOPICS:
        assert f"start/_docs/{topic}.md" in names
    [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
    urls = [
        line.split(": ", 1)[1]
        for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
        if line.startswith("Project-URL: ")
    ]
    assert [url.split(", ", 1)[0] for url in urls] == [
        "Homepage",
        "Documentation",
        "Repository",
        "Issues",
    ]
