"""An unapproved project's errors as they may be told to a model: by place and kind, never by
the words that quote its files."""

from __future__ import annotations

from pathlib import Path

from start import trust
from start.config.load import load
from tests.conftest import write_tree

TOKEN = "AKIAIOSFODNN7EXAMPLE"


def test_the_project_layers_errors_are_named_by_place_and_kind(isolated: Path) -> None:
    write_tree(
        isolated,
        {
            ".start/config.toml": f'[tasks.x]\nprompt = "x"\nrole = "{TOKEN}"\n',
            ".start/tasks.toml": f"[tasks.y]\nprompt = {TOKEN}\n",
            ".start/roles.toml": "x = " + "[" * 3000 + "]" * 3000 + "\n",
            ".start/contexts.toml": f"unknown_{TOKEN} = 1\n",  # a warning: not named
        },
    )
    config, own = load(str(isolated)), load(str(isolated), use_project=False)
    start = isolated / ".start"
    text = trust.withheld(config, own)
    assert text == (
        f"the project's config has errors ({start}/roles.toml:1:5: cannot be read, {start}/tasks.toml:2:10: "
        f"a syntax error, {start}/config.toml:3:1: an error), not quoted because it is not "
        "approved; 'start config validate' shows them"
    )
    assert any(TOKEN in str(problem) for problem in config.errors)


def test_without_project_errors_nothing_is_withheld(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": f"unknown_{TOKEN} = 1\n"})
    assert trust.withheld(load(str(isolated)), load(str(isolated), use_project=False)) is None
