"""The launch path (`start`, `start prompt`, `start task`, no --dry-run) avoids rich and tomlkit,
imports nothing of `start mcp` or its optional SDK, and none of the modules a launch does without
(docs/performance.md, "What a launch imports, and why"): each test fails when one comes back.

The process ends by exec'ing the agent, so its sys.modules cannot be read afterwards; instead each
run has `-X importtime` (PYTHONPROFILEIMPORTTIME=1), which reports every import on stderr as it
happens, before the exec. This is a plain test: nothing here is timed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_start, write_tree
from tests.terminal import run_on_terminal

HEAVY = ("rich", "tomlkit")
# `start mcp` and the MCP SDK with what it pulls in: ~1.5 s of CPU to import (docs/mcp.md).
MCP = ("mcp", "mcp_types", "anyio", "pydantic", "starlette", "uvicorn", "httpx2")

CONFIG = """
[settings]
default_agent = "stand-in"

[agents.stand-in]
bin = "true"
command = "{bin} {prompt}"

[roles.reviewer]
prompt = "You review code."

[contexts.guide]
required = true
file = "GUIDE.md"

[contexts.style]
required = true
file = "STYLE.md"

[contexts.greeting]
required = true
command = "echo hi"

[tasks.t]
role = "reviewer"
prompt = "Review: {instructions}"
"""

# Modules a launch does without, each a few milliseconds that every launch would pay
# (docs/performance.md, "What keeps the launch path fast").
OFF_THE_LAUNCH_PATH = {
    "shutil": "paths.which finds programs; tempfiles imports it only to remove a directory",
    "difflib": "start imports it for a suggestion only, on an error",
    "pathlib": "paths are strings handled with os.path (pathlib imports urllib and ipaddress)",
    "urllib": "pathlib imported urllib.parse",
    "ipaddress": "urllib.parse imported ipaddress",
    "fnmatch": "pathlib imported fnmatch",
    "shlex": "only -v and a headless run split words; validating at launch skips shipped agents",
    "hashlib": "the config cache compares its key rather than hashing it; OpenSSL's binding",
    "_hashlib": "hashlib imported it",
    "sqlite3": "a launch records itself in the history as a pending file (start.runs.history)",
    "start.runs.store": "the history's database is read by start log and start again, not a launch",
    "start.base.sqlite": "the stores' door to SQLite: a launch records a pending file, no database",
    "start.proc.agents": "headless agents run for --print and start mcp; a launch runs only commands",
    "start.proc.watchdog": "a launch execs the agent: no process of its own outlives start to watch",
    "start.proc.groups": "a launch's commands end with it: no registry of groups, no worker threads",
    "start.proc.lineage": "only start mcp reads and records the runs it asks (its loop guard)",
    "concurrent": "only `start board run` runs its items in threads (start.board.runner)",
    "start.ui.display": "rich pages, tables, the pager and the board: listings, show, help, doctor",
    "start.cli.printing": "--print runs the agent headless and shows its answers; a launch execs",
    "start.cli.dryrun": "a dry run (and -v's command line) shows what a launch would run",
    "start.cli.taskfile": "only a task of the project's Taskfile (start task taskfile:NAME)",
    "start.runs.taskfile": "the Taskfile: its tasks' runs, listing and completion, and start mcp",
    "start.board": "the board's records: only `start board` and start mcp's board tools",
    "start.board.store": "the board's SQL: only `start board` and start mcp's board tools",
    "start.board.file": "opening the board: only `start board` and start mcp's board tools",
    "start.board.runner": "only `start board run` runs the board's items",
    "start.cli.board": "the `start board` commands",
    "start.cli.board_items": "the `start board` commands that make and change items",
    "start.cli.board_options": "what the `start board` commands take",
    "jmespath": "a workflow's expressions (about 17 ms): start config validate and workflow commands",
    "start.config.workflows": "workflows are read and checked by validate and workflow commands",
    "start.web": "the page of start board serve, its server and its views",
    "http.server": "only start board serve serves HTTP",
    "socketserver": "http.server imports it",
    "markdown_it": "Markdown is rendered for start board serve's page only",
    "start.compose.workflow": "a workflow's plan: only the workflow commands",
}

COMMANDS = {"start": (), "start prompt": ("prompt", "x"), "start task": ("task", "t", "x")}


@pytest.fixture
def env(isolated: Path) -> dict[str, str]:
    """A scratch git repository and a global config whose agent is `true`."""
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated, {"GUIDE.md": "The guide.\n", "STYLE.md": "The style.\n"})
    config = isolated.parent / "config"
    write_tree(config, {"config.toml": CONFIG})
    return {"START_CONFIG_DIR": str(config), "PYTHONPROFILEIMPORTTIME": "1"}


def imported(stderr: str) -> list[str]:
    """Module names from `-X importtime` lines: `import time: self | cumulative | name`."""
    names = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the header line
                names.append(name)
    return names


def heavy(names: list[str]) -> list[str]:
    return [name for name in names if name.split(".")[0] in HEAVY]


def of_mcp(names: list[str]) -> list[str]:
    ours = ("start.mcp", "start.cli.mcp")
    return [n for n in names if n.split(".")[0] in MCP or n.startswith(ours)]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("output", ["quiet", "summary", "summary on a terminal"])
def test_launch_path_imports_neither_rich_nor_tomlkit(
    command: str, output: str, isolated: Path, env: dict[str, str]
) -> None:
    # -q, which click's parser would try as a long option first, a miss that imports difflib and
    # locale (docs/performance.md, "click's parser is click's own"), had start not spelled it long.
    args = COMMANDS[command] if output != "quiet" else ("-q", *COMMANDS[command])
    if output == "summary on a terminal":
        code, stderr = run_on_terminal(*args, cwd=isolated, env=env, stdin=subprocess.DEVNULL)
    else:
        proc = run_start(*args, cwd=isolated, env=env)
        code, stderr = proc.returncode, proc.stderr
    names = imported(stderr)
    assert code == 0, stderr
    # The run went all the way to the exec, so the trace covers the whole launch path.
    assert "start.compose.launch" in names, stderr
    assert heavy(names) == []
    assert of_mcp(names) == []
    off = [name for name in names if {name, name.split(".")[0]} & OFF_THE_LAUNCH_PATH.keys()]
    assert off == []
    if output == "summary on a terminal":
        assert "\x1b[" in stderr, "the summary on a terminal was not coloured: " + stderr


def test_the_trace_shows_heavy_imports_when_they_happen(env: dict[str, str]) -> None:
    """The check above can fail: an interpreter that imports them shows them in its trace."""
    proc = subprocess.run(
        [sys.executable, "-c", "import rich.console, tomlkit"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert {"rich", "rich.console", "tomlkit"} <= set(heavy(imported(proc.stderr)))


def test_the_trace_shows_the_mcp_server_when_it_is_imported(env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import start.mcp.server"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    found = set(of_mcp(imported(proc.stderr)))
    assert {"mcp", "mcp_types", "anyio", "pydantic", "start.mcp.server"} <= found


# What `start config validate` does without: the editing commands (tomlkit, the editor's
# subprocess and temp files) and `config show`'s module (the TOML writer). Not json: validate
# checks the shipped workflows' expressions (config/workflows.toml), and jmespath imports it.
OFF_CONFIG_VALIDATE = (
    "start.cli.config_edit",
    "start.cli.config_editor",
    "start.setup.edit",
    "start.setup.layerfile",
    "start.config.show",
    "subprocess",
    "tempfile",
    "shutil",
)


def test_config_validate_loads_neither_the_editing_commands_nor_config_show(
    isolated: Path, env: dict[str, str]
) -> None:
    proc = run_start("config", "validate", cwd=isolated, env=env)
    names = imported(proc.stderr)
    assert proc.returncode == 0, proc.stderr
    assert "start.config.validate" in names, proc.stderr
    assert heavy(names) == []
    assert [name for name in names if name in OFF_CONFIG_VALIDATE] == []


# What a launch served from the config cache does without: it parses and validates nothing.
OFF_A_CACHE_HIT = ("tomllib", "start.config.validate")


def test_a_launch_served_from_the_config_cache_neither_parses_nor_validates(
    isolated: Path, env: dict[str, str]
) -> None:
    """The first launch parses the config and fills the cache; the next imports none of it."""
    first = run_start("-q", "task", "t", "x", cwd=isolated, env=env)
    second = run_start("-q", "task", "t", "x", cwd=isolated, env=env)
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert {"tomllib", "start.config.validate"} <= set(imported(first.stderr))
    names = imported(second.stderr)
    assert "start.compose.launch" in names, second.stderr
    assert [name for name in names if name in OFF_A_CACHE_HIT] == []


# What a launch in an approved project computes only when its memo (start.config.memo) does not
# hold the answer: the digests of the files the approval covers, and the approval record's JSON.
OFF_A_WARM_APPROVED_LAUNCH = ("hashlib", "_hashlib", "json")
PROJECT = (
    '[roles.mine]\nfile = "ROLE.md"\n\n[tasks.mine]\nrole = "mine"\nprompt = "{instructions}"\n'
)


def test_a_warm_launch_in_an_approved_project_takes_no_digest_and_parses_no_json(
    isolated: Path, env: dict[str, str]
) -> None:
    """The first launch after `start trust` parses the project's config and reads the new
    approval record; it remembers their digests and the record, and the next computes neither."""
    write_tree(isolated, {".start/config.toml": PROJECT, "ROLE.md": "You review.\n"})
    assert run_start("trust", "--yes", cwd=isolated, env=env).returncode == 0
    first = run_start("-q", "task", "mine", "x", cwd=isolated, env=env)
    second = run_start("-q", "task", "mine", "x", cwd=isolated, env=env)
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert {"hashlib", "json"} <= set(imported(first.stderr))
    names = imported(second.stderr)
    assert {"start.trust", "start.compose.launch"} <= set(names), second.stderr
    assert [name for name in names if name in OFF_A_WARM_APPROVED_LAUNCH] == []


# What starts and watches commands (start.proc.shell): subprocess (with selectors) and select, imported
# only when a launch runs a command.
COMMAND_RUNNER = ("subprocess", "selectors", "select")


def test_a_launch_imports_the_command_runner_only_when_it_runs_a_command(
    isolated: Path,
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated, {"GUIDE.md": "The guide.\n", "STYLE.md": "The style.\n"})
    config = isolated.parent / "config"
    without_commands = CONFIG.replace('command = "echo hi"', 'prompt = "hi"')
    write_tree(config, {"config.toml": without_commands})
    env = {"START_CONFIG_DIR": str(config), "PYTHONPROFILEIMPORTTIME": "1"}
    proc = run_start("--quiet", "task", "t", "x", cwd=isolated, env=env)
    names = imported(proc.stderr)
    assert proc.returncode == 0, proc.stderr
    assert "start.compose.launch" in names, proc.stderr
    assert [name for name in names if name in COMMAND_RUNNER] == []
    # With its command context, the same launch runs `echo hi` through subprocess.Popen.
    write_tree(config, {"config.toml": CONFIG})
    proc = run_start("--quiet", "task", "t", "x", cwd=isolated, env=env)
    names = imported(proc.stderr)
    assert proc.returncode == 0, proc.stderr
    assert {"subprocess", "select"} <= set(names), proc.stderr


# Ends a launch at its exec by listing the modules it imported, which `-X importtime` misses
# for a command module loaded with importlib.import_module.
_MODULES_AT_EXEC = """
import os, sys
def _done(*args):
    sys.stdout.write(" ".join(sorted(sys.modules)))
    sys.stdout.flush()
    os._exit(0)
os.execve = _done
sys.argv = ["start", *sys.argv[1:]]
from start.cli import main
main()
"""


@pytest.mark.parametrize(
    ("args", "defined"),
    [
        (("task", "t", "x"), "start.cli.task"),
        (("prompt", "x"), "start.cli.prompt"),
        ((), None),
    ],
)
def test_a_launch_defines_only_the_command_it_runs(
    args: tuple[str, ...], defined: str | None, isolated: Path, env: dict[str, str]
) -> None:
    # Each command's click options are built when its module is imported: a launch pays for
    # those of the command it runs, and a bare session for none.
    full = {**os.environ, **env, "PYTHONPATH": str(REPO)}
    del full["PYTHONPROFILEIMPORTTIME"]
    proc = subprocess.run(
        [sys.executable, "-c", _MODULES_AT_EXEC, "-q", *args],
        cwd=isolated,
        env=full,
        capture_output=True,
        text=True,
        check=False,
    )
    names = set(proc.stdout.split())
    assert proc.returncode == 0, proc.stderr
    assert "start.compose.launch" in names, proc.stderr
    commands = {"start.cli.task", "start.cli.prompt"}
    assert names & commands == ({defined} if defined else set())


def test_start_imports_no_private_module() -> None:
    """Public modules only: a private one (`_signal`, `_sha2`, `click.parser._OptionParser`),
    imported or reached as click's attribute, can change or go in any release (issue 24)."""
    import ast

    found = []
    for path in sorted((REPO / "start").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module not in (None, "__future__"):
                module = node.module or ""
                names = [module] + [f"{module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Attribute) and ast.unparse(node).startswith("click."):
                names = [ast.unparse(node)]
            else:
                continue
            for name in names:
                private = [p for p in name.split(".") if p[:1] == "_" and p[:2] != "__"]
                if private and not name.startswith("start."):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {name}")
    assert found == []


# What `start board` (the listing, a claim) does without: the runner and everything it runs
# through, the MCP SDK, the schema validator, and rich off a terminal.
OFF_THE_BOARD = (
    "start.board.runner",
    "start.compose.pipeline",
    "start.runs.headless",
    "jsonschema",
    "rich",
)


@pytest.mark.parametrize(
    "args", [("board", "--ready", "--json"), ("board", "claim", "--next", "--as", "me")]
)
def test_the_board_commands_load_neither_the_runner_nor_rich(
    args: tuple[str, ...], isolated: Path, env: dict[str, str]
) -> None:
    run_start(
        "board", "add", "x", cwd=isolated, env={k: v for k, v in env.items() if "PROFILE" not in k}
    )
    proc = run_start(*args, cwd=isolated, env=env)
    names = imported(proc.stderr)
    assert proc.returncode == 0, proc.stderr
    assert {"start.board.store", "sqlite3"} <= set(names), proc.stderr
    assert [n for n in names if n.split(".")[0] in OFF_THE_BOARD or n in OFF_THE_BOARD] == []
    assert of_mcp(names) == []


def test_a_launch_with_a_workflow_in_the_config_reads_no_workflow(
    isolated: Path, env: dict[str, str]
) -> None:
    """The load lets `[workflows]` through unread: neither start.config.workflows nor jmespath
    is imported by a launch, whatever the config holds."""
    workflow = '\n[workflows.w.steps.review]\ntask = "t"\nwhen = "instructions != \'\'"\n'
    write_tree(Path(env["START_CONFIG_DIR"]), {"config.toml": CONFIG + workflow})
    proc = run_start("task", "t", "x", cwd=isolated, env=env)
    names = imported(proc.stderr)
    assert proc.returncode == 0, proc.stderr
    assert "start.compose.launch" in names, proc.stderr
    assert [n for n in names if n.startswith(("jmespath", "start.config.workflows"))] == []
