"""Loading: read each layer, validate its items, merge the layers in order with provenance."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from start.base import fs, paths
from start.base.errors import ConfigError, Problem, suggest
from start.config import cache, files, interop, schema
from start.config.model import (
    LAYERS,
    Agent,
    Config,
    Context,
    Item,
    LayerFile,
    Origin,
    Role,
    Settings,
    Task,
)

# start.config.validate is imported by the functions that parse and merge: a launch served from
# the cache validates nothing.
if TYPE_CHECKING:
    from start.config.interop.dirs import Discovery
    from start.config.interop.skills import Found as Skills
    from start.config.memo import Memo
    from start.config.validate import Collector

IMPORTED = "imported"
BUILT_IN = "built-in"


class _Layer:
    """One layer's items by section, in definition order, before merging."""

    __slots__ = ("directory", "files", "items", "name", "settings")

    def __init__(self, name: str, directory: str | None) -> None:
        self.name = name
        self.directory = directory
        self.items: dict[str, dict[str, Item]] = {s: {} for s in schema.ITEM_SECTIONS}
        self.settings: dict[str, tuple[Any, Origin]] = {}
        self.files: list[LayerFile] = []


def layer_dirs(project: paths.ProjectLocation, use_project: bool = True) -> dict[str, str | None]:
    # The imported layer has no directory of its own: it is other agents'
    # (start.config.interop.dirs).
    return {
        BUILT_IN: paths.builtin_config_dir(),
        "imported": None,
        "global": paths.global_config_dir(),
        "project": project.start_dir if use_project else None,
    }


def load(
    workdir: str | None = None,
    *,
    use_project: bool = True,
    layers: Sequence[str] = LAYERS,
    strict: bool = False,
    replaced: Mapping[str, bytes] | None = None,
    use_cache: bool = True,
    writes: list[Callable[[], None]] | None = None,
) -> Config:
    """Load, validate and merge the configuration seen from `workdir`.

    With `strict`, a config with errors raises ConfigError (exit 3). `replaced` gives layer files'
    would-be bytes (existing or not), so an edit can be validated before it is written.
    With `use_cache=False` every file is parsed and validated, and the cache is neither read nor
    written: `config validate` reports what the files say, never a stored result. With
    `writes`, what the cache is to store is appended to it rather than written, for the caller
    to do when it suits (a launch: while its commands run). Only then are
    the shipped agents' command templates lexed for problems: they are the package's own, and
    tests/config/test_shipped.py holds them to that (a launch lexes its agent's template anyway).
    """
    project = paths.find_project(workdir or paths.current_dir())
    dirs = layer_dirs(project, use_project)
    # Every file is read once, here; the bytes read are the bytes parsed (and hashed for trust).
    contents: dict[str, bytes] = {}
    unreadable: dict[str, Problem] = {}
    # The shipped files are package data, keyed by size and mtime as the code is: a launch
    # served from the cache does not read them.
    shipped: dict[str, str] = {}
    # A project file that a symlink leads out of the project root is never opened.
    real_root = os.path.realpath(project.root) if use_project and "project" in layers else None
    walls = {name: real_root if name == "project" else None for name in layers}

    def read(path: str, wall: str | None = None) -> None:
        data, problem = files.read_bytes(path, wall)
        if data is not None:
            contents[path] = data
        elif problem is not None:
            unreadable[path] = problem

    for name in layers:
        problem = files.layer_problem(dirs[name], walls[name])
        if problem is not None:
            unreadable[dirs[name] or "."] = problem
        for path in files.layer_paths(dirs[name], walls[name]):
            if replaced is not None and path in replaced:
                continue
            stamp = cache.file_stamp(path) if name == BUILT_IN and use_cache else None
            if stamp is not None:
                shipped[path] = stamp
            else:
                read(path, walls[name])
    # Other agents' command files: one stat per directory when there are none. Every source's
    # files are read, so the cache key is known before the settings that choose among them.
    commands, skills = _discover(project, layers, use_project)
    cache_key = None
    strays: list[str] = []

    def parse(later: list[Callable[[], None]] | None = writes) -> Config:
        """The config from the bytes read (and the shipped files), stored in the cache."""
        contents.update(replaced or {})
        for path in shipped:
            read(path)
        problems = list(unreadable.values())
        read_layers = []
        for name in layers:
            directory = dirs[name]
            if name == BUILT_IN and cache_key is not None and directory is not None:
                layer = _builtin_layer(directory, problems, contents, strays, project, dirs, later)
            elif name != IMPORTED:
                digests = _memo(project.root) if name == "project" else None
                layer = _read_layer(
                    name, directory, problems, contents, unreadable, use_cache, walls[name], digests
                )
            else:
                continue
            read_layers.append(layer)
        found = commands is not None and bool(commands.files or commands.problems)
        if found or (skills is not None and bool(skills.folders or skills.problems)):
            read_layers = _with_commands(read_layers, commands, problems, skills)
        config = merge(read_layers, project, dirs, problems)
        if config.problems:
            from start.config.positions import locate  # only when there are problems

            config = config._replace(problems=locate(config.problems, contents))
        if cache_key is not None:
            _store(later, cache_key, config)
        return config

    config: Config | None = None
    if use_cache and replaced is None and not unreadable:
        strays = [path for name in layers for path in files.stray_toml(dirs[name], walls[name])]
        keyed = contents if commands is None else {**contents, **commands.contents}
        more = [f"shipped:{path}:{stamp}" for path, stamp in shipped.items()]
        more.extend(commands.keyed() if commands is not None else [])
        if skills is not None:
            keyed = {**keyed, **skills.contents}
            more = [*more, *skills.keyed()]
        cache_key = cache.key(layers, dirs, keyed, strays, more)
        # An item of the entry that does not decode is parsed from these very bytes, once, and
        # the entry stored again then.
        parsed = functools.cache(functools.partial(parse, None))
        config = cache.get(cache_key, project, dirs, lambda section: getattr(parsed(), section))
        if config is not None and not _agrees(config, keyed, skills):
            config = None  # parsed again below, and stored again
    if config is None:
        config = parse()
    if strict and config.errors:
        raise ConfigError(config.problems)
    return config


def _agrees(config: Config, keyed: Mapping[str, bytes], skills: Skills | None) -> bool:
    """Whether the digests a cached config holds for the project's files are those of the files
    just read. Trust approves by them: an entry that disagrees (a flipped bit) is a miss, never
    a project that asks again, or a file said to change while start read it.

    A file's digest is the one the project's memo remembers for the bytes read (no digest is
    taken), else computed; one that disagrees is computed again, so that only a digest computed
    now drops the entry."""
    beside = skills.digests if skills is not None else {}
    digests = None
    for file in config.files:
        if file.layer == "project" and file.digest:
            data = keyed.get(file.path)
            if data is None:
                if beside.get(file.path) != file.digest:
                    return False
                continue
            digests = digests or _memo(config.root)
            if digests.sha256(data) != file.digest and digests.digest(data) != file.digest:
                return False
    return True


def _memo(root: str) -> Memo:
    """What launches in the project at `root` remember of its files' bytes: their digests
    (start.config.memo, imported only for a project's files)."""
    from start.config import memo

    return memo.of(root)


def _discover(
    project: paths.ProjectLocation, layers: Sequence[str], use_project: bool
) -> tuple[Discovery | None, Skills | None]:
    """The command files and the skill folders of the imported layer and of the project layer,
    when they are loaded."""
    user = IMPORTED in layers
    root = project.root if use_project and "project" in layers else None
    where = str(root) if root is not None else None
    commands: Discovery | None = None
    skills: Skills | None = None
    if interop.anywhere(where, user=user):
        from start.config.interop.dirs import discover

        commands = discover(root, user=user)
    if interop.skills_anywhere(where, user=user):
        from start.config.interop import skills as skill_folders

        skills = skill_folders.discover(root, user=user)
    return commands, skills


def _with_commands(
    layers: list[_Layer],
    commands: Discovery | None,
    problems: list[Problem],
    skills: Skills | None = None,
) -> list[_Layer]:
    """The layers with the imported one after built-in, and the project's command files and
    skills just below its `.start/` (whose tasks replace an imported one of the same name)."""
    from start.config.interop import library

    enabled: Any = Settings().import_commands
    for layer in layers:
        if "import_commands" in layer.settings:
            enabled = layer.settings["import_commands"][0]
    built = [library.build(commands, enabled)] if commands is not None else []
    if skills is not None:
        from start.config.interop import skills as skill_folders

        built.append(skill_folders.build(skills, enabled))
    user = _Layer(IMPORTED, None)
    project = _Layer("project", None)
    for one in built:
        problems.extend(one.problems)
        user.items["tasks"].update(one.user.tasks)
        user.files.extend(one.user.files)
        project.items["tasks"].update(one.project.tasks)
        project.files.extend(one.project.files)
    ordered: list[_Layer] = []
    for layer in layers:
        if layer.name == "project":
            ordered.append(project)
        ordered.append(layer)
        if layer.name == BUILT_IN:
            ordered.append(user)
    if user not in ordered:
        ordered.insert(0, user)
    if project not in ordered:
        ordered.append(project)
    return ordered


def _builtin_layer(
    directory: str,
    problems: list[Problem],
    contents: Mapping[str, bytes],
    strays: Sequence[str],
    project: paths.ProjectLocation,
    dirs: Mapping[str, str | None],
    writes: list[Callable[[], None]] | None,
) -> _Layer:
    """The built-in layer, from its own cache entry when neither its files nor start's code
    changed since it was stored; else parsed, validated as a launch validates it, and stored.

    An edit of the user's or the project's config misses the merged config's entry, but not
    this one: the launch after it parses the layers that can change, never the shipped catalog
    again (docs/performance.md). `contents` and `strays` are every layer's, as the merged
    config's key has them.
    """
    own = {path: data for path, data in contents.items() if os.path.dirname(path) == directory}
    own_strays = [path for path in strays if os.path.dirname(path) == directory]
    key = cache.layer_key(BUILT_IN, directory, own, own_strays)
    stored = cache.get(key, project, dirs)
    if stored is not None:
        layer = _Layer(BUILT_IN, directory)
        for section in layer.items:
            layer.items[section] = dict(getattr(stored, section))
        layer.settings = {
            name: (getattr(stored.settings, name), origin)
            for name, origin in stored.settings.origins.items()
        }
        layer.files = list(stored.files)
        problems.extend(stored.problems)
        return layer
    found: list[Problem] = []
    layer = _read_layer(BUILT_IN, directory, found, contents, {}, True)
    problems.extend(found)
    # Stored as a config of one layer, with the layer's own problems (the merge of every layer
    # checks how they fit together).
    _store(writes, key, merge([layer], project, dirs, [])._replace(problems=tuple(found)))
    return layer


def _store(writes: list[Callable[[], None]] | None, key: cache.Key, config: Config) -> None:
    """Store `config` in the cache now, or later: see `load`'s `writes`."""
    if writes is None:
        cache.put(key, config)
    else:
        writes.append(lambda: cache.put(key, config))


def _read_layer(
    name: str,
    directory: str | None,
    problems: list[Problem],
    contents: Mapping[str, bytes],
    unreadable: Mapping[str, Problem],
    trust_shipped: bool = False,
    root: str | None = None,
    digests: Memo | None = None,
) -> _Layer:
    """One layer's items; with `trust_shipped`, the built-in layer's agent command templates
    are not lexed for problems (see `load`). With `root`, the layer is the project's, and
    `digests` remembers its files' digests for the launches that follow."""
    from start.config import validate

    layer = _Layer(name, directory)
    seen: dict[tuple[str, str], str] = {}
    for stray in files.stray_toml(directory, root):
        close = suggest(os.path.basename(stray), files.LAYER_FILES)
        problems.append(
            Problem(
                "warning",
                stray,
                "",
                f"file is not read; a layer reads {', '.join(files.LAYER_FILES)}",
                close,
            )
        )
    names = [os.path.join(directory, file) for file in files.LAYER_FILES] if directory else []
    listed = [path for path in names if path in contents or path in unreadable]
    for path in listed:
        if path not in contents:  # its problem is already in the list
            layer.files.append(LayerFile(name, path, "", False))
            continue
        read = files.read(path, contents[path])
        # Only project files need a digest: trust approves their exact bytes.
        digest = ""
        if name == "project":
            digest = digests.digest(read.data) if digests else fs.sha256(read.data)
        layer.files.append(LayerFile(name, path, digest, read.table is not None))
        if read.problem is not None:
            problems.append(read.problem)
            continue
        assert read.table is not None
        table = read.table
        if name == "project":
            table = validate.drop_trust_keys(
                table, validate.Collector(Origin(name, path), problems)
            )
        lex = not (trust_shipped and name == BUILT_IN)
        _extract(layer, Origin(name, path), table, seen, problems, lex)
    return layer


def _extract(
    layer: _Layer,
    origin: Origin,
    table: Mapping[str, Any],
    seen: dict[tuple[str, str], str],
    problems: list[Problem],
    lex: bool = True,
) -> None:
    from start.config import validate

    out = validate.Collector(origin, problems, lex)
    for section, body in table.items():
        canonical = schema.SECTION_SYNONYMS.get(section, section)
        if section == "settings":
            if not isinstance(body, dict):
                out.error("settings", "must be a table ([settings])")
                continue
            for key, value in validate.fields(body, schema.SETTINGS, "settings", out).items():
                layer.settings[key] = (value, origin)
            continue
        if section == "workflows":
            # No launch reads a workflow: start.config.workflows reads and checks them when
            # `start config validate` or a workflow command needs them.
            continue
        if canonical not in schema.ITEM_SECTIONS:
            _unknown_top_level(section, body, out)
            continue
        if not isinstance(body, dict):
            out.error(section, f"must be a table of {canonical}, such as [{section}.example]")
            continue
        for name, item_table in body.items():
            key = f"{section}.{name}"
            if not isinstance(item_table, dict):
                out.error(key, f"must be a table ([{key}])")
                continue
            earlier = seen.get((canonical, name))
            if earlier is not None:
                where = "earlier in this file" if earlier == origin.path else f"also in {earlier}"
                out.error(
                    key,
                    f"{schema.KIND_OF[canonical]} '{name}' is defined twice in the "
                    f"{layer.name} layer ({where})",
                )
                continue
            seen[(canonical, name)] = origin.path
            item = validate.check_item(canonical, name, item_table, key, out)
            if item is not None:
                layer.items[canonical][name] = item


def _unknown_top_level(section: str, body: object, out: Collector) -> None:
    if isinstance(body, dict):
        close = suggest(section, [*schema.SECTIONS, *schema.SECTION_SYNONYMS, "workflows"])
        out.warning(section, f"unknown section [{section}]", close)
    elif section in schema.SETTINGS:
        out.warning(section, f"'{section}' is a setting; put it under [settings]")
    else:
        out.warning(section, f"unknown top-level key '{section}'")


def _history_ignored(key: str, origin: Origin) -> Problem:
    return Problem(
        "warning",
        origin.path,
        f"settings.{key}",
        "the history is yours: a project may set history = false, but nothing else about it, "
        "so this is ignored (set it in your global config)",
    )


def _loosens(key: str, value: Any, mine: Any) -> bool:
    """Whether a project's value of an MCP bound lets start mcp's callers do more than `mine`,
    the value of the user's own layers (built-in and global); of board_remote_level, whether it
    lets another machine's operations set a higher level."""
    if key in ("mcp_permissions", "board_remote_level"):
        return bool(schema.LEVELS.index(value) > schema.LEVELS.index(mine))
    if key == "mcp_depth":
        return bool(value > mine)
    # mcp_agents: an empty list allows every agent.
    return bool(mine) and (not value or not set(value) <= set(mine))


def _bound_ignored(key: str, origin: Origin, mine: Any, where: Origin | None) -> Problem:
    place = f"in {where.path}" if where is not None else "by default"
    if key in schema.BOARD_BOUNDS:
        return Problem(
            "warning",
            origin.path,
            f"settings.{key}",
            "a project may lower the level another machine's board operations may set, never "
            f"raise it: your own config allows '{mine}' ({place}), so this is ignored (set it "
            "in your global config)",
        )
    if key == "mcp_permissions":
        allows = f"'{mine}'"
    elif key == "mcp_depth":
        allows = f"{mine} level{'s' if mine != 1 else ''}"
    else:
        allows = f"only {', '.join(mine)}"
    return Problem(
        "warning",
        origin.path,
        f"settings.{key}",
        "a project may narrow what start mcp's callers may do, never widen it: your own config "
        f"allows {allows} ({place}), so this is ignored (set it in your global config)",
    )


def merge(
    layers: Iterable[_Layer],
    project: paths.ProjectLocation,
    dirs: Mapping[str, str | None],
    problems: list[Problem],
) -> Config:
    """Merge layers in order: settings per field, items by name (later replaces whole)."""
    merged: dict[str, dict[str, Item]] = {section: {} for section in schema.ITEM_SECTIONS}
    setting_values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    layer_files: list[LayerFile] = []
    for layer in layers:
        layer_files.extend(layer.files)
        for key, (value, origin) in layer.settings.items():
            if layer.name == "project" and key in schema.HISTORY_SETTINGS and value is not False:
                problems.append(_history_ignored(key, origin))
                continue
            if layer.name == "project" and key in (*schema.MCP_BOUNDS, *schema.BOARD_BOUNDS):
                mine = setting_values.get(key, Settings._field_defaults[key])
                if _loosens(key, value, mine):
                    problems.append(_bound_ignored(key, origin, mine, origins.get(key)))
                    continue
            setting_values[key] = value
            origins[key] = origin
        for section, items in layer.items.items():
            # Assigning to an existing key keeps its slot; new names are appended.
            merged[section].update(items)
    for key in ("trusted_paths", "import_commands", "mcp_agents"):
        if key in setting_values:
            setting_values[key] = tuple(setting_values[key])
    settings = Settings(**setting_values, origins=origins)
    agents: dict[str, Agent] = merged["agents"]  # type: ignore[assignment]
    roles: dict[str, Role] = merged["roles"]  # type: ignore[assignment]
    contexts: dict[str, Context] = merged["contexts"]  # type: ignore[assignment]
    tasks: dict[str, Task] = merged["tasks"]  # type: ignore[assignment]
    from start.config.validate import check_merged

    problems.extend(check_merged(settings, agents, roles, tasks))
    return Config(
        settings=settings,
        agents=agents,
        roles=roles,
        contexts=contexts,
        tasks=tasks,
        project=project,
        files=tuple(layer_files),
        layer_dirs=dict(dirs),
        problems=tuple(problems),
    )
