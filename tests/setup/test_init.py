"""The starter configs of `start init`: agent detection, the documents, and the safe write."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tomllib
from datetime import datetime
from pathlib import Path

import pytest
import tomlkit

from start.base import paths
from start.base.errors import StartError, UnknownNameError
from start.config.load import load
from start.config.model import Config
from start.setup import init
from tests.conftest import REPO, write_tree

# A small catalog for hermetic tests; the real one (config/agents.toml) is tested where it ships.
CATALOG = """\
[agents.alpha]
bin = "alpha-cli"
description = "The first test agent"
url = "https://example.com/alpha"
command = "{bin} {prompt}"

[agents.beta]
bin = "beta-cli"
command = "{bin} --prompt {prompt}"
"""


def use_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agents: str = CATALOG) -> Path:
    """A built-in layer of the shipped roles, contexts and tasks plus `agents`."""
    builtin = tmp_path / "builtin"
    builtin.mkdir()
    for name in ("roles.toml", "contexts.toml", "tasks.toml"):
        shutil.copy(REPO / "config" / name, builtin / name)
    if agents:
        (builtin / "agents.toml").write_text(agents, encoding="utf-8")
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(builtin))
    return builtin


def use_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *installed: str) -> Path:
    """PATH is one directory holding sh, bash and a stub executable for each name."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for shell in ("sh", "bash"):
        real = shutil.which(shell)
        if real is not None and not (bin_dir / shell).exists():
            (bin_dir / shell).symlink_to(real)
    for name in installed:
        install(bin_dir, name)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def install(bin_dir: Path, name: str) -> Path:
    stub = bin_dir / name
    stub.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    stub.chmod(0o755)
    return stub


def real_catalog() -> list[str]:
    return list(load(layers=("built-in",)).agents)


def global_dir() -> Path:
    return Path(paths.global_config_dir())


def validated(workdir: Path, written: str, *, use_project: bool = True) -> Config:
    """The config with `written` in place: strict (no errors), and no warnings either."""
    config = load(str(workdir), use_project=use_project, strict=True)
    assert [str(p) for p in config.problems] == []
    assert written in {f.path for f in config.files}
    return config


# --- detection ----------------------------------------------------------------------------


def test_detect_lists_the_catalog_and_the_installed_agents_in_catalog_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    use_catalog(tmp_path, monkeypatch)
    bin_dir = use_path(tmp_path, monkeypatch, "beta-cli")
    found = init.detect(str(isolated))
    assert found == init.Detection(("alpha", "beta"), {"beta": str(bin_dir / "beta-cli")})


def test_detect_ignores_the_global_and_project_layers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    use_catalog(tmp_path, monkeypatch)
    use_path(tmp_path, monkeypatch, "mine-cli")
    write_tree(
        global_dir(), {"config.toml": '[agents.mine]\nbin = "mine-cli"\ncommand = "x {prompt}"\n'}
    )
    write_tree(isolated, {".start/config.toml": "[settings\n"})
    assert init.detect(str(isolated)) == init.Detection(("alpha", "beta"), {})


def test_detect_with_an_empty_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    use_catalog(tmp_path, monkeypatch, agents="")
    assert init.detect(str(isolated)) == init.Detection((), {})


DETECTION = init.Detection(("alpha", "beta", "gamma"), {"beta": "/b/beta", "gamma": "/b/gamma"})


@pytest.mark.parametrize(
    ("detection", "requested", "expected"),
    [
        (DETECTION, "alpha", ("alpha", "--agent")),
        (DETECTION, None, ("beta", "the first installed")),
        (
            init.Detection(("alpha", "beta"), {"beta": "/b"}),
            None,
            ("beta", "the only one installed"),
        ),
        (init.Detection(("alpha",), {}), None, (None, "no agent of the catalog is installed")),
    ],
)
def test_choose_agent(
    detection: init.Detection, requested: str | None, expected: tuple[str | None, str]
) -> None:
    assert init.choose_agent(detection, requested) == expected


def test_choose_agent_refuses_a_name_outside_the_catalog() -> None:
    with pytest.raises(UnknownNameError) as caught:
        init.choose_agent(DETECTION, "betta")
    assert str(caught.value) == "unknown agent 'betta'; did you mean 'beta'?"


# --- the global document ------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["alpha", None])
def test_global_config_passes_validation_without_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path, agent: str | None
) -> None:
    use_catalog(tmp_path, monkeypatch)
    detection = init.Detection(("alpha", "beta"), {"alpha": "/b/alpha"} if agent else {})
    written = init.create(init.global_path(), init.global_text(agent, detection), force=False)
    config = validated(isolated, written.target)
    assert config.settings.default_agent == agent
    assert config.settings.default_role == "engineer"
    assert config.roles["engineer"].origin.layer == "global"
    assert config.contexts["environment"].required
    # The shipped tasks stay the shipped ones: a starter copy would hide their later fixes.
    assert config.tasks["git-diff-review"].origin.layer == "built-in"
    assert config.tasks["explain"].origin.layer == "global"
    assert {"explain", "write-tests"} <= set(config.tasks)


def test_global_config_says_how_to_set_an_agent_when_none_is_installed() -> None:
    text = init.global_text(None, init.Detection(("alpha", "beta"), {}))
    assert (
        "[settings]\n"
        "# No agent of start's catalog is installed yet (looked for: alpha, beta). "
        "Install one, then\n"
        "# name it here, for example:\n"
        '# default_agent = "alpha"\n'
        "# The role (the system prompt)"
    ) in text
    assert "default_agent" not in tomllib.loads(text)["settings"]


def test_global_config_names_the_other_installed_agents() -> None:
    text = init.global_text("beta", DETECTION)
    assert 'default_agent = "beta"\n# Also installed: gamma.\n' in text


def test_global_config_with_an_empty_catalog_validates(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_catalog(tmp_path, monkeypatch, agents="")
    text = init.global_text(None, init.Detection((), {}))
    assert '# default_agent = "my-agent"\n' in text
    written = init.create(init.global_path(), text, force=False)
    validated(isolated, written.target)


def test_every_section_of_the_global_config_is_explained() -> None:
    text = init.global_text("alpha", DETECTION)
    lines = text.splitlines()
    for header in ("[settings]", "[roles.engineer]", "[contexts.environment]", "[tasks.explain]"):
        index = lines.index(header)
        before = lines[max(0, index - 6) : index]
        assert any(line.startswith("# ") for line in before), header
    for commented in ("# [agents.my-agent]", "# [contexts.my-notes]", '# shell = "bash"'):
        assert commented in lines


def test_the_documents_are_tomlkit_round_trips() -> None:
    for text in (
        init.global_text("alpha", DETECTION),
        init.global_text(None, DETECTION),
        init.project_text("/nowhere", "alpha"),
    ):
        assert tomlkit.dumps(tomlkit.parse(text)) == text


def test_the_starter_never_copies_a_shipped_task() -> None:
    shipped = tomllib.loads((REPO / "config" / "tasks.toml").read_text())["tasks"]
    for text in (init.global_text(None, DETECTION), init.project_text("/nowhere", None)):
        assert not set(tomllib.loads(text).get("tasks", {})) & set(shipped)


def test_the_starter_documents_are_package_data() -> None:
    for document in ("global", "project"):
        parts = init.snippets(document)
        assert "head" in parts and all(text.strip() for text in parts.values())
    assert list(init.snippets("global")) == [
        "head",
        "agent-setting",
        "settings",
        "roles.engineer",
        "contexts-head",
        "contexts.environment",
        "context-example",
        "tasks-head",
        "tasks.explain",
        "tasks.write-tests",
    ]


def test_items_that_another_file_of_the_layer_defines_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    use_catalog(tmp_path, monkeypatch)
    write_tree(
        global_dir(),
        {
            "tasks.toml": '[tasks.explain]\nprompt = "mine"\n',
            "roles.toml": '[roles.engineer]\nprompt = "me"\n',
        },
    )
    path = Path(init.global_path())
    skip = init.taken(str(path.parent), str(path))
    assert skip == {("tasks", "explain"), ("roles", "engineer")}
    text = init.global_text("alpha", DETECTION, skip)
    assert (
        "# [tasks.explain] is not written here: another file in this directory defines it.\n"
        in text
    )
    assert "[tasks.explain]\n" not in text
    written = init.create(str(path), text, force=False)
    config = validated(isolated, written.target)
    assert config.tasks["explain"].prompt == "mine"
    assert config.settings.default_role == "engineer"


def test_taken_ignores_the_file_being_replaced(isolated: Path) -> None:
    write_tree(global_dir(), {"config.toml": '[tasks.explain]\nprompt = "old"\n'})
    assert init.taken(str(global_dir()), init.global_path()) == frozenset()


# --- the project document -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "guide"),
    [
        ({"AGENTS.md": "a", "README.md": "r"}, "AGENTS.md"),
        ({"README.md": "r"}, "README.md"),
        ({}, None),
    ],
)
@pytest.mark.parametrize("agent", ["beta", None])
def test_project_config_passes_validation_without_a_warning(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    isolated: Path,
    files: dict[str, str],
    guide: str | None,
    agent: str | None,
) -> None:
    use_catalog(tmp_path, monkeypatch)
    write_tree(isolated, files)
    root = init.project_root(str(isolated))
    written = init.create(
        init.project_path(root), init.project_text(root, agent), force=False, project_root=root
    )
    assert Path(written.target) == isolated / ".start" / "config.toml"
    config = validated(isolated, written.target)
    assert config.settings.default_agent == agent
    assert config.tasks["todo-triage"].origin.layer == "project"
    context = config.contexts["project-guide"]
    if guide is None:
        assert context.origin.layer == "built-in"
        assert "# [contexts.project-guide]\n" in Path(written.target).read_text()
    else:
        assert (context.origin.layer, context.file, context.required) == ("project", guide, True)
        assert context.description == f"Points the agent at {guide}"


def test_project_config_is_written_at_the_project_root(isolated: Path) -> None:
    write_tree(isolated, {".git/HEAD": "ref: refs/heads/main\n", "src/app/x.py": ""})
    assert Path(init.project_path(init.project_root(str(isolated / "src" / "app")))) == (
        isolated / ".start" / "config.toml"
    )


def test_project_config_explains_trust() -> None:
    text = init.project_text("/nowhere", None)
    assert "# Nothing in .start/ runs until it is trusted" in text
    assert '# default_agent = "claude"\n' in text


# --- writing --------------------------------------------------------------------------------

NOW = datetime(2025, 1, 7, 9, 30, 5)


def test_write_creates_the_directory_and_leaves_no_temp_file(isolated: Path) -> None:
    path = isolated / "deep" / "dir" / "config.toml"
    written = init.write(str(path), "x = 1\n", force=False)
    assert written == init.Written(str(path), str(path), None)
    assert path.read_text() == "x = 1\n"
    assert os.listdir(path.parent) == ["config.toml"]


def test_write_never_overwrites_without_force(isolated: Path) -> None:
    path = isolated / "config.toml"
    path.write_text("old\n")
    with pytest.raises(init.ConfigExistsError) as caught:
        init.write(str(path), "new\n", force=False)
    assert str(caught.value) == (
        f"{path} already exists; pass --force to replace it "
        "(the old file is kept as a timestamped backup)"
    )
    assert path.read_text() == "old\n"


def test_force_keeps_a_timestamped_backup_and_the_mode(isolated: Path) -> None:
    path = isolated / "config.toml"
    path.write_text("old\n")
    path.chmod(0o640)
    first = init.write(str(path), "new\n", force=True, now=NOW)
    second = init.write(str(path), "newer\n", force=True, now=NOW)
    assert first.backup is not None and second.backup is not None
    assert Path(first.backup) == isolated / "config.toml.20250107-093005.bak"
    assert Path(second.backup) == isolated / "config.toml.20250107-093005-2.bak"
    assert Path(first.backup).read_text() == "old\n"
    assert Path(second.backup).read_text() == "new\n"
    assert path.read_text() == "newer\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert stat.S_IMODE(os.stat(first.backup).st_mode) == 0o640


def test_a_backup_is_not_read_as_a_config_file(isolated: Path) -> None:
    path = Path(init.global_path())
    write_tree(path.parent, {"config.toml": "[settings]\n"})
    init.write(str(path), "[settings]\n", force=True, now=NOW)
    assert [str(p) for p in load(str(isolated)).problems] == []


def test_a_new_file_gets_the_umask_mode(isolated: Path) -> None:
    old = os.umask(0o027)
    try:
        init.write(str(isolated / "config.toml"), "", force=False)
    finally:
        os.umask(old)
    assert stat.S_IMODE((isolated / "config.toml").stat().st_mode) == 0o640


def test_a_symlinked_config_is_written_through(isolated: Path) -> None:
    dotfiles = isolated / "dotfiles" / "start.toml"
    write_tree(isolated, {"dotfiles/start.toml": "old\n"})
    link = isolated / "config.toml"
    link.symlink_to(dotfiles)
    written = init.write(str(link), "new\n", force=True, now=NOW)
    assert written.backup is not None
    assert Path(written.target) == dotfiles
    assert link.is_symlink()
    assert dotfiles.read_text() == "new\n"
    assert Path(written.backup) == dotfiles.parent / "start.toml.20250107-093005.bak"


def test_a_failed_write_keeps_the_old_file(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = isolated / "config.toml"
    path.write_text("old\n")

    def broken(source: object, target: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(StartError) as caught:
        init.write(str(path), "new\n", force=True, now=NOW)
    assert str(caught.value) == f"cannot write {path}: No space left on device"
    assert path.read_text() == "old\n"
    # The old file is untouched, so its backup would only be debris.
    assert sorted(os.listdir(isolated)) == ["config.toml"]


def test_a_fresh_project_config_is_trusted(isolated: Path) -> None:
    from start import trust

    root = init.project_root(str(isolated))
    init.create(
        init.project_path(root), init.project_text(root, None), force=False, project_root=root
    )
    assert trust.describe(load(str(isolated)))[0] is True


def test_replacing_an_untrusted_project_config_does_not_trust_it(isolated: Path) -> None:
    from start import trust

    write_tree(isolated, {".start/config.toml": '[tasks.x]\nprompt = "p"\n'})
    root = init.project_root(str(isolated))
    init.create(
        init.project_path(root), init.project_text(root, None), force=True, project_root=root
    )
    assert trust.describe(load(str(isolated))) == (False, "not trusted: never approved")


def test_the_core_imports_neither_click_nor_rich_nor_tomlkit() -> None:
    code = (
        "import sys, start.setup.init, start.setup.doctor\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich', 'tomlkit')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert (out.returncode, out.stdout, out.stderr) == (0, "[]\n", "")


# --- the shipped catalog --------------------------------------------------------------------


@pytest.mark.parametrize("installed", [True, False])
def test_with_the_shipped_catalog_both_documents_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path, installed: bool
) -> None:
    catalog = real_catalog()
    assert catalog, "config/agents.toml ships agents"
    agent = load(layers=("built-in",)).agents[catalog[0]]
    use_path(tmp_path, monkeypatch, *([agent.bin] if installed else []))
    detection = init.detect(str(isolated))
    assert list(detection.installed) == ([agent.name] if installed else [])
    chosen, _ = init.choose_agent(detection, None)
    written = init.create(init.global_path(), init.global_text(chosen, detection), force=False)
    assert validated(isolated, written.target).settings.default_agent == chosen
    write_tree(isolated, {"AGENTS.md": "guide"})
    root = init.project_root(str(isolated))
    written = init.create(
        init.project_path(root), init.project_text(root, chosen), force=False, project_root=root
    )
    validated(isolated, written.target)


def test_a_failed_backup_leaves_nothing_behind(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = isolated / "config.toml"
    path.write_text("old\n")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)  # the disk fills up while the backup is written
    with pytest.raises(StartError) as caught:
        init.write(str(path), "new\n", force=True, now=NOW)
    assert str(caught.value) == f"cannot write {path}: No space left on device"
    assert path.read_text() == "old\n"
    assert sorted(os.listdir(isolated)) == ["config.toml"]


def test_force_never_replaces_what_is_not_a_regular_file(isolated: Path) -> None:
    import signal

    path = isolated / "config.toml"
    os.mkfifo(path)

    def hang(signum: int, frame: object) -> None:
        raise AssertionError("init --force blocked on a FIFO")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(10)
    try:
        with pytest.raises(init.ConfigExistsError) as caught:
            init.write(str(path), "new\n", force=True, now=NOW)  # reading it for a backup blocks
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert str(caught.value) == (
        f"{path} is a FIFO (named pipe), not a regular file; remove it (start init does not "
        "replace it), then run start init"
    )
