"""`make skills-check`: real agent CLIs read the folders `start export skills` writes, offline.

1. In a scratch project with a scratch HOME, `start export skills` writes the project's tasks
   into `.claude/skills` and `.agents/skills`; a second export must write nothing.
2. Claude Code (`claude -p`), pointed at the offline model server of tests/model_server.py, must
   list each exported skill, `- NAME: DESCRIPTION`, in the request it sends to the model.
3. Gemini CLI (`gemini skills list`, which needs no model) must list each exported skill of
   `.agents/skills`, with its description and the folder's SKILL.md.

`start`, `claude` and `gemini` are taken from PATH (scripts/agents.py installs the CLIs; the
Makefile puts the venv's `start` first). A CLI that is missing fails the check. Nothing reaches
a real model: the only server is the local one. Every failure exits 1 with what was expected.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = """\
[tasks.explain-it]
description = "Explain how a part of the project works"
prompt = "Explain how this works in the project: {instructions}"

[tasks.style-guide]
description = "Apply the project style guide"
file = "STYLE.md"

[tasks.status-now]
description = "Summarise the git status (has a command: not exported)"
command = "git status --short"
prompt = "{command_output}"
"""
EXPORTED = {
    "explain-it": "Explain how a part of the project works",
    "style-guide": "Apply the project style guide",
}
KEY = "sk-ant-skills-check-0123456789abcdef0123456789abcdef"


def fail(message: str) -> None:
    print(f"skills-check: {message}", file=sys.stderr)
    sys.exit(1)


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    print(f"\n$ {' '.join(argv)}", flush=True)
    result = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    print(result.stdout + result.stderr, end="", flush=True)
    if result.returncode != 0:
        fail(f"{argv[0]} exited {result.returncode}")
    return result.stdout + result.stderr


def main() -> int:
    for tool in ("start", "claude", "gemini"):
        if shutil.which(tool) is None:
            fail(f"{tool} is not on PATH")
    with tempfile.TemporaryDirectory(prefix="skills-check-") as scratch:
        home = Path(scratch) / "home"
        project = Path(scratch) / "project"
        (project / ".start").mkdir(parents=True)
        home.mkdir()
        (project / ".start" / "config.toml").write_text(CONFIG)
        (project / "STYLE.md").write_text("Four spaces. Names say what things are.\n")
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("XDG_", "START_", "ANTHROPIC_", "GEMINI_", "GOOGLE_"))
        }
        env.update({"HOME": str(home), "NO_COLOR": "1"})
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        versions = [run([tool, "--version"], project, env).strip() for tool in ("start", "claude")]
        print(f"\nstart {versions[0]}, Claude Code {versions[1]}")
        for target in (".claude/skills", ".agents/skills"):
            # The folders written are project config too: approve them before the next export.
            run(["start", "trust", "--yes"], project, env)
            export = ["start", "export", "skills", target, *EXPORTED]
            out = run([*export, "--json"], project, env)
            written = {s["task"]: s["status"] for s in json.loads(out)["skills"]}
            if written != dict.fromkeys(EXPORTED, "written"):
                fail(f"start export skills {target} wrote {written}")
            run(["start", "trust", "--yes"], project, env)
            again = run(export, project, env)
            if again.count("unchanged") != len(EXPORTED) or "written" in again:
                fail(f"a second export into {target} wrote again")
        claude(project, env)
        gemini(project, env)
    print("\nskills-check: Claude Code and Gemini CLI list every exported skill")
    return 0


def claude(project: Path, env: dict[str, str]) -> None:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.model_server import serve

    with serve(answer="ANSWER-skills-check") as server:
        extra = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": KEY}
        run(["claude", "-p", "say hi", "--output-format", "json"], project, {**env, **extra})
        sent = [
            json.dumps(request.body)
            for request in server.requests
            if request.method == "POST" and request.path.startswith("/v1/messages")
        ]
    if not sent:
        fail("Claude Code sent no request to the model server")
    for name, description in EXPORTED.items():
        line = json.dumps(f"- {name}: {description}")[1:-1]
        if not any(line in body for body in sent):
            fail(f"Claude Code did not list the skill {name!r} ('- {name}: {description}')")
        print(f"Claude Code lists the skill: - {name}: {description}")


def gemini(project: Path, env: dict[str, str]) -> None:
    extra = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
    listed = run(["gemini", "skills", "list"], project, {**env, **extra})
    for name, description in EXPORTED.items():
        location = project / ".agents" / "skills" / name / "SKILL.md"
        for expected in (f"{name} [Enabled]", f"Description: {description}", str(location)):
            if expected not in listed:
                fail(f"gemini skills list does not show {expected!r}")
        print(f"Gemini CLI lists the skill: {name} at {location}")


if __name__ == "__main__":
    sys.exit(main())
