"""`start mcp`: serve the tasks, contexts and roles to an MCP client on stdin and stdout."""

from __future__ import annotations

import gc
import sys

import click

from start.base.errors import ExitCode, StartError
from start.cli.commands import command
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options
from start.cli.state import get_options
from start.mcp.clients import CLIENTS, registration
from start.runs import rules
from start.ui import console

# What --debug shows of a server: what it does, at logging's DEBUG level.
DEBUG_SERVER = "Log what the server does, and the traceback of an error (or START_DEBUG=1)."


class MissingExtraError(StartError):
    """The MCP SDK, an optional extra, is not installed (or not a supported version)."""


@command(
    examples=[
        ("Serve this project's tasks (an agent runs this itself)", "start mcp"),
        ("How to register the server in Claude Code", "start mcp --print-config claude"),
        ("The registration for another project", "start mcp -d ~/src/app --print-config gemini"),
        ("The mcpServers entry of Claude Desktop", "start mcp --print-config claude-desktop"),
    ],
    json=False,
    epilog="Docs: start help --topic mcp",
)
@click.option(
    "--print-config",
    "client",
    type=click.Choice(list(CLIENTS)),
    metavar="AGENT",
    help=f"Print how to register this server in AGENT ({', '.join(CLIENTS)}).",
)
@common_options(DIRECTORY, QUIET, NO_PROJECT, debug=DEBUG_SERVER)
def mcp(client: str | None) -> int:
    """Serve your tasks as MCP prompts and tools, and contexts and roles as resources.

    Its ask_agent tools let the agent ask other agents, run headless (read-only unless
    settings.mcp_permissions allows more). The client starts this command and speaks MCP on its
    stdin and stdout. Needs the mcp extra:
    pipx inject start-agent 'mcp>=2.3,<3'. See docs/mcp.md.
    """
    options = get_options()
    args = ["mcp"]
    if options.directory is not None:
        args += ["-d", str(options.workdir)]
    if options.no_project:
        args.append("--no-project")
    if client is not None:
        found = registration(client, args, options.workdir)
        console.out(found.text)
        if not options.quiet:
            console.err(found.hint)
        _warn_missing_sdk(options.no_color)
        return ExitCode.OK
    require_sdk()
    import logging

    from start.mcp import server

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if options.debug else logging.WARNING,
        format="start mcp: %(levelname)s %(name)s: %(message)s",
    )
    if sys.stdin.isatty() and not options.quiet:
        console.err(
            f"start mcp: serving {options.workdir} over MCP on stdin and stdout; Ctrl-C stops it. "
            "Agents start it themselves: see start mcp --print-config AGENT"
        )
    # A server runs for as long as its client: collect cycles again (start.__main__ turns it off).
    gc.enable()
    scope = rules.Scope(options.workdir, not options.no_project, rules.depth())
    stopped = server.serve(scope)
    return ExitCode.OK if stopped is None else 128 + stopped


def require_sdk() -> None:
    """Raise MissingExtraError, saying how to add the extra, unless a supported SDK is present."""
    from start.setup import features

    missing = features.sdk_missing()
    if missing is not None:
        raise MissingExtraError(missing)


def _warn_missing_sdk(no_color: bool) -> None:
    """What the client would meet later, said now: the server it registers cannot start."""
    from start.setup import features

    missing = features.sdk_missing()
    if missing is not None:
        first, rest = missing.split("\n", 1)
        console.warning(
            f"the registered server will fail when the client starts it: {first[0].lower()}"
            f"{first[1:]}\n{rest}",
            no_color=no_color,
        )
