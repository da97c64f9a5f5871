"""How each MCP client registers `start mcp`: a command to run, or a snippet for its config file.

Each form was checked against the client's own `mcp add --help` and the file it wrote, or, for VS
Code, its documented format; docs/mcp.md lists the versions and sources.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from start.record import Record

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
    return Registration(shlex.join([client, "mcp", "add", NAME, *server]), hint)


def _vscode(args: list[str]) -> Registration:
    if "-d" not in args:
        # VS Code documents ${workspaceFolder}; it does not say which directory servers start in.
        args = [*args, "-d", "${workspaceFolder}"]
    entry = {"type": "stdio", "command": "start", "args": args}
    return Registration(
        json.dumps({"servers": {NAME: entry}}, indent=2),
        'VS Code: put this in .vscode/mcp.json (or merge the entry into its "servers").',
    )


CLIENTS = (*_ADD, "vscode")


def registration(client: str, args: Sequence[str]) -> Registration:
    """The registration of `start ARGS` (ARGS begins with `mcp`) for one client."""
    return _vscode(list(args)) if client == "vscode" else _add(client, list(args))
