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


def _claude(args: list[str]) -> Registration:
    return Registration(
        shlex.join(["claude", "mcp", "add", NAME, "--", "start", *args]),
        "Claude Code: run it in the project (local scope). Put -s user after 'add' for every "
        "project, or -s project to share it in .mcp.json. Prompts become /mcp__start__NAME.",
    )


def _gemini(args: list[str]) -> Registration:
    # Gemini's parser takes the first word after `--` as the server's command, so `--` goes after
    # `start` (and its own -d means --debug).
    return Registration(
        shlex.join(["gemini", "mcp", "add", NAME, "start", "--", *args]),
        "Gemini CLI: writes .gemini/settings.json in this folder (-s user: ~/.gemini/settings.json)"
        "; servers run only in trusted folders. Prompts become /NAME.",
    )


def _qwen(args: list[str]) -> Registration:
    return Registration(
        shlex.join(["qwen", "mcp", "add", NAME, "start", "--", *args]),
        "Qwen Code: writes ~/.qwen/settings.json (-s project: .qwen/settings.json).",
    )


def _codex(args: list[str]) -> Registration:
    return Registration(
        shlex.join(["codex", "mcp", "add", NAME, "--", "start", *args]),
        "Codex: writes [mcp_servers.start] to ~/.codex/config.toml. If the first start is slow, "
        "add startup_timeout_sec = 30 there (the default is 10).",
    )


def _opencode(args: list[str]) -> Registration:
    return Registration(
        shlex.join(["opencode", "mcp", "add", NAME, "--", "start", *args]),
        "opencode: writes ~/.config/opencode/opencode.jsonc; for one project, put the same "
        'entry under "mcp" in its opencode.json.',
    )


def _copilot(args: list[str]) -> Registration:
    return Registration(
        shlex.join(["copilot", "mcp", "add", NAME, "--", "start", *args]),
        "GitHub Copilot CLI: writes ~/.copilot/mcp-config.json.",
    )


def _vscode(args: list[str]) -> Registration:
    if "-d" not in args:
        # VS Code documents ${workspaceFolder}; it does not say which directory servers start in.
        args = [*args, "-d", "${workspaceFolder}"]
    entry = {"type": "stdio", "command": "start", "args": args}
    return Registration(
        json.dumps({"servers": {NAME: entry}}, indent=2),
        'VS Code: put this in .vscode/mcp.json (or merge the entry into its "servers").',
    )


CLIENTS = {
    "claude": _claude,
    "gemini": _gemini,
    "codex": _codex,
    "opencode": _opencode,
    "qwen": _qwen,
    "copilot": _copilot,
    "vscode": _vscode,
}


def registration(client: str, args: Sequence[str]) -> Registration:
    """The registration of `start ARGS` (ARGS begins with `mcp`) for one client."""
    return CLIENTS[client](list(args))
