#!/usr/bin/env python3
"""A stand-in agent for tests: records argv, env, cwd and stdin as JSON, then exits."""

from __future__ import annotations

import json
import os
import select
import sys


def read_stdin(timeout: float = 1.0) -> str:
    """Whatever arrives on a non-TTY stdin until EOF, giving up after `timeout` s of silence."""
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    while select.select([fd], [], [], timeout)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "surrogateescape")


def main() -> int:
    record = {
        "argv": sys.argv[1:],
        "argv0": sys.argv[0],
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "stdin_tty": sys.stdin is not None and sys.stdin.isatty(),
        "stdin": read_stdin(),
    }
    text = json.dumps(record)
    path = os.environ.get("FAKE_AGENT_RECORD")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text + "\n")
    return int(os.environ.get("FAKE_AGENT_EXIT") or 0)


if __name__ == "__main__":
    sys.exit(main())
