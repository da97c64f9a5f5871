"""Starter configs for `start init`: find installed agents, build commented TOML, write it."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import textwrap
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from start.base import atomic, fs, paths
from start.base.errors import StartError, UnknownNameError
from start.compose.resolve import Which
from start.config import files, schema
from start.setup.doctor import find_binary

CONFIG_NAME = "config.toml"
# The project's own guide for agents, in order of preference.
GUIDES = ("AGENTS.md", "README.md")

_Key = tuple[str, str]  # (section, name), such as ("tasks", "explain")


class ConfigExistsError(StartError):
    """Something is already where the config would go; the message says what, and what to do."""

    def __init__(self, path: str, message: str | None = None) -> None:
        self.path = path
        super().__init__(
            message
            or f"{path} already exists; pass --force to replace it "
            "(the old file is kept as a timestamped backup)"
        )


@dataclass(frozen=True, slots=True)
class Detection:
    """The catalog's agents in catalog order, and those installed, with their binary's path."""

    catalog: tuple[str, ...]
    installed: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Written:
    path: str  # the config path asked for
    target: str  # the file written: the same, or a symlink's target
    backup: str | None


def detect(workdir: str, which: Which = paths.which) -> Detection:
    """Which agents of the shipped catalog (the built-in layer) are on PATH."""
    from start.config.load import load

    config = load(workdir, use_project=False, layers=("built-in",))
    catalog = [a for a in config.agents.values() if a.origin.layer == "built-in"]
    installed: dict[str, str] = {}
    for agent in catalog:
        found = find_binary(agent.bin, workdir, which)
        if found is not None:
            installed[agent.name] = found
    return Detection(tuple(a.name for a in catalog), installed)


def choose_agent(detection: Detection, requested: str | None) -> tuple[str | None, str]:
    """The default agent for a global config and why, without asking anyone."""
    if requested is not None:
        if requested not in detection.catalog:
            raise UnknownNameError("agent", requested, detection.catalog)
        return requested, "--agent"
    installed = list(detection.installed)
    if not installed:
        return None, "no agent of the catalog is installed"
    if len(installed) == 1:
        return installed[0], "the only one installed"
    return installed[0], "the first installed"


def global_path() -> str:
    return os.path.join(paths.global_config_dir(), CONFIG_NAME)


def project_root(workdir: str) -> str:
    return paths.find_project(workdir).root


def project_path(root: str) -> str:
    return os.path.join(root, paths.PROJECT_DIR_NAME, CONFIG_NAME)


def guide(root: str) -> str | None:
    """The project's AGENTS.md or README.md, whichever exists (AGENTS.md first)."""
    for name in GUIDES:
        if os.path.isfile(os.path.join(root, name)):
            return name
    return None


def taken(directory: str, replacing: str) -> frozenset[_Key]:
    """Items the layer's other files define, which the new file must not define again."""
    found: set[_Key] = set()
    for path in files.layer_paths(directory):
        if path == replacing:
            continue
        table = files.read(path).table or {}
        for section, body in table.items():
            canonical = schema.SECTION_SYNONYMS.get(section, section)
            if canonical in schema.ITEM_SECTIONS and isinstance(body, dict):
                found.update((canonical, name) for name in body)
    return frozenset(found)


# --- the documents --------------------------------------------------------------------------
# The starter documents live in start/setup/starter/*.toml, cut into named snippets at `#== NAME`
# lines. A snippet named SECTION.NAME defines that item; it is left out, with a note, when another
# file of the layer defines the item already. Values chosen at run time are set through tomlkit.

_STARTER = os.path.join(os.path.dirname(os.path.realpath(__file__)), "starter")
_MARK = "#== "


def snippets(document: str) -> dict[str, str]:
    """The snippets of start/setup/starter/DOCUMENT.toml by name, in order."""
    with open(os.path.join(_STARTER, f"{document}.toml"), encoding="utf-8") as handle:
        text = handle.read()
    found: dict[str, str] = {}
    name: str | None = None
    for line in text.splitlines(keepends=True):
        if line.startswith(_MARK):
            name = line[len(_MARK) :].strip()
            found[name] = ""
        elif name is not None:
            found[name] += line
    return found


def _key(name: str) -> _Key | None:
    """The item a snippet defines, from its name (`roles.engineer`), or None."""
    section, dot, item = name.partition(".")
    return (section, item) if dot and section in schema.ITEM_SECTIONS else None


def _comment(text: str) -> str:
    return "".join(f"# {line}\n" for line in textwrap.wrap(text, 90, break_on_hyphens=False))


def _assemble(parts: Mapping[str, str], names: Iterable[str], skip: Collection[_Key]) -> str:
    out = []
    for name in names:
        key = _key(name)
        if key is not None and key in skip:
            section, item = key
            out.append(
                f"\n# [{section}.{item}] is not written here: another file in this directory "
                "defines it.\n"
            )
        else:
            out.append(parts[name])
    return "".join(out)


def global_text(
    agent: str | None, detection: Detection, skip: Collection[_Key] = frozenset()
) -> str:
    """The starter global config: settings, a role, a required context and two tasks."""
    import tomlkit

    parts = snippets("global")
    if agent is not None:
        others = [name for name in detection.installed if name != agent]
        if others:
            parts["agent-setting"] += _comment(f"Also installed: {', '.join(others)}.")
    elif detection.catalog:
        parts["agent-setting"] = (
            _comment(
                "No agent of start's catalog is installed yet (looked for: "
                f"{', '.join(detection.catalog)}). Install one, then name it here, for example:"
            )
            + f'# default_agent = "{detection.catalog[0]}"\n'
        )
    else:
        parts["agent-setting"] = (
            "# Name the agent to launch here once it is defined under [agents.NAME] below:\n"
            '# default_agent = "my-agent"\n'
        )
    document = tomlkit.parse(_assemble(parts, parts, skip))
    if agent is not None:
        document["settings"]["default_agent"] = agent
    return tomlkit.dumps(document)


def project_text(root: str, agent: str | None, skip: Collection[_Key] = frozenset()) -> str:
    """The starter project config: a context for the project's guide and an example task."""
    import tomlkit

    parts = snippets("project")
    found = guide(root)
    names = [
        "head",
        "agent-setting" if agent is not None else "settings",
        "contexts.project-guide" if found is not None else "no-guide",
        "tasks.todo-triage",
    ]
    document = tomlkit.parse(_assemble(parts, names, skip))
    if agent is not None:
        document["settings"]["default_agent"] = agent
    contexts = document.get("contexts")
    if found is not None and contexts is not None:
        context = contexts["project-guide"]
        context["description"] = f"Points the agent at {found}"
        context["file"] = found
    return tomlkit.dumps(document)


# --- writing --------------------------------------------------------------------------------


def create(
    path: str,
    text: str,
    *,
    force: bool,
    project_root: str | None = None,
    now: datetime | None = None,
) -> Written:
    """Write a starter config. A project file stays trusted if `.start/` was trusted before."""
    if project_root is None:
        return write(path, text, force=force, now=now)
    from start import trust
    from start.base.wall import write_target

    write_target(path, project_root)

    with trust.self_edit(project_root):
        return write(path, text, force=force, now=now)


def write(path: str, text: str, *, force: bool, now: datetime | None = None) -> Written:
    """Atomically write `text`; an existing file needs `force` and is first backed up.

    A symlinked config is written through: its target is replaced, and the link stays. Anything
    but a regular file (or a symlink to one, or to nothing) is refused, even with `force`.
    """
    _check_place(path, force)
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        backup = None
        if os.path.lexists(target):
            backup = _backup(target, now or datetime.now())
        try:
            atomic.replace(target, text.encode("utf-8"))
        except BaseException:
            if backup is not None:  # the original is still in place: the copy is not needed
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(backup)
            raise
    except OSError as error:
        raise StartError(f"cannot write {target}: {error.strerror or error}") from error
    return Written(path, target, backup)


def _check_place(path: str, force: bool) -> None:
    """Refuse to write where something that is not a regular config file is, saying what it is."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as error:
        raise StartError(f"cannot check {path}: {error.strerror or error}") from None
    if stat.S_ISLNK(info.st_mode):
        link = os.readlink(path)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            if force:
                return  # written through: the link's target is created
            raise ConfigExistsError(
                path,
                f"{path} is a dangling symlink to {link} (its target does not exist); remove it, "
                "or pass --force to write the file it points to",
            ) from None
        except OSError as error:
            what = "a symlink loop" if error.errno == errno.ELOOP else f"a symlink to {link}"
            raise ConfigExistsError(
                path, f"{path} is {what} that cannot be followed; remove it, then run start init"
            ) from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigExistsError(
            path,
            f"{path} is {fs.describe(info.st_mode)}, not a regular file; "
            "remove it (start init does not replace it), then run start init",
        )
    if not force:
        raise ConfigExistsError(path)


def _backup(path: str, now: datetime) -> str:
    """A copy of `path` beside it, named `config.toml.YYYYmmdd-HHMMSS.bak` (never `*.toml`).

    A copy that cannot be completed (a full disk) is removed: no empty or partial backup stays.
    """
    source = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(source)
        if not stat.S_ISREG(info.st_mode):  # swapped since it was checked
            raise StartError(f"{path} is {fs.describe(info.st_mode)}, not a regular file")
        stamp = now.strftime("%Y%m%d-%H%M%S")
        for attempt in range(1, 100):
            suffix = "" if attempt == 1 else f"-{attempt}"
            backup = f"{path}.{stamp}{suffix}.bak"
            try:
                fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                continue
            try:
                with os.fdopen(fd, "wb") as handle:
                    while chunk := os.read(source, 1 << 20):
                        handle.write(chunk)
                    handle.flush()
                    os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
                    os.fsync(handle.fileno())
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(backup)
                raise
            return backup
        raise FileExistsError(f"too many backups of {path} at {stamp}")
    finally:
        os.close(source)
