"""Shared fixtures: every test runs with an isolated HOME, XDG_*, START_*, GIT_*, PATH and working
directory."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

REPO = Path(__file__).resolve().parents[1]

# One example database at the repository root, whatever the working directory (each test runs in
# its own): a directory database is safe for the pytest-xdist workers to share.
settings.register_profile(
    "start", database=DirectoryBasedExampleDatabase(REPO / ".hypothesis" / "examples")
)
settings.load_profile("start")

# The hostile project of the trust tests (`scene`), shared by tests/cli and tests/e2e.
pytest_plugins = ["tests.hostile"]


def _fast_fake_agent() -> Path:
    """tests/fake_agent.py with this interpreter in its shebang (a pyenv shim adds ~0.5 s a run).

    -S: the agent needs only the standard library, and skipping site halves its startup.
    """
    import atexit
    import shutil
    import tempfile

    source = Path(__file__).resolve().parent / "fake_agent.py"
    directory = Path(tempfile.mkdtemp(prefix="start-fake-agent-"))
    atexit.register(shutil.rmtree, directory, True)
    path = directory / "fake_agent.py"
    body = source.read_text(encoding="utf-8").split("\n", 1)[1]
    path.write_text(f"#!{sys.executable} -S\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return path


FAKE_AGENT = _fast_fake_agent()


def _looked_up() -> frozenset[str]:
    """The programs start looks for on PATH and acts on finding: every agent CLI of the catalog
    (config/agents.toml), go-task (the Taskfile tools) and start itself (mcp --print-config)."""
    import tomllib

    with open(REPO / "config" / "agents.toml", "rb") as file:
        agents = tomllib.load(file)["agents"]
    found = {os.path.basename(os.path.expanduser(agent["bin"])) for agent in agents.values()}
    return frozenset(found | {"task", "start"})


LOOKED_UP = _looked_up()


def _tests_path(path: str) -> str:
    """`path` as the tests see it: every directory the user's PATH holds, in order, and in place of
    one that holds a program of LOOKED_UP, a directory of links to everything else it holds. So
    sh, git and python are where they were, and no agent CLI is on PATH unless a test puts it
    there: a test's outcome does not depend on what the machine has installed."""
    import atexit
    import shutil
    import tempfile

    kept: list[str] = []
    scratch: Path | None = None
    for directory in dict.fromkeys(path.split(os.pathsep)):
        if not os.path.isabs(directory):
            continue  # "" or a relative entry: the working directory, which each test sets
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        if LOOKED_UP.isdisjoint(names):
            kept.append(directory)
            continue
        names = [name for name in names if name not in LOOKED_UP]
        if not names:
            continue
        if scratch is None:
            scratch = Path(tempfile.mkdtemp(prefix="start-tests-path-"))
            atexit.register(shutil.rmtree, scratch, True)
        mirror = scratch / str(len(kept))
        mirror.mkdir()
        for name in names:
            (mirror / name).symlink_to(os.path.join(directory, name))
        kept.append(str(mirror))
    return os.pathsep.join(kept)


TESTS_PATH = _tests_path(os.environ.get("PATH", os.defpath))


# Variables of the user's environment that change what start prints (colour, width, pager).
_UNSET = (
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "PAGER",
    "CI",
    "VISUAL",
    "EDITOR",
)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private home, config, state and runtime dir, a PATH without agent CLIs (TESTS_PATH),
    and a scratch working directory."""
    for name in list(os.environ):
        if name.startswith(("XDG_", "START_", "GIT_")) or name in _UNSET:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", TESTS_PATH)
    home = tmp_path / "home"
    run = tmp_path / "run"
    work = tmp_path / "work"
    for directory in (home, run, work):
        directory.mkdir()
    run.chmod(0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.chdir(work)
    yield work


def write_tree(root: Path, files: Mapping[str, str]) -> None:
    """Create files from a {relative path: text} dict."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


def invoke(*args: str, stdin: str | None = None) -> Result:
    """Run `start` in-process like the console script; internal errors fail the test."""
    from click.testing import CliRunner

    from start.cli import main

    runner = CliRunner()
    with runner.isolation(input=stdin) as (out, err, _):
        try:
            main(list(args))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        else:  # pragma: no cover - main() always exits
            code = 0
        sys.stdout.flush()
        sys.stderr.flush()
        stdout = out.getvalue().decode()
        stderr = err.getvalue().decode() if err is not None else ""
    assert "internal error" not in stderr, stderr
    return Result(code, stdout, stderr)


@pytest.fixture
def cli() -> Callable[..., Result]:
    return invoke


def run_start(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run the real `start` in a subprocess (the only way tests may reach exec)."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "start", *args],
        cwd=cwd,
        env=full_env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- a launch in a scratch repository ----------------------------------------------------------

FAKE = f'''
[settings]
default_agent = "fake"

[agents.fake]
bin = "{FAKE_AGENT}"
command = "{{bin}} --model {{model}} --append-system-prompt '{{role}}' '{{prompt}}'"
default_model = "s"

[agents.fake.models]
s = "sonnet-x"
o = "opus-x"
'''


@pytest.fixture
def repo(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository (the working directory) and a global config whose agent is the fake.

    The scratch project is trusted through the environment: trust has tests of its own.
    """
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": FAKE})
    return isolated


@pytest.fixture
def removed_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The working directory of the test is a directory that was then removed."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The global config file; the built-in layer is empty so only these problems appear."""
    from start.base import paths

    builtin = tmp_path / "builtin"
    builtin.mkdir()
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(builtin))
    directory = tmp_path / "home" / ".config" / "start"
    directory.mkdir(parents=True)
    return directory / "config.toml"


def problems(conf: Path, text: str) -> list[str]:
    """`severity: LINE:COLUMN: key: message`, each problem placed in the file."""
    from start.config.load import load

    conf.write_text(text, encoding="utf-8")
    return [f"{p.severity}: {p}".replace(f"{conf}:", "") for p in load().problems]


# A process group leader that notes SIGTERM in the file it is given, and exits; it writes
# `ready` there first, once it can.
NOTING = """
import signal, sys, time
def noted(signum, frame):
    open(sys.argv[1], "a").write("SIGTERM\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, noted)
open(sys.argv[1], "a").write("ready\\n")
time.sleep(300)
"""


@pytest.fixture
def survivors() -> Iterator[list[int]]:
    """Pids a test started (itself, or through what it runs); those still alive at the end are
    killed, so a failure leaves nothing behind."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


# How long a test waits for what takes milliseconds when all is well (a process to start and
# write its pid, a killed one to be gone) before it calls it a hang. Only a hang reaches it,
# however loaded the machine: no test holds a wall clock to what it checks (issue 44).
HANG = 120.0


def wait_gone(pids: Collection[int], seconds: float = HANG) -> list[int]:
    """Those of `pids` still running once all have ended or `seconds` have passed: [] when none
    outlived what should have ended them."""
    deadline = time.monotonic() + seconds
    while (alive := [pid for pid in pids if running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive


def read_pids(path: Path, seconds: float = HANG) -> list[int]:
    """The pids a process wrote to `path` on a line, once it has."""
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text().endswith("\n")):
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.02)
    return [int(word) for word in path.read_text().split()]


def running(pid: int) -> bool:
    """Whether process `pid` still runs. A zombie, which has exited and waits only for its parent
    to reap it, does not; nor does a process that ends while /proc is read."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's: it exists
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            state = stat.read().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        # It ended between the two looks; or, without /proc, os.kill's answer stands.
        return not os.path.isdir("/proc/self")
    return state not in ("Z", "X")


def git(cwd: Path, *args: str) -> str:
    """Run git in CWD as a fixed author, without the system's config; its stdout."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return result.stdout


def drain_terminal(
    process: subprocess.Popen[bytes],
    master: int,
    timeout: float,
    answer: Callable[[bytes], bytes | None] | None = None,
) -> tuple[int, bytes]:
    """Read a pty's master end until PROCESS is done; its exit status and everything it wrote.

    `answer` sees the output so far after each read and may return bytes to type. Closes the
    master end; kills PROCESS (started by the test) if it outlives TIMEOUT.
    """
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every slave end is closed
                    break
                if not chunk:
                    break
                output += chunk
                typed = answer(output) if answer is not None else None
                if typed:
                    os.write(master, typed)
            elif process.poll() is not None:
                break
        else:
            process.kill()
            raise AssertionError(f"start did not finish: {output!r}")
        return process.wait(timeout=10), output
    finally:
        os.close(master)


def stage(repo: Path, name: str = "a.py", text: str = "x = 1\n") -> None:
    (repo / name).write_text(text)
    subprocess.run(["git", "add", name], cwd=repo, check=True)


def dry(*args: str) -> dict[str, Any]:
    result = invoke(*args, "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def launch(
    repo: Path, *args: str, stdin: str | None = None, **env: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    record = repo.parent / "record.json"
    record.unlink(missing_ok=True)
    proc = run_start(*args, cwd=repo, env={"FAKE_AGENT_RECORD": str(record), **env}, stdin=stdin)
    data = json.loads(record.read_text()) if record.exists() else None
    return proc, data
