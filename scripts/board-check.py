"""`make board-check`: the board on the real path, with real agent CLIs, offline.

1. In a scratch project with a scratch HOME, Claude Code is given `start mcp`
   (`claude mcp add start -- start mcp`). Four headless sessions (`claude -p`), each pointed at
   the offline model server of tests/model_server.py, which makes the model call
   `board_tasks_create` once, create a plan for codex, its implementation for gemini and its
   review for codex (each waiting for the one before, its prompt using {answers}), and a verdict
   for gemini through a task whose output must be JSON.
2. `start board run --until-empty` runs them with codex and gemini, pointed at the same kind of
   server (scripts/agents.py's settings).
3. The plan, the implementation and the review must end completed, each with the server's answer
   and its run in the history; the verdict, answered in text, must end failed, with the reason.

`start`, `claude`, `codex` and `gemini` are taken from PATH (scripts/agents.py installs the CLIs;
the Makefile puts the venv's `start` first). Nothing reaches a real model. Every failure exits 1
with what was expected.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

import agents  # noqa: E402  (scripts/agents.py: how each CLI is pointed at the server)

from tests.model_server import serve  # noqa: E402

TOOL = "mcp__start__board_tasks_create"
CONFIG = """\
[tasks.verdict]
description = "A verdict, as JSON"
prompt = "Give a verdict: {instructions}"
output = "json"
"""
ITEMS: list[dict[str, Any]] = [
    {"title": "Plan the fix", "run": {"agent": "codex", "prompt": "Plan a fix for the retry loop"}},
    {
        "title": "Implement it",
        "blocked_by": ["item-1"],
        "run": {"agent": "gemini", "prompt": "Implement this plan: {answers}"},
    },
    {
        "title": "Review it",
        "blocked_by": ["item-2"],
        "run": {"agent": "codex", "prompt": "Review this change: {answers}"},
    },
    {
        "title": "A verdict",
        "description": "is it ok?",
        "run": {"agent": "gemini", "task": "verdict"},
    },
]
ANSWER = "ANSWER-board-check"
# A session whose first request goes out before `start mcp` is connected is tried again, at most
# this many times.
ATTEMPTS = 3


def fail(message: str) -> NoReturn:
    print(f"board-check: {message}", file=sys.stderr)
    sys.exit(1)


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    print(f"\n$ {' '.join(argv)}", flush=True)
    result = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    print(result.stdout[-4000:] + result.stderr[-4000:], end="", flush=True)
    if result.returncode != 0:
        fail(f"{' '.join(argv[:3])} exited {result.returncode}")
    return result.stdout


def create(arguments: dict[str, Any], work: Path, env: dict[str, str]) -> dict[str, Any]:
    """One Claude Code session whose model calls board_tasks_create with `arguments`."""
    for _ in range(ATTEMPTS):
        with serve("ANSWER-claude", call_tool=TOOL, tool_input=arguments) as server:
            session = {
                **env,
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "k" * 40,
                "ENABLE_TOOL_SEARCH": "false",
                # Wait for the MCP servers before the first request (Claude Code 2.1.332 sends
                # it without them otherwise, while `start mcp` is still importing the SDK).
                "MCP_CONNECTION_NONBLOCKING": "false",
            }
            argv = ["claude", "-p", "put it on the board", "--allowedTools", TOOL]
            run([*argv, "--output-format", "json"], work, session)
            results = server.tool_results()
            offered = {
                tool.get("name")
                for request in server.requests
                if isinstance(request.body, dict)
                for tool in request.body.get("tools") or []
                if isinstance(tool, dict)
            }
            print(f"{len(server.requests)} requests; {TOOL} offered: {TOOL in offered}")
        if results:
            content = results[0]
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
            created: dict[str, Any] = json.loads(text)
            print(f"Claude Code created {created['id']}, as {created['created_by']}")
            return created
    fail(f"Claude Code never called {TOOL} in {ATTEMPTS} sessions")


def main() -> int:
    for program in ("start", "claude", "codex", "gemini"):
        if shutil.which(program) is None:
            fail(f"{program} is not on PATH (make agents installs the CLIs)")
    base = Path(tempfile.mkdtemp(prefix="start-board-check-"))
    home, work, runtime, config = base / "home", base / "work", base / "run", base / "config"
    for directory in (home, work, config):
        directory.mkdir()
    runtime.mkdir(mode=0o700)
    (config / "config.toml").write_text(CONFIG)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_RUNTIME_DIR": str(runtime),
        "START_CONFIG_DIR": str(config),
    }
    try:
        run(["claude", "mcp", "add", "start", "--", "start", "mcp"], work, env)
        for arguments in ITEMS:
            create(arguments, work, env)
        with serve(ANSWER) as server:
            agents_env = dict(env)
            for name in ("codex", "gemini"):
                prefix = Path(os.environ.get("AGENTS_PREFIX", "/tmp/start-agents"))
                agents_env.update(agents.setup(name, server.url, home, base, prefix).env)
            print("\n(start board run exits 1: the verdict fails its output check)")
            argv = ["start", "board", "run", "--until-empty", "--timeout", "180"]
            print(f"\n$ {' '.join(argv)}", flush=True)
            done = subprocess.run(
                argv, cwd=work, env=agents_env, stdin=subprocess.DEVNULL, capture_output=True,
                text=True, timeout=900,
            )  # fmt: skip
            print(done.stdout + done.stderr, end="", flush=True)
            if done.returncode != 1:
                fail(f"start board run exited {done.returncode}, not 1")
        run(["start", "board"], work, env)
        for id_, agent in (("item-1", "codex"), ("item-2", "gemini"), ("item-3", "codex")):
            item = json.loads(run(["start", "board", "show", id_, "--json"], work, env))
            if (item["status"], item["answer"]) != ("completed", ANSWER):
                fail(f"{id_} is {item['status']} with {item['answer']!r}, not completed")
            logged = json.loads(
                run(["start", "log", "show", str(item["history"]), "--json"], work, env)
            )
            if logged["agent"] != agent:
                fail(f"{id_} was run by {logged['agent']}, not {agent}")
        verdict = json.loads(run(["start", "board", "show", "item-4", "--json"], work, env))
        if verdict["status"] != "failed" or "not the JSON" not in (verdict["reason"] or ""):
            fail(f"item-4 is {verdict['status']} ({verdict['reason']!r}), not failed as not JSON")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("\nboard-check: every item ended as it should")
    return 0


if __name__ == "__main__":
    sys.exit(main())
