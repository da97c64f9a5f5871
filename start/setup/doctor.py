"""The offline health check: environment, config files, agents, items and project, as records."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from stat import S_ISREG
from typing import Literal

from start.base import paths
from start.base.errors import Problem, StartError, UnknownNameError, suggest
from start.compose.ask import Ask
from start.compose.resolve import Which, select_agent, select_role
from start.config.model import Config, SourceItem

Status = Literal["ok", "info", "warning", "error"]
SECTIONS = ("environment", "config", "agents", "items", "project")

# How many validator problems of one file the report lists; `start config validate` lists all.
SHOWN_PER_FILE = 20
# A validator problem that a later section reports in its own words: (file, key path).
_Claim = tuple[str | None, str]


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report. `fix`, a one-line remedy, comes with every problem."""

    section: str
    status: Status
    subject: str
    message: str
    fix: str | None = None
    path: str | None = None
    selected: bool = False
    # Presentation hints: the heading (a file) a line is listed under, and the label under which
    # lines collapse into one unless -v. Neither is part of the JSON: `path` says the same.
    heading: str | None = None
    fold: str | None = None

    @property
    def is_problem(self) -> bool:
        return self.status in ("warning", "error")

    def as_dict(self) -> dict[str, object]:
        return {
            "section": self.section,
            "status": self.status,
            "subject": self.subject,
            "message": self.message,
            "fix": self.fix,
            "path": str(self.path) if self.path is not None else None,
            "selected": self.selected,
        }


@dataclass(frozen=True, slots=True)
class Report:
    checks: tuple[Check, ...]
    # A config file has an error (`start config validate` would exit 3), or could not be read;
    # whichever section the error is told in.
    config_invalid: bool = False

    @property
    def errors(self) -> int:
        return sum(1 for c in self.checks if c.status == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for c in self.checks if c.status == "warning")

    @property
    def healthy(self) -> bool:
        """No error and no warning; info lines do not count."""
        return not self.errors and not self.warnings

    def as_dict(self) -> dict[str, object]:
        return {
            "healthy": self.healthy,
            "config_invalid": self.config_invalid,
            "errors": self.errors,
            "warnings": self.warnings,
            "checks": [c.as_dict() for c in self.checks],
        }


def find_binary(binary: str, workdir: str, which: Which = paths.which) -> str | None:
    """An agent binary's absolute path: a name is looked up on PATH, a path against `workdir`."""
    name = os.path.expanduser(binary)
    if os.sep in name:
        path = name if os.path.isabs(name) else os.path.join(workdir, name)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    found = which(name)
    return os.path.abspath(found) if found else None


def diagnose(workdir: str, *, use_project: bool = True, which: Which = paths.which) -> Report:
    """Every check, offline: nothing is fetched and no configured command is run."""
    from start.config.load import load

    checks = list(environment())
    try:
        config = load(workdir, use_project=use_project)
    except OSError as error:
        where = f" {error.filename}" if error.filename else ""
        checks.append(
            Check(
                "config",
                "error",
                "read",
                f"cannot read{where}: {error.strerror or error}",
                "fix the file's permissions, or move it out of the config directory",
            )
        )
        return Report(tuple(checks), config_invalid=True)
    claims: set[_Claim] = set()
    agent_checks = list(agents(config, which, claims))
    item_checks = list(items(config, which, claims))
    checks.extend(config_files(config, use_project, claims))
    checks.extend(agent_checks)
    checks.extend(item_checks)
    checks.extend(project(config, use_project))
    return Report(tuple(checks), config_invalid=any(p.is_error for p in config.problems))


def environment() -> Iterator[Check]:
    import platform
    import sys

    from start import __version__

    def check(subject: str, message: str, path: str | None = None) -> Check:
        return Check("environment", "ok", subject, message, path=path)

    yield check("start", __version__)
    yield check("python", f"{platform.python_version()} ({sys.executable})")
    yield check("platform", platform.platform())
    builtin = paths.builtin_config_dir()
    if os.path.isdir(builtin):
        yield check("built-in config", str(builtin), builtin)
    else:
        yield Check(
            "environment",
            "error",
            "built-in config",
            f"{builtin} is missing",
            "reinstall start: the shipped defaults are part of the package",
            builtin,
        )
    later = (
        ("config dir", paths.global_config_dir(), "run 'start init' to write a starter config"),
        ("state dir", paths.state_dir(), None),
        ("runtime dir", paths.runtime_dir(), None),
    )
    for subject, directory, hint in later:
        if os.path.isdir(directory):
            yield check(subject, str(directory), directory)
        else:
            message = f"{directory} (not created yet; start creates it when needed)"
            yield Check("environment", "info", subject, message, hint, directory)


def config_files(config: Config, use_project: bool, claims: set[_Claim]) -> Iterator[Check]:
    """Each file of each layer, parsed or not, then every validator problem."""
    from start.config.interop.dirs import in_command_dir
    from start.config.interop.skills import in_skill_dir

    # A file's own problem (syntax, or why it cannot be read) is told on the file's line.
    unparsed = {f.path for f in config.files if not f.parsed}
    syntax = {p.file: p for p in config.problems if p.file in unparsed and not p.key}
    for layer, directory in config.layer_dirs.items():
        layer_files = [f for f in config.files if f.layer == layer]
        # Other agents' command files (start.config.interop): one line, their findings below.
        commands = [f for f in layer_files if in_command_dir(f.path, config.root)]
        # Skill folders (start.config.interop.skills): one line for all their files.
        skills = [f for f in layer_files if f not in commands and in_skill_dir(f.path, config.root)]
        layer_files = [f for f in layer_files if f not in commands and f not in skills]
        if commands:
            many = "s" if len(commands) != 1 else ""
            yield Check(
                "config", "ok", layer, f"{len(commands)} command file{many} of other agents read"
            )
        if skills:
            count = len({os.path.dirname(f.path) for f in skills if f.path.endswith("SKILL.md")})
            many = "s" if count != 1 else ""
            yield Check("config", "ok", layer, f"{count} skill{many} of other agents read")
        for read in layer_files:
            problem = syntax.get(read.path)
            if read.parsed:
                yield Check("config", "ok", layer, f"{read.path} parsed", path=read.path)
            elif problem is not None:
                fix = (
                    f"correct the TOML at line {problem.line}, column {problem.column} of "
                    f"{os.path.basename(read.path)}"
                    if problem.line is not None
                    else _unread_fix(read.path)
                )
                yield Check("config", "error", layer, str(problem), fix, read.path)
            else:
                yield Check(
                    "config", "error", layer, f"{read.path} could not be parsed", path=read.path
                )
        if layer_files or commands or skills or layer == "imported":
            continue
        if layer == "project" and not use_project:
            yield Check("config", "info", layer, "ignored (--no-project or START_NO_PROJECT=1)")
        elif layer == "project" and directory is None:
            yield Check(
                "config",
                "info",
                layer,
                f"no {paths.PROJECT_DIR_NAME}/ directory in {config.root}",
                "run 'start init --project' to add project config",
            )
        elif layer == "global":
            yield Check(
                "config",
                "info",
                layer,
                f"no config files in {directory}",
                "run 'start init' to write a starter config",
                directory,
            )
        else:
            yield Check("config", "info", layer, f"no config files in {directory}", path=directory)
    shown = [
        p for p in config.problems if p not in syntax.values() and (p.file, p.key) not in claims
    ]
    per_file: dict[str | None, int] = {}
    for problem in sorted(shown, key=lambda p: (p.where, p.line or 0)):
        count = per_file[problem.file] = per_file.get(problem.file, 0) + 1
        if count > SHOWN_PER_FILE:
            continue
        yield Check(
            "config",
            "error" if problem.is_error else "warning",
            f"{problem.line}:{problem.column or 1}" if problem.line is not None else "-",
            problem.detail,
            _fix(problem),
            problem.file,
            heading=problem.where,
        )
    for file, count in per_file.items():
        if count > SHOWN_PER_FILE:
            more = count - SHOWN_PER_FILE
            yield Check(
                "config",
                "warning",
                "-",
                f"{more:,} more problem{'s' if more != 1 else ''} of this file not shown",
                "run 'start config validate' to see every one",
                file,
                heading=next(p.where for p in shown if p.file == file),
            )
    if not config.problems:
        count = len(config.files)
        yield Check(
            "config", "ok", "validate", f"no problems in {count} file{'s' if count != 1 else ''}"
        )


def _unread_fix(path: str) -> str:
    """The fix for a config file that was not read: its size, when that was all that was wrong."""
    from start.config.files import CONFIG_LIMIT

    try:
        stat = os.stat(path)
    except OSError:
        stat = None
    readable = stat is not None and S_ISREG(stat.st_mode) and os.access(path, os.R_OK)
    if readable and stat is not None and stat.st_size > CONFIG_LIMIT:
        return f"shorten {path} to at most {CONFIG_LIMIT:,} bytes, or remove it"
    return f"make {path} a regular file you can read, or remove it"


def _fix(problem: Problem) -> str:
    where = os.path.basename(problem.file) if problem.file is not None else "your config"
    if problem.suggestion and not problem.key:
        return f"rename {where} to '{problem.suggestion}', or remove it"
    if problem.suggestion:
        return f"use '{problem.suggestion}' instead, in {where}"
    if problem.key:
        return f"edit {problem.key} in {where}, then run 'start doctor' again"
    return f"edit {where}, then run 'start doctor' again"


def _selection_fix(config: Config) -> str:
    """Where to choose another agent: the file that sets default_agent, else the global one."""
    origin = config.settings.origins.get("default_agent")
    where = origin.path if origin is not None else paths.global_config_file()
    return f"set default_agent under [settings] in {where}, or pass --agent NAME"


def agents(config: Config, which: Which, claims: set[_Claim]) -> Iterator[Check]:
    """Each agent's binary on PATH; the one `start` would launch now is marked."""
    selected: str | None = None
    reason = ""
    try:
        agent, reason = select_agent(config, Ask("session"), None, which)
        selected = agent.name
    except StartError as error:
        origin = config.settings.origins.get("default_agent")
        if config.settings.default_agent is not None:
            claims.add((origin.path if origin else None, "settings.default_agent"))
        unknown = isinstance(error, UnknownNameError)
        yield Check(
            "agents",
            "error",
            "selection",
            str(error).split("\n", 1)[0],
            _selection_fix(config) if unknown else f"install an agent, or {_selection_fix(config)}",
            origin.path if origin else None,
        )
    for agent in config.agents.values():
        found = find_binary(agent.bin, config.project.workdir, which)
        is_selected = agent.name == selected
        mark = f"; selected now ({reason})" if is_selected else ""
        if found is not None:
            yield Check("agents", "ok", agent.name, found + mark, path=found, selected=is_selected)
            continue
        where = "is not an executable file" if os.sep in agent.bin else "is not on PATH"
        install = f"install it ({agent.url})" if agent.url else "install it"
        fix = f"{install} or fix agents.{agent.name}.bin in {agent.origin.path}"
        if is_selected:
            fix = f"{install}, or {_selection_fix(config)}"
            yield Check(
                "agents", "error", agent.name, f"'{agent.bin}' {where}{mark}", fix, selected=True
            )
        elif agent.origin.layer == "built-in":
            message = f"not installed ('{agent.bin}' {where})"
            yield Check("agents", "info", agent.name, message, fold="not installed")
        else:
            yield Check(
                "agents", "warning", agent.name, f"'{agent.bin}' {where}", fix, agent.origin.path
            )


def items(config: Config, which: Which, claims: set[_Claim]) -> Iterator[Check]:
    """Named files that are missing, shells that are not on PATH, task references."""
    problems: list[Check] = []
    default_role = _default_role(config, problems, claims)
    for kind, item in _source_items(config):
        if item.file is None:
            continue
        path = paths.expand(item.file, config.root)
        if os.path.isfile(path):
            continue
        why = "not found" if not os.path.exists(path) else "not a file"
        if kind == "context":
            required = getattr(item, "required", False)
            status: Status = "warning" if required else "info"
        else:
            chosen = default_role is not None and item.name == default_role[0]
            status = "error" if kind == "role" and chosen else "warning"
        problems.append(
            Check(
                "items",
                status,
                f"{kind} {item.name}",
                f"file {why}: {path}",
                f"create {path}, or fix {kind}s.{item.name}.file in {item.origin.path}",
                path,
            )
        )
    problems.extend(_tasks(config, which, claims))
    shells = list(_shells(config, which))
    if default_role is not None:
        yield Check("items", "ok", "default role", f"{default_role[0]} ({default_role[1]})")
    yield from problems
    yield from shells
    if not problems:
        counts = ", ".join(
            f"{len(group)} {kind}{'s' if len(group) != 1 else ''}"
            for kind, group in _source_groups(config)
        )
        yield Check(
            "items", "ok", "references", f"{counts}: every named file and reference resolves"
        )


def _default_role(
    config: Config, problems: list[Check], claims: set[_Claim]
) -> tuple[str, str] | None:
    """The role `start` would use now, and why; a problem when it cannot choose one."""
    try:
        role, reason = select_role(config, Ask("session"), None)
    except StartError as error:
        origin = config.settings.origins.get("default_role")
        claims.add((origin.path if origin else None, "settings.default_role"))
        problems.append(
            Check(
                "items",
                "error",
                "default role",
                str(error),
                f"fix default_role under [settings] in {origin.path if origin else 'your config'}",
                origin.path if origin else None,
            )
        )
        return None
    return (role.name, reason) if role is not None else None


def _source_groups(config: Config) -> tuple[tuple[str, Mapping[str, SourceItem]], ...]:
    return (("role", config.roles), ("context", config.contexts), ("task", config.tasks))


def _source_items(config: Config) -> Iterator[tuple[str, SourceItem]]:
    for kind, group in _source_groups(config):
        for item in group.values():
            yield kind, item


def _tasks(config: Config, which: Which, claims: set[_Claim]) -> Iterator[Check]:
    for task in config.tasks.values():
        for field, name, known in (
            ("role", task.role, config.roles),
            ("agent", task.agent, config.agents),
        ):
            if name is None or name in known:
                continue
            key = f"tasks.{task.name}.{field}"
            claims.add((task.origin.path, key))
            close = suggest(name, known)
            fix = f"use '{close}'" if close else f"define [{field}s.{name}] or change {key}"
            yield Check(
                "items",
                "error",
                f"task {task.name}",
                f"{field} '{name}' is not defined",
                f"{fix} in {task.origin.path}",
                task.origin.path,
            )
        agent = config.agents.get(task.agent) if task.agent is not None else None
        if agent is not None and find_binary(agent.bin, config.project.workdir, which) is None:
            yield Check(
                "items",
                "warning",
                f"task {task.name}",
                f"its agent '{agent.name}' is not installed ('{agent.bin}' is not on PATH)",
                f"install it, or change tasks.{task.name}.agent in {task.origin.path}",
                task.origin.path,
            )


def _shells(config: Config, which: Which) -> Iterator[Check]:
    """Each shell that runs a `command`, and `settings.shell` even when nothing uses it."""
    users: dict[str | None, list[str]] = {}
    if config.settings.shell is not None:
        users.setdefault(config.settings.shell, []).append("settings.shell")
    for kind, item in _source_items(config):
        if item.command is not None:
            users.setdefault(item.shell or config.settings.shell, []).append(f"{kind} {item.name}")
    for shell, used_by in users.items():
        subject = f"shell {shell}" if shell is not None else "default shell"
        found = _find_shell(shell, which)
        listed = _listing(used_by)
        if found is not None:
            yield Check("items", "ok", subject, f"{found} (used by {listed})", path=found)
            continue
        name = shell or "bash or sh"
        yield Check(
            "items",
            "warning",
            subject,
            f"{name} is not on PATH; used by {listed}",
            f"install {name}, or set another shell for {listed}",
        )


def _find_shell(shell: str | None, which: Which) -> str | None:
    if shell is None:
        return which("bash") or which("sh")
    return which(os.path.expanduser(shell))


def _listing(names: Iterable[str], limit: int = 4) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def project(config: Config, use_project: bool) -> Iterator[Check]:
    """The project root, and whether its `.start/` is trusted."""
    location = config.project
    if location.start_dir is not None:
        how = f"holds {paths.PROJECT_DIR_NAME}/"
    elif location.git_root is not None:
        how = "git work tree"
    else:
        how = f"working directory; no git repository or {paths.PROJECT_DIR_NAME}/ above it"
    yield Check("project", "ok", "root", f"{config.root} ({how})", path=config.root)
    # Other agents' project command files (start.config.interop) are project config too.
    if location.start_dir is None and not config.has_project:
        yield Check(
            "project",
            "info",
            "trust",
            f"no {paths.PROJECT_DIR_NAME}/ directory, so nothing to trust",
        )
        return
    if not use_project:
        yield Check("project", "info", "trust", f"{location.start_dir} is ignored for this run")
        return
    from start import trust

    subject = location.start_dir or config.root
    trusted, reason = trust.describe(config)
    if trusted:
        yield Check("project", "ok", "trust", reason, path=subject)
    else:
        yield Check(
            "project",
            "warning",
            "trust",
            reason,
            f"review {subject}, then run 'start trust'",
            subject,
        )
