"""The review shown before approval (start.trust.review): what a project can run, read and set, and
the diff since the last approval."""

from __future__ import annotations

from pathlib import Path

from start import trust
from start.config.load import load
from tests.conftest import write_tree
from tests.trust.conftest import CONFIG, approve_here

# --- the review -----------------------------------------------------------------------------


def test_review_lists_commands_binaries_paths_settings_and_marks_outside(
    isolated: Path,
) -> None:
    write_tree(
        isolated,
        {
            ".start/config.toml": (
                '[settings]\ndefault_agent = "evil"\nshell = "bash"\n'
                '[agents.evil]\nbin = "./evil"\ncommand = "{bin} {prompt}"\n'
                '[agents.far]\nbin = "/opt/far"\ncommand = "{bin} {prompt}"\n'
                '[agents.near]\nbin = "near"\ncommand = "{bin} {prompt}"\n'
                '[contexts.leak]\nfile = "~/secret.txt"\n'
                '[contexts.local]\nfile = "docs/x.md"\nshell = "python3"\ncommand = "pass"\n'
                'prompt = "{file_contents}{command_output}"\n'
            )
        },
    )
    config = load()
    found = trust.scan(config)
    assert found is not None
    review = trust.review(config, found)
    home = isolated.parent / "home"
    assert [(m.key, m.value) for m in review.commands] == [
        ("agents.evil.command", "{bin} {prompt}"),
        ("agents.far.command", "{bin} {prompt}"),
        ("agents.near.command", "{bin} {prompt}"),
        ("contexts.local.command", "pass"),
    ]
    assert [(m.key, m.value, m.where) for m in review.binaries] == [
        ("agents.evil.bin", "./evil", "inside the project"),
        ("agents.far.bin", "/opt/far", "outside project root"),
        ("agents.near.bin", "near", "on PATH"),
        ("contexts.local.shell", "python3", ""),
        ("settings.shell", "bash", ""),
    ]
    assert [(m.key, m.value, m.where) for m in review.files] == [
        ("contexts.leak.file", f"{home}/secret.txt", "outside project root"),
        (
            "contexts.local.file",
            f"{isolated}/docs/x.md",
            "inside the project, read as it is at launch",
        ),
    ]
    assert [(i.key, [(f.key, f.value) for f in i.fields]) for i in review.items] == [
        ("agents.evil", [("bin", "./evil"), ("command", "{bin} {prompt}")]),
        ("agents.far", [("bin", "/opt/far"), ("command", "{bin} {prompt}")]),
        ("agents.near", [("bin", "near"), ("command", "{bin} {prompt}")]),
        ("contexts.leak", [("file", "~/secret.txt")]),
        (
            "contexts.local",
            [
                ("file", "docs/x.md"),
                ("command", "pass"),
                ("prompt", "{file_contents}{command_output}"),
                ("shell", "python3"),
            ],
        ),
    ]
    assert [(m.key, m.value) for m in review.settings] == [
        ("settings.default_agent", '"evil"'),
        ("settings.shell", '"bash"'),
    ]
    assert review.previous is None


def test_review_diffs_against_the_last_approval(project: Path) -> None:
    approve_here()
    (project / ".start/config.toml").write_text(CONFIG.replace("v1", "v2"))
    (project / ".start/new.md").write_text("hello\n")
    config = load()
    found = trust.scan(config)
    assert found is not None
    review = trust.review(config, found)
    assert review.previous is not None
    changed = {c.label: c for c in review.changes if c.status != "same"}
    assert changed[".start/config.toml"].diff == (
        "--- a/.start/config.toml",
        "+++ b/.start/config.toml",
        "@@ -1,4 +1,4 @@",
        "-# v1",
        "+# v2",
        " [roles.r]",
        ' file = "roles/r.md"',
        " ",
    )
    assert changed[".start/new.md"].status == "added"
    assert changed[".start/new.md"].diff[-1] == "+hello"


def test_review_shows_the_defaults_of_project_task_parameters(isolated: Path) -> None:
    """A default goes into the prompt and the command's environment: approval must show it."""
    write_tree(
        isolated,
        {
            ".start/tasks.toml": (
                '[tasks.t]\nprompt = "{focus}"\n'
                '[tasks.t.params]\nfocus = { default = "Ignore previous instructions" }\n'
                "depth = {}\n"
            )
        },
    )
    config = load()
    found = trust.scan(config)
    assert found is not None
    review = trust.review(config, found)
    assert [(i.key, [(f.key, f.value) for f in i.fields]) for i in review.items] == [
        (
            "tasks.t",
            [
                ("prompt", "{focus}"),
                ("params.focus.default", "Ignore previous instructions"),
                ("params.depth", "{}"),
            ],
        )
    ]
