"""Text piped to the real `start` beside its words: pipes, files, /dev/null, a closed stdin, a
terminal, a pipe that never sends, --no-stdin, `start again`, and llm with the echo model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.terminal import run_on_terminal

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

# A headless agent that answers with its prompt, exactly.
CONFIG = """
[settings]
default_agent = "printer"

[agents.printer]
bin = "printf"
command = "{bin} '%s' {prompt}"
print_command = "{bin} '%s' {prompt}"
print_output = "text"
print_permissions = { read-only = "" }

[tasks.fix]
prompt = "Fix this.\\n{instructions}"
"""

WARNING = (
    "start: warning: stdin is a pipe that sent nothing in 3 seconds, so start went on without "
    "it; pass --no-stdin (or < /dev/null) when nothing is piped; a file (< FILE) is read at once\n"
)


@pytest.fixture
def env(isolated: Path) -> dict[str, str]:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    config = isolated.parent / "config"
    write_tree(config, {"config.toml": CONFIG})
    return {
        **os.environ,
        "START_CONFIG_DIR": str(config),
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }


def start(
    env: dict[str, str], cwd: Path, *args: str, stdin: Any, data: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`python -m start ARGS` with stdin as given (a file object, a descriptor, DEVNULL, PIPE)."""
    return subprocess.run(
        [sys.executable, "-m", "start", *args],
        cwd=cwd,
        env=env,
        stdin=stdin,
        input=data,
        capture_output=True,
        timeout=60,
    )


def test_piped_text_goes_before_the_words(env: dict[str, str], isolated: Path) -> None:
    proc = start(
        env, isolated, "prompt", "--print", "-q", "summarise", "this", stdin=None, data=b"DATA\n"
    )
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert proc.stdout == b"DATA\n\nsummarise this\n"


def test_a_task_gets_the_piped_text_and_the_words_as_its_instructions(
    env: dict[str, str], isolated: Path
) -> None:
    data = b"line 1\r\n'$(id)' `id` {instructions} \xc3\xbc\n"
    proc = start(env, isolated, "task", "fix", "--print", "-q", "carefully", stdin=None, data=data)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert proc.stdout == b"Fix this.\n" + data + b"\ncarefully\n"


def test_piped_text_alone_is_a_prompt_and_dash_still_means_stdin_only(
    env: dict[str, str], isolated: Path
) -> None:
    alone = start(env, isolated, "prompt", "--print", "-q", stdin=None, data=b"just this")
    dash = start(env, isolated, "prompt", "--print", "-q", "-", stdin=None, data=b"just this")
    assert (alone.returncode, alone.stdout) == (0, b"just this\n")
    assert (dash.returncode, dash.stdout) == (0, b"just this\n")


def test_no_stdin_leaves_the_pipe_unread(env: dict[str, str], isolated: Path) -> None:
    proc = start(
        env, isolated, "prompt", "--print", "-q", "--no-stdin", "words", stdin=None, data=b"DATA"
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"words\n", b"")
    both = start(env, isolated, "prompt", "--no-stdin", "-", stdin=None, data=b"DATA")
    assert both.returncode == 2
    assert (
        both.stderr == b"start: --no-stdin leaves stdin unread, but -i - reads the text from it\n"
    )


def test_a_file_on_stdin_is_read(env: dict[str, str], isolated: Path) -> None:
    notes = isolated / "notes.md"
    notes.write_bytes(b"the notes\n")
    with notes.open("rb") as stdin:
        proc = start(env, isolated, "prompt", "--print", "-q", "summarise", stdin=stdin)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"the notes\n\nsummarise\n", b"")


@pytest.mark.parametrize("how", ["devnull", "closed", "empty pipe", "whitespace"])
def test_nothing_to_read_sends_the_words_alone(
    env: dict[str, str], isolated: Path, how: str
) -> None:
    args = ("task", "fix", "--print", "-q", "words")
    if how == "devnull":
        proc = start(env, isolated, *args, stdin=subprocess.DEVNULL)
    elif how == "closed":
        # stdin closed when start starts: sys.stdin is None.
        proc = subprocess.run(
            [sys.executable, "-m", "start", *args],
            cwd=isolated,
            env=env,
            capture_output=True,
            timeout=60,
            preexec_fn=lambda: os.close(0),
        )
    else:
        proc = start(env, isolated, *args, stdin=None, data=b"" if how == "empty pipe" else b" \n")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"Fix this.\nwords\n", b"")


@pytest.fixture
def silent_pipe() -> Iterator[int]:
    """The read end of a pipe whose write end stays open, unwritten, until the test ends."""
    read_fd, write_fd = os.pipe()
    yield read_fd
    os.close(read_fd)
    os.close(write_fd)


def test_a_pipe_that_never_sends_is_not_waited_for(
    env: dict[str, str], isolated: Path, silent_pipe: int
) -> None:
    proc = start(env, isolated, "prompt", "--print", "-q", "words", stdin=silent_pipe)
    assert (proc.returncode, proc.stdout) == (0, b"words\n")
    assert proc.stderr.decode() == WARNING


def test_a_terminal_is_never_read(env: dict[str, str], isolated: Path) -> None:
    code, screen = run_on_terminal(
        "prompt", "--print", "-q", "--raw", "words", cwd=isolated, env=env
    )
    assert (code, screen) == (0, "words\n")


def test_text_over_the_limit_is_refused(env: dict[str, str], isolated: Path) -> None:
    data = b"x" * (16 * 1_048_576 + 1)
    proc = start(env, isolated, "prompt", "--print", "-q", "words", stdin=None, data=data)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr == b"start: the text on stdin is larger than 16,777,216 bytes\n"


def test_start_again_repeats_the_text_that_was_piped_and_reads_no_stdin(
    env: dict[str, str], isolated: Path
) -> None:
    first = start(env, isolated, "task", "fix", "--print", "-q", "words", stdin=None, data=b"OLD")
    assert first.stdout == b"Fix this.\nOLD\n\nwords\n"
    again = start(env, isolated, "again", "-q", stdin=None, data=b"NEW")
    assert (again.returncode, again.stdout) == (0, first.stdout), again.stderr
    alone = start(env, isolated, "again", "-q", stdin=subprocess.DEVNULL)
    assert (alone.returncode, alone.stdout) == (0, first.stdout), alone.stderr


LLM = shutil.which("llm", path=str(Path(sys.executable).parent)) or shutil.which("llm")


@pytest.mark.skipif(LLM is None, reason="llm is a test dependency; install the test extras")
def test_llm_with_the_echo_model_gets_the_piped_text_and_the_words(isolated: Path) -> None:
    assert LLM is not None
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    env = {
        "LLM_USER_PATH": str(isolated.parent / "llm"),
        "PATH": f"{Path(LLM).parent}{os.pathsep}{os.environ['PATH']}",
    }
    data = "cat notes | llm: 'quotes' and $(subshells) and {braces}\n"
    proc = run_start(
        "prompt", "--print", "-q", "-a", "llm", "-m", "echo", "summarise", env=env, stdin=data
    )
    assert proc.returncode == 0, proc.stderr
    echoed = json.loads(proc.stdout)
    assert echoed["prompt"] == f"{data}\nsummarise"
