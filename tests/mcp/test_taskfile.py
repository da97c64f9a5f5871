"""`start mcp`'s Taskfile tools (seed 000) with the real go-task binary: the seed's Taskfile word
for word, through the SDK's client, in process and against a real `start mcp`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from start.runs import taskfile
from tests.conftest import REPO, run_start, write_tree
from tests.mcp.conftest import BOARD_TOOLS, connect

pytestmark = pytest.mark.anyio

TASK = shutil.which("task", path=str(Path(sys.executable).parent)) or shutil.which("task")
needs_task = pytest.mark.skipif(
    TASK is None, reason="go-task is a test dependency (go-task-bin); install the test extras"
)

# Seed 000's example, word for word.
SEED = """\
# .agent/Taskfile.yml
version: '3'

tasks:
  greet:
    desc: "Prints a simple greeting message."
    cmds:
      - echo "Hello from your custom Taskfile!"
    silent: true

  list-current-dir:
    desc: "Lists the contents of the current working directory."
    cmds:
      - ls -lA

  run-go-tests:
    desc: "Runs Go tests for the project. Supports additional Go test flags via the 'args' input (e.g., '-v -race')."
    cmds:
      - go test ./... {{.CLI_ARGS}}
    silent: true

  deliberate-fail:
    desc: "A task designed to exit with an error code to demonstrate error handling."
    cmds:
      - echo "This task will fail!" && exit 1
    silent: true
"""

# More cases: both streams, an internal task and one without a description (neither listed),
# a slow one.
MORE = """
  both-streams:
    desc: "Writes to stdout and stderr."
    cmds:
      - echo out; echo 'to stderr' >&2
    silent: true

  helper:
    internal: true
    desc: "An internal helper."
    cmds:
      - echo internal

  undocumented:
    cmds:
      - echo undocumented

  slow:
    desc: "Sleeps for five minutes."
    cmds:
      - sleep 300
    silent: true
"""

# A task that takes longer than a second.
TWO_SECONDS = """
  two-seconds:
    desc: "Sleeps for two seconds."
    cmds:
      - sleep 2; echo awake
    silent: true
"""

SEED_TASKS = [
    {
        "name": "deliberate-fail",
        "description": "A task designed to exit with an error code to demonstrate error handling.",
    },
    {"name": "greet", "description": "Prints a simple greeting message."},
    {
        "name": "list-current-dir",
        "description": "Lists the contents of the current working directory.",
    },
    {
        "name": "run-go-tests",
        "description": "Runs Go tests for the project. Supports additional Go test flags via the "
        "'args' input (e.g., '-v -race').",
    },
]

TOOLS = ["list_user_tasks", "run_user_task"]

# A stand-in `go` on PATH: prints each of its arguments on a line of its own.
GO = '#!/bin/sh\nfor word in "$@"; do printf "%s\\n" "$word"; done\n'


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


@pytest.fixture
def project(
    global_dir: Path, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The working directory with the seed's `.agent/Taskfile.yml` (and MORE), trusted by path,
    with the stand-in `go` on PATH."""
    write_tree(isolated, {".agent/Taskfile.yml": SEED + MORE})
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    bin_dir = tmp_path / "bin"
    write_tree(bin_dir, {"go": GO})
    (bin_dir / "go").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return isolated


def offered(root: Path, name: str = ".agent/Taskfile.yml") -> str:
    return (
        f" The project's Taskfile ({name}, run by go-task) is offered too: list_user_tasks lists "
        "its tasks and run_user_task(task_name, args) runs one, with args in its {{.CLI_ARGS}} "
        "(each word of ASCII letters, digits and any of `._-/:@%+,` only, as the user allows "
        "'read-only')."
    )


@needs_task
async def test_the_seed_examples_through_the_sdk_client(project: Path, mode: str) -> None:
    async with connect(project, mode) as client:
        assert (client.instructions or "").endswith(offered(project))
        tools = (await client.list_tools()).tools
        names = [tool.name for tool in tools]
        listing = await client.call_tool("list_user_tasks", {})
        greet = await client.call_tool("run_user_task", {"task_name": "greet"})
        go = await client.call_tool(
            "run_user_task", {"task_name": "run-go-tests", "args": "-v -race"}
        )
        fail = await client.call_tool("run_user_task", {"task_name": "deliberate-fail"})
        both = await client.call_tool("run_user_task", {"task_name": "both-streams"})
    assert names[-len(BOARD_TOOLS) - 2 :] == [*TOOLS, *BOARD_TOOLS]
    schema = next(tool for tool in tools if tool.name == "run_user_task").input_schema
    assert schema["required"] == ["task_name"]
    assert list(schema["properties"]) == ["task_name", "args"]
    assert listing.is_error is False
    assert listing.structured_content == {
        "tasks": [
            {"name": "both-streams", "description": "Writes to stdout and stderr."},
            *SEED_TASKS,
            {"name": "slow", "description": "Sleeps for five minutes."},
        ],
        "message": "Successfully listed 6 user-defined tasks from .agent/Taskfile.yml.",
    }
    assert (greet.is_error, texts(greet)) == (
        False,
        ["Task 'greet' completed successfully. Output:\nHello from your custom Taskfile!\n"
         "Error Output:\n"],
    )  # fmt: skip
    assert greet.structured_content == {
        "task": "greet",
        "ok": True,
        "exit_code": 0,
        "stdout": "Hello from your custom Taskfile!\n",
        "stderr": "",
        "error": "",
    }
    assert texts(go) == [
        "Task 'run-go-tests' completed successfully. Output:\ntest\n./...\n-v\n-race\n"
        "Error Output:\n"
    ]
    assert (fail.is_error, texts(fail)) == (
        True,
        ["Task 'deliberate-fail' failed. Output:\nThis task will fail!\nError Output:\n\n"
         'Exit Code: 1\nError: task: Failed to run task "deliberate-fail": exit status 1'],
    )  # fmt: skip
    assert both.structured_content is not None
    assert (both.structured_content["stdout"], both.structured_content["stderr"]) == (
        "out\n",
        "to stderr\n",
    )


@needs_task
async def test_args_are_words_and_never_shell_syntax(
    project: Path, global_dir: Path, mode: str
) -> None:
    # At `full`, where any word passes (tests/mcp/test_taskfile_args.py holds the rest).
    path = global_dir / "config.toml"
    path.write_text(
        path.read_text().replace("[settings]\n", '[settings]\nmcp_permissions = "full"\n')
    )
    async with connect(project, mode) as client:
        result = await client.call_tool(
            "run_user_task",
            {"task_name": "run-go-tests", "args": "-run 'Test A' x;touch\\ HACKED $(id) `id`"},
        )
        unclosed = await client.call_tool(
            "run_user_task", {"task_name": "run-go-tests", "args": "-run 'Test"}
        )
    assert texts(result) == [
        "Task 'run-go-tests' completed successfully. Output:\ntest\n./...\n-run\nTest A\n"
        "x;touch HACKED\n$(id)\n`id`\nError Output:\n"
    ]
    assert not (project / ".agent" / "HACKED").exists()
    assert (unclosed.is_error, texts(unclosed)) == (
        True,
        ["args cannot be split into words: No closing quotation; quote as a shell does"],
    )


@needs_task
async def test_a_name_that_is_not_listed_is_refused(project: Path, mode: str) -> None:
    known = "both-streams, deliberate-fail, greet, list-current-dir, run-go-tests, slow"
    async with connect(project, mode) as client:
        typo = await client.call_tool("run_user_task", {"task_name": "gret"})
        empty = await client.call_tool("run_user_task", {"task_name": " "})
        internal = await client.call_tool("run_user_task", {"task_name": "helper"})
        flag = await client.call_tool("run_user_task", {"task_name": "--init"})
        missing = await client.call_tool("run_user_task", {})
        wrong = await client.call_tool("run_user_task", {"task_name": "greet", "args": 5})
    assert texts(typo) == ["unknown task 'gret'; did you mean 'greet'? (in .agent/Taskfile.yml)"]
    assert texts(empty) == [f"no task name given; known tasks: {known}"]
    assert texts(internal) == [
        f"unknown task 'helper'; known tasks: {known} (in .agent/Taskfile.yml)"
    ]
    assert texts(flag) == [f"unknown task '--init'; known tasks: {known} (in .agent/Taskfile.yml)"]
    assert texts(missing) == ["invalid arguments: 'task_name' is a required property"]
    assert texts(wrong) == ["invalid arguments at args: 5 is not of type 'string'"]
    for result in (typo, empty, internal, flag, missing, wrong):
        assert result.is_error is True
    assert not (project / "Taskfile.yml").exists()  # --init never ran


@needs_task
async def test_sequential_calls_keep_their_output_apart(project: Path, mode: str) -> None:
    async with connect(project, mode) as client:
        results = [
            await client.call_tool("run_user_task", {"task_name": name})
            for name in ("greet", "both-streams", "deliberate-fail", "greet", "both-streams") * 2
        ]
    outputs = [(r.structured_content or {}).get("stdout") for r in results]
    assert (
        outputs
        == [
            "Hello from your custom Taskfile!\n",
            "out\n",
            "This task will fail!\n",
            "Hello from your custom Taskfile!\n",
            "out\n",
        ]
        * 2
    )


@needs_task
async def test_the_tasks_run_in_the_taskfiles_directory(project: Path, mode: str) -> None:
    async with connect(project, mode) as client:
        result = await client.call_tool("run_user_task", {"task_name": "list-current-dir"})
    # As go-task runs every Taskfile's tasks: `.agent/` holds the Taskfile alone.
    assert result.structured_content is not None
    total, *entries = result.structured_content["stdout"].splitlines()
    assert total.startswith("total ")
    assert [entry.split()[-1] for entry in entries] == ["Taskfile.yml"]
    assert result.structured_content["stderr"] == "task: [list-current-dir] ls -lA\n"


@needs_task
async def test_a_task_past_taskfile_timeout_is_stopped(
    project: Path, global_dir: Path, mode: str
) -> None:
    path = global_dir / "config.toml"
    path.write_text(path.read_text().replace("[settings]\n", "[settings]\ntaskfile_timeout = 1\n"))
    async with connect(project, mode) as client:
        result = await client.call_tool("run_user_task", {"task_name": "slow"})
    assert (result.is_error, texts(result)) == (
        True,
        ["Task 'slow' failed. Output:\n\nError Output:\n\nExit Code: none\n"
         "Error: `task slow` timed out after 1 s (settings.taskfile_timeout)"],
    )  # fmt: skip


@needs_task
async def test_command_timeout_does_not_stop_a_task(
    project: Path, global_dir: Path, mode: str
) -> None:
    # A test suite outlives the 30 s that a context's command gets: a Taskfile task has a
    # timeout of its own (settings.taskfile_timeout).
    write_tree(project, {".agent/Taskfile.yml": SEED + MORE + TWO_SECONDS})
    path = global_dir / "config.toml"
    path.write_text(path.read_text().replace("[settings]\n", "[settings]\ncommand_timeout = 1\n"))
    async with connect(project, mode) as client:
        result = await client.call_tool("run_user_task", {"task_name": "two-seconds"})
    assert (result.is_error, texts(result)) == (
        False,
        ["Task 'two-seconds' completed successfully. Output:\nawake\nError Output:\n"],
    )


@needs_task
async def test_a_taskfile_at_the_root_is_offered_too(
    global_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    write_tree(isolated, {"Taskfile.yml": SEED})
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    async with connect(isolated, mode) as client:
        assert (client.instructions or "").endswith(offered(isolated, "Taskfile.yml"))
        listing = await client.call_tool("list_user_tasks", {})
    assert listing.structured_content is not None
    assert listing.structured_content["message"] == (
        "Successfully listed 4 user-defined tasks from Taskfile.yml."
    )


# --- when the tools are not registered ------------------------------------------------------


async def not_registered(workdir: Path, mode: str, why: str, use_project: bool = True) -> None:
    """No Taskfile tool is listed, the instructions say `why`, and a call is refused."""
    async with connect(workdir, mode, use_project) as client:
        assert (client.instructions or "").endswith(
            f" No Taskfile tools (list_user_tasks, run_user_task): {why}."
        )
        names = [tool.name for tool in (await client.list_tools()).tools]
        called = await client.call_tool("list_user_tasks", {})
    assert not set(TOOLS) & set(names)
    assert (called.is_error, texts(called)) == (True, [f"list_user_tasks is not offered: {why}"])


async def test_no_taskfile_no_tools(global_dir: Path, isolated: Path, mode: str) -> None:
    await not_registered(isolated, mode, f"{isolated} has no .agent/Taskfile.yml or Taskfile.yml")


async def test_an_untrusted_project_gets_no_tools(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    write_tree(isolated, {".agent/Taskfile.yml": SEED})
    await not_registered(
        isolated,
        mode,
        f".agent/Taskfile.yml is not used: nothing vouches for {isolated}: no approval covers "
        "the Taskfile, and the project is not under settings.trusted_paths or "
        "START_TRUSTED_PATHS; review and approve it with 'start trust', or add the project to "
        "trusted_paths",
    )


async def test_a_project_whose_start_dir_is_not_approved_gets_no_tools(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    write_tree(
        isolated,
        {".agent/Taskfile.yml": SEED, ".start/config.toml": '[tasks.t]\nprompt = "t"\n'},
    )
    await not_registered(
        isolated,
        mode,
        f".agent/Taskfile.yml is not used: {isolated}/.start is not trusted (never approved); "
        "run 'start trust' to review it",
    )


@needs_task
async def test_an_approved_start_dir_vouches_for_the_taskfile(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    write_tree(
        isolated,
        {".agent/Taskfile.yml": SEED, ".start/config.toml": '[tasks.t]\nprompt = "t"\n'},
    )
    approved = run_start("trust", "--yes", cwd=isolated)
    assert approved.returncode == 0, approved.stderr
    async with connect(isolated, mode) as client:
        assert (client.instructions or "").endswith(offered(isolated))
        greet = await client.call_tool("run_user_task", {"task_name": "greet"})
    assert greet.is_error is False


async def test_no_project_gets_no_tools(project: Path, mode: str) -> None:
    await not_registered(
        project, mode, ".agent/Taskfile.yml is ignored (--no-project)", use_project=False
    )


async def test_no_task_program_no_tools(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # Neither on PATH nor beside the Python that runs start.
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))
    assert taskfile.binary() is None
    await not_registered(
        project,
        mode,
        ".agent/Taskfile.yml is not used: the `task` program (go-task) is not on PATH; install "
        "it, or add start's taskfile extra: pipx inject start-agent go-task-bin",
    )


# --- a real `start mcp`, through the SDK's client -----------------------------------------


@needs_task
def test_a_real_start_mcp_runs_the_real_task(project: Path, anyio_backend: str) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }

    async def session() -> list[list[str]]:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp"], env=env, cwd=str(project)
        )
        async with Client(parameters, mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert set(TOOLS) <= set(names)
            calls = [
                ("list_user_tasks", {}),
                ("run_user_task", {"task_name": "greet"}),
                ("run_user_task", {"task_name": "run-go-tests", "args": "-v -race"}),
                ("run_user_task", {"task_name": "deliberate-fail"}),
            ]
            return [texts(await client.call_tool(name, args)) for name, args in calls]

    listing, greet, go, fail = anyio.run(session)
    assert listing[0].endswith(
        '"message": "Successfully listed 6 user-defined tasks from .agent/Taskfile.yml."}'
    )
    assert greet == [
        "Task 'greet' completed successfully. Output:\nHello from your custom Taskfile!\n"
        "Error Output:\n"
    ]
    assert go == [
        "Task 'run-go-tests' completed successfully. Output:\ntest\n./...\n-v\n-race\n"
        "Error Output:\n"
    ]
    assert fail == [
        "Task 'deliberate-fail' failed. Output:\nThis task will fail!\nError Output:\n\n"
        'Exit Code: 1\nError: task: Failed to run task "deliberate-fail": exit status 1'
    ]
