"""Where things live: the config, state and runtime directories, the project's `.start/`, and
programs on PATH."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from start.errors import StartError
from start.record import Record

APP = "start"
PROJECT_DIR_NAME = ".start"


def global_config_dir() -> Path:
    """`$START_CONFIG_DIR`, else `$XDG_CONFIG_HOME/start`, else `~/.config/start` (macOS too)."""
    explicit = os.environ.get("START_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg).expanduser() / APP
    return Path.home() / ".config" / APP


def _xdg(variable: str, fallback: str, which: str) -> Path:
    """An XDG base directory for `start`; platformdirs decides on macOS."""
    if sys.platform == "darwin":
        import platformdirs

        found: str = getattr(platformdirs, f"user_{which}_dir")(APP, appauthor=False)
        return Path(found)
    # The XDG rule platformdirs applies on Linux, without its import on every launch.
    value = os.environ.get(variable, "").strip()
    base = Path(value).expanduser() if value else Path.home() / fallback
    return base / APP


def state_dir() -> Path:
    """Per-user state (trust records): `$XDG_STATE_HOME/start`, else `~/.local/state/start`."""
    return _xdg("XDG_STATE_HOME", ".local/state", "state")


def cache_dir() -> Path:
    """Per-user cache (validated configs): `$XDG_CACHE_HOME/start`, else `~/.cache/start`."""
    return _xdg("XDG_CACHE_HOME", ".cache", "cache")


def runtime_dir() -> Path:
    """A per-user private directory for temp files (`{role_file}`, `{prompt_file}`).

    `$XDG_RUNTIME_DIR/start` when that directory exists and is writable (or `start` in it already
    is), else `start-UID` in the system's temp directory.
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        ours = Path(xdg) / APP
        if os.access(ours if ours.is_dir() else xdg, os.W_OK | os.X_OK):
            return ours
    if sys.platform == "darwin":
        import platformdirs

        return Path(platformdirs.user_runtime_dir(APP, appauthor=False))
    import tempfile

    return Path(tempfile.gettempdir()) / f"{APP}-{os.getuid()}"


def private_directory(directory: Path) -> bool:
    """Make `directory` (and its parents) if missing, mode 0700, and keep it 0700.

    False when it is not a directory owned by this user (a symlink included): then it is left
    as it is. OSError when it cannot be made or looked at.
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return False
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(directory, 0o700)
    return True


class WorkdirGoneError(StartError):
    """The working directory was deleted (or moved) after the shell entered it."""

    def __init__(self) -> None:
        super().__init__(
            "the current directory no longer exists (it was deleted or moved); "
            "cd to an existing directory, or pass -d DIR"
        )


def current_dir() -> Path:
    """The working directory; WorkdirGoneError when it was deleted from under the shell."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        raise WorkdirGoneError() from None


def builtin_config_dir() -> Path:
    """The shipped `config/`: inside the wheel as `start/_builtin`, else the source checkout's."""
    here = Path(__file__).resolve().parent
    packaged = here / "_builtin"
    if packaged.is_dir():
        return packaged
    return here.parent / "config"


class ProjectLocation(Record):
    """The working directory, the project's `.start/` if any, and the project root."""

    workdir: Path
    start_dir: Path | None
    git_root: Path | None

    @property
    def root(self) -> Path:
        """The directory holding `.start/`, else the git work-tree root, else the working dir."""
        if self.start_dir is not None:
            return self.start_dir.parent
        if self.git_root is not None:
            return self.git_root
        return self.workdir


def find_project(workdir: Path) -> ProjectLocation:
    """Search `workdir` and its parents for `.start/`, stopping at the git root or home."""
    workdir = workdir.resolve()
    home = Path.home().resolve()
    start_dir: Path | None = None
    git_root: Path | None = None
    for directory in (workdir, *workdir.parents):
        candidate = directory / PROJECT_DIR_NAME
        if start_dir is None and candidate.is_dir():
            start_dir = candidate
        if (directory / ".git").exists():
            git_root = directory
            break
        if directory == home:
            break
    return ProjectLocation(workdir=workdir, start_dir=start_dir, git_root=git_root)


def expand(path: str, base: Path) -> Path:
    """Expand `~` and resolve a relative path against `base` (the project root)."""
    expanded = Path(path).expanduser()
    return expanded if expanded.is_absolute() else base / expanded


def which(name: str) -> str | None:
    """The program `name` as `shutil.which` finds it, or None: the first executable file of that
    name in a PATH directory, or `name` itself when it has a slash.

    `shutil` imports zlib, bz2 and lzma for its archives: about 3 ms that every launch would pay
    for this one function (docs/performance.md). tests/test_paths.py holds it to shutil's answers.
    """
    if os.path.dirname(name):
        return name if _runnable(name) else None
    search = os.environ.get("PATH")
    if search is None:
        try:
            search = os.confstr("CS_PATH")
        except (AttributeError, ValueError):
            search = os.defpath
    if not search:
        return None
    seen: set[str] = set()
    for directory in search.split(os.pathsep):
        if directory in seen:
            continue
        seen.add(directory)
        candidate = os.path.join(directory, name)
        if _runnable(candidate):
            return candidate
    return None


def _runnable(path: str) -> bool:
    return os.path.exists(path) and os.access(path, os.X_OK) and not os.path.isdir(path)
