"""How each MCP client registers `start mcp`: a command to run, or a snippet for its config file.

Each `mcp add` form was checked against the client's own `mcp add --help` and the file it wrote;
the config files of VS Code, Claude Desktop, Cursor, Windsurf and Zed follow their documented
formats. docs/mcp.md lists the versions and sources.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from start.base.record import Record
from start.proc import shellwords

NAME = "start"


class Registration(Record):
    """What to run or paste (data, for stdout), and where it goes (a hint, for stderr)."""

    text: str
    hint: str


# Each CLI's `mcp add`: whether the `--` that ends its own options goes after `start` (Gemini's
# and Qwen's parsers take the first word after `--` as the server's command; Gemini's own -d
# means --debug), and where the registration goes.
_ADD: dict[str, tuple[bool, str]] = {
    "claude": (
        False,
        "Claude Code: run it in the project (local scope). Put -s user after 'add' for every "
        "project, or -s project to share it in .mcp.json. Prompts become /mcp__start__NAME.",
    ),
    "gemini": (
        True,
        "Gemini CLI: writes .gemini/settings.json in this folder (-s user: ~/.gemini/settings.json)"
        "; servers run only in trusted folders. Prompts become /NAME.",
    ),
    "codex": (
        False,
        "Codex: writes [mcp_servers.start] to ~/.codex/config.toml. If the first start is slow, "
        "add startup_timeout_sec = 30 there (the default is 10).",
    ),
    "opencode": (
        False,
        "opencode: writes ~/.config/opencode/opencode.jsonc; for one project, put the same "
        'entry under "mcp" in its opencode.json.',
    ),
    "qwen": (True, "Qwen Code: writes ~/.qwen/settings.json (-s project: .qwen/settings.json)."),
    "copilot": (False, "GitHub Copilot CLI: writes ~/.copilot/mcp-config.json."),
}


def _add(client: str, args: list[str]) -> Registration:
    after, hint = _ADD[client]
    server = ["start", "--", *args] if after else ["--", "start", *args]
    return Registration(shellwords.join([client, "mcp", "add", NAME, *server]), hint)


def _vscode(args: list[str]) -> Registration:
    if "-d" not in args:
        # VS Code documents ${workspaceFolder}; it does not say which directory servers start in.
        args = [*args, "-d", "${workspaceFolder}"]
    entry = {"type": "stdio", "command": "start", "args": args}
    return Registration(
        json.dumps({"servers": {NAME: entry}}, indent=2),
        'VS Code: put this in .vscode/mcp.json (or merge the entry into its "servers").',
    )


# The apps and editors that read a JSON file of servers: the key of the servers, and where the
# entry goes. Those that start a server in no particular project get `-d` with this one's path.
_FILES: dict[str, tuple[str, str]] = {
    "claude-desktop": (
        "mcpServers",
        'Claude Desktop: merge the entry into "mcpServers" in claude_desktop_config.json '
        "(Settings > Developer > Edit Config: ~/Library/Application Support/Claude/ on macOS, "
        "%APPDATA%\\Claude\\ on Windows), then restart it. It starts servers in no project, so "
        "-d names this one; and not with your shell's PATH, so the command is start's full path.",
    ),
    "cursor": (
        "mcpServers",
        "Cursor: put this in .cursor/mcp.json in the project, or in ~/.cursor/mcp.json for every "
        'project (or merge the entry into its "mcpServers").',
    ),
    "windsurf": (
        "mcpServers",
        'Windsurf: merge the entry into "mcpServers" in ~/.codeium/windsurf/mcp_config.json '
        "(Cascade > MCP servers > View raw config); the file serves every project, so -d names "
        "this one.",
    ),
    "zed": (
        "context_servers",
        'Zed: merge the entry into "context_servers" in ~/.config/zed/settings.json (zed: open '
        "settings); Zed serves every project from it, so -d names this one.",
    ),
    "json": (
        "mcpServers",
        'The "mcpServers" entry that most MCP clients read: merge it into the client\'s file. -d '
        "names this project; where the client starts servers without your shell's PATH, put "
        "start's full path in command.",
    ),
}
# Clients whose file has a variable for the project they open (as VS Code's).
_WORKSPACE = ("vscode", "cursor")


def _file(client: str, args: list[str], workdir: str) -> Registration:
    key, hint = _FILES[client]
    if "-d" not in args:
        directory = "${workspaceFolder}" if client in _WORKSPACE else workdir
        args = [*args[:1], "-d", directory, *args[1:]]
    command = _full_path() if client == "claude-desktop" else NAME
    entry = {"command": command, "args": args}
    return Registration(json.dumps({key: {NAME: entry}}, indent=2), hint)


def _full_path() -> str:
    """The `start` program by its full path: on PATH, else beside the Python that runs it."""
    from start.base import paths

    found = paths.which(NAME) or paths.which(os.path.join(os.path.dirname(sys.executable), NAME))
    return os.path.abspath(found) if found is not None else NAME


CLIENTS = (*_ADD, "vscode", *_FILES)


def registration(client: str, args: Sequence[str], workdir: str = "") -> Registration:
    """The registration of `start ARGS` (ARGS begins with `mcp`) for one client; `workdir` is
    the directory served, for the clients that start servers in no project."""
    if client == "vscode":
        return _vscode(list(args))
    if client in _FILES:
        return _file(client, list(args), workdir)
    return _add(client, list(args))
