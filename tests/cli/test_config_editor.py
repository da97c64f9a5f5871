"""`start config edit` through the real command line: the editor, its re-opening, the starter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from start.cli import config_edit
from tests.cli.test_config_edit import MINE
from tests.conftest import REPO, invoke, write_tree


@pytest.fixture
def global_dir(isolated: Path) -> Path:
    return isolated.parent / "home" / ".config" / "start"


@pytest.fixture
def config_file(global_dir: Path) -> Path:
    write_tree(global_dir, {"config.toml": MINE})
    return global_dir / "config.toml"


@pytest.fixture
def tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config_edit, "interactive", lambda: True)


# --- edit -----------------------------------------------------------------------------------------

EDITOR = """\
import pathlib, sys
queue = sorted(pathlib.Path(sys.argv[1]).iterdir())
target = pathlib.Path(sys.argv[2])
if queue:
    step = queue[0].read_text()
    queue[0].unlink()
    if step.startswith("EXIT "):
        sys.exit(int(step.split()[1]))
    if step.startswith("RACE "):
        first, step = step.split("\\n", 1)
        pathlib.Path(first[5:]).write_text("# changed meanwhile\\n")
    target.write_text(step)
"""


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Queue what each run of the editor saves ("EXIT n" fails, "RACE path" also writes there)."""
    script = tmp_path / "editor.py"
    script.write_text(EDITOR)
    queue = tmp_path / "queue"
    queue.mkdir()
    monkeypatch.setenv("VISUAL", f"{sys.executable} {script} {queue}")

    def then(*steps: str) -> None:
        for number, step in enumerate(steps):
            (queue / f"{number:03}").write_text(step)

    return then


def test_edit_saves_a_valid_file(config_file: Path, editor: Callable[..., None]) -> None:
    editor(MINE + '\n[roles.r]\nprompt = "r"\n')
    result = invoke("config", "edit")
    assert (result.exit_code, result.stderr) == (0, f"Saved {config_file}\n")
    assert config_file.read_text() == MINE + '\n[roles.r]\nprompt = "r"\n'


def test_edit_uses_editor_when_visual_is_unset(
    config_file: Path, editor: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.setenv("EDITOR", os.environ["VISUAL"])
    monkeypatch.delenv("VISUAL")
    editor(MINE + "# more\n")
    assert invoke("config", "edit").exit_code == 0
    assert config_file.read_text() == MINE + "# more\n"


def test_edit_without_changes(config_file: Path, editor: Callable[..., None]) -> None:
    result = invoke("config", "edit")
    assert (result.exit_code, result.stderr) == (0, f"No changes ({config_file})\n")


def test_edit_creates_a_missing_file(global_dir: Path, editor: Callable[..., None]) -> None:
    editor('[settings]\nshell = "sh"\n')
    assert invoke("config", "edit").exit_code == 0
    assert (global_dir / "config.toml").read_text() == '[settings]\nshell = "sh"\n'


def test_edit_a_split_file_of_the_project(isolated: Path, editor: Callable[..., None]) -> None:
    editor('[tasks.t]\nprompt = "p"\n')
    result = invoke("config", "edit", "--project", "tasks.toml")
    path = isolated / ".start" / "tasks.toml"
    assert (result.exit_code, result.stderr) == (0, f"Saved {path}\n")


def test_edit_keeps_an_invalid_file_and_lists_its_problems(
    config_file: Path, editor: Callable[..., None]
) -> None:
    editor(MINE + "[tasks.bad]\nprompt = 1\n")
    result = invoke("config", "edit")
    assert result.exit_code == 3
    assert result.stderr == (
        f"Saved {config_file}, but the config is invalid:\n"
        f"{config_file}:10:1: error: tasks.bad.prompt: must be a string, not an integer\n"
    )
    assert config_file.read_text() == MINE + "[tasks.bad]\nprompt = 1\n"


def test_edit_on_a_terminal_offers_to_reopen(
    config_file: Path, editor: Callable[..., None], tty: None
) -> None:
    editor("[tasks\n", MINE + "# fixed\n")
    result = invoke("config", "edit", stdin="y\n")
    assert result.exit_code == 0
    assert result.stderr == (
        f"{config_file} would be invalid:\n"
        f"{config_file}:1:1: error: unclosed table header '[tasks': add ']'\n"
        "Re-open the editor? [Y/n]: y\n"
        f"Saved {config_file}\n"
    )
    assert config_file.read_text() == MINE + "# fixed\n"


def test_edit_on_a_terminal_keeps_the_file_when_not_reopened(
    config_file: Path, editor: Callable[..., None], tty: None
) -> None:
    editor("[tasks\n")
    result = invoke("config", "edit", stdin="n\n")
    assert result.exit_code == 3
    # The line that ends in a colon is followed by the problems it announces.
    assert result.stderr.endswith(
        f"Re-open the editor? [Y/n]: n\nSaved {config_file}, but the config is invalid:\n"
        f"{config_file}:1:1: error: unclosed table header '[tasks': add ']'\n"
    )
    assert config_file.read_text() == "[tasks\n"


def test_a_failing_editor_saves_nothing(config_file: Path, editor: Callable[..., None]) -> None:
    editor("EXIT 1")
    result = invoke("config", "edit")
    assert result.exit_code == 1
    assert result.stderr.startswith("start: the editor '")
    assert result.stderr.endswith("' exited with status 1; nothing was saved\n")
    assert config_file.read_text() == MINE


def test_edit_refuses_to_overwrite_a_change_made_meanwhile(
    config_file: Path, editor: Callable[..., None]
) -> None:
    editor(f"RACE {config_file}\n" + MINE + "# mine\n")
    result = invoke("config", "edit")
    assert result.exit_code == 1
    message = result.stderr
    prefix = f"start: {config_file}: it was changed by something else while being edited; "
    assert message.startswith(prefix + "your version is kept in ")
    kept = Path(message[len(prefix + "your version is kept in ") :].strip())
    assert kept.read_text() == MINE + "# mine\n"
    assert config_file.read_text() == "# changed meanwhile\n"


def test_edit_without_a_terminal_never_starts_vi(
    isolated: Path, global_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vi on /dev/null would draw to nothing and wait; an editor the user named is run."""
    from tests.conftest import run_start

    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    with open(os.devnull) as null:
        proc = subprocess.run(
            [sys.executable, "-m", "start", "config", "edit"],
            stdin=null, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2,
        "",
        "start: vi (the editor when $VISUAL and $EDITOR are unset) needs a terminal, and stdin "
        "is not one; run 'start config edit' on a terminal, name an editor in $VISUAL or "
        "$EDITOR, or change the config with 'start config set', 'add' or 'remove'\n",
    )
    assert not global_dir.exists()
    appends = 'sh -c \'echo "# edited" >> "$1"\' sh'
    proc = run_start("config", "edit", cwd=isolated, env={"EDITOR": appends})
    assert (proc.returncode, proc.stderr) == (0, f"Saved {global_dir / 'config.toml'}\n")


@pytest.fixture
def appender(monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor that adds a line to the file it is given."""
    monkeypatch.setenv("VISUAL", 'sh -c \'echo "# edited" >> "$1"\' sh')


def test_edit_offers_the_starter_for_a_missing_global_config(
    global_dir: Path, appender: None, tty: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from start.setup import init as starter
    from tests.setup.test_init import use_catalog, use_path

    use_catalog(tmp_path, monkeypatch)
    use_path(tmp_path, monkeypatch, "beta-cli")
    path = global_dir / "config.toml"
    result = invoke("config", "edit", stdin="y\n")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        f"{path} does not exist. Start from the commented starter config? [Y/n]: y\n"
        f"start: wrote {path}\n"
        f"Saved {path}\n"
    )
    detection = starter.detect(str(tmp_path))
    expected = starter.global_text("beta", detection)
    assert path.read_text() == expected + "# edited\n"


def test_edit_without_the_starter_starts_empty(global_dir: Path, appender: None, tty: None) -> None:
    path = global_dir / "config.toml"
    result = invoke("config", "edit", stdin="n\n")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        f"{path} does not exist. Start from the commented starter config? [Y/n]: n\nSaved {path}\n"
    )
    assert path.read_text() == "# edited\n"


def test_edit_never_asks_without_a_terminal(global_dir: Path, appender: None) -> None:
    path = global_dir / "config.toml"
    result = invoke("config", "edit")
    assert (result.exit_code, result.stderr) == (0, f"Saved {path}\n")
    assert path.read_text() == "# edited\n"


def test_edit_json_reports_the_outcome(config_file: Path, appender: None) -> None:
    result = invoke("config", "edit", "--json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert json.loads(result.stdout) == {"file": str(config_file), "changed": True, "problems": []}
