"""A cache of validated, merged configs, keyed by everything a loaded config depends on.

Parsing TOML and validating a large config costs far more than a launch may spend, so the result
is kept as plain data (marshal) and rebuilt into records on the next run with the same key. The
key covers the bytes of every layer file and of other agents' command files (start.interop), the
stray files, the layer directories, the Python that runs and `start`'s version; the entry's
stamp, the code of `start` that made it (`code_stamp`). The key is those bytes themselves, not a
digest of them: an entry holds its key and is used only when that is equal, byte for byte, to the
key of the launch, and its stamp still holds; the entry's file name is only a hash of the place
it was loaded from. The built-in layer's validated items
have an entry of their own (`layer_key`), so that an edit of the user's config does not make the
next launch parse the shipped catalog again. Entries live in the state directory (`directory`),
which only the user writes, beside the trust records. An entry that cannot be read, is not a
private regular file of ours, has another key, or does not have exactly the shape `_encode`
writes is a miss, never an error: the load that follows parses from source and writes the entry
again.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any

from start import paths
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
    non_defaults,
)
from start.errors import Problem
from start.record import Record

if TYPE_CHECKING:
    from start.interop.model import Imported

# 4: items are stored by columns, (names, origin indexes, one list per field), not by rows.
# 5: the key is the keyed bytes themselves, and entries live in the state directory.
# 6: a task's `output`.
# 7: the built-in layer has an entry of its own (`layer_key`).
# 8: the key comes before the marshal data, which holds the code stamp of the modules imported.
FORMAT = 8
# The kinds of entries, the start of their file names: a merged config, and one layer's items.
CONFIG_ENTRY = "config"
LAYER_ENTRY = "layer"
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
_SEVERITIES = ("error", "warning")
_NONE = type(None)
# A field's column: its name, the types a stored value may have (the field's, and None, its
# default, unless it has none), what a stored None decodes to, and what checks and rebuilds a
# value that is not None where a type check is not enough (else None).
_Column = tuple[str, frozenset[type], Any, Callable[[Any], Any] | None]


def _columns(cls: type[Item], types: Mapping[str, type]) -> tuple[_Column, ...]:
    """How each field of a section's records is stored, in the record's order after name and
    origin: a list with a value per item (see `_Column`)."""
    columns = []
    for field in cls._fields[2:]:
        kind = types[field]
        allowed = frozenset({kind, _NONE} if field in cls._field_defaults else {kind})
        decode = _VALUE_DECODERS.get(field) or _TYPE_DECODERS.get(kind)
        columns.append((field, allowed, cls._field_defaults.get(field), decode))
    return tuple(columns)


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
    chunks = [_head()]
    _part(chunks, repr(tuple(layers)))
    place: list[bytes] = []
    for name in layers:
        _part(place, f"{name}={dirs.get(name)}")
    chunks.extend(place)
    _files(chunks, contents, strays)
    for text in more:
        _part(chunks, f"more:{text}")
    return Key(_name(b"".join(place)), b"".join(chunks))


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
    chunks = [_head()]
    _part(chunks, f"layer:{layer}={directory}")
    place = chunks[-1]
    _files(chunks, contents, strays)
    return Key(_name(place, LAYER_ENTRY), b"".join(chunks))


def _head() -> bytes:
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


def _name(place: bytes, kind: str = CONFIG_ENTRY) -> str:
    """An entry's file name: its kind and the 32-bit FNV-1a hash of the layers and directories it
    was loaded from, a few hundred bytes that need no checksum module. Two places with one name
    share the entry, and the one not stored there misses (`_decode` compares the whole key)."""
    hashed = 0x811C9DC5
    for byte in place:
        hashed = ((hashed ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{kind}-{hashed:08x}.bin"


def get(
    cache_key: Key, project: paths.ProjectLocation, dirs: Mapping[str, str | None]
) -> Config | None:
    """The cached config for this key, or None: missing, corrupt, of the wrong shape, not ours."""
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
        fd = os.open(cache_key.name, flags, dir_fd=home)
    except OSError:
        return None
    finally:
        os.close(home)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        raw = os.read(fd, info.st_size)
        if len(raw) != info.st_size:
            return None
        payload = payload_of(raw, cache_key.data)
        if payload is None:
            return None
        data = marshal.loads(payload)
        # Used only while the modules its stamp names are as they were when it was written.
        modules = [line.rsplit(":", 2)[0] for line in data["stamp"].split("\n")]
        return _decode(data, project, dirs) if code_stamp(modules) == data["stamp"] else None
    except Exception:
        # Whatever is wrong with the entry (unreadable, not ours, not marshal, a shape `_decode`
        # rejects or trips over), it is a miss; the load that follows writes the entry again.
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
    # Off the warm launch path: only a miss writes.
    from start import atomic

    try:
        home = directory()
        if not paths.private_directory(home):
            return
        # No fsync: an entry lost in a crash is a miss, and every launch after an edit writes one.
        data = pack(cache_key.data, {**_encode(config), "stamp": stamp})
        atomic.replace(os.path.join(home, cache_key.name), data, mode=0o600, durable=False)
        _prune(home, cache_key.name.partition("-")[0])
    except OSError:
        return


def _prune(directory: str, kind: str) -> None:
    """Keep the KEEP newest entries of `kind`, and remove the temp files that killed writers
    left (`.KIND-KEY.bin.8HEX.tmp`, from atomic.replace)."""
    import time

    from start import atomic

    entries: list[tuple[int, str]] = []
    stale = time.time() - STALE_TEMP_SECONDS
    with os.scandir(directory) as found:
        for entry in found:
            name = entry.name
            is_temp = atomic.is_temp_name(name) and name.startswith((".config-", ".layer-"))
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

    def origin(value: Origin) -> int:
        return origins.setdefault(value, len(origins))

    items: dict[str, tuple[list[str], list[int], list[list[Any]]]] = {}
    for section in RECORDS:
        records: list[Item] = list(getattr(config, section).values())
        fields = list(zip(*records, strict=True)) or [()] * len(RECORDS[section]._fields)
        columns = []
        for index, (field, _, default, _) in enumerate(_COLUMNS[section], start=2):
            encode, values = _VALUE_ENCODERS.get(field), list(fields[index])
            if default is not None or encode is not None:  # a None stays None
                values = [
                    None if v == default else v if encode is None else encode(v) for v in values
                ]
            columns.append(values)
        names = list(fields[0])
        items[section] = (names, [origin(record.origin) for record in records], columns)
    settings = config.settings
    setting_origins = {name: origin(o) for name, o in settings.origins.items()}
    return {
        # Filled by the calls above, so it comes after them.
        "origins": [(o.layer, str(o.path)) for o in origins],
        "settings": non_defaults(settings),  # str, int and tuples of str
        "setting_origins": setting_origins,
        "items": items,
        "problems": [
            (
                p.severity,
                None if p.file is None else str(p.file),
                p.key,
                p.message,
                p.suggestion,
                p.line,
                p.column,
            )
            for p in config.problems
        ],
        "files": [(f.layer, str(f.path), f.digest, f.parsed) for f in config.files],
    }


def _encode_imported(value: Imported) -> tuple[Any, ...]:
    # Off the warm launch path, like start.interop.model itself.
    from start.interop.model import encode

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
) -> Config:
    """Rebuild the config, checking that every value has the type its record field holds.

    Items are stored by columns (see `_section`). A value of another type, a column of another
    length, an unknown setting or layer, or an origin that is not in the table raises
    _BadEntryError; any other flaw in the structure raises as it is met. Either way `get`
    reports a miss.
    """
    if type(data) is not dict or len(data) != 7:
        raise _BadEntryError("not an entry")
    known: dict[str, str] = {}

    def path(text: object) -> str:
        name = _str(text)
        found = known.get(name)
        if found is None:
            found = known[name] = name
        return found

    origins = [Origin(_str(layer, LAYERS), path(where)) for layer, where in data["origins"]]

    def at(index: object) -> Origin:
        if type(index) is not int or not 0 <= index < len(origins):
            raise _BadEntryError(f"no origin {index!r}")
        return origins[index]

    items = data["items"]
    if type(items) is not dict or items.keys() != RECORDS.keys():
        raise _BadEntryError("not the four item sections")
    sections = {
        section: _section(section, cls, items[section], origins) for section, cls in RECORDS.items()
    }
    setting_origins = data["setting_origins"]
    if type(setting_origins) is not dict:
        raise _BadEntryError("setting origins are not a table")
    settings = Settings(
        **_checked(data["settings"], _SETTINGS),
        origins={_str(name, _SETTINGS): at(index) for name, index in setting_origins.items()},
    )
    return Config(
        settings=settings,
        agents=sections["agents"],  # type: ignore[arg-type]
        roles=sections["roles"],  # type: ignore[arg-type]
        contexts=sections["contexts"],  # type: ignore[arg-type]
        tasks=sections["tasks"],  # type: ignore[arg-type]
        project=project,
        files=tuple(
            LayerFile(_str(layer, LAYERS), path(where), _str(digest), _bool(parsed))
            for layer, where, digest, parsed in data["files"]
        ),
        layer_dirs=dict(dirs),
        problems=tuple(
            Problem(
                _str(severity, _SEVERITIES),
                None if file is None else path(file),
                _str(key),
                _str(message),
                None if suggestion is None else _str(suggestion),
                None if line is None else _int(line),
                None if column is None else _int(column),
            )
            for severity, file, key, message, suggestion, line, column in data["problems"]
        ),
    )


def _section(
    section: str, cls: type[Item], entry: object, origins: list[Origin]
) -> dict[str, Item]:
    """The items of a section from its columns, checked a column at a time."""
    if type(entry) is not tuple or len(entry) != 3:
        raise _BadEntryError(f"{section}: not names, origins and columns")
    names, indexes, columns = entry
    count = len(names) if type(names) is list else -1
    if count < 0 or not set(map(type, names)) <= _STR or len(set(names)) != count:
        raise _BadEntryError(f"{section}: the names are not a list of distinct strings")
    if (
        type(indexes) is not list
        or len(indexes) != count
        or not set(map(type, indexes)) <= _INT
        or (count and not 0 <= min(indexes) <= max(indexes) < len(origins))
    ):
        raise _BadEntryError(f"{section}: the origins are not {count} indexes of the table")
    specs = _COLUMNS[section]
    if type(columns) is not list or len(columns) != len(specs):
        raise _BadEntryError(f"{section}: not a column for each field")
    decoded: list[list[Any]] = []
    for (field, allowed, default, decode), column in zip(specs, columns, strict=True):
        if type(column) is not list or len(column) != count:
            raise _BadEntryError(f"{section}.{field}: not a column of {count} values")
        if not set(map(type, column)) <= allowed:
            raise _BadEntryError(f"{section}.{field}: a value of another type")
        if decode is not None:
            column = [default if value is None else decode(value) for value in column]
        elif default is not None:
            column = [default if value is None else value for value in column]
        decoded.append(column)
    rows = zip(names, map(origins.__getitem__, indexes), *decoded, strict=True)
    # Every row has a value for every field, of the field's type, so the records are built as
    # the tuples they are, without a call to the record's constructor for each.
    return dict(zip(names, map(tuple.__new__, repeat(cls), rows), strict=True))


def _models(value: dict[Any, Any]) -> dict[str, str]:
    if not set(map(type, value.keys())) <= _STR or not set(map(type, value.values())) <= _STR:
        raise _BadEntryError(f"{value!r} is not a table of strings")
    return value


def _imported(value: tuple[Any, ...]) -> Imported:
    from start.interop.model import decode

    return decode(value)


def _checked(fields: object, types: Mapping[str, type]) -> dict[str, Any]:
    """`fields`, when it is a table of field names to values of the fields' types."""
    if type(fields) is not dict:
        raise _BadEntryError("fields are not a table")
    for name, value in fields.items():
        expected = types.get(name)
        if name in ("params", "imported") and type(value) is expected:
            continue  # checked entry by entry by _params, and start.interop.model.decode
        if type(value) is not expected or not _shaped(value):
            raise _BadEntryError(f"{name!r} is not a {expected}")
    return fields


def _shaped(value: object) -> bool:
    """Whether a table or tuple holds only strings, as every one the cache stores does."""
    if type(value) is dict:
        return all(type(k) is str and type(v) is str for k, v in value.items())
    if type(value) is tuple:
        return all(type(entry) is str for entry in value)
    return True


def _params(value: tuple[Any, ...]) -> tuple[Param, ...]:
    """Task parameters from the (name, default, description) tuples `_fields` writes."""
    found = []
    for entry in value:
        if type(entry) is not tuple or len(entry) != 3:
            raise _BadEntryError(f"{entry!r} is not a parameter")
        name, default, description = entry
        found.append(Param(_str(name), _optional(default), _optional(description)))
    return tuple(found)


def _output(value: tuple[Any, ...]) -> Output:
    """A task's output format from the (format, schema, schema_file) tuple `_encode` writes."""
    if len(value) != 3 or value[0] not in ("json", "schema"):
        raise _BadEntryError(f"{value!r} is not an output format")
    return Output(_str(value[0]), _optional(value[1]), _optional(value[2]))


def _optional(value: object) -> str | None:
    return None if value is None else _str(value)


def _str(value: object, among: Collection[object] | None = None) -> str:
    """`value`, when it is a string (of `among`, when given)."""
    if type(value) is not str or (among is not None and value not in among):
        raise _BadEntryError(f"{value!r} is not a string" + (" of ours" if among else ""))
    return value


def _int(value: object) -> int:
    if type(value) is not int:
        raise _BadEntryError(f"{value!r} is not an integer")
    return value


def _bool(value: object) -> bool:
    if type(value) is not bool:
        raise _BadEntryError(f"{value!r} is not a boolean")
    return value


_STR = frozenset({str})
_INT = frozenset({int})
# What a stored value that is not None goes through, by field, then by the field's type.
_VALUE_DECODERS: Mapping[str, Callable[[Any], Any]] = {
    "params": _params,
    "imported": _imported,
    "output": _output,
}
_TYPE_DECODERS: Mapping[type, Callable[[Any], Any]] = {dict: _models}
# The columns of each item section, in the order of its record's fields after name and origin.
_COLUMNS: Mapping[str, tuple[_Column, ...]] = {
    section: _columns(cls, _FIELDS[section]) for section, cls in RECORDS.items()
}
