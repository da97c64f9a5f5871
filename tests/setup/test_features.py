"""What `start doctor` says of the optional features: start mcp's extra (and the MCP clients'
files that run `start mcp`), the `task` program, and the project's Taskfile, listed by the real
go-task; and the warning of `start mcp --print-config` when the extra is missing."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

import pytest

from start.runs import taskfile
from start.setup import features
from start.setup.doctor import diagnose
from start.setup.report import Report
from tests.cli.test_taskfile import TASK, TASKFILE
from tests.conftest import invoke, write_tree
from tests.setup.test_init import install

needs_task = pytest.mark.skipif(TASK is None, reason="go-task is a test dependency (go-task-bin)")

# `start doctor` with the SDK missing: what it suggests.
INJECT = (
    f"pipx inject start-agent 'mcp>=2.3,<3' (pip: {sys.executable} -m pip install 'mcp>=2.3,<3')"
)


def rows(report: Report, subject: str) -> list[tuple[str, str, str, str | None]]:
    return [(c.section, c.status, c.message, c.fix) for c in report.checks if c.subject == subject]


def no_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata.version

    def version(name: str) -> str:
        if name == "mcp":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)


# --- the project's Taskfile -------------------------------------------------------------------


@needs_task
def test_an_approved_taskfile_is_listed_by_task(
    bin_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    assert rows(diagnose(str(isolated)), "taskfile") == [
        (
            "project",
            "ok",
            "Taskfile.yml: 5 tasks for start task taskfile:NAME and start mcp (fail, greet, slow, "
            "undocumented, words)",
            None,
        )
    ]


@needs_task
def test_a_taskfile_that_task_cannot_read_is_an_error(
    bin_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(isolated, {".agent/Taskfile.yml": "version: '3'\ntasks: [not, a, map]\n"})
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    [(section, status, message, fix)] = rows(diagnose(str(isolated)), "taskfile")
    assert (section, status, fix) == (
        "project",
        "error",
        "fix .agent/Taskfile.yml (`task --list` shows why)",
    )
    assert message.startswith(
        "cannot list the tasks of .agent/Taskfile.yml: `task --list-all` failed with exit code "
    )


def test_an_agents_taskfile_not_approved_is_a_warning(bin_dir: Path, isolated: Path) -> None:
    write_tree(isolated, {".agent/Taskfile.yml": TASKFILE})
    report = diagnose(str(isolated))
    assert rows(report, "taskfile") == [
        (
            "project",
            "warning",
            f".agent/Taskfile.yml is not used: nothing vouches for {isolated}: no approval covers "
            "the Taskfile, and the project is not under settings.trusted_paths or "
            "START_TRUSTED_PATHS; review and approve it with 'start trust', or add the project "
            "to trusted_paths",
            "review .agent/Taskfile.yml, then run 'start trust'",
        )
    ]
    assert not report.healthy


def test_a_taskfile_at_the_root_not_approved_is_information(bin_dir: Path, isolated: Path) -> None:
    # A go-task user's own Taskfile, which may have nothing to do with start.
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    [(_, status, _, fix)] = rows(diagnose(str(isolated)), "taskfile")
    assert (status, fix) == ("info", "review Taskfile.yml, then run 'start trust'")


def test_a_taskfile_ignored_with_no_project(bin_dir: Path, isolated: Path) -> None:
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    assert rows(diagnose(str(isolated), use_project=False), "taskfile") == [
        ("project", "info", "Taskfile.yml is ignored for this run", None)
    ]


def test_no_taskfile_no_line(bin_dir: Path, isolated: Path) -> None:
    assert rows(diagnose(str(isolated)), "taskfile") == []


# --- the `task` program -----------------------------------------------------------------------


def test_task_missing_where_a_taskfile_needs_it(
    bin_dir: Path, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))
    fix = "pipx inject start-agent go-task-bin (or install go-task: https://taskfile.dev)"
    assert taskfile.binary() is None
    assert rows(diagnose(str(isolated)), "task") == [
        ("environment", "info", "not installed (only a Taskfile needs it)", fix)
    ]
    write_tree(isolated, {".agent/Taskfile.yml": TASKFILE})
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    report = diagnose(str(isolated))
    assert rows(report, "task") == [
        ("environment", "warning", "not installed, and .agent/Taskfile.yml needs it", fix)
    ]
    assert rows(report, "taskfile") == []  # said once, under the environment


# --- start mcp's extra ------------------------------------------------------------------------


def test_the_sdk_installed(bin_dir: Path, isolated: Path) -> None:
    assert rows(diagnose(str(isolated)), "mcp extra") == [
        ("environment", "ok", f"mcp {metadata.version('mcp')} (start mcp)", None)
    ]


def test_no_sdk_and_no_client_runs_start_mcp(
    bin_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_sdk(monkeypatch)
    install(bin_dir, "alpha-cli")
    report = diagnose(str(isolated))
    assert rows(report, "mcp extra") == [
        ("environment", "info", "not installed (only start mcp needs it)", INJECT)
    ]
    assert report.healthy


def test_no_sdk_but_a_client_runs_start_mcp_is_an_error(
    bin_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_sdk(monkeypatch)
    install(bin_dir, "alpha-cli")
    entry = {"mcpServers": {"start": {"command": "start", "args": ["mcp"]}}}
    write_tree(isolated, {".mcp.json": json.dumps(entry)})
    assert rows(diagnose(str(isolated)), "mcp extra") == [
        ("environment", "error", f"not installed, but {isolated}/.mcp.json runs start mcp", INJECT)
    ]
    result = invoke("doctor", "-q")
    assert (result.exit_code, result.stdout) == (
        1,
        f"  ✗ mcp extra  not installed, but {isolated}/.mcp.json runs start mcp\n"
        f"      → {INJECT}\n",
    )


def test_an_unsupported_sdk_is_a_warning(
    bin_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "1.26.0" if name == "mcp" else real(name))
    assert rows(diagnose(str(isolated)), "mcp extra") == [
        (
            "environment",
            "warning",
            "mcp 1.26.0 is not supported (mcp>=2.3,<3) (only start mcp needs it)",
            INJECT,
        )
    ]


@pytest.mark.parametrize(
    ("place", "text"),
    [
        (".mcp.json", '{"mcpServers": {"start": {"command": "start", "args": ["mcp"]}}}'),
        (
            "home/.claude.json",
            '{"projects": {"/repo": {"mcpServers": {"s": {"type": "stdio", "command": "start", '
            '"args": ["mcp", "-d", "/repo"]}}}}}',
        ),
        (".vscode/mcp.json", '{"servers": {"start": {"command": "start", "args": ["mcp"]}}}'),
        (
            "home/.config/Claude/claude_desktop_config.json",
            '{"mcpServers": {"start": {"command": "/home/me/.local/bin/start", "args": ["mcp"]}}}',
        ),
        ("opencode.json", '{"mcp": {"start": {"type": "local", "command": ["start", "mcp"]}}}'),
        ("home/.codex/config.toml", '[mcp_servers.start]\ncommand = "start"\nargs = ["mcp"]\n'),
        (
            "home/.gemini/settings.json",
            '{"mcpServers": {"start": {"command": "start", "args": ["mcp"]}}}',
        ),
    ],
)
def test_each_clients_file_that_runs_start_mcp(
    isolated: Path, tmp_path: Path, place: str, text: str
) -> None:
    base = tmp_path if place.startswith("home/") else isolated
    write_tree(base, {place: text})
    assert features.registrations(str(isolated), str(tmp_path / "home")) == [str(base / place)]


@pytest.mark.parametrize(
    "text",
    [
        '{"mcpServers": {"other": {"command": "start-server", "args": ["mcp"]}}}',
        '{"mcpServers": {"start": {"command": "start", "args": ["board"]}}}',
        '{"mcpServers": {"start": {"command": "start"}}}',
        '// a comment\n{"mcpServers": {"start": {"command": "start", "args": ["mcp"]}}}',
        '["mcp"]',
        "not json at all, but mcp",
    ],
)
def test_files_that_do_not_run_start_mcp(isolated: Path, tmp_path: Path, text: str) -> None:
    write_tree(isolated, {".mcp.json": text})
    assert features.registrations(str(isolated), str(tmp_path / "home")) == []


# --- start mcp --print-config -----------------------------------------------------------------


def test_print_config_warns_when_the_extra_is_missing(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_sdk(monkeypatch)
    monkeypatch.setattr(features, "installed_from", lambda: None)
    monkeypatch.setattr(sys, "executable", "/venv/bin/python")
    result = invoke("mcp", "--print-config", "claude", "--no-color")
    assert (result.exit_code, result.stdout) == (0, "claude mcp add start -- start mcp\n")
    assert result.stderr.endswith(
        "start: warning: the registered server will fail when the client starts it: start mcp "
        "needs the MCP Python SDK (mcp>=2.3,<3), the optional extra start-agent[mcp]. It is not "
        "installed by default: it adds about 45 MB and 1.5 s of imports (docs/mcp.md).\n"
        "Add it to the Python environment that runs start (/venv/bin/python):\n"
        "  pipx inject start-agent 'mcp>=2.3,<3'          # installed with pipx\n"
        "  /venv/bin/python -m pip install 'mcp>=2.3,<3'  # installed with pip\n"
    )


def test_print_config_with_the_extra_says_nothing_more(isolated: Path) -> None:
    result = invoke("mcp", "--print-config", "claude", "-q")
    assert (result.exit_code, result.stderr) == (0, "")
