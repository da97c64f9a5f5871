"""A layer's config file (start.setup.layerfile): the file an edit goes to, validation before
writing, atomic locked writes, and project files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from start import trust
from start.base.errors import ConfigError
from start.config.load import load
from start.setup import edit, layerfile
from tests.conftest import REPO, write_tree
from tests.setup.conftest import scope
from tests.setup.test_edit import COMMENTED

# --- files: where, validation, atomicity, symlinks, locking --------------------------------------


def test_the_first_edit_creates_the_global_config(global_dir: Path) -> None:
    outcome = edit.set_setting(scope(), "shell", "zsh")
    assert outcome == layerfile.Outcome(str(global_dir / "config.toml"), changed=True)
    assert (global_dir / "config.toml").read_text() == '[settings]\nshell = "zsh"\n'


def test_an_invalid_edit_is_refused_and_nothing_is_written(global_dir: Path) -> None:
    write_tree(global_dir, {"config.toml": COMMENTED})
    path = global_dir / "config.toml"
    with pytest.raises(ConfigError) as caught:
        edit.set_setting(scope(), "default_role", "nobody")
    assert str(caught.value) == (
        f"refused: the change would make the config invalid, so {path} was not changed\n"
        f"  {path}\n"
        "    19:1: error: settings.default_role: role 'nobody' is not defined; defined roles: "
        "pair-programmer, code-reviewer, documentation-writer\n"
        "Run 'start config validate' to see every problem."
    )
    assert path.read_text() == COMMENTED


def test_a_problem_that_was_there_before_does_not_block_an_edit(global_dir: Path) -> None:
    broken = '[tasks.broken]\ndescription = "no prompt"\n'
    write_tree(global_dir, {"config.toml": broken})
    outcome = edit.add_item(scope(), "roles", "r", {"prompt": "p"})
    assert outcome.changed
    assert (global_dir / "config.toml").read_text() == broken + '\n[roles.r]\nprompt = "p"\n'


def test_new_warnings_are_reported(global_dir: Path) -> None:
    outcome = edit.add_item(scope(), "tasks", "t", {"command": "date", "prompt": "p"})
    path = global_dir / "config.toml"
    assert [str(p) for p in outcome.problems] == [
        f"{path}:2:1: tasks.t.command: 'command' is set but the prompt never uses {{command}} or "
        "{command_output}, so it is ignored"
    ]


def test_a_layer_file_with_a_syntax_error_blocks_editing(global_dir: Path) -> None:
    write_tree(global_dir, {"config.toml": "", "tasks.toml": "[tasks.t\n"})
    with pytest.raises(ConfigError) as caught:
        edit.set_setting(scope(), "shell", "zsh")
    assert str(caught.value).splitlines()[0] == (
        f"cannot edit {global_dir}: tasks.toml is not valid TOML; fix it first"
    )


def test_an_item_is_edited_in_the_split_file_that_holds_it(global_dir: Path) -> None:
    contexts = '# mine\n\n[context.a]\nprompt = "a"\n\n[context.b]\nprompt = "b"\n'
    write_tree(global_dir, {"config.toml": '[settings]\nshell = "sh"\n', "contexts.toml": contexts})
    assert edit.remove_item(scope(), "contexts", "a").path == str(global_dir / "contexts.toml")
    assert (global_dir / "contexts.toml").read_text() == '# mine\n\n[context.b]\nprompt = "b"\n'
    assert edit.add_item(scope(), "contexts", "c", {"prompt": "c"}).path == str(
        global_dir / "contexts.toml"
    )
    assert (global_dir / "contexts.toml").read_text() == (
        '# mine\n\n[context.b]\nprompt = "b"\n\n[context.c]\nprompt = "c"\n'
    )
    assert (global_dir / "config.toml").read_text() == '[settings]\nshell = "sh"\n'


def test_a_setting_is_changed_where_it_is_set(global_dir: Path) -> None:
    write_tree(global_dir, {"config.toml": "", "roles.toml": '[settings]\nshell = "sh"\n'})
    assert edit.set_setting(scope(), "shell", "zsh").path == str(global_dir / "roles.toml")


def test_the_mode_is_kept_and_new_files_are_not_group_writable(global_dir: Path) -> None:
    old = os.umask(0)
    try:
        edit.set_setting(scope(), "shell", "zsh")
    finally:
        os.umask(old)
    path = global_dir / "config.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    path.chmod(0o600)
    edit.set_setting(scope(), "shell", "bash")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in global_dir.iterdir()) == ["config.toml"]


def test_a_symlinked_config_edits_the_link_target(global_dir: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    write_tree(dotfiles, {"start.toml": "# in my dotfiles\n"})
    global_dir.mkdir(parents=True)
    (global_dir / "config.toml").symlink_to(dotfiles / "start.toml")
    edit.set_setting(scope(), "shell", "zsh")
    assert (global_dir / "config.toml").is_symlink()
    assert (
        dotfiles / "start.toml"
    ).read_text() == '# in my dotfiles\n\n[settings]\nshell = "zsh"\n'
    assert sorted(p.name for p in dotfiles.iterdir()) == ["start.toml"]


# One writer: four tasks added to the global config, one edit each, as `start config add` adds.
_WRITER = """
import os, sys
from start.setup import edit, layerfile
worker = sys.argv[1]
for i in range(4):
    edit.add_item(layerfile.Scope("global", os.getcwd()), "tasks", f"w{worker}-{i}", {"prompt": str(i)})
"""


def test_concurrent_edits_lose_nothing(global_dir: Path) -> None:
    write_tree(global_dir, {"config.toml": "# shared\n"})
    # Processes of their own, not a multiprocessing pool, which waits for ever for a worker that
    # died (seen once in a loaded run): each writer is awaited, and a hang is a failure.
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(worker)], env=env)
        for worker in range(6)
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0] * 6
    tasks = tomllib.loads((global_dir / "config.toml").read_text())["tasks"]
    assert sorted(tasks) == sorted(f"w{w}-{i}" for w in range(6) for i in range(4))


# --- project files --------------------------------------------------------------------------------


def test_project_creates_start_dir_at_the_project_root(isolated: Path) -> None:
    (isolated / ".git").mkdir()
    (isolated / "src").mkdir()
    os.chdir(isolated / "src")
    outcome = edit.add_item(scope("project"), "tasks", "t", {"prompt": "p"})
    assert outcome.path == str(isolated / ".start" / "config.toml")
    assert Path(outcome.path).read_text() == '[tasks.t]\nprompt = "p"\n'
    assert stat.S_IMODE((isolated / ".start").stat().st_mode) & 0o022 == 0


def test_a_refused_project_edit_leaves_no_start_dir(isolated: Path) -> None:
    with pytest.raises(ConfigError):
        edit.set_setting(scope("project"), "default_agent", "nobody")
    assert not (isolated / ".start").exists()


def test_an_approved_project_stays_approved_after_an_edit(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": '[tasks.t]\nprompt = "p"\n'})
    found = trust.scan(load())
    assert found is not None
    trust.approve(found)
    edit.add_item(scope("project"), "tasks", "u", {"prompt": "q"})
    assert trust.check(load()).trusted


def test_an_unapproved_project_stays_unapproved_after_an_edit(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": '[tasks.t]\nprompt = "p"\n'})
    edit.add_item(scope("project"), "tasks", "u", {"prompt": "q"})
    assert not trust.check(load()).trusted
