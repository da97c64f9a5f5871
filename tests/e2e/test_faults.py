"""Faults and bad input, end to end: each ends in a StartError (or success), never an internal
error, a hang, an orphan or debris. One test (or more) per row of issue 11's table."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKE_AGENT, REPO, invoke, run_start, running, write_tree
from tests.terminal import run_on_terminal

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

AGENT = f'[agents.fake]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} {{prompt}}"\n'
FAKE = f'[settings]\ndefault_agent = "fake"\n\n{AGENT}'
PROMPT_FILE_AGENT = f'[agents.pf]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} {{prompt_file}}"\n'


@pytest.fixture
def repo(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository as the working directory, trusted through the environment, and a global
    config whose agent is the fake one. The built-in layer stays: faults must hold with it."""
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    global_dir().mkdir(parents=True)
    (global_dir() / "config.toml").write_text(FAKE)
    return isolated


def global_dir() -> Path:
    return Path(os.environ["HOME"]) / ".config" / "start"


def runtime() -> Path:
    return Path(os.environ["XDG_RUNTIME_DIR"]) / "start"


def start(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 30,
    prefix: Sequence[str] = (),
    preexec: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`start` in a subprocess with a time limit (a hang fails the test) and 1 GiB of memory."""

    def limits() -> None:
        with contextlib.suppress(ValueError, OSError):  # macOS does not enforce RLIMIT_AS
            resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        if preexec is not None:
            preexec()

    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [*prefix, sys.executable, "-m", "start", *args],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limits,
    )


def unprivileged() -> list[str]:
    """A command prefix under which file permissions apply: as root, drop the capabilities
    that bypass them (root ignores mode 000 otherwise)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be tested")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def dry(*args: str) -> dict[str, Any]:
    result = invoke(*args, "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def alive(pid: int) -> bool:
    """Whether pid still runs after a moment for SIGKILL to land (a zombie counts as dead)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not running(pid):
            return False
        time.sleep(0.02)
    return True


def wait_for(path: Path, within: float = 10) -> int:
    deadline = time.monotonic() + within
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.02)
    return int(path.read_text())


# --- SIGTERM or SIGHUP (terminal closed) while a command runs -------------------------------


@pytest.mark.parametrize(
    ("signum", "code"),
    [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)
def test_a_signal_kills_the_running_commands_and_exits_128_plus_n(
    repo: Path, signum: int, code: int
) -> None:
    leader, grandchild = repo.parent / "leader.pid", repo.parent / "grandchild.pid"
    write_tree(
        repo,
        {
            ".start/tasks.toml": (
                "[tasks.slow]\n"
                f'command = "sleep 20 & echo $! > {grandchild}; echo $$ > {leader}; wait"\n'
                'prompt = "{command_output}"\n'
            )
        },
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "start", "task", "slow"],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pids = []
    try:
        pids = [wait_for(leader), wait_for(grandchild)]
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    name = signal.Signals(signum).name
    said = (
        "\nstart: interrupted\n"
        if signum == signal.SIGINT
        else f"start: stopped by {name}; the running commands were killed\n"
    )
    assert (proc.returncode, out, err) == (code, "", said)
    assert [pid for pid in pids if alive(pid)] == []
    assert not runtime().exists() or [p.name for p in runtime().iterdir()] == []


def test_a_terminal_that_hangs_up_under_a_running_command_exits_129(repo: Path) -> None:
    """A real hang-up, not a signal sent by hand: the terminal's master end closes while a
    command runs. `start` cannot print its message to the dead terminal, and that must not
    change its exit status (it was 1, from the failed write)."""
    import pty

    leader = repo.parent / "leader.pid"
    write_tree(
        repo,
        {
            ".start/tasks.toml": (
                f'[tasks.slow]\ncommand = "echo $$ > {leader}; exec sleep 20"\n'
                'prompt = "{command_output}"\n'
            )
        },
    )
    main, secondary = pty.openpty()
    name = os.ttyname(secondary)

    def controlling_terminal() -> None:
        os.setsid()
        os.close(os.open(name, os.O_RDWR))  # a session leader's first tty becomes its terminal

    proc = subprocess.Popen(
        [sys.executable, "-m", "start", "task", "slow"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        preexec_fn=controlling_terminal,
    )
    os.close(secondary)
    pid = 0
    try:
        pid = wait_for(leader)
        os.close(main)  # hang up: the kernel sends SIGHUP to the session
        code = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 129
    assert not alive(pid)


# --- config.toml that is a FIFO, /dev/zero, a symlink loop, a dangling link, a directory ----


def make(kind: str, path: Path) -> str:
    """Put a `kind` at `path`; what `start` says it is."""
    if kind == "fifo":
        os.mkfifo(path)
        return "is a FIFO (named pipe), not a regular file"
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
        return "is a character device, not a regular file"
    if kind == "loop":
        path.symlink_to(path.name)
        return "cannot read the file: a symlink loop (too many levels of symbolic links)"
    if kind == "dangling":
        path.symlink_to(path.parent / "nowhere.toml")
        return (
            f"is a dangling symlink to {path.parent / 'nowhere.toml'} (its target does not exist)"
        )
    assert kind == "directory"
    path.mkdir()
    return "is a directory, not a regular file"


KINDS = ["fifo", "dev-zero", "loop", "dangling", "directory"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_config_file_that_is_not_a_regular_file_is_an_error_everywhere(
    isolated: Path, kind: str
) -> None:
    global_dir().mkdir(parents=True)
    path = global_dir() / "config.toml"
    what = make(kind, path)

    validate = start("config", "validate", cwd=isolated)
    assert (validate.returncode, validate.stdout) == (
        3,
        f"{path}: error: {what}\n✗ 1 error, 0 warnings in 6 files\n",
    )

    doctor = start("doctor", "-q", cwd=isolated)
    assert doctor.returncode == 3, doctor.stderr
    [line] = [line for line in doctor.stdout.splitlines() if f"{path}:" in line]
    assert line.split(None, 2) == ["✗", "global", f"{path}: {what}"]
    assert "no config files" not in doctor.stdout

    launch = start("--dry-run", "prompt", "hi", cwd=isolated)
    assert (launch.returncode, launch.stdout) == (3, "")
    assert launch.stderr == (
        "start: configuration is invalid (1 error)\n"
        f"  {path}\n"
        f"    error: {what}\n"
        "Run 'start config validate' to see every problem.\n"
    )


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_editing_beside_a_config_file_that_is_not_regular_never_hangs(
    isolated: Path, kind: str
) -> None:
    global_dir().mkdir(parents=True)
    path = global_dir() / "config.toml"
    what = make(kind, path)
    expected = (
        f"start: cannot edit {global_dir()}: config.toml cannot be read; fix it first\n"
        f"  {path}\n"
        f"    error: {what}\n"
        "Run 'start config validate' to see every problem.\n"
    )
    for args in (
        ("config", "set", "command_timeout", "5"),
        ("config", "add", "task", "x", "--prompt", "p"),
    ):
        result = start(*args, cwd=isolated)
        assert (result.returncode, result.stderr) == (3, expected)
    forced = start("init", "--force", cwd=isolated)
    assert (forced.returncode, forced.stderr) == (
        1,
        f"start: {path} {what}; remove it (start init does not replace it), then run start init\n",
    )


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (
            "dangling",
            "{path} is a dangling symlink to {target} (its target does not exist); remove it, "
            "or pass --force to write the file it points to",
        ),
        (
            "loop",
            "{path} is a symlink loop that cannot be followed; remove it, then run start init",
        ),
        (
            "directory",
            "{path} is a directory, not a regular file; remove it (start init does not replace "
            "it), then run start init",
        ),
        (
            "fifo",
            "{path} is a FIFO (named pipe), not a regular file; remove it (start init does not "
            "replace it), then run start init",
        ),
    ],
)
def test_init_explains_what_is_in_the_way(isolated: Path, kind: str, message: str) -> None:
    global_dir().mkdir(parents=True)
    path = global_dir() / "config.toml"
    make(kind, path)
    result = start("init", cwd=isolated)
    target = path.parent / "nowhere.toml"
    assert (result.returncode, result.stderr) == (
        1,
        "start: " + message.format(path=path, target=target) + "\n",
    )


def test_init_force_writes_through_a_dangling_symlink(isolated: Path) -> None:
    global_dir().mkdir(parents=True)
    path = global_dir() / "config.toml"
    make("dangling", path)
    result = start("init", "--force", "-q", cwd=isolated)
    assert result.returncode == 0, result.stderr
    assert path.is_symlink() and (path.parent / "nowhere.toml").is_file()


# --- a context file that is a FIFO or /dev/zero --------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_context_file_that_is_not_regular_is_refused_without_blocking(
    repo: Path, kind: str
) -> None:
    what = make(kind, repo / "notes.md")
    write_tree(repo, {".start/contexts.toml": '[contexts.c]\nfile = "notes.md"\nrequired = true\n'})
    result = start("--dry-run", "prompt", "hi", cwd=repo, timeout=20)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"start: context 'c': cannot read {repo / 'notes.md'}: {what}\n"
        f"Fix contexts.c.file in {repo / '.start' / 'contexts.toml'}\n"
    )


# --- a 300 MB context file ------------------------------------------------------------------

MEASURE = """
import resource, sys
from start.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
try:  # this process's own peak: ru_maxrss on Linux also counts the parent it was forked from
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
except OSError:  # macOS reports bytes
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("MEASURED", code, peak, file=sys.stderr)
"""


def test_a_huge_context_file_is_cut_with_a_marker_a_warning_and_bounded_memory(
    repo: Path,
) -> None:
    big = repo / "big.log"
    with open(big, "wb") as handle:  # sparse: 300 MB that take no disk
        handle.write(b"first line\n")
        handle.truncate(300_000_000)
    write_tree(
        repo,
        {
            ".start/contexts.toml": '[contexts.big]\nfile = "big.log"\nrequired = true\n',
            # A megabyte of U+FFFD is too big for one argument: the agent reads a file.
            ".start/agents.toml": PROMPT_FILE_AGENT,
        },
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, "--dry-run", "-a", "pf", "prompt", "hi"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    _, code, peak = result.stderr.splitlines()[-1].split()
    assert code == "0", result.stderr
    assert int(peak) < 100_000_000  # 1.9 GB before files were capped
    warning = (
        f"  ⚠ context big: {big} is cut to its first 1,048,576 bytes; "
        "298,951,424 more were left out (settings.file_size_limit)\n"
    )
    assert warning in result.stdout
    prompt = dry("-a", "pf", "prompt", "hi")["prompt"]
    assert prompt.startswith("first line\n\ufffd")
    assert prompt.endswith("\n[... truncated 298,951,424 bytes ...]\n\nhi")


def test_the_cut_warning_reaches_stderr_before_the_agent_runs(repo: Path) -> None:
    (repo / "notes.md").write_text("x" * 2000)
    write_tree(
        repo,
        {
            ".start/config.toml": "[settings]\nfile_size_limit = 1000\n",
            ".start/contexts.toml": '[contexts.n]\nfile = "notes.md"\nrequired = true\n',
        },
    )
    record = repo.parent / "record.json"
    warning = (
        f"⚠ context n: {repo / 'notes.md'} is cut to its first 1,000 bytes; 1,000 more were "
        "left out (settings.file_size_limit)"
    )
    for flags, line in (((), f"  {warning}\n"), (("-q",), f"start: {warning}\n")):
        result = run_start("prompt", *flags, "hi", cwd=repo, env={"FAKE_AGENT_RECORD": str(record)})
        assert result.returncode == 0, result.stderr
        assert line in result.stderr
        argv = json.loads(record.read_text())["argv"]
        assert argv == ["x" * 1000 + "\n[... truncated 1,000 bytes ...]\n\nhi"]


# --- a config dir or project .start/ with mode 000 ------------------------------------------


@pytest.mark.parametrize("layer", ["global", "project"])
def test_an_unreadable_config_directory_is_a_config_error(repo: Path, layer: str) -> None:
    prefix = unprivileged()
    write_tree(repo, {".start/config.toml": "[settings]\n"})
    directory = global_dir() if layer == "global" else repo / ".start"
    directory.chmod(0)
    try:
        validate = start("config", "validate", cwd=repo, prefix=prefix)
        assert (validate.returncode, validate.stdout) == (
            3,
            f"{directory}: error: cannot be read: permission denied\n"
            "✗ 1 error, 0 warnings in 6 files\n",
        )
        for args in (("config", "show"), ("--dry-run", "prompt", "hi")):
            result = start(*args, cwd=repo, prefix=prefix)
            assert (result.returncode, result.stdout, result.stderr) == (
                3,
                "",
                "start: configuration is invalid (1 error)\n"
                f"  {directory}\n"
                "    error: cannot be read: permission denied\n"
                "Run 'start config validate' to see every problem.\n",
            )
        doctor = start("doctor", "-q", cwd=repo, prefix=prefix)
        assert doctor.returncode == 3, doctor.stderr
        assert f"  {directory}\n  ✗ -  cannot be read: permission denied\n" in doctor.stdout
    finally:
        directory.chmod(0o755)


def test_an_unreadable_config_file_is_a_config_error(repo: Path) -> None:
    prefix = unprivileged()
    path = global_dir() / "config.toml"
    path.chmod(0)
    result = start("config", "validate", cwd=repo, prefix=prefix)
    assert (result.returncode, result.stdout) == (
        3,
        f"{path}: error: cannot read the file: permission denied\n"
        "✗ 1 error, 0 warnings in 6 files\n",
    )


# --- TOML nested about 500 deep -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[settings]\nx = " + "[" * 500 + "]" * 500 + "\n",
        "[settings]\nx = " + "{a = " * 500 + "1" + "}" * 500 + "\n",
    ],
    ids=["arrays", "inline-tables"],
)
def test_deep_nesting_is_a_problem_in_every_command(repo: Path, text: str) -> None:
    path = global_dir() / "config.toml"
    path.write_text(FAKE + text.replace("[settings]", "[more]"))
    problem = "arrays or inline tables are nested too deeply to read"
    validate = invoke("config", "validate")
    assert validate.exit_code == 3
    # At the line and column where the deep value starts: `x = [[[...` under [more].
    at = f"{FAKE.count(chr(10)) + 2}:5"
    assert validate.stdout == f"{path}:{at}: error: {problem}\n✗ 1 error, 0 warnings in 6 files\n"
    for args in (("config", "show"), ("--dry-run", "prompt", "hi"), ("task",)):
        result = invoke(*args)
        assert (result.exit_code, result.stdout) == (3, ""), args
        assert result.stderr == (
            "start: configuration is invalid (1 error)\n"
            f"  {path}\n"
            f"    {at}: error: {problem}\n"
            "Run 'start config validate' to see every problem.\n"
        )
    assert invoke("doctor").exit_code == 3


def test_deeply_nested_dotted_keys_cannot_be_edited_but_do_not_crash(repo: Path) -> None:
    """tomllib's time grows with the square of a key's parts: such a key is refused unread."""
    path = global_dir() / "config.toml"
    path.write_text(FAKE + ".".join(["a"] * 3000) + " = 1\n")
    line = FAKE.count("\n") + 1
    result = invoke("config", "set", "command_timeout", "5")
    assert (result.exit_code, result.stderr) == (
        3,
        f"start: cannot edit {path.parent}: config.toml is not valid TOML; fix it first\n"
        f"  {path}\n"
        f"    {line}:1: error: a key has more than 64 dotted parts; start reads at most that\n"
        "Run 'start config validate' to see every problem.\n",
    )


# --- command_timeout = 1000000000 -----------------------------------------------------------


def assert_invalid_everywhere(path: Path, problem: str) -> None:
    """`config validate` and a launch report the one problem at line 2 of PATH alike (exit 3)."""
    validate = invoke("config", "validate")
    assert (validate.exit_code, validate.stdout) == (
        3,
        f"{path}:2:1: error: {problem}\n✗ 1 error, 0 warnings in 6 files\n",
    )
    launch = invoke("--dry-run", "prompt", "hi")
    assert (launch.exit_code, launch.stderr) == (
        3,
        "start: configuration is invalid (1 error)\n"
        f"  {path}\n"
        f"    2:1: error: {problem}\n"
        "Run 'start config validate' to see every problem.\n",
    )


def test_validate_and_the_launch_agree_on_the_timeout_range(repo: Path) -> None:
    path = global_dir() / "config.toml"
    path.write_text(FAKE.replace("[settings]\n", "[settings]\ncommand_timeout = 1000000000\n"))
    problem = (
        "settings.command_timeout: must be a whole number of seconds from 1 to 86400 (a day), "
        "not 1000000000"
    )
    assert_invalid_everywhere(path, problem)
    path.write_text(FAKE.replace("[settings]\n", "[settings]\ncommand_timeout = 86400\n"))
    write_tree(
        repo, {".start/tasks.toml": '[tasks.t]\ncommand = "echo ok"\nprompt = "{command_output}"\n'}
    )
    assert dry("task", "t")["prompt"].endswith("ok\n")


# --- shell = "fish-nope" or shell = "bash -e" -----------------------------------------------


def test_a_missing_shell_is_named_with_where_it_is_set(repo: Path) -> None:
    path = global_dir() / "config.toml"
    path.write_text(FAKE.replace("[settings]\n", '[settings]\nshell = "fish-nope"\n'))
    write_tree(
        repo, {".start/tasks.toml": '[tasks.t]\ncommand = "echo hi"\nprompt = "{command_output}"\n'}
    )
    result = invoke("--dry-run", "task", "t")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "start: task 't' command could not start: shell 'fish-nope' not found on PATH; "
        f"fix settings.shell in {path}\n"
        "  command: echo hi\n"
    )
    validate = invoke("config", "validate")
    assert validate.exit_code == 0
    assert validate.stdout == (
        f"{path}: warning: settings.shell: shell 'fish-nope' is not on PATH, so the commands that "
        "use it cannot run\n"
        "✓ 0 errors, 1 warning in 7 files\n"
    )


def test_a_missing_item_shell_names_the_item(repo: Path) -> None:
    tasks = repo / ".start" / "tasks.toml"
    write_tree(
        repo,
        {
            ".start/tasks.toml": '[tasks.t]\ncommand = "echo hi"\nshell = "fish-nope"\nprompt = "{command_output}"\n'
        },
    )
    result = invoke("--dry-run", "task", "t")
    assert result.stderr == (
        "start: task 't' command could not start: shell 'fish-nope' not found on PATH; "
        f"fix tasks.t.shell in {tasks}\n"
        "  command: echo hi\n"
    )
    write_tree(
        repo,
        {
            ".start/tasks.toml": "",
            ".start/contexts.toml": '[contexts.c]\ncommand = "echo hi"\nshell = "fish-nope"\nrequired = true\n',
        },
    )
    context = dry("prompt", "x")["contexts"][-1]
    assert (context["status"], context["detail"]) == (
        "failed",
        "shell 'fish-nope' not found on PATH",
    )


def test_a_shell_with_arguments_is_a_config_error(repo: Path) -> None:
    path = global_dir() / "config.toml"
    path.write_text(FAKE.replace("[settings]\n", '[settings]\nshell = "bash -e"\n'))
    problem = (
        "settings.shell: 'bash -e' is not one program: a shell is a name on PATH or a path, "
        'without arguments; put options in the command instead (e.g. "set -e; ...")'
    )
    assert_invalid_everywhere(path, problem)


# --- a command killed by a signal -----------------------------------------------------------


def test_a_command_killed_by_a_signal_says_so(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/tasks.toml": '[tasks.t]\ncommand = "echo before; kill -KILL $$"\nprompt = "{command_output}"\n',
            ".start/contexts.toml": '[contexts.c]\ncommand = "kill -TERM $$"\nrequired = true\n',
        },
    )
    result = invoke("--dry-run", "task", "t")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "start: task 't' command was killed by SIGKILL\n"
        "  command: echo before; kill -KILL $$\n"
        "  output:\n    before\n"
    )
    write_tree(repo, {".start/tasks.toml": ""})
    context = dry("prompt", "x")["contexts"][-1]
    assert (context["status"], context["detail"]) == ("failed", "command killed by SIGTERM")


# --- running from a deleted working directory -----------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("config", "validate"),
        ("config", "show"),
        ("doctor",),
        ("--dry-run", "prompt", "hi"),
        ("task",),
        ("init", "--project"),
        ("trust",),
        ("config", "set", "command_timeout", "5"),
    ],
)
def test_a_deleted_working_directory_is_explained(isolated: Path, args: tuple[str, ...]) -> None:
    gone = isolated / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rmdir "{gone}" && exec "$@"'
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        ["sh", "-c", script, "sh", sys.executable, "-m", "start", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        "start: the current directory no longer exists (it was deleted or moved); cd to an "
        "existing directory, or pass -d DIR\n",
    )


# --- an unwritable XDG_RUNTIME_DIR ----------------------------------------------------------


def test_an_unwritable_runtime_dir_falls_back_to_a_private_one(repo: Path) -> None:
    prefix = unprivileged()
    readonly = repo.parent / "readonly-run"
    readonly.mkdir(mode=0o500)
    (global_dir() / "config.toml").write_text(
        f'[settings]\ndefault_agent = "pf"\n{PROMPT_FILE_AGENT}'
    )
    record, temp = repo.parent / "record.json", repo.parent / "tmp"
    temp.mkdir()
    env = {"XDG_RUNTIME_DIR": str(readonly), "TMPDIR": str(temp), "FAKE_AGENT_RECORD": str(record)}
    result = start("prompt", "-q", "hello", cwd=repo, prefix=prefix, env=env)
    assert (result.returncode, result.stderr) == (0, "")
    prompt_file = Path(json.loads(record.read_text())["argv"][0])
    assert prompt_file.parent.parent == temp / f"start-{os.getuid()}"
    assert prompt_file.read_text() == "hello"
    assert list(readonly.iterdir()) == []


# --- a runtime directory planted as a symlink ------------------------------------------------


def planted_runtime(repo: Path) -> tuple[Path, Path, dict[str, str]]:
    """`TMPDIR/start-UID` as a symlink to a folder of the user's own, holding entries two days old
    that look like start's own temp files, and the environment of a launch without
    XDG_RUNTIME_DIR (cron, ssh, containers)."""
    temp, mine = repo.parent / "tmp", repo.parent / "mine"
    write_tree(
        mine, {"p/x": "", "notes": "", "123-prompt-0123abcd.md": "", "dry-run-1-0123abcd/a": ""}
    )
    two_days_ago = time.time() - 2 * 86400
    for path in sorted(mine.rglob("*"), reverse=True):
        os.utime(path, (two_days_ago, two_days_ago))
    temp.mkdir()
    (temp / f"start-{os.getuid()}").symlink_to(mine)
    env = {"XDG_RUNTIME_DIR": "", "TMPDIR": str(temp)}
    return mine, temp, env


def test_a_runtime_dir_planted_as_a_symlink_is_never_swept(repo: Path) -> None:
    mine, _, env = planted_runtime(repo)
    before = sorted(str(p.relative_to(mine)) for p in mine.rglob("*"))
    result = start("prompt", "hi", "-q", cwd=repo, env=env)
    assert (result.returncode, result.stderr) == (0, "")  # the fake agent needs no temp file
    assert sorted(str(p.relative_to(mine)) for p in mine.rglob("*")) == before


def test_a_runtime_dir_planted_as_a_symlink_is_refused_before_anything_is_written(
    repo: Path,
) -> None:
    mine, temp, env = planted_runtime(repo)
    (global_dir() / "config.toml").write_text(
        f'[settings]\ndefault_agent = "pf"\n{PROMPT_FILE_AGENT}'
    )
    before = sorted(str(p.relative_to(mine)) for p in mine.rglob("*"))
    result = start("prompt", "hi", "-q", cwd=repo, env=env)
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        f"start: runtime directory {temp}/start-{os.getuid()} is not a directory owned by you; "
        "remove it or set XDG_RUNTIME_DIR to a private directory\n",
    )
    assert sorted(str(p.relative_to(mine)) for p in mine.rglob("*")) == before


# --- stdout and stderr keep their order -----------------------------------------------------


def test_command_output_keeps_the_order_it_was_written_in(repo: Path) -> None:
    command = "echo o1; echo e1 >&2; echo o2; echo e2 >&2"
    write_tree(
        repo,
        {".start/tasks.toml": f'[tasks.t]\ncommand = "{command}"\nprompt = "{{command_output}}"\n'},
    )
    for _ in range(5):
        assert dry("task", "t")["prompt"] == "o1\ne1\no2\ne2\n"


# --- a NUL in a context file ----------------------------------------------------------------


def test_a_nul_in_a_context_file_becomes_a_replacement_character(repo: Path) -> None:
    (repo / "notes.md").write_bytes(b"before\x00after\n")
    write_tree(repo, {".start/contexts.toml": '[contexts.n]\nfile = "notes.md"\nrequired = true\n'})
    assert dry("prompt", "hi")["prompt"] == "before\ufffdafter\n\nhi"
    record = repo.parent / "record.json"
    result = run_start("prompt", "-q", "hi", cwd=repo, env={"FAKE_AGENT_RECORD": str(record)})
    assert result.returncode == 0, result.stderr
    assert json.loads(record.read_text())["argv"] == ["before\ufffdafter\n\nhi"]


# --- kill -9 during a config write ----------------------------------------------------------


def test_temp_files_of_killed_writes_are_removed_by_the_next_write(repo: Path) -> None:
    import fcntl

    write_tree(repo, {".start/config.toml": "[settings]\n", ".start/tasks.toml": ""})
    start_dir = repo / ".start"
    stale = [start_dir / ".config.toml.0123abcd.tmp", global_dir() / ".config.toml.89abcdef.tmp"]
    live = start_dir / ".tasks.toml.fedcba98.tmp"  # a writer that is still at work
    for path in (*stale, live):
        path.write_text("half a file")
        os.utime(path, (time.time() - 60, time.time() - 60))
    holder = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        for project in ("--project",), ():
            result = invoke("config", "set", *project, "default_role", "code-reviewer")
            assert result.exit_code == 0, result.stderr
    finally:
        os.close(holder)
    assert sorted(p.name for p in start_dir.iterdir()) == [live.name, "config.toml", "tasks.toml"]
    assert sorted(p.name for p in global_dir().iterdir()) == ["config.toml"]


def test_a_killed_writer_leaves_a_temp_file_that_the_next_write_removes(repo: Path) -> None:
    # A writer killed between writing its temp file and renaming it.
    code = (
        "import os, signal\n"
        "from pathlib import Path\n"
        "from start.base import atomic\n"
        "os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"atomic.replace(Path({str(global_dir() / 'config.toml')!r}), b'[settings]\\n')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    killed = subprocess.run([sys.executable, "-c", code], env=env, timeout=30)
    assert killed.returncode == -signal.SIGKILL
    [debris] = [p for p in global_dir().iterdir() if p.name != "config.toml"]
    os.utime(debris, (time.time() - 60, time.time() - 60))
    assert invoke("config", "set", "default_role", "code-reviewer").exit_code == 0
    assert [p.name for p in global_dir().iterdir()] == ["config.toml"]


# --- init --force on a full disk ------------------------------------------------------------


def test_init_force_on_a_full_disk_keeps_the_original_and_leaves_no_backup(repo: Path) -> None:
    path = global_dir() / "config.toml"
    original = FAKE + "# padding\n" * 6000  # about 60 KiB, more than the disk takes below

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))

    path.write_text(original)
    result = start("init", "--force", cwd=repo, preexec=small_disk)
    assert (result.returncode, result.stderr) == (
        1,
        f"start: cannot write {path}: File too large\n",
    )
    assert path.read_text() == original
    assert [p.name for p in global_dir().iterdir()] == ["config.toml"]


# --- temp files of finished agents ----------------------------------------------------------


def test_every_launch_sweeps_temp_files_of_finished_agents_once_a_minute(repo: Path) -> None:
    runtime().mkdir(mode=0o700)
    dead = runtime() / "999999999-prompt-00000000.md"
    record = repo.parent / "record.json"

    def launch() -> None:
        # The agent takes the prompt as an argument: the launch writes no temp file of its own.
        result = run_start("prompt", "-q", "hi", cwd=repo, env={"FAKE_AGENT_RECORD": str(record)})
        assert result.returncode == 0, result.stderr

    dead.write_text("x")
    launch()
    assert not dead.exists()
    dead.write_text("x")
    launch()
    assert dead.exists()  # swept less than a minute ago: no sweep, one stat
    stamp = runtime() / ".swept"
    os.utime(stamp, (time.time() - 61, time.time() - 61))
    launch()
    assert not dead.exists()


# --- progress on a terminal -----------------------------------------------------------------


def on_a_terminal(args: Sequence[str], cwd: Path) -> str:
    """Everything `start` writes to a pty (stdout and stderr), 100 columns wide."""
    _code, shown = run_on_terminal(
        *args, cwd=cwd, env={"NO_COLOR": "1"}, stdin=subprocess.DEVNULL, timeout=30
    )
    return shown


def test_slow_commands_show_a_status_line_that_is_cleared_before_the_summary(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/tasks.toml": (
                '[tasks.slow]\ncommand = "sleep 1; echo done"\nprompt = "{command_output}"\n'
            )
        },
    )
    shown = on_a_terminal(["--dry-run", "task", "slow"], repo)
    line = "start: running task slow …"
    summary = shown.index("start ▸ fake")
    assert shown.index("\r" + line) < summary
    clear = "\r" + " " * len(line) + "\r"
    assert shown.index("\r" + line) < shown.rindex(clear) < summary
    assert line not in on_a_terminal(["--dry-run", "-q", "task", "slow"], repo)


def test_the_status_line_counts_the_seconds(repo: Path) -> None:
    """The command runs until the test has seen the line count a second: no timing assumed."""
    seen = repo.parent / "seen"
    wait = f"i=0; while [ ! -e {seen} ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"
    write_tree(
        repo,
        {
            ".start/tasks.toml": f'[tasks.slow]\ncommand = "{wait}"\nprompt = "x{{command_output}}"\n'
        },
    )

    def watch(shown: str) -> None:
        if "\rstart: running task slow … 1 s" in shown:
            seen.touch()

    _code, shown = run_on_terminal(
        "--dry-run",
        "task",
        "slow",
        cwd=repo,
        env={"NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
        timeout=60,
        watch=watch,
    )
    assert seen.exists(), shown
    line = "start: running task slow … 1 s"
    assert shown.index("\r" + line) < shown.rindex("\r" + " " * len(line)) < shown.index("start ▸")


def test_no_status_line_without_a_terminal(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/tasks.toml": '[tasks.slow]\ncommand = "sleep 0.5"\nprompt = "{command_output}x"\n'
        },
    )
    result = run_start("--dry-run", "task", "slow", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "running" not in result.stderr
