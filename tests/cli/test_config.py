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


def test_validate_prints_one_line_per_problem_off_a_terminal_then_a_summary(
    global_dir: Path, isolated: Path
) -> None:
    write_tree(global_dir, {"config.toml": '[tasks.t]\ncomand = "x"\n'})
    write_tree(
        isolated,
        {
            ".start/tasks.toml": (
                '[tasks.review]\nrol = "x"\nprompt = """\nReview {instrucions} now.\n"""\n'
            )
        },
    )
    result = invoke("config", "validate")
    assert result.exit_code == 3
    assert result.stdout == (
        f"{global_dir / 'config.toml'}:1:1: error: tasks.t: needs at least one of 'file', "
        "'command' or 'prompt'\n"
        f"{global_dir / 'config.toml'}:2:1: warning: tasks.t.comand: unknown key 'comand' "
        "(did you mean 'command'?)\n"
        f"{isolated / '.start' / 'tasks.toml'}:2:1: warning: tasks.review.rol: unknown key 'rol' "
        "(did you mean 'role'?)\n"
        f"{isolated / '.start' / 'tasks.toml'}:4:8: error: tasks.review.prompt: unknown "
        "placeholder {instrucions} (did you mean '{instructions}'?)\n"
        "✗ 2 errors, 2 warnings in 7 files\n"
    )


def test_validate_places_a_key_after_a_multiline_string_that_ends_in_a_backslash(
    global_dir: Path,
) -> None:
    write_tree(global_dir, {"config.toml": '[tasks.t]\nprompt = """a\\\\"""\nbogus = 1\n'})
    result = invoke("config", "validate")
    assert result.stdout == (
        f"{global_dir / 'config.toml'}:3:1: warning: tasks.t.bogus: unknown key 'bogus'\n"
        "✓ 0 errors, 1 warning in 6 files\n"
    )


def test_validate_quiet_prints_only_the_problems(global_dir: Path) -> None:
    write_tree(global_dir, {"config.toml": '[tasks.t]\nprompt = "{banana}"\n'})
    result = invoke("-q", "config", "validate")
    assert result.stdout == (
        f"{global_dir / 'config.toml'}:2:11: warning: tasks.t.prompt: unknown placeholder "
        "{banana} is kept as literal text; write {{banana}} to silence this\n"
    )
    assert invoke("config", "validate", "-q").stdout == result.stdout
    write_tree(global_dir, {"config.toml": ""})
    assert invoke("config", "validate", "-q").stdout == ""


def test_validate_verbose_lists_the_files_read(global_dir: Path, tmp_path: Path) -> None:
    write_tree(global_dir, {"config.toml": ""})
    builtin = Path(__file__).resolve().parents[2] / "config"
    result = invoke("config", "validate", "-v")
    assert result.stdout == (
        f"read built-in: {builtin / 'agents.toml'}\n"
        f"read built-in: {builtin / 'roles.toml'}\n"
        f"read built-in: {builtin / 'contexts.toml'}\n"
        f"read built-in: {builtin / 'tasks.toml'}\n"
        f"read built-in: {builtin / 'workflows.toml'}\n"
        f"read global: {global_dir / 'config.toml'}\n"
        "✓ 0 errors, 0 warnings in 6 files\n"
    )


def test_validate_with_only_warnings_exits_0(global_dir: Path) -> None:
    write_tree(global_dir, {"config.toml": '[tasks.t]\nprompt = "{banana}"\n'})
    result = invoke("config", "validate")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "✓ 0 errors, 1 warning in 6 files"


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
            "line": 2,
            "column": 1,
        }
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            '[settings\ndefault_agent = "x"\n',
            "1:1: error: unclosed table header '[settings': add ']'",
            id="unclosed-header",
        ),
        pytest.param(
            '[tasks.t\nprompt = "p"\n[tasks.u]\nprompt = "q"\n',
            "1:1: error: unclosed table header '[tasks.t': add ']'",
            id="unclosed-header-before-others",
        ),
        pytest.param(
            '[settings]\n["a#b"\n',
            "2:1: error: unclosed table header '[\"a#b\"': add ']'",
            id="unclosed-header-with-a-hash-in-a-string",
        ),
        pytest.param(
            '[settings]\nshell = "bash"\n\n[settings]\n',
            "4:1: error: table [settings] is declared twice; merge the two into one",
            id="table-twice",
        ),
        pytest.param(
            '[settings]\nshell = "bash"\nshell = "zsh"\n',
            "3:1: error: 'shell' is set twice in this table; keep one",
            id="key-twice",
        ),
        pytest.param(
            "[settings]\ndefault_agent = claude\n",
            '2:17: error: invalid value claude: a string needs quotes, as in "claude"',
            id="unquoted-string",
        ),
        pytest.param(
            '[settings]\ndefault_agent = "claude\n',
            '2:24: error: unterminated string: end it on its line, or use """ for several lines',
            id="open-string",
        ),
        pytest.param(
            '[tasks.t]\nprompt = """\nnever closed\n',
            "2:10: error: unterminated multi-line string: it is never closed",
            id="open-multiline-string",
        ),
        pytest.param(
            '[tasks.t]\nprompt = """a\\\\"""\nother = """\nnever closed\n',
            "3:9: error: unterminated multi-line string: it is never closed",
            id="open-multiline-string-after-an-escaped-backslash",
        ),
        pytest.param(
            '[settings]\nshell = "bash" shell2 = "x"\n',
            "2:16: error: unexpected text after the value: one key = value per line",
            id="two-on-a-line",
        ),
    ],
)
def test_syntax_errors_read_plainly_at_their_line(isolated: Path, text: str, expected: str) -> None:
    write_tree(isolated, {".start/config.toml": text})
    result = invoke("config", "validate")
    assert result.exit_code == 3
    assert result.stdout == (
        f"{isolated / '.start' / 'config.toml'}:{expected}\n✗ 1 error, 0 warnings in 6 files\n"
    )


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


def test_show_project_shows_only_the_project_layer(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": '[roles.mine]\nprompt = "p"\n'})
    data = json.loads(invoke("config", "show", "--project", "--json").stdout)
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
        f"  {isolated / '.start' / 'config.toml'}\n"
        "    2:1: error: tasks.t.role: role 'nope' is not defined; defined roles: "
        "pair-programmer, code-reviewer, documentation-writer\n"
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


def test_show_narrows_to_a_kind_and_an_item(global_dir: Path) -> None:
    write_tree(
        global_dir,
        {"config.toml": '[tasks.mine]\nalias = "m"\nprompt = "p"\n[roles.r]\nprompt = "r"\n'},
    )
    path = global_dir / "config.toml"
    item = f'# from global ({path})\n[tasks.mine]\nprompt = "p"\nalias = "m"\n'
    assert invoke("config", "show", "task", "mine").stdout == item
    assert invoke("config", "show", "tasks", "mine").stdout == item
    tasks = invoke("config", "show", "tasks").stdout
    assert tasks.endswith("\n\n" + item)
    assert "[roles." not in tasks and "[settings]" not in tasks
    settings = invoke("config", "show", "settings").stdout
    assert settings.startswith("[settings]\n") and "[tasks." not in settings
    data = json.loads(invoke("config", "show", "task", "mine", "--json").stdout)
    assert data == {
        "tasks": {
            "mine": {
                "prompt": "p",
                "alias": "m",
                "origin": {"layer": "global", "file": str(path)},
            }
        }
    }


def test_show_layer(global_dir: Path, isolated: Path) -> None:
    write_tree(global_dir, {"config.toml": '[roles.g]\nprompt = "g"\n'})
    write_tree(isolated, {".start/config.toml": '[roles.p]\nprompt = "p"\n'})
    roles = {
        layer: list(
            json.loads(invoke("config", "show", "roles", "--layer", layer, "--json").stdout)[
                "roles"
            ]
        )
        for layer in ("global", "project")
    }
    assert roles == {"global": ["g"], "project": ["p"]}
    built_in = json.loads(invoke("config", "show", "--layer", "built-in", "--json").stdout)
    assert "code-reviewer" in built_in["roles"] and "g" not in built_in["roles"]


def test_show_settings_takes_no_name() -> None:
    result = invoke("config", "show", "settings", "shell")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: settings has no NAME; 'start config show settings' shows them all\n",
    )


def test_show_escapes_control_characters_as_valid_toml(global_dir: Path) -> None:
    import tomllib

    write_tree(
        global_dir,
        {
            "config.toml": '[tasks.t]\ndescription = "x\\u001b]0;t\\u0007\\u009b2J\\u202e"\nprompt = "p"\n'
        },
    )
    shown = invoke("config", "show", "task", "t").stdout
    assert 'description = "x\\u001b]0;t\\u0007\\u009b2J\\u202e"\n' in shown
    assert tomllib.loads(shown)["tasks"]["t"]["description"] == "x\x1b]0;t\x07\x9b2J\u202e"


def _readme_config() -> str:
    """The README's minimal config, as it is printed there."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## A minimal config", 1)[1]
    return section.split("```toml\n", 1)[1].split("```", 1)[0]


def test_validate_warns_of_a_required_contexts_missing_file(global_dir: Path) -> None:
    """The README's own config: its notes file named in every prompt, until it is written."""
    write_tree(global_dir, {"config.toml": _readme_config()})
    notes = global_dir.parents[1] / "notes" / "environment.md"
    config = global_dir / "config.toml"
    line = config.read_text().splitlines().index('file = "~/notes/environment.md"') + 1
    result = invoke("config", "validate")
    assert (result.exit_code, result.stdout) == (
        0,
        f"{config}:{line}:1: warning: contexts.environment.file: {notes} does not exist, and "
        "this required context names it in every prompt; create it, or fix the path\n"
        "✓ 0 errors, 1 warning in 6 files\n",
    )
    write_tree(notes.parent, {"environment.md": "Debian, fish.\n"})
    assert invoke("config", "validate").stdout == "✓ 0 errors, 0 warnings in 6 files\n"
    # A context only sessions get is not in every prompt: its file may come and go.
    sessions_only = '[contexts.n]\nfile = "~/absent.md"\nprompt = "{file}"\n'
    write_tree(global_dir, {"config.toml": sessions_only})
    assert invoke("config", "validate").stdout == "✓ 0 errors, 0 warnings in 6 files\n"


def test_validate_looks_up_a_projects_context_file_only_inside_it(
    global_dir: Path, isolated: Path
) -> None:
    """Untrusted, a project learns nothing of which files of yours exist: a path outside the
    root, or one that a symlink leads out of it, is not looked up."""
    (isolated / "out").symlink_to(global_dir.parents[1])
    contexts = "".join(
        f'[contexts.c{n}]\nfile = "{path}"\nprompt = "{{file}}"\nrequired = true\n'
        for n, path in enumerate(["~/absent.md", "/absent.md", "out/absent.md", "absent.md"])
    )
    write_tree(isolated, {".start/config.toml": contexts})
    result = invoke("config", "validate")
    config = isolated / ".start" / "config.toml"
    assert (result.exit_code, result.stdout) == (
        0,
        f"{config}:14:1: warning: contexts.c3.file: {isolated}/absent.md does not exist, and "
        "this required context names it in every prompt; create it, or fix the path\n"
        "✓ 0 errors, 1 warning in 6 files\n",
    )
