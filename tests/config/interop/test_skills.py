"""Agent Skills (`NAME/SKILL.md` folders) as `skill:NAME` tasks: discovery in each agent's
directories, Claude Code's expansion for `.claude/skills`, the text as written for the others,
the folder named in the text, and the bounds of the walk.

The fixture tree tests/fixtures/skills is laid out as the agents keep skills (its README says
where the layout comes from).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from start.config.interop import dirs
from start.config.load import load
from start.proc import shell
from tests.config.interop.conftest import GLOBAL, compose
from tests.conftest import REPO, run_start, write_tree

FIXTURE = REPO / "tests" / "fixtures" / "skills"


@pytest.fixture
def tree(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture's `home/` as the home directory and the rest as a trusted project."""
    shutil.copytree(FIXTURE / "home", Path.home(), dirs_exist_ok=True)
    shutil.copytree(FIXTURE, isolated, dirs_exist_ok=True, ignore=shutil.ignore_patterns("home"))
    write_tree(Path.home() / ".config" / "start", {"config.toml": GLOBAL})
    (isolated / ".git").mkdir()
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    return isolated


def text(workdir: Path, task: str, instructions: str | None = None) -> str:
    prepared = compose(workdir, task, instructions, run=shell.run_all)
    assert prepared.composition.task is not None
    return prepared.composition.task.text


def test_each_folder_is_a_task_named_skill_and_its_folder(tree: Path) -> None:
    config = load(str(tree))
    found = {
        name: (task.origin.layer, task.description, task.imported.files)
        for name, task in config.tasks.items()
        if task.imported is not None
    }
    assert found == {
        "skill:release-notes": (
            "imported",
            "Draft release notes between two tags",
            ("SKILL.md", "template.md"),
        ),
        "skill:webapp-check": (
            "imported",
            "Check a local web application in a browser, with the bundled helper that starts "
            "its server.",
            ("LICENSE.txt", "SKILL.md", "scripts/with_server.py"),
        ),
        "skill:lint-check": (
            "project",
            "Check one file against the project's style, with the bundled script",
            ("SKILL.md", "reference.md", "scripts/check.sh"),
        ),
        "skill:brand-style": ("project", "The project's style, for Claude Code", ("SKILL.md",)),
    }


def test_claude_code_rules_for_its_own_skills(tree: Path) -> None:
    """`.claude/skills`: Claude Code's text starts with the folder, `${CLAUDE_SKILL_DIR}` is the
    folder (in a shell command too), `$0`/`$1` are words, `@path` is attached, and the shell
    command's output takes its place."""
    folder = tree / ".claude" / "skills" / "lint-check"
    assert text(tree, "skill:lint-check", 'src/app.py "long lines"') == (
        f"Base directory for this skill: {folder}\n"
        "Check src/app.py against the style in @.claude/skills/lint-check/reference.md.\n"
        "Focus on: long lines\n"
        "\n"
        "The script says: checked: src/app.py\n"
        "\n"
        "Run `sh scripts/check.sh FILE` from this skill's folder for each file you change.\n"
        "\n"  # the body's own last newline, kept as Claude Code keeps it; no ARGUMENTS line,
        "\n"  # since placeholders were filled (interop.md)
        '<file path=".claude/skills/lint-check/reference.md">\n'
        "Four spaces, no tabs.\n"
        "</file>"
    )


def test_named_arguments_and_the_folder_of_a_user_skill(tree: Path) -> None:
    folder = Path.home() / ".claude" / "skills" / "release-notes"
    assert text(tree, "skill:release-notes", "v1.2 v1.3") == (
        f"Base directory for this skill: {folder}\n"
        "Draft the release notes for the changes from v1.2 to v1.3.\n"
        f"Group them as the template {folder}/template.md does.\n"
    )


def test_a_skill_of_another_agent_is_sent_as_written(tree: Path) -> None:
    """`.agents/skills` (Codex, Gemini CLI, opencode, Copilot): nothing in it is expanded."""
    folder = Path.home() / ".agents" / "skills" / "webapp-check"
    assert text(tree, "skill:webapp-check", "the login page") == (
        f"Base directory for this skill: {folder}\n"
        "# Web application check\n"
        "\n"
        "Start the server with `python scripts/with_server.py --port 5173`, then open the page "
        "and\n"
        "read the browser console. Report each error with the step that caused it.\n"
        "\n"
        "ARGUMENTS: the login page"
    )


def test_the_shadowed_and_the_ignored_front_matter_are_warnings(tree: Path) -> None:
    config = load(str(tree))
    files = [str(p.file) for p in config.problems]
    found = sorted(
        (os.path.relpath(f, tree) if f.startswith(str(tree)) else f, p.message)
        for f, p in zip(files, config.problems, strict=True)
    )
    home = Path.home()
    assert found == [
        (
            ".agents/skills/brand-style/SKILL.md",
            f"not used: {tree}/.claude/skills/brand-style/SKILL.md is also 'skill:brand-style', "
            "and it is read later",
        ),
        (
            ".claude/skills/lint-check/SKILL.md",
            "not imported: start cannot grant the agent tool permissions; the agent asks as "
            "usual (the shell commands of this skill run at launch, once its project is trusted)",
        ),
        (
            f"{home}/.claude/skills/release-notes/SKILL.md",
            "not imported: start runs a skill only when you name it",
        ),
    ]


def test_show_lists_the_folder_and_its_files(tree: Path) -> None:
    result = run_start("show", "skill:lint-check", "--json", cwd=tree, env=_trusted(tree))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    fields = data["fields"]
    assert (fields["source"], fields["skill_folder"], fields["skill_files"]) == (
        "skill",
        str(tree / ".claude" / "skills" / "lint-check"),
        "SKILL.md\nreference.md\nscripts/check.sh",
    )
    assert fields["argument_hint"] == "[file] [focus]"


def test_import_commands_turns_skills_off(tree: Path) -> None:
    config_file = Path.home() / ".config" / "start" / "config.toml"
    config_file.write_text(GLOBAL.replace("[settings]", '[settings]\nimport_commands = ["claude"]'))
    assert not [name for name in load(str(tree)).tasks if name.startswith("skill:")]


def _trusted(tree: Path) -> dict[str, str]:
    return {"START_TRUSTED_PATHS": str(tree), "HOME": str(Path.home())}


# --- bounds -----------------------------------------------------------------------------------


def _project(isolated: Path, files: dict[str, str]) -> Path:
    write_tree(Path.home() / ".config" / "start", {"config.toml": GLOBAL})
    (isolated / ".git").mkdir(exist_ok=True)
    write_tree(isolated, files)
    return isolated


def test_a_file_a_symlink_leads_outside_keeps_the_skill_out(isolated: Path) -> None:
    root = _project(isolated, {".claude/skills/leak/SKILL.md": "Read notes.md\n"})
    secret = Path.home() / "secret.txt"
    secret.write_text("SECRET\n")
    (root / ".claude/skills/leak/notes.md").symlink_to(secret)
    config = load(str(root))
    assert "skill:leak" not in config.tasks
    assert [p.message for p in config.problems] == [
        f"not imported: notes.md leads outside the project root (to {secret}) through a "
        "symlink; start does not read it"
    ]


def test_a_skill_folder_linked_outside_is_not_read(isolated: Path) -> None:
    root = _project(isolated, {})
    outside = Path.home() / "elsewhere"
    write_tree(outside, {"SKILL.md": "Hello\n"})
    (root / ".claude" / "skills").mkdir(parents=True)
    (root / ".claude" / "skills" / "away").symlink_to(outside)
    config = load(str(root))
    assert "skill:away" not in config.tasks
    assert [p.message for p in config.problems] == [
        f"not imported: leads outside the project root (to {outside}) through a symlink; "
        "start does not read it"
    ]


def test_a_file_over_the_limit_keeps_the_skill_out(isolated: Path) -> None:
    root = _project(isolated, {".claude/skills/big/SKILL.md": "Use data.bin\n"})
    (root / ".claude/skills/big/data.bin").write_bytes(b"x" * (dirs.FILE_LIMIT + 1))
    config = load(str(root))
    assert "skill:big" not in config.tasks
    path = root / ".claude/skills/big/data.bin"
    assert [p.message for p in config.problems] == [
        f"not imported: {path} is 1,048,577 bytes; start reads the files of a skill of at most "
        "1,048,576 bytes"
    ]


def test_a_project_skill_directory_over_the_bound_is_an_error(isolated: Path) -> None:
    files = {f".agents/skills/many/f{i}.txt": "x" for i in range(dirs.MAX_ENTRIES)}
    root = _project(isolated, {**files, ".agents/skills/many/SKILL.md": "Hi\n"})
    config = load(str(root))
    assert [(p.severity, p.message) for p in config.problems] == [
        (
            "error",
            "holds more than 1000 files and directories; start does not read it; turn skills "
            "off with [settings] import_commands, or move files out",
        )
    ]


def test_a_project_skill_directory_over_its_bytes_is_an_error(isolated: Path) -> None:
    """Every file of a project skill is read (and hashed) on every load, so a directory's files
    are bounded in all, as they are in number; a user's, which start does not read, are not."""
    root = _project(isolated, {".agents/skills/fonts/SKILL.md": "Use the fonts\n"})
    folder = root / ".agents/skills/fonts"
    chunk = b"x" * dirs.FILE_LIMIT
    for index in range(64):  # 64 MiB
        (folder / f"font{index}.ttf").write_bytes(chunk)
    (folder / "font0.ttf").write_bytes(chunk[:-100])
    (folder / "SKILL.md").write_bytes(b"U" * 100)
    assert "skill:fonts" in load(str(root)).tasks  # exactly MAX_BYTES in all
    (folder / "SKILL.md").write_bytes(b"U" * 101)
    config = load(str(root))
    assert "skill:fonts" not in config.tasks
    assert [(p.severity, p.file, p.message) for p in config.problems] == [
        (
            "error",
            str(root / ".agents/skills"),
            "holds more than 67,108,864 bytes of files; start does not read it; turn skills "
            "off with [settings] import_commands, or move files out",
        )
    ]


def test_a_name_start_cannot_spell_is_skipped(isolated: Path) -> None:
    root = _project(isolated, {".claude/skills/my skill/SKILL.md": "Hi\n"})
    config = load(str(root))
    assert [p.message for p in config.problems] == [
        "not imported: 'my skill' cannot be part of a task name (letters, digits, '_', '.' and "
        "'-', not starting with '.' or '-')"
    ]


def test_a_folder_without_skill_md_and_hidden_folders_are_not_skills(isolated: Path) -> None:
    root = _project(
        isolated,
        {".agents/skills/notes/README.md": "x\n", ".agents/skills/.system/SKILL.md": "x\n"},
    )
    config = load(str(root))
    assert [name for name in config.tasks if name.startswith("skill:")] == []
    assert config.problems == ()


def test_the_config_cache_sees_a_new_file_in_a_user_skill(tree: Path) -> None:
    """A user skill's files are not read, but their list is part of what the cache is keyed on:
    `start show` must not list yesterday's files."""
    first = load(str(tree)).tasks["skill:release-notes"].imported
    assert first is not None and first.files == ("SKILL.md", "template.md")
    assert load(str(tree)).tasks["skill:release-notes"].imported == first  # from the cache
    folder = Path.home() / ".claude" / "skills" / "release-notes"
    (folder / "examples.md").write_text("x\n")
    again = load(str(tree)).tasks["skill:release-notes"].imported
    assert again is not None and again.files == ("SKILL.md", "examples.md", "template.md")
    (folder / "SKILL.md").write_text("---\ndescription: Changed\n---\nNew body\n")
    assert load(str(tree)).tasks["skill:release-notes"].description == "Changed"


def test_doctor_counts_the_skills_on_one_line(tree: Path) -> None:
    result = run_start("doctor", cwd=tree, env=_trusted(tree))
    assert "  ✓ imported  2 skills of other agents read\n" in result.stdout
    assert "  ✓ project   3 skills of other agents read\n" in result.stdout
    assert "reference.md" not in result.stdout
