"""Other agents' custom commands as `start` tasks: Claude Code, Gemini, Qwen Code, Codex, opencode.

The command files users already keep (`.claude/commands/*.md`, `.gemini/commands/*.toml`, ...)
are read as tasks named `SOURCE:PATH` (`claude:git:commit`), with each format's expansion rules
kept here, not in the rest of `start`:

- `dirs`: where each source keeps its commands, and the bounded walk that finds and reads them;
- `frontmatter`, `words`: the front matter and argument splitting of the sources;
- `claude`, `gemini` (Gemini CLI and Qwen Code), `codex`, `opencode`: one parser per format,
  from a file's text to a `model.Imported` template of segments (text, argument reference,
  shell snippet, file include);
- `library`: the files found, parsed into tasks for the imported and project layers;
- `expand`: a launch's expansion of one imported task (arguments, snippets, includes).

Every launch reads this module (the settings' default, and whether any command directory is
there at all), so it imports nothing but `os`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

# The sources, in the order `[settings] import_commands` lists them by default.
# `skill` is the SKILL.md folders of every agent (start.config.interop.skills), named `skill:NAME`.
FORMATS: Final = ("claude", "gemini", "qwen", "codex", "opencode", "skill")

# Each source's project-level command directories, relative to the project root (Codex has none).
PROJECT_DIRS: Final = (
    ("claude", ".claude/commands"),
    ("gemini", ".gemini/commands"),
    ("qwen", ".qwen/commands"),
    ("opencode", ".opencode/command"),
    ("opencode", ".opencode/commands"),
)


def user_dirs(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Each source's user-level command directories, as (format, path)."""
    env = os.environ if environ is None else environ
    home = os.path.expanduser("~")
    codex = env.get("CODEX_HOME") or os.path.join(home, ".codex")
    config = env.get("XDG_CONFIG_HOME", "").strip() or os.path.join(home, ".config")
    return [
        ("claude", os.path.join(home, ".claude", "commands")),
        ("gemini", os.path.join(home, ".gemini", "commands")),
        ("qwen", os.path.join(home, ".qwen", "commands")),
        ("codex", os.path.join(codex, "prompts")),
        ("opencode", os.path.join(config, "opencode", "command")),
        ("opencode", os.path.join(config, "opencode", "commands")),
    ]


def anywhere(root: str | None, *, user: bool) -> bool:
    """Whether any command directory is there: the user's (with `user`), or the project's under
    `root`. One stat for each; this is all a launch pays when there are none."""
    paths = [path for _, path in user_dirs()] if user else []
    if root is not None:
        paths.extend(os.path.join(root, relative) for _, relative in PROJECT_DIRS)
    return _any_exists(paths)


def _any_exists(paths: list[str]) -> bool:
    for path in paths:
        try:
            os.stat(path)
        except OSError:
            continue
        return True
    return False


# Agent Skills (`NAME/SKILL.md` folders) below these directories, relative to the project root;
# in one scope a later directory's skill replaces an earlier one of the same name
# (start.config.interop.skills; docs/interop.md lists which agents read each).
SKILL_PROJECT_DIRS: Final = (
    ".agents/skills",
    ".gemini/skills",
    ".qwen/skills",
    ".opencode/skills",
    ".github/skills",
    ".claude/skills",
)


def skill_user_dirs(environ: Mapping[str, str] | None = None) -> list[str]:
    """The user-level skill directories, in the order of SKILL_PROJECT_DIRS."""
    env = os.environ if environ is None else environ
    home = os.path.expanduser("~")
    codex = env.get("CODEX_HOME") or os.path.join(home, ".codex")
    config = env.get("XDG_CONFIG_HOME", "").strip() or os.path.join(home, ".config")
    return [
        os.path.join(home, ".agents", "skills"),
        os.path.join(codex, "skills"),
        os.path.join(home, ".gemini", "skills"),
        os.path.join(home, ".qwen", "skills"),
        os.path.join(config, "opencode", "skills"),
        os.path.join(home, ".copilot", "skills"),
        os.path.join(home, ".claude", "skills"),
    ]


def skills_anywhere(root: str | None, *, user: bool) -> bool:
    """Whether any skill directory is there, like `anywhere`: one stat for each."""
    paths = skill_user_dirs() if user else []
    if root is not None:
        paths.extend(os.path.join(root, relative) for relative in SKILL_PROJECT_DIRS)
    return _any_exists(paths)
