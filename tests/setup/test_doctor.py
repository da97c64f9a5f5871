"""The health check's records: each section, the selected agent, and that nothing runs."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from start.base import paths
from start.setup import doctor
from start.setup.doctor import Check, Report, diagnose, find_binary
from tests.conftest import write_tree
from tests.setup.test_init import install, use_catalog, use_path


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test catalog (agents alpha and beta) and a PATH with only sh and bash on it."""
    use_catalog(tmp_path, monkeypatch)
    return use_path(tmp_path, monkeypatch)


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


# --- config ---------------------------------------------------------------------------------


def test_each_file_is_parsed_or_shows_its_syntax_error(bin_dir: Path, isolated: Path) -> None:
    install(bin_dir, "alpha-cli")
    builtin = Path(paths.builtin_config_dir())
    broken = global_config("[settings\n")
    write_tree(isolated, {".start/tasks.toml": '[tasks.local]\nprompt = "p"\n'})
    report = diagnose(
        str(isolated), which=lambda name: None if name != "alpha-cli" else "/b/alpha-cli"
    )
    assert rows(report, "config") == [
        *[
            ("ok", "built-in", f"{builtin / name} parsed", None)
            for name in ("agents.toml", "roles.toml", "contexts.toml", "tasks.toml")
        ],
        (
            "error",
            "global",
            f"{broken}:1:1: unclosed table header '[settings': add ']'",
            "correct the TOML at line 1, column 1 of config.toml",
        ),
        ("ok", "project", f"{isolated}/.start/tasks.toml parsed", None),
    ]


def test_every_validator_problem_is_listed_with_a_fix(bin_dir: Path, isolated: Path) -> None:
    install(bin_dir, "alpha-cli")
    path = global_config('[tasks.t]\ncomand = "x"\nprompt = "p"\n\n[oops]\n')
    write_tree(path.parent, {"task.toml": ""})
    report = diagnose(str(isolated))
    problems = [c for c in report.checks if c.heading is not None]
    assert [(c.heading, c.status, c.subject, c.message, c.fix) for c in problems] == [
        (
            str(path),
            "warning",
            "2:1",
            "tasks.t.comand: unknown key 'comand' (did you mean 'command'?)",
            "use 'command' instead, in config.toml",
        ),
        (
            str(path),
            "warning",
            "5:1",
            "oops: unknown section [oops]",
            "edit oops in config.toml, then run 'start doctor' again",
        ),
        (
            str(path.parent / "task.toml"),
            "warning",
            "-",
            "file is not read; a layer reads config.toml, agents.toml, roles.toml, contexts.toml, "
            "tasks.toml (did you mean 'tasks.toml'?)",
            "rename task.toml to 'tasks.toml', or remove it",
        ),
    ]
    assert {c.path for c in problems} == {str(path), str(path.parent / "task.toml")}
    assert (report.errors, report.warnings) == (0, 3)


def test_a_files_problems_are_listed_up_to_a_count_then_counted(
    bin_dir: Path, isolated: Path
) -> None:
    """A file with thousands of problems (a hostile SKILL.md's unknown keys) does not make the
    report thousands of lines: the first SHOWN_PER_FILE, then how many more."""
    install(bin_dir, "alpha-cli")
    extra = doctor.SHOWN_PER_FILE + 5
    body = "".join(f'[tasks.t{i}]\nprompt = "p"\ncomand = "x"\n' for i in range(extra))
    path = global_config(body)
    report = diagnose(str(isolated))
    listed = [c for c in report.checks if c.heading == str(path)]
    assert len(listed) == doctor.SHOWN_PER_FILE + 1
    assert (listed[-1].status, listed[-1].subject, listed[-1].message, listed[-1].fix) == (
        "warning",
        "-",
        "5 more problems of this file not shown",
        "run 'start config validate' to see every one",
    )


def test_a_clean_config_says_so(bin_dir: Path, isolated: Path) -> None:
    install(bin_dir, "alpha-cli")
    report = diagnose(str(isolated))
    assert ("ok", "validate", "no problems in 4 files", None) in rows(report, "config")
    assert (
        "info",
        "global",
        f"no config files in {Path(paths.global_config_dir())}",
        "run 'start init' to write a starter config",
    ) in rows(report, "config")
    assert (
        "info",
        "project",
        f"no .start/ directory in {isolated}",
        "run 'start init --project' to add project config",
    ) in rows(report, "config")


def test_an_unreadable_file_is_an_error_not_a_crash(
    bin_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = global_config("[settings]\n")

    def denied(target: Path, *rest: object) -> object:
        raise PermissionError(13, "Permission denied", str(target))

    monkeypatch.setattr("start.config.files.read", denied)
    report = diagnose(str(isolated))
    assert problems(report) == [
        (
            "error",
            "read",
            f"cannot read {Path(paths.builtin_config_dir()) / 'agents.toml'}: Permission denied",
            "fix the file's permissions, or move it out of the config directory",
        )
    ]
    assert path.exists()


@pytest.mark.parametrize("size", ["large", "large-and-unreadable", "fifo"])
def test_the_fix_for_an_unread_config_file_names_what_is_wrong(
    bin_dir: Path, isolated: Path, size: str
) -> None:
    """A 50 MB config file is regular and readable: only its size is wrong, so the fix says so."""
    from start.config.files import CONFIG_LIMIT

    path = Path(paths.global_config_dir()) / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if size == "fifo":
        os.mkfifo(path)
    else:
        with open(path, "wb") as handle:
            handle.truncate(50 * 1_048_576)
    if size == "large-and-unreadable":
        path.chmod(0)
        if os.access(path, os.R_OK):  # root reads anything
            pytest.skip("running as root")
    [check] = [c for c in diagnose(str(isolated)).checks if c.subject == "global"]
    if size == "large":
        assert check.fix == f"shorten {path} to at most {CONFIG_LIMIT:,} bytes, or remove it"
    else:
        assert check.fix == f"make {path} a regular file you can read, or remove it"


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
            f"{bin_dir / 'sh'} (used by task git-diff-review, task commit-message)",
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
    assert {c.section for c in report.checks} == set(doctor.SECTIONS)


# --- the report ---------------------------------------------------------------------------


def test_info_lines_do_not_make_a_report_unhealthy() -> None:
    info = Check("agents", "info", "beta", "not installed")
    warning = Check("items", "warning", "task t", "x", "fix it", "/p")
    assert Report((info,)).healthy
    report = Report((info, warning))
    assert (report.healthy, report.errors, report.warnings) == (False, 0, 1)
    assert report.as_dict() == {
        "healthy": False,
        "config_invalid": False,
        "errors": 0,
        "warnings": 1,
        "checks": [
            {
                "section": "agents",
                "status": "info",
                "subject": "beta",
                "message": "not installed",
                "fix": None,
                "path": None,
                "selected": False,
            },
            {
                "section": "items",
                "status": "warning",
                "subject": "task t",
                "message": "x",
                "fix": "fix it",
                "path": "/p",
                "selected": False,
            },
        ],
    }


def test_environment(bin_dir: Path, isolated: Path) -> None:
    import platform
    import sys

    from start import __version__

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
    ]
