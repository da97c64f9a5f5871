"""A cache of validated, merged configs, keyed by the exact bytes of every layer file.

Parsing TOML and validating a large config costs far more than a launch may spend, so the result
is kept as plain data (marshal) and rebuilt into records on the next run with the same bytes.
"""

from __future__ import annotations

import contextlib
import marshal
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from start import paths
from start.config import files
from start.config.model import (
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
from start.errors import Problem

FORMAT = 1
KEEP = 32
_KINDS: Mapping[str, type[Item]] = {
    "agents": Agent,
    "roles": Role,
    "contexts": Context,
    "tasks": Task,
}
# The modules whose code decides what a config means; a change to any of them is a new key.
_CODE = (
    "config/load.py",
    "config/validate.py",
    "config/schema.py",
    "config/model.py",
    "config/files.py",
    "config/cache.py",
    "template.py",
    "agent.py",
    "errors.py",
)


def _code_stamp() -> str:
    root = Path(__file__).resolve().parent.parent
    parts = []
    for name in _CODE:
        try:
            info = os.stat(root / name)
        except OSError:
            continue
        parts.append(f"{name}:{info.st_mtime_ns}:{info.st_size}")
    return ";".join(parts)


def key(
    layers: Sequence[str],
    dirs: Mapping[str, Path | None],
    contents: Mapping[Path, bytes],
    strays: Sequence[Path],
) -> str:
    """A digest of everything the loaded config depends on."""
    from start import __version__

    digest = files.new_sha256()
    digest.update(f"{FORMAT}|{__version__}|{_code_stamp()}|{layers!r}|".encode())
    for name in layers:
        digest.update(f"{name}={dirs.get(name)}|".encode())
    for path, data in contents.items():
        digest.update(f"{path}|{len(data)}|".encode("utf-8", "surrogateescape"))
        digest.update(data)
    for path in strays:
        digest.update(f"stray:{path}|".encode("utf-8", "surrogateescape"))
    result: str = digest.hexdigest()
    return result


def _path(cache_key: str) -> Path:
    return paths.cache_dir() / f"config-{cache_key[:32]}.bin"


def get(
    cache_key: str, project: paths.ProjectLocation, dirs: Mapping[str, Path | None]
) -> Config | None:
    """The cached config for this key, or None (missing, corrupt, or not ours)."""
    path = _path(cache_key)
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_uid != os.getuid():
                return None
            data = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("key") != cache_key:
        return None
    try:
        return _decode(data, project, dirs)
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def put(cache_key: str, config: Config) -> None:
    """Store a config; failures to write only cost speed next time."""
    try:
        directory = paths.cache_dir()
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = _path(cache_key)
        temp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            marshal.dump(_encode(cache_key, config), handle)
        os.replace(temp, target)
        _prune(directory)
    except OSError:
        return


def _prune(directory: Path) -> None:
    entries = sorted(directory.glob("config-*.bin"), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in entries[KEEP:]:
        with contextlib.suppress(OSError):
            stale.unlink()


def _encode(cache_key: str, config: Config) -> dict[str, Any]:
    origins: dict[Origin, int] = {}

    def origin(value: Origin) -> int:
        return origins.setdefault(value, len(origins))

    items: dict[str, list[Any]] = {}
    for kind in _KINDS:
        mapping: Mapping[str, Item] = getattr(config, kind)
        rows = []
        for item in mapping.values():
            defaults = item._field_defaults
            fields: dict[str, Any] = {}
            for name in item._fields[2:]:  # after name and origin
                value = getattr(item, name)
                if name in defaults and value == defaults[name]:
                    continue
                fields[name] = dict(value) if name == "models" else value
            rows.append((item.name, origin(item.origin), fields))
        items[kind] = rows
    settings = config.settings
    setting_origins = {name: origin(o) for name, o in settings.origins.items()}
    return {
        "key": cache_key,
        # Filled by the calls above, so it comes after them.
        "origins": [(o.layer, str(o.path)) for o in origins],
        "settings": {
            name: getattr(settings, name) for name in settings._fields if name != "origins"
        },
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


def _decode(
    data: dict[str, Any], project: paths.ProjectLocation, dirs: Mapping[str, Path | None]
) -> Config:
    origins = [Origin(layer, Path(path)) for layer, path in data["origins"]]
    kinds: dict[str, dict[str, Item]] = {}
    for kind, cls in _KINDS.items():
        kinds[kind] = {
            name: cls(name=name, origin=origins[index], **fields)
            for name, index, fields in data["items"][kind]
        }
    settings = Settings(
        **data["settings"],
        origins={name: origins[index] for name, index in data["setting_origins"].items()},
    )
    return Config(
        settings=settings,
        agents=kinds["agents"],  # type: ignore[arg-type]
        roles=kinds["roles"],  # type: ignore[arg-type]
        contexts=kinds["contexts"],  # type: ignore[arg-type]
        tasks=kinds["tasks"],  # type: ignore[arg-type]
        project=project,
        files=tuple(
            LayerFile(layer, Path(path), digest, parsed)
            for layer, path, digest, parsed in data["files"]
        ),
        layer_dirs=dict(dirs),
        problems=tuple(
            Problem(sev, None if file is None else Path(file), key, message, suggestion, line, col)
            for sev, file, key, message, suggestion, line, col in data["problems"]
        ),
    )
