"""Nothing the user paid for is lost (issue 38): what can be checked is checked before any agent
starts, a missing agent fails alone, and an answer that arrived is printed and recorded
whatever happens next."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_print import CONFIG, start
from tests.conftest import REPO, read_pids, running, wait_gone, write_tree
from tests.fake_headless import agent


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """test_print's: a trusted git repository, the fake agents in the global config."""
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


GHOST = f"""
{agent("ghost")}
"""


def _with_ghost(project: Path) -> None:
    """A third agent, `ghost`, whose binary is not installed."""
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(config.read_text() + GHOST.replace(sys.executable, "/nonexistent/ghost-cli"))


def _history(project: Path) -> list[dict[str, object]]:
    found = start(project, "log", "--json")
    assert found.returncode == 0, found.stderr
    runs: list[dict[str, object]] = json.loads(found.stdout)
    return runs


def test_an_output_path_that_is_a_file_is_refused_before_any_agent_runs(project: Path) -> None:
    record = project.parent / "record.json"
    taken = project.parent / "afile"
    taken.write_text("mine\n")
    result = start(
        project, "prompt", "--print", "-a", "fake,json", "--output", str(taken), "hi",
        FAKE_RECORD=str(record),
    )  # fmt: skip
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        f"start: --output {taken}: it is not a directory; name a directory for the answers "
        "(start makes it when it is missing)\n",
    )
    assert not record.exists()  # no agent started
    assert taken.read_text() == "mine\n"
    assert _history(project) == []


def test_one_agent_writes_the_same_files_as_several(project: Path) -> None:
    out = project.parent / "answers"
    result = start(project, "prompt", "--print", "--output", str(out), "hi")
    assert (result.returncode, result.stdout) == (0, "ANSWER: hi\n")
    assert sorted(os.listdir(out)) == ["fake.md", "summary.json"]
    assert (out / "fake.md").read_text() == "ANSWER: hi"
    (summary,) = json.loads((out / "summary.json").read_text())
    assert (summary["file"], summary["agent"], summary["answer"]) == (
        "fake.md",
        "fake",
        "ANSWER: hi",
    )


def test_a_failed_write_costs_no_answer(project: Path) -> None:
    """The output directory is taken away while the agents run: every answer is still printed
    and recorded, and the exit status says the write failed."""
    out = project.parent / "answers"
    gone = f"import os, shutil; shutil.rmtree({str(out)!r}); open({str(out)!r}, 'w').close()"
    result = start(
        project, "prompt", "--print", "-a", "fake,fake", "--output", str(out), "hi",
        FAKE_BEFORE=f"os.path.isdir({str(out)!r}) and ({gone!r} and exec({gone!r}))",
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stdout == "## fake\n\nANSWER: hi\n\n## fake\n\nANSWER: hi\n"
    assert result.stderr.endswith(
        f"start: cannot write the answers to {out}: Not a directory; they are printed above and "
        "kept in the history ('start log show')\n"
    )
    assert len(_history(project)) == 2


def test_a_missing_agent_among_several_fails_alone(project: Path) -> None:
    _with_ghost(project)
    result = start(project, "prompt", "--print", "-a", "fake,ghost", "--json", "hi")
    assert result.returncode == 127  # every agent that failed is not installed
    fake, ghost = json.loads(result.stdout)
    assert (fake["agent"], fake["success"], fake["answer"]) == ("fake", True, "ANSWER: hi")
    assert (ghost["agent"], ghost["success"], ghost["exit_code"], ghost["state"]) == (
        "ghost",
        False,
        127,
        "failed",
    )
    assert ghost["error"].startswith("agent 'ghost': '/nonexistent/ghost-cli' does not exist.")
    text = start(project, "prompt", "--print", "-a", "fake,ghost", "hi")
    assert text.stdout.startswith("## fake\n\nANSWER: hi\n\n## ghost\n\n(no answer: agent 'ghost'")
    assert [(run["agent"], run["state"]) for run in _history(project)][:2] == [
        ("ghost", "failed"),
        ("fake", "ok"),
    ]
    alone = start(project, "prompt", "--print", "-a", "ghost", "hi")
    assert (alone.returncode, alone.stdout) == (127, "")


def test_again_replaces_the_runs_options_and_never_piles_them_up(project: Path) -> None:
    write_tree(project, {"a.md": "A", "b.md": "B"})
    record = project.parent / "record.json"
    assert start(project, "prompt", "-qc", "a.md", "--print", "hi").returncode == 0
    first = start(project, "again", "-c", "b.md", FAKE_RECORD=str(record))
    assert first.returncode == 0, first.stderr
    prompt = json.loads(record.read_text())["argv"][-1]
    assert "B" in prompt and "A" not in prompt.replace("ANSWER", "")
    for _ in range(2):
        assert start(project, "again", "--print").returncode == 0
    latest = _history(project)[0]
    assert latest["args"] == ["prompt", "hi", "-c", "b.md", "-q", "--print"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_keeps_the_answer_that_had_arrived(project: Path, signum: int) -> None:
    """Ctrl-C (or SIGTERM) during `-a slow,fast` after `fast` answered: its answer is printed
    and recorded, the interrupted run is recorded as interrupted, and nothing is left running."""
    from tests.cli.test_print import agents_config

    config = project.parent / "home" / ".config" / "start" / "config.toml"
    pids = project.parent / "pids"
    slow = f"FAKE_MODE=slow FAKE_SECONDS=300 FAKE_PIDS={pids}"
    fast = f"FAKE_MODE=slow FAKE_SECONDS=0 FAKE_PIDS={pids}"
    config.write_text(agents_config(project.parent, {"slow": slow, "fast": fast}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runner = subprocess.Popen(
        [sys.executable, "-m", "start", "-q", "prompt", "--print", "-a", "slow,fast", "hi"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        agents = read_pids(Path(f"{pids}.slow"))
        fast_agent, _ = read_pids(Path(f"{pids}.fast"))
        assert wait_gone([fast_agent]) == []  # the fast one has answered and exited
        runner.send_signal(signum)
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == (130 if signum == signal.SIGINT else 128 + signum), err
    assert out.startswith("## slow\n\n(no answer: stopped by SIG")
    assert out.endswith("## fast\n\nfast is thinking\nANSWER: hi from fast\n")
    found = _history(project)
    assert [(run["agent"], run["state"]) for run in found] == [
        ("fast", "ok"),
        ("slow", "interrupted"),
    ]
    assert [pid for pid in agents if running(pid)] == []
