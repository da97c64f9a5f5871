#!/bin/sh
# `make mcp-check`: real MCP clients against `start mcp`, outside `make test` because it needs npm
# and Node 22.19 or newer (Node 24 from the npm registry works: npm install --prefix DIR node@24).
#
# 1. MCP Inspector's CLI lists and gets the prompts, and calls the tools, of a scratch project.
#    It also asks agents through `ask_agent`: a stand-in headless agent (tests/fake_headless.py),
#    and llm with the llm-echo plugin (`-m echo`) when llm is on PATH.
# 2. Claude Code registers the server with `claude mcp add` and `claude mcp list` shows it
#    connected. Then a headless `claude -p`, pointed at the offline model server
#    (tests/model_server.py), must offer the model the asking tools of `start mcp`. And agents
#    ask agents: when llm with llm-echo is on PATH, the model server makes its model call
#    `ask_agent` (llm, model echo); Claude Code runs it through `start mcp`, which runs the real
#    `llm -m echo`, and the tool_result Claude Code sends back must hold llm-echo's answer.
# 3. Every other client installed in the same npm prefix (gemini, qwen, codex, opencode, copilot)
#    runs the registration `start mcp --print-config AGENT` prints, in a scratch home; the clients
#    whose `mcp list` starts the server must show it connected.
#
# The clients are installed into a scratch npm prefix, unless MCP_CHECK_NPM names a prefix that
# already has them. Every check that fails stops the script with a non-zero status.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT INT TERM

fail() {
    echo "mcp-check: $*" >&2
    exit 1
}

node_ok=$(node -e 'const [a, b] = process.versions.node.split(".").map(Number);
console.log(a > 22 || (a === 22 && b >= 19) ? "yes" : "no")' 2>/dev/null || echo no)
if [ "$node_ok" != yes ]; then
    fail "needs Node 22.19 or newer first on PATH (found: $(node --version 2>/dev/null || echo none)).
One way: npm install --prefix DIR node@24, then PATH=DIR/node_modules/node/bin:\$PATH"
fi
prefix=${MCP_CHECK_NPM:-}
if [ -z "$prefix" ]; then
    prefix="$scratch/npm"
    echo "\$ npm install --prefix $prefix @modelcontextprotocol/inspector @anthropic-ai/claude-code"
    npm install --silent --no-fund --no-audit --prefix "$prefix" \
        @modelcontextprotocol/inspector @anthropic-ai/claude-code >&2
fi
bin="$prefix/node_modules/.bin"
command -v start >/dev/null || fail "start is not on PATH"
PATH="$bin:$PATH"
inspector=$(node -p "require('$prefix/node_modules/@modelcontextprotocol/inspector/package.json').version")
echo "node $(node --version), MCP Inspector $inspector, Claude Code $(claude --version), $(start --version)"

# A scratch project whose .start/ holds seed 000's example tasks; an empty home otherwise.
export HOME="$scratch/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_CACHE_HOME START_CONFIG_DIR START_TRUSTED_PATHS \
    START_NO_PROJECT
project="$scratch/project"
mkdir -p "$HOME" "$project/.start"
cd "$project"
git init -q
echo "Use four spaces." >STYLE.md
cat >.start/config.toml <<'TOML'
[contexts.style]
required = true
file = "STYLE.md"

[tasks.greet]
description = "Prints a simple greeting message."
command = "echo 'Hello from your custom Taskfile!'"
prompt = "Greet the user with: {command_output}\nInstructions: {instructions}"

[tasks.list-current-dir]
description = "Lists the contents of the current working directory."
command = "ls -A"
prompt = "The directory holds:\n{command_output}"

[tasks.deliberate-fail]
description = "A task designed to exit with an error code to demonstrate error handling."
command = "echo 'This task will fail!' && exit 1"
TOML

# Agents for the asking tools, in the user's own config: a stand-in headless agent, and llm's
# catalog entry (with its echo model) when llm is installed.
mkdir -p "$HOME/.config/start"
python=$(command -v python3 || command -v python)
cat >"$HOME/.config/start/config.toml" <<TOML
[agents.stand-in]
bin = "$python"
command = "{bin} $repo/tests/fake_headless.py {prompt}"
print_command = "{bin} $repo/tests/fake_headless.py {args} -- {prompt}"
print_output = "text"
print_permissions = { read-only = "--ro" }
TOML

out="$scratch/out"
# Show a shell command line, run it, keep its output in $out, and show that too.
run() {
    printf '\n$ %s\n' "$1"
    status=0
    sh -c "$1" >"$out" 2>&1 || status=$?
    cat "$out"
    echo "[exit $status]"
}
expect() {
    grep -qF -- "$1" "$out" || fail "expected to see: $1"
}

run "start trust --yes"
run "mcp-inspector --cli start mcp --method prompts/list"
expect '"name": "greet"'
expect '"name": "instructions"'
run "mcp-inspector --cli start mcp --method prompts/get --prompt-name greet \
--prompt-args 'instructions=be brief'"
expect 'Use four spaces.\n\nGreet the user with: Hello from your custom Taskfile!\n\nInstructions: be brief'
run "mcp-inspector --cli start mcp --method tools/call --tool-name run_task --tool-arg task_name=greet"
expect "Task 'greet' completed successfully. Output:\\nHello from your custom Taskfile!\\nError Output:\\n"
expect '"isError": false'
run "mcp-inspector --cli start mcp --method tools/call --tool-name run_task \
--tool-arg task_name=deliberate-fail"
expect "Task 'deliberate-fail' failed. Output:\\nThis task will fail!\\nError Output:\\n\\nExit Code: 1"
expect '"isError": true'
run "mcp-inspector --cli start mcp --method tools/call --tool-name list_tasks"
expect '"message": "Successfully listed 6 tasks for'
run "mcp-inspector --cli start mcp --method resources/read --uri start://context/style"
expect '"text": "Use four spaces.\n"'

# The asking tools: another agent, run headless, answers.
run "mcp-inspector --cli start mcp --method tools/list"
expect '"name": "ask_agent"'
expect '"name": "ask_start"'
run "mcp-inspector --cli start mcp --method tools/call --tool-name ask_agent \
--tool-arg agent=stand-in --tool-arg 'prompt=say hi'"
expect '"text": "ANSWER: Use four spaces.\n\nsay hi"'
expect '"permissions": "read-only"'
expect '"isError": false'
run "mcp-inspector --cli start mcp --method tools/call --tool-name ask_agent \
--tool-arg agent=stand-in --tool-arg 'prompt=say hi' --tool-arg permissions=full"
expect "refused: a run at 'full' permissions needs the user's consent"
expect '"isError": true'
run "mcp-inspector --cli start mcp --method tools/call --tool-name ask_agent \
--tool-arg agent=stand-in --tool-arg task=greet --tool-arg 'instructions=be brief'"
expect 'ANSWER: Use four spaces.\n\nGreet the user with: Hello from your custom Taskfile!'
llm_echo=no
if command -v llm >/dev/null && llm models list 2>/dev/null | grep -q '^Echo: echo'; then
    llm_echo=yes
fi
if [ "$llm_echo" = yes ]; then
    run "mcp-inspector --cli start mcp --method tools/call --tool-name ask_agent \
--tool-arg agent=llm --tool-arg model=echo --tool-arg 'prompt=say hi'"
    expect '"agent": "llm"'
    expect '"model": "echo"'
    expect 'say hi'
    expect '"isError": false'
else
    printf '\n(llm with the llm-echo plugin is not on PATH: its ask_agent check is skipped)\n'
fi

run "claude mcp add start -- start mcp"
run "claude mcp list"
expect 'start: start mcp - ✔ Connected'

# Claude Code, pointed at the offline model server, offers the model start's asking tools: the
# server records each request, whose tools must include them.
printf '\n$ claude -p "say hi" --output-format json  (against tests/model_server.py)\n'
PYTHONPATH="$repo" "$python" - >"$out" 2>&1 <<'PY' || { cat "$out"; fail "claude -p failed"; }
import json, os, subprocess
from tests.model_server import serve

with serve(answer="ANSWER-claude") as server:
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "k" * 40,
           "ENABLE_TOOL_SEARCH": "false"}
    done = subprocess.run(["claude", "-p", "say hi", "--output-format", "json"], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    print(done.stdout.strip())
    names = sorted({tool.get("name", "") for request in server.requests
                    if isinstance(request.body, dict)
                    for tool in request.body.get("tools") or [] if isinstance(tool, dict)})
    print("tools offered:", " ".join(n for n in names if n.startswith("mcp__start__")))
PY
cat "$out"
expect '"result":"ANSWER-claude"'
expect 'mcp__start__ask_agent mcp__start__ask_agents mcp__start__ask_cancel mcp__start__ask_result mcp__start__ask_start'

# Agents asking agents: the model calls ask_agent once, Claude Code runs it through start mcp,
# which runs llm -m echo (it answers its prompt back as JSON), and Claude Code's next request to
# the model carries that answer as the tool_result.
if [ "$llm_echo" = yes ]; then
    printf '\n$ claude -p "ask llm" --allowedTools mcp__start__ask_agent --output-format json'
    printf '  (the model calls ask_agent)\n'
    PYTHONPATH="$repo" "$python" - >"$out" 2>&1 <<'PY' || { cat "$out"; fail "claude -p failed"; }
import json, os, subprocess
from tests.model_server import serve

arguments = {"agent": "llm", "model": "echo", "prompt": "Claude Code asks llm"}
with serve("ANSWER-claude", call_tool="mcp__start__ask_agent", tool_input=arguments) as server:
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "k" * 40,
           "ENABLE_TOOL_SEARCH": "false"}
    argv = ["claude", "-p", "ask llm", "--allowedTools", "mcp__start__ask_agent",
            "--output-format", "json"]
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=300)
    print(done.stdout.strip())
    if server.tool_called:
        print("the model called: mcp__start__ask_agent", json.dumps(arguments))
    else:
        print("the model never called mcp__start__ask_agent: no request offered it")
    results = server.tool_results()
    print("tool_result:", json.dumps(results[0]) if results else "(none came back)")
    # Claude Code sends the tool's structured content (start's --print --json object) as text,
    # or its text (the answer itself) as a string or text blocks.
    content = results[0] if results else ""
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
    try:
        found = json.loads(text)
        if isinstance(found, dict) and "answer" in found:
            print("start's result: agent", found.get("agent"), "model", found.get("model"),
                  "success", found.get("success"))
            found = json.loads(found["answer"])
    except (TypeError, ValueError):
        found = None
    if isinstance(found, dict) and str(found.get("prompt", "")).endswith(arguments["prompt"]):
        print("llm-echo answered the prompt:", json.dumps(found["prompt"]))
PY
    cat "$out"
    expect '"result":"ANSWER-claude"'
    expect "start's result: agent llm model echo success True"
    expect 'llm-echo answered the prompt: "Use four spaces.\n\nClaude Code asks llm"'
else
    printf '\n(llm with llm-echo is not on PATH: the agents-asking-agents check is skipped)\n'
fi

# The other clients, each in its own scratch home, with the registration start prints.
for client in gemini qwen codex opencode copilot; do
    command -v "$client" >/dev/null || {
        printf '\n(%s is not installed in %s: skipped)\n' "$client" "$prefix"
        continue
    }
    export HOME="$scratch/home-$client"
    mkdir -p "$HOME"
    registration=$(start mcp -d "$project" --print-config "$client" -q)
    run "$registration"
    case $client in
    gemini)
        # Gemini starts project servers only in folders the user trusts.
        mkdir -p "$HOME/.gemini"
        printf '{"%s": "TRUST_FOLDER"}\n' "$project" >"$HOME/.gemini/trustedFolders.json"
        run "gemini mcp list"
        expect "start: start mcp -d $project (stdio) - Connected"
        ;;
    qwen)
        run "qwen mcp list"
        expect "start: start mcp -d $project (stdio) - Connected"
        ;;
    opencode)
        run "opencode mcp list"
        expect "start"
        expect "connected"
        ;;
    codex)
        run "cat ~/.codex/config.toml"
        expect "args = [\"mcp\", \"-d\", \"$project\"]"
        ;;
    copilot)
        run "cat ~/.copilot/mcp-config.json"
        expect "\"command\": \"start\""
        ;;
    esac
done
printf '\nmcp-check: every check passed\n'
