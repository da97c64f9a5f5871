"""The `start mcp` fixtures: a scratch global config, no shipped items, and the SDK's own client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from start.base import paths
from start.runs import rules
from tests.conftest import write_tree

if TYPE_CHECKING:
    from mcp import Client

# Seed 000's example Taskfile, as start tasks, and a few more cases.
CONFIG = """
[settings]
default_agent = "stand-in"

[agents.stand-in]
bin = "true"
command = "{bin} {prompt}"
default_model = "small"

[agents.stand-in.models]
small = "stand-in-small-1"

[roles.reviewer]
description = "A careful reviewer"
prompt = "You review code."

[contexts.guide]
description = "The project guide"
required = true
file = "GUIDE.md"

[contexts.branch]
description = "What branch this is"
command = "echo main"

[tasks.greet]
description = "Prints a simple greeting message."
command = "echo 'Hello from your custom Taskfile!'"
prompt = "Greet the user with: {command_output}"

[tasks.both-streams]
description = "Writes to stdout and stderr."
command = "echo out; echo 'to stderr' >&2"
prompt = "Look at: {command_output}"

[tasks.deliberate-fail]
description = "A task designed to exit with an error code to demonstrate error handling."
command = "echo 'This task will fail!' && exit 1"

[tasks.exit-three]
description = "Exits 3 after writing to both streams."
command = "echo partial; echo 'broken pipe' >&2; exit 3"

[tasks.review]
alias = "rv"
description = "Review the change"
role = "reviewer"
prompt = "Review the change. Focus: {instructions} (model {model})"

[tasks.hidden]
description = "An internal helper"
internal = true
prompt = "hidden"

[tasks.undocumented]
prompt = "no description"
"""

# The board's tools (start.mcp.board), offered whatever the config says, after the others.
BOARD_TOOLS = [
    "board_tasks_create",
    "board_tasks_list",
    "board_tasks_get",
    "board_tasks_claim",
    "board_tasks_update",
    "board_tasks_watch",
]
TASKS = ["both-streams", "deliberate-fail", "exit-three", "greet", "review"]
# What the instructions and list_tasks say when no agent can be asked (CONFIG's has no headless
# form).
NO_ASKING = (
    " The asking tools are not offered: no agent with a headless form (print_command) is on PATH."
)


def no_taskfile(root: Path) -> str:
    """What the instructions end with for a project without a Taskfile (start.mcp.taskfile)."""
    return (
        " No Taskfile tools (list_user_tasks, run_user_task): "
        f"{root} has no .agent/Taskfile.yml or Taskfile.yml."
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["legacy", "auto"])
def mode(request: pytest.FixtureRequest) -> str:
    """Both protocol eras: "legacy" is the initialize handshake that stdio hosts speak today."""
    param: str = request.param
    return param


@pytest.fixture
def global_dir(isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A global config with CONFIG, and an empty built-in layer so listings are exact."""
    directory = tmp_path / "global"
    write_tree(directory, {"config.toml": CONFIG})
    monkeypatch.setenv("START_CONFIG_DIR", str(directory))
    builtin = tmp_path / "builtin"
    builtin.mkdir()
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(builtin))
    write_tree(isolated, {"GUIDE.md": "The guide.\n"})
    return directory


@asynccontextmanager
async def connect(workdir: Path, mode: str, use_project: bool = True) -> AsyncIterator[Client]:
    """The SDK's own client, in process, on a server for `workdir`."""
    from mcp import Client

    from start.mcp import server

    async with Client(server.build(rules.Scope(str(workdir), use_project)), mode=mode) as client:
        yield client
