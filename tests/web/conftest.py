"""`start board serve` in a real browser: the server as a subprocess in a scratch project, and
Debian's Chromium driven by Playwright for Python (one browser a module, a fresh context a test).

Without Playwright or /usr/bin/chromium the browser tests are skipped, saying which is missing;
with START_BROWSER_REQUIRED=1 (CI's .ci/run) they fail instead, so a machine that lost either
cannot pass them by skipping.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import pytest

from tests.conftest import HANG, REPO, run_start, write_tree
from tests.fake_headless import agent

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page
    from playwright.sync_api._generated import LocatorAssertions

CHROMIUM: Final = "/usr/bin/chromium"
# Offline and quiet: no sandbox (containers), no GPU, none of Chromium's own calls home.
CHROMIUM_ARGS: Final = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Read at import: the autouse `isolated` fixture removes every START_* variable from each test.
REQUIRED: Final = os.environ.get("START_BROWSER_REQUIRED") == "1"
# A directory given relative to where pytest started: each test runs in a directory of its own.
SCREENSHOTS: Final = (
    os.path.abspath(os.environ["START_SCREENSHOTS"])
    if os.environ.get("START_SCREENSHOTS")
    else None
)
# How long an expectation waits for the page: only a hang fails it. How soon a change shows
# (the "within a second") is a speed, which make bench times in this browser (15c).
WAIT_MS: Final = HANG * 1000

# A headless stand-in agent (tests/fake_headless.py), so a test can record a run cheaply.
CONFIG: Final = f"""
[settings]
default_agent = "fake"

{agent("fake")}
"""


def missing() -> str | None:
    """What the browser tests lack on this machine, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[test]')"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is not installed (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """Chromium, headless, for the tests of one module; skipped (or, with
    START_BROWSER_REQUIRED=1, failed) when it or Playwright is missing."""
    lack = missing()
    if lack is not None:
        if REQUIRED:
            pytest.fail(f"START_BROWSER_REQUIRED=1, but {lack}")
        pytest.skip(lack)
    from playwright.sync_api import sync_playwright

    # Its own HOME: whatever Chromium keeps beside its profile stays out of the user's.
    home = tmp_path_factory.mktemp("chromium-home")
    env: dict[str, str | float | bool] = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PATH": os.environ.get("PATH", os.defpath),
    }
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, env=env)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A trusted git repository (the working directory) whose agent is the headless stand-in."""
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


@dataclass(frozen=True)
class Served:
    """A running `start board serve`: the address it printed, and its parts."""

    address: str  # http://127.0.0.1:PORT/?token=TOKEN
    port: int
    token: str

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def served(project: Path) -> Iterator[Served]:
    """`start board serve --no-open` in the project, until the test ends; then SIGTERM, which
    it answers by exiting 0."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    errors = project.parent / "serve.stderr"
    with open(errors, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "start", "board", "serve", "--no-open"],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], HANG)
        line = process.stdout.readline().decode() if ready else ""
        assert line.endswith("\n"), f"start board serve printed no address: {errors.read_text()}"
        address = line.strip()
        parts = urlsplit(address)
        assert (parts.scheme, parts.hostname, parts.path) == ("http", "127.0.0.1", "/"), address
        assert parts.port is not None and parts.query.startswith("token="), address
        yield Served(address, parts.port, parts.query.removeprefix("token="))
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(HANG)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        finally:
            assert process.stdout is not None
            process.stdout.close()
    assert code == 0, f"start board serve exited {code} on SIGTERM: {errors.read_text()}"


@pytest.fixture
def page(browser: Browser, served: Served) -> Iterator[Page]:
    """A fresh browser context at 1280x800, past the token address (which sets the cookie and
    leads to the board), with the page's live updates connected."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(WAIT_MS)  # only a hang fails a step, as for every test here
    try:
        opened = context.new_page()
        opened.goto(served.address)
        assert opened.url == f"{served.origin}/"  # the token left the address it keeps
        opened.wait_for_selector("#live.on")
        yield opened
    finally:
        context.close()


def start(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real `start`, in a process of its own, in CWD."""
    return run_start(*args, cwd=cwd, env=env)


def board(cwd: Path, *args: str) -> str:
    """`start board ARGS` succeeding; its stdout."""
    done = start(cwd, "board", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def shown(cwd: Path, id_: str) -> dict[str, Any]:
    """An item as `start board show ID --json` gives it."""
    found: dict[str, Any] = json.loads(board(cwd, "show", id_, "--json"))
    return found


def typed(page: Page, field: str, text: str) -> None:
    """Type `text` into `field` of an item's forms, so that the forms count as being edited and
    live updates leave them as they are. Playwright focuses a field, then types into it, in two
    steps: a live update that lands between them replaces the form with a fresh one, and the
    text goes nowhere; then it types again (a person's keystroke is one step, and marks the
    form at once)."""
    for _ in range(5):
        page.locator(field).fill(text)
        if page.locator(f'#actions[data-dirty="1"] {field}').count() == 1:
            break
    expect(page.locator(f'#actions[data-dirty="1"] {field}')).to_have_value(text)


def expect(locator: Locator) -> LocatorAssertions:
    """Playwright's `expect`, imported as a test runs: so the modules of tests/web import
    without Playwright, and their tests are skipped (or fail) as the `browser` fixture says."""
    from playwright.sync_api import expect as playwright_expect

    playwright_expect.set_options(timeout=WAIT_MS)
    return playwright_expect(locator)
