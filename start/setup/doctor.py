"""The offline health check: environment, config files, agents, items and project, as records."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping

from start.base import paths
from start.base.errors import StartError, UnknownNameError, suggest
from start.compose.ask import Ask
from start.compose.resolve import Which, select_agent, select_role
from start.config.model import Config, SourceItem
from start.setup import features
from start.setup.configcheck import Claim, config_files
from start.setup.report import Check, Report, Status


def find_binary(binary: str, workdir: str, which: Which = paths.which) -> str | None:
    """An agent binary's absolute path: a name is looked up on PATH, a path against `workdir`."""
    name = os.path.expanduser(binary)
    if os.sep in name:
        path = name if os.path.isabs(name) else os.path.join(workdir, name)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    found = which(name)
    return os.path.abspath(found) if found else None


def diagnose(workdir: str, *, use_project: bool = True, which: Which = paths.which) -> Report:
    """Every check, offline: nothing is fetched and no configured command is run. Two programs
    are asked about themselves: the selected agent's CLI where it can tell whether it can answer
    (start.setup.readiness: llm's model and its key), and `task`, for the tasks of a Taskfile
    the user vouches for (start.setup.features)."""
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
    claims: set[Claim] = set()
    agent_checks = list(agents(config, which, claims))
    item_checks = list(items(config, which, claims))
    checks.extend(features.environment(config, use_project))
    checks.extend(config_files(config, use_project, claims))
    checks.extend(agent_checks)
    checks.extend(ready(config, which))
    checks.extend(item_checks)
    checks.extend(project(config, use_project))
    checks.extend(features.project(config, use_project))
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


def _selection_fix(config: Config) -> str:
    """Where to choose another agent: the file that sets default_agent, else the global one."""
    origin = config.settings.origins.get("default_agent")
    where = origin.path if origin is not None else paths.global_config_file()
    return f"set default_agent under [settings] in {where}, or pass --agent NAME"


def agents(config: Config, which: Which, claims: set[Claim]) -> Iterator[Check]:
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


def ready(config: Config, which: Which) -> Iterator[Check]:
    """Whether the agent `start` would launch can answer, as far as its CLI tells (llm: the
    model it would use has its key; start.setup.readiness)."""
    from start.setup import readiness

    try:
        agent, _ = select_agent(config, Ask("session"), None, which)
    except StartError:
        return  # told with the agents
    found = find_binary(agent.bin, config.project.workdir, which)
    said = readiness.of(config, agent.name, found) if found is not None else None
    if said is not None:
        status: Status = "ok" if said.ok else "error"
        yield Check("agents", status, f"{agent.name} setup", said.message, said.fix)


def items(config: Config, which: Which, claims: set[Claim]) -> Iterator[Check]:
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
    config: Config, problems: list[Check], claims: set[Claim]
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


def _tasks(config: Config, which: Which, claims: set[Claim]) -> Iterator[Check]:
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
