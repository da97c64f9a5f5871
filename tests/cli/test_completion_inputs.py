"""Completion of ad-hoc inputs (names, then files), task parameters (`-p NAME=`) and `start show`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.shell_completion import ShellComplete

from start.cli import cli, completion
from start.cli.state import Options
from tests.conftest import run_start, write_tree

CONFIG = """\
[contexts.docs]
prompt = "d"
description = "The docs"

[contexts.design]
prompt = "d"

[tasks.review]
prompt = "{focus} {depth}"
description = "Review"
[tasks.review.params]
focus = { default = "security", description = "What to look at" }
depth = { description = "How deep" }
"""


@pytest.fixture(autouse=True)
def config(isolated: Path) -> None:
    write_tree(isolated.parent / "home/.config/start", {"config.toml": CONFIG})


def complete(line: str) -> list[tuple[str, str | None, str]]:
    words = line.split(" ")
    incomplete = words.pop()
    found = ShellComplete(cli, {"obj": Options()}, "start", completion.COMPLETE_VAR)
    return [(i.value, i.help, i.type) for i in found.get_completions(words[1:], incomplete)]


def test_c_offers_context_names_first() -> None:
    assert complete("start prompt -c d") == [
        ("docs", "The docs", "plain"),
        ("design", None, "plain"),
    ]
    assert complete("start --context do") == [("docs", "The docs", "plain")]


def test_c_offers_files_when_no_name_matches_or_the_word_is_a_path() -> None:
    assert complete("start prompt -c READ") == [("READ", None, "file")]
    for word in ("./d", "docs/", "~/n", "/tmp/x"):
        assert complete(f"start prompt -c {word}") == [(word, None, "file")]


def test_r_and_task_offer_names_then_files() -> None:
    assert [v for v, _, _ in complete("start -r code")] == ["code-reviewer"]
    assert complete("start -r ./x") == [("./x", None, "file")]
    assert complete("start task rev") == [("review", "Review", "plain")]
    assert complete("start task t.m") == [("t.m", None, "file")]


def test_p_completes_the_parameters_of_the_task() -> None:
    assert complete("start task review -p ") == [
        ("focus=", "What to look at", "plain"),
        ("focus=security", "the default", "plain"),
        ("depth=", "How deep", "plain"),
    ]
    assert complete("start task review --param d") == [("depth=", "How deep", "plain")]
    assert complete("start task help -p ") == []
    assert complete("start task nothing -p ") == []


def test_show_completes_kinds_and_names() -> None:
    found = [v for v, _, _ in complete("start show ")]
    assert found[:4] == ["agent", "role", "context", "task"]
    assert {"docs", "review", "claude"} <= set(found)
    assert [v for v, _, _ in complete("start show context d")] == ["docs", "design"]
    assert [v for v, _, _ in complete("start show task rev")] == ["review"]


def test_file_completion_reaches_the_shell() -> None:
    env = {
        "_START_COMPLETE": "bash_complete",
        "COMP_WORDS": "start prompt -c ./R",
        "COMP_CWORD": "3",
    }
    result = run_start(env=env)
    assert (result.returncode, result.stdout) == (0, "file,./R\n")
