"""`start mcp --print-config AGENT`, and `start mcp` without the optional SDK."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import REPO, invoke, run_start

PRINTED = {
    "claude": (
        "claude mcp add start -- start mcp",
        "Claude Code: run it in the project (local scope). Put -s user after 'add' for every "
        "project, or -s project to share it in .mcp.json. Prompts become /mcp__start__NAME.",
    ),
    "gemini": (
        "gemini mcp add start start -- mcp",
        "Gemini CLI: writes .gemini/settings.json in this folder (-s user: "
        "~/.gemini/settings.json); servers run only in trusted folders. Prompts become /NAME.",
    ),
    "codex": (
        "codex mcp add start -- start mcp",
        "Codex: writes [mcp_servers.start] to ~/.codex/config.toml. If the first start is slow, "
        "add startup_timeout_sec = 30 there (the default is 10).",
    ),
    "opencode": (
        "opencode mcp add start -- start mcp",
        "opencode: writes ~/.config/opencode/opencode.jsonc; for one project, put the same entry "
        'under "mcp" in its opencode.json.',
    ),
    "qwen": (
        "qwen mcp add start start -- mcp",
        "Qwen Code: writes ~/.qwen/settings.json (-s project: .qwen/settings.json).",
    ),
    "copilot": (
        "copilot mcp add start -- start mcp",
        "GitHub Copilot CLI: writes ~/.copilot/mcp-config.json.",
    ),
}


@pytest.mark.parametrize("client", PRINTED)
def test_print_config_prints_the_registration_command(client: str) -> None:
    result = invoke("mcp", "--print-config", client)
    command, hint = PRINTED[client]
    assert (result.exit_code, result.stdout, result.stderr) == (0, command + "\n", hint + "\n")


def test_print_config_for_vscode_is_its_mcp_json() -> None:
    result = invoke("mcp", "--print-config", "vscode")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "servers": {
            "start": {
                "type": "stdio",
                "command": "start",
                "args": ["mcp", "-d", "${workspaceFolder}"],
            }
        }
    }
    assert result.stderr == (
        'VS Code: put this in .vscode/mcp.json (or merge the entry into its "servers").\n'
    )


def test_print_config_carries_the_directory_and_no_project(isolated: Path) -> None:
    (isolated / "my dir").mkdir()
    args = ("-d", "my dir", "--no-project", "--print-config")
    claude = invoke("mcp", *args, "claude")
    gemini = invoke("mcp", *args, "gemini", "-q")
    vscode = invoke("mcp", *args, "vscode")
    target = isolated / "my dir"
    assert claude.stdout == f"claude mcp add start -- start mcp -d '{target}' --no-project\n"
    assert (gemini.stdout, gemini.stderr) == (
        f"gemini mcp add start start -- mcp -d '{target}' --no-project\n",
        "",
    )
    entry = json.loads(vscode.stdout)["servers"]["start"]
    assert entry["args"] == ["mcp", "-d", str(target), "--no-project"]


def test_an_unknown_agent_is_a_usage_error() -> None:
    result = invoke("mcp", "--print-config", "cursorr")
    assert result.exit_code == 2
    assert result.stderr == (
        "start: invalid value for --print-config: 'cursorr' is not one of 'claude', 'gemini', "
        "'codex', 'opencode', 'qwen', 'copilot', 'vscode', 'claude-desktop', 'cursor', "
        "'windsurf', 'zed', 'json'\n"
        "hint: run 'start mcp --help' for usage\n"
    )


HINTS = {
    "claude-desktop": (
        'Claude Desktop: merge the entry into "mcpServers" in claude_desktop_config.json '
        "(Settings > Developer > Edit Config: ~/Library/Application Support/Claude/ on macOS, "
        "%APPDATA%\\Claude\\ on Windows), then restart it. It starts servers in no project, so "
        "-d names this one; and not with your shell's PATH, so the command is start's full path."
    ),
    "cursor": (
        "Cursor: put this in .cursor/mcp.json in the project, or in ~/.cursor/mcp.json for every "
        'project (or merge the entry into its "mcpServers").'
    ),
    "windsurf": (
        'Windsurf: merge the entry into "mcpServers" in ~/.codeium/windsurf/mcp_config.json '
        "(Cascade > MCP servers > View raw config); the file serves every project, so -d names "
        "this one."
    ),
    "zed": (
        'Zed: merge the entry into "context_servers" in ~/.config/zed/settings.json (zed: open '
        "settings); Zed serves every project from it, so -d names this one."
    ),
    "json": (
        'The "mcpServers" entry that most MCP clients read: merge it into the client\'s file. -d '
        "names this project; where the client starts servers without your shell's PATH, put "
        "start's full path in command."
    ),
}


@pytest.fixture
def start_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `start` program on PATH, as pipx puts it in ~/.local/bin."""
    program = tmp_path / "bin" / "start"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(program.parent))
    return program


@pytest.mark.parametrize(
    ("client", "key", "directory"),
    [
        ("claude-desktop", "mcpServers", "here"),
        ("cursor", "mcpServers", "${workspaceFolder}"),
        ("windsurf", "mcpServers", "here"),
        ("zed", "context_servers", "here"),
        ("json", "mcpServers", "here"),
    ],
)
def test_print_config_for_the_apps_that_read_a_file_of_servers(
    isolated: Path, start_on_path: Path, client: str, key: str, directory: str
) -> None:
    result = invoke("mcp", "--print-config", client)
    command = str(start_on_path) if client == "claude-desktop" else "start"
    args = ["mcp", "-d", str(isolated) if directory == "here" else directory]
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {key: {"start": {"command": command, "args": args}}}
    assert result.stderr == HINTS[client] + "\n"
    (isolated / "app").mkdir()
    given = invoke("mcp", "-d", "app", "--no-project", "--print-config", client, "-q")
    assert json.loads(given.stdout)[key]["start"]["args"] == [
        "mcp",
        "-d",
        str(isolated / "app"),
        "--no-project",
    ]
    assert given.stderr == ""


def test_claude_desktop_finds_start_beside_its_python_off_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    beside = Path(sys.executable).parent / "start"
    result = invoke("mcp", "--print-config", "claude-desktop")
    entry = json.loads(result.stdout)["mcpServers"]["start"]
    assert entry["command"] == (str(beside) if beside.exists() else "start")


def _fake_version(found: str | None) -> object:
    real = metadata.version

    def version(name: str) -> str:
        if name != "mcp":
            return real(name)
        if found is None:
            raise metadata.PackageNotFoundError(name)
        return found

    return version


@pytest.mark.parametrize("found", [None, "1.26.0", "3.0.0"])
def test_without_the_sdk_start_mcp_says_how_to_add_it(
    found: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from start.setup import features

    monkeypatch.setattr(metadata, "version", _fake_version(found))
    monkeypatch.setattr(features, "installed_from", lambda: "/src/start")
    monkeypatch.setattr(sys, "executable", "/venv/bin/python")
    result = invoke("mcp")
    unsupported = f"Found mcp {found}, which is not supported. " if found else ""
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "start: start mcp needs the MCP Python SDK (mcp>=2.3,<3), the optional extra "
        "start-agent[mcp]. It is not installed by default: it adds about 45 MB and 1.5 s of "
        "imports (docs/mcp.md).\n"
        f"{unsupported}Add it to the Python environment that runs start (/venv/bin/python):\n"
        "  pipx inject start-agent 'mcp>=2.3,<3'          # installed with pipx\n"
        "  pipx install --force '/src/start[mcp]'         # or reinstall with pipx\n"
        "  /venv/bin/python -m pip install 'mcp>=2.3,<3'  # installed with pip\n"
    )


def test_without_a_recorded_source_no_reinstall_is_offered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """'start-agent[mcp]' from PyPI would be an unrelated project, never this one."""
    from start.setup import features

    monkeypatch.setattr(metadata, "version", _fake_version(None))
    monkeypatch.setattr(features, "installed_from", lambda: None)
    monkeypatch.setattr(sys, "executable", "/venv/bin/python")
    result = invoke("mcp")
    assert result.stderr.endswith(
        "(/venv/bin/python):\n"
        "  pipx inject start-agent 'mcp>=2.3,<3'          # installed with pipx\n"
        "  /venv/bin/python -m pip install 'mcp>=2.3,<3'  # installed with pip\n"
    )


def test_the_source_is_the_directory_pip_recorded() -> None:
    from start.setup import features

    assert features.installed_from() == str(REPO)  # `make test` installs this checkout, editable


def test_print_config_needs_no_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "version", _fake_version(None))
    assert invoke("mcp", "--print-config", "claude").exit_code == 0


def test_print_config_of_a_directory_named_with_controls_pastes_back_and_shows_none(
    isolated: Path,
) -> None:
    """A checkout named with ESC and a newline: the shell forms quote it `$'...'` (the terminal
    is untouched, and the line pastes back to the same words); the JSON forms escape it."""
    import os
    import subprocess

    name = "x\x1b]0;owned\x07\x1b]52;c;eA==\x07\nrm -rf ~"
    (isolated / name).mkdir()
    target = str(isolated / name)
    for client in ("claude", "gemini"):
        result = run_start("-d", name, "mcp", "--print-config", client, "-q")
        assert (result.returncode, result.stderr) == (0, "")
        line = result.stdout.removesuffix("\n")
        assert line.isprintable(), line
        env = {**os.environ, "LC_ALL": "C.UTF-8"}
        read = subprocess.run(
            ["bash", "-c", 'printf "%s\\0" ' + line], env=env, capture_output=True, check=True
        )
        server = ["start", "--", "mcp"] if client == "gemini" else ["--", "start", "mcp"]
        assert read.stdout.decode().split("\0")[:-1] == [
            client, "mcp", "add", "start", *server, "-d", target,
        ]  # fmt: skip
    desktop = run_start("-d", name, "mcp", "--print-config", "claude-desktop", "-q")
    assert desktop.returncode == 0
    assert "\x1b" not in desktop.stdout and "\x07" not in desktop.stdout
    assert json.loads(desktop.stdout)["mcpServers"]["start"]["args"] == ["mcp", "-d", target]
