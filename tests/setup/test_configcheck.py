"""The health check's config section (start.setup.configcheck): each file read or not, and the
validator's problems with their fixes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from start.base import paths
from start.setup import configcheck
from start.setup.doctor import diagnose
from tests.conftest import write_tree
from tests.setup.test_doctor import global_config, problems, rows
from tests.setup.test_init import install


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
            "tasks.toml, workflows.toml (did you mean 'tasks.toml'?)",
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
    extra = configcheck.SHOWN_PER_FILE + 5
    body = "".join(f'[tasks.t{i}]\nprompt = "p"\ncomand = "x"\n' for i in range(extra))
    path = global_config(body)
    report = diagnose(str(isolated))
    listed = [c for c in report.checks if c.heading == str(path)]
    assert len(listed) == configcheck.SHOWN_PER_FILE + 1
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
