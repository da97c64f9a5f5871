"""The tests' own isolation (tests/conftest.py): what the machine has installed never reaches a
test (issue 44: `make test` failed where an agent CLI was on PATH, which is where users run it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import LOOKED_UP, TESTS_PATH, _tests_path


def install(directory: Path, *names: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        program = directory / name
        program.write_text("#!/bin/sh\necho installed\n")
        program.chmod(0o755)


def test_every_agent_cli_of_the_catalog_and_go_task_and_start_are_looked_up() -> None:
    import tomllib

    catalog = tomllib.loads((Path(__file__).parents[1] / "config" / "agents.toml").read_text())
    bins = {agent["bin"] for agent in catalog["agents"].values()}
    assert {"claude", "codex", "gemini", "llm"} <= bins
    assert frozenset(bins | {"task", "start"}) == LOOKED_UP


def test_a_test_sees_no_agent_cli_whatever_the_machine_has(tmp_path: Path) -> None:
    assert os.environ["PATH"] == TESTS_PATH
    assert [name for name in sorted(LOOKED_UP) if shutil.which(name)] == []
    for needed in ("sh", "git"):
        assert shutil.which(needed) is not None, needed


def test_a_directory_with_agent_clis_is_seen_without_them(tmp_path: Path) -> None:
    agents, tools, only = tmp_path / "agents", tmp_path / "tools", tmp_path / "only-agents"
    install(agents, "claude", "llm", "task", "start", "helper")
    install(tools, "other")
    install(only, "codex", "gemini")
    path = _tests_path(os.pathsep.join([str(only), str(agents), "", "relative", str(tools)]))
    mirror, kept = path.split(os.pathsep)
    assert (kept, sorted(os.listdir(mirror))) == (str(tools), ["helper"])
    found = {name: shutil.which(name, path=path) for name in ("helper", "other", "claude", "codex")}
    assert found == {
        "helper": os.path.join(mirror, "helper"),
        "other": str(tools / "other"),
        "claude": None,
        "codex": None,
    }
    ran = subprocess.run(["helper"], env={"PATH": path}, capture_output=True, text=True)
    assert (ran.returncode, ran.stdout) == (0, "installed\n")


def test_every_catalog_cli_installed_leaves_the_tests_path_as_it_was(tmp_path: Path) -> None:
    """The issue's case: every catalog CLI (and go-task, and start) on the machine's PATH."""
    installed = tmp_path / "installed"
    install(installed, *sorted(LOOKED_UP))
    assert _tests_path(f"{installed}{os.pathsep}{os.environ['PATH']}") == os.environ["PATH"]
