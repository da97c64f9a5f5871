"""The validated-config cache: a hit skips parsing; anything that could change the result misses.

Hits are observed, not assumed: the `parsed` fixture records every layer `load` parses from
source, so a load served from the cache parses nothing.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from start import trust
from start.base import atomic, fs, paths
from start.base.record import Record
from start.config import cache
from start.config import load as load_module
from start.config.load import load
from start.config.model import (
    RECORDS,
    Config,
    Origin,
    Output,
    Param,
    Settings,
    column,
    of_layer,
)
from tests.conftest import FAKE_AGENT, REPO, invoke, run_start, write_tree

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import scenarios  # noqa: E402

ALL_LAYERS = ["built-in", "global", "project"]
# What a load parses when the merged entry misses and the built-in layer's own entry hits.
UNSHIPPED_LAYERS = ["global", "project"]

# Every field type the cache stores: strings, booleans, positive integers, a models table and
# trusted paths; problems with and without a line, a suggestion and a file.
CONFIG = """\
[settings]
command_timeout = 7
command_output_limit = 2048
trusted_paths = ["/srv/trusted", "~/work"]
default_agent = "a"
default_role = "r"

[roles.r]
description = "Brief"
prompt = "Be brief."

[contexts.c]
file = "notes.md"
prompt = "{file_contents}"
required = true
command_timeout = 3

[tasks.t]
prompt = "{banana}"
alias = "x"
role = "r"
agent = "a"
model = "m"
internal = true

[tasks.t.params]
focus = { default = "x", description = "What" }
depth = {}

[tasks.j]
prompt = "x"
output = "json"

[tasks.s]
prompt = "x"
output = { schema = { type = "object", required = ["a"], properties = { a = { minimum = 1.5 } } } }

[tasks.f]
prompt = "x"
output = { schema = "s.json" }
"""
AGENTS = """\
[agents.a]
bin = "a"
command = "{bin} --model {model} {prompt}"
print_command = "{bin} -p {prompt}"
print_output = "text"
print_permissions = { read-only = "" }
print_schema = "--json-schema {schema}"
default_model = "m"
url = "https://example.com/a"

[agents.a.models]
m = "m-1"
big = "m-2"
"""


@pytest.fixture
def global_dir(isolated: Path) -> Path:
    directory = isolated.parent / "home" / ".config" / "start"
    write_tree(
        directory, {"config.toml": CONFIG, "agents.toml": AGENTS, "s.json": '{"type": "array"}'}
    )
    return directory


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The layers `load` parses from source, in order; a load served from the cache adds none."""
    layers: list[str] = []
    parse = load_module._read_layer

    def recorded(name: str, *args: Any) -> Any:
        layers.append(name)
        return parse(name, *args)

    monkeypatch.setattr(load_module, "_read_layer", recorded)
    return layers


def cache_files() -> list[Path]:
    return sorted(Path(cache.directory()).glob("config-*.bin"))


def entry() -> Path:
    (found,) = cache_files()
    return found


def layer_entry() -> Path:
    """The built-in layer's own entry."""
    (found,) = Path(cache.directory()).glob("layer-*.bin")
    return found


def overwrite(path: Path, data: bytes) -> None:
    """Write `data` over an entry, as only `start` (or the user) can: only its shape counts."""
    path.write_bytes(data)


def split_entry(raw: bytes) -> tuple[bytes, bytes]:
    """An entry's key and its marshal data (`cache.pack` in reverse)."""
    length, _, rest = raw.partition(b"|")
    return rest[: int(length)], rest[int(length) :]


def read_entry(path: Path) -> dict[str, Any]:
    """An entry's payload, with its key as `key`."""
    key, payload = split_entry(path.read_bytes())
    data: dict[str, Any] = {"key": key, **marshal.loads(payload)}
    return data


def entry_bytes(data: dict[str, Any]) -> bytes:
    """The bytes of an entry that `read_entry` read as `data`."""
    payload = dict(data)
    return cache.pack(payload.pop("key"), payload)


def same(one: Config, other: Config) -> None:
    """Equal configs, down to what `==` on records does not compare."""
    assert one == other
    assert [str(p) for p in one.problems] == [str(p) for p in other.problems]
    for kind in ("agents", "roles", "contexts", "tasks"):
        mine, theirs = getattr(one, kind), getattr(other, kind)
        assert list(mine) == list(theirs)
        assert [i.origin for i in mine.values()] == [i.origin for i in theirs.values()]
    assert one.settings.origins == other.settings.origins


# --- hits ----------------------------------------------------------------------------------


def test_the_second_load_is_served_from_the_cache(global_dir: Path, parsed: list[str]) -> None:
    first = load()
    assert parsed == ALL_LAYERS
    assert len(cache_files()) == 1

    parsed.clear()
    second = load()

    assert parsed == []
    same(second, first)
    assert second.settings.trusted_paths == ("/srv/trusted", "~/work")
    assert second.agents["a"].models == {"m": "m-1", "big": "m-2"}
    assert second.contexts["c"].required is True
    assert second.tasks["t"].internal is True
    assert second.tasks["t"].params == (Param("focus", "x", "What"), Param("depth"))
    assert second.agents["a"].print_schema == "--json-schema {schema}"
    assert (second.tasks["t"].output, second.tasks["j"].output) == (None, Output("json"))
    assert second.tasks["f"].output == Output("schema", schema_file="s.json")
    schema = '{"type": "object", "required": ["a"], "properties": {"a": {"minimum": 1.5}}}'
    assert second.tasks["s"].output == Output("schema", schema=schema)
    assert second.problems  # the unknown placeholder, stored and given back


def test_a_hit_is_equal_to_a_fresh_load_with_every_problem_kind(
    global_dir: Path, parsed: list[str]
) -> None:
    # A syntax error (a line and column), a stray file (a suggestion) and an unknown placeholder.
    (global_dir / "roles.toml").write_text("[roles.q]\nprompt = \n")
    (global_dir / "task.toml").write_text("")
    first = load()
    assert {p.line is not None for p in first.problems} == {True, False}
    assert any(p.suggestion for p in first.problems)
    parsed.clear()

    same(load(), first)
    assert parsed == []


@pytest.fixture
def large_config(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's large config (benchmarks/scenarios.py) as the global layer."""
    root = isolated.parent / "bench"
    world = scenarios.World(root, isolated, root / "configs", root / "home", root / "run")
    scenarios.large(world)
    monkeypatch.setenv("START_CONFIG_DIR", str(world.config("large")))


@pytest.mark.usefixtures("large_config")
def test_the_large_benchmark_config_is_served_from_the_cache(parsed: list[str]) -> None:
    # The warm benchmark rows rely on it: a value the cache refused would make them cold.
    first = load()
    assert len(first.tasks) > 1000  # and the built-in ones
    assert not first.problems
    parsed.clear()

    same(load(), first)
    assert parsed == []


def decoded_by(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The items a cached config decodes from here on, as `KIND NAME`, in order."""
    decoded: list[str] = []
    item = cache._item

    def counted(cls: type[Record], *args: Any) -> Any:
        decoded.append(f"{cls.__name__} {args[2]}")
        return item(cls, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(cache, "_item", counted)
    return decoded


def walk(config: Config) -> None:
    """Use every item of `config`, as listings and `config show` do."""
    for section in RECORDS:
        list(getattr(config, section).values())


@pytest.mark.usefixtures("large_config")
def test_a_hit_decodes_an_item_when_it_is_first_used(
    monkeypatch: pytest.MonkeyPatch, parsed: list[str]
) -> None:
    # What makes a warm launch of a large config cost what a small one does: `cache.get` reads
    # the entry's index of names, and each item is decoded when it is first used, then kept.
    first = load()
    parsed.clear()
    decoded = decoded_by(monkeypatch)

    second = load()
    names = [len(getattr(second, section)) for section in RECORDS]
    assert "task-0500" in second.tasks
    assert (decoded, names) == ([], [len(getattr(first, section)) for section in RECORDS])

    assert second.tasks["task-0500"] == first.tasks["task-0500"]
    assert second.tasks["task-0500"] is second.tasks["task-0500"]
    assert decoded == ["Task task-0500"]
    same(second, first)
    assert len(decoded) == sum(names) > 1330
    assert parsed == []


@pytest.mark.usefixtures("large_config")
def test_the_index_and_the_layers_hold_what_the_items_hold(
    monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    # What a launch chooses by without decoding (a task's alias, a context's required, an
    # imported task, the items of a layer) is what a parsed config says, in the same order.
    write_tree(isolated, {".claude/commands/c.md": "Do c.\n", ".start/config.toml": CONFIG})
    found = trust.scan(load())
    assert found is not None
    trust.approve(found)
    fresh = load(use_cache=False)
    decoded = decoded_by(monkeypatch)
    cached = load()
    checked = [("tasks", "alias"), ("contexts", "required")]
    checked += [(section, "file") for section in ("roles", "contexts", "tasks")]
    for section, field in checked:
        assert list(column(getattr(cached, section), field).items()) == list(
            column(getattr(fresh, section), field).items()
        )
    for section in RECORDS:
        for layer in ["built-in", "imported", "global", "project"]:
            items = of_layer(getattr(cached, section), layer)
            assert items == of_layer(getattr(fresh, section), layer), (section, layer)
    assert {"Task t", "Task claude:c", "Task task-0500"} <= {*decoded}
    assert len(decoded) == sum(len(getattr(fresh, section)) for section in RECORDS)
    assert column(fresh.tasks, "alias")["task-0501"] == "t501"
    assert column(fresh.tasks, "file")["task-0502"] == "docs/notes.md"
    assert column(fresh.contexts, "file")["c"] == "notes.md"
    assert [t.name for t in of_layer(fresh.tasks, "project")] == ["claude:c", "t", "j", "s", "f"]
    assert list(column(fresh.tasks, "imported")) == ["claude:c"]


LAUNCH = """
import os, runpy, sys
from start.config import cache
decoded = []
item = cache._item
def counted(cls, *args):
    decoded.append(f"{cls.__name__} {args[2]}")
    return item(cls, *args)
cache._item = counted
def report(binary, argv, env):
    print(*sorted(decoded), sep="\\n", flush=True)
    os._exit(0)
os.execve = report
sys.argv = ["start", *sys.argv[1:]]
runpy.run_module("start", run_name="__main__", alter_sys=True)
"""
REQUIRED = [f"Context ctx-{i:03d}" for i in range(0, 200, 20)]


@pytest.mark.usefixtures("large_config")
@pytest.mark.parametrize(
    ("args", "used"),
    [
        (("-q", "task", "task-0500", "x"), ["Task task-0500", "Role role-000"]),
        (("task", "task-0500", "x"), ["Task task-0500", "Role role-000"]),  # with the summary
        # An alias; the task has no role, so the first role defined (a shipped one) is decoded.
        (("-q", "task", "t509", "x"), ["Task task-0509", "Role pair-programmer"]),
        (("-q", "prompt", "-c", "ctx-002", "x"), ["Context ctx-002", "Role pair-programmer"]),
    ],
)
def test_a_warm_launch_of_a_large_config_decodes_only_the_items_it_uses(
    isolated: Path, args: tuple[str, ...], used: list[str]
) -> None:
    # A real launch, to its exec, of the benchmark's large config (1,000 tasks, 200 contexts, 100
    # roles, 30 agents): the second one, served from the cache, decodes its task, its role, its
    # agent and its contexts, and nothing else.
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", LAUNCH, *args]
    for _ in range(2):
        proc = subprocess.run(command, cwd=isolated, env=env, capture_output=True, text=True)
        assert (proc.returncode, proc.stderr if "-q" in args else "") == (0, ""), proc.stderr
    assert proc.stdout.splitlines() == sorted([*used, "Agent stand-in", *REQUIRED])


def test_a_warm_launch_in_a_trusted_project_decodes_only_the_items_it_uses(
    isolated: Path,
) -> None:
    # The benchmark's large config as an approved project's `.start/` (row 2d): trust finds the
    # files that 308 of its items name in the entry's index, and decodes none of them; the
    # launch decodes what it does when the config is the user's.
    root = isolated.parent / "bench"
    world = scenarios.World(root, isolated, root / "configs", root / "home", root / "run")
    scenarios.large(world, isolated / ".start", isolated)
    assert run_start("trust", "--yes", cwd=isolated).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", LAUNCH, "-q", "task", "task-0500", "x"]
    for _ in range(2):
        proc = subprocess.run(command, cwd=isolated, env=env, capture_output=True, text=True)
        assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines() == sorted(
        ["Task task-0500", "Role role-000", "Agent stand-in", *REQUIRED]
    )


def test_the_cached_config_gets_the_current_project_location(
    global_dir: Path, tmp_path: Path, parsed: list[str]
) -> None:
    load()
    other = tmp_path / "elsewhere"
    other.mkdir()
    parsed.clear()

    config = load(str(other))

    assert parsed == []
    assert config.project.workdir == str(other)
    assert config.root == str(other)


def shipped_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped config as the built-in layer, to change."""
    copy = tmp_path / "builtin"
    shutil.copytree(paths.builtin_config_dir(), copy)
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(copy))
    return copy


def test_an_edit_parses_only_the_layers_that_can_change(
    global_dir: Path, parsed: list[str]
) -> None:
    load()
    path = global_dir / "config.toml"
    path.write_text(CONFIG.replace("Brief", "Short"), encoding="utf-8")
    parsed.clear()

    edited = load()

    assert parsed == UNSHIPPED_LAYERS  # the built-in layer from its own entry
    assert edited.roles["r"].description == "Short"
    parsed.clear()
    same(edited, load(use_cache=False))
    assert parsed == ALL_LAYERS


def test_the_built_in_entry_gives_back_its_problems_and_settings(
    global_dir: Path, parsed: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = shipped_copy(tmp_path, monkeypatch)
    (shipped / "agent.toml").write_text("")  # a stray file: a warning of the built-in layer
    with (shipped / "roles.toml").open("a", encoding="utf-8") as stream:
        stream.write('\n[settings]\ntrusted_paths = ["/shipped"]\ncommand_timeout = 9\n')
    (global_dir / "config.toml").write_text(CONFIG.replace("command_timeout = 7\n", ""))
    first = load()
    assert parsed == ALL_LAYERS
    (global_dir / "config.toml").write_text(
        CONFIG.replace("command_timeout = 7\n", "") + "# edited\n"
    )
    parsed.clear()

    edited = load()

    assert parsed == UNSHIPPED_LAYERS
    same(edited, first)
    assert edited.settings.command_timeout == 9
    assert edited.settings.origins["command_timeout"] == Origin(
        "built-in", str(shipped / "roles.toml")
    )
    assert edited.settings.trusted_paths == ("/srv/trusted", "~/work")  # the global layer's
    stray = [p for p in edited.problems if p.file == str(shipped / "agent.toml")]
    assert [p.severity for p in stray] == ["warning"]


def test_a_changed_shipped_file_misses_the_built_in_entry(
    global_dir: Path, parsed: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = shipped_copy(tmp_path, monkeypatch)
    agents = shipped / "agents.toml"
    text = agents.read_text(encoding="utf-8")
    assert 'description = "' in text
    load()

    agents.write_text(text.replace('description = "', 'description = "Changed. ', 1))
    parsed.clear()
    config = load()

    assert parsed == ALL_LAYERS
    assert any((a.description or "").startswith("Changed. ") for a in config.agents.values())
    assert len(list(Path(cache.directory()).glob("layer-*.bin"))) == 1  # replaced


def test_a_load_from_the_cache_reads_no_shipped_file(
    global_dir: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # They are package data, keyed by size and mtime as the code is.
    load()
    read: list[str] = []
    real = fs.read

    def watched(path: str, *args: Any, **kwargs: Any) -> fs.Read:
        read.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(fs, "read", watched)
    load()
    assert parsed == ALL_LAYERS  # the first load's; the second parsed nothing
    shipped = paths.builtin_config_dir()
    assert [path for path in read if path.startswith(shipped)] == []
    assert str(global_dir / "config.toml") in read


def test_a_touched_shipped_file_misses_the_merged_entry(
    global_dir: Path, parsed: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The merged key has the shipped files' size and mtime; the built-in layer's entry, made on
    # a miss, when they are read, has their bytes, which a touch leaves as they were.
    shipped = shipped_copy(tmp_path, monkeypatch)
    load()
    roles = shipped / "roles.toml"
    info = roles.stat()
    os.utime(roles, ns=(info.st_atime_ns, info.st_mtime_ns + 1))
    parsed.clear()
    load()
    assert parsed == UNSHIPPED_LAYERS


def test_a_shipped_files_problem_keeps_its_place_from_the_entry(
    global_dir: Path, parsed: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = shipped_copy(tmp_path, monkeypatch)
    with (shipped / "roles.toml").open("a", encoding="utf-8") as stream:
        stream.write('\n[roles.odd]\nprompt = "p"\nbogus = 1\n')
    lines = (shipped / "roles.toml").read_text(encoding="utf-8").count("\n")
    first = [p for p in load().problems if p.key == "roles.odd.bogus"]
    (global_dir / "config.toml").write_text(CONFIG + "# edited\n")
    parsed.clear()
    again = [p for p in load().problems if p.key == "roles.odd.bogus"]
    assert parsed == UNSHIPPED_LAYERS
    assert [(p.line, p.column) for p in first] == [(lines, 1)]
    assert again == first


def test_validate_neither_reads_nor_writes_the_built_in_entry(
    global_dir: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    load()

    def refused(*args: object) -> None:
        raise AssertionError("the cache was used")

    monkeypatch.setattr(cache, "get", refused)
    monkeypatch.setattr(cache, "put", refused)
    parsed.clear()
    load(use_cache=False)
    assert parsed == ALL_LAYERS


# --- misses --------------------------------------------------------------------------------


def miss_after(
    change: Callable[[], object], parsed: list[str], layers: list[str] = UNSHIPPED_LAYERS
) -> Config:
    """Load twice (the second load hits), make `change`, and load again: that load, with a walk
    of its items, parses `layers` (by default the built-in layer comes from its own entry). An
    item's row is decoded when it is first used, so a bad one is met in the walk."""
    walk(load())
    parsed.clear()
    walk(load())
    assert parsed == []
    change()
    parsed.clear()
    config = load()
    walk(config)
    assert parsed == layers
    return config


def test_a_changed_layer_byte_misses(global_dir: Path, parsed: list[str]) -> None:
    path = global_dir / "config.toml"
    config = miss_after(lambda: path.write_bytes(path.read_bytes().replace(b"= 7", b"= 8")), parsed)
    assert config.settings.command_timeout == 8
    assert len(cache_files()) == 1  # one entry for each place, replaced


def test_a_stray_file_is_part_of_the_key(global_dir: Path, parsed: list[str]) -> None:
    config = miss_after(lambda: (global_dir / "task.toml").write_text(""), parsed)
    assert [p.message for p in config.problems if p.file == str(global_dir / "task.toml")] == [
        "file is not read; a layer reads config.toml, agents.toml, roles.toml, contexts.toml, "
        "tasks.toml, workflows.toml"
    ]


def package_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the `start` package for the stamp to look at, to change."""
    copy = tmp_path / "package"
    shutil.copytree(cache.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "PACKAGE", str(copy))
    return copy


def test_a_changed_module_of_the_package_misses(
    global_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parsed: list[str]
) -> None:
    copy = package_copy(tmp_path, monkeypatch)
    module = copy / "config" / "validate.py"
    miss_after(lambda: module.write_text(module.read_text() + "# changed\n"), parsed, ALL_LAYERS)


def test_a_removed_module_of_the_package_misses(
    global_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parsed: list[str]
) -> None:
    copy = package_copy(tmp_path, monkeypatch)
    miss_after((copy / "config" / "files.py").unlink, parsed, ALL_LAYERS)


def test_a_module_that_no_load_imported_changes_nothing(
    global_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parsed: list[str]
) -> None:
    # An entry depends on the code that made it, the modules imported when it was written; a
    # new one is imported by none of them (else one of them changed, and misses).
    copy = package_copy(tmp_path, monkeypatch)
    load()
    (copy / "config" / "extra.py").write_text("")
    parsed.clear()
    load()
    assert parsed == []


@pytest.mark.parametrize(
    ("target", "name", "value"),
    [
        (sys, "version", sys.version + " (another build)"),
        (sys.implementation, "cache_tag", "cpython-399"),
    ],
)
def test_another_python_misses(
    global_dir: Path,
    parsed: list[str],
    monkeypatch: pytest.MonkeyPatch,
    target: object,
    name: str,
    value: str,
) -> None:
    miss_after(lambda: monkeypatch.setattr(target, name, value), parsed, ALL_LAYERS)


def rewrite(change: Callable[[dict[str, Any]], object]) -> Callable[[], None]:
    """Rewrite the entry as well-formed marshal data changed by `change`, keeping its mode, as
    `start` would have written it."""

    def apply() -> None:
        path = entry()
        data = read_entry(path)
        change(data)
        overwrite(path, entry_bytes(data))

    return apply


def change_row(
    kind: str, change: Callable[[list[Any]], object], name: str | None = None
) -> Callable[[dict[str, Any]], None]:
    """Change the stored row of item `name` of `kind` (by default the first), as a list: its
    origin's index, then the record's fields after name and origin."""

    def apply(data: dict[str, Any]) -> None:
        rows = data["items"][kind]
        key = next(iter(rows)) if name is None else name
        row = list(marshal.loads(rows[key]))
        change(row)
        rows[key] = marshal.dumps(tuple(row))

    return apply


def set_field(
    kind: str, field: str, value: object, name: str | None = None
) -> Callable[[dict[str, Any]], None]:
    """Store `value` as the field of item `name` of `kind` (by default the first)."""
    place = RECORDS[kind]._fields.index(field) - 1
    return change_row(kind, lambda row: row.__setitem__(place, value), name)


def fill(kind: str, field: str, value: object) -> Callable[[dict[str, Any]], None]:
    """Store `value` as the field of every item of `kind`."""

    def apply(data: dict[str, Any]) -> None:
        for name in list(data["items"][kind]):
            set_field(kind, field, value, name)(data)

    return apply


def set_rows(kind: str, change: Callable[[dict[Any, Any]], object]) -> Callable[..., None]:
    """Change the table of the rows of `kind`, by item name."""

    def apply(data: dict[str, Any]) -> None:
        change(data["items"][kind])

    return apply


def first_row(
    change: Callable[[dict[Any, Any], Any], object],
) -> Callable[[dict[Any, Any]], object]:
    """`change(rows, name)` for the first row's name."""
    return lambda rows: change(rows, next(iter(rows)))


def set_setting(name: str, value: object) -> Callable[[dict[str, Any]], None]:
    """Store `value` as the setting `name`."""
    place = Settings._fields.index(name)

    def apply(data: dict[str, Any]) -> None:
        data["settings"] = (*data["settings"][:place], value, *data["settings"][place + 1 :])

    return apply


# Well-formed marshal data of the wrong shape. Each of these crashed or poisoned an old decoder.
# The whole entry is checked when it is read; an item's row when the item is first used.
WRONG_SHAPES: dict[str, Callable[[dict[str, Any]], object]] = {
    "setting origins are a list": lambda d: d.update(setting_origins=[]),
    "settings are a list": lambda d: d.update(settings=list(d["settings"])),
    "a setting too many": lambda d: d.update(settings=(*d["settings"], "red")),
    "a setting too few": lambda d: d.update(settings=d["settings"][:-1]),
    "a timeout setting is a string": set_setting("command_timeout", "7"),
    "a kind is missing": lambda d: d["items"].pop("tasks"),
    "an extra kind": lambda d: d["items"].update(widgets={}),
    "items are a list": lambda d: d.update(items=[]),
    "a kind is a list": lambda d: d["items"].update(agents=list(d["items"]["agents"].values())),
    "the index is missing": lambda d: d.pop("index"),
    "an index of a kind is missing": lambda d: d["index"].pop("tasks"),
    "an index of a field is missing": lambda d: d["index"]["tasks"].pop("alias"),
    "an index of another field": lambda d: d["index"]["roles"].update(description={}),
    "a file is a number": lambda d: d["index"]["contexts"]["file"].update(c=7),
    "an index is a list": lambda d: d["index"]["contexts"].update(required=["c"]),
    "an alias is a number": lambda d: d["index"]["tasks"]["alias"].update(t=7),
    "an indexed name is a number": lambda d: d["index"]["tasks"]["alias"].update({7: "x"}),
    "a required flag is a string": lambda d: d["index"]["contexts"]["required"].update(c="yes"),
    "the layers are missing": lambda d: d.pop("layers"),
    "a layer is missing": lambda d: d["layers"]["roles"].pop("global"),
    "a layer names an item that is not there": lambda d: d["layers"]["roles"]["global"].append("x"),
    "a layer's names are a tuple": lambda d: d["layers"]["roles"].update(
        project=tuple(d["layers"]["roles"]["project"])
    ),
    "a row is not marshal data": set_rows("roles", first_row(lambda r, n: r.update({n: b"\0"}))),
    "a row is a string": set_rows("roles", first_row(lambda r, n: r.update({n: "row"}))),
    "a row is a list": set_rows(
        "roles", first_row(lambda r, n: r.update({n: marshal.dumps(list(marshal.loads(r[n])))}))
    ),
    "a name is a number": set_rows("agents", first_row(lambda r, n: r.update({7: r.pop(n)}))),
    "a string field holds a number": set_field("agents", "bin", 7),
    "a required field holds None": set_field("agents", "command", None),
    "a models table holds a list": set_field("agents", "models", ["m"]),
    "a model id is a number": set_field("agents", "models", {"m": 1}),
    "an unknown field": change_row("roles", lambda row: row.append("red")),
    "a field is missing": change_row("roles", lambda row: row.pop()),
    "a timeout is a string": set_field("contexts", "command_timeout", "3"),
    "a flag is an integer": set_field("contexts", "required", 1),
    "a timeout is a boolean": set_field("tasks", "command_timeout", True),
    "parameters are a list": set_field("tasks", "params", [("a", None, None)]),
    "a parameter is too short": set_field("tasks", "params", (("a", None),)),
    "a parameter is a string": set_field("tasks", "params", ("a",)),
    "a parameter default is a number": set_field("tasks", "params", (("a", 1, None),)),
    "a parameter name is missing": set_field("tasks", "params", ((None, "x", None),)),
    "an imported template is too short": set_field("tasks", "imported", ("claude",)),
    "a field of the wrong type in every row": fill("contexts", "required", "yes"),
    "a field of another field's type in every row": fill("tasks", "internal", 3),
    "an origin index that is a string": change_row("roles", lambda row: row.__setitem__(0, "0")),
    "an origin index that is a boolean": change_row("roles", lambda row: row.__setitem__(0, False)),
    "an origin index out of range": change_row("roles", lambda row: row.__setitem__(0, 99)),
    "a negative origin index": change_row("roles", lambda row: row.__setitem__(0, -1)),
    "an unknown layer": lambda d: d["origins"].__setitem__(0, ("elsewhere", "/x")),
    "an origin of an unknown setting": lambda d: d["setting_origins"].update(colour=0),
    "trusted paths hold a number": set_setting("trusted_paths", (1,)),
    "trusted paths are a list": set_setting("trusted_paths", ["/x"]),
    "a problem has no message": lambda d: d["problems"].__setitem__(0, ("error", None, "k")),
    "a problem of another severity": lambda d: d["problems"].__setitem__(
        0, ("fatal", None, "k", "m", None, None, None)
    ),
    "a problem line is a string": lambda d: d["problems"].__setitem__(
        0, ("error", None, "k", "m", None, "1", None)
    ),
    "a file is not parsed-or-not": lambda d: d["files"].__setitem__(0, ("global", "/x", "", "yes")),
    "an extra top-level key": lambda d: d.update(extra=1),
    "another key": lambda d: d.update(key=b"0" * 64),
}


@pytest.mark.parametrize("change", WRONG_SHAPES.values(), ids=WRONG_SHAPES.keys())
def test_an_entry_of_the_wrong_shape_is_a_miss_and_is_rewritten(
    global_dir: Path, parsed: list[str], change: Callable[[dict[str, Any]], object]
) -> None:
    expected = load(use_cache=False)
    parsed.clear()

    same(miss_after(rewrite(change), parsed), expected)

    parsed.clear()
    same(load(), expected)
    assert parsed == []  # the entry was written again


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00garbage",
        marshal.dumps({"key": 1}),
        b"99999|" + b"x" * 100,
        b"-1|x",
        b"|x",
        "garbage",
        "a list",
        "None",
    ],
    ids=[
        "empty",
        "not an entry",
        "marshal alone",
        "short of its key",
        "a negative length",
        "no length",
        "its key, then garbage",
        "its key, then a list",
        "its key, then None",
    ],
)
def test_a_corrupt_entry_is_a_miss_and_is_rewritten(
    global_dir: Path, parsed: list[str], data: bytes | str
) -> None:
    expected = load(use_cache=False)
    if isinstance(data, str):  # what follows the entry's own key
        load()
        after = {"garbage": b"\x00garbage", "a list": marshal.dumps([1]), "None": b"N"}
        key = read_entry(entry())["key"]
        data = b"%d|%s%s" % (len(key), key, after[data])
    parsed.clear()

    same(miss_after(lambda: overwrite(entry(), data), parsed), expected)

    parsed.clear()
    load()
    assert parsed == []


@pytest.mark.parametrize("error", [AttributeError, LookupError, RecursionError, MemoryError])
@pytest.mark.parametrize("decoder", ["_decode", "_item"])
def test_any_exception_while_decoding_is_a_miss(
    global_dir: Path,
    parsed: list[str],
    monkeypatch: pytest.MonkeyPatch,
    error: type[Exception],
    decoder: str,
) -> None:
    # A flaw the shape checks do not foresee is a miss too, whatever it raises, whether in the
    # entry or in an item's row (then the built-in layer's entry, whose rows are all decoded
    # when it is read, misses as well).
    def flawed(*args: object) -> None:
        raise error("flawed")

    miss_after(lambda: monkeypatch.setattr(cache, decoder, flawed), parsed, ALL_LAYERS)


def test_a_row_that_does_not_decode_is_parsed_from_the_bytes_the_load_read(
    approved: Path, parsed: list[str]
) -> None:
    """Only when its item is used, and from the bytes that the key and trust covered: a file
    changed since is not read (trust approved the bytes the load read, not the new ones)."""
    expected = load(use_cache=False)
    rewrite(set_field("tasks", "command", 7, "t"))()
    parsed.clear()

    config = load()
    assert config.settings.default_agent == "fake"
    assert list(config.tasks)[-1] == "t"
    assert parsed == []  # the entry, as far as it is used
    (approved / ".start" / "config.toml").write_text('[tasks.t]\ncommand = "echo FORGED"\n')

    assert config.tasks["t"].command == "echo approved"
    assert parsed == UNSHIPPED_LAYERS
    same(config, expected)
    assert parsed == UNSHIPPED_LAYERS  # once


def test_a_truncated_entry_is_a_miss(global_dir: Path, parsed: list[str]) -> None:
    def truncate() -> None:
        path = entry()
        path.write_bytes(path.read_bytes()[:-10])

    miss_after(truncate, parsed)


def test_an_entry_owned_by_another_user_is_a_miss(
    global_dir: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = os.getuid()
    # Seen from another user, the entry (and the directory) belong to someone else.
    miss_after(lambda: monkeypatch.setattr(os, "getuid", lambda: uid + 1), parsed, ALL_LAYERS)


@pytest.mark.parametrize("mode", [0o640, 0o606, 0o660])
def test_an_entry_others_may_read_or_write_is_a_miss(
    global_dir: Path, parsed: list[str], mode: int
) -> None:
    miss_after(lambda: entry().chmod(mode), parsed)
    assert stat.S_IMODE(entry().stat().st_mode) == 0o600


def test_a_symlinked_entry_is_a_miss_and_is_replaced_by_a_file(
    global_dir: Path, parsed: list[str], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.bin"

    def link() -> None:
        path = entry()
        path.rename(elsewhere)
        path.symlink_to(elsewhere)

    miss_after(link, parsed)

    assert not entry().is_symlink()
    assert entry().read_bytes() == elsewhere.read_bytes()  # the same config, written anew


def test_a_fifo_in_place_of_the_entry_is_a_miss_without_blocking(
    global_dir: Path, parsed: list[str]
) -> None:
    def fifo() -> None:
        path = entry()
        path.unlink()
        os.mkfifo(path)

    miss_after(fifo, parsed)


def test_without_a_package_directory_to_stamp_nothing_is_cached(
    global_dir: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # As when `start` runs from a zip file: no stamp, so no key.
    monkeypatch.setattr(cache, "PACKAGE", str(tmp_path / "start.pyz" / "start"))
    load()
    parsed.clear()
    load()
    assert parsed == ALL_LAYERS
    assert not Path(cache.directory()).exists()


def test_edits_validated_with_replaced_bytes_bypass_the_cache(
    global_dir: Path, parsed: list[str]
) -> None:
    load()
    before = cache_files()
    config = load(replaced={str(global_dir / "config.toml"): b"[settings]\ncommand_timeout = 99\n"})
    assert config.settings.command_timeout == 99
    assert cache_files() == before
    parsed.clear()
    assert load().settings.command_timeout == 7
    assert parsed == []


# --- config validate -----------------------------------------------------------------------


def test_config_validate_validates_from_source_not_from_the_cache(
    global_dir: Path, parsed: list[str]
) -> None:
    (global_dir / "config.toml").write_text("[settings]\ncommand_timeout = 0\n")
    assert [p.message for p in load().errors] == [
        "must be a whole number of seconds from 1 to 86400 (a day), not 0"
    ]
    # An entry for these very bytes that says all is well, as a cache from older code could.
    rewrite(lambda d: d.update(problems=[]))()
    assert load().errors == ()
    parsed.clear()

    result = invoke("config", "validate")

    assert parsed == ALL_LAYERS
    assert result.exit_code == 3
    assert result.stdout == (
        f"{global_dir / 'config.toml'}:2:1: error: settings.command_timeout: must be a whole "
        "number of seconds from 1 to 86400 (a day), not 0\n"
        f"✗ 1 error, 0 warnings in {len(load().files)} files\n"
    )


def test_config_validate_neither_reads_nor_writes_the_cache(
    global_dir: Path, parsed: list[str]
) -> None:
    assert invoke("config", "validate").exit_code == 0
    assert invoke("config", "validate").exit_code == 0
    assert parsed == ALL_LAYERS * 2
    assert not Path(cache.directory()).exists()


FAKE = f"""\
[settings]
default_agent = "fake"

[agents.fake]
bin = "{FAKE_AGENT}"
command = "{{bin}} {{prompt}}"
"""


@pytest.mark.parametrize("change", WRONG_SHAPES.values(), ids=WRONG_SHAPES.keys())
def test_an_entry_of_the_wrong_shape_crashes_no_command(
    isolated: Path, change: Callable[[dict[str, Any]], object]
) -> None:
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": FAKE})
    commands = [
        ("prompt", "x", "--dry-run", "--json"),
        ("config", "show", "--json"),
        ("config", "path", "--json"),
        ("config", "validate", "--json"),
    ]
    expected = [invoke(*command) for command in commands]
    assert [r.exit_code for r in expected] == [0, 0, 0, 0]
    for path in cache_files():
        data = read_entry(path)
        # Most shapes need a problem, an origin and a row of each kind to change.
        data["problems"] = data["problems"] or [("warning", None, "k", "m", None, None, None)]
        change(data)
        overwrite(path, entry_bytes(data))

    for command, before in zip(commands, expected, strict=True):
        result = invoke(*command)
        assert (result.exit_code, result.stderr) == (0, before.stderr), command
        if command[0] != "prompt":  # a dry run shows the date and time
            assert json.loads(result.stdout) == json.loads(before.stdout), command


# --- where entries are read from ------------------------------------------------------------

APPROVED = '[tasks.t]\ncommand = "echo approved"\n'


@pytest.fixture
def approved(isolated: Path) -> Path:
    """A project whose approved task t runs `echo approved`, with the fake agent; loaded once,
    so its entry is in the cache."""
    write_tree(isolated, {".start/config.toml": APPROVED})
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": FAKE})
    found = trust.scan(load())
    assert found is not None
    trust.approve(found)
    return isolated


def task_command(command: str) -> Callable[[dict[str, Any]], None]:
    """Make task t of an entry run `command`."""

    return set_field("tasks", "command", command, "t")


def old_cache_dir() -> Path:
    """Where development versions kept the entries: `$XDG_CACHE_HOME/start`."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "start"


def forge(command: str) -> None:
    """Plant, in the cache directory (`$XDG_CACHE_HOME/start`), the entry of every entry of ours
    with task t running `command`, under its own name and under the name releases before used:
    what whatever can write the cache directory but not the state directory (an agent's
    sandbox, say) can do. Releases before kept the entries there."""
    planted = old_cache_dir()
    planted.mkdir(parents=True, exist_ok=True, mode=0o700)
    for path in cache_files():
        data = read_entry(path)
        task_command(command)(data)
        for name in (path.name, f"config-{'0' * 32}.bin"):
            (planted / name).write_bytes(entry_bytes(data))
            (planted / name).chmod(0o600)


def test_entries_in_the_cache_directory_are_never_read(approved: Path, parsed: list[str]) -> None:
    forge("echo FORGED")
    for path in cache_files():
        path.unlink()
    parsed.clear()

    config = load()

    assert parsed == UNSHIPPED_LAYERS  # the approved bytes, parsed
    assert config.tasks["t"].command == "echo approved"
    assert trust.check(config).trusted
    parsed.clear()
    assert load().tasks["t"].command == "echo approved"
    assert parsed == []  # the entry was written again, in the state directory


def test_a_planted_entry_runs_and_shows_only_what_was_approved(approved: Path) -> None:
    assert invoke("task", "t", "--dry-run", "--json").exit_code == 0
    forge("echo FORGED")
    for path in cache_files():
        path.unlink()

    result = invoke("task", "t", "--dry-run", "--json")

    assert (result.exit_code, result.stderr) == (0, "")
    assert json.loads(result.stdout)["prompt"] == "approved\n"
    forge("echo FORGED")
    shown = invoke("trust", "--show")
    lines = shown.stdout.splitlines()
    assert "    tasks.t.command  echo approved" in lines
    assert "FORGED" not in shown.stdout
    assert lines[-1].startswith("Status: approved ")


def test_an_entry_in_the_state_directory_is_used_as_it_is(
    approved: Path, parsed: list[str]
) -> None:
    # Only the user writes the state directory; the tests of shapes above rewrite entries this
    # way, so they reach the decoder.
    rewrite(task_command("echo REWRITTEN"))()
    parsed.clear()
    assert load().tasks["t"].command == "echo REWRITTEN"
    assert parsed == []


def test_an_entry_whose_digest_disagrees_with_the_files_is_dropped(approved: Path) -> None:
    """One flipped byte in the digest an entry holds for a project file: the launch parses the
    files again, runs, and stores the entry again (trust approves by that digest, so the entry
    made every launch fail, "changed while start was reading it", for good)."""
    write_tree(approved, {".claude/skills/s/SKILL.md": "Run x.sh\n", ".claude/skills/s/x.sh": ""})
    found = trust.scan(load())
    assert found is not None
    trust.approve(found)
    assert run_start("task", "t", "--dry-run", cwd=approved).returncode == 0
    good = read_entry(entry())["files"]
    for path in (approved / ".start" / "config.toml", approved / ".claude/skills/s/x.sh"):

        def flip(data: dict[str, Any], path: Path = path) -> None:
            (index,) = [i for i, f in enumerate(data["files"]) if f[1] == str(path)]
            layer, where, digest, parsed = data["files"][index]
            flipped = digest[:-1] + ("0" if digest[-1] != "0" else "1")
            data["files"][index] = (layer, where, flipped, parsed)

        rewrite(flip)()
        assert read_entry(entry())["files"] != good
        result = run_start("task", "t", "--dry-run", cwd=approved)
        assert (result.returncode, result.stderr) == (0, ""), path
        assert "approved\n" in result.stdout
        assert read_entry(entry())["files"] == good


def test_trust_reviews_and_approves_the_files_never_the_cache(
    approved: Path, parsed: list[str]
) -> None:
    # Even an entry `start` wrote (from older code, say) cannot show itself as approved.
    rewrite(task_command("echo REWRITTEN"))()
    parsed.clear()

    shown = invoke("trust", "--show")

    # Then the layers without the project's, to name what its items replace: from files too.
    assert parsed == [*ALL_LAYERS, *ALL_LAYERS]
    assert "    tasks.t.command  echo approved" in shown.stdout.splitlines()
    assert "REWRITTEN" not in shown.stdout
    parsed.clear()
    assert invoke("trust", "--yes").exit_code == 0
    assert parsed == ALL_LAYERS


def test_an_entry_whose_key_differs_in_one_byte_is_a_miss(
    global_dir: Path, parsed: list[str]
) -> None:
    def last_byte(data: dict[str, Any]) -> None:
        key = data["key"]
        data["key"] = key[:-1] + bytes([key[-1] ^ 1])

    miss_after(rewrite(last_byte), parsed)


def test_each_place_has_an_entry_of_its_own(isolated: Path, tmp_path: Path) -> None:
    write_tree(tmp_path / "other", {".start/config.toml": ""})
    load()
    load(str(tmp_path / "other"), use_project=False)
    assert len(cache_files()) == 1  # without its project, the same layers and directories
    load(str(tmp_path / "other"))
    assert len(cache_files()) == 2


def test_the_key_is_compared_whole_not_by_its_file_name(
    global_dir: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every key with one name: the entry of one config is a miss for the other.
    monkeypatch.setattr(cache, "entry_name", lambda place, kind="config": f"{kind}-00000000.bin")
    load()
    (global_dir / "config.toml").write_text(CONFIG.replace("Brief", "Short"), encoding="utf-8")
    parsed.clear()
    assert load().roles["r"].description == "Short"
    assert parsed == UNSHIPPED_LAYERS


@pytest.mark.parametrize("kind", ["symlink", "file", "another user's"])
def test_entries_are_read_only_from_a_directory_of_ours(
    global_dir: Path,
    parsed: list[str],
    tmp_path: Path,
    kind: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def replace() -> None:
        home = Path(cache.directory())
        if kind == "another user's":
            monkeypatch.setattr(os, "getuid", lambda: os.geteuid() + 1)
            return
        moved = tmp_path / "moved"
        home.rename(moved)
        if kind == "symlink":
            home.symlink_to(moved)
        else:
            home.write_bytes(b"")

    miss_after(replace, parsed, ALL_LAYERS)


def test_bytes_outside_the_state_directory_never_reach_marshal(
    global_dir: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    load()
    name = entry().name
    entry().unlink()
    planted = old_cache_dir()
    planted.mkdir(parents=True, mode=0o700)
    (planted / name).write_bytes(b"\xff" * 64)
    (planted / name).chmod(0o600)
    parsed.clear()
    expected = layer_entry_read()
    assert unmarshalled_by_a_load(monkeypatch) == expected
    assert parsed == UNSHIPPED_LAYERS


def unmarshalled_by_a_load(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What a load gives marshal to read."""
    unmarshalled: list[bytes] = []
    loads = marshal.loads

    def watched(data: bytes) -> Any:
        unmarshalled.append(bytes(data))
        return loads(data)

    monkeypatch.setattr(marshal, "loads", watched)
    load()
    return unmarshalled


def layer_entry_read() -> list[bytes]:
    """What reading the built-in layer's own entry unmarshals: its marshal data, then each
    item's row in it."""
    payload = split_entry(layer_entry().read_bytes())[1]
    items = marshal.loads(payload)["items"]
    return [payload, *(row for rows in items.values() for row in rows.values())]


def test_an_entry_of_another_key_is_never_unmarshalled(
    global_dir: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # After an edit the merged entry's key differs: its bytes are compared, not unmarshalled.
    load()
    with (global_dir / "config.toml").open("a", encoding="utf-8") as config:
        config.write("\n# an edit\n")
    parsed.clear()
    expected = layer_entry_read()
    assert unmarshalled_by_a_load(monkeypatch) == expected
    assert parsed == UNSHIPPED_LAYERS


def test_a_launch_takes_no_digest(global_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The key is compared, not hashed: a cold and a warm load never call SHA-256.
    def refused(data: bytes) -> str:
        raise AssertionError("a digest was taken")

    monkeypatch.setattr(fs, "sha256", refused)
    load()
    assert load().roles["r"].description == "Brief"


# --- writing -------------------------------------------------------------------------------


def test_entries_are_written_through_atomic_replace_as_private_files(
    global_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[tuple[str, int | None, bool]] = []
    replace = atomic.replace

    def recorded(path: str, data: bytes, *, mode: int | None = None, durable: bool = True) -> None:
        written.append((path, mode, durable))
        replace(path, data, mode=mode, durable=durable)

    monkeypatch.setattr(atomic, "replace", recorded)
    load()

    # Not durable: an entry lost in a crash is only a miss, so no launch waits for an fsync.
    assert written == [(str(layer_entry()), 0o600, False), (str(entry()), 0o600, False)]
    assert stat.S_IMODE(layer_entry().stat().st_mode) == 0o600
    assert entry().parent == Path(paths.state_dir(), "config-cache")
    assert stat.S_IMODE(entry().stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(cache.directory()).stat().st_mode) == 0o700


def test_an_existing_cache_directory_is_made_private(global_dir: Path) -> None:
    Path(cache.directory()).mkdir(parents=True, mode=0o755)
    Path(cache.directory()).chmod(0o755)
    load()
    assert stat.S_IMODE(Path(cache.directory()).stat().st_mode) == 0o700


def test_nothing_is_written_through_a_symlinked_cache_directory(
    global_dir: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    Path(cache.directory()).parent.mkdir(parents=True)
    Path(cache.directory()).symlink_to(elsewhere)
    load()
    assert list(elsewhere.iterdir()) == []


def test_writing_keeps_the_newest_entries_and_removes_stale_temp_files(
    global_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "KEEP", 3)
    directory = Path(cache.directory())
    directory.mkdir(parents=True, mode=0o700)
    hour_ago = time.time() - 3600
    old = []
    for age in range(4):
        path = directory / f"config-{age:08x}.bin"
        path.write_bytes(b"")
        os.utime(path, (hour_ago - age, hour_ago - age))
        old.append(path)
    stale = [directory / ".config-aaaaaaaa.bin.0123abcd.tmp"]  # atomic.replace's, writer killed
    fresh = directory / ".config-cccccccc.bin.89abcdef.tmp"  # a writer at work
    others = [directory / "notes.txt", directory / ".notes.0123abcd.tmp"]
    for path in [*stale, *others]:
        path.write_bytes(b"")
        os.utime(path, (hour_ago, hour_ago))
    fresh.write_bytes(b"")

    load()

    new = [path for path in cache_files() if path not in old]
    assert len(new) == 1
    # Each kind keeps its own newest: the built-in layer's entry is not one of the merged ones.
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        p.name for p in [*new, layer_entry(), old[0], old[1], fresh, *others]
    )


# --- the key -------------------------------------------------------------------------------


def test_the_key_depends_on_contents_layers_directories_and_strays() -> None:
    dirs: dict[str, str | None] = {"global": "/g"}
    base = cache.key(("global",), dirs, {"/g/config.toml": b"a"}, [])
    variants = [
        cache.key(("global",), dirs, {"/g/config.toml": b"b"}, []),
        cache.key(("global",), dirs, {"/g/agents.toml": b"a"}, []),
        cache.key(("global", "project"), dirs, {"/g/config.toml": b"a"}, []),
        cache.key(("global",), {"global": "/h"}, {"/g/config.toml": b"a"}, []),
        cache.key(("global",), dirs, {"/g/config.toml": b"a"}, ["/g/x.toml"]),
    ]
    assert base is not None
    assert len({base, *variants}) == 6


def test_the_stamp_names_every_module_of_start_imported_so_far() -> None:
    import sys

    from start.config import validate  # noqa: F401

    modules = cache.loaded_modules()
    assert modules is not None
    expected = sorted(
        str(Path(module.__file__).relative_to(cache.PACKAGE))
        for name, module in sys.modules.items()
        if (name == "start" or name.startswith("start.")) and module.__file__
    )
    assert modules == expected
    assert {"__init__.py", "config/__init__.py", "config/validate.py"} <= set(modules)
    assert "config/scanner.py" not in modules or "start.config.scanner" in sys.modules


def test_the_code_stamp_changes_with_the_size_or_mtime_of_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(tmp_path, {"a.py": "x = 1\n", "sub/b.py": "y = 2\n", "c.py": ""})
    monkeypatch.setattr(cache, "PACKAGE", str(tmp_path))
    stamp = cache.code_stamp(["a.py", "sub/b.py"])
    assert stamp is not None
    assert [line.rsplit(":", 2)[0] for line in stamp.splitlines()] == ["a.py", "sub/b.py"]
    (tmp_path / "c.py").write_text("changed")  # not one of them
    assert cache.code_stamp(["a.py", "sub/b.py"]) == stamp

    b = tmp_path / "sub" / "b.py"
    info = b.stat()
    os.utime(b, ns=(info.st_atime_ns, info.st_mtime_ns + 1))  # same size, newer
    touched = cache.code_stamp(["a.py", "sub/b.py"])
    assert touched != stamp

    b.write_text("y = 30\n")
    os.utime(b, ns=(info.st_atime_ns, info.st_mtime_ns + 1))  # same mtime, new size
    assert cache.code_stamp(["a.py", "sub/b.py"]) not in (stamp, touched)

    b.unlink()
    assert cache.code_stamp(["a.py", "sub/b.py"]) is None


def test_records_has_one_record_for_each_item_section_of_the_schema() -> None:
    from start.config import schema
    from start.config.model import RECORDS

    assert list(RECORDS) == list(schema.ITEM_SECTIONS)


def test_non_defaults_leaves_out_defaults_and_the_fields_kept_beside() -> None:
    from start.config.model import Agent, Origin, Settings, non_defaults

    origin = Origin("global", "config.toml")
    agent = Agent("a", origin, "bin", "{bin}", models={}, large_prompt_stdin=True)
    assert non_defaults(agent) == {"bin": "bin", "command": "{bin}", "large_prompt_stdin": True}
    settings = Settings(command_timeout=5, origins={"command_timeout": origin})
    assert non_defaults(settings) == {"command_timeout": 5}


def test_the_shared_empty_mapping_default_of_a_record_cannot_change() -> None:
    from start.config.model import Agent, Origin, Settings

    agent = Agent("a", Origin("global", "config.toml"), "bin", "{bin}")
    with pytest.raises(TypeError):
        agent.models["fast"] = "model-1"  # type: ignore[index]
    with pytest.raises(TypeError):
        Settings().origins["shell"] = agent.origin  # type: ignore[index]
    assert (dict(Agent._field_defaults["models"]), dict(Settings().origins)) == ({}, {})


def test_the_source_of_a_config_is_the_entry_it_was_written_to_or_read_from(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `start find`'s index is kept beside (start.config.finding.of_config): the merged
    config's entry, with its key and stamp, for a config written (a miss) or read (a hit); none
    for a config the cache did not serve; only the last SOURCES_KEPT are remembered."""
    config = isolated.parent / "home" / ".config" / "start" / "config.toml"
    write_tree(config.parent, {"config.toml": '[tasks.t]\nprompt = "x"\n'})
    assert cache.source(load(use_cache=False)) is None
    written = load()
    read = load()
    found = cache.source(written)
    assert found is not None and cache.source(read) == found
    [entry] = Path(cache.directory()).glob("config-*.bin")
    assert found.key.name == entry.name
    assert cache.beside(found, cache.FIND_ENTRY) == entry.name.replace("config-", "find-", 1)
    assert entry.read_bytes().startswith(b"%d|%s" % (len(found.key.data), found.key.data))
    monkeypatch.setattr(cache, "SOURCES_KEPT", 2)
    later = [load(), load()]
    assert cache.source(written) is None and cache.source(read) is None
    assert all(cache.source(one) == found for one in later)
