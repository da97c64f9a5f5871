"""`start init` through the command line: choosing the agent, --project, --force, --json."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from start.base import paths
from tests.conftest import invoke, write_tree
from tests.setup.test_init import real_catalog, use_catalog, use_path


@pytest.fixture
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_catalog(tmp_path, monkeypatch)


def config_path() -> Path:
    return Path(paths.global_config_dir()) / "config.toml"


def settings() -> dict[str, object]:
    table: dict[str, object] = tomllib.loads(config_path().read_text())["settings"]
    return table


def test_one_installed_agent_becomes_the_default(
    catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = use_path(tmp_path, monkeypatch, "beta-cli")
    result = invoke("init")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (
        f"start: wrote {config_path()}\n"
        f"  default agent: beta (the only one installed; at {bin_dir / 'beta-cli'})\n"
        "Next: 'start doctor' checks the setup; 'start' launches a session.\n"
    )
    assert settings()["default_agent"] == "beta"


def test_several_installed_without_a_terminal_takes_the_first(
    catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = use_path(tmp_path, monkeypatch, "alpha-cli", "beta-cli")
    result = invoke("init")
    assert result.exit_code == 0
    assert result.stderr.splitlines()[1:3] == [
        f"  default agent: alpha (the first installed; at {bin_dir / 'alpha-cli'})",
        "  also installed: beta (use one with --agent NAME)",
    ]
    assert settings()["default_agent"] == "alpha"


def test_several_installed_on_a_terminal_asks(
    catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_path(tmp_path, monkeypatch, "alpha-cli", "beta-cli")
    monkeypatch.setattr("start.cli.init._interactive", lambda: True)
    result = invoke("init", stdin="beta\n")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(
        "Several agents are installed. Which should start launch by default? (alpha, beta) "
        "[alpha]: "
    )
    assert "  default agent: beta (your choice; at " in result.stderr
    assert settings()["default_agent"] == "beta"


def test_agent_flag_skips_the_question_and_may_name_an_agent_not_installed(
    catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_path(tmp_path, monkeypatch, "alpha-cli", "beta-cli")
    monkeypatch.setattr("start.cli.init._interactive", lambda: True)
    assert invoke("init", "--agent", "beta").exit_code == 0
    assert settings()["default_agent"] == "beta"
    use_path(tmp_path, monkeypatch)
    (tmp_path / "bin" / "alpha-cli").unlink()
    (tmp_path / "bin" / "beta-cli").unlink()
    result = invoke("init", "--force", "--agent", "alpha")
    assert "  default agent: alpha (--agent; not on PATH yet: install it before you launch)\n" in (
        result.stderr
    )


def test_an_unknown_agent_is_refused_and_nothing_is_written(catalog: Path) -> None:
    result = invoke("init", "--agent", "alhpa")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown agent 'alhpa'; did you mean 'alpha'?\n",
    )
    assert not config_path().exists()


def test_no_agent_installed_still_writes_a_config_with_a_hint(
    catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_path(tmp_path, monkeypatch)
    result = invoke("init")
    assert result.exit_code == 0
    assert result.stderr.splitlines()[1:3] == [
        "  no agent is installed (looked for: alpha, beta)",
        f"  install one, then set default_agent under [settings] in {config_path()}",
    ]
    assert "default_agent" not in settings()
    assert '# default_agent = "alpha"\n' in config_path().read_text()


def test_an_existing_config_needs_force_and_is_backed_up(
    catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_path(tmp_path, monkeypatch, "alpha-cli")
    write_tree(config_path().parent, {"config.toml": "# mine\n"})
    refused = invoke("init")
    assert (refused.exit_code, refused.stderr) == (
        1,
        f"start: {config_path()} already exists; pass --force to replace it "
        "(the old file is kept as a timestamped backup)\n",
    )
    assert config_path().read_text() == "# mine\n"
    forced = invoke("init", "--force")
    assert forced.exit_code == 0
    [backup] = config_path().parent.glob("config.toml.*.bak")
    assert backup.read_text() == "# mine\n"
    assert forced.stderr.splitlines()[:2] == [
        f"start: wrote {config_path()}",
        f"  the old file is kept as {backup}",
    ]


def test_quiet_says_only_where_the_backup_is(
    catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_path(tmp_path, monkeypatch, "alpha-cli")
    assert invoke("init", "-q").stderr == ""
    result = invoke("init", "-q", "--force")
    [backup] = config_path().parent.glob("config.toml.*.bak")
    assert result.stderr == f"  the old file is kept as {backup}\n"


def test_json(catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = use_path(tmp_path, monkeypatch, "alpha-cli")
    result = invoke("init", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "path": str(config_path()),
        "backup": None,
        "default_agent": "alpha",
        "installed": {"alpha": str(bin_dir / "alpha-cli")},
        "problems": [],
        "agent_setup": None,  # its CLI cannot tell
    }


def test_project_writes_the_project_file_from_a_subdirectory(
    catalog: Path, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_path(tmp_path, monkeypatch)
    write_tree(
        isolated, {".git/HEAD": "ref: refs/heads/main\n", "AGENTS.md": "# guide\n", "src/x.py": ""}
    )
    result = invoke("-d", str(isolated / "src"), "init", "--project")
    path = isolated / ".start" / "config.toml"
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (
        f"start: wrote {path}\n"
        f"  context project-guide points the agent at {isolated / 'AGENTS.md'}\n"
        "Next: 'start task todo-triage' tries the example task; 'start doctor' checks.\n"
    )
    assert tomllib.loads(path.read_text())["contexts"]["project-guide"]["file"] == "AGENTS.md"
    assert not config_path().exists()


def test_project_without_a_guide_says_so(catalog: Path, isolated: Path) -> None:
    result = invoke("init", "--project")
    assert result.stderr.splitlines()[1] == (
        "  no AGENTS.md or README.md found: the project-guide context is commented out"
    )


def test_project_agent_must_be_defined_somewhere(catalog: Path, isolated: Path) -> None:
    write_tree(
        Path(paths.global_config_dir()),
        {"agents.toml": '[agents.mine]\nbin = "m"\ncommand = "m {prompt}"\n'},
    )
    assert invoke("init", "--project", "--agent", "mine").exit_code == 0
    data = tomllib.loads((isolated / ".start" / "config.toml").read_text())
    assert data["settings"] == {"default_agent": "mine"}
    result = invoke("init", "--project", "--force", "--agent", "nope")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown agent 'nope'; known agents: alpha, beta, mine\n",
    )


def test_project_never_overwrites_without_force(catalog: Path, isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": "# ours\n"})
    result = invoke("init", "--project")
    assert result.exit_code == 1
    assert (isolated / ".start" / "config.toml").read_text() == "# ours\n"


def test_from_zero_to_a_healthy_setup(
    catalog: Path, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's 'done when': one agent installed, no config; init, then doctor is healthy."""
    use_path(tmp_path, monkeypatch, "beta-cli")
    assert invoke("init").exit_code == 0
    doctor = invoke("doctor")
    assert doctor.exit_code == 0, doctor.stdout
    assert doctor.stdout.endswith("✓ healthy: no errors or warnings\n")
    write_tree(isolated, {"README.md": "# readme\n"})
    assert invoke("init", "--project").exit_code == 0
    doctor = invoke("doctor")
    assert doctor.exit_code == 0, doctor.stdout
    validate = invoke("config", "validate")
    assert validate.exit_code == 0
    assert validate.stdout.startswith("✓ 0 errors, 0 warnings")


@pytest.mark.parametrize("installed", [True, False])
def test_shipped_catalog_init_passes_config_validate(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: bool
) -> None:
    catalog = real_catalog()
    assert catalog, "config/agents.toml ships agents"
    from start.config.load import load

    agent = load(layers=("built-in",)).agents[catalog[0]]
    use_path(tmp_path, monkeypatch, *([agent.bin] if installed else []))
    write_tree(isolated, {"AGENTS.md": "# guide\n"})
    assert invoke("init").exit_code == 0
    assert invoke("init", "--project").exit_code == 0
    validate = invoke("config", "validate")
    assert (validate.exit_code, validate.stdout.splitlines()[0]) == (
        0,
        "✓ 0 errors, 0 warnings in 7 files",
    )
    doctor = invoke("doctor")
    assert doctor.exit_code == (0 if installed else 1), doctor.stdout


def test_project_into_an_untrusted_start_dir_says_how_to_trust_it(
    catalog: Path, isolated: Path
) -> None:
    write_tree(isolated, {".start/tasks.toml": '[tasks.mine]\nprompt = "p"\n'})
    result = invoke("init", "--project")
    assert result.exit_code == 0
    assert (
        "  not trusted: never approved: run 'start trust' to review .start/ and approve it\n"
        in result.stderr
    )
    data = json.loads(invoke("init", "--project", "--force", "--json").stdout)
    assert (data["trusted"], data["problems"]) == (False, [])


def test_a_fresh_project_config_is_trusted(catalog: Path, isolated: Path) -> None:
    data = json.loads(invoke("init", "--project", "--json").stdout)
    assert data["trusted"] is True
    assert "not trusted" not in invoke("init", "--project", "--force").stderr


def test_the_root_agent_option_works_too(catalog: Path) -> None:
    assert invoke("-a", "beta", "init").exit_code == 0
    assert settings()["default_agent"] == "beta"
