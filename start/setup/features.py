"""The optional features a setup uses, and what each needs: `start mcp` its extra (the MCP SDK),
the project's Taskfile the `task` program (the taskfile extra) and an approval. `start doctor`
checks them (`environment`, `project`); `start mcp` and `start mcp --print-config` say how to
add its extra (`sdk_missing`).

Whether a client runs `start mcp` is read from the files where each MCP client keeps its
servers (`registrations`): JSON (a file that is not plain JSON, such as one with comments, is
passed over) and Codex's TOML.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any, Final

from start.base import fs, paths
from start.base.errors import StartError
from start.config.model import Config
from start.setup.report import Check, Status

SDK: Final = "mcp>=2.3,<3"
# The most of a client's file that is read: ~/.claude.json keeps a history of every project.
_CLIENT_FILE_LIMIT: Final = 32 * 1_048_576

# Where MCP clients keep their servers: (path, the key of the servers, or "" for those of
# ~/.claude.json's projects too), below the project root and below the home directory.
_PROJECT_FILES: Final = (
    (".mcp.json", "mcpServers"),
    (".gemini/settings.json", "mcpServers"),
    (".qwen/settings.json", "mcpServers"),
    (".vscode/mcp.json", "servers"),
    (".cursor/mcp.json", "mcpServers"),
    ("opencode.json", "mcp"),
)
_HOME_FILES: Final = (
    (".claude.json", ""),
    (".gemini/settings.json", "mcpServers"),
    (".qwen/settings.json", "mcpServers"),
    (".cursor/mcp.json", "mcpServers"),
    (".copilot/mcp-config.json", "mcpServers"),
    (".codeium/windsurf/mcp_config.json", "mcpServers"),
    (".config/opencode/opencode.json", "mcp"),
    (".config/opencode/opencode.jsonc", "mcp"),
    (".config/zed/settings.json", "context_servers"),
    (".config/Claude/claude_desktop_config.json", "mcpServers"),
    ("Library/Application Support/Claude/claude_desktop_config.json", "mcpServers"),
    (".codex/config.toml", "mcp_servers"),
)


# --- start mcp's extra ------------------------------------------------------------------------


def sdk_version() -> str | None:
    """The installed MCP SDK's version, or None."""
    from importlib import metadata

    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return None


def supported(version: str) -> bool:
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None:
        return False
    major, minor = int(match.group(1)), int(match.group(2))
    return major == 2 and minor >= 3


def sdk_missing() -> str | None:
    """Why `start mcp` cannot run here and how to add its extra; None when a supported SDK is
    installed."""
    import shlex

    version = sdk_version()
    if version is not None and supported(version):
        return None
    found = f"Found mcp {version}, which is not supported. " if version is not None else ""
    ways = [(f"pipx inject start-agent '{SDK}'", "installed with pipx")]
    source = installed_from()
    if source is not None:
        # Not 'start-agent[mcp]': that name on PyPI is an unrelated project.
        command = f"pipx install --force {shlex.quote(source + '[mcp]')}"
        ways.append((command, "or reinstall with pipx"))
    ways.append((f"{shlex.quote(sys.executable)} -m pip install '{SDK}'", "installed with pip"))
    width = max(len(command) for command, _ in ways)
    lines = "\n".join(f"  {command.ljust(width)}  # {why}" for command, why in ways)
    return (
        f"start mcp needs the MCP Python SDK ({SDK}), the optional extra start-agent[mcp]. It is "
        "not installed by default: it adds about 45 MB and 1.5 s of imports (docs/mcp.md).\n"
        f"{found}Add it to the Python environment that runs start ({sys.executable}):\n{lines}"
    )


def installed_from() -> str | None:
    """The local directory start was installed from, as pip recorded it (PEP 610), if any."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlsplit

    try:
        text = metadata.distribution("start-agent").read_text("direct_url.json")
        url = urlsplit(json.loads(text or "{}").get("url", ""))
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        return None
    return unquote(url.path) if url.scheme == "file" and url.path else None


def registrations(root: str, home: str | None = None) -> list[str]:
    """The MCP clients' files (below `root` and the home directory) that run `start mcp`."""
    home = os.path.expanduser("~") if home is None else home
    found = []
    for base, places in ((root, _PROJECT_FILES), (home, _HOME_FILES)):
        for relative, key in places:
            path = os.path.join(base, relative)
            if path not in found and _registers(path, key):
                found.append(path)
    return found


def _registers(path: str, key: str) -> bool:
    """Whether the client's file at `path` has a server that runs `start mcp`."""
    try:
        read = fs.read(path, _CLIENT_FILE_LIMIT)
    except fs.FileError:
        return False
    if read.truncated or b"mcp" not in read.data:
        return False
    text = fs.text(read.data)
    try:
        if path.endswith(".toml"):
            import tomllib

            document: Any = tomllib.loads(text)
        else:
            import json

            document = json.loads(text)
    except ValueError:
        return False
    if not isinstance(document, dict):
        return False
    tables = [document.get(key)] if key else _claude_tables(document)
    return any(
        _runs_start(entry)
        for table in tables
        if isinstance(table, dict)
        for entry in table.values()
    )


def _claude_tables(document: Mapping[str, Any]) -> list[Any]:
    """~/.claude.json's servers: the user's, and each project's."""
    projects = document.get("projects")
    each = projects.values() if isinstance(projects, dict) else []
    return [document.get("mcpServers"), *(p.get("mcpServers") for p in each if isinstance(p, dict))]


def _runs_start(entry: Any) -> bool:
    """Whether a server entry runs `start mcp`: {"command": ".../start", "args": ["mcp", ...]},
    or opencode's {"command": ["start", "mcp", ...]}."""
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args") or []
    if isinstance(command, list) and command:
        command, args = command[0], command[1:]
    return (
        isinstance(command, str)
        and os.path.basename(command) == "start"
        and isinstance(args, list)
        and bool(args)
        and args[0] == "mcp"
    )


# --- the checks of start doctor ---------------------------------------------------------------


def environment(config: Config, use_project: bool) -> Iterator[Check]:
    """start mcp's extra, and the `task` program."""
    yield from _mcp(config)
    yield from _task(config, use_project)


def _mcp(config: Config) -> Iterator[Check]:
    version = sdk_version()
    if version is not None and supported(version):
        yield Check("environment", "ok", "mcp extra", f"mcp {version} (start mcp)")
        return
    fix = f"pipx inject start-agent '{SDK}' (pip: {sys.executable} -m pip install '{SDK}')"
    found = f"mcp {version} is not supported ({SDK})" if version is not None else "not installed"
    users = registrations(config.root)
    if users:
        listed = ", ".join(users)
        message = f"{found}, but {listed} run{'s' if len(users) == 1 else ''} start mcp"
        yield Check("environment", "error", "mcp extra", message, fix, users[0])
        return
    status: Status = "warning" if version is not None else "info"
    yield Check("environment", status, "mcp extra", f"{found} (only start mcp needs it)", fix)


def _task(config: Config, use_project: bool) -> Iterator[Check]:
    """The `task` program: a warning when the project's Taskfile needs it."""
    from start.runs import taskfile as taskfiles

    path = paths.taskfile(config.root)
    program = taskfiles.binary()
    fix = "pipx inject start-agent go-task-bin (or install go-task: https://taskfile.dev)"
    if program is not None:
        message = f"{program} (for a project's Taskfile)"
        yield Check("environment", "ok", "task", message, path=program)
    elif path is not None and use_project:
        name = os.path.relpath(path, config.root)
        message = f"not installed, and {name} needs it"
        yield Check("environment", "warning", "task", message, fix, path)
    else:
        yield Check("environment", "info", "task", "not installed (only a Taskfile needs it)", fix)


def project(config: Config, use_project: bool) -> Iterator[Check]:
    """The project's Taskfile: approved, and listed by `task`."""
    from start.runs import taskfile as taskfiles

    path = paths.taskfile(config.root)
    if path is None:
        return
    name = os.path.relpath(path, config.root)
    if not use_project:
        yield Check("project", "info", "taskfile", f"{name} is ignored for this run", path=path)
        return
    from start.compose.ask import USER

    try:
        found = taskfiles.usable(config, path, by=USER)
    except taskfiles.NoTaskProgramError:
        return  # told above
    except taskfiles.TaskfileError as error:
        # A Taskfile in .agent/ is there for agents; one at the root may be go-task's alone.
        status: Status = "warning" if os.path.dirname(name) else "info"
        fix = f"review {name}, then run 'start trust'"
        yield Check("project", status, "taskfile", f"{name} is not used: {error}", fix, path)
        return
    try:
        listed = taskfiles.tasks(found)
    except StartError as error:
        fix = f"fix {name} (`task --list` shows why)"
        yield Check("project", "error", "taskfile", str(error), fix, path)
        return
    names = ", ".join(task["name"] for task in listed) or "none"
    count = f"{len(listed)} task{'' if len(listed) == 1 else 's'}"
    message = f"{name}: {count} for start task taskfile:NAME and start mcp ({names})"
    yield Check("project", "ok", "taskfile", message, path=path)
