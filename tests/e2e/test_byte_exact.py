"""Property: any role and prompt text reaches the agent byte-exact, on both exec paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FAKE_AGENT, REPO

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow


# Arbitrary text without NUL (no argv can hold one) and without lone surrogates (not UTF-8).
TEXT = st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), min_size=1
)
HOSTILE = st.sampled_from(
    [
        "'",
        '"',
        "$(touch pwned)",
        "`id`",
        "; rm -rf x",
        "\n",
        "--flag",
        "-",
        "{prompt}",
        "{{",
        "}}",
        "\\",
        "ünï 中文 🚀",
        "$HOME",
        "*",
        "~",
        "'\"'\"'",
        "\r\n",
        " ",
    ]
)
# A value that starts with '-' is refused where it would be an argument of its own before '--'
# (tests/proc/test_argv.py): every other value arrives byte-exact.
VALUE = (
    st.lists(st.one_of(TEXT, HOSTILE), min_size=1, max_size=6)
    .map("".join)
    .filter(lambda value: not value.startswith("-"))
)

DIRECT = "{bin} --model {model} --append-system-prompt '{role}' '{prompt}' \"{prompt}\" {prompt}"
SHELL = "{bin} --append-system-prompt '{role}' '{prompt}' \"{prompt}\" {prompt} && true"


def launch(template: str, role: str, prompt: str) -> list[str]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / ".git").mkdir()
        (root / "global").mkdir()
        (root / "role.md").write_bytes(role.encode())
        (root / "global" / "config.toml").write_text(
            '[roles.r]\nfile = "role.md"\n'
            f'[agents.fake]\nbin = "{FAKE_AGENT}"\ncommand = {json.dumps(template)}\n'
            'default_model = "m"\n[agents.fake.models]\nm = "model-id"\n',
            encoding="utf-8",
        )
        record = root / "record.json"
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "FAKE_AGENT_RECORD": str(record),
            "START_CONFIG_DIR": str(root / "global"),
        }
        proc = subprocess.run(
            [sys.executable, "-m", "start", "prompt", "-q", "-a", "fake", "-r", "r", "-"],
            cwd=root,
            env=env,
            input=prompt.encode(),
            capture_output=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        assert not (root / "pwned").exists()
        argv: list[str] = json.loads(record.read_text(encoding="utf-8"))["argv"]
        return argv


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(role=VALUE, prompt=VALUE)
def test_direct_path_is_byte_exact(role: str, prompt: str) -> None:
    assert launch(DIRECT, role, prompt) == [
        "--model",
        "model-id",
        "--append-system-prompt",
        role,
        prompt,
        prompt,
        prompt,
    ]


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(role=VALUE, prompt=VALUE)
def test_shell_operator_path_is_byte_exact(role: str, prompt: str) -> None:
    assert launch(SHELL, role, prompt) == ["--append-system-prompt", role, prompt, prompt, prompt]
