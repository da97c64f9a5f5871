"""Reading config files: a project file that a symlink leads outside the project root is never
opened, and TOML that Python cannot read whole is a problem of its file, never a crash."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from start.base import fs
from start.base.errors import Problem
from start.config import files
from start.config.load import load
from tests.conftest import invoke, write_tree

SECRET = "AKIAQSECRETKEY123"
OUTSIDE = "is a symlink that leads outside the project root; start does not read it"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A dotfile outside the project whose first line is not TOML: tomllib would stop at the
    token, and the plain-words explanation would quote it."""
    path = tmp_path / "home" / ".env"
    path.write_text(f"AWS_KEY={SECRET}\n")
    return path


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The real paths of every file that fs.read opens."""
    seen: list[str] = []
    real = fs.read

    def read(path: str, *args: object, **kwargs: object) -> fs.Read:
        seen.append(os.path.realpath(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fs, "read", read)
    return seen


def links(isolated: Path, secret: Path) -> dict[str, tuple[str, str]]:
    """Ways to spell a link from `.start/config.toml` to the secret: (link, target)."""
    return {
        "absolute": (".start/config.toml", str(secret)),
        "relative": (".start/config.toml", os.path.relpath(secret, isolated / ".start")),
        "dotted": (".start/config.toml", f"../.start/../{os.path.relpath(secret, isolated)}"),
        "through a directory link": (".start/config.toml", "d/.env"),
    }


@pytest.mark.parametrize("spelling", ["absolute", "relative", "dotted", "through a directory link"])
def test_a_project_config_file_linked_outside_is_never_opened(
    isolated: Path, secret: Path, opened: list[str], spelling: str
) -> None:
    (isolated / ".start").mkdir()
    if spelling == "through a directory link":
        (isolated / ".start" / "d").symlink_to(secret.parent)
    name, target = links(isolated, secret)[spelling]
    path = isolated / name
    path.symlink_to(target)
    assert os.path.realpath(path) == str(secret)

    config = load(str(isolated))

    assert [str(p) for p in config.problems] == [f"{path}: {OUTSIDE}"]
    assert str(secret) not in opened
    assert [(f.path, f.digest, f.parsed) for f in config.files if f.layer == "project"] == [
        (str(path), "", False)
    ]


def test_a_start_dir_linked_outside_is_not_read(
    isolated: Path, secret: Path, opened: list[str]
) -> None:
    write_tree(secret.parent, {"start/config.toml": f'x = "{SECRET}"\n', "start/typo.toml": ""})
    (isolated / ".start").symlink_to(secret.parent / "start")

    config = load(str(isolated))

    assert [str(p) for p in config.problems] == [f"{isolated / '.start'}: {OUTSIDE}"]
    assert not [path for path in opened if path.startswith(str(secret.parent))]
    assert not [f for f in config.files if f.layer == "project"]


def test_a_project_config_file_linked_inside_the_project_is_read(isolated: Path) -> None:
    write_tree(isolated, {"shared/start.toml": '[tasks.t]\nprompt = "hi"\n'})
    (isolated / ".start").mkdir()
    (isolated / ".start" / "tasks.toml").symlink_to("../shared/start.toml")
    config = load(str(isolated))
    assert (config.problems, config.tasks["t"].prompt) == ((), "hi")


def test_a_project_file_swapped_for_a_link_outside_while_opened_is_not_used(
    isolated: Path, secret: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is checked before it is opened and the descriptor after: a link that changes in
    between gives bytes that are dropped."""
    write_tree(isolated, {".start/config.toml": ""})
    path = isolated / ".start" / "config.toml"
    real = fs.read

    def swapped(name: str, *args: object, **kwargs: object) -> fs.Read:
        path.unlink()
        path.symlink_to(secret)
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fs, "read", swapped)
    assert files.read_bytes(str(path), os.path.realpath(isolated)) == (
        None,
        Problem("error", str(path), "", OUTSIDE),
    )


def test_a_global_config_file_may_link_anywhere(isolated: Path, tmp_path: Path) -> None:
    write_tree(tmp_path / "dotfiles", {"start.toml": '[tasks.t]\nprompt = "mine"\n'})
    config_dir = Path.home() / ".config" / "start"
    config_dir.mkdir(parents=True)
    (config_dir / "config.toml").symlink_to(tmp_path / "dotfiles" / "start.toml")
    config = load(str(isolated))
    assert (config.problems, config.tasks["t"].prompt) == ((), "mine")


# --- TOML that Python cannot read whole -----------------------------------------------------


DIGITS = sys.get_int_max_str_digits()


@pytest.mark.parametrize(
    ("text", "message", "at"),
    [
        (
            "[settings]\ncommand_timeout = 1" + "0" * DIGITS + "\n",
            f"an integer has more than {DIGITS:,} digits; start reads at most that",
            None,
        ),
        (
            "[settings]\nx = [1" + "0" * DIGITS + "]\n",
            f"an integer has more than {DIGITS:,} digits; start reads at most that",
            None,
        ),
        (
            "x = " + "[" * 3000 + "]" * 3000 + "\n",
            "arrays or inline tables are nested too deeply to read",
            (1, 5),
        ),
        (
            "[a]\ny = [[1]]\n\n[b]\n# [[[[\nz = 'x'\nx = {a = " + "[" * 3000 + "]" * 3000 + "}\n",
            "arrays or inline tables are nested too deeply to read",
            (7, 5),
        ),
    ],
    ids=["an integer", "an integer in an array", "deep arrays", "deep arrays in a later table"],
)
def test_toml_past_pythons_limits_is_a_problem_of_its_file(
    isolated: Path, text: str, message: str, at: tuple[int, int] | None
) -> None:
    write_tree(isolated, {".start/tasks.toml": text})
    path = isolated / ".start" / "tasks.toml"
    line, column = at or (None, None)
    problem = Problem("error", str(path), "", message, line=line, column=column)
    assert files.read(str(path)).problem == problem
    where = f"{path}:{line}:{column}" if at else str(path)
    assert [str(p) for p in load(str(isolated)).problems] == [f"{where}: {message}"]


def test_a_project_edit_never_reads_a_config_file_linked_outside(
    isolated: Path, secret: Path, opened: list[str]
) -> None:
    (isolated / ".start").mkdir()
    link = isolated / ".start" / "config.toml"
    link.symlink_to(secret)
    result = invoke("config", "set", "--project", "default_role", "x")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"start: refused to write {link}: it leads to {secret}, outside the project root "
        f"{isolated}, through a symlink. Replace the symlink with a regular file, or edit "
        f"{secret} yourself.\n"
    )
    assert str(secret) not in opened
    assert secret.read_text() == f"AWS_KEY={SECRET}\n"


@pytest.mark.parametrize(
    "text",
    [
        ".".join(["kk"] * 200_000) + " = 1\n",
        "[" + ".".join(["kk"] * 200_000) + "]\n",
        "x = {" + ".".join(["kk"] * 200_000) + " = 1}\n",
        "x = [\n  {" + ".".join(["kk"] * 100) + " = 1},\n]\n",
    ],
    ids=["key", "header", "inline", "in-array"],
)
def test_a_key_of_too_many_dotted_parts_is_refused_before_tomllib_stalls(text: str) -> None:
    """tomllib took 1.25 s on one key of 8,000 parts, and its time grows with their square."""
    with pytest.raises(files.LimitError) as raised:
        files.loads(text)
    assert str(raised.value) == "a key has more than 64 dotted parts; start reads at most that"


@pytest.mark.parametrize(
    "text",
    [
        'prompt = "' + "a. " * 500 + '"\n',
        "# " + "." * 500 + "\n",
        "x = [" + ", ".join(["1.5"] * 500) + "]\n",
        'prompt = """\n' + "a.b." * 500 + '\n"""\n',
        ".".join(["kk"] * 63) + " = 1\n",
    ],
    ids=["string", "comment", "floats", "multi-line string", "63 parts"],
)
def test_dots_that_are_no_keys_parts_are_not_counted(text: str) -> None:
    files.loads(text)
