"""The project root is a wall: symlinks, spellings and races never carry unapproved bytes into a
prompt, and project config edits never write outside the project (issue 9)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from start import trust
from start.base import fs
from start.base.wall import Reader, WallError, classify
from start.compose import resolve, sources
from start.compose.ask import Ask
from start.config.load import load
from start.trust.scan import FILE_LIMIT, MAX_DEPTH, MAX_ENTRIES
from tests.conftest import FAKE_AGENT, git, run_start, write_tree

CANARY = "CANARY-aws-secret-7f3e"

AGENT = f"""\
[settings]
default_agent = "fake"
default_role = "plain"

[agents.fake]
bin = "{FAKE_AGENT}"
command = "{{bin}} {{prompt}}"

[roles.plain]
prompt = "be plain"
"""


class World:
    """An upstream repository, a clone of it (the project), a canary secret and a fake agent."""

    def __init__(self, base: Path) -> None:
        self.home = base / "home"
        self.secret = self.home / ".aws" / "credentials"
        self.secret.parent.mkdir(parents=True)
        self.secret.write_text(CANARY + "\n")
        write_tree(self.home / ".config" / "start", {"config.toml": AGENT})
        self.upstream = base / "upstream"
        self.upstream.mkdir()
        git(self.upstream, "init", "-q", "-b", "main")
        self.clone = self.home / "src" / "clone"
        self.record = base / "record.json"

    def publish(self, files: dict[str, str], message: str = "change") -> None:
        write_tree(self.upstream, files)
        git(self.upstream, "add", "-A")
        git(self.upstream, "commit", "-q", "-m", message)

    def link_upstream(self, name: str, target: str) -> None:
        path = self.upstream / name
        path.unlink(missing_ok=True)
        path.symlink_to(target)
        git(self.upstream, "add", "-A")
        git(self.upstream, "commit", "-q", "-m", f"{name} -> {target}")

    def start(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {"HOME": str(self.home), "FAKE_AGENT_RECORD": str(self.record)}
        return run_start(*args, cwd=self.clone, env=env, stdin=stdin)

    def agent_record(self) -> dict[str, Any] | None:
        if not self.record.exists():
            return None
        data: dict[str, Any] = json.loads(self.record.read_text())
        self.record.unlink()
        return data

    def assert_no_canary(self, *outputs: str) -> None:
        for output in outputs:
            assert CANARY not in output
        record = self.agent_record()
        assert record is None or CANARY not in json.dumps(record)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_a_pulled_symlink_to_a_secret_never_reaches_the_prompt(world: World) -> None:
    world.publish({"AGENTS.md": "Use tabs.\n", "README.md": "hi\n"})
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    added = world.start(
        "config", "add", "context", "guide", "--project", "--file", "AGENTS.md", "--required"
    )
    assert added.returncode == 0, added.stderr
    assert world.start("trust", "--yes").returncode == 0
    first = world.start("prompt", "hi")
    assert first.returncode == 0, first.stderr
    record = world.agent_record()
    assert record is not None and "Use tabs." in record["argv"][-1]

    # Upstream swaps AGENTS.md for a symlink that climbs out of the clone to the secret.
    world.link_upstream("AGENTS.md", "../../.aws/credentials")
    git(world.clone, "pull", "-q", "--no-rebase")
    assert (world.clone / "AGENTS.md").read_text() == CANARY + "\n"  # the trap is set

    result = world.start("prompt", "hi")
    assert result.returncode == 5
    assert result.stderr == (
        f"start: {world.clone}/.start is not trusted (1 more file outside the project root since approval); "
        "run 'start trust' to review it\n"
    )
    world.assert_no_canary(result.stdout, result.stderr)
    shown = world.start("trust", "--show")
    assert f"{world.clone}/AGENTS.md -> {world.secret}" in shown.stdout
    assert "(outside project root)" in shown.stdout
    world.assert_no_canary(shown.stdout, shown.stderr)


def test_a_pulled_symlink_in_a_project_role_file_asks_again(world: World) -> None:
    world.publish(
        {
            "ROLE.md": "be kind\n",
            ".start/config.toml": '[roles.team]\nfile = "ROLE.md"\n[settings]\n'
            'default_role = "team"\n',
        }
    )
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    assert world.start("trust", "--yes").returncode == 0
    assert world.start("prompt", "hi").returncode == 0
    world.agent_record()
    world.link_upstream("ROLE.md", "../../.aws/credentials")
    git(world.clone, "pull", "-q", "--no-rebase")
    result = world.start("prompt", "hi")
    assert result.returncode == 5
    world.assert_no_canary(result.stdout, result.stderr)


def test_a_users_relative_context_cannot_be_led_outside_by_the_repository(
    world: World,
) -> None:
    """A global context `file = "AGENTS.md"` reads the project's file; a repository that makes it a
    symlink to a secret gets exit 5, not the secret."""
    config = world.home / ".config" / "start" / "config.toml"
    config.write_text(
        config.read_text() + '\n[contexts.guide]\nfile = "AGENTS.md"\nrequired = true\n'
    )
    world.publish({"README.md": "x\n"})
    world.link_upstream("AGENTS.md", "../../.aws/credentials")
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    result = world.start("prompt", "hi")
    assert result.returncode == 5
    assert result.stderr == (
        f"start: {world.clone}/AGENTS.md leads outside the project root (to {world.secret}) "
        "through a symlink; start does not follow it. Name the file by its real path in your "
        "config if you mean it.\n"
    )
    world.assert_no_canary(result.stdout, result.stderr)


@pytest.mark.parametrize("how", ["-c", "-r", "task"])
def test_a_symlinked_spelling_of_the_project_does_not_get_past_the_wall(
    world: World, how: str
) -> None:
    """`$PWD/AGENTS.md` after a `cd` through a link, or a symlinked `~/work`: the file is still in
    the project, and a link in the repository still cannot lead it to a secret."""
    world.publish({"README.md": "x\n"})
    world.link_upstream("AGENTS.md", "../../.aws/credentials")
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    work = world.home / "work"
    work.symlink_to(world.clone.parent)
    spelled = f"{work}/clone/AGENTS.md"
    args = ["task", spelled] if how == "task" else ["prompt", how, spelled, "hi"]
    result = world.start(*args)
    assert (result.returncode, result.stdout) == (5, "")
    assert result.stderr == (
        f"start: {spelled} leads outside the project root (to {world.secret}) through a "
        "symlink; start does not follow it. Name the file by its real path if you mean it.\n"
    )
    world.assert_no_canary(result.stdout, result.stderr)


def test_a_file_outside_the_project_is_read_as_named_however_it_is_spelled(
    world: World,
) -> None:
    notes = world.home / "notes.md"
    notes.write_text("my notes\n")
    world.publish({"README.md": "x\n"})
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    (world.home / "work").symlink_to(world.home)
    for spelled in (str(notes), f"{world.home}/work/notes.md", f"{world.clone}/../../notes.md"):
        assert world.start("prompt", "-c", spelled, "hi").returncode == 0
        record = world.agent_record()
        assert record is not None and "my notes" in record["argv"][-1]


def test_through_finds_the_root_under_any_spelling(tmp_path: Path) -> None:
    from start.base.wall import through

    root = tmp_path / "real" / "proj"
    root.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    real_root = str(root)
    assert through(f"{root}/a/b.md", real_root)
    assert through(f"{tmp_path}/link/proj/a.md", real_root)
    assert not through(f"{tmp_path}/link/other.md", real_root)
    assert not through(f"{root}/../other.md", real_root)
    assert not through("/", real_root)


def test_an_approved_outside_file_is_read_and_a_moved_target_asks_again(world: World) -> None:
    notes = world.home / "notes.md"
    notes.write_text("my notes\n")
    other = world.home / "other.md"
    other.write_text(CANARY)
    world.publish(
        {".start/config.toml": '[contexts.notes]\nfile = "~/notes.md"\nrequired = true\n'}
    )
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    shown = world.start("trust", "--show")
    assert f"contexts.notes.file  {notes}  (outside project root)" in shown.stdout
    assert "my notes" not in shown.stdout  # never read before approval
    assert world.start("trust", "--yes").returncode == 0
    assert world.start("prompt", "hi").returncode == 0
    record = world.agent_record()
    assert record is not None and "my notes" in record["argv"][-1]
    notes.unlink()
    notes.symlink_to(other)
    result = world.start("prompt", "hi")
    assert result.returncode == 5
    world.assert_no_canary(result.stdout, result.stderr)


# --- every byte under .start/, whatever the spelling ---------------------------------------


def approved_grant(project: Path) -> trust.Grant:
    found = trust.scan(load())
    assert found is not None
    trust.approve(found)
    grant, _ = trust.grant(load())
    assert grant is not None
    return grant


def compose_task(project: Path, grant: trust.Grant) -> str:
    config = load()
    request = Ask("task", task="t", no_role=True)
    plan = resolve.plan(config, request, which=lambda name: "/bin/true")
    reader = Reader(config.root, grant)
    return sources.compose(config, plan, "2026-01-01", reader).prompt


def test_a_task_file_through_a_directory_symlink_is_covered(isolated: Path) -> None:
    write_tree(
        isolated,
        {
            ".start/config.toml": '[tasks.t]\nfile = ".start/d/task.md"\n',
            "docs/task.md": "approved text\n",
        },
    )
    (isolated / ".start/d").symlink_to("../docs")
    grant = approved_grant(isolated)
    (isolated / "docs/task.md").write_text("CHANGED after approval\n")
    assert compose_task(isolated, grant) == "approved text\n"
    verdict = trust.check(load())
    assert (verdict.trusted, verdict.reason) == (
        False,
        "not trusted: 1 file changed since approval",
    )


@pytest.mark.parametrize(
    "spelling", [".start/../.start/task.md", ".start//task.md", "./.start/./task.md"]
)
def test_odd_spellings_of_a_start_file_use_the_approved_bytes(
    isolated: Path, spelling: str
) -> None:
    write_tree(
        isolated,
        {".start/config.toml": f'[tasks.t]\nfile = "{spelling}"\n', ".start/task.md": "ok\n"},
    )
    grant = approved_grant(isolated)
    (isolated / ".start/task.md").write_text("UNAPPROVED\n")
    assert compose_task(isolated, grant) == "ok\n"


def test_a_file_added_under_start_after_approval_is_refused(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": '[tasks.t]\nfile = ".start/task.md"\n'})
    grant = approved_grant(isolated)  # approved while task.md does not exist
    write_tree(isolated, {".start/task.md": "UNAPPROVED\n"})
    reader = Reader(str(isolated), grant)
    with pytest.raises(fs.FileError) as caught:
        reader.read(str(isolated / ".start/task.md"), layer="project", relative=True)
    assert caught.value.missing


# Races a writer against many real launches for seconds (make check).
@pytest.mark.slow
def test_a_concurrent_writer_never_gets_unapproved_bytes_to_the_agent(
    isolated: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    write_tree(home / ".config" / "start", {"config.toml": AGENT})
    write_tree(
        isolated,
        {
            ".start/config.toml": '[tasks.t]\nfile = ".start/../.start/task.md"\n',
            ".start/task.md": "APPROVED\n",
        },
    )
    env = {"HOME": str(home), "FAKE_AGENT_RECORD": str(tmp_path / "record.json")}
    assert run_start("trust", "--yes", cwd=isolated, env=env).returncode == 0
    stop = threading.Event()

    def writer() -> None:
        flip = False
        while not stop.is_set():
            (isolated / ".start/task.md").write_text("EVIL\n" if flip else "APPROVED\n")
            flip = not flip

    thread = threading.Thread(target=writer)
    thread.start()
    outcomes = []
    try:
        for _ in range(12):
            result = run_start("task", "t", cwd=isolated, env=env)
            outcomes.append(result.returncode)
            assert result.returncode in (0, 5), result.stderr
            record = tmp_path / "record.json"
            if result.returncode == 0:
                assert "EVIL" not in record.read_text()
                record.unlink()
    finally:
        stop.set()
        thread.join()
    assert 0 in outcomes or 5 in outcomes


# --- classify -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelled", "real", "where"),
    [
        ("/p/.start/a.md", "/p/.start/a.md", "start"),
        ("/p/.start/d/a.md", "/p/docs/a.md", "start"),
        ("/p/.start/../.start/a.md", "/p/.start/a.md", "start"),
        ("/p/.start/x", "/home/u/.aws/credentials", "outside"),
        ("/p/AGENTS.md", "/p/AGENTS.md", "inside"),
        ("/p/AGENTS.md", "/p/.start/a.md", "start"),
        ("/p/AGENTS.md", "/home/u/.aws/credentials", "outside"),
        ("/p/../q/x.md", "/q/x.md", "outside"),
    ],
)
def test_classify(spelled: str, real: str, where: str) -> None:
    assert classify(spelled, real, "/p", "/p/.start") == where


def test_a_repository_file_that_turns_into_a_link_outside_is_refused_at_read(
    isolated: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.write_text(CANARY)
    write_tree(
        isolated, {".start/config.toml": '[tasks.t]\nfile = "docs/t.md"\n', "docs/t.md": "x"}
    )
    grant = approved_grant(isolated)
    (isolated / "docs/t.md").unlink()
    (isolated / "docs/t.md").symlink_to(secret)  # after the scan: the race the wall closes
    with pytest.raises(WallError) as caught:
        Reader(str(isolated), grant).read(
            str(isolated / "docs/t.md"), layer="project", relative=True
        )
    assert str(caught.value) == (
        f"{isolated}/docs/t.md resolves to {secret}, outside the project root, and the approval "
        "does not cover it; run 'start trust' to review it"
    )
    assert caught.value.exit_code == 5


# --- edits stay inside the project ----------------------------------------------------------


def test_a_config_edit_never_writes_through_a_link_outside(isolated: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "cargo.toml"
    outside.parent.mkdir()
    outside.write_text("[package]\nname = 'x'\n")
    (isolated / ".start").mkdir()
    (isolated / ".start/config.toml").symlink_to(outside)
    result = run_start("config", "set", "--project", "default_role", "x", cwd=isolated)
    assert result.returncode == 1
    assert result.stderr == (
        f"start: refused to write {isolated}/.start/config.toml: it leads to {outside}, outside "
        f"the project root {isolated}, through a symlink. Replace the symlink with a regular "
        f"file, or edit {outside} yourself.\n"
    )
    assert outside.read_text() == "[package]\nname = 'x'\n"


def test_a_dangling_link_never_creates_a_file_outside(isolated: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "new.toml"
    (isolated / ".start").mkdir()
    (isolated / ".start/config.toml").symlink_to(outside)
    result = run_start("config", "add", "task", "x", "--project", "--prompt", "hello", cwd=isolated)
    assert result.returncode == 1
    assert f"it leads to {outside}, outside the project root" in result.stderr
    assert not outside.exists() and not outside.parent.exists()


def test_a_start_dir_linked_outside_is_not_written(isolated: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (isolated / ".start").symlink_to(elsewhere)
    (isolated / ".git").mkdir()
    for args in (
        ("init", "--project", "--force"),
        ("config", "set", "--project", "default_role", "x"),
    ):
        result = run_start(*args, cwd=isolated)
        assert result.returncode == 1, result.stderr
        assert "outside the project root" in result.stderr
    assert list(elsewhere.iterdir()) == []


# --- bounded scans --------------------------------------------------------------------------


def test_a_huge_file_under_start_is_refused(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": "[tasks.t]\nprompt = 'x'\n"})
    with open(isolated / ".start/big.bin", "wb") as handle:
        handle.truncate(FILE_LIMIT + 1)
    result = run_start("task", "t", cwd=isolated)
    assert result.returncode == 5
    assert result.stderr == (
        f"start: {isolated}/.start/big.bin is 1,048,577 bytes; start covers files of at most "
        "1,048,576 bytes in a project's config. Move it out of .start/, or run with --no-project\n"
    )


def test_a_deep_start_tree_is_refused_cleanly(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": "[tasks.t]\nprompt = 'x'\n"})
    deep = isolated / ".start"
    for _ in range(MAX_DEPTH + 2):
        deep = deep / "d"
    deep.mkdir(parents=True)
    result = run_start("task", "t", cwd=isolated)
    assert result.returncode == 5
    assert "is nested more than 16 directories deep" in result.stderr


def test_a_crowded_start_tree_is_refused_cleanly(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": "[tasks.t]\nprompt = 'x'\n"})
    for index in range(MAX_ENTRIES + 1):
        (isolated / ".start" / f"f{index}").touch()
    result = run_start("trust", "--show", cwd=isolated)
    assert result.returncode == 5
    assert "holds more than 1000 files and directories" in result.stderr


def test_start_temp_files_do_not_untrust(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": "[tasks.t]\nprompt = 'x'\n"})
    approved_grant(isolated)
    (isolated / ".start/.config.toml.0123abcd.tmp").write_text("half a write")
    assert trust.check(load()).trusted
