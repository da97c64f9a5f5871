"""Whether the agent `start init` picks and `start doctor` checks can answer: llm's model and its
key, asked of the real llm (with llm-echo's echo and echo-needs-key models) under an isolated
HOME, and of a stand-in llm for the answers the real one does not give here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from start.config.load import load
from start.setup import readiness
from start.setup.readiness import Readiness
from tests.conftest import invoke, run_start, write_tree

LLM = shutil.which("llm", path=str(Path(sys.executable).parent)) or shutil.which("llm")
needs_llm = pytest.mark.skipif(LLM is None, reason="llm is a test dependency (test extras)")

ECHO_NEEDS_KEY = Readiness(
    False,
    "llm's default model, echo-needs-key, needs the 'echo-needs-key' key, and llm has none: a "
    "run fails with 'No key found'",
    "llm keys set echo-needs-key or set LLM_ECHO_NEEDS_KEY_KEY; or choose a model with a key: "
    "llm models default MODEL",
)


@pytest.fixture
def llm_home(isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """llm's own directory (its default model, its keys), and only llm on PATH."""
    assert LLM is not None
    bin_dir = tmp_path / "llm-bin"
    bin_dir.mkdir()
    (bin_dir / "llm").symlink_to(LLM)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    home = tmp_path / "llm-home"
    monkeypatch.setenv("LLM_USER_PATH", str(home))
    for name in ("OPENAI_API_KEY", "LLM_ECHO_NEEDS_KEY_KEY"):
        monkeypatch.delenv(name, raising=False)
    return home


def llm(*words: str) -> str:
    assert LLM is not None
    return subprocess.run([LLM, *words], check=True, capture_output=True, text=True).stdout


def of_llm(workdir: Path) -> Readiness | None:
    config = load(str(workdir), use_project=False)
    assert LLM is not None
    return readiness.of(config, "llm", LLM)


# --- the real llm ---------------------------------------------------------------------------


@pytest.mark.slow
@needs_llm
def test_a_model_without_its_key_then_with_it(
    llm_home: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm("models", "default", "echo-needs-key")
    assert of_llm(isolated) == ECHO_NEEDS_KEY
    monkeypatch.setenv("LLM_ECHO_NEEDS_KEY_KEY", "from the environment")
    assert of_llm(isolated) == Readiness(
        True, "llm's default model, echo-needs-key, has its key ($LLM_ECHO_NEEDS_KEY_KEY)"
    )
    monkeypatch.delenv("LLM_ECHO_NEEDS_KEY_KEY")
    llm("keys", "set", "echo-needs-key", "--value", "stored")
    assert of_llm(isolated) == Readiness(
        True, "llm's default model, echo-needs-key, has its key ('echo-needs-key', llm keys list)"
    )
    llm("models", "default", "echo")
    assert of_llm(isolated) == Readiness(True, "llm's default model, echo, needs no key")


@pytest.mark.slow
@needs_llm
def test_llms_own_default_model_needs_the_openai_key(llm_home: Path, isolated: Path) -> None:
    # What a new user meets: llm's shipped default, and no key.
    default = llm("models", "default").strip()
    assert of_llm(isolated) == Readiness(
        False,
        f"llm's default model, {default}, needs the 'openai' key, and llm has none: a run fails "
        "with 'No key found'",
        "llm keys set openai or set OPENAI_API_KEY; or choose a model with a key: "
        "llm models default MODEL",
    )


@pytest.mark.slow
@needs_llm
def test_a_model_start_passes_that_llm_does_not_know(llm_home: Path, isolated: Path) -> None:
    write_tree(
        isolated.parent / "home/.config/start",
        {
            "config.toml": '[agents.llm]\nbin = "llm"\ncommand = "{bin} prompt [-m {model}] '
            '{prompt}"\ndefault_model = "x"\n[agents.llm.models]\nx = "no-such-model"\n'
        },
    )
    assert of_llm(isolated) == Readiness(
        False,
        "llm does not know the model start passes llm, no-such-model: a run fails with "
        "'Unknown model'",
        "choose a model that llm lists (llm models list): -m MODEL, or the agent's default_model "
        "in your config",
    )


@pytest.mark.slow
@needs_llm
def test_init_says_why_llm_cannot_answer_and_doctor_says_it_too(
    llm_home: Path, isolated: Path
) -> None:
    # The first hour: llm alone installed, its default model without a key. `start init` picks
    # it; the first `start` would fail with "No key found": both commands say so now.
    llm("models", "default", "echo-needs-key")
    env = {"LLM_USER_PATH": str(llm_home), "PATH": os.environ["PATH"]}
    initialised = run_start("init", env=env, cwd=isolated)
    assert initialised.returncode == 0, initialised.stderr
    assert initialised.stderr.splitlines()[2:4] == [
        f"start: warning: llm cannot answer yet: {ECHO_NEEDS_KEY.message}",
        f"  fix: {ECHO_NEEDS_KEY.fix}",
    ]
    doctor = run_start("doctor", "-q", env=env, cwd=isolated)
    assert (doctor.returncode, doctor.stdout) == (
        1,
        f"  ✗ llm setup  {ECHO_NEEDS_KEY.message}\n      → {ECHO_NEEDS_KEY.fix}\n",
    )
    llm("keys", "set", "echo-needs-key", "--value", "stored")
    healthy = run_start("doctor", "-q", env=env, cwd=isolated)
    assert (healthy.returncode, healthy.stdout) == (0, "")
    answered = run_start("prompt", "--print", "-q", "hi", env=env, cwd=isolated)
    assert answered.returncode == 0, answered.stderr


@pytest.mark.slow
@needs_llm
def test_init_json_has_the_agents_setup(llm_home: Path, isolated: Path) -> None:
    llm("models", "default", "echo")
    result = run_start("init", "--json", env={"LLM_USER_PATH": str(llm_home)}, cwd=isolated)
    assert json.loads(result.stdout)["agent_setup"] == {
        "ok": True,
        "message": "llm's default model, echo, needs no key",
        "fix": None,
    }


# --- a stand-in llm: its answers, without llm's start-up -------------------------------------

STAND_IN = """#!/bin/sh
case "$*" in
  "keys list") printf '%s\\n' "${KEYS:-No keys found}" ;;
  "models default") printf '%s\\n' "$DEFAULT" ;;
  "models list --options -m "*) printf '%b' "$OPTIONS" ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
[ -z "$FAIL" ] || { echo "Error: $FAIL" >&2; exit 1; }
"""


@pytest.fixture
def stand_in(tmp_path: Path) -> str:
    path = tmp_path / "stand-in" / "llm"
    write_tree(path.parent, {"llm": STAND_IN})
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def ask(stand_in: str, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Readiness | None]:
    """The readiness the stand-in llm gives, told its answers by environment variables."""

    def asked(model: str | None = None, **env: str) -> Readiness | None:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        config = load(str(Path.cwd()), use_project=False)
        return readiness.check(config.agents["llm"], stand_in, model, str(Path.cwd()))

    return asked


KEYED = (
    "OpenAI Chat: gpt-4o (aliases: 4o)\\n  Keys:\\n    key: openai\\n    env_var: OPENAI_API_KEY\\n"
)


def test_a_key_stored_under_its_name(ask: Callable[..., Readiness | None]) -> None:
    assert ask(DEFAULT="4o", OPTIONS=KEYED, KEYS="anthropic\nopenai") == Readiness(
        True, "llm's default model, 4o, has its key ('openai', llm keys list)"
    )


def test_the_model_start_passes_is_asked_about(ask: Callable[..., Readiness | None]) -> None:
    assert ask("gpt-4o", OPTIONS=KEYED, OPENAI_API_KEY="sk-x") == Readiness(
        True, "the model start passes llm, gpt-4o, has its key ($OPENAI_API_KEY)"
    )


def test_no_default_model(ask: Callable[..., Readiness | None]) -> None:
    assert ask(DEFAULT="") == Readiness(
        False,
        "llm names no default model",
        "choose one: llm models default MODEL (llm models list names them)",
    )


def test_an_llm_that_fails(ask: Callable[..., Readiness | None]) -> None:
    assert ask(DEFAULT="4o", FAIL="broken plugin") == Readiness(
        False,
        "`llm keys list` failed with exit code 1: Error: broken plugin",
        "check that llm runs: llm --version",
    )


def test_other_agents_cannot_tell(stand_in: str) -> None:
    config = load(str(Path.cwd()), use_project=False)
    assert readiness.check(config.agents["claude"], stand_in, None, str(Path.cwd())) is None


def test_doctor_without_llm_asks_nothing(isolated: Path) -> None:
    # The setup tests' PATH has no llm: no agent is selected, and no question is asked.
    result = invoke("doctor", "--json")
    subjects = [check["subject"] for check in json.loads(result.stdout)["checks"]]
    assert "llm setup" not in subjects
