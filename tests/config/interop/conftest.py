"""Fixture libraries of other agents' commands (tests/fixtures/interop), laid out as each CLI
keeps them, and a launch that composes one of their tasks."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from start.compose import pipeline
from start.compose.ask import Ask
from start.proc import shell
from start.proc.shell import CommandResult, CommandSpec
from tests.conftest import REPO, write_tree

FIXTURES = REPO / "tests" / "fixtures" / "interop"

GLOBAL = """\
[settings]
default_agent = "fake"

[agents.fake]
bin = "true"
command = "{bin} {prompt}"
"""

# Commands the fixture trees can run for real; the others (git, gh) get a stand-in output that
# is the golden files' marker, `<<SHELL_OUTPUT: COMMAND>>`.
DETERMINISTIC = ("cat ", "grep ", "printf ")


def marker(command: str) -> str:
    return f"<<SHELL_OUTPUT: {command}>>"


def runner(specs: Sequence[CommandSpec]) -> list[CommandResult]:
    """Runs the deterministic commands with start.proc.shell; stands in for the others."""
    real = [spec for spec in specs if spec.command.startswith(DETERMINISTIC)]
    done = iter(shell.run_all(real)) if real else iter(())
    results = []
    for spec in specs:
        if spec.command.startswith(DETERMINISTIC):
            results.append(next(done))
            continue
        text = marker(spec.command)
        stdout = text if spec.separate else ""
        results.append(CommandResult(spec, (), 0, False, text, stdout, "", 0, 0.0, None))
    return results


Layout = Callable[[str], Path]


@pytest.fixture
def layout(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """Lay out a format's fixture: its `home/` as the home directory, the rest as the project
    (Codex: `project/`), trusted by START_TRUSTED_PATHS; returns the project root."""

    def make(form: str) -> Path:
        source = FIXTURES / form
        home = Path.home()
        if (source / "home").is_dir():
            shutil.copytree(source / "home", home, dirs_exist_ok=True)
        project = source / "project" if form == "codex" else source
        shutil.copytree(
            project, isolated, dirs_exist_ok=True, ignore=shutil.ignore_patterns("home")
        )
        write_tree(home / ".config" / "start", {"config.toml": GLOBAL})
        (isolated / ".git").mkdir(exist_ok=True)
        monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
        return isolated

    return make


def compose(
    workdir: Path,
    task: str,
    instructions: str | None = None,
    params: tuple[tuple[str, str], ...] = (),
    run: Callable[[Sequence[CommandSpec]], list[CommandResult]] = runner,
) -> pipeline.Prepared:
    """`start task TASK INSTRUCTIONS -p ...` up to the composed prompt (no agent is built)."""
    request = Ask(
        "task",
        task=task,
        no_role=True,
        instructions=instructions if instructions and instructions.strip() else None,
        params=dict(params),
        directory=str(workdir),
    )
    return pipeline.prepare(request, run, build=False)
