"""Deciding trust (start.trust): grant, the pinned approved bytes, overrides, describe() and
self-edits."""

from __future__ import annotations

from pathlib import Path

import pytest

from start import trust
from start.base.errors import UntrustedError
from start.base.fs import FileError
from start.base.wall import Reader
from start.config.load import load
from tests.conftest import write_tree
from tests.trust.conftest import CONFIG, SENTINEL, approve_here

# --- deciding -------------------------------------------------------------------------------


def test_grant_of_an_unapproved_project_requires_trust(project: Path) -> None:
    with pytest.raises(trust.TrustRequired) as caught:
        trust.grant(load())
    assert str(caught.value) == (
        f"{project}/.start is not trusted (never approved); run 'start trust' to review it"
    )
    assert caught.value.exit_code == 5
    assert [m.value for m in caught.value.review().commands] == ["echo hi"]
    assert trust.records() == ([], [])


def test_grant_after_approval_pins_the_approved_bytes(project: Path) -> None:
    with pytest.raises(trust.TrustRequired) as caught:
        trust.grant(load())
    trust.approve(caught.value.scan)
    grant, warnings = trust.grant(load())
    assert grant is not None and warnings == ()
    assert grant.reason.startswith("approved ")
    assert grant.pinned[str(project / "roles/r.md")] == b"ROLE v1\n"


def test_grant_without_a_project_layer_is_none(project: Path) -> None:
    assert trust.grant(load(use_project=False)) == (None, ())


def reader(project: Path) -> Reader:
    found = trust.scan(load())
    assert found is not None
    trust.approve(found)
    grant, _ = trust.grant(load())
    return Reader(str(project), grant)


def test_the_role_file_bytes_used_are_the_bytes_approved(project: Path) -> None:
    read = reader(project)
    (project / "roles/r.md").write_text(SENTINEL)
    assert (
        read.read(str(project / "roles/r.md"), layer="project", relative=True).data == b"ROLE v1\n"
    )
    (project / "roles/r.md").unlink()
    assert (
        read.read(str(project / "roles/r.md"), layer="project", relative=True).data == b"ROLE v1\n"
    )


def test_a_role_file_missing_when_approved_stays_missing(project: Path) -> None:
    (project / "roles/r.md").unlink()
    read = reader(project)
    (project / "roles/r.md").write_text(SENTINEL)
    with pytest.raises(FileError) as caught:
        read.read(str(project / "roles/r.md"), layer="project", relative=True)
    assert caught.value.missing


@pytest.mark.parametrize(
    ("value", "trusted"),
    [
        ("{parent}", True),
        ("{project}", True),
        ("/nonexistent:{parent}/", True),
        ("{project}x", False),
        ("{short}", False),
        ("relative/path", False),
        ("", False),
    ],
)
def test_start_trusted_paths_are_real_absolute_prefixes(
    project: Path, monkeypatch: pytest.MonkeyPatch, value: str, trusted: bool
) -> None:
    text = value.format(parent=project.parent, project=project, short=str(project)[:-1])
    monkeypatch.setenv("START_TRUSTED_PATHS", text)
    verdict = trust.check(load())
    assert verdict.trusted is trusted
    if trusted:
        assert verdict.reason == "trusted by START_TRUSTED_PATHS"


def test_a_relative_trusted_path_is_warned_about(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("START_TRUSTED_PATHS", "repo:")
    assert trust.check(load()).warnings == (
        "START_TRUSTED_PATHS: ignoring 'repo': not an absolute path",
    )


def test_ci_does_not_imply_trust(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert trust.describe(load()) == (False, "not trusted: never approved")


def test_unsafe_files_are_refused_even_when_approved(project: Path) -> None:
    approve_here()
    (project / ".start/config.toml").chmod(0o666)
    with pytest.raises(UntrustedError) as caught:
        trust.grant(load())
    assert not isinstance(caught.value, trust.TrustRequired)
    assert str(caught.value).startswith(f"{project}/.start is not safe to use")


# --- describe -------------------------------------------------------------------------------


def test_describe(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert trust.describe(load()) == (False, "not trusted: never approved")
    record = approve_here()
    assert trust.describe(load()) == (True, f"approved {record.approved[:10]}")
    (project / ".start/config.toml").write_text(CONFIG.replace("v1", "v2"))
    assert trust.describe(load()) == (False, "not trusted: 1 file changed since approval")
    (project / ".start/a").write_text("")
    (project / ".start/b").write_text("")
    assert trust.describe(load()) == (
        False,
        "not trusted: 1 file changed, 2 added since approval",
    )
    assert trust.describe(load(use_project=False)) == (True, "project config ignored")
    monkeypatch.setenv("START_TRUSTED_PATHS", str(project))
    assert trust.describe(load()) == (True, "trusted by START_TRUSTED_PATHS")


def test_describe_a_copy_elsewhere(project: Path, tmp_path: Path) -> None:
    import shutil

    approve_here()
    other = tmp_path / "copy"
    shutil.copytree(project, other, symlinks=True)
    assert trust.describe(load(str(other))) == (False, "not trusted: never approved")


# --- self-edits -----------------------------------------------------------------------------


def test_self_edit_keeps_an_approved_project_approved(project: Path) -> None:
    approve_here()
    with trust.self_edit(str(project)):
        (project / ".start/config.toml").write_text(CONFIG.replace("v1", "v2"))
    assert trust.check(load()).trusted


def test_self_edit_leaves_an_unapproved_project_unapproved(project: Path) -> None:
    with trust.self_edit(str(project)):
        (project / ".start/config.toml").write_text(CONFIG.replace("v1", "v2"))
    assert not trust.check(load()).trusted


def test_self_edit_approves_a_start_dir_it_creates(isolated: Path) -> None:
    with trust.self_edit(str(isolated)):
        write_tree(isolated, {".start/config.toml": CONFIG})
    assert trust.check(load()).trusted


def test_self_edit_approves_nothing_when_the_edit_fails(project: Path) -> None:
    approve_here()
    with pytest.raises(RuntimeError), trust.self_edit(str(project)):
        (project / ".start/config.toml").write_text(CONFIG.replace("v1", "v2"))
        raise RuntimeError("edit failed")
    assert not trust.check(load()).trusted


def test_self_edit_does_not_approve_unsafe_files(project: Path) -> None:
    approve_here()
    with trust.self_edit(str(project)):
        path = project / ".start/config.toml"
        path.write_text(CONFIG.replace("v1", "v2"))
        path.chmod(0o666)
    path.chmod(0o644)
    assert not trust.check(load()).trusted


# --- project config cannot set trust --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "name"),
    [
        ('[settings]\ntrusted_paths = ["/"]\n', "settings.trusted_paths", "trusted_paths"),
        ('settings.trusted-paths = ["/"]\n', "settings.trusted-paths", "trusted-paths"),
        ('settings = { TrustedPaths = ["/"] }\n', "settings.TrustedPaths", "TrustedPaths"),
        ('START_TRUSTED_PATHS = "/"\n', "START_TRUSTED_PATHS", "START_TRUSTED_PATHS"),
        ('"trusted paths" = "/"\n', "trusted paths", "trusted paths"),
        ('[trust]\npaths = ["/"]\n', "trust", "trust"),
        ('[env]\nSTART_TRUSTED_PATHS = "/"\n', "env.START_TRUSTED_PATHS", "START_TRUSTED_PATHS"),
        ('[tasks.t]\nprompt = "p"\ntrusted = true\n', "tasks.t.trusted", "trusted"),
    ],
)
def test_trust_settings_in_project_config_are_ignored_with_a_warning(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, text: str, key: str, name: str
) -> None:
    write_tree(isolated, {".start/config.toml": text})
    config = load()
    path = isolated / ".start/config.toml"
    message = (
        f"{path}: {key}: '{name}' is a trust setting; trust cannot be set in project config, "
        "so it is ignored (use START_TRUSTED_PATHS or 'start trust')"
    )
    found = [p for p in config.problems if "trust setting" in p.message]
    assert [f"{p.where}: {p.detail}" for p in found] == [message]
    assert found[0].line is not None
    assert trust.describe(config) == (False, "not trusted: never approved")


def test_items_named_like_trust_are_not_settings(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": '[tasks.trust-check]\nprompt = "p"\n'})
    config = load()
    assert "trust-check" in config.tasks
    assert config.problems == ()


def test_self_edit_does_not_approve_a_start_dir_that_held_unapproved_files(isolated: Path) -> None:
    write_tree(isolated, {".start/notes.md": "planted"})
    with trust.self_edit(str(isolated)):
        write_tree(isolated, {".start/config.toml": CONFIG})
    assert not trust.check(load()).trusted


def test_self_edit_approves_an_empty_start_dir(isolated: Path) -> None:
    (isolated / ".start").mkdir()
    with trust.self_edit(str(isolated)):
        write_tree(isolated, {".start/config.toml": CONFIG})
    assert trust.check(load()).trusted


def test_the_prompt_is_built_from_the_approved_role_bytes(project: Path) -> None:
    from start.compose import resolve, sources
    from start.compose.ask import Ask

    write_tree(
        project,
        {".start/agents.toml": '[agents.a]\nbin = "a"\ncommand = "{bin} {prompt}"\n'},
    )
    read = reader(project)
    config = load()
    (project / "roles/r.md").write_text("CHANGED AFTER APPROVAL\n")
    request = Ask(role="r", prompt="hi")
    plan = resolve.plan(config, request, which=lambda name: "/bin/a")
    composition = sources.compose(config, plan, "2026-01-01", read)
    assert composition.role is not None and composition.role.text == "ROLE v1\n"


# --- settings.trusted_paths in the user's own config ---------------------------------------


def test_global_trusted_paths_grant_trust(project: Path) -> None:
    global_dir = project.parent / "home" / ".config" / "start"
    assert trust.check(load()).trusted is False
    write_tree(global_dir, {"config.toml": f'[settings]\ntrusted_paths = ["{project.parent}"]\n'})
    verdict = trust.check(load())
    assert verdict.trusted is True
    assert verdict.reason == f"trusted by settings.trusted_paths in {global_dir / 'config.toml'}"


def test_global_trusted_paths_expand_home(project: Path) -> None:
    home = project.parent / "home"
    inside = home / "work" / "repo"
    write_tree(inside, {".start/config.toml": CONFIG})
    write_tree(
        home / ".config" / "start", {"config.toml": '[settings]\ntrusted_paths = ["~/work"]\n'}
    )
    assert trust.check(load(str(inside))).trusted is True
    assert trust.check(load(str(project))).trusted is False


def test_project_trusted_paths_never_count(project: Path) -> None:
    write_tree(project, {".start/tasks.toml": f'[settings]\ntrusted_paths = ["{project}"]\n'})
    config = load()
    assert config.settings.trusted_paths == ()
    assert trust.check(config).trusted is False


def test_trusted_paths_must_be_absolute(project: Path) -> None:
    global_dir = project.parent / "home" / ".config" / "start"
    write_tree(global_dir, {"config.toml": '[settings]\ntrusted_paths = ["work"]\n'})
    [problem] = [p for p in load().problems if p.key == "settings.trusted_paths"]
    assert str(problem) == (
        f"{global_dir / 'config.toml'}:2:1: settings.trusted_paths: must be an array of absolute "
        "paths; 'work' is relative"
    )
