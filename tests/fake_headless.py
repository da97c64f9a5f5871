#!/usr/bin/env python3
"""A stand-in headless agent for --print tests: FAKE_MODE says how it answers, or fails
(FAKE_MODE=gate: a reviewer's verdict on the diff in its prompt).

FAKE_BEFORE is Python it runs first. It records its argv and stdin as JSON in FAKE_RECORD (and the file named after the option
FAKE_READ_AFTER), and its pid (and its child's) in FAKE_PIDS; an agent that sleeps 300 s and was
not stopped meanwhile then writes FAKE_PIDS.finished. FAKE_MODE=slow answers after FAKE_SECONDS, or
once the file FAKE_UNTIL exists (a test's go, where how long it takes must not matter).
The prompt is its last argument.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def main() -> int:
    mode = os.environ.get("FAKE_MODE", "text")
    before = os.environ.get("FAKE_BEFORE")  # Python to run first: a test's change of the world
    if before:
        exec(before)
    prompt = sys.argv[-1] if len(sys.argv) > 1 else ""
    stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    record = os.environ.get("FAKE_RECORD")
    if record:
        with open(record, "w", encoding="utf-8") as out:
            found: dict[str, object] = {"argv": sys.argv[1:], "stdin": stdin}
            after = os.environ.get("FAKE_READ_AFTER")  # the file an option names, as it is now
            if after in sys.argv:
                with open(sys.argv[sys.argv.index(after) + 1], encoding="utf-8") as named:
                    found["read"] = named.read()
            json.dump(found, out)
    pids = os.environ.get("FAKE_PIDS")
    if pids and os.environ.get("FAKE_NAME"):
        pids += "." + os.environ["FAKE_NAME"]
    answer = f"ANSWER: {prompt}"
    if mode == "text":
        print(answer)
    elif mode == "result":
        usage = {"input_tokens": 3, "output_tokens": 2}
        found = {"type": "result", "subtype": "success", "is_error": False, "result": answer,
                 "usage": usage, "total_cost_usd": 0.01}  # fmt: skip
        if os.environ.get("FAKE_SESSION"):  # as Claude Code reports its session
            found["session_id"] = os.environ["FAKE_SESSION"]
        print(json.dumps(found))
    elif mode == "denied":
        denials = [
            {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "rm -rf build"}}
        ]
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                          "result": answer, "permission_denials": denials}))  # fmt: skip
    elif mode == "is-error":
        print(json.dumps({"type": "result", "subtype": "success", "is_error": True,
                          "result": "Invalid API key · Please run /login"}))  # fmt: skip
    elif mode == "slow":
        began = time.time()
        name = os.environ.get("FAKE_NAME", "?")
        if pids:  # a line on each stream, and a child in its group, before it sleeps
            print(f"{name} is thinking", flush=True)
            print(f"{name} started", file=sys.stderr, flush=True)
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
            with open(pids, "w", encoding="utf-8") as out:
                out.write(f"{os.getpid()} {child.pid}\n")
        until = os.environ.get("FAKE_UNTIL")  # a file a test makes: it answers then
        if until:
            while not os.path.exists(until):
                time.sleep(0.01)
        else:
            time.sleep(float(os.environ.get("FAKE_SECONDS", "1")))
        log = os.environ.get("FAKE_LOG")
        if log:  # when it ran, to show what overlapped
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{name} {began} {time.time()}\n")
        print(f"{answer} from {name}")
    elif (
        mode == "refuse-schema"
        and "--json-schema" in sys.argv
        and os.environ.get("FAKE_NAME", "") in os.environ.get("FAKE_REFUSES", "").split(",")
    ):  # as llm's echo model does
        print("Error: Fake: fake-model does not support schemas", file=sys.stderr)
        return 1
    elif mode in ("say", "refuse-schema"):  # FAKE_ANSWER_<NAME>, else FAKE_ANSWER (or its file's)
        name = os.environ.get("FAKE_NAME", "")
        said = os.environ.get(f"FAKE_ANSWER_{name}", os.environ.get("FAKE_ANSWER", ""))
        if os.environ.get("FAKE_ANSWER_FILE"):
            with open(os.environ["FAKE_ANSWER_FILE"], encoding="utf-8") as answer_file:
                said = answer_file.read()
        print(said)
    elif mode == "gate":  # a reviewer's verdict on the diff in its prompt (the task gate)
        print(json.dumps(verdict(prompt)))
    elif mode == "structured":  # Claude Code held to --json-schema
        value = json.loads(os.environ.get("FAKE_ANSWER", "null"))
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                          "result": "Done.", "structured_output": value}))  # fmt: skip
    elif mode == "depth":  # the depth `start mcp` marks a run with
        print(f"depth={os.environ.get('START_MCP_DEPTH')}")
    elif mode == "mcp-tools":  # the tools of its own `start mcp`, started as MCP clients do
        print(" ".join(start_mcp_tools()))
    elif mode == "replay":  # what a real CLI printed (tests/fixtures/envelopes), byte for byte
        with open(os.environ["FAKE_REPLAY"], "rb") as recorded:
            sys.stdout.buffer.write(recorded.read())
    elif mode == "empty":
        pass
    elif mode == "not-json":
        print("Loading...")
    elif mode == "fail":
        print("partial output")
        print("Error: unknown option '--bogus'", file=sys.stderr)
        return 3
    elif mode == "stderr":
        print("a warning on stderr", file=sys.stderr)
        print(answer)
    elif mode == "huge":
        child = None
        if pids:  # it and a child in its group; it goes on after printing, then says it finished
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
            with open(pids, "w", encoding="utf-8") as out:
                out.write(f"{os.getpid()} {child.pid}\n")
        line = "x" * 1023 + "\n"
        sys.stdout.write(line * (int(os.environ.get("FAKE_MIB", "20")) * 1024))
        if child is not None:
            sys.stdout.flush()
            time.sleep(300)
            with open(f"{pids}.finished", "w", encoding="utf-8"):
                pass
    elif mode == "stdin":
        print(f"ANSWER: {stdin}")
    elif mode in ("sleep", "stubborn"):
        if mode == "stubborn":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        if pids:
            with open(pids, "w", encoding="utf-8") as out:
                out.write(f"{os.getpid()} {child.pid}\n")
        time.sleep(300)
        if pids:  # it was not stopped
            with open(f"{pids}.finished", "w", encoding="utf-8"):
                pass
    elif mode == "leave-child":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        if pids:
            with open(pids, "w", encoding="utf-8") as out:
                out.write(f"{child.pid}\n")
        print(answer)
    return 0


def verdict(prompt: str) -> dict[str, object]:
    """What a reviewer answers the task gate: a finding for each line the diff in `prompt` adds
    that holds FAKE_FLAG (default SECRET), at its file and its line in the new version, and
    `block` when there is one."""
    flag = os.environ.get("FAKE_FLAG", "SECRET")
    findings: list[dict[str, object]] = []
    file, line = None, 0
    for text in prompt.split("\n"):
        if text.startswith("+++ "):
            file = text[4:].removeprefix("b/")
        elif text.startswith("@@ ") and file is not None:  # @@ -1,2 +1,3 @@: the new lines from 1
            line = int(text.split(" +")[1].split(",")[0].split(" ")[0]) - 1
        elif text.startswith("```"):  # the end of the diff's block
            file = None
        elif file is not None and text.startswith(("+", " ")):
            line += 1
            if text.startswith("+") and flag in text:
                message = f"it adds {flag}: keep it out of the repository"
                findings.append({"file": file, "line": line, "message": message})
    return {"block": bool(findings), "findings": findings}


def start_mcp_tools() -> list[str]:
    """The tools that a `start mcp` lists when this process starts it through the MCP Python
    SDK's own client, which gives it the SDK's default environment: HOME, LOGNAME, PATH, SHELL,
    TERM and USER, and nothing else (START_MCP_DEPTH and PYTHONPATH included)."""
    # Run as a script, this file's directory comes first on sys.path: there `mcp` is tests/mcp.
    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [path for path in sys.path if os.path.realpath(path or ".") != here]
    import anyio
    from mcp import Client, StdioServerParameters

    async def listed() -> list[str]:
        server = StdioServerParameters(command=sys.executable, args=["-m", "start", "mcp"])
        async with Client(server) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    return anyio.run(listed)


def agent(
    name: str,
    *,
    output: str = "text",
    levels: str = 'read-only = "--ro", edit = "--edit"',
    prefix: str = "",
    extra: str = "",
) -> str:
    """`[agents.NAME]` running this stand-in, interactive and headless (`print_output` =
    `output`, `print_permissions` = `{ levels }`, `prefix` before the headless command line and
    `extra` lines after): the TOML the tests' configs share."""
    me = os.path.realpath(__file__)  # as tests.conftest.REPO spells it
    return (
        f"[agents.{name}]\n"
        f'bin = "{sys.executable}"\n'
        f'command = "{{bin}} {me} {{prompt}}"\n'
        f'print_command = "{prefix}{{bin}} {me} {{args}} -- {{prompt}}"\n'
        f'print_output = "{output}"\n'
        f"print_permissions = {{ {levels} }}\n"
        f"{extra}"
    )


if __name__ == "__main__":
    sys.exit(main())
