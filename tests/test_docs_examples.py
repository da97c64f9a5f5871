"""The examples of task parameters in the docs are valid config and do what the docs say."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from start.config.load import load
from tests.conftest import invoke, write_tree

DOCS = Path(__file__).resolve().parents[1] / "docs"


def toml_blocks(page: str) -> list[str]:
    text = (DOCS / page).read_text()
    return [b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if ".params]" in b]


@pytest.mark.parametrize("page", ["usage.md", "configuration.md", "placeholders.md"])
def test_each_page_has_a_parameter_example_that_validates(page: str, isolated: Path) -> None:
    blocks = toml_blocks(page)
    assert blocks, f"{page} has no example of task parameters"
    for block in blocks:
        write_tree(isolated.parent / "home/.config/start", {"config.toml": block})
        assert [str(p) for p in load().problems] == []


def test_the_placeholders_example_fills_as_documented(isolated: Path) -> None:
    (block,) = [b for b in toml_blocks("placeholders.md") if "tasks.explain" in b]
    agent = '[agents.stand-in]\nbin = "true"\ncommand = "{bin} {prompt}"\n'
    write_tree(isolated.parent / "home/.config/start", {"config.toml": block + agent})
    result = invoke(
        "task", "explain", "-a", "stand-in", "-p", "topic=the retry loop", "--dry-run", "--json"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["prompt"].endswith(
        "Explain the retry loop to a new team member reader. None"
    )
