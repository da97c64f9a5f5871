"""The health check: its sections, the selected agent, and that nothing runs (the config section
is in test_configcheck.py, the report's records in test_report.py)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from start.base import paths
from start.setup.doctor import diagnose, find_binary
from start.setup.report import SECTIONS, Report
from tests.conftest import write_tree
from tests.setup.test_init import install


def global_config(text: str) -> Path:
    path = Path(paths.global_config_dir()) / "config.toml"
    write_tree(path.parent, {"config.toml": text})
    return path


def rows(report: Report, section: str) -> list[tuple[str, str, str, str | None]]:
    return [(c.status, c.subject, c.message, c.fix) for c in report.checks if c.section == section]


def problems(report: Report) -> list[tuple[str, str, str, str | None]]:
    return [(c.status, c.subject, c.message, c.fix) for c in report.checks if c.is_problem]


# --- agents ---------------------------------------------------------------------------------


def test_one_installed_agent_is_selected_and_the_rest_are_info(
    bin_dir: Path, isolated: Path
) -> None:
    install(bin_dir, "alpha-cli")
    report = diagnose(str(isolated))
    assert rows(report, "agents") == [
        ("ok", "alpha", f"{bin_dir}/alpha-cli; selected now (first agent on PATH)", None),
        ("info", "beta", "not installed ('beta-cli' is not on PATH)", None),
    ]
    assert [c.subject for c in report.checks if c.selected] == ["alpha"]
    assert report.healthy, problems(report)


def test_the_selected_agent_missing_is_an_error(bin_dir: Path, isolated: Path) -> None:
    install(bin_dir, "alpha-cli")
    path = global_config('[settings]\ndefault_agent = "beta"\n')
    report = diagnose(str(isolated))
    assert rows(report, "agents") == [
        ("ok", "alpha", f"{bin_dir}/alpha-cli", None),
        (
            "error",
            "beta",
            "'beta-cli' is not on PATH; selected now (settings.default_agent)",
            f"install it, or set default_agent under [settings] in {path}, or pass --agent NAME",
        ),
    ]
    assert (report.errors, report.warnings, report.healthy) == (1, 0, False)


def test_no_agent_on_path_is_an_error(bin_dir: Path, isolated: Path) -> None:
    report = diagnose(str(isolated))
    assert rows(report, "agents")[0] == (
        "error",
        "selection",
        "no agent found on PATH; looked for: alpha (alpha-cli), beta (beta-cli).",
        "install an agent, or set default_agent under [settings] in "
        f"{Path(paths.global_config_dir()) / 'config.toml'}, or pass --agent NAME",
    )
    assert report.errors == 1


def test_an_unknown_default_agent_is_reported_once(bin_dir: Path, isolated: Path) -> None:
    install(bin_dir, "alpha-cli")
    path = global_config('[settings]\ndefault_agent = "alpah"\n')
    report = diagnose(str(isolated))
    assert problems(report) == [
        (
            "error",
            "selection",
            "unknown agent 'alpah'; did you mean 'alpha'?",
            f"set default_agent under [settings] in {path}, or pass --agent NAME",
        )
    ]


def test_an_agent_you_configured_that_is_missing_is_a_warning(
    bin_dir: Path, isolated: Path
) -> None:
    install(bin_dir, "alpha-cli")
    path = global_config('[agents.mine]\nbin = "~/bin/mine"\ncommand = "{bin} {prompt}"\n')
    report = diagnose(str(isolated))
    assert problems(report) == [
        (
            "warning",
            "mine",
            "'~/bin/mine' is not an executable file",
            f"install it or fix agents.mine.bin in {path}",
        )
    ]
    (Path.home() / "bin").mkdir()
    install(Path.home() / "bin", "mine")
    assert diagnose(str(isolated)).healthy


def test_find_binary(isolated: Path, bin_dir: Path) -> None:
    install(bin_dir, "tool")
    write_tree(isolated, {"scripts/run": "", "scripts/plain": ""})
    (isolated / "scripts" / "run").chmod(0o755)
    assert find_binary("tool", str(isolated)) == str(bin_dir / "tool")
    assert find_binary("scripts/run", str(isolated)) == str(isolated / "scripts" / "run")
    assert find_binary("scripts/plain", str(isolated)) is None
    assert find_binary("scripts", str(isolated)) is None
    assert find_binary("nothing", str(isolated)) is None
    assert (
        find_binary("anything", str(isolated), which=lambda name: f"/fake/{name}")
        == "/fake/anything"
    )


# --- roles, contexts and tasks --------------------------------------------------------------


def test_missing_files(bin_dir: Path, isolated: Path) -> None:
    install(bin_dir, "alpha-cli")
    path = global_config(
        '[roles.first]\nfile = "ROLE.md"\n'
        '[roles.second]\nfile = "~/nowhere.md"\n'
        '[contexts.needed]\nrequired = true\nfile = "NEEDED.md"\n'
        '[contexts.nice]\nfile = "/nonexistent/NICE.md"\n'
        '[contexts.here]\nfile = "HERE.md"\n'
        '[contexts.folder]\nrequired = true\nfile = "docs"\n'
        '[tasks.t]\nfile = "T.md"\n'
        '[settings]\ndefault_role = "second"\n'
    )
    write_tree(isolated, {"HERE.md": "here", "docs/x": ""})
    report = diagnose(str(isolated))
    home = Path.home()
    assert [r for r in rows(report, "items") if r[0] != "ok"] == [
        (
            "warning",
            "role first",
            f"file not found: {isolated / 'ROLE.md'}",
            f"create {isolated / 'ROLE.md'}, or fix roles.first.file in {path}",
        ),
        (
            "error",
            "role second",
            f"file not found: {home / 'nowhere.md'}",
            f"create {home / 'nowhere.md'}, or fix roles.second.file in {path}",
        ),
        (
            "warning",
            "context needed",
            f"file not found: {isolated / 'NEEDED.md'}",
            f"create {isolated / 'NEEDED.md'}, or fix contexts.needed.file in {path}",
        ),
        (
            "info",
            "context nice",
            "file not found: /nonexistent/NICE.md",
            f"create /nonexistent/NICE.md, or fix contexts.nice.file in {path}",
        ),
        (
            "warning",
            "context folder",
            f"file not a file: {isolated / 'docs'}",
            f"create {isolated / 'docs'}, or fix contexts.folder.file in {path}",
        ),
        (
            "warning",
            "task t",
            f"file not found: {isolated / 'T.md'}",
            f"create {isolated / 'T.md'}, or fix tasks.t.file in {path}",
        ),
    ]
    assert ("ok", "default role", "second (settings.default_role)", None) in rows(report, "items")


def test_task_references_that_do_not_resolve_are_reported_once(
    bin_dir: Path, isolated: Path
) -> None:
    install(bin_dir, "alpha-cli")
    path = global_config(
        '[tasks.t]\nprompt = "p"\nrole = "code-reviewr"\nagent = "gamma"\n'
        '[tasks.u]\nprompt = "p"\nagent = "beta"\n'
    )
    report = diagnose(str(isolated))
    assert problems(report) == [
        (
            "error",
            "task t",
            "role 'code-reviewr' is not defined",
            f"use 'code-reviewer' in {path}",
        ),
        (
            "error",
            "task t",
            "agent 'gamma' is not defined",
            f"define [agents.gamma] or change tasks.t.agent in {path}",
        ),
        (
            "warning",
            "task u",
            "its agent 'beta' is not installed ('beta-cli' is not on PATH)",
            f"install it, or change tasks.u.agent in {path}",
        ),
    ]


def test_shells_not_on_path(bin_dir: Path, isolated: Path) -> None:
    install(bin_dir, "alpha-cli")
    global_config(
        '[settings]\nshell = "fish"\n'
        '[contexts.c]\ncommand = "x"\n'
        '[tasks.t]\ncommand = "y"\nshell = "python3"\n'
    )
    report = diagnose(str(isolated))
    shells = [r for r in rows(report, "items") if r[1].startswith(("shell", "default shell"))]
    assert shells == [
        (
            "warning",
            "shell fish",
            "fish is not on PATH; used by settings.shell, context project-guide, context c",
            "install fish, or set another shell for settings.shell, context project-guide, "
            "context c",
        ),
        (
            "ok",
            "shell sh",
            f"{bin_dir / 'sh'} (used by task git-diff-review, task commit-message, task gate)",
            None,
        ),
        (
            "warning",
            "shell python3",
            "python3 is not on PATH; used by task t",
            "install python3, or set another shell for task t",
        ),
    ]


def test_the_default_shell_is_bash_else_sh(bin_dir: Path, isolated: Path) -> None:
    install(bin_dir, "alpha-cli")
    report = diagnose(str(isolated))
    assert (
        "ok",
        "default shell",
        f"{bin_dir / 'bash'} (used by context project-guide)",
        None,
    ) in rows(report, "items")
    (bin_dir / "bash").unlink()
    (bin_dir / "sh").unlink()
    assert (
        "default shell",
        "bash or sh is not on PATH; used by context project-guide",
    ) in [(c.subject, c.message) for c in diagnose(str(isolated)).checks]


# --- project --------------------------------------------------------------------------------


def test_project_without_start_dir(bin_dir: Path, isolated: Path) -> None:
    write_tree(isolated, {".git/HEAD": "", "sub/x": ""})
    report = diagnose(str(isolated / "sub"))
    assert rows(report, "project") == [
        ("ok", "root", f"{isolated} (git work tree)", None),
        ("info", "trust", "no .start/ directory, so nothing to trust", None),
    ]


def test_an_untrusted_project_is_a_warning_then_trusted_after_approval(
    bin_dir: Path, isolated: Path
) -> None:
    from start import trust
    from start.config.load import load

    install(bin_dir, "alpha-cli")
    write_tree(isolated, {".start/config.toml": '[tasks.local]\nprompt = "p"\n'})
    report = diagnose(str(isolated))
    assert rows(report, "project") == [
        ("ok", "root", f"{isolated} (holds .start/)", None),
        (
            "warning",
            "trust",
            "not trusted: never approved",
            f"review {isolated / '.start'}, then run 'start trust'",
        ),
    ]
    assert not report.healthy
    found = trust.scan(load(str(isolated)))
    assert found is not None
    record = trust.approve(found)
    report = diagnose(str(isolated))
    assert rows(report, "project")[1] == ("ok", "trust", f"approved {record.approved[:10]}", None)
    assert report.healthy, problems(report)


def test_no_project_ignores_the_start_dir(bin_dir: Path, isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": "[settings\n"})
    report = diagnose(str(isolated), use_project=False)
    assert rows(report, "project")[1] == (
        "info",
        "trust",
        f"{isolated / '.start'} is ignored for this run",
        None,
    )
    assert ("info", "project", "ignored (--no-project or START_NO_PROJECT=1)", None) in rows(
        report, "config"
    )


# --- nothing runs, nothing is fetched -------------------------------------------------------


def test_no_command_of_any_layer_runs_and_nothing_is_fetched(
    bin_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(bin_dir, "alpha-cli")
    marker = isolated / "ran"
    global_config(
        f'[contexts.g]\nrequired = true\ncommand = "touch {marker}-global"\n'
        f'[roles.r]\ncommand = "touch {marker}-role"\n'
    )
    write_tree(isolated, {".start/tasks.toml": f'[tasks.p]\ncommand = "touch {marker}-project"\n'})

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("doctor must not run commands or open sockets")

    monkeypatch.setattr(subprocess.Popen, "__init__", forbidden)
    monkeypatch.setattr(socket.socket, "__init__", forbidden)
    monkeypatch.setattr(os, "system", forbidden)
    report = diagnose(str(isolated))
    assert list(isolated.glob("ran*")) == []
    assert {c.section for c in report.checks} == set(SECTIONS)


# --- environment --------------------------------------------------------------------------


def test_environment(bin_dir: Path, isolated: Path) -> None:
    import platform
    import sys
    from importlib import metadata

    from start import __version__
    from start.runs import taskfile

    report = diagnose(str(isolated))
    runtime = Path(paths.runtime_dir())
    state = Path(paths.state_dir())
    assert rows(report, "environment") == [
        ("ok", "start", __version__, None),
        ("ok", "python", f"{platform.python_version()} ({sys.executable})", None),
        ("ok", "platform", platform.platform(), None),
        ("ok", "built-in config", str(Path(paths.builtin_config_dir())), None),
        (
            "info",
            "config dir",
            f"{Path(paths.global_config_dir())} (not created yet; start creates it when needed)",
            "run 'start init' to write a starter config",
        ),
        ("info", "state dir", f"{state} (not created yet; start creates it when needed)", None),
        ("info", "runtime dir", f"{runtime} (not created yet; start creates it when needed)", None),
        # The test extras install the SDK, and `task` beside Python (tests/setup/test_features.py).
        ("ok", "mcp extra", f"mcp {metadata.version('mcp')} (start mcp)", None),
        ("ok", "task", f"{taskfile.binary()} (for a project's Taskfile)", None),
    ]
