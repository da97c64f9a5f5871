"""Where things live: the config, state and runtime directories, the project's `.start/`, and
programs on PATH.

Paths are strings handled with `os.path` throughout `start`: pathlib, with the urllib.parse and
ipaddress it imports, would cost every launch (docs/performance.md), and
tests/test_import_hygiene.py keeps it off the launch path. `clean` gives a path the form pathlib
would.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import TYPE_CHECKING

from start.base.errors import StartError
from start.base.record import Record

if TYPE_CHECKING:
    from collections.abc import Mapping

APP = "start"
PROJECT_DIR_NAME = ".start"
# A project's go-task Taskfile, which `start mcp` offers to agents as tools (start.mcp.taskfile),
# below the project root, the first found first.
TASKFILES = (".agent/Taskfile.yml", "Taskfile.yml")


def taskfile(root: str) -> str | None:
    """The project's Taskfile: the first of TASKFILES that is a file below `root`, or None.
    What `start mcp` offers, and what an approval of the project pins (start.trust.scan)."""
    found = (os.path.join(root, place) for place in TASKFILES)
    return next((path for path in found if os.path.isfile(path)), None)


def clean(path: str) -> str:
    """`path` in pathlib's form: no empty or `.` parts, no trailing slash; `..` is kept.

    A path that is empty, or only `.` parts, is `.`.
    """
    if "//" not in path and "/." not in path and not path.endswith("/") and path[:2] != "./":
        return path or "."
    head = "/" if path.startswith("/") else ""
    if path.startswith("//") and not path.startswith("///"):
        head = "//"  # POSIX leaves a leading `//` to the system; pathlib keeps it too
    parts = [part for part in path.split("/") if part and part != "."]
    return head + "/".join(parts) if parts else head or "."


def join(*parts: str) -> str:
    """`os.path.join`, in pathlib's form (`clean`)."""
    return clean(os.path.join(*parts))


def home() -> str:
    """The user's home directory, as `Path.home()` finds it."""
    return clean(os.path.expanduser("~"))


def expanduser(path: str) -> str:
    """`~` or `~user` at the start replaced, in pathlib's form."""
    return clean(os.path.expanduser(path))


def global_config_dir() -> str:
    """`$START_CONFIG_DIR`, else `$XDG_CONFIG_HOME/start`, else `~/.config/start` (macOS too)."""
    explicit = os.environ.get("START_CONFIG_DIR")
    if explicit:
        return expanduser(explicit)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return join(expanduser(xdg), APP)
    return join(home(), ".config", APP)


def _xdg(variable: str, fallback: str, which: str) -> str:
    """An XDG base directory for `start`; platformdirs decides on macOS."""
    if sys.platform == "darwin":
        import platformdirs

        found: str = getattr(platformdirs, f"user_{which}_dir")(APP, appauthor=False)
        return clean(found)
    # The XDG rule platformdirs applies on Linux, without its import on every launch.
    value = os.environ.get(variable, "").strip()
    base = expanduser(value) if value else join(home(), fallback)
    return join(base, APP)


def state_dir() -> str:
    """Per-user state (trust records): `$XDG_STATE_HOME/start`, else `~/.local/state/start`."""
    return _xdg("XDG_STATE_HOME", ".local/state", "state")


def runtime_dir(environ: Mapping[str, str] | None = None) -> str:
    """A per-user private directory for temp files (`{role_file}`, `{prompt_file}`).

    `$XDG_RUNTIME_DIR/start` when that directory exists and is writable (or `start` in it already
    is), else `start-UID` in the system's temp directory. With `environ`, the directory that a
    `start` with that environment finds (the temp directory is then `$TMPDIR`, else /tmp).
    """
    xdg = (os.environ if environ is None else environ).get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        ours = join(xdg, APP)
        if os.access(ours if os.path.isdir(ours) else xdg, os.W_OK | os.X_OK):
            return ours
    if sys.platform == "darwin":
        import platformdirs

        return clean(platformdirs.user_runtime_dir(APP, appauthor=False))
    if environ is not None:
        return join(environ.get("TMPDIR") or "/tmp", f"{APP}-{os.getuid()}")
    import tempfile

    return join(tempfile.gettempdir(), f"{APP}-{os.getuid()}")


def global_config_file() -> str:
    """The user's global config file, where hints send them to change a setting."""
    return join(global_config_dir(), "config.toml")


def private_directory(directory: str) -> bool:
    """Make `directory` (and its parents) if missing, mode 0700, and keep it 0700.

    False when it is not a directory owned by this user (a symlink included): then it is left
    as it is. OSError when it cannot be made or looked at.
    """
    fd = open_private(directory)
    if fd is None:
        return False
    os.close(fd)
    return True


def open_private(directory: str, *, create: bool = True) -> int | None:
    """A descriptor of `directory`, verified to be a real directory owned by this user, 0700.

    The directory is opened without following a symlink, and checked through the descriptor, so
    what is checked is what is used: a link planted at the name (another user's `/tmp/start-UID`
    pointing into your home) is refused, never followed. With `create`, a missing directory (and
    its parents) is made 0700; a directory of this user's with a wider mode is narrowed to 0700.
    None when it is not such a directory (or, without `create`, missing); OSError when it cannot
    be made or opened.
    """
    if create:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(directory, flags)
    except FileNotFoundError:
        if create:
            raise
        return None
    except (NotADirectoryError, OSError) as error:
        if isinstance(error, NotADirectoryError) or error.errno == errno.ELOOP:
            return None  # a symlink (O_NOFOLLOW) or a file
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            os.close(fd)
            return None
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def owned_directory(where: str, *, create: bool, error: type[StartError]) -> int | None:
    """`open_private` for a store's directory (the history, the boards): None when it is missing
    and not to be made; `error` when something else is at `where` (a link, a file, another
    user's). OSError when it cannot be made or opened."""
    fd = open_private(where, create=create)
    if fd is None and (create or os.path.lexists(where)):
        raise error(f"{where} is not a directory owned by you; remove it")
    return fd


class WorkdirGoneError(StartError):
    """The working directory was deleted (or moved) after the shell entered it."""

    def __init__(self) -> None:
        super().__init__(
            "the current directory no longer exists (it was deleted or moved); "
            "cd to an existing directory, or pass -d DIR"
        )


def current_dir() -> str:
    """The working directory; WorkdirGoneError when it was deleted from under the shell."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise WorkdirGoneError() from None


def builtin_config_dir() -> str:
    """The shipped `config/`: inside the wheel as `start/_builtin`, else the source checkout's."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the package
    packaged = os.path.join(here, "_builtin")
    if os.path.isdir(packaged):
        return packaged
    return os.path.join(os.path.dirname(here), "config")


class ProjectLocation(Record):
    """The working directory, the project's `.start/` if any, and the project root."""

    workdir: str
    start_dir: str | None
    git_root: str | None

    @property
    def root(self) -> str:
        """The directory holding `.start/`, else the git work-tree root, else the working dir."""
        if self.start_dir is not None:
            return os.path.dirname(self.start_dir)
        if self.git_root is not None:
            return self.git_root
        return self.workdir


def find_project(workdir: str) -> ProjectLocation:
    """Search `workdir` and its parents for `.start/`, stopping at the git root or home."""
    workdir = os.path.realpath(workdir)
    stop = os.path.realpath(home())
    start_dir: str | None = None
    git_root: str | None = None
    directory = workdir
    while True:
        candidate = os.path.join(directory, PROJECT_DIR_NAME)
        if start_dir is None and os.path.isdir(candidate):
            start_dir = candidate
        if os.path.exists(os.path.join(directory, ".git")):
            git_root = directory
            break
        parent = os.path.dirname(directory)
        if directory == stop or parent == directory:
            break
        directory = parent
    return ProjectLocation(workdir=workdir, start_dir=start_dir, git_root=git_root)


def expand(path: str, base: str) -> str:
    """Expand `~` and resolve a relative path against `base` (the project root)."""
    expanded = expanduser(path)
    return expanded if os.path.isabs(expanded) else join(base, expanded)


def which(name: str) -> str | None:
    """The program `name` as `shutil.which` finds it, or None: the first executable file of that
    name in a PATH directory, or `name` itself when it has a slash.

    `shutil` imports zlib, bz2 and lzma for its archives, which every launch would pay for this one
    function (tests/test_import_hygiene.py). tests/base/test_paths.py holds it to shutil's answers.
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
