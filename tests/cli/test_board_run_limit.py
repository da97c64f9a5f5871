"""`start board run` stops an agent that prints more than settings.print_answer_limit as soon as
it has, as `--print` does (issue 44): the item fails with the reason."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import read_pids, run_start, wait_gone, write_tree
from tests.fake_headless import agent

CONFIG = f"""
[settings]
default_agent = "fake"
print_answer_limit = 1048576

{agent("fake")}
"""


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def test_an_item_whose_agent_prints_past_the_limit_fails_and_its_agent_is_stopped(
    project: Path, survivors: list[int]
) -> None:
    """The stand-in goes on after printing 2 MiB (it would finish 300 s on): the run ends once it
    is past the limit, and its group with it."""
    pids = project.parent / "pids"
    assert run_start("board", "add", "Big", "--prompt", "hi", cwd=project).returncode == 0
    ran = run_start(
        "board", "run", "--until-empty", cwd=project,
        env={"FAKE_MODE": "huge", "FAKE_MIB": "2", "FAKE_PIDS": str(pids)},
    )  # fmt: skip
    survivors.extend(read_pids(pids))
    assert wait_gone(survivors) == []
    assert not Path(f"{pids}.finished").exists()
    reason = (
        "printed more than settings.print_answer_limit (1 MiB) allows, so it was stopped and its "
        "answer was not read; raise the limit to read such answers"
    )
    assert ran.returncode == 1
    shown = run_start("board", "show", "1", "--json", cwd=project)
    item = json.loads(shown.stdout)
    assert (item["status"], item["reason"], item["answer"]) == ("failed", reason, None)
    assert f"start ✗ item-1 failed: {reason}" in ran.stderr.splitlines()
    logged = json.loads(
        run_start("log", "show", str(item["history"]), "--json", cwd=project).stdout
    )
    assert (logged["state"], logged["exit_code"], logged["error"]) == ("failed", None, reason)
