"""`start export skills DIR [NAMES...]`: one SKILL.md folder per task, deterministic and
idempotent, never over a folder start did not write; and read back by start as `skill:NAME`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import git, run_start, write_tree

CONFIG = """\
[settings]
default_agent = "fake"

[agents.fake]
bin = "true"
command = "{bin} {prompt}"

[tasks.explain]
description = "Explain how a part of the project works"
prompt = '''
Explain how this works: {instructions}
Quote awk's $1 as written, and keep {{braces}}.
'''

[tasks.style]
description = "Apply the style guide"
file = "GUIDE.md"

[tasks.review-file]
description = "Review with the checklist"
file = "REVIEW.md"

[tasks.ticket]
description = "Work on a ticket"
prompt = "Ticket {id} in {tracker}: {instructions}"
params = { tracker = { default = "JIRA" }, id = {} }

[tasks.status]
description = "Summarise the status"
command = "git status"
prompt = "{command_output}"

[tasks.today]
description = "Plan the day"
prompt = "Today is {date}. {instructions}"

[tasks.runs]
description = "Looks like a Claude Code command"
prompt = "Status: !`date`"

[tasks.a-name-longer-than-the-sixty-four-characters-a-skill-name-may-have]
prompt = "x"
"""


def _setup(isolated: Path) -> Path:
    write_tree(Path.home() / ".config" / "start", {"config.toml": CONFIG})
    write_tree(
        isolated,
        {
            "GUIDE.md": "Use four spaces.\n",
            "REVIEW.md": "Review {instructions} against the checklist; $0 is literal.\n",
        },
    )
    git(isolated, "init", "-q")
    return isolated


def export(cwd: Path, *args: str) -> tuple[int, str, str]:
    result = run_start("export", "skills", *args, cwd=cwd)
    return result.returncode, result.stdout, result.stderr


SKIPPED = [
    {
        "task": "status",
        "reason": "it runs a command at launch, whose output a skill's fixed text cannot "
        "hold; run it with 'start task' or 'start mcp'",
    },
    {
        "task": "ticket",
        "reason": "its parameter 'id' has no default, and a skill has no parameters",
    },
    {"task": "today", "reason": "its text uses {date}, which changes at each launch"},
    {
        "task": "runs",
        "reason": "its text holds `!`...``, which Claude Code would run as a shell command",
    },
    {
        "task": "a-name-longer-than-the-sixty-four-characters-a-skill-name-may-have",
        "reason": "a skill's name is at most 64 lowercase letters, digits and single '-'",
    },
]


def test_every_task_that_has_a_fixed_text_is_written(isolated: Path) -> None:
    root = _setup(isolated)
    code, out, err = export(root, "out", "--json")
    assert code == 0, err
    data = json.loads(out)
    written = [(s["task"], s["status"]) for s in data["skills"]]
    assert ("explain", "written") in written and ("style", "written") in written
    mine = [s for s in data["skipped"] if s["task"] in {x["task"] for x in SKIPPED}]
    assert sorted(mine, key=lambda s: s["task"]) == sorted(SKIPPED, key=lambda s: s["task"])
    assert (root / "out" / "explain" / "SKILL.md").read_text() == (
        "---\n"
        "name: explain\n"
        'description: "Explain how a part of the project works"\n'
        'argument-hint: "[instructions]"\n'
        "---\n"
        "\n"
        "Explain how this works: $ARGUMENTS\n"
        "Quote awk's \\$1 as written, and keep {braces}.\n"
    )
    assert (root / "out" / "style" / "SKILL.md").read_text() == (
        '---\nname: style\ndescription: "Apply the style guide"\n---\n\nUse four spaces.\n'
    )
    assert (root / "out" / "review-file" / "SKILL.md").read_text() == (
        "---\n"
        "name: review-file\n"
        'description: "Review with the checklist"\n'
        'argument-hint: "[instructions]"\n'
        "---\n"
        "\n"
        "Review $ARGUMENTS against the checklist; \\$0 is literal.\n"
    )
    marker = json.loads((root / "out" / "explain" / ".start-export").read_text())
    assert marker["by"] == "start" and marker["task"] == "explain"


def test_a_second_export_writes_nothing_and_the_bytes_are_the_same(isolated: Path) -> None:
    root = _setup(isolated)
    assert export(root, "out", "explain")[0] == 0
    skill = root / "out" / "explain" / "SKILL.md"
    before = (skill.read_bytes(), os.stat(skill).st_mtime_ns)
    code, out, err = export(root, "out", "explain")
    assert (code, out, err) == (0, f"unchanged  {root}/out/explain\n", "")
    assert (skill.read_bytes(), os.stat(skill).st_mtime_ns) == before


def test_a_changed_task_is_written_again(isolated: Path) -> None:
    root = _setup(isolated)
    assert export(root, "out", "style")[0] == 0
    (root / "GUIDE.md").write_text("Use tabs.\n")
    assert export(root, "out", "style") == (0, f"written    {root}/out/style\n", "")
    assert (root / "out" / "style" / "SKILL.md").read_text().endswith("\nUse tabs.\n")


def test_a_folder_start_did_not_write_is_never_overwritten(isolated: Path) -> None:
    root = _setup(isolated)
    write_tree(root, {"out/explain/SKILL.md": "mine\n"})
    code, out, err = export(root, "out", "explain", "style")
    assert (code, out, err) == (
        1,
        "",
        f"start: {root}/out/explain exists, and start did not write it (it has no "
        ".start-export); move it away, or leave its task out\nNothing was written.\n",
    )
    assert (root / "out" / "explain" / "SKILL.md").read_text() == "mine\n"
    assert not (root / "out" / "style").exists()


def test_a_marker_nested_deep_is_a_folder_start_did_not_write(isolated: Path) -> None:
    """A marker file planted in the target folder, 20,000 brackets deep, made export exit 70."""
    root = _setup(isolated)
    write_tree(root, {"out/explain/SKILL.md": "mine\n", "out/explain/.start-export": "[" * 20_000})
    code, out, err = export(root, "out", "explain")
    assert (code, out, err) == (
        1,
        "",
        f"start: {root}/out/explain exists, and start did not write it (it has no "
        ".start-export); move it away, or leave its task out\nNothing was written.\n",
    )


def test_a_folder_changed_after_the_export_is_not_overwritten(isolated: Path) -> None:
    root = _setup(isolated)
    assert export(root, "out", "explain")[0] == 0
    skill = root / "out" / "explain" / "SKILL.md"
    skill.write_text(skill.read_text() + "My own line.\n")
    code, _, err = export(root, "out", "explain")
    assert (code, err) == (
        1,
        f"start: {skill} was changed after start wrote it; move the folder away to write it "
        "again\nNothing was written.\n",
    )
    assert skill.read_text().endswith("My own line.\n")


def test_a_task_named_that_cannot_be_a_skill_is_an_error(isolated: Path) -> None:
    root = _setup(isolated)
    assert export(root, "out", "status") == (
        1,
        "",
        "start: task 'status' cannot be a skill: it runs a command at launch, whose output a "
        "skill's fixed text cannot hold; run it with 'start task' or 'start mcp'\n",
    )
    code, _, err = export(root, "out", "explian")
    assert (code, err) == (4, "start: unknown task 'explian'; did you mean 'explain'?\n")
    assert not (root / "out").exists()


def test_dir_that_is_a_file_is_an_error(isolated: Path) -> None:
    root = _setup(isolated)
    (root / "out").write_text("x")
    assert export(root, "out", "explain") == (
        2,
        "",
        "start: invalid value for DIR: directory 'out' is a file\n"
        "hint: run 'start export skills --help' for usage\n",
    )


def test_exported_skills_are_read_back_as_skill_tasks(isolated: Path) -> None:
    """The round trip: exported into the project's .claude/skills, a task is `skill:NAME`, and
    its text is the task's, after the folder's line."""
    root = _setup(isolated)
    assert export(root, ".claude/skills", "explain")[0] == 0
    assert run_start("trust", "--yes", cwd=root).returncode == 0
    result = run_start("--dry-run", "--json", "task", "skill:explain", "the cache", cwd=root)
    assert result.returncode == 0, result.stderr
    prompt = json.loads(result.stdout)["prompt"]
    assert prompt == (
        f"Base directory for this skill: {root}/.claude/skills/explain\n"
        "Explain how this works: the cache\n"
        "Quote awk's $1 as written, and keep {braces}.\n"
    )


def test_dir_is_relative_to_the_directory_start_runs_in(isolated: Path, tmp_path: Path) -> None:
    root = _setup(isolated)
    code, out, err = export(tmp_path, "-d", str(root), "out", "explain")
    assert (code, out, err) == (0, f"written    {root}/out/explain\n", "")


def test_dir_that_cannot_be_created_is_an_error(isolated: Path) -> None:
    root = _setup(isolated)
    (root / "f").write_text("x")
    assert export(root, "f/sub", "explain") == (
        1,
        "",
        f"start: {root}/f is not a directory, so {root}/f/sub cannot be created; name a "
        "directory to write skills to\n",
    )
    assert export(root, "/proc/start-export", "explain") == (
        1,
        "",
        "start: cannot write /proc/start-export (no such file or directory); name a directory "
        "you can write to\n",
    )
    assert (root / "f").read_text() == "x"


def test_a_symlink_out_of_the_project_is_refused(isolated: Path) -> None:
    """A clone's `.claude/skills` linked to the user's own: the skills would land there."""
    root = _setup(isolated)
    mine = Path.home() / ".claude" / "skills"
    mine.mkdir(parents=True)
    (root / ".claude").mkdir()
    (root / ".claude" / "skills").symlink_to(mine)
    assert export(root, ".claude/skills", "explain") == (
        1,
        "",
        f"start: {root}/.claude/skills leads out of the project through a symlink, to {mine}; "
        f"name {mine} if you mean to write there, or remove the link\n",
    )
    assert list(mine.iterdir()) == []
    # Named as what it is, it is written, and reported where it is.
    assert export(root, str(mine), "explain") == (0, f"written    {mine}/explain\n", "")


def test_a_symlink_is_reported_as_its_real_target(isolated: Path) -> None:
    """Inside the project, or the user's own link outside any project: written, and the real
    folder is what the output names."""
    root = _setup(isolated)
    (root / ".claude" / "skills").mkdir(parents=True)
    (root / ".agents").mkdir()
    (root / ".agents" / "skills").symlink_to(root / ".claude" / "skills")
    assert export(root, ".agents/skills", "explain") == (
        0,
        f"written    {root}/.claude/skills/explain\n",
        "",
    )
    skills = Path.home() / "dotfiles" / "skills"
    skills.mkdir(parents=True)
    (Path.home() / ".agents").mkdir()
    (Path.home() / ".agents" / "skills").symlink_to(skills)
    code, out, err = export(root, "~/.agents/skills", "explain", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["directory"] == str(skills)
    assert (skills / "explain" / "SKILL.md").is_file()
