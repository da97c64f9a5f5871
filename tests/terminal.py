"""Run the real `start` on a pseudo-terminal of a given size, and capture what it draws."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from tests.conftest import REPO


def run_on_terminal(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    columns: int = 100,
    timeout: float = 60,
    stdin: int | None = None,
    watch: Callable[[str], bytes | None] | None = None,
    rows: int = 40,
    interrupt: Callable[[str], bool] | None = None,
) -> tuple[int, str]:
    """`start ARGS` with stdout and stderr on a terminal `columns` wide, and stdin too unless
    `stdin` names another (such as subprocess.DEVNULL). `watch` is given everything drawn so
    far after each read, so a test can act on what it sees; what it returns is typed.
    `interrupt` is given the same, and once it says so the process gets SIGINT (Ctrl-C: the
    terminal is not its controlling one, so a typed ^C would not be).

    Returns the exit code and everything written to the terminal (\\r\\n turned into \\n).
    """
    try:
        leader, follower = pty.openpty()
    except OSError as error:  # pragma: no cover - depends on the sandbox
        pytest.skip(f"no pseudo-terminal: {error}")
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    full_env = {**os.environ, "TERM": "xterm-256color", **(env or {})}
    full_env.pop("COLUMNS", None)
    full_env.pop("LINES", None)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "start", *args],
        cwd=cwd,
        env=full_env,
        stdin=follower if stdin is None else stdin,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every holder of the terminal has closed it
                break
            if not chunk:
                break
            chunks.append(chunk)
            if watch is not None:
                typed = watch(b"".join(chunks).decode("utf-8", "replace"))
                if typed:
                    os.write(leader, typed)
            if interrupt is not None and interrupt(b"".join(chunks).decode("utf-8", "replace")):
                proc.send_signal(signal.SIGINT)
                interrupt = None
    finally:
        os.close(leader)
    code = proc.wait(timeout=timeout)
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
