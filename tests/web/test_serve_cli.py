"""`start board serve` as a user runs it: the address on stdout, nothing else there, the page
behind it, and an end at SIGTERM with exit 0; a port that is taken names the fix."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import HANG, REPO


def _serve(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "start", "board", "serve", "--no-open", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def test_serve_prints_its_address_serves_the_page_and_ends_at_sigterm(isolated: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    served = _serve()
    try:
        assert served.stdout is not None
        address = served.stdout.readline().rstrip("\n")
        assert address.startswith("http://127.0.0.1:")
        port = int(address.split(":")[2].split("/")[0])
        token = address.split("?token=")[1]
        assert len(token) == 43
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/board", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=HANG) as answer:
            assert b'"root": "' + str(isolated).encode() + b'"' in answer.read()
    finally:
        served.send_signal(signal.SIGTERM)
        stdout, stderr = served.communicate(timeout=HANG)
    assert served.returncode == 0
    assert stdout == ""  # the address alone, read above
    assert stderr == (
        f"start: serving the board of {isolated} at http://127.0.0.1:{port}/ (the address on "
        "stdout carries its token; Ctrl-C stops)\n"
    )


def test_a_port_that_is_taken_names_the_fix(isolated: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        served = _serve("--port", str(port))
        stdout, stderr = served.communicate(timeout=HANG)
    assert (served.returncode, stdout) == (1, "")
    assert stderr == (
        f"start: start board serve cannot listen on 127.0.0.1:{port}: Address already in use; "
        "give another --port, or none for any free one\n"
    )


def test_json_gives_the_address_its_port_and_token_and_the_browser_never_sees_the_token(
    isolated: Path, tmp_path: Path
) -> None:
    """The browser is started with a private file that sends it on: its command line, which
    every local user can read, holds no token. BROWSER here is a script that records it."""
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    seen = tmp_path / "browser-argv"
    browser = tmp_path / "browser"
    browser.write_text(
        f'#!/bin/sh\ncat "${{1#file://}}" > {seen}.page\necho "$@" > {seen}.tmp\n'
        f"mv {seen}.tmp {seen}\n"
    )
    browser.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO), "BROWSER": str(browser)}
    served = subprocess.Popen(
        [sys.executable, "-m", "start", "board", "serve", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=env,
    )  # fmt: skip
    try:
        assert served.stdout is not None
        told = json.loads(served.stdout.readline())
        assert sorted(told) == ["port", "token", "url"]
        assert told["url"] == f"http://127.0.0.1:{told['port']}/?token={told['token']}"
        deadline = time.monotonic() + HANG
        while not seen.exists():
            assert time.monotonic() < deadline, "the browser was never started"
            time.sleep(0.05)
        argv = seen.read_text()
        assert told["token"] not in argv
        assert argv.startswith("file://")
        page = Path(argv.strip().removeprefix("file://"))
        assert page.stat().st_mode & 0o777 == 0o600
        assert told["url"] in seen.with_name("browser-argv.page").read_text()
    finally:
        served.send_signal(signal.SIGTERM)
        served.communicate(timeout=HANG)
    assert served.returncode == 0
    assert not page.exists()  # removed when the server stopped


def _opened_with(
    tmp_path: Path, names: list[str], env: dict[str, str], *, opened: bool
) -> list[str]:
    """Which of the browsers `names` (fakes on an otherwise empty PATH that record that they
    ran) start board serve's opener starts for a page, with a display set. A console browser
    is waited for; a graphical one runs in the background, so one `opened` is waited for."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(parents=True)
    for name in names:
        fake = bin_ / name
        fake.write_text(f'#!/bin/sh\necho {name} "$@" >> {tmp_path / "ran"}\n')
        fake.chmod(0o755)
    given = {"PATH": str(bin_), "DISPLAY": ":99", "TERM": "xterm", "PYTHONPATH": str(REPO), **env}
    if "HOME" in os.environ:
        given["HOME"] = os.environ["HOME"]
    code = "from start.cli import board_serve; board_serve._open('/tmp/page.html')"
    subprocess.run([sys.executable, "-c", code], env=given, check=True)
    ran = tmp_path / "ran"
    deadline = time.monotonic() + HANG
    while opened and not (ran.exists() and ran.read_text().endswith("\n")):
        assert time.monotonic() < deadline, "the browser was never started"
        time.sleep(0.02)
    return ran.read_text().splitlines() if ran.exists() else []


def test_a_console_browser_is_never_opened_in_the_terminal(tmp_path: Path) -> None:
    """Where no graphical browser is installed, Python's webbrowser falls back to w3m or lynx,
    which would take the terminal the address went to."""
    assert _opened_with(tmp_path, ["w3m", "lynx"], {}, opened=False) == []


def test_a_graphical_browser_or_the_users_own_is_opened(tmp_path: Path) -> None:
    graphical = _opened_with(tmp_path / "a", ["xdg-open"], {}, opened=True)
    assert graphical == ["xdg-open file:///tmp/page.html"]
    chosen = {"BROWSER": "w3m"}  # the user's own choice, console or not
    own = _opened_with(tmp_path / "b", ["w3m"], chosen, opened=True)
    assert own == ["w3m file:///tmp/page.html"]
