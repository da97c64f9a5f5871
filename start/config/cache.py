"""A cache of validated, merged configs, keyed by everything a loaded config depends on.

Parsing TOML and validating a large config costs far more than a launch may spend, so the result
is kept as plain data (marshal) and rebuilt into records on the next run with the same key. Each
item is a row of its own, decoded when it is first used (model.Table), beside an index of the
fields a launch chooses items by (`INDEXED`) and the names of each layer's items, so a launch
decodes the items it uses, whatever the size of the config. The key covers the bytes of every
layer file and of other agents' command files (start.config.interop), the stray files, the layer
directories, the Python that runs and `start`'s version; the entry's stamp, the code of `start`
that made it (`code_stamp`). The key is those bytes themselves, not a digest of them: an entry
holds its key and is used only when that is equal, byte for byte, to the key of the launch, and
its stamp still holds; the entry's file name is only a hash of the place it was loaded from. The
built-in layer's validated items have an entry of their own (`layer_key`), so that an edit of
the user's config does not make the next launch parse the shipped catalog again. Entries live in
the state directory (`directory`), which only the user writes, beside the trust records. An
entry that cannot be read, is not a private regular file of ours, has another key, or does not
have exactly the shape `_encode` writes is a miss, never an error: the load that follows parses
from source and writes the entry again. So is an item's row that does not decode when the item
is used: its section comes from the bytes the load read, parsed. A project's memo of what its
trust checks computed (start.config.memo) is an entry of this directory too (`read`, `write`),
and so is the index `start find` makes of a merged config (start.config.finding), beside its
entry and keyed by it (`source`, `beside`): made by find alone, so no launch pays for it.
"""

from __future__ import annotations

import functools
import marshal
import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from start.base import paths
from start.base.errors import Problem
from start.base.record import Record
from start.config import schema
from start.config.model import (
    LAYERS,
    RECORDS,
    Config,
    Item,
    LayerFile,
    Origin,
    Output,
    Param,
    Settings,
    Table,
    column,
)

if TYPE_CHECKING:
    from start.config.interop.model import Imported

# 4: items are stored by columns, (names, origin indexes, one list per field), not by rows.
# 5: the key is the keyed bytes themselves, and entries live in the state directory.
# 6: a task's `output`.
# 7: the built-in layer has an entry of its own (`layer_key`).
# 8: the key comes before the marshal data, which holds the code stamp of the modules imported.
# 9: each item is a row of its own, decoded on first use, and a few fields are indexed.
# 10: the file each role, context and task names is indexed too.
FORMAT = 10
# The kinds of entries, the start of their file names: a merged config, one layer's items, what
# a project's launches computed from its bytes (start.config.memo), and the index of a merged
# config's tasks and workflows that `start find` made (start.config.finding), beside its entry.
CONFIG_ENTRY = "config"
LAYER_ENTRY = "layer"
MEMO_ENTRY = "memo"
FIND_ENTRY = "find"
_TEMPS = tuple(f".{kind}-" for kind in (CONFIG_ENTRY, LAYER_ENTRY, MEMO_ENTRY, FIND_ENTRY))
# How many configs this process remembers the entry of (`source`): a server loads its config
# afresh for each request, and only the last ones are asked about.
SOURCES_KEPT = 8
# How many entries of each kind are kept, the newest written.
KEEP = 32
# A temp file this old belongs to a writer that was killed: a live one renames it within moments.
STALE_TEMP_SECONDS = 60
# The installed `start` package, whose code decides what a config means.
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where this process imported `start` from: a module's path below it is its path below PACKAGE.
_LOADED_FROM = PACKAGE
# The directory of the entries, in the state directory beside the trust records: whatever can
# write the cache directory but not the state directory (an agent's sandbox, say) cannot pass off
# a config of its own, and whatever can write the state directory can already write trust records.
DIRECTORY = "config-cache"

# The Python type of each schema field type, as validation leaves it in a record.
_TYPES: Mapping[str, type] = {
    schema.STR: str,
    schema.SHELL: str,
    schema.BOOL: bool,
    schema.TIMEOUT: int,
    schema.SIZE: int,
    schema.MODELS: dict,
    schema.PATHS: tuple,
    schema.PARAMS: tuple,
    schema.SOURCES: tuple,
    schema.NAMES: tuple,
    schema.LEVEL: str,
    schema.OUTPUT: tuple,
}
_FIELDS: Mapping[str, Mapping[str, type]] = {
    section: {name: _TYPES[field_type] for name, field_type in fields.items()}
    | ({"imported": tuple} if section == "tasks" else {})  # a task from a command file
    for section, fields in schema.ITEM_SECTIONS.items()
}
_SETTINGS: Mapping[str, type] = {name: _TYPES[t] for name, t in schema.SETTINGS.items()}
_NONE = type(None)
# The fields of each section whose values an entry also keeps by item name, so that a launch
# chooses its task (by alias too) and its contexts, and trust finds the files the project's
# items name, without decoding the others (model.column).
INDEXED: Mapping[str, tuple[str, ...]] = {
    "roles": ("file",),
    "contexts": ("required", "file"),
    "tasks": ("alias", "file"),
}
# What rebuilds one field's value from what is stored (or the reverse): its place among the
# fields stored, its default (stored as None), and what rebuilds (or stores) its other values.
_Change = tuple[int, Any, Callable[[Any], Any] | None]


class _Layout(Record):
    """How the fields of a kind of record are stored: a row of values, each of `types`."""

    fields: tuple[str, ...]
    types: tuple[frozenset[type], ...]  # a field's type, and None if it has a default
    encodes: tuple[_Change, ...]  # the fields whose stored value is not always the value
    decodes: tuple[_Change, ...]


def _layout(cls: type[Record], types: Mapping[str, type], fields: tuple[str, ...]) -> _Layout:
    allowed, encodes, decodes = [], [], []
    for place, field in enumerate(fields):
        kind, default = types[field], cls._field_defaults.get(field)
        allowed.append(frozenset({kind, _NONE} if field in cls._field_defaults else {kind}))
        encode = _VALUE_ENCODERS.get(field)
        decode = _VALUE_DECODERS.get(field) or _TYPE_DECODERS.get(kind)
        if default is not None or encode is not None:
            encodes.append((place, default, encode))
        if default is not None or decode is not None:
            decodes.append((place, default, decode))
    return _Layout(fields, tuple(allowed), tuple(encodes), tuple(decodes))


_R = TypeVar("_R", bound=Record)


class Source(Record):
    """The entry a merged config was read from or written to: its key, and the code stamp of
    the modules that made it (`put`), which whatever is kept beside it is keyed by too."""

    key: Key
    stamp: str


# The entry each config's tasks table came from, by the table's id, the table kept alive with
# it so that the id is not another's: what `source` answers.
_SOURCES: dict[int, tuple[object, Source]] = {}


class Key(Record):
    """What a loaded config depends on (`data`), and the file name of its entry (`name`)."""

    name: str
    data: bytes


class _BadEntryError(ValueError):
    """The entry does not have the shape `_encode` writes."""


def loaded_modules() -> list[str] | None:
    """The files of the `start` modules this process has imported, relative to the package,
    sorted; None when one is not a file below it (a zip import, for example)."""
    found = []
    below = _LOADED_FROM + os.sep
    for name, module in list(sys.modules.items()):
        if name == "start" or name.startswith("start."):
            path = getattr(module, "__file__", None) or ""
            if not path.startswith(below):
                return None
            found.append(path[len(below) :])
    return sorted(found)


def code_stamp(modules: Sequence[str]) -> str | None:
    """The size and mtime of each of `modules` (paths below `PACKAGE`), one per line; None when
    one of them cannot be statted."""
    lines = []
    for module in modules:
        stamp = file_stamp(os.path.join(PACKAGE, module))
        if stamp is None:
            return None
        lines.append(f"{module}:{stamp}")
    return "\n".join(lines)


def file_stamp(path: str) -> str | None:
    """The size and mtime of a regular file, `SIZE:MTIME_NS`; None when it is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return f"{info.st_size}:{info.st_mtime_ns}" if stat.S_ISREG(info.st_mode) else None


def key(
    layers: Sequence[str],
    dirs: Mapping[str, str | None],
    contents: Mapping[str, bytes],
    strays: Sequence[str],
    more: Sequence[str] = (),
) -> Key:
    """Everything the loaded config depends on but `start`'s code, as one byte string (the code
    is the entry's stamp: see `put`).

    Each part is preceded by its length, so no two sets of parts give the same key. `more` names
    anything else it depends on, such as command files that were not read. It is compared, never
    hashed: an equal key is the same bytes, and a launch needs no digest library. The entry's
    name comes from the layers and their directories alone: one entry for each place a config
    is loaded from, replaced when its files change.
    """
    chunks = [head()]
    _part(chunks, repr(tuple(layers)))
    place: list[bytes] = []
    for name in layers:
        _part(place, f"{name}={dirs.get(name)}")
    chunks.extend(place)
    _files(chunks, contents, strays)
    for text in more:
        _part(chunks, f"more:{text}")
    return Key(entry_name(b"".join(place)), b"".join(chunks))


def layer_key(
    layer: str,
    directory: str,
    contents: Mapping[str, bytes],
    strays: Sequence[str],
) -> Key:
    """The key of one layer's own entry: `start`'s version and the Python, the layer's
    directory, and the bytes of its files (`contents`) and its stray files.

    The built-in layer has one (see start.config.load): a launch after an edit of the user's
    config then parses only the layers that can change, not the shipped catalog.
    """
    chunks = [head()]
    _part(chunks, f"layer:{layer}={directory}")
    place = chunks[-1]
    _files(chunks, contents, strays)
    return Key(entry_name(place, LAYER_ENTRY), b"".join(chunks))


def head() -> bytes:
    """The part of every key that `start`'s version and the Python decide."""
    from start import __version__

    chunks: list[bytes] = []
    for text in (
        str(FORMAT),
        __version__,
        sys.version,
        str(sys.implementation.cache_tag),
        str(marshal.version),
    ):
        _part(chunks, text)
    return b"".join(chunks)


def _part(chunks: list[bytes], text: str) -> None:
    """Append `text`, preceded by its length, to `chunks`."""
    data = text.encode("utf-8", "surrogateescape")
    chunks.append(b"%d|%s" % (len(data), data))


def _files(chunks: list[bytes], contents: Mapping[str, bytes], strays: Sequence[str]) -> None:
    for path, data in contents.items():
        _part(chunks, str(path))
        chunks.append(b"%d|" % len(data))
        chunks.append(data)
    for path in strays:
        _part(chunks, f"stray:{path}")


def directory() -> str:
    """Where the entries are: `$XDG_STATE_HOME/start/config-cache`."""
    return os.path.join(paths.state_dir(), DIRECTORY)


def entry_name(place: bytes, kind: str = CONFIG_ENTRY) -> str:
    """An entry's file name: its kind and the 32-bit FNV-1a hash of the layers and directories it
    was loaded from, a few hundred bytes that need no checksum module. Two places with one name
    share the entry, and the one not stored there misses (`_decode` compares the whole key)."""
    hashed = 0x811C9DC5
    for byte in place:
        hashed = ((hashed ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{kind}-{hashed:08x}.bin"


def get(
    cache_key: Key,
    project: paths.ProjectLocation,
    dirs: Mapping[str, str | None],
    fallback: Callable[[str], Mapping[str, Item]] | None = None,
) -> Config | None:
    """The cached config for this key, or None: missing, corrupt, of the wrong shape, not ours.

    With a `fallback` (a section's items, parsed from the bytes keyed), each item is decoded
    when it is first used, and an item that does not decode gets its section from the fallback
    instead; without one, every item is decoded here, and a bad one is a miss."""
    raw = read(cache_key.name)
    if raw is None:
        return None
    try:
        payload = payload_of(raw, cache_key.data)
        if payload is None:
            return None
        data = marshal.loads(payload)
        # Used only while the modules its stamp names are as they were when it was written.
        modules = [line.rsplit(":", 2)[0] for line in data["stamp"].split("\n")]
        stamp = data.pop("stamp")
        if code_stamp(modules) != stamp:
            return None
        config = _decode(data, project, dirs, fallback)
        _remember(config, cache_key, stamp)
        return config
    except Exception:
        # Whatever is wrong with the entry (not marshal, a shape `_decode` rejects or trips
        # over), it is a miss; the load that follows writes the entry again.
        return None


def read(name: str) -> bytes | None:
    """The bytes of the entry `name`; None when it is missing or not a private regular file of
    ours in a directory of ours."""
    try:
        # Only in a directory of ours (0700, no symlink), never through a symlink, and never
        # blocking on a FIFO. Bytes of another user's never reach marshal, which trusts its input.
        home = paths.open_private(directory(), create=False)
    except OSError:
        return None
    if home is None:
        return None
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(name, flags, dir_fd=home)
    except OSError:
        return None
    finally:
        os.close(home)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        raw = os.read(fd, info.st_size)
        return raw if len(raw) == info.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def put(cache_key: Key, config: Config) -> None:
    """Store a config, stamped with the size and mtime of the files of the `start` modules
    imported so far: the code that made it. Nothing is stored when they cannot be statted (a zip
    import). Failures to write only cost speed next time."""
    modules = loaded_modules()
    stamp = None if modules is None else code_stamp(modules)
    if stamp is None:
        return
    write(cache_key.name, pack(cache_key.data, {**_encode(config), "stamp": stamp}))
    _remember(config, cache_key, stamp)


def _remember(config: Config, cache_key: Key, stamp: str) -> None:
    """Remember the entry `config` came from or went to, for `source`: a dict entry, no more."""
    if cache_key.name.startswith(CONFIG_ENTRY + "-"):
        _SOURCES.pop(id(config.tasks), None)
        _SOURCES[id(config.tasks)] = (config.tasks, Source(cache_key, stamp))
        try:
            while len(_SOURCES) > SOURCES_KEPT:
                _SOURCES.pop(next(iter(_SOURCES)), None)
        except (RuntimeError, StopIteration):
            pass  # a server's other thread changed it meanwhile: the oldest go next time


def source(config: Config) -> Source | None:
    """The merged config's entry that this process read `config` from or wrote it to, or None
    (the cache was not used, or the code not stamped: `put`): what is kept beside the entry, such as
    `start find`'s index (start.config.finding), is keyed by it, so that whatever changes the
    config's key, or the code that made it, changes that key too."""
    found = _SOURCES.get(id(config.tasks))
    return found[1] if found is not None and found[0] is config.tasks else None


def beside(found: Source, kind: str) -> str:
    """The file name of an entry of `kind` kept beside the merged config's entry `found`."""
    return kind + found.key.name[len(CONFIG_ENTRY) :]


def write(name: str, data: bytes) -> None:
    """Store the entry `name`, a private file in a directory of ours, and keep the KEEP newest
    entries of its kind. Failures to write only cost speed next time."""
    # Off the warm launch path: only a miss writes.
    from start.base import atomic

    try:
        home = directory()
        if not paths.private_directory(home):
            return
        # No fsync: an entry lost in a crash is a miss, and every launch after an edit writes one.
        atomic.replace(os.path.join(home, name), data, mode=0o600, durable=False)
        _prune(home, name.partition("-")[0])
    except OSError:
        return


def _prune(directory: str, kind: str) -> None:
    """Keep the KEEP newest entries of `kind`, and remove the temp files that killed writers
    left (`.KIND-KEY.bin.8HEX.tmp`, from atomic.replace)."""
    import time

    from start.base import atomic

    entries: list[tuple[int, str]] = []
    stale = time.time() - STALE_TEMP_SECONDS
    with os.scandir(directory) as found:
        for entry in found:
            name = entry.name
            is_temp = atomic.is_temp_name(name) and name.startswith(_TEMPS)
            if not is_temp and not (name.startswith(kind + "-") and name.endswith(".bin")):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
                if not is_temp:
                    entries.append((info.st_mtime_ns, entry.path))
                elif info.st_mtime < stale:
                    os.unlink(entry.path)
            except OSError:
                continue
    entries.sort(reverse=True)
    for _, path in entries[KEEP:]:
        try:
            os.unlink(path)
        except OSError:
            continue


def pack(key: bytes, payload: dict[str, Any]) -> bytes:
    """An entry's bytes: the length of its key, `|`, the key, then the payload as marshal data."""
    return b"%d|%s%s" % (len(key), key, marshal.dumps(payload))


def payload_of(raw: bytes, key: bytes) -> memoryview | None:
    """The marshal data of an entry (`pack`'s bytes) whose key is `key`, without copying it;
    None for an entry of another key, or bytes that are no entry's."""
    head = b"%d|" % len(key)
    if not raw.startswith(head) or not raw.startswith(key, len(head)):
        return None
    return memoryview(raw)[len(head) + len(key) :]


def _encode(config: Config) -> dict[str, Any]:
    origins: dict[Origin, int] = {}

    items: dict[str, Any] = {}
    index: dict[str, Any] = {}
    layers: dict[str, Any] = {}
    for section, layout in _LAYOUTS.items():
        table: Mapping[str, Item] = getattr(config, section)
        records = list(table.values())
        where = [origins.setdefault(item.origin, len(origins)) for item in records]
        rows = zip(where, *_stored(layout, records, 2), strict=True)
        items[section] = dict(zip(table, map(marshal.dumps, rows), strict=True))
        index[section] = {field: dict(column(table, field)) for field in INDEXED.get(section, ())}
        layers[section] = {layer: [] for layer in LAYERS}
        for item in records:
            layers[section][item.origin.layer].append(item.name)
    setting_origins = {
        name: origins.setdefault(o, len(origins)) for name, o in config.settings.origins.items()
    }
    return {
        # Filled by the calls above, so it comes after them.
        "origins": [tuple(o) for o in origins],
        "settings": tuple(value for (value,) in _stored(_SETTING_LAYOUT, [config.settings])),
        "setting_origins": setting_origins,
        "items": items,
        "index": index,
        "layers": layers,
        "problems": [tuple(p) for p in config.problems],
        "files": [tuple(f) for f in config.files],
    }


def _stored(layout: _Layout, records: list[Any], skip: int = 0) -> list[Sequence[Any]]:
    """The records' fields after the first `skip` as stored, a column each (a large config's items
    are stored at once): None for a field's default, else plain data that marshal writes."""
    width = len(layout.fields)
    columns: list[Any] = [*zip(*records, strict=True)][skip : skip + width] or [()] * width
    for place, default, encode in layout.encodes:
        columns[place] = [
            None if v is None or v == default else v if encode is None else encode(v)
            for v in columns[place]
        ]
    return columns


def _encode_imported(value: Imported) -> tuple[Any, ...]:
    # Off the warm launch path, like start.config.interop.model itself.
    from start.config.interop.model import encode

    return encode(value)


# How a value of an item field that marshal cannot write as it is (or would write as a mutable
# alias of the record's) becomes plain data.
_VALUE_ENCODERS: Mapping[str, Callable[[Any], Any]] = {
    "models": dict,
    "print_permissions": dict,
    # marshal writes plain tuples only
    "params": lambda params: tuple((p.name, p.default, p.description) for p in params),
    "imported": _encode_imported,
    "output": tuple,
}


def _decode(
    data: dict[str, Any],
    project: paths.ProjectLocation,
    dirs: Mapping[str, str | None],
    fallback: Callable[[str], Mapping[str, Item]] | None,
) -> Config:
    """Rebuild the config, checking that every value has the type its record field holds.

    Each item is a row of its own (its origin's index, then its fields: see `_encode`), which
    its section's Table decodes when the item is first used; without a `fallback`, every item is
    decoded here. A value of another type, a row of another length, an unknown layer, or an
    origin that is not in the table raises _BadEntryError; any other flaw in the structure
    raises as it is met. Either way `get` reports a miss, or a Table gives `fallback`'s items.
    """
    if type(data) is not dict or len(data) != 8:
        raise _BadEntryError("not an entry")
    origins = [_plain(Origin, _ORIGIN, origin) for origin in data["origins"]]
    files = tuple(_plain(LayerFile, _FILE, file) for file in data["files"])
    problems = tuple(_plain(Problem, _PROBLEM, problem) for problem in data["problems"])
    if not {p.severity for p in problems} <= {"error", "warning"}:
        raise _BadEntryError("a problem is neither an error nor a warning")
    if not {o.layer for o in origins} | {f.layer for f in files} <= set(LAYERS):
        raise _BadEntryError("an origin or a file of an unknown layer")
    parts = ("items", "index", "layers")
    if any(type(data[part]) is not dict or data[part].keys() != RECORDS.keys() for part in parts):
        raise _BadEntryError("not each section's rows, index and names by layer")
    sections: dict[str, Table[Item]] = {}
    for section, cls in RECORDS.items():
        layout = _LAYOUTS[section]
        rows, indexed, layered = (data[part][section] for part in parts)
        if (
            type(rows) is not dict
            or not set(map(type, rows)) <= _STR
            or type(indexed) is not dict
            or indexed.keys() != set(INDEXED.get(section, ()))
            or not all(
                type(values) is dict
                and set(map(type, values)) <= _STR
                and set(map(type, values.values())) <= layout.types[layout.fields.index(field)]
                for field, values in indexed.items()
            )
            or type(layered) is not dict
            or layered.keys() != set(LAYERS)
            or not all(
                type(names) is list and set(names) <= rows.keys() for names in layered.values()
            )
        ):
            raise _BadEntryError(f"{section}: not a table of rows by name, an index and layers")
        decode = functools.partial(_item, cls, layout, origins)
        parsed = None if fallback is None else functools.partial(fallback, section)
        table = Table(rows, decode, parsed, indexed, layered)
        if fallback is None:
            list(table.values())  # every item decoded now: a bad one is a miss
        sections[section] = table
    settings, setting_origins = data["settings"], data["setting_origins"]
    if type(settings) is not tuple or type(setting_origins) is not dict:
        raise _BadEntryError("settings are not a row, or their origins not a table")
    if not setting_origins.keys() <= set(_SETTING_LAYOUT.fields):
        raise _BadEntryError("an origin of an unknown setting")
    where = {name: _at(origins, i) for name, i in setting_origins.items()}
    fields = [*_rebuilt(_SETTING_LAYOUT, settings), where]  # their origins come last
    return Config(
        settings=Settings(*fields),
        agents=sections["agents"],  # type: ignore[arg-type]
        roles=sections["roles"],  # type: ignore[arg-type]
        contexts=sections["contexts"],  # type: ignore[arg-type]
        tasks=sections["tasks"],  # type: ignore[arg-type]
        project=project,
        files=files,
        layer_dirs=dict(dirs),
        problems=problems,
    )


def _item(
    cls: type[Item], layout: _Layout, origins: list[Origin], name: object, row: bytes
) -> Item:
    """An item from its row: the index of its origin, then its fields' stored values."""
    values = marshal.loads(row)
    if type(name) is not str or type(values) is not tuple or not values:
        raise _BadEntryError(f"{name!r}: not a row")
    if type(values[0]) is not int or not 0 <= values[0] < len(origins):
        raise _BadEntryError(f"{name!r}: no origin {values[0]!r}")
    # A value for each field, of its type: the record is the tuple it is, without a constructor.
    return tuple.__new__(cls, (name, origins[values[0]], *_rebuilt(layout, values[1:])))


def _rebuilt(layout: _Layout, stored: object) -> list[Any]:
    """A record's field values from the stored ones: each of its field's types (checked at C
    speed), a None its field's default, and rebuilt where a type check is not enough."""
    if (
        type(stored) is not tuple
        or len(stored) != len(layout.types)
        or not all(map(frozenset.__contains__, layout.types, map(type, stored)))
    ):
        raise _BadEntryError(
            f"{stored!r} is not a row of {len(layout.types)} values of their types"
        )
    values = list(stored)
    for place, default, decode in layout.decodes:
        value = values[place]
        values[place] = default if value is None else value if decode is None else decode(value)
    return values


def _at(origins: list[Origin], index: object) -> Origin:
    if type(index) is not int or not 0 <= index < len(origins):
        raise _BadEntryError(f"no origin {index!r}")
    return origins[index]


def _strings(value: Any) -> Any:
    """A table (a model's ids, a level's options) or a tuple (trusted paths) of strings."""
    held = [*value, *value.values()] if type(value) is dict else value
    if not set(map(type, held)) <= _STR:
        raise _BadEntryError(f"{value!r} does not hold strings only")
    return value


def _imported(value: tuple[Any, ...]) -> Imported:
    from start.config.interop.model import decode

    return decode(value)


def _output(value: tuple[Any, ...]) -> Output:
    """A task's output format from the (format, schema, schema_file) tuple `_encode` writes."""
    output = _plain(Output, _PARAM, value)
    if output.format not in ("json", "schema"):
        raise _BadEntryError(f"{value!r} is not an output format")
    return output


def _plain(cls: type[_R], types: Sequence[frozenset[type]], values: object) -> _R:
    """A record from the tuple of its fields' values, each of a type of its own in `types`."""
    if (
        type(values) is not tuple
        or len(values) != len(types)
        or not all(type(value) in allowed for value, allowed in zip(values, types, strict=True))
    ):
        raise _BadEntryError(f"{values!r} is not a {cls.__name__}")
    return cls(*values)


_STR: frozenset[type] = frozenset({str})
_OPTIONAL: frozenset[type] = frozenset({str, _NONE})
_LINE: frozenset[type] = frozenset({int, _NONE})
# The types of the fields of the records an entry stores as tuples.
_ORIGIN, _PARAM = (_STR, _STR), (_STR, _OPTIONAL, _OPTIONAL)
_FILE = (_STR, _STR, _STR, frozenset({bool}))
_PROBLEM = (_STR, _OPTIONAL, _STR, _STR, _OPTIONAL, _LINE, _LINE)
# What a stored value that is not None goes through, by field, then by the field's type.
_VALUE_DECODERS: Mapping[str, Callable[[Any], Any]] = {
    "params": lambda params: tuple(_plain(Param, _PARAM, param) for param in params),
    "imported": _imported,
    "output": _output,
}
_TYPE_DECODERS: Mapping[type, Callable[[Any], Any]] = {dict: _strings, tuple: _strings}
# How each item section's fields, and the settings, are stored, in their records' order.
_LAYOUTS: Mapping[str, _Layout] = {
    section: _layout(cls, _FIELDS[section], cls._fields[2:]) for section, cls in RECORDS.items()
}
_SETTING_LAYOUT = _layout(Settings, _SETTINGS, Settings._fields[:-1])  # all but their origins
