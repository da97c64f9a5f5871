"""No human-readable output of any command carries a raw terminal control sequence from config.

Config values full of C0 and C1 controls and escape sequences go into descriptions, names (where
a name may be anything), prompts, commands, file paths and instructions. Every command that shows
them is run; none may print ESC, BEL or CSI (U+009B). JSON output stays exact.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Result, invoke, write_tree

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

RAW = ("\x1b", "\x07", "\x9b")

SEQUENCES = [
    "\x1b]0;title\x07",
    "\x1b[2J",
    "\x1b[1;31m",
    "\x9b31m",
    "\x1bc",
    "\x07",
    "\x90q\x9c",
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
    "\r",
    "\x08",
    "\u202e",
    "\x7f",
]

# Any character TOML can carry, plus the sequences above; no surrogates (not valid in UTF-8).
_CHARS = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
nasty = st.lists(st.one_of(st.sampled_from(SEQUENCES), _CHARS), min_size=1, max_size=12).map(
    "".join
)


def toml_string(value: str) -> str:
    """A TOML basic string holding exactly `value`."""
    out = []
    for char in value:
        if char == '"' or char == "\\":
            out.append("\\" + char)
        elif 0x20 <= ord(char) < 0x7F:
            out.append(char)
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def config_text(value: str) -> str:
    """A valid config with `value` in every free-text field, a file path and a command."""
    text = toml_string(value)
    quoted = toml_string(f"printf '%s' {shlex.quote(value)}")
    failing = toml_string(f"printf '%s' {shlex.quote(value)}; exit 3")
    return f"""
[settings]
default_agent = "stand-in"

[agents.stand-in]
bin = "true"
command = "{{bin}} {{prompt}}"
description = {text}

[roles.reviewer]
description = {text}
prompt = {text}

[contexts.notes]
required = true
description = {text}
file = {toml_string("/nowhere/" + value)}
prompt = "Notes: {{file_contents}}"

[contexts.output]
required = true
command = {quoted}
prompt = "Output: {{command_output}}"

[tasks.review]
alias = "rv"
description = {text}
role = "reviewer"
prompt = {toml_string(value + " {instructions} {focus}")}

[tasks.review.params]
focus = {{ default = {text}, description = {text} }}

[tasks.failing]
description = {text}
command = {failing}
prompt = "{{command_output}}"
"""


def wild_names(value: str) -> str:
    """Items named `value` (an invalid name: the config has errors that name it)."""
    name = toml_string(value)
    return f"""
[tasks.{name}]
description = {toml_string(value)}
prompt = "p"
alias = {name}
role = {name}
"""


@contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def completions(project: Path, words: str) -> list[Result]:
    results = []
    for shell in ("bash", "zsh", "fish"):
        # bash and zsh pass the index of the word being completed; fish passes the word itself.
        index = str(len(words.split()) - (0 if words.endswith(" ") else 1))
        env = {
            "_START_COMPLETE": f"{shell}_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": "" if shell == "fish" else index,
        }
        with environment(**env):
            results.append(invoke("-d", str(project)))
    return results


def run_everything(value: str, text: str, project: Path) -> list[tuple[str, Result]]:
    here = ("-d", str(project))
    runs: list[tuple[str, tuple[str, ...]]] = [
        ("listing", ("task", "--no-project")),
        ("listing -v", ("task", "-v", "--all")),
        ("validate", ("config", "validate")),
        ("validate -v", ("config", "validate", "-v")),
        ("show", ("config", "show", "--no-pager")),
        ("show task", ("config", "show", "task", "review", "--no-pager")),
        ("path", ("config", "path")),
        ("doctor", ("doctor",)),
        ("doctor -v", ("doctor", "-v")),
        ("trust --show", ("trust", "--show")),
        ("dry run", ("--dry-run", "--no-project", "-v", "--debug")),
        ("dry-run task", ("--dry-run", "--no-project", "task", "review", value)),
        ("failing task", ("--dry-run", "--no-project", "task", "failing")),
        ("unknown task", ("task", "--no-project", value + "x")),
        ("unknown agent", ("--dry-run", "--no-project", "-a", value)),
        ("unknown role", ("--dry-run", "--no-project", "-r", value)),
        ("prompt", ("--dry-run", "--no-project", "prompt", value)),
        ("show unknown", ("config", "show", "task", value)),
        ("start show", ("show", "review", "--no-project", "--no-pager")),
        ("start show untrusted", ("show", "task", "review", "--no-pager")),
        ("start show run", ("show", "context", "output", "--run", "--no-project", "--no-pager")),
        ("start show notes", ("show", "notes", "--no-project", "--no-pager")),
        ("start show unknown", ("show", value, "--no-project")),
        ("param", ("--dry-run", "--no-project", "task", "review", "-p", f"focus={value}")),
        ("unknown param", ("--dry-run", "--no-project", "task", "review", "-p", f"{value}=x")),
        ("context file", ("--dry-run", "--no-project", "prompt", "-c", "/nowhere/" + value, "x")),
        ("task file", ("--dry-run", "--no-project", "task", "./" + value)),
        ("help unknown", ("help", value)),
        ("unknown command", (value,)),
    ]
    results = [(label, invoke(*here, *args)) for label, args in runs]
    for shell, result in zip(
        ("bash", "zsh", "fish"), completions(project, "start task "), strict=True
    ):
        results.append((f"completion {shell}", result))
    for shell, result in zip(
        ("bash", "zsh", "fish"), completions(project, "start -a "), strict=True
    ):
        results.append((f"agent completion {shell}", result))
    for words in ("start task review -p ", "start show ", "start -c "):
        for shell, result in zip(("bash", "zsh", "fish"), completions(project, words), strict=True):
            results.append((f"{words!r} completion {shell}", result))
    return results


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=nasty, wild=st.booleans())
def test_no_output_carries_a_control_sequence(isolated: Path, value: str, wild: bool) -> None:
    scratch = Path(tempfile.mkdtemp(dir=isolated))
    project = scratch / "project"
    text = config_text(value) + (wild_names(value) if wild else "")
    write_tree(scratch / "global", {"config.toml": text})
    write_tree(project, {".start/config.toml": text})
    with environment(START_CONFIG_DIR=str(scratch / "global")):
        for label, result in run_everything(value, text, project):
            for stream in (result.stdout, result.stderr):
                found = [c for c in RAW if c in stream]
                assert not found, f"{label} printed {found!r} raw:\n{stream!r}"


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=nasty)
def test_json_output_stays_exact(isolated: Path, value: str) -> None:
    scratch = Path(tempfile.mkdtemp(dir=isolated))
    write_tree(scratch, {"config.toml": config_text(value)})
    with environment(START_CONFIG_DIR=str(scratch)):
        listing = json.loads(invoke("task", "--json", "--no-project").stdout)
        shown = json.loads(invoke("config", "show", "task", "review", "--json").stdout)
    assert {t["name"]: t["description"] for t in listing}["review"] == value
    assert shown["tasks"]["review"]["description"] == value
