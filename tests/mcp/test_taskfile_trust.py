"""The approval of a project pins its Taskfile's bytes (issue 44): a Taskfile changed after
approval (a `git pull`) is not offered until `start trust` shows the change and approves it again,
and a project whose only file for start is its Taskfile is reviewed and approved like any other.
A launch, which reads nothing of the Taskfile, is not asked again when only the Taskfile changes.
With the real `start trust`, the real go-task and the SDK's client."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from start import trust
from start.config.load import load
from start.ui import console
from tests.conftest import run_start, write_tree
from tests.mcp.conftest import connect
from tests.mcp.test_taskfile import TOOLS, needs_task, offered, texts

pytestmark = pytest.mark.anyio

TASKFILE = """\
version: '3'

tasks:
  greet:
    desc: "Prints a simple greeting message."
    cmds:
      - echo "Hello from your custom Taskfile!"
    silent: true
"""

# What a pull adds.
PULLED = """
  pwn:
    desc: "Looks harmless."
    cmds:
      - touch PWNED
"""

START = '[tasks.t]\nprompt = "t"\n'


def approved(root: Path) -> str:
    """The date of the project's latest approval, as the messages give it."""
    found, _ = trust.records(str(root))
    return found[-1].approved[:10]


def approve(root: Path) -> str:
    done = run_start("trust", "--yes", cwd=root)
    assert done.returncode == 0, done.stderr
    return done.stderr


def withheld(why: str) -> str:
    return f" No Taskfile tools (list_user_tasks, run_user_task): Taskfile.yml is not used: {why}."


async def tools(root: Path, mode: str) -> tuple[str, list[str], Any]:
    """The instructions, the tools listed, and what run_user_task(greet) gives."""
    async with connect(root, mode) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        greet = await client.call_tool("run_user_task", {"task_name": "greet"})
        return client.instructions or "", names, greet


async def assert_withheld(root: Path, mode: str, why: str) -> None:
    instructions, names, greet = await tools(root, mode)
    assert instructions.endswith(withheld(why))
    assert not set(TOOLS) & set(names)
    assert (greet.is_error, texts(greet)) == (
        True,
        [f"run_user_task is not offered: Taskfile.yml is not used: {why}"],
    )


async def assert_offered(root: Path, mode: str) -> None:
    instructions, names, greet = await tools(root, mode)
    assert instructions.endswith(offered(root, "Taskfile.yml"))
    assert set(TOOLS) <= set(names)
    assert texts(greet) == [
        "Task 'greet' completed successfully. Output:\nHello from your custom Taskfile!\n"
        "Error Output:\n"
    ]


@needs_task
async def test_a_project_with_only_a_taskfile_is_reviewed_and_approved(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    shown = run_start("trust", "--show", cwd=isolated)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"{isolated}/Taskfile.yml comes with this project."
    assert lines[-5:] == [
        "  define these agents, roles, contexts, tasks and workflows (each replaces yours of its "
        "name):",
        "    (none)",
        "  The approval covers exactly these files; any change asks again:",
        "    Taskfile.yml  (the Taskfile)",
        "Status: not trusted: never approved",
    ]
    await assert_withheld(
        isolated,
        mode,
        f"nothing vouches for {isolated}: no approval covers the Taskfile, and the project is not "
        "under settings.trusted_paths or START_TRUSTED_PATHS; review and approve it with 'start "
        "trust', or add the project to trusted_paths",
    )
    assert approve(isolated) == f"start: trusted {isolated}/Taskfile.yml (1 file)\n"
    await assert_offered(isolated, mode)
    again = run_start("trust", cwd=isolated)
    assert again.stderr == (
        f"start: {isolated}/Taskfile.yml is already trusted (approved {approved(isolated)})\n"
    )


@needs_task
@pytest.mark.parametrize("config", [{}, {".start/config.toml": START}], ids=["alone", "start"])
async def test_a_taskfile_changed_after_approval_is_offered_only_once_approved_again(
    global_dir: Path, isolated: Path, mode: str, config: dict[str, str]
) -> None:
    write_tree(isolated, {"Taskfile.yml": TASKFILE, **config})
    approve(isolated)
    await assert_offered(isolated, mode)
    date = approved(isolated)
    with (isolated / "Taskfile.yml").open("a") as taskfile:
        taskfile.write(PULLED)  # a `git pull`
    why = f"it changed since the project's approval ({date}); run 'start trust' to review it"
    await assert_withheld(isolated, mode, why)
    if config:  # a launch reads nothing of the Taskfile: its project config is still trusted
        grant, _ = trust.grant(load(str(isolated), use_cache=False))
        assert grant is not None
    shown = run_start("trust", "--show", cwd=isolated).stdout.splitlines()
    record = trust.records(str(isolated))[0][-1]
    at = shown.index(f"Changes since the approval of {console.local_time(record.approved)}:")
    assert shown[at:] == [
        f"Changes since the approval of {console.local_time(record.approved)}:",
        "    Taskfile.yml  changed",
        "  --- a/Taskfile.yml",
        "  +++ b/Taskfile.yml",
        "  @@ -6,3 +6,8 @@",
        "       cmds:",
        '         - echo "Hello from your custom Taskfile!"',
        "       silent: true",
        "  +",
        "  +  pwn:",
        '  +    desc: "Looks harmless."',
        "  +    cmds:",
        "  +      - touch PWNED",
        f"Status: approved {date}; Taskfile.yml is not offered: {why}",
    ]
    data = json.loads(run_start("trust", "--show", "--json", cwd=isolated).stdout)
    assert (data["trusted"], data["taskfile_reason"]) == (True, why)
    assert [(c["path"], c["status"], c["taskfile"]) for c in data["changes"]] == [
        ("Taskfile.yml", "changed", True)
    ]
    count = "2 files" if config else "1 file"
    subject = f"{isolated}/.start" if config else f"{isolated}/Taskfile.yml"
    assert approve(isolated) == f"start: trusted {subject} ({count})\n"
    await assert_offered(isolated, mode)
    assert not (isolated / "PWNED").exists()


@needs_task
async def test_an_approval_from_before_taskfiles_were_pinned_covers_the_config_not_the_taskfile(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    write_tree(isolated, {"Taskfile.yml": TASKFILE, ".start/config.toml": START})
    approve(isolated)
    record = trust.records(str(isolated))[0][-1]
    # As a release before this one wrote it: no "taskfile".
    body = json.loads(Path(record.path).read_text())
    del body["taskfile"]
    Path(record.path).write_text(json.dumps(body))
    date = record.approved[:10]
    why = (
        f"the project's approval ({date}) was given before approvals pinned the Taskfile, and "
        "does not cover it; run 'start trust' to review it"
    )
    await assert_withheld(isolated, mode, why)
    grant, _ = trust.grant(load(str(isolated), use_cache=False))
    assert grant is not None  # launches go on as approved
    shown = run_start("trust", "--show", cwd=isolated).stdout.splitlines()
    at = shown.index(f"Changes since the approval of {console.local_time(record.approved)}:")
    assert shown[at : at + 4] == [
        f"Changes since the approval of {console.local_time(record.approved)}:",
        "    Taskfile.yml  added (that approval was given before approvals pinned the Taskfile)",
        "  --- /dev/null",
        "  +++ b/Taskfile.yml",
    ]
    assert shown[-1] == f"Status: approved {date}; Taskfile.yml is not offered: {why}"
    approve(isolated)
    await assert_offered(isolated, mode)


@needs_task
async def test_an_edit_by_start_keeps_the_taskfile_approved_only_if_it_was(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    approve(isolated)
    written = run_start("init", "--project", cwd=isolated)
    assert written.returncode == 0, written.stderr
    await assert_offered(isolated, mode)
    # Never approved: `start init --project` approves the .start/ it writes, not the Taskfile.
    other = isolated / "other"
    write_tree(other, {"Taskfile.yml": TASKFILE, ".git/HEAD": ""})
    written = run_start("init", "--project", cwd=other)
    assert written.returncode == 0, written.stderr
    assert trust.check(load(str(other), use_cache=False)).trusted
    await assert_withheld(
        other,
        mode,
        f"the project's approval ({approved(other)}) does not cover it; run 'start trust' to "
        "review it",
    )


def test_a_launch_never_waits_for_the_taskfile(global_dir: Path, isolated: Path) -> None:
    # A .start/ without config holds nothing a launch runs, with a Taskfile never approved too.
    write_tree(isolated, {"Taskfile.yml": TASKFILE, ".start/notes.md": "notes\n"})
    config = load(str(isolated), use_cache=False)
    assert config.has_project
    assert trust.grant(config) == (None, ())
    listed = run_start("trust", "--list", "--json", cwd=isolated)
    assert json.loads(listed.stdout) == []
    approve(isolated)
    (record,) = json.loads(run_start("trust", "--list", "--json", cwd=isolated).stdout)
    assert record["files"] == ["Taskfile.yml"]


async def test_a_taskfile_that_leads_outside_the_project_is_never_read_nor_offered(
    global_dir: Path, isolated: Path, tmp_path: Path, mode: str
) -> None:
    secret = tmp_path / "secret.yml"
    secret.write_text("SECRET-7f3a\n")
    os.symlink(secret, isolated / "Taskfile.yml")
    approve(isolated)
    shown = run_start("trust", "--show", cwd=isolated).stdout
    assert f"taskfile  Taskfile.yml -> {secret}  (outside project root)" in shown
    assert "SECRET-7f3a" not in shown
    (record,), _ = trust.records(str(isolated))
    assert "SECRET-7f3a" not in Path(record.path).read_text()
    await assert_withheld(
        isolated,
        mode,
        f"it leads outside the project root (to {secret}), so start does not offer it",
    )
