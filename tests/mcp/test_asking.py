"""`start mcp`'s asking tools (issue 27): other agents run headless, their answers returned, with
progress, cancellation, no loops, least permission and trust, through the SDK's own client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from start.mcp import jobs, owners, server
from start.runs import rules
from tests import fake_headless
from tests.conftest import HANG, REPO, run_start, running, write_tree
from tests.fake_headless import agent
from tests.mcp.conftest import BOARD_TOOLS, connect, no_taskfile

pytestmark = pytest.mark.anyio


AGENTS = f"""
{agent("fake")}
{agent("other")}

[agents.absent]
bin = "no-such-agent-cli-27"
command = "{{bin}} {{prompt}}"
print_command = "{{bin}} -p {{prompt}}"
print_output = "text"
print_permissions = {{ read-only = "" }}

[tasks.fixer]
description = "Fix what the instructions say"
prompt = "Fix: {{instructions}}"
permissions = "edit"
"""

ASKING_TOOLS = ["ask_agent", "ask_agents", "ask_start", "ask_result", "ask_cancel"]
WORKFLOW_TOOLS = ["list_workflows", "run_workflow", "workflow_status"]
# The prompt `start prompt TEXT` composes from CONFIG: the required context, then the text.
PROMPT = "The guide.\n\nhi"


@pytest.fixture
def config(global_dir: Path) -> Path:
    """CONFIG with two headless stand-in agents and one that is not installed."""
    file = global_dir / "config.toml"
    file.write_text(file.read_text() + AGENTS)
    return file


def settings(config: Path, text: str) -> None:
    config.write_text(config.read_text().replace("[settings]\n", f"[settings]\n{text}\n", 1))


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_RECORD", str(path))
    return path


async def wait_gone(pids: list[int], seconds: float = HANG) -> list[int]:
    """The pids still alive after up to `seconds`; the in-process server runs meanwhile."""
    deadline = time.monotonic() + seconds
    while True:
        alive = [pid for pid in pids if running(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        await anyio.sleep(0.05)


async def read_pids(path: Path, seconds: float = HANG) -> list[int]:
    deadline = time.monotonic() + seconds
    while not path.exists() or not path.read_text().endswith("\n"):
        assert time.monotonic() < deadline, f"{path.name} never written"
        await anyio.sleep(0.05)
    return [int(word) for word in path.read_text().split()]


# --- answers ----------------------------------------------------------------------------------


async def test_ask_agent_returns_the_answer_with_the_fields_of_print_json(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        instructions = client.instructions or ""
        result = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
    assert tools == ["list_tasks", "run_task", "find_tasks", *ASKING_TOOLS, *BOARD_TOOLS]
    assert instructions.endswith(" Agents that can be asked: fake, other." + no_taskfile(isolated))
    assert (result.is_error, texts(result)) == (False, [f"ANSWER: {PROMPT}"])
    cli = run_start(
        "prompt", "--print", "--json-fields", "all", "-a", "fake", "hi", cwd=isolated,
        env={"START_CONFIG_DIR": str(config.parent)},
    )  # fmt: skip
    printed = json.loads(cli.stdout)
    data = result.structured_content
    assert data is not None
    assert list(data) == list(printed)  # one record (start.runs), one shape
    outcome = (
        "task", "agent", "model", "permissions", "state", "success", "timed_out", "exit_code",
        "answer", "value", "problems", "error", "stderr", "usage", "denied",
    )  # fmt: skip
    assert {key: data[key] for key in outcome} == {key: printed[key] for key in outcome}
    # The ask, as the ask rules let it run: the same fields whichever door made it.
    asked = data["request"]
    assert (asked["door"], asked["by"], asked["prompt"], asked["agents"], data["args"]) == (
        "mcp",
        "agent",
        "hi",
        ["fake"],
        None,
    )
    assert (asked["permissions"], asked["permissions_from"]) == ("read-only", "the default")
    assert data["answer"] == f"ANSWER: {PROMPT}\n" or data["answer"] == f"ANSWER: {PROMPT}"
    assert (data["agent"], data["permissions"], data["success"]) == ("fake", "read-only", True)


async def test_a_task_with_instructions_and_a_model(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool(
            "ask_agent",
            {"agent": "fake", "task": "review", "instructions": "the retry loop", "model": "x-1"},
        )
    # The stand-in's template has no {role}: the role is left out, as `start task --print` does.
    assert texts(result) == [
        "ANSWER: The guide.\n\nReview the change. Focus: the retry loop (model x-1)"
    ]
    assert result.structured_content is not None
    assert (result.structured_content["task"], result.structured_content["model"]) == (
        "review",
        "x-1",
    )


async def test_ask_agents_returns_every_answer_in_the_order_asked(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool("ask_agents", {"agents": ["other", "fake"], "prompt": "hi"})
    assert texts(result) == [f"## other\n\nANSWER: {PROMPT}\n\n## fake\n\nANSWER: {PROMPT}"]
    assert result.structured_content is not None
    found = result.structured_content["results"]
    assert [(r["agent"], r["success"]) for r in found] == [("other", True), ("fake", True)]


async def test_a_failed_run_is_an_error_result_that_quotes_the_agent(
    config: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "fail")
    async with connect(isolated, mode) as client:
        result = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
    assert result.is_error is True
    assert texts(result) == [
        "agent 'fake' failed: exited with status 3: Error: unknown option '--bogus'\n"
        "Output:\npartial output\nError Output:\nError: unknown option '--bogus'\nExit Code: 3"
    ]
    assert result.structured_content is not None
    assert result.structured_content["exit_code"] == 3


async def test_an_agent_that_prints_past_the_limit_is_stopped_and_its_run_fails(
    config: Path,
    isolated: Path,
    mode: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    survivors: list[int],
) -> None:
    """It goes on after printing 2 MiB (it would finish 300 s on): it is stopped once past the
    limit, with the child in its group, and the call answers then."""
    settings(config, "print_answer_limit = 1048576")
    pids = tmp_path / "pids"
    for name, value in (("FAKE_MODE", "huge"), ("FAKE_MIB", "2"), ("FAKE_PIDS", str(pids))):
        monkeypatch.setenv(name, value)
    async with connect(isolated, mode) as client:
        result = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
    survivors.extend(await read_pids(pids))
    assert await wait_gone(survivors) == []
    assert not Path(f"{pids}.finished").exists()
    assert result.is_error is True
    [text] = texts(result)
    assert text.startswith(
        "agent 'fake' failed: printed more than settings.print_answer_limit (1 MiB) allows, so "
        "it was stopped and its answer was not read; raise the limit to read such answers\n"
        "Output:\n"
    )
    assert text.endswith("\nExit Code: none (it did not exit by itself)")
    data = result.structured_content
    assert data is not None
    assert (data["state"], data["exit_code"], data["timed_out"], data["answer"]) == (
        "failed", None, False, ""
    )  # fmt: skip


async def test_bad_arguments_are_refused_with_what_to_give(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        both = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "a", "task": "b"})
        unknown = await client.call_tool("ask_agent", {"agent": "fakee", "prompt": "hi"})
        absent = await client.call_tool("ask_agent", {"agent": "absent", "prompt": "hi"})
        no_task = await client.call_tool("ask_agent", {"agent": "fake", "task": "hidden"})
    assert texts(both) == ["give either 'prompt' (the text to ask) or 'task' (a task's name)"]
    assert texts(unknown) == [
        "unknown agent 'fakee'; did you mean 'fake'?; agents that can be asked: fake, other"
    ]
    assert texts(absent) == [
        "agent 'absent' cannot be asked: its CLI 'no-such-agent-cli-27' is not on PATH; agents "
        "that can be asked: fake, other"
    ]
    assert texts(no_task)[0].startswith("task 'hidden' is not offered: it is internal")
    assert all(r.is_error for r in (both, unknown, absent, no_task))


# --- progress and cancellation ----------------------------------------------------------------


async def test_progress_notifications_tell_the_time_and_the_agents_state(
    config: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "slow")
    monkeypatch.setenv("FAKE_SECONDS", "1.5")
    monkeypatch.setattr(jobs, "PROGRESS_EVERY", 0.3)
    told: list[tuple[float, str | None]] = []

    async def tell(progress: float, total: float | None, message: str | None) -> None:
        told.append((progress, message))

    async with connect(isolated, mode) as client:
        result = await client.call_tool(
            "ask_agents", {"agents": ["fake", "other"], "prompt": "hi"}, progress_callback=tell
        )
    assert result.is_error is False
    assert len(told) >= 3
    values = [value for value, _ in told]
    assert values == sorted(set(values))  # it grows with every notification
    messages = [message or "" for _, message in told]
    assert messages[0].startswith("fake: waiting, other: waiting (")
    # The two run one after the other (one CLI), so each is seen running while the other waits.
    assert any(m.startswith("fake: running, other: waiting (") for m in messages)
    assert any(m.startswith("fake: done, other: running (") for m in messages)


async def test_a_cancelled_call_kills_the_agent_and_its_child(
    config: Path,
    isolated: Path,
    mode: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    survivors: list[int],
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_MODE", "sleep")
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    async with connect(isolated, mode) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "ask_agent", {"agent": "fake", "prompt": "hi"})
            survivors.extend(await read_pids(pids))
            assert len(survivors) == 2  # the agent, and the child it started
            assert all(running(pid) for pid in survivors)
            group.cancel_scope.cancel()  # the client sends notifications/cancelled
        assert await wait_gone(survivors) == []
        # The server goes on.
        monkeypatch.setenv("FAKE_MODE", "text")
        after = await client.call_tool("ask_agent", {"agent": "other", "prompt": "x"})
        assert texts(after) == ["ANSWER: The guide.\n\nx"]


async def test_a_client_that_goes_away_kills_the_runs(
    config: Path,
    isolated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    survivors: list[int],
) -> None:
    """The server's end kills every group it owns (as `serve` does when stdin closes)."""
    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_MODE", "sleep")
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    commands = owners.Commands()
    from mcp import Client

    async with Client(server.build(rules.Scope(str(isolated)), commands)) as client:
        started = await client.call_tool("ask_start", {"agents": ["fake"], "prompt": "hi"})
        assert started.structured_content is not None
        assert started.structured_content["state"] == "running"
        survivors.extend(await read_pids(pids))
    commands.close()
    assert await wait_gone(survivors) == []


# --- the asynchronous form --------------------------------------------------------------------


async def test_ask_start_then_ask_result_returns_the_answers(
    config: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "slow")
    monkeypatch.setenv("FAKE_SECONDS", "0.5")
    async with connect(isolated, mode) as client:
        started = await client.call_tool("ask_start", {"agents": ["fake"], "prompt": "hi"})
        assert started.structured_content is not None
        id_ = started.structured_content["id"]
        assert (id_, started.structured_content["state"]) == ("ask-1", "running")
        assert texts(started)[0].startswith("Run ask-1 is running: fake: ")
        for _ in range(60):
            polled = await client.call_tool("ask_result", {"id": id_, "wait_seconds": 5})
            assert polled.structured_content is not None
            if polled.structured_content["state"] != "running":
                break
        unknown = await client.call_tool("ask_result", {"id": "ask-9"})
    data = polled.structured_content
    assert data["state"] == "done"
    assert data["agents"] == [{"agent": "fake", "state": "done"}]
    assert [r["answer"] for r in data["results"]] == [f"ANSWER: {PROMPT} from ?"]
    assert texts(polled) == [f"## fake\n\nANSWER: {PROMPT} from ?"]
    assert texts(unknown) == ["no run 'ask-9'; runs: ask-1"]


async def test_ask_cancel_kills_the_run(
    config: Path,
    isolated: Path,
    mode: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    survivors: list[int],
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_MODE", "sleep")
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    async with connect(isolated, mode) as client:
        started = await client.call_tool("ask_start", {"agents": ["fake"], "prompt": "hi"})
        survivors.extend(await read_pids(pids))
        cancelled = await client.call_tool("ask_cancel", {"id": "ask-1"})
        assert await wait_gone(survivors) == []
    assert started.structured_content is not None
    assert cancelled.structured_content is not None
    assert cancelled.structured_content["state"] == "cancelled"
    assert texts(cancelled) == ["Run ask-1 was cancelled; its agents' processes were killed."]


async def test_ask_start_refuses_at_once_what_would_not_run(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        refused = await client.call_tool(
            "ask_start", {"agents": ["fake"], "prompt": "hi", "permissions": "full"}
        )
    assert refused.is_error is True
    assert texts(refused)[0].startswith("refused: a run at 'full' permissions")


# --- no loops ---------------------------------------------------------------------------------


DEEP = (
    " The asking tools are not offered: it runs at depth 1, inside an agent run that start mcp "
    "started, and settings.mcp_depth allows 1 level, so that agents cannot "
    "ask each other in a loop."
)


async def test_a_run_is_marked_one_level_deeper(
    config: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "depth")
    async with connect(isolated, mode) as client:
        result = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
    assert texts(result) == ["depth=1"]


async def test_a_server_too_deep_offers_no_asking_tools_and_says_why(
    config: Path, isolated: Path, mode: str
) -> None:
    from mcp import Client

    scope = rules.Scope(str(isolated), depth=1)
    async with Client(server.build(scope), mode=mode) as client:
        instructions = client.instructions or ""
        tools = [tool.name for tool in (await client.list_tools()).tools]
        listing = await client.call_tool("list_tasks", {})
        refused = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
    assert instructions.endswith(DEEP + no_taskfile(isolated))
    assert tools == ["list_tasks", "run_task", "find_tasks", *BOARD_TOOLS]
    assert listing.structured_content is not None
    assert listing.structured_content["agents"] == []
    assert listing.structured_content["message"].endswith(DEEP)
    assert texts(refused) == [DEEP[1].lower() + DEEP[2:-1]]


async def test_settings_may_allow_more_levels(
    config: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import Client

    settings(config, "mcp_depth = 2")
    monkeypatch.setenv("FAKE_MODE", "depth")
    async with Client(server.build(rules.Scope(str(isolated), depth=1)), mode=mode) as client:
        result = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
    assert texts(result) == ["depth=2"]


async def test_an_asked_agents_own_start_mcp_offers_no_asking_tools_whatever_its_environment(
    config: Path, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent starts `start mcp` through the MCP SDK's client, whose default environment
    drops START_MCP_DEPTH: the process tree still says that it runs inside an asked run."""
    (tmp_path / "home" / ".config" / "start").mkdir(parents=True)
    (tmp_path / "home" / ".config" / "start" / "config.toml").write_text(config.read_text())
    monkeypatch.setenv("FAKE_MODE", "mcp-tools")
    # Outside any run, the same start mcp offers them: the agents are on PATH. The workflow
    # tools come with them: this server reads the shipped config, whose workflows have a
    # description (config/workflows.toml).
    alone = subprocess.run(
        [sys.executable, fake_headless.__file__], capture_output=True, text=True, timeout=120
    )
    offered = ["list_tasks", "run_task", "find_tasks", *ASKING_TOOLS, *WORKFLOW_TOOLS]
    assert (alone.returncode, alone.stdout) == (
        0,
        " ".join([*offered, *BOARD_TOOLS]) + "\n",
    ), alone.stderr
    async with connect(isolated, "auto") as client:
        result = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
    assert (result.is_error, texts(result)) == (
        False,
        [" ".join(["list_tasks", "run_task", "find_tasks", *BOARD_TOOLS])],
    )


def test_start_mcp_reads_its_depth_from_the_environment() -> None:

    assert rules.depth({}) == 0
    assert rules.depth({"START_MCP_DEPTH": "2"}) == 2
    assert rules.depth({"START_MCP_DEPTH": "lots"}) == rules.UNREADABLE


# --- permissions ------------------------------------------------------------------------------


async def test_read_only_is_the_default_and_more_needs_the_users_consent(
    config: Path, isolated: Path, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = record(tmp_path, monkeypatch)
    async with connect(isolated, mode) as client:
        default = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
        argv = json.loads(path.read_text())["argv"]
        path.unlink()
        refused = await client.call_tool(
            "ask_agent", {"agent": "fake", "prompt": "hi", "permissions": "edit"}
        )
    assert (default.is_error, argv[0]) == (False, "--ro")
    assert refused.is_error is True
    assert texts(refused) == [
        "refused: a run at 'edit' permissions needs the user's consent, and the user allows "
        "'read-only' (settings.mcp_permissions by default). Ask again without 'permissions', "
        "or ask the user to raise settings.mcp_permissions"
    ]
    assert not path.exists()  # nothing ran


async def test_the_server_setting_gives_consent_and_a_task_only_lowers_it(
    config: Path, isolated: Path, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = record(tmp_path, monkeypatch)
    async with connect(isolated, mode) as client:
        capped = await client.call_tool("ask_agent", {"agent": "fake", "task": "fixer"})
        by_capped = json.loads(path.read_text())["argv"][0]
        settings(config, 'mcp_permissions = "edit"')
        task = await client.call_tool("ask_agent", {"agent": "fake", "task": "fixer"})
        by_task = json.loads(path.read_text())["argv"][0]
        asked = await client.call_tool(
            "ask_agent", {"agent": "fake", "prompt": "hi", "permissions": "edit"}
        )
        by_setting = json.loads(path.read_text())["argv"][0]
        full = await client.call_tool(
            "ask_agent", {"agent": "fake", "prompt": "hi", "permissions": "full"}
        )
    # The task's own 'edit' is above settings.mcp_permissions (read-only): it runs read-only.
    assert (capped.is_error, by_capped) == (False, "--ro")
    assert capped.structured_content is not None
    assert (
        capped.structured_content["permissions"],
        capped.structured_content["permissions_from"],
    ) == ("read-only", "settings.mcp_permissions by default, below task fixer's 'edit'")
    assert (task.is_error, by_task) == (False, "--edit")
    assert task.structured_content is not None
    assert task.structured_content["permissions_from"] == (
        f"task fixer's permissions (global: {config})"
    )
    assert (asked.is_error, by_setting) == (False, "--edit")
    assert asked.structured_content is not None
    assert asked.structured_content["permissions_from"] == "the caller's 'permissions' argument"
    assert texts(full) == [
        "refused: a run at 'full' permissions needs the user's consent, and the user allows "
        f"'edit' (settings.mcp_permissions in {config}). Ask again without 'permissions', or ask "
        "the user to raise settings.mcp_permissions"
    ]


# --- which agents, and trust ------------------------------------------------------------------


async def test_a_setting_restricts_the_agents_and_list_tasks_names_them(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        before = await client.call_tool("list_tasks", {})
        settings(config, 'mcp_agents = ["other"]')
        after = await client.call_tool("list_tasks", {})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
    assert before.structured_content is not None and after.structured_content is not None
    assert before.structured_content["agents"] == ["fake", "other"]
    assert before.structured_content["message"].endswith(
        " Agents that ask_agent can ask: fake, other."
    )
    assert after.structured_content["agents"] == ["other"]
    assert tools["ask_agent"].input_schema["properties"]["agent"]["enum"] == ["other"]
    assert texts(refused) == [
        "agent 'fake' cannot be asked: settings.mcp_agents leaves it out; agents that can be "
        "asked: other"
    ]


async def test_an_untrusted_projects_agents_and_tasks_never_run(
    config: Path, isolated: Path, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "RAN"
    write_tree(
        isolated,
        {
            ".start/config.toml": f"""
{fake_headless.agent("mine", levels='read-only = ""')}

[tasks.theirs]
description = "A project task"
command = "touch {ran}"
prompt = "theirs"
"""
        },
    )
    async with connect(isolated, mode) as client:
        agent = await client.call_tool("ask_agent", {"agent": "mine", "prompt": "hi"})
        task = await client.call_tool("ask_agent", {"agent": "fake", "task": "theirs"})
    assert texts(agent) == ["unknown agent 'mine'; agents that can be asked: fake, other"]
    assert texts(task)[0].startswith("unknown task 'theirs'")
    assert not ran.exists()


# --- the real process -------------------------------------------------------------------------


def real_server(config: Path, isolated: Path, **env: str) -> Any:
    from tests.mcp.test_stdio import Server

    full = {
        **os.environ,
        "START_CONFIG_DIR": str(config.parent),
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **env,
    }
    return Server([], isolated, full)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("how", ["stdin closed", "SIGKILL"])
def test_a_real_server_whose_client_goes_away_leaves_no_agent(
    config: Path, isolated: Path, tmp_path: Path, survivors: list[int], how: str
) -> None:
    """However the server ends, the agents it runs, and their children, end with it."""
    from tests.mcp.test_stdio import INITIALIZE, message

    pids = tmp_path / "pids"
    server = real_server(config, isolated, FAKE_MODE="sleep", FAKE_PIDS=str(pids))
    try:
        server.send(INITIALIZE)
        server.responses({1})
        ask = {"agent": "fake", "prompt": "hi"}
        server.send(message("tools/call", 2, name="ask_agent", arguments=ask))
        survivors.extend(anyio.run(read_pids, pids))
        assert len(survivors) == 2
        if how == "stdin closed":
            code, _, stderr = server.close()
            assert code == 0, stderr
        else:
            server.proc.kill()
            server.proc.wait(timeout=30)
        assert anyio.run(wait_gone, survivors) == []
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


def test_two_concurrent_asks_of_one_cli_through_a_real_server_never_overlap(
    config: Path, isolated: Path, tmp_path: Path
) -> None:
    """Two of one CLI at once can break its state files (docs/agents.md): the second call's run
    waits for the first's, as two runs of one ask_agents call do."""
    from tests.mcp.test_stdio import INITIALIZE, message

    log = tmp_path / "log"
    server = real_server(config, isolated, FAKE_MODE="slow", FAKE_LOG=str(log))
    try:
        server.send(INITIALIZE)
        server.responses({1})
        for id_ in (2, 3):
            ask = {"agent": "fake", "prompt": f"call {id_}"}
            server.send(message("tools/call", id_, name="ask_agent", arguments=ask))
        found = server.responses({2, 3})
        code, _, stderr = server.close()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
    assert code == 0, stderr
    assert [found[id_]["result"]["content"][0]["text"] for id_ in (2, 3)] == [
        f"ANSWER: The guide.\n\ncall {id_} from ?" for id_ in (2, 3)
    ]
    first, second = sorted(
        tuple(map(float, line.split()[1:])) for line in log.read_text().splitlines()
    )
    assert first[1] <= second[0]


def test_a_real_server_started_by_a_run_offers_no_asking_tools(
    config: Path, isolated: Path
) -> None:
    from tests.mcp.test_stdio import INITIALIZE, message

    server = real_server(config, isolated, START_MCP_DEPTH="1")
    server.send(INITIALIZE)
    server.send(message("tools/list", 2))
    found = server.responses({1, 2})
    code, _, stderr = server.close()
    assert code == 0, stderr
    assert found[1]["result"]["instructions"].endswith(DEEP + no_taskfile(isolated))
    assert [tool["name"] for tool in found[2]["result"]["tools"]] == [
        "list_tasks",
        "run_task",
        "find_tasks",
        *BOARD_TOOLS,
    ]


# --- with the history and a task's output format ----------------------------------------------


async def test_an_asked_run_is_in_the_history_and_start_again_repeats_it(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool("ask_agent", {"agent": "fake", "prompt": "hi"})
    assert result.is_error is False
    logged = run_start("log", "--json", cwd=isolated, env={"START_CONFIG_DIR": str(config.parent)})
    assert logged.returncode == 0, logged.stderr
    (run,) = json.loads(logged.stdout)
    assert (run["agent"], run["mode"], run["args"]) == ("fake", "prompt", None)
    shown = run_start(
        "log", "show", str(run["id"]), "--json", cwd=isolated,
        env={"START_CONFIG_DIR": str(config.parent)},
    )  # fmt: skip
    assert json.loads(shown.stdout)["answer"] == f"ANSWER: {PROMPT}"
    page = run_start(
        "log", "show", str(run["id"]), "--no-pager", cwd=isolated,
        env={"START_CONFIG_DIR": str(config.parent)},
    )  # fmt: skip
    assert "  command      start mcp\n" in page.stdout  # who asked: it has no command line
    again = run_start(
        "again", "--json-fields", "all", cwd=isolated, env={"START_CONFIG_DIR": str(config.parent)}
    )
    assert again.returncode == 0, again.stderr
    repeated = json.loads(again.stdout)
    assert (repeated["answer"], repeated["request"]["door"], repeated["request"]["by"]) == (
        f"ANSWER: {PROMPT}",
        "cli",
        "user",
    )
    # The level it had is the one it repeats at, and says so.
    assert (repeated["permissions"], repeated["permissions_from"]) == (
        "read-only",
        f"the run it repeats ({run['id']})",
    )


TRIAGE = """
[tasks.triage]
description = "Triage as JSON"
prompt = "Triage: {instructions}"
output = "json"
"""


@pytest.mark.parametrize(
    ("answer", "error", "value", "problems"),
    [
        ('{"severity": "high"}', False, {"severity": "high"}, []),
        ('```json\n{"severity": "low"}\n```', False, {"severity": "low"}, []),
        (
            "It looks serious.",
            True,
            None,
            ["the answer is not JSON: Expecting value at line 1 column 1"],
        ),
    ],
)
async def test_a_task_with_an_output_format_gives_its_value_as_structured_content(
    config: Path,
    isolated: Path,
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    error: bool,
    value: Any,
    problems: list[str],
) -> None:
    config.write_text(config.read_text() + TRIAGE)
    monkeypatch.setenv("FAKE_MODE", "say")
    monkeypatch.setenv("FAKE_ANSWER", answer)
    async with connect(isolated, mode) as client:
        result = await client.call_tool(
            "ask_agent", {"agent": "fake", "task": "triage", "instructions": "the crash"}
        )
    data = result.structured_content
    assert data is not None
    assert (result.is_error, data["answer"], data["value"]) == (error, answer, value)
    assert data["problems"] == problems
