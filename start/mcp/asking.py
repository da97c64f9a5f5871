"""`start mcp`'s asking tools: a prompt or a task, run headless by other agents as `--print` runs
it, the answers returned to the agent that asked.

A call's arguments are the fields of an Ask (start.compose.ask) by name, checked against the
tool's schema (start.mcp.tools); the ask is the agent's, so the ask rules hold it to what the user
allows agents (start.runs.rules), and it runs through the path of every door (start.runs.path).
Nothing here imports the MCP SDK, prints or asks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from start.base import fs
from start.base.errors import StartError
from start.compose.ask import AGENT, MCP, Ask
from start.runs import Run, path, rules
from start.runs.rules import RequestError, Scope

if TYPE_CHECKING:
    from start.compose import pipeline
    from start.proc import agents as agentrun
    from start.proc import shell


def instructions(scope: Scope) -> str:
    """What the server's instructions say of the asking tools."""
    try:
        agents, why = rules.offered(scope, rules.view(scope).config)
    except StartError:  # library.instructions already says why the config cannot be loaded
        return ""
    if why is not None:
        return f" {why[0].upper()}{why[1:]}."
    return (
        " ask_agent(agent, prompt | task + instructions) runs another agent headless on a prompt "
        "or one of the tasks, as `start task NAME --print` does, and returns its answer; "
        "ask_agents asks several at once; ask_start, ask_result and ask_cancel do the same for "
        "runs longer than the client waits for a tool. Runs are read-only unless the user's "
        f"config allows more. Agents that can be asked: {', '.join(agents)}."
    )


# --- one call -------------------------------------------------------------------------------


def check(scope: Scope, arguments: Mapping[str, Any], *, several: bool) -> Ask:
    """The arguments of ask_agent (`agent`, the one of `agents`) or of ask_agents and ask_start
    as the agent's Ask, once they hold to the tool's input schema (start.mcp.tools.ask_call
    checks them): here only what a schema cannot say.

    Raises RequestError naming what is wrong.
    """
    given = dict(arguments)
    names = tuple(given.pop("agents")) if several else (given.pop("agent"),)
    text: str | None = given.get("prompt")
    task: str | None = given.get("task")
    if (text is None) == (task is None):
        raise RequestError("give either 'prompt' (the text to ask) or 'task' (a task's name)")
    if text is not None and (given.get("instructions") is not None or given.get("params")):
        raise RequestError("'instructions' and 'params' go with 'task', not with 'prompt'")
    if text is not None:
        given["prompt"] = fs.arg_text(text)
    if "params" in given:
        given["params"] = MappingProxyType(dict(given["params"]))
    return Ask(
        **given,
        mode="task" if task is not None else "prompt",
        agents=names,
        headless=True,
        directory=scope.workdir,
        door=MCP,
        by=AGENT,
    )


def run(
    scope: Scope,
    ask: Ask,
    owner: shell.Owner | None = None,
    on_state: agentrun.State | None = None,
) -> list[Run]:
    """Run every asked agent to its end through the one path (start.runs.path.run), each run's
    environment marked with this server's depth plus one; results in the order asked.

    `owner` is told of every process group, the composition's commands and the agents';
    `on_state` of each agent's state, as agentrun.run_agents tells it.
    """
    return path.run(scope, ask, _Progress(on_state), owner=owner)


class _Progress(path.Door):
    """The server's door: each agent's state told to the caller's progress."""

    def __init__(self, on_state: agentrun.State | None) -> None:
        self.on_state = on_state

    def running(
        self, each: Sequence[pipeline.Prepared]
    ) -> contextlib.AbstractContextManager[agentrun.State | None]:
        return contextlib.nullcontext(self.on_state)
