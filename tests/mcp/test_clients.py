"""What `start mcp --print-config` prints for the apps that read a JSON file of servers starts a
real server: the entry's command and args, run as such a client runs them, from no project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_tree
from tests.mcp.conftest import CONFIG

BIN = Path(sys.executable).parent


@pytest.mark.skipif(not (BIN / "start").exists(), reason="start is not installed beside python")
@pytest.mark.parametrize(
    ("client", "key"),
    [
        ("claude-desktop", "mcpServers"),
        ("cursor", "mcpServers"),
        ("windsurf", "mcpServers"),
        ("zed", "context_servers"),
        ("json", "mcpServers"),
        ("vscode", "servers"),
    ],
)
def test_the_printed_entry_starts_a_server_for_this_project(
    isolated: Path, tmp_path: Path, client: str, key: str, anyio_backend: str
) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    config = tmp_path / "global"
    write_tree(config, {"config.toml": CONFIG})
    write_tree(isolated, {"GUIDE.md": "The guide.\n"})
    env = {
        **os.environ,
        "START_CONFIG_DIR": str(config),
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
    }
    printed = subprocess.run(
        [str(BIN / "start"), "mcp", "--print-config", client, "-q"],
        cwd=isolated,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    entry = json.loads(printed.stdout)[key]["start"]
    # The editors fill in the project they have open.
    args = [arg.replace("${workspaceFolder}", str(isolated)) for arg in entry["args"]]

    async def session() -> str:
        parameters = StdioServerParameters(
            command=entry["command"], args=args, env=env, cwd=os.path.abspath(os.sep)
        )
        async with Client(parameters, mode="legacy") as client:
            return client.instructions or ""

    instructions = anyio.run(session)
    assert instructions.startswith(f"start serves the user's tasks for {isolated}.")
