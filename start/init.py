"""Starter configs for `start init`: find installed agents, build commented TOML, write it."""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from start import atomic, paths
from start.config import files, schema
from start.doctor import find_binary
from start.errors import StartError, UnknownNameError
from start.resolve import Which

CONFIG_NAME = "config.toml"
# The project's own guide for agents, in order of preference.
GUIDES = ("AGENTS.md", "README.md")

_Key = tuple[str, str]  # (kind, name), such as ("tasks", "explain")


class ConfigExistsError(StartError):
    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"{path} already exists; pass --force to replace it "
            "(the old file is kept as a timestamped backup)"
        )


@dataclass(frozen=True, slots=True)
class Detection:
    """The catalog's agents in catalog order, and those installed, with their binary's path."""

    catalog: tuple[str, ...]
    installed: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Written:
    path: Path  # the config path asked for
    target: Path  # the file written: the same, or a symlink's target
    backup: Path | None


def detect(workdir: Path, which: Which = shutil.which) -> Detection:
    """Which agents of the shipped catalog (the built-in layer) are on PATH."""
    from start.config.load import load

    config = load(workdir, use_project=False, layers=("built-in",))
    catalog = [a for a in config.agents.values() if a.origin.layer == "built-in"]
    installed: dict[str, str] = {}
    for agent in catalog:
        found = find_binary(agent.bin, workdir, which)
        if found is not None:
            installed[agent.name] = found
    return Detection(tuple(a.name for a in catalog), installed)


def choose_agent(detection: Detection, requested: str | None) -> tuple[str | None, str]:
    """The default agent for a global config and why, without asking anyone."""
    if requested is not None:
        if requested not in detection.catalog:
            raise UnknownNameError("agent", requested, detection.catalog)
        return requested, "--agent"
    installed = list(detection.installed)
    if not installed:
        return None, "no agent of the catalog is installed"
    if len(installed) == 1:
        return installed[0], "the only one installed"
    return installed[0], "the first installed"


def global_path() -> Path:
    return paths.global_config_dir() / CONFIG_NAME


def project_root(workdir: Path) -> Path:
    return paths.find_project(workdir).root


def local_path(root: Path) -> Path:
    return root / paths.PROJECT_DIR_NAME / CONFIG_NAME


def guide(root: Path) -> str | None:
    """The project's AGENTS.md or README.md, whichever exists (AGENTS.md first)."""
    for name in GUIDES:
        if (root / name).is_file():
            return name
    return None


def taken(directory: Path, replacing: Path) -> frozenset[_Key]:
    """Items the layer's other files define, which the new file must not define again."""
    found: set[_Key] = set()
    for path in files.layer_paths(directory):
        if path == replacing:
            continue
        table = files.read(path).table or {}
        for section, body in table.items():
            kind = schema.SECTION_SYNONYMS.get(section, section)
            if kind in schema.KINDS and isinstance(body, dict):
                found.update((kind, name) for name in body)
    return frozenset(found)


# --- the documents --------------------------------------------------------------------------
# Each document is a list of snippets, (the item it defines or None, TOML text with its
# comments). Skipped items leave a note; values chosen at run time are set through tomlkit.

_GLOBAL_HEAD = """\
# Your global configuration for `start`, written by `start init`.
#
# `start` merges three layers, later ones winning: the shipped defaults, this directory, and a
# project's .start/ directory. An item ([roles.NAME], [tasks.NAME], ...) defined here replaces
# the shipped item of the same name as a whole; settings are merged one by one.
#
#   start config show       the merged configuration, and where each item comes from
#   start config validate   every problem in every file
#   start doctor            a health check: agents on PATH, missing files, trust

[settings]
"""

_AGENT_SETTING = """\
# The agent launched when neither --agent nor the task names one. `start doctor` lists the
# agents start knows and which of them are installed.
default_agent = ""
"""

_SETTINGS = """\
# The role (the system prompt) used when neither --role nor the task names one.
default_role = "engineer"
# The program that runs `command` fields: bash if it is installed, else sh. Any interpreter
# works ("python3", "node", ...), here or per item.
# shell = "bash"
# Seconds a `command` may run before it is stopped.
command_timeout = 30

# Agents: start ships a catalog of agent CLIs (`start config show` lists them). Define
# [agents.NAME] here to add an agent or to replace a shipped one, for example:
#
# [agents.my-agent]
# bin = "my-agent"
# description = "My own agent CLI"
# command = "{bin} --model {model} --system-prompt {role} {prompt}"
# default_model = "fast"
# [agents.my-agent.models]
# fast = "my-model-mini"
# smart = "my-model-large"

# Roles are system prompts; pick one with --role NAME. A role is built from `file`, `command`
# and `prompt` (at least one); a prompt places the others with {file_contents} and
# {command_output}. `start config show` lists the shipped roles.
"""

_ROLE = """
[roles.engineer]
description = "How I like to work: edit it to suit you"
prompt = '''
You are an experienced software engineer working with me on my code.
Read the relevant code before you change it, and follow the project's conventions.
Keep each change small and focused, and explain your reasoning briefly.
When a requirement is ambiguous, ask instead of guessing.
'''
"""

_CONTEXTS_HEAD = """
# Contexts are documents put into prompts, in the order they are defined. A context with
# `required = true` goes into every prompt, tasks included; the others go only into full
# sessions (`start` with no command). A context whose text comes out empty is left out.
"""

_CONTEXT = """
[contexts.environment]
description = "The date and this machine's operating system, in every prompt"
required = true
command = "uname -srm"
prompt = "The time is {date}. This machine runs {command_output}"
"""

_CONTEXT_EXAMPLE = """
# A context from a file of your own, for example:
# [contexts.my-notes]
# description = "My conventions, in every prompt"
# required = true
# file = "~/notes/conventions.md"
# prompt = "Follow the conventions in {file}."
"""

_TASKS_HEAD = """
# Tasks are reusable prompts: `start task NAME [INSTRUCTIONS...]`, or its alias. A task prompt
# can use {instructions} (your words after the name, or "None"), {file}, {file_contents},
# {command}, {command_output}, {model} and {date}; write {{name}} for a literal {name}.
# The required contexts come before the task's prompt.
"""

_TASK_REVIEW = """
# `start task gdr "focus on error handling"` reviews what you have staged with git.
[tasks.git-diff-review]
alias = "gdr"
description = "Review the staged git diff"
role = "code-reviewer"
command = "git diff --staged"
# A command runs in the project root with the default shell and timeout unless you set them:
# shell = "bash"
# command_timeout = 30
prompt = '''
Analyze the following git diff and act as a code reviewer.

## Special Instructions

{instructions}

## Git Diff

```diff
{command_output}
```
'''
"""

_TASK_EXPLAIN = """
# `start task ex "how the config is loaded"`
[tasks.explain]
alias = "ex"
description = "Explain how a part of the project works"
prompt = '''
Explain how this works in the project: {instructions}

Start with a short overview, then walk through the code that matters, naming files and
functions. End with anything surprising or fragile that I should know about.
'''
"""

_TASK_TESTS = """
# `start task wt "the config loader"`
[tasks.write-tests]
alias = "wt"
description = "Write tests for a piece of code"
prompt = '''
Write tests for: {instructions}

Follow the project's existing test style and tools. Cover the normal cases, the edge cases
and the failures. Run the tests, and fix the tests (not the code) until they pass, unless
they reveal a real bug: then stop and tell me about it.
'''
"""

_LOCAL_HEAD = """\
# Project configuration for `start`, written by `start init --local`.
#
# `start` merges it over the shipped defaults and your global config; an item defined here
# replaces the one of the same name. Commit .start/ to share it with your team.
# Nothing in .start/ runs until it is trusted: when it changes, `start` shows the change and
# asks again. `start trust` reviews it; `start doctor` says whether it is trusted.

[settings]
"""

_LOCAL_AGENT = """\
# The agent for this project, over your global default_agent.
default_agent = ""
"""

_LOCAL_SETTINGS = """\
# Settings here apply in this project only, for example:
# default_agent = "claude"
# default_role = "code-reviewer"
"""

_GUIDE = """
# The project's own guide for agents. It replaces the shipped `project-guide` context (which
# looks for a guide with a shell command on every launch), and it is required, so tasks get it
# too.
[contexts.project-guide]
description = ""
required = true
file = ""
prompt = "Read {file} before you start: it describes this project and how to work on it."
"""

_NO_GUIDE = """
# No AGENTS.md or README.md was found. Once you write one, uncomment this to point every
# prompt at it:
# [contexts.project-guide]
# description = "Points the agent at AGENTS.md"
# required = true
# file = "AGENTS.md"
# prompt = "Read {file} before you start: it describes this project and how to work on it."
"""

_LOCAL_TASK = """
# An example task: `start task todo-triage [INSTRUCTIONS...]`. Commands in project files run
# in the project root. Add an alias (alias = "tt") to type less.
[tasks.todo-triage]
description = "Triage the TODO and FIXME comments in this project"
command = "grep -rnE 'TODO|FIXME' --exclude-dir=.git --exclude-dir=.start . | head -n 200"
prompt = '''
Here are the TODO and FIXME comments in this project. Group them by theme, point out the
ones that look stale, and suggest the three to tackle first, with a short reason for each.

Extra instructions: {instructions}

{command_output}
'''
"""


def _comment(text: str) -> str:
    return "".join(f"# {line}\n" for line in textwrap.wrap(text, 90, break_on_hyphens=False))


def _assemble(snippets: Iterable[tuple[_Key | None, str]], skip: Collection[_Key]) -> str:
    parts = []
    for key, text in snippets:
        if key is not None and key in skip:
            kind, name = key
            parts.append(
                f"\n# [{kind}.{name}] is not written here: another file in this directory "
                "defines it.\n"
            )
        else:
            parts.append(text)
    return "".join(parts)


def global_text(
    agent: str | None, detection: Detection, skip: Collection[_Key] = frozenset()
) -> str:
    """The starter global config: settings, a role, a required context and three tasks."""
    import tomlkit

    if agent is not None:
        agent_setting = _AGENT_SETTING
        others = [name for name in detection.installed if name != agent]
        if others:
            agent_setting += _comment(f"Also installed: {', '.join(others)}.")
    elif detection.catalog:
        agent_setting = (
            _comment(
                "No agent of start's catalog is installed yet (looked for: "
                f"{', '.join(detection.catalog)}). Install one, then name it here, for example:"
            )
            + f'# default_agent = "{detection.catalog[0]}"\n'
        )
    else:
        agent_setting = (
            "# Name the agent to launch here once it is defined under [agents.NAME] below:\n"
            '# default_agent = "my-agent"\n'
        )
    text = _assemble(
        [
            (None, _GLOBAL_HEAD + agent_setting + _SETTINGS),
            (("roles", "engineer"), _ROLE),
            (None, _CONTEXTS_HEAD),
            (("contexts", "environment"), _CONTEXT),
            (None, _CONTEXT_EXAMPLE + _TASKS_HEAD),
            (("tasks", "git-diff-review"), _TASK_REVIEW),
            (("tasks", "explain"), _TASK_EXPLAIN),
            (("tasks", "write-tests"), _TASK_TESTS),
        ],
        skip,
    )
    document = tomlkit.parse(text)
    if agent is not None:
        document["settings"]["default_agent"] = agent
    return tomlkit.dumps(document)


def local_text(root: Path, agent: str | None, skip: Collection[_Key] = frozenset()) -> str:
    """The starter project config: a context for the project's guide and an example task."""
    import tomlkit

    found = guide(root)
    text = _assemble(
        [
            (None, _LOCAL_HEAD + (_LOCAL_AGENT if agent is not None else _LOCAL_SETTINGS)),
            (("contexts", "project-guide"), _GUIDE if found is not None else _NO_GUIDE),
            (("tasks", "todo-triage"), _LOCAL_TASK),
        ],
        skip,
    )
    document = tomlkit.parse(text)
    if agent is not None:
        document["settings"]["default_agent"] = agent
    contexts = document.get("contexts")
    if found is not None and contexts is not None:
        context = contexts["project-guide"]
        context["description"] = f"Points the agent at {found}"
        context["file"] = found
    return tomlkit.dumps(document)


# --- writing --------------------------------------------------------------------------------


def create(
    path: Path,
    text: str,
    *,
    force: bool,
    project_root: Path | None = None,
    now: datetime | None = None,
) -> Written:
    """Write a starter config. A project file stays trusted if `.start/` was trusted before."""
    if project_root is None:
        return write(path, text, force=force, now=now)
    from start import trust
    from start.wall import write_target

    write_target(path, project_root)

    with trust.self_edit(project_root):
        return write(path, text, force=force, now=now)


def write(path: Path, text: str, *, force: bool, now: datetime | None = None) -> Written:
    """Atomically write `text`; an existing file needs `force` and is first backed up.

    A symlinked config is written through: its target is replaced, and the link stays.
    """
    exists = os.path.lexists(path)
    if exists and not force:
        raise ConfigExistsError(path)
    target = path.resolve() if path.is_symlink() else path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        backup = None
        if target.exists():
            backup = _backup(target, now or datetime.now())
        atomic.replace(target, text.encode("utf-8"))
    except OSError as error:
        raise StartError(f"cannot write {target}: {error.strerror or error}") from error
    return Written(path, target, backup)


def _backup(path: Path, now: datetime) -> Path:
    """A copy of `path` beside it, named `config.toml.YYYYmmdd-HHMMSS.bak` (never `*.toml`)."""
    data = path.read_bytes()
    stamp = now.strftime("%Y%m%d-%H%M%S")
    for attempt in range(1, 100):
        suffix = "" if attempt == 1 else f"-{attempt}"
        backup = path.with_name(f"{path.name}.{stamp}{suffix}.bak")
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        shutil.copymode(path, backup)
        return backup
    raise FileExistsError(f"too many backups of {path} at {stamp}")
