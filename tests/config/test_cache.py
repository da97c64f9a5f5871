"""The validated-config cache: same bytes, same config; any change, a fresh load."""

from __future__ import annotations

from pathlib import Path

import pytest

from start import paths
from start.config import cache
from start.config.load import load
from tests.conftest import write_tree


@pytest.fixture
def global_dir(isolated: Path) -> Path:
    directory = isolated.parent / "home" / ".config" / "start"
    write_tree(
        directory,
        {
            "config.toml": '[settings]\ncommand_timeout = 7\n[tasks.t]\nprompt = "{banana}"\nalias = "x"\n',
            "agents.toml": '[agents.a]\nbin = "a"\ncommand = "{bin} {prompt}"\n[agents.a.models]\nm = "m-1"\n',
        },
    )
    return directory


def cache_files() -> list[Path]:
    return sorted(paths.cache_dir().glob("config-*.bin"))


def test_second_load_comes_from_the_cache_and_is_equal(global_dir: Path) -> None:
    first = load()
    assert len(cache_files()) == 1
    second = load()
    assert second == first
    assert second.tasks["t"].origin == first.tasks["t"].origin
    assert [str(p) for p in second.problems] == [str(p) for p in first.problems]
    assert second.settings.origins == first.settings.origins


def test_any_byte_change_is_a_new_key(global_dir: Path) -> None:
    load()
    (global_dir / "config.toml").write_text("[settings]\ncommand_timeout = 8\n")
    assert load().settings.command_timeout == 8
    assert len(cache_files()) == 2


def test_a_stray_file_is_part_of_the_key(global_dir: Path) -> None:
    assert not load().problems[1:]
    (global_dir / "task.toml").write_text("")
    assert any("file is not read" in p.message for p in load().problems)


def test_corrupt_cache_is_ignored(global_dir: Path) -> None:
    expected = load()
    for path in cache_files():
        path.write_bytes(b"\x00garbage")
    assert load() == expected


def test_cached_config_gets_the_current_project_location(global_dir: Path, tmp_path: Path) -> None:
    load()
    other = tmp_path / "elsewhere"
    other.mkdir()
    config = load(other)
    assert config.project.workdir == other
    assert config.root == other


def test_edits_validated_with_replaced_bytes_bypass_the_cache(global_dir: Path) -> None:
    load()
    before = cache_files()
    config = load(replaced={global_dir / "config.toml": b"[settings]\ncommand_timeout = 99\n"})
    assert config.settings.command_timeout == 99
    assert cache_files() == before
    assert load().settings.command_timeout == 7


def test_key_depends_on_contents() -> None:
    dirs = {"global": Path("/g")}
    one = cache.key(("global",), dirs, {Path("/g/config.toml"): b"a"}, [])
    two = cache.key(("global",), dirs, {Path("/g/config.toml"): b"b"}, [])
    assert one != two
