"""Usage through a real agent CLI: `llm` with the echo model reports the tokens of each prompt in
its `--json` record, and `start log --usage` sums what llm itself logged (issue 49)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_start, write_tree

pytestmark = pytest.mark.slow

LLM = shutil.which("llm", path=str(Path(sys.executable).parent)) or shutil.which("llm")


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
def test_log_usage_sums_the_tokens_llm_logged(isolated: Path, tmp_path: Path) -> None:
    assert LLM is not None
    home = tmp_path / "home"
    write_tree(home / ".config" / "start", {"config.toml": ""})
    env = {
        "HOME": str(home),
        "LLM_USER_PATH": str(tmp_path / "llm"),
        "PATH": os.pathsep.join([str(Path(LLM).parent), os.environ["PATH"]]),
    }
    ids = []
    for words in ("count these words", "and these, which are a few more words than before"):
        ran = run_start(
            "-q", "prompt", "--print", "--json", "-a", "llm", "-m", "echo", words,
            cwd=isolated, env=env,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        ids.append(json.loads(ran.stdout)["id"])
    logged = json.loads(
        subprocess.run(
            [LLM, "logs", "--json", "-n", "0"],
            env={**os.environ, **env}, capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    into = sum(entry["input_tokens"] for entry in logged)
    out = sum(entry["output_tokens"] for entry in logged)
    assert len(logged) == 2 and into > 0 and out > 0
    for run, entry in zip(ids, sorted(logged, key=lambda e: e["datetime_utc"]), strict=True):
        shown = run_start("log", "show", str(run), "--no-pager", cwd=isolated, env=env)
        tokens = (
            f"usage        {entry['input_tokens']:,} tokens in, {entry['output_tokens']:,} out\n"
        )
        assert tokens in shown.stdout, shown.stdout
    summed = run_start("log", "--usage", "--json", cwd=isolated, env=env)
    assert summed.returncode == 0, summed.stderr
    total = json.loads(summed.stdout)["total"]
    assert (total["runs"], total["reported"]) == (2, 2)
    assert (total["input_tokens"], total["output_tokens"], total["cost_usd"]) == (into, out, None)
