"""Fuzzing: random TOML documents, random bytes and random file types go through load, validate,
show and a dry-run launch. Each ends in success or a StartError: never an internal error, and never
a hang (every example runs under an alarm)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from start.base.errors import StartError
from start.config import schema
from start.config.load import load
from tests.conftest import FAKE_AGENT, invoke

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow


# Exit codes a user can see for bad input; 70 (an internal error) is not one of them.
EXPECTED_CODES = {0, 1, 2, 3, 4, 5, 126, 127}
# Commands are never random: a fuzzer must not run arbitrary shell text. These end quickly.
COMMANDS = [
    "echo hi",
    "exit 3",
    "printf 'a\\000b\\377'",
    "kill -KILL $$",
    "echo out; echo err >&2",
    "head -c 300000 /dev/zero",
    "sleep 0.2; echo late",
]
SHELLS = ["sh", "bash", "python3", "/bin/sh", "fish-nope", "bash -e", "", " ", "~/nowhere/sh"]


def _specials() -> Path:
    """A directory of files that are hostile to read, for items to name by absolute path."""
    import atexit
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="start-fuzz-"))
    atexit.register(shutil.rmtree, directory, True)
    os.mkfifo(directory / "fifo")
    (directory / "dir").mkdir()
    (directory / "loop").symlink_to("loop")
    (directory / "dangling").symlink_to(directory / "gone")
    with open(directory / "sparse", "wb") as handle:
        handle.truncate(50_000_000)  # sparse: no disk
    (directory / "nul").write_bytes(b"a\x00b\xff\n")
    return directory


SPECIALS = _specials()
FILES = [
    *(str(SPECIALS / name) for name in ("fifo", "dir", "loop", "dangling", "sparse", "nul")),
    "/dev/null",
    "/dev/zero",
    "missing.md",
]
FILE_TYPES = [
    "regular",
    "regular",
    "regular",
    "fifo",
    "dir",
    "loop",
    "dangling",
    "devnull",
    "sparse",
]
AGENT = (
    f'[settings]\ndefault_agent = "fake"\n'
    f'[agents.fake]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} {{prompt_file}}"\n'
)
# Deeper than Python's stack allows, even with the frames hypothesis adds while it runs a test.
DEEP = "\nx = " + "[" * 5000 + "]" * 5000 + "\n"
SECTIONS = ["settings", "agents", "roles", "contexts", "context", "tasks"]
FIELDS = sorted(
    {field for fields in schema.ITEM_SECTIONS.values() for field in fields} | set(schema.SETTINGS)
)

NAME = st.one_of(
    st.from_regex(r"[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,4})?", fullmatch=True),
    st.text(min_size=1, max_size=8),
)
SCALAR = st.one_of(
    st.text(max_size=20),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([0, 1, 30, 86400, 86401, 10**9]),
    st.booleans(),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=4), max_size=3),
)


def value_for(field: str) -> st.SearchStrategy[Any]:
    """Plausible values for a known field, wrong ones included; random ones otherwise."""
    special: dict[str, st.SearchStrategy[Any]] = {
        "command": st.sampled_from(COMMANDS),
        "shell": st.sampled_from(SHELLS),
        "file": st.sampled_from(FILES),
        "bin": st.sampled_from([str(FAKE_AGENT), "no-such-agent-bin", "/etc", "./x"]),
        "command_timeout": st.sampled_from([1, 2, 0, -1, 86401, 10**9, "30", True]),
        "prompt": st.sampled_from(
            ["{command_output}", "{file_contents}", "{file}", "{instructions}", "{{x}}", "{bad"]
        )
        | st.text(max_size=20),
        "command_output_limit": st.sampled_from([1, 10, 1 << 20, 0, 10**15]),
        "file_size_limit": st.sampled_from([1, 10, 1 << 20, 0, 10**15]),
    }
    return special.get(field, SCALAR)


# An item: mostly its source fields (those make things happen), plus any others.
SOURCE = ["command", "file", "prompt", "shell", "command_timeout"]
ITEM = st.tuples(
    st.sets(st.sampled_from(SOURCE), min_size=1), st.sets(st.sampled_from(FIELDS), max_size=3)
).flatmap(lambda keys: st.fixed_dictionaries({k: value_for(k) for k in keys[0] | keys[1]}))
SECTION_BODY = st.one_of(st.dictionaries(NAME, st.one_of(ITEM, SCALAR), max_size=3), SCALAR)
DOCUMENT = st.dictionaries(st.one_of(st.sampled_from(SECTIONS), NAME), SECTION_BODY, max_size=5)


@st.composite
def config_bytes(draw: st.DrawFn) -> bytes:
    """A random document as TOML, sometimes damaged; or random bytes."""
    import tomlkit

    if draw(st.integers(0, 5)) == 0:
        return draw(st.binary(max_size=200))
    try:
        text = tomlkit.dumps(draw(DOCUMENT))
    except Exception:  # a value tomlkit cannot write: any document will do
        text = ""
    if text and draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        damage = draw(st.sampled_from(["", "[", "]", '"', "\x00", "=", "\n[x", DEEP]))
        text = text[:at] + damage + text[at:]
    return text.encode("utf-8", "surrogatepass")


class Hang(BaseException):
    """An example took too long: a hang, which is a failure."""


def place(file_type: str, path: Path, data: bytes) -> None:
    """Put a file of type `file_type` holding `data` (if regular) at `path`."""
    if file_type == "regular":
        path.write_bytes(data)
    elif file_type == "fifo":
        os.mkfifo(path)
    elif file_type == "dir":
        path.mkdir()
    elif file_type == "loop":
        path.symlink_to(path.name)
    elif file_type == "dangling":
        path.symlink_to(path.parent / "gone.toml")
    elif file_type == "devnull":
        path.symlink_to("/dev/null")
    else:
        assert file_type == "sparse"
        with open(path, "wb") as handle:
            handle.write(data)
            handle.truncate(10_000_000)  # over the 4 MiB a config file may be


@pytest.fixture
def bounded() -> Iterator[None]:
    def hang(signum: int, frame: FrameType | None) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, hang)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def fresh_global_dir() -> Path:
    directory = Path(os.environ["HOME"]) / ".config" / "start"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


def check(*args: str) -> None:
    result = invoke(*args)  # fails the test on an internal error
    assert result.exit_code in EXPECTED_CODES, (args, result)


@settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=config_bytes(),
    file_type=st.sampled_from(FILE_TYPES),
    extra=st.sampled_from(["agents.toml", "tasks.toml", "contexts.toml"]),
    extra_data=config_bytes(),
)
# Faults seen before, always tried: init --force blocked on a FIFO; deep nesting crashed.
@example(data=b"", file_type="fifo", extra="tasks.toml", extra_data=b"")
@example(data=DEEP.encode(), file_type="regular", extra="tasks.toml", extra_data=b"")
def test_any_config_loads_validates_shows_and_launches_or_says_why(
    bounded: None, data: bytes, file_type: str, extra: str, extra_data: bytes
) -> None:
    directory = fresh_global_dir()
    place(file_type, directory / "config.toml", data)
    (directory / extra).write_bytes(extra_data)
    # A working agent, so that launches get as far as the rest of the config lets them.
    (directory / "roles.toml").write_text(AGENT)
    signal.alarm(30)
    try:
        with contextlib.suppress(StartError):
            load()
        check("config", "validate")
        check("config", "show")
        check("doctor")
        check("--dry-run", "--json", "prompt", "hi")
        check("--dry-run", "--json", "task", "t", "now")
        check("config", "set", "command_timeout", "5")
        check("init", "--force", "-q")
    finally:
        signal.alarm(0)


@settings(
    max_examples=80,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(items=st.lists(ITEM, min_size=1, max_size=4), task=ITEM)
# Faults seen before, always tried: a timeout too large for the selector.
@example(items=[{"command": "echo hi"}], task={"command": "echo hi", "command_timeout": 10**9})
def test_any_items_compose_into_a_launch_or_say_why(
    bounded: None, items: list[dict[str, Any]], task: dict[str, Any]
) -> None:
    import tomlkit

    directory = fresh_global_dir()
    document = {
        "settings": {"default_agent": "fake"},
        "agents": {"fake": {"bin": str(FAKE_AGENT), "command": "{bin} {prompt_file}"}},
        "contexts": {f"c{n}": {**item, "required": True} for n, item in enumerate(items)},
        "tasks": {"t": task},
    }
    (directory / "config.toml").write_text(tomlkit.dumps(document))
    signal.alarm(30)
    try:
        check("config", "validate")
        check("--dry-run", "--json", "prompt", "hi")
        check("--dry-run", "--json", "task", "t", "now")
    finally:
        signal.alarm(0)
