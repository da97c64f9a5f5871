"""scripts/library_census.py: the census of a library, without the Claude Code oracle."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO, git, write_tree

SCRIPT = REPO / "scripts" / "library_census.py"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("library_census", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["library_census"] = module
    spec.loader.exec_module(module)
    return module


def test_the_text_claude_code_sent_follows_its_command_message() -> None:
    census = script()
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<command-name>/git:commit</command-name>"},
                {"type": "text", "text": "Commit src/app.py\n"},
            ],
        },
    ]
    assert census.expanded(messages, "git:commit") == "Commit src/app.py\n"
    assert census.expanded(messages, "git:push") is None


def test_a_library_is_approved_and_each_command_run(isolated: Path) -> None:
    write_tree(
        isolated,
        {
            "src/commands/git/commit.md": "Commit $ARGUMENTS\n",
            ".claude/commands/svelte/svelte:a11y.md": "Check $0\n",
            ".claude/commands/broken.md": "!`exit 3`\n",
        },
    )
    (isolated / ".claude" / "commands" / "git").symlink_to("../../src/commands/git")
    git(isolated, "init", "-q", "-b", "main")
    result = script().census(isolated, "src/app.py 42", oracle=False)
    rows = {row["name"]: (row["exit"], row["prompt"]) for row in result["rows"]}
    assert rows == {
        "claude:broken": (1, None),
        "claude:git:commit": (0, "Commit src/app.py 42\n"),
        "claude:svelte:svelte:a11y": (0, "Check src/app.py\n"),
    }
    assert (result["commands"], result["resolve"], result["judged"]) == (3, 2, 0)
