"""`python -m start` and the `start` script share one entry point, which turns the cyclic garbage
collector off: a launch is short-lived and ends in exec (docs/performance.md)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO, invoke, write_tree

# Runs start as `python -m start` does, with os.execve reporting the collector instead of exec'ing.
DRIVER = """
import gc, os, runpy, sys
def report(binary, argv, env):
    print("exec", os.path.basename(binary), "gc enabled:", gc.isenabled(), flush=True)
    os._exit(0)
os.execve = report
sys.argv = ["start", *sys.argv[1:]]
runpy.run_module("start", run_name="__main__", alter_sys=True)
"""

CONFIG = """
[settings]
default_agent = "stand-in"

[agents.stand-in]
bin = "true"
command = "{bin} {prompt}"

[contexts.greeting]
required = true
command = "echo hi"

[tasks.t]
prompt = "Review: {instructions}"
"""


@pytest.mark.parametrize("args", [("-q", "task", "t", "x"), ("prompt", "x"), ()])
def test_a_launch_reaches_exec_with_the_collector_off(
    args: tuple[str, ...], isolated: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    write_tree(config, {"config.toml": CONFIG})
    env = {
        **os.environ,
        "START_CONFIG_DIR": str(config),
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, *args],
        cwd=isolated,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (0, "exec true gc enabled: False\n"), proc.stderr


def test_the_installed_script_uses_the_same_entry_point() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"] == {"start": "start.__main__:run"}


def test_start_mcp_turns_the_collector_back_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server runs as long as its client, so it collects cycles again."""
    pytest.importorskip("mcp")
    from start.mcp import server

    seen: list[bool] = []

    def serve(scope: object) -> None:
        seen.append(gc.isenabled())

    monkeypatch.setattr(server, "serve", serve)
    gc.disable()
    try:
        result = invoke("mcp")
    finally:
        gc.enable()
    assert (result.exit_code, seen) == (0, [True]), result.stderr
