"""Tests for start.proc.shell: process groups, timeouts, capture, capping, decoding, shell choice."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from start.base.errors import StartError
from start.proc.process import StoppedError
from start.proc.shell import CommandResult, CommandSpec, ShellNotFoundError, run_all, shell_argv
from tests.conftest import HANG, read_pids, running, wait_gone


def run(spec: CommandSpec) -> CommandResult:
    return run_all([spec])[0]


def spec(
    command: str,
    cwd: Path,
    *,
    shell_name: str | None = "sh",
    timeout: float = 10.0,
    limit: int = 1_048_576,
    separate: bool = False,
) -> CommandSpec:
    return CommandSpec(
        command, shell_name, timeout, str(cwd), output_limit=limit, separate=separate
    )


def wait_dead(pid: int) -> bool:
    """Whether `pid` ends (a killed process needs a moment to be gone; only a hang is too long)."""
    return wait_gone([pid]) == []


def read_pid(path: Path) -> int:
    [pid] = read_pids(path)
    return pid


def finished(directory: Path) -> list[str]:
    """The files that commands write once they have slept their 30 s: none, when they were
    killed before (as a test of their killing checks, rather than how long it took)."""
    return sorted(path.name for path in directory.iterdir() if path.name.startswith("late"))


def wait_for(name: str) -> str:
    """A command that waits until the file `name` exists in its working directory."""
    return f"while [ ! -e {name} ]; do sleep 0.01; done"


# -- running and capturing ---------------------------------------------------------------------


def test_stdout_and_stderr_share_one_pipe_and_keep_their_order(tmp_path: Path) -> None:
    # With two pipes this came out as o1 o2 e1 e2 in about 6 runs of 15.
    command = "echo o1; echo e1 >&2; echo o2; echo e2 >&2"

    results = run_all([spec(command, tmp_path) for _ in range(15)])

    assert [r.output for r in results] == ["o1\ne1\no2\ne2\n"] * 15
    assert {(r.stdout, r.stderr) for r in results} == {("", "")}


def test_separate_captures_each_stream_and_interleaves_by_arrival(tmp_path: Path) -> None:
    command = "echo a; sleep 0.05; echo b >&2; sleep 0.05; echo c"

    result = run(spec(command, tmp_path, separate=True))

    assert result.output == "a\nb\nc\n"
    assert result.stdout == "a\nc\n"
    assert result.stderr == "b\n"
    assert result.returncode == 0
    assert result.ok
    assert result.error is None
    assert not result.timed_out
    assert result.truncated == 0
    assert result.duration > 0


@pytest.mark.parametrize("code", [0, 1, 7])
def test_reports_the_exit_code(tmp_path: Path, code: int) -> None:
    result = run(spec(f"exit {code}", tmp_path))

    assert result.returncode == code
    assert result.ok is (code == 0)
    assert not result.timed_out


def test_a_killed_leader_reports_the_negative_signal(tmp_path: Path) -> None:
    result = run(spec("kill -TERM $$", tmp_path))

    assert result.returncode == -signal.SIGTERM
    assert not result.ok


def test_multi_line_command(tmp_path: Path) -> None:
    result = run(spec("x=1\nif [ $x = 1 ]; then\n  echo one\nfi\n", tmp_path))

    assert result.output == "one\n"


def test_argv_is_the_resolved_shell_flag_and_command(tmp_path: Path) -> None:
    result = run(spec("true", tmp_path))

    assert result.argv == (shutil.which("sh"), "-c", "true")
    assert result.spec == spec("true", tmp_path)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.text(st.characters(exclude_characters="\x00", codec="utf-8")), max_size=4))
def test_args_are_positional_parameters_that_no_shell_parses(
    tmp_path: Path, words: list[str]
) -> None:
    args = ("printf", "[%s]", *words)
    result = run(spec('exec "$@"', tmp_path)._replace(args=args))

    assert result.argv == (shutil.which("sh"), "-c", 'exec "$@"', "start", *args)
    assert result.output == "".join(f"[{word}]" for word in words) if words else "[]"


def test_stdin_is_dev_null(tmp_path: Path) -> None:
    result = run(spec("cat", tmp_path, timeout=5))

    assert not result.timed_out
    assert result.returncode == 0
    assert result.output == ""


def test_runs_in_the_given_directory(tmp_path: Path) -> None:
    where = tmp_path / "elsewhere"
    where.mkdir()
    (where / "marker.txt").write_text("")

    result = run(spec("pwd -P; ls", where))

    assert result.output == f"{where.resolve()}\nmarker.txt\n"


def test_inherits_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELL_TEST_VALUE", "inherited value")

    result = run(spec('printf %s "$SHELL_TEST_VALUE"', tmp_path))

    assert result.output == "inherited value"


def test_a_variable_removed_from_the_environment_is_not_inherited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A command without variables of its own inherits the process's environment as it stands.
    monkeypatch.setenv("SHELL_TEST_GONE", "here")
    monkeypatch.delenv("SHELL_TEST_GONE")

    result = run(spec('printf %s "${SHELL_TEST_GONE-unset}"', tmp_path))

    assert result.output == "unset"


def test_runs_in_its_own_session(tmp_path: Path) -> None:
    result = run(spec("echo $$; ps -o sid= -p $$", tmp_path))
    if result.returncode != 0:
        pytest.skip("ps -o sid= is not supported here")

    pid, sid = result.output.split()
    assert pid == sid
    assert int(sid) != os.getsid(0)


def test_missing_working_directory_is_an_error_result(tmp_path: Path) -> None:
    missing = tmp_path / "missing"

    result = run(spec("true", missing))

    assert result.error == f"working directory '{missing}' does not exist"
    assert result.returncode is None
    assert not result.ok


def test_unexecutable_shell_is_an_error_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fakesh"
    fake.write_text("not a program\n")
    fake.chmod(0o755)  # executable, but no interpreter line and not a binary
    monkeypatch.chdir(tmp_path / "..")  # from any directory: no /bin/sh runs it as a script

    result = run(spec("true", tmp_path, shell_name=str(fake)))

    assert result.error == f"cannot start '{fake}': Exec format error"
    assert result.argv == (str(fake), "-c", "true")
    assert result.returncode is None
    assert not result.ok


def test_a_command_in_another_directory_runs_there_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command whose directory is not start's own runs there with the same argv, in its own
    session, with its own exit status, and a directory name no shell reads."""
    elsewhere = tmp_path / "elsewhere"
    where = tmp_path / "it's $(here)"
    elsewhere.mkdir()
    where.mkdir()
    monkeypatch.chdir(elsewhere)
    command = 'pwd -P; printf "%s|" "$0" "$@"; echo; kill -0 $$ && exit 7'

    result = run(spec(command, where, shell_name="bash"))

    assert result.output == f"{where.resolve()}\n{shutil.which('bash')}|\n"
    assert result.argv == (shutil.which("bash"), "-c", command)
    assert result.returncode == 7


@pytest.mark.usefixtures("removed_cwd")
def test_a_command_runs_when_starts_own_directory_was_removed(tmp_path: Path) -> None:
    result = run(spec("pwd -P", tmp_path))

    # (start itself needs -d DIR there.) Some shells first warn that getcwd() failed.
    assert result.returncode == 0
    assert result.output.endswith(f"{tmp_path.resolve()}\n")


def test_without_waitid_an_exited_leader_is_reaped_once_and_its_status_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS has no os.waitid: `leader_exited` reaps the leader, and `finish` uses the status kept."""
    monkeypatch.delattr(os, "waitid")

    results = run_all(
        [spec(f"exit {n}", tmp_path) for n in (0, 3)] + [spec("kill -9 $$", tmp_path)]
    )

    assert [r.returncode for r in results] == [0, 3, -9]


def test_a_command_inherits_no_descriptor_but_its_three(tmp_path: Path) -> None:
    """A descriptor start holds open, even an inheritable one, never reaches a command."""
    read, write = os.pipe()
    held = os.dup2(write, 99)  # inheritable, and far from any the command opens itself
    try:
        result = run(
            spec(f"ls /proc/self/fd; : >&{held} && echo leaked", tmp_path, shell_name="bash")
        )
    finally:
        for fd in (read, write, held):
            os.close(fd)
    assert "leaked" not in result.output
    assert "99" not in result.output.split()


def test_a_command_gets_the_default_sigpipe(tmp_path: Path) -> None:
    """Python ignores SIGPIPE, and an ignored signal stays ignored across exec: `yes` would
    then see EPIPE and complain instead of ending quietly when `head` stops reading."""
    result = run(spec("yes | head -c 2", tmp_path))

    assert (result.returncode, result.output) == (0, "y\n")


# -- the background and the process group ------------------------------------------------------


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    # Killed at the timeout, the command and its background job never say they finished.
    pid_file = tmp_path / "grandchild.pid"
    command = (
        f"(sleep 30; touch late.job) & echo $! > {pid_file}; echo started; sleep 30; touch late"
    )

    result = run(spec(command, tmp_path, timeout=1))

    assert finished(tmp_path) == []
    assert result.timed_out
    assert result.returncode is None
    assert not result.ok
    assert result.error is None
    assert result.output == "started\n"
    assert wait_dead(read_pid(pid_file))


def test_a_grandchild_holding_the_pipes_keeps_the_command_running(tmp_path: Path) -> None:
    result = run(spec("(sleep 0.2; echo late) & echo early", tmp_path))

    assert result.output == "early\nlate\n"
    assert result.returncode == 0
    assert not result.timed_out


def test_a_grandchild_holding_the_pipes_past_the_deadline_times_out(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    command = f"(sleep 30; echo late; touch late) & echo $! > {pid_file}; exit 0"

    result = run(spec(command, tmp_path, timeout=1))

    assert (result.output, finished(tmp_path)) == ("", [])
    assert result.timed_out
    assert result.returncode is None
    assert wait_dead(read_pid(pid_file))


def test_a_detached_grandchild_is_killed_when_the_command_ends(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"

    result = run(spec(f"sleep 30 >/dev/null 2>&1 & echo $! > {pid_file}", tmp_path))

    assert result.returncode == 0
    assert not result.timed_out
    assert wait_dead(read_pid(pid_file))


def test_a_leader_that_closes_its_pipes_is_still_awaited(tmp_path: Path) -> None:
    result = run(spec("echo before; exec >/dev/null 2>&1; sleep 0.2; exit 3", tmp_path))

    assert result.output == "before\n"
    assert result.returncode == 3
    assert not result.timed_out


def test_awaits_a_leader_without_pidfds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "pidfd_open", raising=False)

    result = run(spec("exec >/dev/null 2>&1; sleep 0.2; exit 3", tmp_path))

    assert result.returncode == 3
    assert not result.timed_out


def test_keyboard_interrupt_kills_every_group_and_propagates(tmp_path: Path) -> None:
    """A KeyboardInterrupt from a handler of another signal, once both commands run (sent from
    progress, by then both are run_all's): neither they nor their background jobs live to
    finish (each would say so in a file)."""
    pid_files = [tmp_path / f"{n}.pid" for n in range(2)]
    specs = [
        spec(
            f"(sleep 30; touch late.{n}.job) & echo $! > {p}; sleep 30; touch late.{n}",
            tmp_path,
            timeout=HANG,
        )
        for n, p in enumerate(pid_files)
    ]

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    def progress(running: list[str]) -> None:
        if running:  # not the [] that clears it
            for pid_file in pid_files:
                read_pid(pid_file)
            os.kill(os.getpid(), signal.SIGALRM)

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_all(specs, progress=progress)
    finally:
        signal.signal(signal.SIGALRM, previous)

    for pid_file in pid_files:
        assert wait_dead(read_pid(pid_file))
    assert finished(tmp_path) == []


# -- run_all -----------------------------------------------------------------------------------


def test_run_all_runs_concurrently_and_keeps_input_order(tmp_path: Path) -> None:
    # Each waits until all four have started (one at a time, the first would wait for ever),
    # and each but the last until the one after it has ended: they end in reverse order.
    every = " && ".join(f"[ -e started.{n} ]" for n in range(4))
    specs = [
        spec(
            f"touch started.{n}; until {every}; do sleep 0.01; done; "
            + (wait_for(f"ended.{n + 1}") + "; " if n < 3 else "")
            + f"echo {n}; touch ended.{n}",
            tmp_path,
            timeout=HANG,
        )
        for n in range(4)
    ]

    results = run_all(specs)

    assert [(r.output, r.timed_out) for r in results] == [(f"{n}\n", False) for n in range(4)]
    assert [r.spec for r in results] == specs


def test_run_all_applies_each_commands_own_timeout(tmp_path: Path) -> None:
    specs = [
        spec("sleep 30; touch late", tmp_path, timeout=0.5),
        spec("sleep 0.2; echo done", tmp_path, timeout=HANG),
        spec("true", tmp_path, shell_name="no-such-shell-for-start-tests"),
        spec("exit 4", tmp_path, timeout=HANG),
    ]

    slow, fine, missing, failing = run_all(specs)

    assert finished(tmp_path) == []
    assert slow.timed_out and slow.returncode is None
    assert fine.ok and fine.output == "done\n"
    assert missing.error == "shell 'no-such-shell-for-start-tests' not found on PATH"
    assert failing.returncode == 4 and not failing.timed_out


def test_an_infinite_timeout_never_expires(tmp_path: Path) -> None:
    result = run(spec("echo hi", tmp_path, timeout=float("inf")))

    assert result.ok
    assert result.output == "hi\n"


def test_run_all_of_nothing(tmp_path: Path) -> None:
    assert run_all([]) == []


def test_meanwhile_runs_while_the_commands_run(tmp_path: Path) -> None:
    # Each command waits for the file that `meanwhile` writes: were it called after the wait,
    # they would time out.
    flag = tmp_path / "flag"
    wait = f"while [ ! -e {flag} ]; do sleep 0.01; done; echo saw"
    specs = [spec(wait, tmp_path, timeout=5), spec(wait, tmp_path, timeout=5)]
    calls: list[float] = []

    def meanwhile() -> None:
        calls.append(time.monotonic())
        flag.write_text("")

    results = run_all(specs, meanwhile=meanwhile)

    assert len(calls) == 1
    assert [(r.output, r.timed_out) for r in results] == [("saw\n", False)] * 2


def test_a_failing_meanwhile_kills_the_commands_and_propagates(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    command = f"sleep 30 & echo $! > {pid_file}; sleep 30"

    def meanwhile() -> None:
        read_pid(pid_file)  # the command has started
        raise RuntimeError("meanwhile failed")

    with pytest.raises(RuntimeError, match="meanwhile failed"):
        run_all([spec(command, tmp_path, timeout=20)], meanwhile=meanwhile)

    assert wait_dead(read_pid(pid_file))


def test_meanwhile_is_not_called_without_commands(tmp_path: Path) -> None:
    called: list[bool] = []
    assert run_all([], meanwhile=lambda: called.append(True)) == []
    assert called == []


# -- capping -----------------------------------------------------------------------------------


def test_caps_output_with_a_marker_and_the_exact_count(tmp_path: Path) -> None:
    result = run(spec("yes x | head -c 1000", tmp_path, limit=100))

    assert result.output == "x\n" * 50 + "[... truncated 900 bytes ...]\n"
    assert result.stdout == ""
    assert result.stderr == ""
    assert result.truncated == 900


def test_the_marker_gets_its_own_line(tmp_path: Path) -> None:
    result = run(spec("yes x | head -c 1000", tmp_path, limit=99))

    assert result.output == "x\n" * 49 + "x\n[... truncated 901 bytes ...]\n"
    assert result.truncated == 901


def test_each_stream_and_the_interleaving_have_their_own_cap(tmp_path: Path) -> None:
    command = "yes o | head -c 150; sleep 0.05; yes e | head -c 130 >&2"

    result = run(spec(command, tmp_path, limit=100, separate=True))

    assert result.output == "o\n" * 50 + "[... truncated 180 bytes ...]\n"
    assert result.stdout == "o\n" * 50 + "[... truncated 50 bytes ...]\n"
    assert result.stderr == "e\n" * 50 + "[... truncated 30 bytes ...]\n"
    assert result.truncated == 180


def test_a_zero_limit_keeps_nothing(tmp_path: Path) -> None:
    result = run(spec("echo hello", tmp_path, limit=0))

    assert result.output == "[... truncated 6 bytes ...]\n"
    assert result.truncated == 6


def test_the_cap_does_not_split_a_character(tmp_path: Path) -> None:
    e_acute = r"\303\251"

    result = run(spec(f"printf '{e_acute * 10}'", tmp_path, limit=5))

    assert result.output == "éé\n[... truncated 16 bytes ...]\n"
    assert result.truncated == 16


@pytest.mark.parametrize("splice", [True, False], ids=["splice", "read"])
def test_large_output_keeps_memory_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, splice: bool
) -> None:
    if not splice:
        monkeypatch.delattr(os, "splice", raising=False)
    size = 50_000_000

    tracemalloc.start()
    try:
        command = f"head -c {size} /dev/zero; echo tail >&2"
        result = run(spec(command, tmp_path, limit=1_000_000, separate=True))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert result.returncode == 0
    assert result.truncated == size + 5 - 1_000_000
    assert (
        result.output
        == "\ufffd" * 1_000_000 + f"\n[... truncated {size + 5 - 1_000_000:,} bytes ...]\n"
    )
    assert result.stdout.endswith(f"\n[... truncated {size - 1_000_000:,} bytes ...]\n")
    assert result.stderr == "tail\n"
    assert peak < 20_000_000


# -- decoding ----------------------------------------------------------------------------------


def test_nul_bytes_become_replacement_characters(tmp_path: Path) -> None:
    result = run(spec(r"printf 'a\000b'", tmp_path))

    assert result.output == "a\ufffdb"


def test_invalid_utf8_becomes_replacement_characters(tmp_path: Path) -> None:
    result = run(spec(r"printf 'a\377b\303'", tmp_path))

    assert result.output == "a\ufffdb\ufffd"
    assert result.truncated == 0


def test_valid_utf8_is_kept(tmp_path: Path) -> None:
    result = run(spec("printf 'h\\303\\251llo \\342\\202\\254 \\360\\237\\230\\200'", tmp_path))

    assert result.output == "héllo € 😀"


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.binary(max_size=300), limit=st.integers(min_value=0, max_value=320))
def test_capture_matches_a_decode_of_the_kept_prefix(
    tmp_path: Path, data: bytes, limit: int
) -> None:
    source = tmp_path / "data.bin"
    source.write_bytes(data)

    result = run(spec(f"cat '{source}'", tmp_path, limit=limit))

    def decode(raw: bytes) -> str:
        return raw.decode("utf-8", "replace").replace("\x00", "\ufffd")

    if len(data) <= limit:
        assert result.output == decode(data)
        assert result.truncated == 0
        return
    dropped = result.truncated
    assert len(data) - limit <= dropped <= len(data) - limit + 3
    kept = decode(data[: len(data) - dropped])
    separator = "\n" if kept and not kept.endswith("\n") else ""
    assert result.output == f"{kept}{separator}[... truncated {dropped} bytes ...]\n"


# -- choosing the shell ------------------------------------------------------------------------

# An independent oracle for the run-this-program flag: each interpreter that is installed here runs
# a tiny program through shell_argv and must print "ok". (A copy of the table would only compare
# the table with itself.)
PROGRAMS = {
    "sh": "echo ok",
    "bash": "echo ok",
    "dash": "echo ok",
    "zsh": "echo ok",
    "ksh": "echo ok",
    "mksh": "echo ok",
    "fish": "echo ok",
    "python3": "print('ok')",
    "node": "console.log('ok')",
    "ruby": "puts 'ok'",
    "perl": 'say "ok"',
    "pwsh": "Write-Output ok",
    "deno": "console.log('ok')",
}


@pytest.mark.parametrize(("name", "program"), PROGRAMS.items())
def test_each_installed_interpreter_runs_the_program(name: str, program: str) -> None:
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed here")
    argv = shell_argv(name, program)
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr


@pytest.mark.parametrize(("family", "versioned"), [("python3", "python3.99"), ("perl", "perl5.99")])
def test_a_versioned_interpreter_takes_its_familys_flag(
    tmp_path: Path, family: str, versioned: str
) -> None:
    # The interpreter itself, not a shim that dispatches on its own name (pyenv's does).
    real = sys.executable if family == "python3" else shutil.which(family)
    if real is None:
        pytest.skip(f"{family} is not installed here")
    link = tmp_path / versioned
    link.symlink_to(real)
    argv = shell_argv(str(link), PROGRAMS[family])
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr


def make_stub(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "fake-bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", str(directory))
    yield directory


@pytest.mark.parametrize(("name", "flag"), [("node", "-e"), ("perl", "-E"), ("pwsh", "-Command")])
def test_a_shell_given_as_a_path_gets_its_flag(tmp_path: Path, name: str, flag: str) -> None:
    stub = make_stub(tmp_path / "elsewhere", name)

    assert shell_argv(str(stub), "CODE") == [str(stub), flag, "CODE"]


def test_a_shell_path_may_start_with_tilde(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    stub = make_stub(tmp_path / "tools", "zsh")

    assert shell_argv("~/tools/zsh", "CODE") == [str(stub), "-c", "CODE"]


def test_auto_prefers_bash(fake_path: Path) -> None:
    make_stub(fake_path, "sh")
    bash = make_stub(fake_path, "bash")

    assert shell_argv(None, "CODE") == [str(bash), "-c", "CODE"]


def test_auto_falls_back_to_sh(fake_path: Path) -> None:
    sh = make_stub(fake_path, "sh")

    assert shell_argv(None, "CODE") == [str(sh), "-c", "CODE"]


def test_auto_without_any_shell_raises(fake_path: Path) -> None:
    with pytest.raises(ShellNotFoundError) as caught:
        shell_argv(None, "CODE")

    assert isinstance(caught.value, StartError)
    assert str(caught.value) == "shell 'sh' not found on PATH"


def test_a_missing_shell_raises(fake_path: Path) -> None:
    with pytest.raises(ShellNotFoundError) as caught:
        shell_argv("zsh", "CODE")

    assert str(caught.value) == "shell 'zsh' not found on PATH"


def test_a_missing_shell_is_an_error_result(tmp_path: Path) -> None:
    result = run(spec("true", tmp_path, shell_name="no-such-shell-for-start-tests"))

    assert result == CommandResult(
        spec=spec("true", tmp_path, shell_name="no-such-shell-for-start-tests"),
        argv=(),
        returncode=None,
        timed_out=False,
        output="",
        stdout="",
        stderr="",
        truncated=0,
        duration=result.duration,
        error="shell 'no-such-shell-for-start-tests' not found on PATH",
    )
    assert not result.ok


def test_auto_runs_a_real_shell(tmp_path: Path) -> None:
    result = run(spec("echo auto", tmp_path, shell_name=None))

    assert result.ok
    assert result.output == "auto\n"
    assert Path(result.argv[0]).name in ("bash", "sh")


@pytest.mark.skipif(shutil.which("python3") is None, reason="python3 is not on PATH")
def test_python3_as_the_shell(tmp_path: Path) -> None:
    result = run(
        spec(
            'import sys\nprint("hi")\nprint("err", file=sys.stderr)',
            tmp_path,
            shell_name="python3",
            separate=True,
        )
    )

    assert result.ok
    assert result.stdout == "hi\n"
    assert result.stderr == "err\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_node_as_the_shell(tmp_path: Path) -> None:
    result = run(spec('console.log("hi")', tmp_path, shell_name="node"))

    assert result.ok
    assert result.output == "hi\n"


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not on PATH")
def test_perl_as_the_shell(tmp_path: Path) -> None:
    result = run(spec('say "hi"', tmp_path, shell_name="perl"))

    assert result.ok
    assert result.output == "hi\n"


# -- stopping: SIGINT, SIGTERM and SIGHUP while commands run ----------------------------------


@pytest.mark.parametrize(
    ("signum", "code"),
    [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, None)],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)
def test_a_stop_signal_kills_every_group_and_raises(
    tmp_path: Path, signum: int, code: int | None
) -> None:
    import threading

    pid_files = [tmp_path / f"{n}.pid" for n in range(2)]
    specs = [
        spec(
            f"(sleep 30; touch late.{n}.job) & echo $! > {p}; sleep 30; touch late.{n}",
            tmp_path,
            timeout=HANG,
        )
        for n, p in enumerate(pid_files)
    ]
    before = signal.getsignal(signum)

    def send() -> None:
        for pid_file in pid_files:
            read_pid(pid_file)
        os.kill(os.getpid(), signum)

    sender = threading.Thread(target=send)
    sender.start()
    with pytest.raises((StoppedError, KeyboardInterrupt)) as caught:
        run_all(specs)
    sender.join()

    if code is None:  # Ctrl-C: the CLI says "interrupted" and exits 130
        assert isinstance(caught.value, KeyboardInterrupt)
    else:
        assert isinstance(caught.value, StoppedError)
        assert caught.value.exit_code == code
        name = signal.Signals(signum).name
        assert str(caught.value) == f"stopped by {name}; the running commands were killed"
    for pid_file in pid_files:
        assert wait_dead(read_pid(pid_file))
    assert finished(tmp_path) == []
    assert signal.getsignal(signum) == before


def test_handlers_are_installed_only_while_commands_run(tmp_path: Path) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    seen = run(spec("kill -0 $PPID && echo ok", tmp_path))
    assert seen.output == "ok\n"
    assert {s: signal.getsignal(s) for s in before} == before


def test_outside_the_main_thread_signals_are_left_alone(tmp_path: Path) -> None:
    import threading

    results: list[CommandResult] = []
    worker = threading.Thread(target=lambda: results.extend(run_all([spec("echo hi", tmp_path)])))
    worker.start()
    worker.join(HANG)

    assert [r.output for r in results] == ["hi\n"]


def test_a_signal_while_a_command_starts_is_raised_once_it_is_tracked() -> None:
    from start.proc.process import Stop

    with Stop() as stop:
        with pytest.raises(StoppedError) as caught, stop.held():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            reached = True  # the signal waited for the end of the held block
        assert reached
    assert caught.value.exit_code == 143


# -- what happened, in words -------------------------------------------------------------------


def test_status_says_what_happened(tmp_path: Path) -> None:
    failed, killed, slow, ok = run_all(
        [
            spec("exit 3", tmp_path),
            spec("kill -KILL $$", tmp_path),
            spec("sleep 5", tmp_path, timeout=0.2),
            spec("true", tmp_path),
        ]
    )
    missing = run(spec("true", tmp_path, shell_name="no-such-shell-for-start-tests"))

    assert failed.status == "failed with exit code 3"
    assert killed.status == "killed by SIGKILL"
    assert slow.status == "timed out after 0.2 s"
    assert ok.status == "succeeded"
    assert missing.status == (
        "could not start: shell 'no-such-shell-for-start-tests' not found on PATH"
    )


def test_a_timeout_too_large_for_the_selector_does_not_overflow(tmp_path: Path) -> None:
    result = run(spec("echo hi", tmp_path, timeout=1e12))

    assert result.ok
    assert result.output == "hi\n"


# -- progress ----------------------------------------------------------------------------------


def test_progress_names_what_still_runs_after_the_delay_then_clears(tmp_path: Path) -> None:
    # Each command runs until progress has been told of it: a once both run, b once a ended.
    calls: list[list[str]] = []
    specs = [
        spec(wait_for("a.go"), tmp_path, timeout=HANG)._replace(label="task a"),
        spec(wait_for("b.go"), tmp_path, timeout=HANG)._replace(label="context b"),
    ]

    def progress(running: list[str]) -> None:
        calls.append(running)
        go = {("task a", "context b"): "a.go", ("context b",): "b.go"}.get(tuple(running))
        if go is not None:
            (tmp_path / go).touch()

    results = run_all(specs, progress=progress)

    assert calls == [["task a", "context b"], ["context b"], []]
    assert [r.timed_out for r in results] == [False, False]


def test_no_progress_for_quick_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Quick: done before the delay, however busy the machine (which a delay of 0.5 s was not).
    monkeypatch.setattr("start.proc.shell.PROGRESS_DELAY", HANG)
    calls: list[list[str]] = []

    run_all([spec("sleep 0.1", tmp_path)], progress=calls.append)

    assert calls == []


def test_progress_is_cleared_when_the_run_is_stopped(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    def progress(running: list[str]) -> None:
        calls.append(running)
        if running:  # shown: now the run is stopped
            os.kill(os.getpid(), signal.SIGALRM)

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_all([spec("sleep 300", tmp_path)._replace(label="task t")], progress=progress)
    finally:
        signal.signal(signal.SIGALRM, previous)

    assert calls == [["task t"], []]


def test_the_tests_running_helper_sees_a_zombie_and_a_reaped_pid_as_ended() -> None:
    # The helper every test uses to look for survivors (tests.conftest.running).
    import subprocess

    live = subprocess.Popen(["sleep", "30"])
    ended = subprocess.Popen(["true"])
    try:
        assert running(live.pid)
        assert wait_gone([ended.pid]) == []  # a zombie until it is reaped
    finally:
        live.kill()
        live.wait()
        ended.wait()
    assert not running(live.pid)
