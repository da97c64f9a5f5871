"""`main()`, the error boundary: internal errors, tracebacks, Ctrl-C and a reader that goes away."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from start.base.errors import EXIT_CODE_TABLE
from start.cli import main
from tests.conftest import REPO, Result, write_tree


def run_main(*args: str) -> Result:
    """Like tests.conftest.invoke, but an internal error is what these tests look for."""
    runner = CliRunner()
    with runner.isolation() as (out, err, _):
        try:
            main(list(args))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        sys.stdout.flush()
        sys.stderr.flush()
        return Result(code, out.getvalue().decode(), err.getvalue().decode())


@pytest.fixture
def bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the code `start config path` runs."""

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("layers")

    from start.config import load as config_load  # the module start/cli/config.py calls

    monkeypatch.setattr(config_load, "load", broken)


def test_an_internal_error_is_one_line_and_exit_70(bug: None) -> None:
    result = run_main("config", "path")
    assert (result.exit_code, result.stdout) == (70, "")
    assert result.stderr == (
        "start: internal error: KeyError: 'layers'\n"
        "hint: set START_DEBUG=1 (or pass --debug) to see the traceback\n"
    )


@pytest.mark.parametrize("how", ["START_DEBUG=1", "--debug"])
def test_debug_shows_the_traceback(bug: None, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if how == "--debug":
        result = run_main("--debug", "config", "path")
    else:
        monkeypatch.setenv("START_DEBUG", "1")
        result = run_main("config", "path")
    assert result.exit_code == 70
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert "in broken\n" in result.stderr
    assert result.stderr.endswith("KeyError: 'layers'\nstart: internal error: KeyError: 'layers'\n")


def test_debug_shows_the_traceback_of_any_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("START_DEBUG", "1")
    result = run_main("task", "no-such-task")
    assert result.exit_code == 4
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert result.stderr.endswith(
        "start: unknown task 'no-such-task'; known tasks: "
        "cm, commit-message, gate, gdr, git-diff-review, h, help, plan-fix, triage\n"
    )


def test_the_exit_code_table_has_the_documented_rows() -> None:
    codes = [code for code, _ in EXIT_CODE_TABLE]
    assert codes == [0, 1, 2, 3, 4, 5, 6, 65, 69, 70, 75, 124, 126, 127, 129, 130, 143]
    usage = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")
    for code in codes:
        assert f"\n| {code} | " in usage


# `python -m start` on a Python without fcntl, as on a system that is not POSIX.
_NO_FCNTL = """
import runpy, sys
sys.modules["fcntl"] = None
sys.argv = ["start", *sys.argv[1:]]
runpy.run_module("start", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("args", [(), ("init",), ("config", "path")])
def test_without_fcntl_start_says_it_needs_posix_in_one_line(
    args: tuple[str, ...], isolated: Path
) -> None:
    config = '[agents.a]\nbin = "true"\ncommand = "{bin} {prompt}"\n'
    config += '[contexts.c]\nrequired = true\ncommand = "echo hi"\n'
    proc = subprocess.run(
        [sys.executable, "-c", _NO_FCNTL, *args],
        cwd=isolated,
        env=_environment(isolated, config),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        69,
        "",
        "start: needs a POSIX system (Linux, macOS); this Python has no fcntl module\n",
    )


def test_on_a_system_that_is_not_posix_start_says_so_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "name", "nt")
    monkeypatch.setattr(sys, "platform", "win32")
    result = run_main("--version")
    assert (result.exit_code, result.stdout, result.stderr) == (
        69,
        "",
        "start: needs a POSIX system (Linux, macOS); this is win32\n",
    )


def _environment(isolated: Path, config: str) -> dict[str, str]:
    directory = isolated.parent / "config"
    write_tree(directory, {"config.toml": config})
    env = {**os.environ, "START_CONFIG_DIR": str(directory)}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_ctrl_c_exits_130_and_leaves_no_command_running(isolated: Path) -> None:
    started = isolated / "started"
    env = _environment(
        isolated,
        '[agents.a]\nbin = "true"\ncommand = "{bin} {prompt}"\n'
        f'[contexts.slow]\ncommand = "touch {started}; sleep 30"\nprompt = "{{command_output}}"\n',
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "start", "--dry-run"],
        cwd=isolated,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert (proc.returncode, stdout, stderr) == (130, "", "\nstart: interrupted\n")


def test_a_reader_that_goes_away_stops_start_quietly(isolated: Path) -> None:
    """`start task | head -1`, with more output than a pipe holds."""
    many = "".join(
        f'[tasks.t{i}]\ndescription = "{"a rather long description " * 4}"\nprompt = "p"\n'
        for i in range(1500)
    )
    env = _environment(isolated, many)
    command = f"'{sys.executable}' -m start task | head -1; echo \"status ${{PIPESTATUS[0]}}\""
    result = subprocess.run(
        ["bash", "-c", command], cwd=isolated, env=env, capture_output=True, text=True, timeout=120
    )
    header, status = result.stdout.splitlines()
    assert header.split() == ["TASK", "ALIAS", "DESCRIPTION", "LAYER"]
    assert status == "status 0"  # the reader chose to stop: no failure for `set -o pipefail`
    assert result.stderr == ""


def test_start_debug_is_debug(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """START_DEBUG=1 shows the internals --debug shows: selection reasoning and timings."""
    write_tree(
        isolated.parent / "home/.config/start",
        {"config.toml": '[agents.a]\nbin = "true"\ncommand = "{bin} {prompt}"\n'},
    )
    flagged = run_main("--debug", "--dry-run").stdout
    monkeypatch.setenv("START_DEBUG", "1")
    implied = run_main("--dry-run").stdout
    for result in (flagged, implied):
        assert "\n  agent from    settings.default_agent" not in result
        assert "\n  agent from    " in result
        assert "\n  model from    " in result
        assert "\n  command       " in result

    # Each dry run keeps its files in a directory of its own.
    def same(text: str) -> str:
        return re.sub(r"dry-run-[^/;\s]+", "dry-run-X", text)

    assert same(flagged) == same(implied)
