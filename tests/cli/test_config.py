"""`start config validate | show | path` through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import invoke, write_tree


@pytest.fixture
def global_dir(isolated: Path) -> Path:
    directory = isolated.parent / "home" / ".config" / "start"
    directory.mkdir(parents=True)
    return directory


def test_validate_reports_each_problem_then_a_summary_and_exits_3(global_dir: Path) -> None:
    write_tree(global_dir, {"config.toml": '[tasks.t]\ncomand = "x"\n'})
    result = invoke("config", "validate")
    path = global_dir / "config.toml"
    assert result.exit_code == 3
    lines = result.stdout.splitlines()
    assert (
        lines[0]
        == f"warning: {path}: tasks.t.comand: unknown key 'comand' (did you mean 'command'?)"
    )
    assert (
        lines[1] == f"error: {path}: tasks.t: needs at least one of 'file', 'command' or 'prompt'"
    )
    assert lines[-1] == "✗ 1 error, 1 warning in 5 files"


def test_validate_with_only_warnings_exits_0(global_dir: Path) -> None:
    write_tree(global_dir, {"config.toml": '[tasks.t]\nprompt = "{banana}"\n'})
    result = invoke("config", "validate")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "✓ 0 errors, 1 warning in 5 files"


def test_validate_json(global_dir: Path) -> None:
    write_tree(global_dir, {"config.toml": '[tasks.t]\ncomand = "x"\nprompt = "p"\n'})
    result = invoke("config", "validate", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == [
        {
            "severity": "warning",
            "file": str(global_dir / "config.toml"),
            "key": "tasks.t.comand",
            "message": "unknown key 'comand'",
            "suggestion": "command",
            "line": None,
            "column": None,
        }
    ]


def test_validate_syntax_error(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": "[settings\n"})
    result = invoke("config", "validate")
    assert result.exit_code == 3
    assert result.stdout.splitlines()[0].startswith(f"error: {isolated / '.start/config.toml'}:1:")


def test_show_json_has_provenance(global_dir: Path, isolated: Path) -> None:
    write_tree(global_dir, {"config.toml": "[settings]\ncommand_timeout = 9\n"})
    write_tree(isolated, {".start/tasks.toml": '[tasks.git-diff-review]\nprompt = "mine"\n'})
    result = invoke("config", "show", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["settings"]["command_timeout"] == {
        "value": 9,
        "origin": {"layer": "global", "file": str(global_dir / "config.toml")},
    }
    assert data["tasks"]["git-diff-review"] == {
        "prompt": "mine",
        "origin": {"layer": "project", "file": str(isolated / ".start" / "tasks.toml")},
    }
    assert data["roles"]["code-reviewer"]["origin"]["layer"] == "built-in"


def test_show_text_is_annotated_toml(isolated: Path) -> None:
    import tomllib

    write_tree(
        isolated, {".start/config.toml": '[roles.mine]\nprompt = """\nline one\nline two\n"""\n'}
    )
    result = invoke("config", "show")
    assert result.exit_code == 0
    assert (
        f"# from project ({isolated / '.start' / 'config.toml'})\n[roles.mine]\n" in result.stdout
    )
    parsed = tomllib.loads(result.stdout)
    assert parsed["roles"]["mine"]["prompt"] == "line one\nline two\n"


def test_show_local_shows_only_the_project_layer(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": '[roles.mine]\nprompt = "p"\n'})
    data = json.loads(invoke("config", "show", "--local", "--json").stdout)
    assert list(data["roles"]) == ["mine"]
    assert data["tasks"] == {}
    data = json.loads(invoke("config", "show", "--global", "--json").stdout)
    assert data["roles"] == {}


def test_show_on_invalid_config_exits_3_with_problems(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": '[tasks.t]\nrole = "nope"\nprompt = "p"\n'})
    result = invoke("config", "show")
    assert result.exit_code == 3
    assert result.stderr == (
        "start: configuration is invalid (1 error)\n"
        f"  error: {isolated / '.start' / 'config.toml'}: tasks.t.role: role 'nope' is not "
        "defined; defined roles: pair-programmer, code-reviewer, documentation-writer\n"
        "Run 'start config validate' to see every problem.\n"
    )


def test_path(global_dir: Path, isolated: Path) -> None:
    write_tree(global_dir, {"config.toml": ""})
    result = invoke("config", "path")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert f"global: {global_dir}" in lines
    assert f"  {global_dir / 'config.toml'}" in lines
    assert "project: none" in lines
    assert lines[-1] == f"project root: {isolated}"


def test_path_json_with_directory_flag(isolated: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write_tree(other, {".start/roles.toml": ""})
    data = json.loads(invoke("config", "path", "--json", "-d", str(other)).stdout)
    assert data["layers"]["project"] == {
        "directory": str(other / ".start"),
        "files": [str(other / ".start" / "roles.toml")],
    }
    assert data["project_root"] == str(other)
