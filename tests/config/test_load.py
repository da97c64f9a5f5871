"""Loading and merging layers: order, provenance, layouts, duplicates and syntax errors."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from start.base import paths
from start.config.load import load
from tests.conftest import invoke, write_tree


@pytest.fixture
def layers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path) -> dict[str, Path]:
    """Empty built-in, global and project layer directories."""
    builtin = tmp_path / "builtin"
    builtin.mkdir()
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(builtin))
    global_dir = tmp_path / "home" / ".config" / "start"
    project = isolated / ".start"
    project.mkdir()
    global_dir.mkdir(parents=True)
    return {"built-in": builtin, "global": global_dir, "project": project}


def test_later_layer_replaces_item_whole_and_keeps_its_slot(layers: dict[str, Path]) -> None:
    write_tree(
        layers["built-in"],
        {
            "contexts.toml": (
                '[contexts.a]\nprompt = "A"\nrequired = true\n'
                '[contexts.b]\nprompt = "B"\ndescription = "built-in b"\n'
                '[contexts.c]\nprompt = "C"\n'
            )
        },
    )
    write_tree(layers["global"], {"config.toml": '[contexts.d]\nprompt = "D"\n'})
    write_tree(layers["project"], {"config.toml": '[contexts.b]\ncommand = "echo b"\n'})
    config = load()
    assert list(config.contexts) == ["a", "b", "c", "d"]
    b = config.contexts["b"]
    # No field merging: the project's b has no description and no prompt.
    assert (b.command, b.prompt, b.description) == ("echo b", None, None)
    assert b.origin.layer == "project"
    assert b.origin.path == str(layers["project"] / "config.toml")
    assert config.contexts["a"].origin.layer == "built-in"
    assert config.contexts["d"].origin.layer == "global"


def test_settings_merge_per_field(layers: dict[str, Path]) -> None:
    write_tree(
        layers["built-in"], {"config.toml": '[settings]\nshell = "sh"\ncommand_timeout = 5\n'}
    )
    write_tree(layers["global"], {"config.toml": "[settings]\ncommand_timeout = 10\n"})
    write_tree(layers["project"], {"config.toml": '[settings]\nshell = "bash"\n'})
    config = load()
    assert (config.settings.shell, config.settings.command_timeout) == ("bash", 10)
    assert config.settings.origins["shell"].layer == "project"
    assert config.settings.origins["command_timeout"].layer == "global"


def test_default_settings(layers: dict[str, Path]) -> None:
    config = load()
    assert config.settings.command_timeout == 30
    assert config.settings.default_agent is None


def test_one_file_layer_and_split_file_layer_are_equivalent(layers: dict[str, Path]) -> None:
    body = {
        "agents": '[agents.x]\nbin = "x"\ncommand = "{bin} {prompt}"\n',
        "roles": '[roles.r]\nprompt = "be good"\n',
        "contexts": '[contexts.c]\nprompt = "ctx"\n',
        "tasks": '[tasks.t]\nprompt = "do {instructions}"\n',
    }
    write_tree(layers["global"], {"config.toml": "\n".join(body.values())})
    one = load()
    (layers["global"] / "config.toml").unlink()
    write_tree(layers["global"], {f"{kind}.toml": text for kind, text in body.items()})
    split = load()
    assert not one.problems and not split.problems
    for kind in ("agents", "roles", "contexts", "tasks"):
        assert list(getattr(one, kind)) == list(getattr(split, kind))
    assert split.tasks["t"].origin.path == str(layers["global"] / "tasks.toml")


def test_files_are_read_in_a_fixed_order(layers: dict[str, Path]) -> None:
    write_tree(
        layers["global"],
        {
            "tasks.toml": '[contexts.from-tasks-file]\nprompt = "2"\n',
            "config.toml": '[contexts.from-config-file]\nprompt = "1"\n',
        },
    )
    assert list(load().contexts) == ["from-config-file", "from-tasks-file"]


def test_seed_context_spelling_is_a_synonym(layers: dict[str, Path]) -> None:
    write_tree(
        layers["global"],
        {"config.toml": '[context.environment]\nprompt = "env"\nrequired = true\n'},
    )
    config = load()
    assert not config.problems
    assert config.contexts["environment"].required is True


def test_same_item_twice_in_one_layer_names_both_files(layers: dict[str, Path]) -> None:
    write_tree(
        layers["global"],
        {
            "config.toml": '[tasks.t]\nprompt = "a"\n',
            "tasks.toml": '[tasks.t]\nprompt = "b"\n',
        },
    )
    [problem] = load().problems
    assert str(problem) == (
        f"{layers['global'] / 'tasks.toml'}:1:1: tasks.t: task 't' is defined twice in the global "
        f"layer (also in {layers['global'] / 'config.toml'})"
    )


def test_both_context_spellings_in_one_file_are_a_duplicate(layers: dict[str, Path]) -> None:
    write_tree(
        layers["global"], {"config.toml": '[context.x]\nprompt = "a"\n[contexts.x]\nprompt = "b"\n'}
    )
    [problem] = load().problems
    assert (
        problem.message == "context 'x' is defined twice in the global layer (earlier in this file)"
    )


def test_toml_syntax_error_has_line_and_column(layers: dict[str, Path]) -> None:
    write_tree(
        layers["project"], {"config.toml": '[settings]\nshell = "bash"\ncommand_timeout = \n'}
    )
    config = load()
    [problem] = config.problems
    path = layers["project"] / "config.toml"
    assert str(problem) == f"{path}:3:19: invalid value"
    assert problem.is_error
    assert config.files[-1].parsed is False


def test_syntax_error_at_end_of_document(layers: dict[str, Path]) -> None:
    write_tree(layers["global"], {"config.toml": '[tasks.t]\nprompt = """open'})
    [problem] = load().problems
    assert (problem.line, problem.column) == (2, 10)
    assert problem.message == "unterminated multi-line string: it is never closed"


def test_non_utf8_file(layers: dict[str, Path]) -> None:
    (layers["global"] / "config.toml").write_bytes(b'[settings]\nshell = "\xff"\n')
    [problem] = load().problems
    assert str(problem) == f"{layers['global'] / 'config.toml'}:2:10: file is not valid UTF-8"


def test_stray_toml_file_is_a_warning_with_a_suggestion(layers: dict[str, Path]) -> None:
    write_tree(layers["global"], {"task.toml": '[tasks.t]\nprompt = "x"\n'})
    [problem] = load().problems
    assert str(problem) == (
        f"{layers['global'] / 'task.toml'}: file is not read; a layer reads config.toml, "
        "agents.toml, roles.toml, contexts.toml, tasks.toml, workflows.toml (did you mean "
        "'tasks.toml'?)"
    )


def test_no_project_ignores_the_project_layer(layers: dict[str, Path]) -> None:
    write_tree(layers["project"], {"config.toml": '[roles.p]\nprompt = "p"\n'})
    assert "p" in load().roles
    assert "p" not in load(use_project=False).roles


def test_start_config_dir_overrides_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert Path(paths.global_config_dir()) == tmp_path / "xdg" / "start"
    monkeypatch.setenv("START_CONFIG_DIR", str(tmp_path / "explicit"))
    assert Path(paths.global_config_dir()) == tmp_path / "explicit"


def test_global_dir_defaults_to_dot_config(tmp_path: Path) -> None:
    assert Path(paths.global_config_dir()) == tmp_path / "home" / ".config" / "start"


def test_unreadable_file_is_a_problem_not_a_crash(
    layers: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = layers["global"] / "config.toml"
    path.write_text('[settings]\nshell = "sh"\n')
    real = os.open

    def denied(name: str, *args: Any, **kwargs: Any) -> int:
        if os.fspath(name) == str(path):
            raise PermissionError(13, "Permission denied", name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    config = load()
    assert [str(p) for p in config.problems] == [f"{path}: cannot read the file: permission denied"]
    assert config.settings.shell is None


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (os.mkfifo, "is a FIFO (named pipe), not a regular file"),
        (Path.mkdir, "is a directory, not a regular file"),
        (lambda p: p.symlink_to("/dev/null"), "is a character device, not a regular file"),
        (
            lambda p: p.symlink_to(p),
            "cannot read the file: a symlink loop (too many levels of symbolic links)",
        ),
    ],
    ids=["fifo", "directory", "device", "loop"],
)
@pytest.mark.parametrize("layer", ["global", "project"])
def test_a_layer_file_that_is_not_regular_is_an_error_not_skipped(
    layers: dict[str, Path], make: Callable[[Path], object], problem: str, layer: str
) -> None:
    path = layers[layer] / "tasks.toml"
    make(path)
    if layer == "project" and os.path.realpath(path).startswith("/dev/"):
        problem = "is a symlink that leads outside the project root; start does not read it"
    config = load()
    assert [str(p) for p in config.problems] == [f"{path}: {problem}"]
    assert [(f.layer, f.path, f.parsed) for f in config.files] == [(layer, str(path), False)]


def test_a_dangling_layer_file_names_its_target(layers: dict[str, Path]) -> None:
    path = layers["global"] / "config.toml"
    path.symlink_to(layers["global"] / "dotfiles" / "start.toml")
    assert [str(p) for p in load().problems] == [
        f"{path}: is a dangling symlink to {layers['global'] / 'dotfiles' / 'start.toml'} "
        "(its target does not exist)"
    ]


def test_a_config_file_over_the_limit_is_an_error(
    layers: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from start.config import files

    monkeypatch.setattr(files, "CONFIG_LIMIT", 100)
    path = layers["global"] / "config.toml"
    path.write_text("# " + "x" * 200 + "\n")
    assert [str(p) for p in load().problems] == [
        f"{path}: is 203 bytes; a config file may be at most 100 bytes "
        "(see docs/configuration.md#file-limits)"
    ]


def test_a_global_config_dir_that_is_a_file_is_an_error(
    layers: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_dir = tmp_path / "start-config"
    not_a_dir.write_text("")
    monkeypatch.setenv("START_CONFIG_DIR", str(not_a_dir))
    assert [str(p) for p in load().problems] == [f"{not_a_dir}: is a file, not a directory"]


BROKEN_AGENT = """[agents.NAME]
bin = "true"
command = "{bin} '{prompt}"
"""


def test_only_config_validate_lexes_the_shipped_agents_command_templates(
    layers: dict[str, Path],
) -> None:
    """Lexing the shipped templates was a third of what a cold launch adds to a warm one. They are
    the package's own: tests/config/test_shipped.py and `config validate` (which loads without
    the cache) check them, and a launch lexes the template of the agent it runs."""
    write_tree(layers["built-in"], {"agents.toml": BROKEN_AGENT.replace("NAME", "shipped")})
    write_tree(layers["global"], {"agents.toml": BROKEN_AGENT.replace("NAME", "mine")})
    launch = load()
    checked = load(use_cache=False)
    assert [f"{p.key}: {p.message}" for p in launch.problems] == [
        "agents.mine.command: unterminated single quote"
    ]
    assert [f"{p.key}: {p.message}" for p in checked.problems] == [
        "agents.shipped.command: unterminated single quote",
        "agents.mine.command: unterminated single quote",
    ]
    # Launched, the shipped agent's template is lexed and refused before anything runs.
    (layers["global"] / "agents.toml").unlink()
    result = invoke("-a", "shipped", "--dry-run", "prompt", "x")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "start: unterminated single quote in agent command: {bin} '{prompt}\n"


BROKEN_LEVEL = """[agents.NAME]
bin = "true"
command = "{bin} {prompt}"
print_command = "{bin} -p {prompt}"
print_output = "text"
print_permissions = { read-only = "--allow 'read" }
"""


def test_only_config_validate_splits_the_shipped_agents_permission_options(
    layers: dict[str, Path],
) -> None:
    """As with command templates: the shipped options are split by tests/config/test_shipped.py
    and `config validate`, and a launch splits those of the level it runs with."""
    write_tree(layers["built-in"], {"agents.toml": BROKEN_LEVEL.replace("NAME", "shipped")})
    write_tree(layers["global"], {"agents.toml": BROKEN_LEVEL.replace("NAME", "mine")})
    launch = load()
    checked = load(use_cache=False)
    message = "the options cannot be split into words: No closing quotation"
    assert [f"{p.key}: {p.message}" for p in launch.problems] == [
        f"agents.mine.print_permissions.read-only: {message}"
    ]
    assert [f"{p.key}: {p.message}" for p in checked.problems] == [
        f"agents.shipped.print_permissions.read-only: {message}",
        f"agents.mine.print_permissions.read-only: {message}",
    ]
    # Run headless, the shipped agent's options are split and refused before anything runs.
    (layers["global"] / "agents.toml").unlink()
    result = invoke("prompt", "-a", "shipped", "--print", "x")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "start: agent 'shipped': its 'read-only' permission options cannot be split into words: "
        "No closing quotation; fix print_permissions in a copy of [agents.shipped] in "
        f"{layers['global'] / 'config.toml'}\n"
    )


# --- the bounds of MCP callers: a project narrows them, never widens them ---------------------

AGENTS_ABC = "".join(f'[agents.{n}]\nbin = "{n}"\ncommand = "{{bin}} {{prompt}}"\n' for n in "abc")


@pytest.mark.parametrize(
    ("mine", "theirs", "kept", "allows"),
    [
        ("", 'mcp_permissions = "full"', ("read-only", (), 1), "'read-only' (by default)"),
        ('mcp_permissions = "edit"', 'mcp_permissions = "full"', ("edit", (), 1), "'edit' (in"),
        ("", "mcp_depth = 3", ("read-only", (), 1), "1 level (by default)"),
        ("mcp_depth = 2", "mcp_depth = 5", ("read-only", (), 2), "2 levels (in"),
        ('mcp_agents = ["a", "b"]', 'mcp_agents = ["a", "c"]', ("read-only", ("a", "b"), 1),
         "only a, b (in"),
        ('mcp_agents = ["a"]', "mcp_agents = []", ("read-only", ("a",), 1), "only a (in"),
    ],
)  # fmt: skip
def test_a_project_cannot_widen_what_mcp_callers_may_do(
    layers: dict[str, Path], mine: str, theirs: str, kept: tuple[Any, ...], allows: str
) -> None:
    write_tree(layers["built-in"], {"agents.toml": AGENTS_ABC})
    write_tree(layers["global"], {"config.toml": f"[settings]\n{mine}\n"})
    write_tree(layers["project"], {"config.toml": f"[settings]\n{theirs}\n"})
    config = load()
    settings = config.settings
    assert (settings.mcp_permissions, settings.mcp_agents, settings.mcp_depth) == kept
    key = theirs.split(" ")[0]
    assert settings.origins.get(key) is None or settings.origins[key].layer == "global"
    (problem,) = [p for p in config.problems if "mcp" in p.key]
    where = f"{layers['global']}/config.toml" if mine else ""
    assert (problem.severity, problem.file, problem.key) == (
        "warning",
        str(layers["project"] / "config.toml"),
        f"settings.{key}",
    )
    assert problem.message == (
        "a project may narrow what start mcp's callers may do, never widen it: your own config "
        f"allows {allows}{' ' + where + ')' if mine else ''}, so this is ignored (set it in your "
        "global config)"
    )


@pytest.mark.parametrize(
    ("mine", "theirs", "kept"),
    [
        ('mcp_permissions = "full"', 'mcp_permissions = "edit"', ("edit", (), 1)),
        ("", 'mcp_agents = ["a"]', ("read-only", ("a",), 1)),
        ('mcp_agents = ["a", "b"]', 'mcp_agents = ["b"]', ("read-only", ("b",), 1)),
        ("mcp_depth = 3", "mcp_depth = 1", ("read-only", (), 1)),
    ],
)
def test_a_project_may_narrow_what_mcp_callers_may_do(
    layers: dict[str, Path], mine: str, theirs: str, kept: tuple[Any, ...]
) -> None:
    write_tree(layers["built-in"], {"agents.toml": AGENTS_ABC})
    write_tree(layers["global"], {"config.toml": f"[settings]\n{mine}\n"})
    write_tree(layers["project"], {"config.toml": f"[settings]\n{theirs}\n"})
    config = load()
    settings = config.settings
    assert (settings.mcp_permissions, settings.mcp_agents, settings.mcp_depth) == kept
    assert settings.origins[theirs.split(" ")[0]].layer == "project"
    assert [p for p in config.problems if "mcp" in p.key] == []


# --- board_remote_level: a project lowers it, never raises it ----------------------------------


@pytest.mark.parametrize(
    ("mine", "theirs", "kept", "allows"),
    [
        ("", "edit", "read-only", "'read-only' (by default)"),
        ("", "full", "read-only", "'read-only' (by default)"),
        ('board_remote_level = "edit"', "full", "edit", "'edit' (in GLOBAL)"),
    ],
)
def test_a_project_cannot_raise_the_level_another_machines_operations_may_set(
    layers: dict[str, Path], mine: str, theirs: str, kept: str, allows: str
) -> None:
    write_tree(layers["global"], {"config.toml": f"[settings]\n{mine}\n"})
    write_tree(layers["project"], {"config.toml": f'[settings]\nboard_remote_level = "{theirs}"\n'})
    config = load()
    assert config.settings.board_remote_level == kept
    origin = config.settings.origins.get("board_remote_level")
    assert origin is None or origin.layer == "global"
    (problem,) = [p for p in config.problems if p.key == "settings.board_remote_level"]
    assert (problem.severity, problem.file) == ("warning", str(layers["project"] / "config.toml"))
    assert problem.message == (
        "a project may lower the level another machine's board operations may set, never raise "
        f"it: your own config allows {allows.replace('GLOBAL', str(layers['global'] / 'config.toml'))}"
        ", so this is ignored (set it in your global config)"
    )


@pytest.mark.parametrize(
    ("mine", "theirs"), [("full", "edit"), ("full", "read-only"), ("edit", "edit")]
)
def test_a_project_may_lower_the_level_another_machines_operations_may_set(
    layers: dict[str, Path], mine: str, theirs: str
) -> None:
    write_tree(layers["global"], {"config.toml": f'[settings]\nboard_remote_level = "{mine}"\n'})
    write_tree(layers["project"], {"config.toml": f'[settings]\nboard_remote_level = "{theirs}"\n'})
    config = load()
    assert config.settings.board_remote_level == theirs
    assert config.settings.origins["board_remote_level"].layer == "project"
    assert [p for p in config.problems if p.key == "settings.board_remote_level"] == []


def test_board_remote_level_is_read_only_by_default_and_a_level_else_refused(
    layers: dict[str, Path],
) -> None:
    assert load().settings.board_remote_level == "read-only"
    write_tree(layers["global"], {"config.toml": '[settings]\nboard_remote_level = "root"\n'})
    problems = [p for p in load().problems if p.key == "settings.board_remote_level"]
    assert [(p.severity, p.message) for p in problems] == [
        ("error", "must be one of read-only, edit, full, not 'root'")
    ]
