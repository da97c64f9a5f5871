"""Exec through the real `start` in a subprocess: the agent gets the argv, env, files and signals."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FAKE_AGENT, dry, launch, run_start, write_tree

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

# --- exec, through a real subprocess ------------------------------------------------------


def test_gdr_launches_with_the_diff_embedded_byte_exact(repo: Path) -> None:
    diff_text = "x = '$(rm -rf /)' `id` \"q\" {instructions} ünï\n"
    (repo / "a.py").write_text(diff_text)
    subprocess.run(["git", "add", "a.py"], cwd=repo, check=True)
    expected_diff = subprocess.run(
        ["git", "diff", "--staged"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout
    proc, record = launch(repo, "task", "gdr", "focus on security")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    argv = record["argv"]
    assert argv[:3] == ["--model", "sonnet-x", "--append-system-prompt"]
    assert argv[3].startswith("You are a meticulous senior code reviewer.")
    assert "## Special Instructions\n\nfocus on security\n" in argv[4]
    assert f"```diff\n{expected_diff}\n```\n" in argv[4]
    assert record["cwd"] == str(repo)
    assert record["stdin"] == ""
    assert "start ▸ fake  model sonnet-x" in proc.stderr
    assert "  role          code-reviewer  (task 'git-diff-review')" in proc.stderr


@pytest.mark.parametrize("code", [0, 1, 7])
def test_exit_status_is_the_agents(repo: Path, code: int) -> None:
    proc, record = launch(repo, "prompt", "hi", FAKE_AGENT_EXIT=str(code))
    assert record is not None
    assert proc.returncode == code


def test_double_dash_passes_arguments_to_the_agent(repo: Path) -> None:
    proc, record = launch(repo, "task", "help", "how", "--", "--temperature", "0.2", "--", "-x")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    assert record["argv"][-4:] == ["--temperature", "0.2", "--", "-x"]
    assert record["argv"][4].endswith("Help me with: how")


def test_env_assignments_reach_the_agent(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                f'[agents.gem]\nbin = "{FAKE_AGENT}"\n'
                "command = \"GEMINI_SYSTEM_MD='{role_file}' {bin} '{prompt}'\"\n"
            )
        },
    )
    proc, record = launch(repo, "prompt", "-a", "gem", "-r", "code-reviewer", "hi")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    role_file = Path(record["env"]["GEMINI_SYSTEM_MD"])
    assert role_file.read_text().startswith("You are a meticulous senior code reviewer.")
    assert record["argv"] == ["hi"]


def test_role_file_of_a_file_only_role_is_the_original_path(repo: Path) -> None:
    write_tree(
        repo.parent / "home" / ".config" / "start",
        {
            "roles.toml": '[roles.terse]\nfile = "ROLE.md"\n',
            "agents.toml": (
                f'[agents.rf]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} --sys {{role_file}} {{prompt}}"\n'
            ),
        },
    )
    write_tree(repo, {"ROLE.md": "be terse\n"})
    data = dry("prompt", "-a", "rf", "-r", "terse", "hi")
    assert data["argv"][1:] == ["--sys", str(repo / "ROLE.md"), "hi"]


def test_project_role_file_is_a_copy_of_the_approved_bytes(repo: Path) -> None:
    write_tree(
        repo,
        {
            "ROLE.md": "be terse\n",
            ".start/config.toml": (
                '[roles.terse]\nfile = "ROLE.md"\n'
                f'[agents.rf]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} --sys {{role_file}} {{prompt}}"\n'
            ),
        },
    )
    proc, record = launch(repo, "prompt", "-a", "rf", "-r", "terse", "hi")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    copy = Path(record["argv"][1])
    assert copy != repo / "ROLE.md"
    assert copy.read_text() == "be terse\n"


def test_verbose_shows_the_command_line(repo: Path) -> None:
    proc, _ = launch(repo, "-v", "prompt", "it's")
    assert f"  command       {FAKE_AGENT} --model sonnet-x --append-system-prompt" in proc.stderr
    assert "'it'\"'\"'s'" in proc.stderr


def test_quiet_prints_no_summary(repo: Path) -> None:
    proc, record = launch(repo, "-q", "prompt", "hi")
    assert record is not None
    assert proc.stderr == ""


def test_debug_shows_reasons_and_timings(repo: Path) -> None:
    proc, _ = launch(repo, "--debug", "prompt", "hi")
    assert "  agent from    settings.default_agent" in proc.stderr
    assert "  timings       load " in proc.stderr


def test_shell_operator_template(repo: Path) -> None:
    out = repo.parent / "out.txt"
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                f'[agents.piped]\nbin = "{FAKE_AGENT}"\n'
                f'command = "{{bin}} \'{{prompt}}\' \\"{{role}}\\" > {out}"\n'
            )
        },
    )
    proc = run_start("prompt", "-a", "piped", "--no-role", "a 'b' $(c) `d`", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["argv"] == ["a 'b' $(c) `d`", ""]


def test_exec_restores_default_signal_handling(repo: Path) -> None:
    """SIGPIPE and SIGXFSZ are not ignored and no signal is blocked in the agent."""
    status = repo.parent / "status.txt"
    agent = repo.parent / "sig-agent.sh"
    agent.write_text(f"#!/bin/sh\nexec grep -E '^Sig(Ign|Blk):' /proc/self/status > {status}\n")
    agent.chmod(0o755)
    write_tree(
        repo,
        {".start/agents.toml": f'[agents.sig]\nbin = "{agent}"\ncommand = "{{bin}} {{prompt}}"\n'},
    )
    proc = run_start("prompt", "-q", "-a", "sig", "x", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    fields = dict(line.split(":\t") for line in status.read_text().splitlines())
    ignored, blocked = int(fields["SigIgn"], 16), int(fields["SigBlk"], 16)
    import signal

    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (number - 1)), f"{number} is ignored"
    assert blocked == 0


def test_stale_temp_files_are_swept(repo: Path) -> None:
    import time

    from start.proc.tempfiles import sweep

    runtime = repo.parent / "run" / "start"
    runtime.mkdir(mode=0o700)
    dead = runtime / "999999999-role-00000000.md"  # no such process
    old = runtime / f"{os.getpid()}-prompt-11111111.md"  # alive, but over a day old
    mine = runtime / f"{os.getpid()}-role-22222222.md"  # alive and fresh: kept
    for path in (dead, old, mine):
        path.write_text("x")
    day_ago = time.time() - 25 * 3600
    os.utime(old, (day_ago, day_ago))
    sweep(str(runtime))
    assert sorted(p.name for p in runtime.iterdir()) == [mine.name]


def test_a_launch_sweeps_files_of_finished_runs(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": f'[agents.pf]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} {{prompt_file}}"\n'
        },
    )
    first, record = launch(repo, "prompt", "-q", "-a", "pf", "one")
    assert first.returncode == 0 and record is not None
    left_behind = Path(record["argv"][0])
    assert left_behind.exists()  # the agent may still read it: exec leaves it in place
    second, record = launch(repo, "prompt", "-q", "-a", "pf", "two")
    assert second.returncode == 0 and record is not None
    assert not left_behind.exists()  # its process is gone, so the next run removed it
    assert Path(record["argv"][0]).read_text() == "two"
