"""`start mcp`'s workflow tools (issue 48): a workflow run on the board through the SDK's own
client, its steps run by the stand-in headless agent, under the ask rules of ask_agent: the
session's level caps every step, the depth limit and settings.mcp_agents hold, and what the
caller sends only fills the steps' templates, within the schemas' bounds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from start.base import inputs
from start.mcp import workflows
from start.runs import rules
from tests import fake_headless
from tests.conftest import run_start, write_tree
from tests.fake_headless import agent
from tests.mcp.conftest import BOARD_TOOLS, connect

pytestmark = pytest.mark.anyio

AGENTS = f"""
{agent("fake", levels='read-only = "--ro", edit = "--edit", full = "--full"')}
{agent("other")}

[tasks.sharp]
description = "Look hard"
prompt = "Look hard at {{instructions}}"
permissions = "full"

[workflows.review]
description = "Read a change, then sum it up"
params.focus = {{ description = "what to look at" }}
params.tone = {{ default = "plain", description = "how to say it" }}

[workflows.review.steps.read]
prompt = "Read {{instructions}} for {{focus}}"
agent = "fake"

[workflows.review.steps.sum]
prompt = "Sum up in a {{tone}} tone: {{steps.read.answer}}"
agent = "fake"

[workflows.bold]
description = "A step at full permissions"

[workflows.bold.steps.fix]
prompt = "Fix {{instructions}}"
agent = "fake"
permissions = "full"

[workflows.bold.steps.look]
task = "sharp"
instructions = "{{instructions}}"
agent = "fake"

[workflows.quiet.steps.one]
prompt = "No description, not offered"
agent = "fake"
"""

WORKFLOW_TOOLS = ["list_workflows", "run_workflow", "workflow_status"]
ASKING_TOOLS = ["ask_agent", "ask_agents", "ask_start", "ask_result", "ask_cancel"]
# What `start prompt TEXT` composes before TEXT: the config's required context.
GUIDE = "The guide.\n\n"
# The name the SDK's client gives itself in `initialize`, in a session's name.
CLIENT = "mcp"


@pytest.fixture
def config(global_dir: Path) -> Path:
    file = global_dir / "config.toml"
    file.write_text(file.read_text() + AGENTS)
    return file


def settings(config: Path, text: str) -> None:
    config.write_text(config.read_text().replace("[settings]\n", f"[settings]\n{text}\n", 1))


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def argv(record: Path) -> list[str]:
    found: list[str] = json.loads(record.read_text())["argv"]
    return found


async def test_a_workflow_runs_through_mcp_and_returns_every_step(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        said = client.instructions or ""
        result = await client.call_tool(
            "run_workflow", {"name": "review", "text": "the diff", "params": {"focus": "bugs"}}
        )
        again = await client.call_tool("workflow_status", {"id": "item-1"})
    assert names == ["list_tasks", "run_task", "find_tasks", *ASKING_TOOLS, *WORKFLOW_TOOLS,
                     *BOARD_TOOLS]  # fmt: skip
    assert (
        " Their steps run at 'read-only' at most (settings.mcp_permissions). Workflows: review, "
        "bold." in said
    )
    assert result.is_error is False
    data = result.structured_content
    assert data is not None
    read = f"ANSWER: {GUIDE}Read the diff for bugs"
    assert [(s["name"], s["item"], s["state"], s["agent"]) for s in data["steps"]] == [
        ("read", "item-2", "succeeded", "fake"),
        ("sum", "item-3", "succeeded", "fake"),
    ]
    assert (data["id"], data["workflow"], data["exit_code"]) == ("item-1", "review", 0)
    assert data["steps"][0]["answer"].strip() == read
    assert data["steps"][1]["answer"].strip() == (f"ANSWER: {GUIDE}Sum up in a plain tone: {read}")
    assert all(isinstance(step["history"], int) for step in data["steps"])
    assert texts(result)[0].splitlines()[:3] == [
        "workflow review: item-1",
        "  read (item-2) succeeded",
        "  sum (item-3) succeeded",
    ]
    assert again.structured_content == {k: v for k, v in data.items() if k != "exit_code"}


async def test_list_workflows_gives_each_step_and_the_level_it_runs_at(
    config: Path, isolated: Path, mode: str
) -> None:
    async with connect(isolated, mode) as client:
        result = await client.call_tool("list_workflows", {})
    data = result.structured_content
    assert data is not None
    assert data["permissions"] == "read-only"
    assert [flow["name"] for flow in data["workflows"]] == ["review", "bold"]
    review, bold = data["workflows"]
    assert review["params"] == [
        {"name": "focus", "description": "what to look at", "default": None, "required": True},
        {"name": "tone", "description": "how to say it", "default": "plain", "required": False},
    ]
    assert [(s["name"], s["permissions"], s["permissions_from"]) for s in bold["steps"]] == [
        ("fix", "read-only", "settings.mcp_permissions (capped from 'full', the step's "
         "permissions)"),
        ("look", "read-only", "settings.mcp_permissions (capped from 'full', task sharp's "
         "permissions)"),
    ]  # fmt: skip


async def test_a_step_at_full_runs_at_the_sessions_level(
    config: Path, isolated: Path, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ask_agent runs a task whose own level is above settings.mcp_permissions: at that
    level, whatever the step or its task asks."""
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_RECORD", str(record))
    async with connect(isolated, mode) as client:
        result = await client.call_tool("run_workflow", {"name": "bold", "text": "it"})
        ran = argv(record)
        settings(config, 'mcp_permissions = "edit"')
        edit = await client.call_tool("run_workflow", {"name": "bold", "text": "it"})
        ran_edit = argv(record)
    assert result.is_error is False, texts(result)
    assert "--ro" in ran and "--full" not in ran
    assert edit.is_error is False, texts(edit)
    assert "--edit" in ran_edit and "--full" not in ran_edit
    assert result.structured_content is not None
    fix, look = result.structured_content["steps"]
    logged = [
        json.loads(run_start("log", "show", str(step["history"]), "--json", cwd=isolated).stdout)
        for step in (fix, look)
    ]
    holder = f"mcp:{CLIENT}:{os.getpid()}"
    assert [(run["permissions"], run["permissions_from"]) for run in logged] == [
        (
            "read-only",
            f"item-{n} was written by {holder} at 'read-only' (capped from 'full', {why})",
        )
        for n, run, why in (
            (2, logged[0], "the item's permissions"),
            (3, logged[1], f"task sharp's permissions (global: {config})"),
        )
    ]


async def test_a_hostile_value_only_fills_the_prompt(
    config: Path, isolated: Path, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value with options, shell syntax and a NUL reaches the agent as part of its prompt,
    one argument after `--`; no shell reads it, and no option comes of it."""
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_RECORD", str(record))
    pwned = tmp_path / "pwned"
    hostile = f"--full $(touch {pwned}) `touch {pwned}`; touch {pwned} {{steps}} \x00"
    async with connect(isolated, mode) as client:
        result = await client.call_tool(
            "run_workflow",
            {"name": "review", "text": "--help", "params": {"focus": hostile, "tone": "-rf"}},
        )
    assert result.is_error is False, texts(result)
    ran = argv(record)
    kept = hostile.replace("\x00", "\ufffd")
    read = f"ANSWER: {GUIDE}Read --help for {kept}"
    assert ran[ran.index("--") + 1 :] == [f"{GUIDE}Sum up in a -rf tone: {read}"]
    assert "--full" not in ran[: ran.index("--")]
    assert not pwned.exists()


async def test_the_schemas_bound_what_a_caller_sends(
    config: Path, isolated: Path, mode: str
) -> None:
    calls: list[dict[str, Any]] = [
        {"name": "quiet"},
        {"name": "nope"},
        {"name": "review", "text": "x"},
        {"name": "review", "params": {"focus": "x", "--full": "1"}},
        {"name": "review", "params": {"focus": "x", "tone": 3}},
        {"name": "review", "params": {"focus": "x" * (workflows.PARAM_CHARACTERS + 1)}},
        {"name": "review", "params": {"focus": "x"}, "text": "x" * (inputs.TEXT_LIMIT + 1)},
        {"name": "bold", "params": {"focus": "x"}},
        {"name": "review", "params": {"focus": "x"}, "agent": "other"},
    ]
    async with connect(isolated, mode) as client:
        results = [await client.call_tool("run_workflow", call) for call in calls]
        status = await client.call_tool("workflow_status", {"id": "../1"})
        nothing = await client.call_tool("workflow_status", {"id": "7"})
        await client.call_tool("board_tasks_create", {"title": "not a run"})
        other = await client.call_tool("workflow_status", {"id": "1"})
    assert all(result.is_error for result in results)
    said = [texts(result)[0] for result in results]
    assert said[:5] == [
        "workflow 'quiet' is not offered: it has no description; offered: review, bold",
        "unknown workflow 'nope'; known workflows: bold, review",
        "workflow 'review' needs the parameter 'focus'",
        "invalid arguments at params: Additional properties are not allowed ('--full' was "
        "unexpected); 'params' takes: focus, tone",
        "invalid arguments at params/tone: 3 is not of type 'string'",
    ]
    assert said[5].startswith("invalid arguments at params/focus: ")
    assert said[6].startswith("invalid arguments at text: ")
    assert said[7:] == [
        "workflow 'bold' has no parameter 'focus' (its parameters: none)",
        "invalid arguments: Additional properties are not allowed ('agent' was unexpected); "
        "run_workflow takes: name, text, params",
    ]
    assert status.is_error and texts(status)[0].startswith("invalid arguments at id: ")
    assert texts(status) == [
        "invalid arguments at id: '../1' is not an item id: ids read item-N (or N), and "
        "item-PREFIX.N for another machine's item (as the board shows it), N a number of 1 to 18 "
        "digits that does not start with 0"
    ]
    assert texts(nothing) == [
        f"no item item-7 on the board of {isolated} (the board is empty; 'start board' lists them)"
    ]
    assert texts(other) == [
        "item-1 is not a workflow run (its metadata has no 'workflow' with its steps); start "
        "workflow run NAME begins one"
    ]


async def test_no_workflow_tools_at_the_depth_limit(
    config: Path, isolated: Path, mode: str
) -> None:
    """A workflow's steps ask agents: a server inside an agent run at settings.mcp_depth
    offers no workflow tools, and refuses a call, as it offers no asking tools."""
    from mcp import Client

    from start.mcp import server

    async with Client(server.build(rules.Scope(str(isolated), depth=1)), mode=mode) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool("run_workflow", {"name": "review", "text": "x"})
    assert not set(WORKFLOW_TOOLS) & set(names)
    assert result.is_error is True
    assert texts(result) == [
        "the workflow tools are not offered: it runs at depth 1, inside an agent run that start "
        "mcp started, and settings.mcp_depth allows 1 level, so that agents cannot ask each "
        "other in a loop"
    ]


async def test_a_step_whose_agent_may_not_be_asked_is_refused(
    config: Path, isolated: Path, mode: str
) -> None:
    settings(config, 'mcp_agents = ["other"]')
    async with connect(isolated, mode) as client:
        result = await client.call_tool(
            "run_workflow", {"name": "review", "params": {"focus": "x"}}
        )
        board = await client.call_tool("board_tasks_list", {})
    assert texts(result) == [
        "step 'read' of workflow 'review' cannot run: agent 'fake' cannot be asked: "
        "settings.mcp_agents leaves it out; agents that can be asked: other"
    ]
    assert board.structured_content is not None
    assert board.structured_content["items"] == []  # refused before anything was made


async def test_workflows_that_do_not_check_are_not_offered_and_say_why(
    config: Path, isolated: Path, mode: str
) -> None:
    config.write_text(config.read_text().replace("{steps.read.answer}", "{steps.raed.answer}"))
    async with connect(isolated, mode) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        said = client.instructions or ""
        result = await client.call_tool("run_workflow", {"name": "bold", "text": "x"})
    error = (
        f"the workflows cannot be run: {config}:88:36: workflows.review.steps.sum.prompt: "
        "binding {steps.raed.answer} reads step 'raed', which this workflow does not have; its "
        "steps: read (did you mean 'read'?)"
    )
    assert not set(WORKFLOW_TOOLS) & set(names)
    assert f" No workflow tools: {error}. No Taskfile tools" in said
    assert (result.is_error, texts(result)) == (True, [error])


async def test_a_steps_run_is_marked_one_level_deeper(
    config: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "depth")
    async with connect(isolated, mode) as client:
        result = await client.call_tool("run_workflow", {"name": "bold", "text": "x"})
    assert result.structured_content is not None
    answers = [step["answer"].strip() for step in result.structured_content["steps"]]
    assert answers == ["depth=1", "depth=1"]


async def test_a_steps_agent_cannot_run_workflows_through_its_own_start_mcp(
    config: Path, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's agent starts `start mcp` through the MCP SDK's client (whose environment
    drops START_MCP_DEPTH): at settings.mcp_depth it lists no workflow tools, so that workflows
    cannot run agents that run workflows in a loop. Outside any run, the same server lists
    them."""
    home = tmp_path / "home" / ".config" / "start"
    home.mkdir(parents=True)
    (home / "config.toml").write_text(config.read_text())
    monkeypatch.setenv("FAKE_MODE", "mcp-tools")
    alone = subprocess.run(
        [sys.executable, fake_headless.__file__], capture_output=True, text=True, timeout=120
    )
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.split()[8:11] == WORKFLOW_TOOLS
    async with connect(isolated, "auto") as client:
        result = await client.call_tool("run_workflow", {"name": "bold", "text": "x"})
    assert result.structured_content is not None
    [fix, _] = result.structured_content["steps"]
    assert fix["state"] == "succeeded", fix
    assert fix["answer"].split() == ["list_tasks", "run_task", "find_tasks", *BOARD_TOOLS]


async def test_an_untrusted_projects_workflows_are_not_offered(
    config: Path, isolated: Path, mode: str, tmp_path: Path
) -> None:
    ran = tmp_path / "RAN"
    write_tree(
        isolated,
        {
            ".start/config.toml": f"""
[tasks.theirs]
description = "A project task"
command = "touch {ran}"
prompt = "theirs"

[workflows.theirs]
description = "A project workflow"

[workflows.theirs.steps.one]
task = "theirs"
agent = "fake"
"""
        },
    )
    async with connect(isolated, mode) as client:
        listing = await client.call_tool("list_workflows", {})
        result = await client.call_tool("run_workflow", {"name": "theirs"})
    assert listing.structured_content is not None
    assert [flow["name"] for flow in listing.structured_content["workflows"]] == ["review", "bold"]
    assert texts(result) == ["unknown workflow 'theirs'; known workflows: bold, review"]
    assert not ran.exists()


async def test_a_failed_step_is_an_error_result_with_the_whole_record(
    config: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "fail")
    async with connect(isolated, mode) as client:
        result = await client.call_tool(
            "run_workflow", {"name": "review", "params": {"focus": "x"}}
        )
    assert result.is_error is True
    data = result.structured_content
    assert data is not None
    assert data["exit_code"] == 1
    [read, sum_] = data["steps"]
    assert (read["state"], sum_["state"]) == ("failed", "stopped")
    why = "exited with status 3: Error: unknown option '--bogus'"
    assert (read["reason"], sum_["reason"]) == (why, f"step 'read' failed: {why}")
    assert (read["agent"], isinstance(read["history"], int)) == ("fake", True)
    assert texts(result)[0].splitlines()[:3] == [
        "workflow review: item-1",
        f"  read (item-2) failed: {why}",
        f"  sum (item-3) stopped: step 'read' failed: {why}",
    ]


SHAPED = """
[workflows.shaped]
description = "A step's own output, then a step that reads its value"

[workflows.shaped.steps.triage]
prompt = "Triage {instructions}"
agent = "fake"
output = { schema = { type = "object", properties = { severity = { type = "string" } }, required = ["severity"] } }

[workflows.shaped.steps.plan]
prompt = "Plan for {steps.triage.value.severity}"
agent = "fake"
when = "steps.triage.value.severity == 'high'"
"""


async def test_a_steps_own_output_is_checked_and_its_value_read_as_a_cli_run_does(
    config: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run over MCP carries out a step's own `output` as `start workflow run` does: its
    answer checked, its value given and read by the steps after it."""
    config.write_text(config.read_text() + SHAPED)
    monkeypatch.setenv("FAKE_MODE", "say")
    monkeypatch.setenv("FAKE_ANSWER", '{"severity": "low"}')
    async with connect(isolated, mode) as client:
        result = await client.call_tool("run_workflow", {"name": "shaped", "text": "x"})
        monkeypatch.setenv("FAKE_ANSWER", "Severe, I think")
        prose = await client.call_tool("run_workflow", {"name": "shaped", "text": "x"})
    data = result.structured_content
    assert data is not None, texts(result)
    assert (result.is_error, data["exit_code"]) == (False, 0)
    assert [(s["name"], s["state"], s["value"]) for s in data["steps"]] == [
        ("triage", "succeeded", {"severity": "low"}),
        ("plan", "skipped", None),
    ]
    found = prose.structured_content
    assert found is not None, texts(prose)
    assert (prose.is_error, found["exit_code"]) == (True, 65)
    assert [(s["name"], s["state"]) for s in found["steps"]] == [
        ("triage", "out-of-format"),
        ("plan", "stopped"),
    ]


async def test_answers_are_cut_as_board_tasks_get_cuts_a_comment(
    config: Path, isolated: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workflows, "ANSWER_CHARACTERS", 10)
    async with connect(isolated, mode) as client:
        result = await client.call_tool("run_workflow", {"name": "bold", "text": "x"})
        item = await client.call_tool("board_tasks_get", {"id": "item-2"})
    assert result.structured_content is not None
    assert item.structured_content is not None
    whole = item.structured_content["answer"]
    fix = result.structured_content["steps"][0]
    assert fix["answer"] == f"{whole[:10]}… [{len(whole) - 10:,} more characters]"


async def test_progress_tells_the_runs_id_and_each_steps_state(
    config: Path, isolated: Path, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The steps answer once the test has seen one of them running (FAKE_UNTIL): no clock."""
    go = tmp_path / "go"
    monkeypatch.setenv("FAKE_MODE", "slow")
    monkeypatch.setenv("FAKE_UNTIL", str(go))
    monkeypatch.setattr(workflows, "PROGRESS_EVERY", 0.1)
    told: list[tuple[float, str]] = []

    async def tell(progress: float, total: float | None, message: str | None) -> None:
        told.append((progress, message or ""))
        if "in_progress" in (message or ""):
            go.touch()

    async with connect(isolated, mode) as client:
        result = await client.call_tool(
            "run_workflow", {"name": "bold", "text": "x"}, progress_callback=tell
        )
    assert result.is_error is False, texts(result)
    values = [value for value, _ in told]
    assert values == sorted(set(values))  # it grows with every notification
    running = [message for _, message in told if "in_progress" in message]
    assert running, told
    assert running[0].startswith("workflow run item-1 (")
    assert set(running[0].split(": ", 1)[1].split(", ")) <= {
        "fix pending", "fix in_progress", "look pending", "look in_progress"
    }  # fmt: skip


async def test_list_workflows_says_which_the_session_cannot_run_and_lists_files(
    config: Path, isolated: Path, mode: str
) -> None:
    # A workflow whose step's agent this session may not ask is listed as not runnable, with
    # run_workflow's reason; a `for_each` over files is listed as its pattern.
    config.write_text(
        config.read_text()
        + '\n[workflows.each]\ndescription = "Each file"\n\n[workflows.each.steps.look]\n'
        'prompt = "Look at {item}"\nagent = "other"\nfor_each = { files = "src/*.py" }\n'
    )
    settings(config, 'mcp_agents = ["other"]')
    async with connect(isolated, mode) as client:
        result = await client.call_tool("list_workflows", {})
    data = result.structured_content
    assert data is not None
    shown = {flow["name"]: flow for flow in data["workflows"]}
    assert (shown["each"]["runnable"], "why_not" in shown["each"]) == (True, False)
    assert shown["each"]["steps"][0]["for_each"] == {"files": "src/*.py"}
    assert (shown["review"]["runnable"], shown["review"]["why_not"]) == (
        False,
        "step 'read' of workflow 'review' cannot run: agent 'fake' cannot be asked: "
        "settings.mcp_agents leaves it out; agents that can be asked: other",
    )
