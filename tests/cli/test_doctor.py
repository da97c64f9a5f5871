"""`start doctor` through the command line: the report, -q, --json, colour and exit codes."""

from __future__ import annotations

import io
import json
import platform
import sys
from pathlib import Path

import pytest

from start import __version__
from start.base import paths
from start.cli import doctor as doctor_cli
from start.cli.state import Options
from start.runs import taskfile
from start.setup.doctor import diagnose
from tests.conftest import invoke, write_tree
from tests.setup.test_init import use_catalog, use_path


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_catalog(tmp_path, monkeypatch)
    return use_path(tmp_path, monkeypatch, "alpha-cli")


def extras() -> list[str]:
    """The lines of the extras in this test environment: the SDK, and `task` beside Python (the
    test extras install both)."""
    from importlib import metadata

    task = taskfile.binary()
    assert task is not None
    return [
        f"  ✓ mcp extra        mcp {metadata.version('mcp')} (start mcp)",
        f"  ✓ task             {task} (for a project's Taskfile)",
    ]


def test_a_healthy_setup(bin_dir: Path, isolated: Path, tmp_path: Path) -> None:
    result = invoke("doctor")
    assert (result.exit_code, result.stderr) == (0, "")
    builtin = tmp_path / "builtin"
    config_dir = Path(paths.global_config_dir())
    later = "(not created yet; start creates it when needed)"
    assert result.stdout == "\n".join(
        [
            "Environment",
            f"  ✓ start            {__version__}",
            f"  ✓ python           {platform.python_version()} ({sys.executable})",
            f"  ✓ platform         {platform.platform()}",
            f"  ✓ built-in config  {builtin}",
            f"  · config dir       {config_dir} {later}",
            "      → run 'start init' to write a starter config",
            f"  · state dir        {Path(paths.state_dir())} {later}",
            f"  · runtime dir      {Path(paths.runtime_dir())} {later}",
            *extras(),
            "",
            "Config",
            f"  ✓ built-in  {builtin}/agents.toml parsed",
            f"  ✓ built-in  {builtin}/roles.toml parsed",
            f"  ✓ built-in  {builtin}/contexts.toml parsed",
            f"  ✓ built-in  {builtin}/tasks.toml parsed",
            f"  · global    no config files in {config_dir}",
            "      → run 'start init' to write a starter config",
            f"  · project   no .start/ directory in {isolated}",
            "      → run 'start init --project' to add project config",
            "  ✓ validate  no problems in 4 files",
            "",
            "Agents",
            f"  ✓ alpha          {bin_dir}/alpha-cli; selected now (first agent on PATH)",
            "  · not installed  beta (1)",
            "",
            "Roles, contexts and tasks",
            "  ✓ default role   pair-programmer (first role defined)",
            f"  ✓ default shell  {bin_dir}/bash (used by context project-guide)",
            f"  ✓ shell sh       {bin_dir}/sh (used by task git-diff-review, task commit-message, task gate)",
            "  ✓ references     3 roles, 1 context, 6 tasks: "
            "every named file and reference resolves",
            "",
            "Project",
            f"  ✓ root   {isolated} (working directory; no git repository or .start/ above it)",
            "  · trust  no .start/ directory, so nothing to trust",
            "",
            "✓ healthy: no errors or warnings",
            "",
        ]
    )


def test_quiet_prints_only_problems(bin_dir: Path, isolated: Path) -> None:
    assert invoke("doctor", "-q").stdout == ""
    start_dir = isolated / ".start"
    write_tree(isolated, {".start/config.toml": '[tasks.x]\nprompt = "p"\nrole = "nope"\n'})
    result = invoke("doctor", "-q")
    assert result.exit_code == 3  # an undefined role is a config error, wherever it is told
    assert result.stdout == (
        "  ✗ task x  role 'nope' is not defined\n"
        f"      → define [roles.nope] or change tasks.x.role in {start_dir / 'config.toml'}\n"
        "  ⚠ trust  not trusted: never approved\n"
        f"      → review {start_dir}, then run 'start trust'\n"
    )


def test_warnings_alone_exit_1_and_the_summary_counts_them(bin_dir: Path) -> None:
    write_tree(
        Path(paths.global_config_dir()), {"config.toml": '[tasks.t]\nprompt = "p"\ncomand = "x"\n'}
    )
    result = invoke("doctor")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "⚠ 0 errors, 1 warning"


def test_errors_and_warnings_summary(bin_dir: Path) -> None:
    write_tree(
        Path(paths.global_config_dir()),
        {"config.toml": '[settings]\ndefault_agent = "beta"\n[tasks.t]\nprompt = "p"\nx = 1\n'},
    )
    result = invoke("doctor")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "✗ 1 error, 1 warning"


def test_json(bin_dir: Path, isolated: Path) -> None:
    result = invoke("doctor", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert (data["healthy"], data["errors"], data["warnings"]) == (True, 0, 0)
    agents = [c for c in data["checks"] if c["section"] == "agents"]
    assert agents == [
        {
            "section": "agents",
            "status": "ok",
            "subject": "alpha",
            "message": f"{bin_dir}/alpha-cli; selected now (first agent on PATH)",
            "fix": None,
            "path": f"{bin_dir}/alpha-cli",
            "selected": True,
        },
        {
            "section": "agents",
            "status": "info",
            "subject": "beta",
            "message": "not installed ('beta-cli' is not on PATH)",
            "fix": None,
            "path": None,
            "selected": False,
        },
    ]
    assert [c["section"] for c in data["checks"]] == sorted(
        (c["section"] for c in data["checks"]),
        key=["environment", "config", "agents", "items", "project"].index,
    )


def test_json_exit_code_follows_health(bin_dir: Path) -> None:
    (bin_dir / "alpha-cli").unlink()
    result = invoke("doctor", "--json")
    assert (result.exit_code, json.loads(result.stdout)["healthy"]) == (1, False)


@pytest.mark.parametrize(
    "text",
    ["[settings\n", '[settings]\ndefault_agent = "nope"\n', "[tasks.t]\nprompt = 1\n"],
    ids=["syntax", "unknown-default-agent", "validation"],
)
def test_any_config_error_exits_3(bin_dir: Path, isolated: Path, text: str) -> None:
    """One rule: exit 3 exactly when `start config validate` does, whichever section tells it."""
    write_tree(isolated.parent / "home/.config/start", {"config.toml": text})
    assert invoke("config", "validate").exit_code == 3
    result = invoke("doctor", "--json")
    assert (result.exit_code, json.loads(result.stdout)["config_invalid"]) == (3, True)
    assert invoke("doctor", "-q").exit_code == 3


def test_no_project_flag(bin_dir: Path, isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": "[settings\n"})
    assert invoke("doctor").exit_code == 3  # a config file has errors
    result = invoke("doctor", "--no-project")
    assert result.exit_code == 0, result.stdout
    assert f"  · trust  {isolated / '.start'} is ignored for this run\n" in result.stdout


def test_an_untrusted_project_runs_nothing(bin_dir: Path, isolated: Path) -> None:
    marker = isolated / "ran"
    write_tree(
        isolated,
        {
            ".start/config.toml": (
                f'[contexts.c]\nrequired = true\ncommand = "touch {marker}"\n'
                '[agents.evil]\nbin = "evil"\ncommand = "{bin} {prompt}"\n'
            )
        },
    )
    result = invoke("doctor")
    assert result.exit_code == 1
    assert not marker.exists()
    assert "  ⚠ trust  not trusted: never approved\n" in result.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("no_color_env", "no_color_flag", "coloured"),
    [(False, False, True), (True, False, False), (False, True, False)],
)
def test_colour_only_on_a_terminal_and_never_with_no_color(
    bin_dir: Path,
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_color_env: bool,
    no_color_flag: bool,
    coloured: bool,
) -> None:
    if no_color_env:
        monkeypatch.setenv("NO_COLOR", "1")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    options = Options()
    options.no_color = no_color_flag
    doctor_cli.show(diagnose(str(isolated)), options)
    assert ("\x1b[" in terminal.getvalue()) is coloured
    assert "✓ healthy: no errors or warnings" in terminal.getvalue()


def test_plain_output_when_not_a_terminal(bin_dir: Path) -> None:
    assert "\x1b" not in invoke("doctor").stdout


def test_terminal_escapes_from_config_are_shown_escaped(bin_dir: Path) -> None:
    write_tree(
        Path(paths.global_config_dir()),
        {"config.toml": '[agents.mine]\nbin = "m\\u001b]0;pwned\\u0007"\ncommand = "x {prompt}"\n'},
    )
    result = invoke("doctor")
    assert "\x1b]" not in result.stdout
    assert "  ⚠ mine           'm\\x1b]0;pwned\\x07' is not on PATH\n" in result.stdout


def test_verbose_lists_each_agent_that_is_not_installed(bin_dir: Path) -> None:
    result = invoke("doctor", "-v")
    agents = result.stdout.split("Agents\n", 1)[1].split("\n\n", 1)[0]
    assert agents == (
        f"  ✓ alpha  {bin_dir}/alpha-cli; selected now (first agent on PATH)\n"
        "  · beta   not installed ('beta-cli' is not on PATH)"
    )


def test_shipped_agents_that_are_not_installed_collapse_into_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = "".join(
        f'[agents.{name}]\nbin = "{name}-cli"\ncommand = "{{bin}} {{prompt}}"\n'
        for name in ("alpha", "beta", "gamma", "delta")
    )
    builtin = tmp_path / "builtin"
    write_tree(builtin, {"agents.toml": catalog})
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(builtin))
    use_path(tmp_path, monkeypatch, "alpha-cli")
    agents = invoke("doctor").stdout.split("Agents\n", 1)[1].split("\n\n", 1)[0]
    assert agents == (
        f"  ✓ alpha          {tmp_path}/bin/alpha-cli; selected now (first agent on PATH)\n"
        "  · not installed  beta, gamma, delta (3)"
    )


def test_long_lines_wrap_with_a_hanging_indent(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "50")
    write_tree(
        Path(paths.global_config_dir()),
        {
            "config.toml": '[contexts.notes]\nfile = "/nowhere/a/rather/long/path/to/notes.md"\n'
            'prompt = "{file_contents}"\n'
        },
    )
    result = invoke("doctor")
    section = result.stdout.split("Roles, contexts and tasks\n", 1)[1].split("\n\n", 1)[0]
    config = Path(paths.global_config_dir()) / "config.toml"
    lines = section.splitlines()
    start = lines.index("  · context notes  file not found:")
    assert lines[start : start + 5] == [
        "  · context notes  file not found:",
        "                   /nowhere/a/rather/long/path/to/",
        "                   notes.md",
        "      → create",
        "        /nowhere/a/rather/long/path/to/notes.md,",
    ]
    assert all(len(line) <= 50 for line in result.stdout.splitlines())
    assert str(config) in result.stdout.replace("\n        ", "")


def test_subjects_line_up_by_display_width(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = '[agents.alpha]\nbin = "alpha-cli"\ncommand = "{bin} {prompt}"\n'
    builtin = tmp_path / "builtin"
    write_tree(builtin, {"agents.toml": catalog})
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(builtin))
    use_path(tmp_path, monkeypatch, "alpha-cli")
    write_tree(
        Path(paths.global_config_dir()),
        {"config.toml": '[agents."代理"]\nbin = "nowhere-cli"\ncommand = "{bin} {prompt}"\n'},
    )
    agents = invoke("doctor").stdout.split("Agents\n", 1)[1].split("\n\n", 1)[0]
    lines = [line for line in agents.splitlines() if "→" not in line]
    assert lines == [
        f"  ✓ alpha  {tmp_path}/bin/alpha-cli; selected now (first agent on PATH)",
        "  ⚠ 代理   'nowhere-cli' is not on PATH",
    ]
