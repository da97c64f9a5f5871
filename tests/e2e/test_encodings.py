"""Every command on a stdout that is not UTF-8 (issue 44): `PYTHONIOENCODING=ascii`, or Latin-1 as
some CI images set it. Non-ASCII text is everywhere (item titles and answers, prompts, config
descriptions, the project's and the config's paths); no command ends in exit 70, and each shows
the text escaped, not lost: a character stdout cannot take as stderr writes it (`\\u2713`), and
JSON all ASCII in its own escapes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

WORD = "café✓"  # é is in Latin-1, ✓ is not
FAKE = REPO / "tests" / "fake_headless.py"
# The stand-in agent writes UTF-8 as real agents do, whatever start's own stdout takes.
UTF8 = "PYTHONIOENCODING=utf-8 "
RESUME = f'resume_command = "{UTF8}{{bin}} {FAKE} --resume {{session}} {{args}} -- {{prompt}}"\n'
CONFIG = f"""
[settings]
default_agent = "talker"

{agent("talker", output="result", prefix=UTF8, extra=RESUME)}
[tasks.revue]
description = "Revue {WORD}"
prompt = "Revue {WORD}: {{instructions}}"

[contexts.notes]
description = "Notes {WORD}"
file = "notes-{WORD}.md"
"""
PROJECT = f'[tasks.projet]\ndescription = "Projet {WORD}"\nprompt = "Projet {WORD}"\n'

# Each command in order (each sees what those before it did), and where it shows WORD: on
# "out", on "err", or "" where it shows none of it. --json, and `mcp --print-config json`,
# print JSON.
COMMANDS: list[tuple[str, tuple[str, ...]]] = [
    ("", ("--help",)),
    ("", ("--version",)),
    ("out", ("--dry-run", "prompt", WORD)),
    ("out", ("prompt", "--print", WORD)),
    ("out", ("prompt", "--print", "--json", WORD)),
    ("out", ("task",)),
    ("out", ("task", "--json")),
    ("out", ("task", "revue", "--print", WORD)),
    ("out", ("task", "projet", "--print")),
    ("out", ("again",)),
    ("out", ("continue", WORD)),
    ("out", ("board",)),
    ("out", ("board", "--json")),
    ("out", ("board", "show", "1")),
    ("out", ("board", "show", "1", "--json")),
    ("out", ("board", "watch", "1")),
    ("out", ("board", "watch", "1", "--json")),
    ("", ("board", "add", f"third {WORD}")),
    ("out", ("board", "add", "--json", f"fourth {WORD}")),
    ("err", ("board", "claim", "2")),
    ("out", ("board", "update", "2", "-d", WORD, "--json")),
    ("out", ("board", "update", "2", "--meta", f'k="{WORD}"', "--json")),
    ("out", ("board", "show", "2")),
    ("", ("board", "reassign", "2", "someone")),
    ("out", ("board", "done", "2", "--answer", WORD, "--as", "someone", "--json")),
    ("out", ("board", "fail", "3", "--reason", WORD, "--json")),
    ("", ("board", "add", f"run {WORD}", "--prompt", WORD, "-a", "talker")),
    ("err", ("board", "run", "--until-empty")),
    ("", ("completion", "bash")),
    ("", ("config", "validate")),
    ("out", ("config", "show", "--no-pager")),
    ("out", ("config", "show", "--json")),
    ("out", ("config", "path")),
    ("err", ("config", "add", "task", "neu", "--description", WORD, "--prompt", WORD)),
    ("err", ("config", "set", "tasks.neu.description", f"d-{WORD}")),
    ("err", ("config", "unset", "tasks.neu.description")),
    ("err", ("config", "remove", "task", "neu", "--yes")),
    ("err", ("config", "edit")),
    ("out", ("doctor",)),
    ("out", ("doctor", "--json")),
    ("out", ("export", "skills", f"skills-{WORD}")),
    ("out", ("export", "--json", "skills", f"more-{WORD}")),
    ("", ("help",)),
    ("", ("help", "board")),
    ("err", ("-d", f"../new-{WORD}", "init", "--project")),
    ("out", ("log",)),
    ("out", ("log", "--json")),
    ("out", ("log", "show", "--no-pager")),
    ("out", ("log", "show", "--answer")),
    ("out", ("log", "show", "--json")),
    ("out", ("log", "path")),
    ("out", ("mcp", "--print-config", "json")),
    ("out", ("-d", ".", "mcp", "--print-config", "claude")),
    ("out", ("show", "revue", "--no-pager")),
    ("out", ("show", "revue", "--json")),
    ("out", ("show", "notes", "--no-pager")),
    ("out", ("trust", "--show")),
    ("", ("trust", "--list")),
    ("err", ("untrust",)),
    ("", ("log", "clear", "--yes")),
]


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A project and a home whose paths hold WORD, a run in the history, a board item completed
    by a run, and another pending."""
    home = tmp_path / f"h-{WORD}"
    project = tmp_path / f"p-{WORD}"
    write_tree(home / ".config" / "start", {"config.toml": CONFIG})
    write_tree(project, {".start/config.toml": PROJECT, f"notes-{WORD}.md": f"notes {WORD}\n"})
    (tmp_path / f"new-{WORD}").mkdir()
    for repository in (project, tmp_path / f"new-{WORD}"):
        subprocess.run(["git", "init", "-q"], cwd=repository, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "START_", "PYTHONIO"))}
    env.update(
        HOME=str(home),
        PYTHONPATH=str(REPO),
        START_TRUSTED_PATHS=str(tmp_path),
        FAKE_MODE="result",
        FAKE_SESSION="s-1",
        EDITOR="true",
        VISUAL="true",
    )
    for args in (
        ("prompt", "--print", WORD),
        ("board", "add", f"first {WORD}", "--prompt", WORD, "-a", "talker"),
        ("board", "run", "--until-empty"),
        ("board", "add", f"second {WORD}"),
    ):
        assert run(project, env, args).returncode == 0, args
    return project, env


def run(
    project: Path, env: dict[str, str], args: tuple[str, ...]
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "start", *args],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_every_command_takes_any_text_on_a_stdout_that_is_not_utf8(
    world: tuple[Path, dict[str, str]], encoding: str
) -> None:
    project, env = world
    env = {**env, "PYTHONIOENCODING": encoding}
    human = WORD.encode(encoding, "backslashreplace")  # `caf\xe9\u2713`; Latin-1: `café\u2713`
    escaped = b"caf\\u00e9\\u2713"
    failures = []
    for where, args in COMMANDS:
        result = run(project, env, args)
        json_out = "--json" in args or args[-2:] == ("--print-config", "json")
        shown = escaped if json_out else human
        streams = {"out": result.stdout, "err": result.stderr}
        lost = where and shown not in streams[where]
        for text in streams.values():
            text.decode(encoding)  # nothing stdout's encoding cannot read
        if result.returncode != 0 or b"Traceback" in result.stderr or lost:
            failures.append((args, result.returncode, result.stdout[-300:], result.stderr[-300:]))
    assert failures == []
