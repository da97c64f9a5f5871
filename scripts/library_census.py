"""Run every imported command of a real command library through `start`, and count.

    scripts/library_census.py DIR [DIR...] [--args TEXT] [--oracle] [--json]

DIR is a library laid out as its repository lays it out (a git work tree with `.claude/commands`,
`.gemini/commands`, ...). For each DIR the census, in a scratch HOME of its own:

1. approves the project (`start trust --yes`), as a user who has read it would;
2. lists its imported tasks (`start task --json`, the tasks with a `source`);
3. runs `start task NAME ARGS --no-role --dry-run --json` for each, and counts those that exit 0
   ("resolve");
4. with --oracle, for each Claude Code command, runs the installed `claude -p "/COMMAND ARGS"`
   against the offline model server (tests/model_server.py; nothing reaches a real model), takes
   the text Claude Code sent for the command (the user message part after its
   `<command-message>` part), and counts the tasks whose dry-run prompt is that text, byte for
   byte ("exact"). That is how "composes exactly what the source CLI would" is judged: by the
   source CLI itself, not by a second reading of its rules.

Both `start` and `claude` run the library's shell commands (`!`cmd``) in DIR: run the census only
on a library whose commands you have read, in a copy you can throw away. Claude Code gets
`--allowedTools Bash` for them, as a user who trusts the library would allow them.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
AGENT = """\
[settings]
default_agent = "fake"

[agents.fake]
bin = "true"
command = "{bin} {prompt}"
"""


def start(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PYTHONPATH": str(REPO),
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "start", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def claude_text(url: str, home: Path, cwd: Path, line: str) -> str | None:
    """The text Claude Code sends for the slash command `line`, or None when it sent none."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "census-" + "k" * 40,
    }
    result = subprocess.run(
        ["claude", "-p", line, "--output-format", "json", "--allowedTools", "Bash"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return None if result.returncode != 0 else result.stdout


def expanded(messages: list[dict[str, Any]], command: str) -> str | None:
    """In a Messages request, the user text part that follows the command's own message."""
    texts: list[str] = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        parts = [content] if isinstance(content, str) else content or []
        for part in parts:
            text = part if isinstance(part, str) else part.get("text")
            if isinstance(text, str):
                texts.append(text)
    marker = f"<command-name>/{command}</command-name>"
    for index, text in enumerate(texts):
        if marker in text and index + 1 < len(texts):
            return texts[index + 1]
    return None


def census(directory: Path, args: str, oracle: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="census-") as scratch:
        home = Path(scratch)
        (home / ".config" / "start").mkdir(parents=True)
        (home / ".config" / "start" / "config.toml").write_text(AGENT, encoding="utf-8")
        trusted = start(home, directory, "trust", "--yes")
        if trusted.returncode != 0:
            raise SystemExit(f"{directory}: start trust failed: {trusted.stderr}")
        listed = start(home, directory, "task", "--json")
        tasks = [t for t in json.loads(listed.stdout) if t.get("source")]

        def dry(task: dict[str, Any]) -> dict[str, Any]:
            words = [args] if args else []
            run = start(home, directory, "task", task["name"], *words, "--no-role", "--dry-run",
                        "--json")  # fmt: skip
            row: dict[str, Any] = {"name": task["name"], "source": task["source"]}
            row["exit"] = run.returncode
            row["prompt"] = json.loads(run.stdout)["prompt"] if run.returncode == 0 else None
            row["error"] = run.stderr.strip() if run.returncode != 0 else None
            return row

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            rows = list(pool.map(dry, tasks))
        if oracle:
            _judge(rows, directory, home, args)
    resolved = sum(1 for row in rows if row["exit"] == 0)
    judged = [row for row in rows if "exact" in row]
    return {
        "library": str(directory),
        "commands": len(rows),
        "resolve": resolved,
        "judged": len(judged),
        "exact": sum(1 for row in judged if row["exact"]),
        "rows": rows,
    }


def _judge(rows: list[dict[str, Any]], directory: Path, home: Path, args: str) -> None:
    sys.path.insert(0, str(REPO))
    from tests.model_server import serve

    claude_home = home / "claude"
    claude_home.mkdir()
    for row in rows:
        if row["source"] != "claude":
            continue
        command = row["name"].removeprefix("claude:")
        line = f"/{command} {args}".rstrip()
        with serve(answer="CENSUS") as server:
            ok = claude_text(server.url, claude_home, directory, line)
            requests = [r for r in server.requests if r.path.startswith("/v1/messages")]
        sent = None
        if ok is not None and requests and isinstance(requests[-1].body, dict):
            sent = expanded(requests[-1].body.get("messages", []), command)
        row["claude"] = sent
        if sent is None:
            row["claude_error"] = "claude sent no text for the command"
            continue
        row["exact"] = row["prompt"] == sent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("libraries", nargs="+", type=Path)
    parser.add_argument("--args", default="src/app.py 42", help="the arguments every command gets")
    parser.add_argument("--oracle", action="store_true", help="compare with claude -p")
    parser.add_argument("--json", action="store_true", help="every row, as JSON")
    options = parser.parse_args(argv)
    results = [census(path.resolve(), options.args, options.oracle) for path in options.libraries]
    if options.json:
        json.dump(results, sys.stdout, indent=1, ensure_ascii=False)
        print()
        return 0
    for result in results:
        line = f"{result['library']}: {result['commands']} commands, {result['resolve']} resolve"
        if options.oracle:
            line += f"; {result['exact']} of {result['judged']} judged are exactly Claude Code's"
        print(line)
        for row in result["rows"]:
            if row["exit"] != 0:
                print(f"  {row['name']}: exit {row['exit']}: {row['error'].splitlines()[-1]}")
            elif row.get("exact") is False:
                print(f"  {row['name']}: differs from Claude Code")
            elif "claude_error" in row:
                print(f"  {row['name']}: not judged: {row['claude_error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
