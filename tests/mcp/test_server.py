"""`start mcp` in process, through the SDK's own client, in both protocol eras.

Covers seed 000's verification list (listing, a simple run, stderr, exit codes, instructions
reaching the task, no tasks, sequential calls that never mix) and issue 15's items: prompts that
compose exactly what a dry run composes, resources through the launch's wall, trust, concurrency,
and bad requests that never stop the server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, TextContent

from start import __version__, trust
from start.config.load import load
from start.runs import rules
from tests.conftest import invoke, write_tree
from tests.mcp.conftest import BOARD_TOOLS, CONFIG, NO_ASKING, TASKS, connect, no_taskfile

pytestmark = pytest.mark.anyio

INSTRUCTIONS_HELP = (
    "Your instructions for the task: they fill its {instructions}, or are added at the end of "
    "its prompt when it has none."
)


def intro(workdir: Path) -> str:
    return (
        f"start serves the user's tasks for {workdir}. Each task is a prompt; the list_tasks tool "
        "lists them and run_task(task_name, instructions) composes one as `start task NAME "
        "INSTRUCTIONS` would, running its command, and returns the command's output followed by "
        "the composed prompt, which you then follow; find_tasks(text) ranks them by what they "
        "do. Contexts and roles are resources: start://context/NAME and start://role/NAME."
    )


def texts(result: Any) -> list[str]:
    out = []
    for block in result.content:
        assert isinstance(block, TextContent)
        out.append(block.text)
    return out


def add_config(global_dir: Path, text: str) -> None:
    path = global_dir / "config.toml"
    path.write_text(path.read_text() + text)


# --- identity ---------------------------------------------------------------------------------


async def test_server_names_itself_and_says_what_it_offers(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        info = client.server_info
        assert info is not None
        assert info.name == "start"
        assert info.version == __version__
        assert client.instructions == intro(isolated) + NO_ASKING + no_taskfile(isolated)
        capabilities = client.server_capabilities
        assert capabilities.prompts is not None
        assert capabilities.tools is not None
        assert capabilities.resources is not None


# --- prompts ----------------------------------------------------------------------------------


async def test_prompts_are_the_tasks_with_a_description_that_are_not_internal(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == TASKS
    assert [p.description for p in prompts] == [
        "Writes to stdout and stderr.",
        "A task designed to exit with an error code to demonstrate error handling.",
        "Exits 3 after writing to both streams.",
        "Prints a simple greeting message.",
        "Review the change",
    ]
    for prompt in prompts:
        assert [(a.name, a.description, a.required) for a in prompt.arguments or []] == [
            ("instructions", INSTRUCTIONS_HELP, False)
        ]


@pytest.mark.parametrize(
    ("task", "words"),
    [("review", "focus on the parser"), ("review", ""), ("greet", "be brief"), ("rv", "x")],
)
async def test_get_prompt_is_exactly_what_a_dry_run_composes(
    global_dir: Path, isolated: Path, mode: str, task: str, words: str
) -> None:
    """`start task NAME INSTRUCTIONS --dry-run --json`, the role on top of the prompt."""
    args = ["task", task, *([words] if words else []), "--dry-run", "--json"]
    dry = invoke(*args)
    assert dry.exit_code == 0, dry.stderr
    data = json.loads(dry.stdout)
    expected = data["prompt"]
    if data["role_text"]:
        expected = data["role_text"] + "\n\n" + expected
    async with connect(isolated, mode) as client:
        result = await client.get_prompt(task, {"instructions": words} if words else {})
    assert result.description is not None
    (message,) = result.messages
    assert message.role == "user"
    assert isinstance(message.content, TextContent)
    assert message.content.text == expected


async def test_the_role_goes_at_the_top_and_instructions_fill_the_task(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        given = await client.get_prompt("review", {"instructions": "the parser"})
        none = await client.get_prompt("review", {"instructions": "   "})
        appended = await client.get_prompt("greet", {"instructions": "be brief"})
    assert [m.content.text for m in given.messages] == [  # type: ignore[union-attr]
        "You review code.\n\nThe guide.\n\n"
        "Review the change. Focus: the parser (model stand-in-small-1)"
    ]
    assert [m.content.text for m in none.messages] == [  # type: ignore[union-attr]
        "You review code.\n\nThe guide.\n\nReview the change. Focus: None (model stand-in-small-1)"
    ]
    # A task without {instructions} gets them at the end, as `start task` does.
    assert [m.content.text for m in appended.messages] == [  # type: ignore[union-attr]
        "You review code.\n\nThe guide.\n\n"
        "Greet the user with: Hello from your custom Taskfile!\n\nbe brief"
    ]


# --- tools ------------------------------------------------------------------------------------


async def test_tools_are_list_tasks_and_run_task_with_the_task_names(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["list_tasks", "run_task", "find_tasks", *BOARD_TOOLS]
    run_task = tools[1]
    assert run_task.input_schema == {
        "type": "object",
        "properties": {
            "task_name": {
                "type": "string",
                "enum": [*TASKS, "rv"],
                "description": "The task to run: one of the names list_tasks returns (or a "
                "task's alias).",
            },
            "instructions": {"type": "string", "description": INSTRUCTIONS_HELP},
        },
        "required": ["task_name"],
        "additionalProperties": False,
    }
    assert tools[0].annotations is not None and tools[0].annotations.read_only_hint is True


async def test_list_tasks_returns_the_seed_shape(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool("list_tasks", {})
    data = {
        "tasks": [
            {"name": "both-streams", "description": "Writes to stdout and stderr."},
            {
                "name": "deliberate-fail",
                "description": "A task designed to exit with an error code to demonstrate "
                "error handling.",
            },
            {"name": "exit-three", "description": "Exits 3 after writing to both streams."},
            {"name": "greet", "description": "Prints a simple greeting message."},
            {"name": "review", "description": "Review the change"},
        ],
        "agents": [],
        "message": f"Successfully listed 5 tasks for {isolated}.{NO_ASKING}",
    }
    assert result.is_error is False
    assert result.structured_content == data
    assert texts(result) == [json.dumps(data, ensure_ascii=False)]


async def test_run_task_returns_stdout_in_the_success_format(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool("run_task", {"task_name": "greet"})
    # No role is named: the first role defined is used, as by `start task`.
    prompt = (
        "You review code.\n\nThe guide.\n\nGreet the user with: Hello from your custom Taskfile!\n"
    )
    assert result.is_error is False
    assert texts(result) == [
        "Task 'greet' completed successfully. Output:\nHello from your custom Taskfile!\n"
        "Error Output:\n",
        prompt,
    ]
    assert result.structured_content == {
        "task": "greet",
        "ok": True,
        "exit_code": 0,
        "stdout": "Hello from your custom Taskfile!\n",
        "stderr": "",
        "error": "",
        "prompt": prompt,
    }


async def test_run_task_returns_stderr_apart(global_dir: Path, isolated: Path, mode: str) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool("run_task", {"task_name": "both-streams"})
    assert result.is_error is False
    assert texts(result)[0] == (
        "Task 'both-streams' completed successfully. Output:\nout\nError Output:\nto stderr"
    )
    assert result.structured_content is not None
    assert (result.structured_content["stdout"], result.structured_content["stderr"]) == (
        "out\n",
        "to stderr\n",
    )


async def test_run_task_reports_failures_and_exit_codes_as_error_results(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        failed = await client.call_tool("run_task", {"task_name": "deliberate-fail"})
        three = await client.call_tool("run_task", {"task_name": "exit-three"})
    assert failed.is_error is True
    assert texts(failed) == [
        "Task 'deliberate-fail' failed. Output:\nThis task will fail!\nError Output:\n\n"
        "Exit Code: 1\nError: the command of task 'deliberate-fail' failed with exit code 1"
    ]
    assert three.is_error is True
    assert texts(three) == [
        "Task 'exit-three' failed. Output:\npartial\nError Output:\nbroken pipe\n"
        "Exit Code: 3\nError: the command of task 'exit-three' failed with exit code 3"
    ]
    assert three.structured_content == {
        "task": "exit-three",
        "ok": False,
        "exit_code": 3,
        "stdout": "partial\n",
        "stderr": "broken pipe\n",
        "error": "the command of task 'exit-three' failed with exit code 3",
        "prompt": "",
    }


async def test_run_task_keeps_the_launch_timeout(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    add_config(
        global_dir,
        '[tasks.slow]\ndescription = "Too slow"\ncommand_timeout = 1\n'
        'command = "echo started; sleep 20"\n',
    )
    async with connect(isolated, mode) as client:
        with anyio.fail_after(15):
            result = await client.call_tool("run_task", {"task_name": "slow"})
    assert result.is_error is True
    assert texts(result) == [
        "Task 'slow' failed. Output:\nstarted\nError Output:\n\nExit Code: none\n"
        "Error: the command of task 'slow' timed out after 1 s"
    ]


async def test_run_task_keeps_the_launch_output_cap(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    capped = CONFIG.replace("[settings]\n", "[settings]\ncommand_output_limit = 100\n")
    (global_dir / "config.toml").write_text(
        capped + '[tasks.chatty]\ndescription = "Too much"\ncommand = "printf %0150d 0"\n'
    )
    async with connect(isolated, mode) as client:
        result = await client.call_tool("run_task", {"task_name": "chatty"})
    assert result.structured_content is not None
    assert result.structured_content["stdout"] == "0" * 100 + "\n[... truncated 50 bytes ...]\n"


async def test_instructions_reach_the_task_through_run_task(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool(
            "run_task", {"task_name": "rv", "instructions": "the {date} parser"}
        )
    assert result.is_error is False
    assert texts(result) == [
        "Task 'review' completed successfully. Output:\n\nError Output:\n",
        "You review code.\n\nThe guide.\n\n"
        "Review the change. Focus: the {date} parser (model stand-in-small-1)",
    ]
    assert result.structured_content is not None
    assert result.structured_content["exit_code"] is None  # the task has no command


async def test_a_nul_in_the_instructions_becomes_u_fffd_as_on_the_command_line(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    dry = invoke("task", "review", "a\x00b", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.stderr
    expected = "You review code.\n\n" + json.loads(dry.stdout)["prompt"]
    async with connect(isolated, mode) as client:
        got = await client.get_prompt("review", {"instructions": "a\x00b"})
        ran = await client.call_tool("run_task", {"task_name": "review", "instructions": "a\x00b"})
    assert expected.endswith("Focus: a\ufffdb (model stand-in-small-1)")
    assert [m.content.text for m in got.messages] == [expected]  # type: ignore[union-attr]
    assert texts(ran)[1] == expected


async def test_bad_names_and_arguments_are_error_results_and_the_server_goes_on(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    known = "known tasks: both-streams, deliberate-fail, exit-three, greet, review"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"task_name": "gret"}, "unknown task 'gret'; did you mean 'greet'?"),
        ({"task_name": "zzz"}, f"unknown task 'zzz'; {known}"),
        ({"task_name": ""}, f"no task name given; {known}"),
        ({"task_name": "  "}, f"no task name given; {known}"),
        (
            {"task_name": "hidden"},
            f"task 'hidden' is not offered: it is internal or has no description; {known}",
        ),
        (
            {"task_name": "undocumented"},
            f"task 'undocumented' is not offered: it is internal or has no description; {known}",
        ),
        ({"task_name": "gr"}, "unknown task 'gr'; did you mean 'greet'?"),
        ({}, "invalid arguments: 'task_name' is a required property"),
        ({"task_name": 5}, "invalid arguments at task_name: 5 is not of type 'string'"),
        (
            {"task_name": "greet", "args": "-v"},
            "invalid arguments: Additional properties are not allowed ('args' was unexpected); "
            "run_task takes: task_name, instructions",
        ),
        (
            {"task_name": "greet", "instruction": "x"},
            "invalid arguments: Additional properties are not allowed ('instruction' was "
            "unexpected); did you mean 'instructions'?",
        ),
        (
            {"task_name": "greet", "instructions": 3},
            "invalid arguments at instructions: 3 is not of type 'string'",
        ),
    ]
    async with connect(isolated, mode) as client:
        unset = await client.call_tool("run_task", {"task_name": "greet", "instructions": None})
        assert unset.is_error is False
        for arguments, message in cases:
            result = await client.call_tool("run_task", arguments)
            assert (result.is_error, texts(result)) == (True, [message]), arguments
        with pytest.raises(MCPError) as unknown_prompt:
            await client.get_prompt("gret")
        with pytest.raises(MCPError) as unknown_tool:
            await client.call_tool("deploy", {})
        with pytest.raises(MCPError) as unknown_argument:
            await client.get_prompt("greet", {"focus": "x"})
        ok = await client.call_tool("run_task", {"task_name": "greet"})
    assert (unknown_prompt.value.code, unknown_prompt.value.message) == (
        INVALID_PARAMS,
        "unknown task 'gret'; did you mean 'greet'?",
    )
    assert (unknown_tool.value.code, unknown_tool.value.message) == (
        INVALID_PARAMS,
        "unknown tool 'deploy'",
    )
    assert (unknown_argument.value.code, unknown_argument.value.message) == (
        INVALID_PARAMS,
        "task 'greet' has no argument 'focus'; it takes: instructions",
    )
    assert ok.is_error is False


# --- no tasks ---------------------------------------------------------------------------------


NO_TASKS = """
[agents.stand-in]
bin = "true"
command = "{bin} {prompt}"

[contexts.guide]
file = "GUIDE.md"

[tasks.hidden]
description = "An internal helper"
internal = true
prompt = "hidden"

[tasks.undocumented]
prompt = "no description"
"""


@pytest.mark.parametrize("config", ["no config file", "no task offered"])
async def test_without_tasks_the_tools_are_not_registered_and_nothing_fails(
    global_dir: Path, isolated: Path, mode: str, config: str
) -> None:
    if config == "no config file":
        (global_dir / "config.toml").unlink()
    else:
        (global_dir / "config.toml").write_text(NO_TASKS)
    async with connect(isolated, mode) as client:
        assert client.instructions == (
            intro(isolated)
            + " No task is offered now (none has a description and is not internal)."
            + NO_ASKING
            + no_taskfile(isolated)
        )
        # The task tools are not; the board's tools need no task.
        assert [t.name for t in (await client.list_tools()).tools] == BOARD_TOOLS
        assert (await client.list_prompts()).prompts == []
        with pytest.raises(MCPError) as error:
            await client.call_tool("list_tasks", {})
        resources = (await client.list_resources()).resources
    assert (error.value.code, error.value.message) == (
        INVALID_PARAMS,
        "unknown tool 'list_tasks': no task is offered, so the task tools are not registered",
    )
    expected = ["start://context/guide"] if config == "no task offered" else []
    assert [r.uri for r in resources] == expected


# --- reloading --------------------------------------------------------------------------------


async def test_edits_show_up_on_the_next_request_without_a_restart(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        assert "deploy" not in [p.name for p in (await client.list_prompts()).prompts]
        add_config(
            global_dir,
            '[tasks.deploy]\ndescription = "Ship it"\ncommand = "echo shipped"\n'
            '\n[contexts.extra]\nprompt = "Extra."\n',
        )
        prompts = (await client.list_prompts(cache_mode="bypass")).prompts
        tools = (await client.list_tools(cache_mode="bypass")).tools
        resources = (await client.list_resources(cache_mode="bypass")).resources
        result = await client.call_tool("run_task", {"task_name": "deploy"})
    assert "deploy" in [p.name for p in prompts]
    assert "deploy" in tools[1].input_schema["properties"]["task_name"]["enum"]
    assert "start://context/extra" in [r.uri for r in resources]
    assert (
        texts(result)[0]
        == "Task 'deploy' completed successfully. Output:\nshipped\nError Output:\n"
    )


# --- sequences and concurrency ----------------------------------------------------------------


STREAMS = """
[tasks.alpha]
description = "Many lines of A"
command = "for i in $(seq 1 2000); do echo A$i; echo a$i >&2; done"

[tasks.beta]
description = "Many lines of B"
command = "for i in $(seq 1 2000); do echo B$i; echo b$i >&2; done"
"""


def lines(prefix: str) -> str:
    return "".join(f"{prefix}{i}\n" for i in range(1, 2001))


async def test_rapid_sequential_calls_never_mix_their_output(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    add_config(global_dir, STREAMS)
    async with connect(isolated, mode) as client:
        for index in range(12):
            name = "alpha" if index % 2 == 0 else "beta"
            result = await client.call_tool("run_task", {"task_name": name})
            data = result.structured_content
            assert data is not None
            letter = name[0]
            assert (data["stdout"], data["stderr"]) == (lines(letter.upper()), lines(letter))


RENDEZVOUS = """
[tasks.ping]
description = "Waits for pong"
command_timeout = 20
command = "touch ping.ready; while [ ! -e pong.ready ]; do sleep 0.01; done; echo ping"

[tasks.pong]
description = "Waits for ping"
command_timeout = 20
command = "touch pong.ready; while [ ! -e ping.ready ]; do sleep 0.01; done; echo pong"
"""


async def test_concurrent_calls_run_at_once_and_never_mix_their_output(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    """ping and pong each wait for the other: they finish only if both run at the same time."""
    add_config(global_dir, RENDEZVOUS + STREAMS)
    results: dict[str, Any] = {}
    async with connect(isolated, mode) as client:

        async def call(key: str, name: str) -> None:
            results[key] = await client.call_tool("run_task", {"task_name": name})

        with anyio.fail_after(15):
            async with anyio.create_task_group() as group:
                group.start_soon(call, "ping", "ping")
                group.start_soon(call, "pong", "pong")
                for index in range(6):
                    group.start_soon(call, f"s{index}", "alpha" if index % 2 else "beta")
    assert (
        texts(results["ping"])[0]
        == "Task 'ping' completed successfully. Output:\nping\nError Output:\n"
    )
    assert (
        texts(results["pong"])[0]
        == "Task 'pong' completed successfully. Output:\npong\nError Output:\n"
    )
    for index in range(6):
        letter = "a" if index % 2 else "b"
        data = results[f"s{index}"].structured_content
        assert (data["stdout"], data["stderr"]) == (lines(letter.upper()), lines(letter))


# --- resources --------------------------------------------------------------------------------


async def test_contexts_and_roles_are_resources(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        guide = await client.read_resource("start://context/guide")
        branch = await client.read_resource("start://context/branch")
        role = await client.read_resource("start://role/reviewer")
        errors = []
        for uri in ("start://context/gide", "start://role/nope", "start://agent/claude"):
            with pytest.raises(MCPError) as error:
                await client.read_resource(uri)
            errors.append((error.value.code, error.value.message))
    assert [(r.uri, r.name, r.description, r.mime_type) for r in listed] == [
        ("start://context/guide", "context guide", "The project guide", "text/markdown"),
        ("start://context/branch", "context branch", "What branch this is", "text/markdown"),
        ("start://role/reviewer", "role reviewer", "A careful reviewer", "text/markdown"),
    ]
    assert [t.uri_template for t in templates] == ["start://context/{name}", "start://role/{name}"]
    assert [c.text for c in guide.contents] == ["The guide.\n"]  # type: ignore[union-attr]
    assert [c.text for c in branch.contents] == ["main\n"]  # type: ignore[union-attr]
    assert [c.text for c in role.contents] == ["You review code."]  # type: ignore[union-attr]
    assert errors == [
        (INVALID_PARAMS, "unknown context 'gide'; did you mean 'guide'?"),
        (INVALID_PARAMS, "unknown role 'nope'; known roles: reviewer"),
        (
            INVALID_PARAMS,
            "unknown resource 'start://agent/claude'; start serves start://context/NAME and "
            "start://role/NAME",
        ),
    ]


async def test_resources_are_read_through_the_launch_wall(
    global_dir: Path, isolated: Path, tmp_path: Path, mode: str
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("SECRET\n")
    (isolated / "LINK.md").symlink_to(outside)
    add_config(
        global_dir,
        '[contexts.linked]\nfile = "LINK.md"\n\n[contexts.gone]\nfile = "GONE.md"\n',
    )
    async with connect(isolated, mode) as client:
        with pytest.raises(MCPError) as linked:
            await client.read_resource("start://context/linked")
        with pytest.raises(MCPError) as gone:
            await client.read_resource("start://context/gone")
    assert (linked.value.code, linked.value.message) == (
        INTERNAL_ERROR,
        f"{isolated}/LINK.md leads outside the project root (to {outside}) through a symlink; "
        "start does not follow it. Name the file by its real path in your config if you mean it.",
    )
    assert (gone.value.code, gone.value.message) == (
        INTERNAL_ERROR,
        f"context 'gone': file not found: {isolated}/GONE.md",
    )


# --- trust ------------------------------------------------------------------------------------


PROJECT = """
[roles.project-role]
prompt = "Project role."

[contexts.project-context]
required = true
command = "touch CONTEXT-RAN; echo project context"

[tasks.project-task]
description = "A task of the project"
command = "touch TASK-RAN; echo project task"
"""


async def test_an_untrusted_project_offers_only_builtin_and_global_items(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    write_tree(isolated, {".start/config.toml": PROJECT})
    note = (
        f"Only built-in and global items are offered: {isolated}/.start is not trusted (never "
        "approved); run 'start trust' to review it."
    )
    async with connect(isolated, mode) as client:
        assert client.instructions == f"{intro(isolated)} {note}{NO_ASKING}" + no_taskfile(isolated)
        listing = await client.call_tool("list_tasks", {})
        prompts = (await client.list_prompts()).prompts
        project_task = await client.call_tool("run_task", {"task_name": "project-task"})
        greet = await client.get_prompt("greet")
        resources = (await client.list_resources()).resources
        with pytest.raises(MCPError) as context:
            await client.read_resource("start://context/project-context")
        assert not (isolated / "TASK-RAN").exists()
        assert not (isolated / "CONTEXT-RAN").exists()

        # Approved in a terminal meanwhile: the next request sees the project, no restart.
        found = trust.scan(load(str(isolated)))
        assert found is not None
        trust.approve(found)
        trusted = await client.call_tool("run_task", {"task_name": "project-task"})
        relisted = await client.call_tool("list_tasks", {})
    assert listing.structured_content is not None
    assert listing.structured_content["message"] == (
        f"Successfully listed 5 tasks for {isolated}. Only built-in and global tasks are offered: "
        f"{isolated}/.start is not trusted (never approved); run 'start trust' to review it."
        f"{NO_ASKING}"
    )
    assert [t["name"] for t in listing.structured_content["tasks"]] == TASKS
    assert [p.name for p in prompts] == TASKS
    assert texts(project_task) == [f"unknown task 'project-task'; known tasks: {', '.join(TASKS)}"]
    assert [m.content.text for m in greet.messages] == [  # type: ignore[union-attr]
        "You review code.\n\nThe guide.\n\nGreet the user with: Hello from your custom Taskfile!\n"
    ]
    assert "start://context/project-context" not in [r.uri for r in resources]
    assert context.value.message == (
        "unknown context 'project-context'; known contexts: branch, guide (only built-in and "
        f"global items are offered: {isolated}/.start is not trusted (never approved); run "
        "'start trust' to review it)"
    )
    assert texts(trusted)[0] == (
        "Task 'project-task' completed successfully. Output:\nproject task\nError Output:\n"
    )
    assert (isolated / "TASK-RAN").exists() and (isolated / "CONTEXT-RAN").exists()
    assert relisted.structured_content is not None
    assert relisted.structured_content["message"] == (
        f"Successfully listed 6 tasks for {isolated}.{NO_ASKING}"
    )


async def test_no_project_ignores_the_project_as_elsewhere(
    global_dir: Path, isolated: Path, mode: str
) -> None:
    write_tree(isolated, {".start/config.toml": PROJECT})
    found = trust.scan(load(str(isolated)))
    assert found is not None
    trust.approve(found)
    async with connect(isolated, mode, use_project=False) as client:
        listing = await client.call_tool("list_tasks", {})
        instructions = client.instructions
    note = f"{isolated}/.start is ignored (--no-project)"
    assert instructions == (
        f"{intro(isolated)} Only built-in and global items are offered: {note}.{NO_ASKING}"
        + no_taskfile(isolated)
    )
    assert listing.structured_content is not None
    assert listing.structured_content["message"] == (
        f"Successfully listed 5 tasks for {isolated}. Only built-in and global tasks are offered: "
        f"{note}.{NO_ASKING}"
    )
    assert not (isolated / "CONTEXT-RAN").exists()


# --- agents -----------------------------------------------------------------------------------


GHOSTS = """
[agents.ghost]
bin = "no-such-agent-7f3a"
command = "{bin} --model {model} --file {prompt_file} --role {role_file}"
default_model = "fast"

[agents.ghost.models]
fast = "ghost-fast-2"

[tasks.review]
description = "Review the change"
prompt = "Review with {model}: {instructions}"
"""


@pytest.mark.parametrize("default", [True, False])
async def test_a_missing_agent_binary_does_not_stop_a_prompt(
    global_dir: Path, isolated: Path, mode: str, default: bool
) -> None:
    """No agent runs here: the composition needs none installed, and no temp file is left."""
    settings = '[settings]\ndefault_agent = "ghost"\n' if default else ""
    (global_dir / "config.toml").write_text(settings + GHOSTS)
    assert invoke("task", "review", "x").exit_code == 127  # it stops before any exec
    async with connect(isolated, mode) as client:
        result = await client.get_prompt("review", {"instructions": "the parser"})
        ran = await client.call_tool("run_task", {"task_name": "review"})
    assert [m.content.text for m in result.messages] == [  # type: ignore[union-attr]
        "Review with ghost-fast-2: the parser"
    ]
    assert ran.is_error is False
    runtime = Path(os.environ["XDG_RUNTIME_DIR"]) / "start"
    assert not runtime.exists() or list(runtime.iterdir()) == []


# --- robustness -------------------------------------------------------------------------------


async def test_errors_reach_the_client_and_the_server_goes_on(
    global_dir: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = global_dir / "config.toml"
    async with connect(isolated, mode) as client:
        path.write_text(CONFIG + "\n[tasks.broken]\ncomand = 1\n")
        with pytest.raises(MCPError) as config_error:
            await client.list_prompts(cache_mode="bypass")
        listing = await client.call_tool("list_tasks", {})

        def boom(config: object) -> list[object]:
            raise RuntimeError("boom")

        path.write_text(CONFIG)
        with monkeypatch.context() as patch, pytest.raises(MCPError) as internal:
            patch.setattr(rules, "listed", boom)
            await client.list_prompts(cache_mode="bypass")
        prompts = (await client.list_prompts(cache_mode="bypass")).prompts
    message = config_error.value.message
    assert config_error.value.code == INTERNAL_ERROR
    assert message.startswith("configuration is invalid (1 error)\n")
    assert f"  {path}\n" in message and "comand" in message
    assert (listing.is_error, texts(listing)) == (True, [message])
    assert (internal.value.code, internal.value.message) == (
        INTERNAL_ERROR,
        "internal error: RuntimeError: boom",
    )
    assert [p.name for p in prompts] == TASKS
