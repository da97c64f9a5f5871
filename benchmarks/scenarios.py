"""The benchmark's world: a scratch git repository, one global config layer per scenario, and data.

Every scenario is a `START_CONFIG_DIR` (the global layer, which needs no trust approval); the
scratch repository has no `.start/`, so the project layer is empty and the built-in layer is merged
in as it ships. The project scenarios (`projects`) keep their config in a repository of their own,
in its `.start/`, with an empty global layer. The agent is `true`, so an exec costs next to
nothing. Each measured series gets its own `XDG_STATE_HOME` (see `World.cache`), where `start`
keeps its config cache (and a project series its approval), and a cold series edits its own copy
of the config (`copy_config`, `Editor`), so neither touches what a warm series relies on.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

AGENT = """
[agents.stand-in]
description = "Does nothing: the benchmark times start, not an agent"
bin = "true"
command = "{bin} {prompt}"
"""

SETTINGS = """
[settings]
default_agent = "stand-in"
"""

# Markdown of a realistic size for a context document (about 2 KiB).
_PARAGRAPH = (
    "This project builds a command line tool. Run the tests with `make test` and the linters with "
    "`make check`. Keep functions small, annotate every function, and prefer plain data classes "
    "over dictionaries once data has been validated.\n"
)


def toml_str(text: str) -> str:
    """A TOML basic string (JSON's escapes are a subset of TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def document(title: str, paragraphs: int = 8) -> str:
    return f"# {title}\n\n" + "\n".join(_PARAGRAPH for _ in range(paragraphs))


@dataclass(frozen=True, slots=True)
class World:
    """Paths of one benchmark run, all inside `root`."""

    root: Path
    repo: Path  # the scratch git repository: the working directory and project root
    configs: Path  # one START_CONFIG_DIR per scenario below it
    home: Path
    runtime: Path

    def config(self, scenario: str) -> Path:
        return self.configs / scenario

    def project(self, scenario: str) -> Path:
        """The repository of a project scenario (`projects`), whose `.start/` holds its config."""
        return self.root / "projects" / scenario

    def cache(self, name: str) -> Path:
        """A private XDG_STATE_HOME for one series; `start` keeps its config cache below it."""
        return self.root / "caches" / name

    def env(self, scenario: str, repo_root: Path, cache: Path | None = None) -> dict[str, str]:
        """An environment isolated from the user's own config, with `start` importable.

        `cache` is the XDG_STATE_HOME, where `start` keeps its config cache (default: the shared
        one under the scratch HOME).
        """
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("XDG_", "START_", "PYTHON")) and name not in ("NO_COLOR",)
        }
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_STATE_HOME=str(cache or self.home / ".local" / "state"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_RUNTIME_DIR=str(self.runtime),
            START_CONFIG_DIR=str(self.config(scenario)),
            PYTHONPATH=str(repo_root),
        )
        return env


def create(root: Path) -> World:
    world = World(root, root / "repo", root / "configs", root / "home", root / "run")
    for directory in (world.repo, world.configs, world.home):
        directory.mkdir(parents=True)
    world.runtime.mkdir(mode=0o700)
    subprocess.run(["git", "init", "-q", str(world.repo)], check=True)
    return world


def empty(directory: Path) -> None:
    """Remove `directory` and everything in it, and create it again, empty."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)


def cache_entries(directory: Path) -> list[Path]:
    """The config cache's entries below a state directory (XDG_STATE_HOME): the merged configs'
    (`config-*.bin`) and the built-in layer's (`layer-*.bin`), not the history's files."""
    return sorted((directory / "start" / "config-cache").glob("*.bin"))


def copy_config(world: World, scenario: str, name: str) -> Path:
    """A copy of a scenario's global layer for one series to edit, beside the scenarios."""
    copy = world.root / "edited" / name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(world.config(scenario), copy)
    return copy


class Editor:
    """Edits a config file as a user would, a comment at its end that differs each time: called
    before each run of a cold series, so every run is the first launch after an edit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.text = path.read_text(encoding="utf-8")
        self.edits = 0

    def __call__(self) -> None:
        self.edits += 1
        self.path.write_text(f"{self.text}# edit {self.edits}\n", encoding="utf-8")


def write(directory: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def small(world: World, config: Path | None = None, repo: Path | None = None) -> None:
    """The small launch: a role, two required file contexts, a required command context, task t.

    Its config goes to `config` (the scenario's global layer by default), and the files it names
    to `repo` (the scratch repository by default)."""
    repo = repo or world.repo
    write(repo, {"docs/guide.md": document("Guide"), "docs/style.md": document("Style")})
    write(
        config or world.config("small"),
        {
            "config.toml": SETTINGS
            + AGENT
            + """
[roles.reviewer]
description = "Reviews code"
prompt = "You are a careful code reviewer. Point to exact lines and suggest fixes."

[contexts.guide]
description = "The project guide"
file = "docs/guide.md"
required = true

[contexts.style]
description = "The style guide"
file = "docs/style.md"
required = true

[contexts.greeting]
description = "A command context"
command = "echo hi"
required = true

[tasks.t]
description = "The measured task"
role = "reviewer"
prompt = "Review the code. Focus: {instructions}"
"""
        },
    )


def unrecorded(world: World) -> None:
    """The small launch with the history off (`history = false`): what recording costs."""
    small = (world.config("small") / "config.toml").read_text(encoding="utf-8")
    text = small.replace(SETTINGS, SETTINGS + "history = false\n", 1)
    write(world.config("unrecorded"), {"config.toml": text})


LARGE_TASK = "task-0500"
LARGE_COUNTS = {"tasks": 1000, "contexts": 200, "required": 10, "roles": 100, "agents": 30}


def large(world: World, config: Path | None = None, repo: Path | None = None) -> None:
    """The large config: 1,000 tasks, 200 contexts (10 required), 100 roles, 30 agents, split files.

    The 10 required contexts are 5 files, 4 prompts and 1 command, so a launch runs as many
    commands as the small launch does: the comparison isolates config size, not command count.
    Its files go to `config` (the scenario's global layer by default), and the files it names
    to `repo` (the scratch repository by default).
    """
    config = config or world.config("large")
    repo = repo or world.repo
    files: dict[str, str] = {}

    agents = [AGENT]
    for i in range(1, LARGE_COUNTS["agents"]):
        name = f"agent-{i:02d}"
        variant = i % 3
        if variant == 0:
            agents.append(
                f'\n[agents.{name}]\ndescription = "Agent {i} with models"\nbin = "{name}"\n'
                f'url = "https://example.com/{name}"\n'
                f'command = "{{bin}} --model {{model}} {{prompt}}"\ndefault_model = "fast"\n'
                f'\n[agents.{name}.models]\nfast = "{name}-fast-1"\nslow = "{name}-large-2"\n'
            )
        elif variant == 1:
            agents.append(
                f'\n[agents.{name}]\ndescription = "Agent {i} with a system prompt"\n'
                f'bin = "{name}"\ncommand = "{{bin}} --system {{role}} {{prompt}}"\n'
            )
        else:
            agents.append(
                f'\n[agents.{name}]\ndescription = "Agent {i} reading files"\nbin = "{name}"\n'
                f'command = "{{bin}} --system-file {{role_file}} --file {{prompt_file}}"\n'
            )
    files["agents.toml"] = "".join(agents)

    roles = []
    for i in range(LARGE_COUNTS["roles"]):
        name = f"role-{i:03d}"
        if i % 10 == 9:
            body = f'command = "echo role {i}"\nprompt = "You are role {i}.\\n{{command_output}}"\n'
        elif i % 2 == 1:
            write(repo, {f"docs/roles/{name}.md": document(f"Role {i}", 3)})
            body = f'file = "docs/roles/{name}.md"\n'
        else:
            text = f"You are role {i}. Be precise and brief. Today is {{date}}."
            body = f"prompt = {toml_str(text)}\n"
        roles.append(f'\n[roles.{name}]\ndescription = "Role number {i}"\n{body}')
    files["roles.toml"] = "".join(roles)

    contexts = []
    for i in range(LARGE_COUNTS["contexts"]):
        name = f"ctx-{i:03d}"
        if i % 20 == 0:
            slot = i // 20
            required = "required = true\n"
            if slot < 5:
                source = "file"
            elif slot == 5:
                source = "command"
            else:
                source = "prompt"
        else:
            required = ""
            source = ("file", "command", "prompt")[i % 3]
        if source == "file":
            write(repo, {f"docs/contexts/{name}.md": document(f"Context {i}", 4)})
            body = f'file = "docs/contexts/{name}.md"\n'
            if i % 2 == 0:
                body += 'prompt = "From {file}:\\n\\n{file_contents}"\n'
        elif source == "command":
            command = "echo hi" if required else "git log -5 --oneline"
            body = f"command = {toml_str(command)}\n"
        else:
            body = f"prompt = {toml_str(f'Rule {i}: keep changes small and tested.')}\n"
        contexts.append(f'\n[contexts.{name}]\ndescription = "Context {i}"\n{required}{body}')
    files["contexts.toml"] = "".join(contexts)

    write(repo, {"docs/notes.md": document("Notes", 2)})
    review = toml_str("Review:\n{command_output}\nFocus: {instructions}")
    notes = toml_str("{file_contents}\n\nNow: {instructions}")
    tasks = []
    for i in range(LARGE_COUNTS["tasks"]):
        name = f"task-{i:04d}"
        lines = [f"\n[tasks.{name}]", f'description = "Task number {i}"']
        if i % 4 == 1:
            lines.append(f'alias = "t{i}"')
        if i % 2 == 0:
            lines.append(f'role = "role-{i % LARGE_COUNTS["roles"]:03d}"')
        if i % 7 == 1:
            lines.append(f'agent = "agent-{i % (LARGE_COUNTS["agents"] - 1) + 1:02d}"')
        if i % 50 == 49:
            lines.append("internal = true")
        shape = i % 5
        if shape == 1:
            lines.append('command = "git diff --staged"')
            lines.append(f"prompt = {review}")
        elif shape == 2:
            lines.append('file = "docs/notes.md"')
            lines.append(f"prompt = {notes}")
        else:
            lines.append(f"prompt = {toml_str(f'Task {i} on {{date}}: {{instructions}}')}")
        tasks.append("\n".join(lines) + "\n")
    files["tasks.toml"] = "".join(tasks)
    files["config.toml"] = SETTINGS + "command_timeout = 30\n"
    write(config, files)


# Targets 2d to 2f: a project whose `.start/` holds a config, each in a repository of its own,
# approved by each series (`start trust --yes`); what the project's `.start/` does not hold is in
# the scenario's global layer. Each names the files of its config that the project layer holds
# (None: all of them), and builds the config.
PROJECTS: dict[str, tuple[tuple[str, ...] | None, Callable[..., None]]] = {
    # 2d: the large config's 1,000 tasks and 200 contexts; its roles, agents and settings are the
    # user's, as in 2a.
    "project-large": (("tasks.toml", "contexts.toml"), large),
    "project-small": (None, small),  # 2e
    # 2f: all of the large config, its 100 roles too, whose 40 role files the approval covers by
    # their bytes, and its 30 agents.
    "project-whole": (None, large),
}


def projects(world: World) -> None:
    """The project scenarios (PROJECTS), each in a repository of its own, beside the files their
    items name."""
    for scenario, (held, build) in PROJECTS.items():
        repo = world.project(scenario)
        repo.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        user = world.config(scenario)
        start = repo / ".start"
        build(world, start if held is None else user, repo)
        user.mkdir(parents=True, exist_ok=True)
        for name in held or ():
            start.mkdir(exist_ok=True)
            (user / name).rename(start / name)


def concurrent(world: World, seconds: float = 0.5, count: int = 4) -> None:
    """Target 3: `count` required contexts whose commands each take `seconds`."""
    body = SETTINGS + AGENT
    for i in range(1, count + 1):
        body += (
            f"\n[contexts.slow-{i}]\nrequired = true\n"
            f"command = {toml_str(f'sleep {seconds}; echo slow-{i}')}\n"
        )
    write(world.config("concurrent"), {"config.toml": body})


# Target 7: a headless agent that answers after this long, standing in for a model's reply.
HEADLESS_SECONDS = 1.0
HEADLESS_SCRIPT = f'sleep {HEADLESS_SECONDS}; printf "%s\\n" "$1"'


def headless(world: World) -> None:
    """Target 7: `start --print` with an agent whose headless form is a shell script that waits
    HEADLESS_SECONDS and prints the prompt back."""
    body = (
        SETTINGS
        + AGENT
        + (
            'print_command = "{bin} -c '
            + "'"
            + HEADLESS_SCRIPT.replace('"', '\\"')
            + "'"
            + ' answer {prompt}"\n'
            'print_output = "text"\n'
            'print_permissions = { read-only = "" }\n'
        )
    )
    write(
        world.config("headless"), {"config.toml": body.replace('bin = "true"', 'bin = "/bin/sh"')}
    )


TRIO = ("one", "two", "three")


def trio(world: World) -> None:
    """Target 8: three agents whose headless forms each take HEADLESS_SECONDS. Each runs its own
    program (a link to sh named after it), since runs of one program never overlap."""
    body = SETTINGS.replace("stand-in", TRIO[0])
    for name in TRIO:
        link = world.root / "bin" / f"sh-{name}"
        link.parent.mkdir(exist_ok=True)
        if not link.exists():
            link.symlink_to("/bin/sh")
        script = HEADLESS_SCRIPT.replace('"', '\\"')
        body += (
            f'\n[agents.{name}]\nbin = "{link}"\ncommand = "{{bin}} {{prompt}}"\n'
            f"print_command = \"{{bin}} -c '{script}' answer {{prompt}}\"\n"
            'print_output = "text"\nprint_permissions = { read-only = "" }\n'
        )
    write(world.config("trio"), {"config.toml": body})


ORDER_SLEEPS = (0.4, 0.3, 0.2, 0.1)


def order(world: World) -> None:
    """Target 3, order: the first-defined command finishes last."""
    body = SETTINGS + AGENT
    for i, seconds in enumerate(ORDER_SLEEPS, 1):
        body += (
            f"\n[contexts.order-{i}]\nrequired = true\n"
            f"command = {toml_str(f'sleep {seconds}; echo order-{i}')}\n"
        )
    write(world.config("order"), {"config.toml": body})


FAILURE_CONTEXTS = {
    "ok": ("echo fine", None),
    "fails": ("echo broken >&2; exit 3", None),
    "slow": ("sleep 30", 1),
    "after": ("echo after", None),
}


def failures(world: World) -> None:
    """Target 3, per-command outcomes: one fails, one times out, the others still count."""
    body = SETTINGS + AGENT
    for name, (command, timeout) in FAILURE_CONTEXTS.items():
        body += f"\n[contexts.{name}]\nrequired = true\ncommand = {toml_str(command)}\n"
        if timeout is not None:
            body += f"command_timeout = {timeout}\n"
    write(world.config("failures"), {"config.toml": body})


BIG_BYTES = 200_000_000


def big(world: World) -> Path:
    """Target 4: a 200 MB text file and a task that prints it; the agent takes a prompt file."""
    data = world.root / "big.txt"
    line = b"".join(bytes([48 + (i % 75)]) for i in range(99)) + b"\n"
    block = line * 10_000
    with open(data, "wb") as out:
        left = BIG_BYTES
        while left:
            chunk = block[:left]
            out.write(chunk)
            left -= len(chunk)
    write(
        world.config("big"),
        {
            "config.toml": SETTINGS
            + """
[agents.stand-in]
description = "Does nothing; the capped output goes in a prompt file"
bin = "true"
command = "{bin} {prompt_file}"

[tasks.big]
"""
            + f"command = {toml_str(f'cat {shlex.quote(str(data))}')}\n"
        },
    )
    return data


def shell() -> str:
    """The shell `start` runs commands with by default: bash if on PATH, else sh."""
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


# Targets 10a, 10b and 10d: a board of BOARD_ITEMS items, BOARD_READY of them ready to claim,
# three quarters of these labelled BOARD_LABEL (10d claims those).
BOARD_ITEMS = 10_000
BOARD_READY = 100
BOARD_LABEL = "backend"

# Builds the board through start's own API, in a process of its own (its state directory is
# argv[1], the project argv[2]): most items completed, the ready ones each waiting on a completed
# one, and the rest waiting on a ready one (blocked). Every item has a priority (0 to 4, in turn)
# and labels unevenly (BOARD_LABEL three in four, ui one in five, bug one in thirteen, some
# none), and every fourth item after the first hundred is part of one of those (a parent).
_BOARD_SCRIPT = f"""
import os, sys
os.environ["XDG_STATE_HOME"] = sys.argv[1]
from start.board import file as boardfile
from start.board import Change, Holder
me = Holder("bench")
done = {BOARD_ITEMS} - {BOARD_READY} * 10
with boardfile.opened(sys.argv[2]) as board:
    for n in range(1, {BOARD_ITEMS} + 1):
        labels = [name for name, every in (("ui", 5), ("bug", 13)) if n % every == 0]
        labels += ["{BOARD_LABEL}"] if n % 4 else []
        parent = f"item-{{n % 100 + 1}}" if n > 100 and n % 4 == 0 else None
        shape = dict(priority=n % 5, labels=labels, parent=parent)
        if n <= done:
            board.create(f"done {{n}}", me, "finished work", **shape)
            board.update(f"item-{{n}}", me, Change("completed", answer="the answer"))
        elif n <= done + {BOARD_READY}:
            board.create(f"ready {{n}}", me, blocked_by=[f"item-{{n - done}}"], **shape)
        else:
            first = done + 1 + n % {BOARD_READY}
            board.create(f"waiting {{n}}", me, blocked_by=[f"item-{{first}}"], **shape)
print(board.path)
"""


def board(world: World) -> Path:
    """The board file of BOARD_ITEMS items for the scratch repository, to copy into a series'
    state directory (`install_board`)."""
    state = world.root / "board-template"
    built = sorted((state / "start" / "boards").glob("*.db"))
    if built:  # made already, for another group of targets
        return built[0]
    env = world.env("small", Path(__file__).resolve().parents[1])
    made = subprocess.run(
        [sys.executable, "-c", _BOARD_SCRIPT, str(state), str(world.repo)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(made.stdout.strip())


# Target 11: a file of IMPORT_ITEMS items for `start board import`, as start exports them.
IMPORT_ITEMS = 10_000


def import_file(world: World) -> Path:
    """A file of IMPORT_ITEMS items in start's export format: in epics of ten (the first the
    parent of the other nine), each waiting on the one before, with a label, a priority, a
    description and a comment, as a board people used for a while has them."""
    import json

    path = world.root / "import.jsonl"
    lines = [json.dumps({"format": "start.board", "version": 1})]
    for n in range(1, IMPORT_ITEMS + 1):
        epic = n - (n - 1) % 10
        item = {
            "id": f"item-{n}",
            "title": f"work {n}",
            "description": "what to do, and why: " + "x" * 200,
            "status": "completed" if n % 3 == 0 else "pending",
            "priority": n % 5,
            "labels": ["bench", f"area-{n % 7}"],
            "blocked_by": [f"item-{n - 1}"] if n != epic else [],
            "parent": f"item-{epic}" if n != epic else None,
            "created": "2025-06-01T12:00:00+00:00",
            "updated": "2025-06-02T12:00:00+00:00",
            "comments": [{"at": "2025-06-02T12:00:00+00:00", "author": "me", "text": "noted"}],
            "events": [{"at": "2025-06-01T12:00:00+00:00", "actor": "me", "op": "create",
                        "detail": {"title": f"work {n}"}}],
        }  # fmt: skip
        lines.append(json.dumps(item))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def install_board(template: Path, state: Path) -> None:
    """The board `template` as the repository's board in the state directory `state`."""
    boards = state / "start" / "boards"
    boards.mkdir(parents=True, exist_ok=True, mode=0o700)
    shutil.copy2(template, boards / template.name)


# Target 13: a workflow of WORKFLOW_STEPS steps, each reading the answer of the one before, on
# an agent whose headless form is `echo`: it answers at once, with its prompt.
WORKFLOW = "steps"
WORKFLOW_STEPS = 10


def workflow(world: World) -> None:
    """Target 13: workflow WORKFLOW, a chain of WORKFLOW_STEPS prompt steps (step N reads step
    N-1's answer, so they run one after another, as the `--print` runs they are compared with
    do), and an instant headless agent, `echo`."""
    body = (
        SETTINGS
        + """
[agents.stand-in]
description = "Answers at once with its prompt: the benchmark times start, not an agent"
bin = "echo"
command = "{bin} {prompt}"
print_command = "{bin} {prompt}"
print_output = "text"
print_permissions = { read-only = "" }
"""
        + f"\n[workflows.{WORKFLOW}]\n"
        f'description = "{WORKFLOW_STEPS} steps, each reading the answer of the one before"\n'
    )
    for n in range(1, WORKFLOW_STEPS + 1):
        read = "{instructions}" if n == 1 else f"{{steps.s{n - 1}.answer}}"
        body += f'\n[workflows.{WORKFLOW}.steps.s{n}]\nprompt = "step {n} after {read}"\n'
    write(world.config("workflow"), {"config.toml": body})


# Targets 14a-14c: the board through a git remote (docs/board-sync-design.md). Each machine is a
# clone of a bare repository on this disk (the remote), with a state directory of its own; the
# scenario `sync` is the small config with board_remote = "origin".
SYNC_OPS = 1_000  # 14a: the operations a clone receives in one sync
SYNC_CLAIMS = 200  # 14b: pending items to claim, more than the rounds take
LOG_OPS = 10_000  # 14c: the operations on the log whose size is measured
LOG_BATCH = 10  # 14c (and 14a): operations a commit, as if the machine synced every ten

# Makes `argv[3]` operations on the board of the clone argv[2] (its state directory argv[1]), in
# a process of its own, through start's own API: items made, each commented on, claimed and
# completed, in turn (four operations an item), as a board people work on has them, each text
# its own (hex digits, which git can neither delta against another item's nor shrink by much
# more than half, as it would repeated letters) (argv[5]
# "work"), or pending items only (argv[5] "pending": each operation makes one). argv[4] is how
# many operations each commit of the log holds (0: sync off, no log); the log is then pushed by
# one sync, as a machine that synced every argv[4] operations and was offline for the last push
# would have it.
_SYNC_SCRIPT = """
import hashlib, os, sys
from pathlib import Path
os.environ["XDG_STATE_HOME"] = sys.argv[1]
from start.base import sqlite
from start.board import Change, Holder, gitlog, journal, syncing
from start.board import file as boardfile
count, batch, work = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "work"
me = Holder("bench")
with boardfile.opened(sys.argv[2]) as board:
    if batch:
        with sqlite.writing(board.connection) as connection:
            journal.turn_on(connection)
    made = n = 0
    while made < count:
        n += 1
        words = hashlib.sha256(str(n).encode()).hexdigest()  # a text of its own each
        item = board.create(f"work {n}", me, "what to do, and why: " + words * 3)
        made += 1
        if not work:
            continue
        steps = (
            lambda: board.comment(item.id, me, "noted, and planned for this week"),
            lambda: board.claim(item.id, me),
            lambda: board.update(item.id, me, Change("completed", answer="done: " + words * 2)),
        )
        for step in steps[: count - made]:
            step()
            made += 1
    if batch:
        new = journal.unlogged(board.connection)
        names = list(new)
        for at in range(0, len(names), batch):
            chunk = {name: new[name] for name in names[at : at + batch]}
            gitlog.append(Path(board.root), chunk)
            with sqlite.writing(board.connection) as connection:
                journal.logged(connection, list(chunk))
        syncing.sync(board, "origin", "read-only")
print(board.path)
"""


@dataclass(frozen=True, slots=True)
class Machine:
    """A clone of a scenario's remote, with a state directory of its own (its board)."""

    repo: Path
    state: Path


def sync(world: World) -> None:
    """The scenario `sync`: the small config, with the board synced through 'origin'."""
    small = (world.config("small") / "config.toml").read_text(encoding="utf-8")
    text = small.replace(SETTINGS, SETTINGS + 'board_remote = "origin"\n', 1)
    write(world.config("sync"), {"config.toml": text})


def _git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


def remote(world: World, name: str) -> Path:
    """A bare repository `name`, holding one commit on main: a project's remote."""
    made = world.root / "remotes" / f"{name}.git"
    _git("init", "-q", "--bare", "-b", "main", str(made))
    seed = world.root / "remotes" / f"{name}-seed"
    _git("init", "-q", "-b", "main", str(seed))
    (seed / "README").write_text("the project\n", encoding="utf-8")
    _git("-C", str(seed), "add", "README")
    _git("-C", str(seed), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
         "commit", "-q", "-m", "the project")  # fmt: skip
    _git("-C", str(seed), "push", "-q", str(made), "main")
    return made


def machine(world: World, remote: Path, name: str) -> Machine:
    """A fresh clone of `remote` with an empty state directory (any earlier one removed)."""
    found = Machine(world.root / "machines" / name, world.cache(name))
    shutil.rmtree(found.repo, ignore_errors=True)
    empty(found.state)
    _git("clone", "-q", str(remote), str(found.repo))
    return found


def operations(world: World, at: Machine, count: int, batch: int, work: bool = True) -> Path:
    """`count` operations made on `at`'s board and pushed (see _SYNC_SCRIPT): an item's work, or
    (`work` false) pending items only; its board file."""
    env = world.env("sync", Path(__file__).resolve().parents[1], at.state)
    kind = "work" if work else "pending"
    made = subprocess.run(
        [sys.executable, "-c", _SYNC_SCRIPT, str(at.state), str(at.repo), str(count), str(batch),
         kind],
        env=env, cwd=at.repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(made.stdout.strip())


def log_bytes(repo: Path) -> int:
    """The bytes on disk of every object reachable from refs/start/board in `repo` (packed
    objects at their size in the pack)."""
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--objects", "--disk-usage", "refs/start/board"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return int(out.strip())
