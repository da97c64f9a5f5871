"""Builds the agent's argv and env from a composition, checks it, and execs the agent."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, NoReturn

from start import agent as agent_template
from start import paths
from start.config.model import Agent
from start.errors import AgentNotExecutableError, AgentNotFoundError, StartError, UsageError
from start.resolve import Plan
from start.sources import Composition

# Linux limits one argument or environment string to 32 pages (MAX_ARG_STRLEN), NUL included.
MAX_ARG_STRLEN = 131072
STALE_SECONDS = 24 * 3600
_POINTER = 8


class OversizeError(StartError):
    """An argument or environment entry is larger than the OS accepts for exec."""


class Launch(NamedTuple):
    """The exact process to start."""

    binary: str
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: Path
    uses_shell: bool
    temp_files: tuple[Path, ...] = ()

    def cleanup(self) -> None:
        _unlink(self.temp_files)


class TempFiles:
    """`{role_file}` and `{prompt_file}`: 0600 files in a private 0700 runtime directory."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or paths.runtime_dir()
        self.created: list[Path] = []
        self._ready = False

    def _prepare(self) -> None:
        if self._ready:
            return
        directory = self.directory
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise StartError(
                f"runtime directory {directory} is not a directory owned by you; remove it "
                "or set XDG_RUNTIME_DIR to a private directory"
            )
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(directory, 0o700)
        sweep(directory)
        self._ready = True

    def write(self, kind: str, text: str) -> Path:
        self._prepare()
        path = self.directory / f"{os.getpid()}-{kind}-{os.urandom(4).hex()}.md"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, text.encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
        self.created.append(path)
        return path

    def remove(self) -> None:
        _unlink(self.created)


def _unlink(paths: Sequence[Path]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def sweep(directory: Path, now: float | None = None) -> None:
    """Remove temp files whose process is gone or that are over a day old."""
    now = time.time() if now is None else now
    for entry in os.scandir(directory):
        pid_text = entry.name.split("-", 1)[0]
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
            stale = age > STALE_SECONDS or (pid_text.isdigit() and not _alive(int(pid_text)))
            if stale:
                os.unlink(entry.path)
        except OSError:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def build(
    plan: Plan,
    composition: Composition,
    date: str,
    cwd: Path,
    agent_args: Sequence[str] = (),
    temp: TempFiles | None = None,
) -> Launch:
    """Fill the agent's command template; the values never pass through a shell parser."""
    agent = plan.agent
    used = agent_template.placeholders(agent.command)
    if "model" in used and not plan.model:
        raise StartError(
            f"agent '{agent.name}' uses {{model}} in its command, but no model was chosen: "
            f"the agent defines no models.\nPass --model MODEL, set 'model' in the task, or add "
            f"[agents.{agent.name}.models] and default_model in {agent.origin.path}"
        )
    role = composition.role
    role_text = role.text if role is not None else ""
    values = {
        "bin": os.path.expanduser(agent.bin),
        "model": plan.model or "",
        "prompt": composition.prompt,
        "role": role_text,
        "date": date,
    }
    temp = temp or TempFiles()
    try:
        if "role_file" in used:
            item = plan.role
            # A project role's file gets a copy of the approved bytes, so the agent cannot read
            # bytes that changed after `start trust` checked them.
            if (
                item is not None
                and role is not None
                and item.file
                and not item.command
                and not item.prompt
                and item.origin.layer != "project"
            ):
                values["role_file"] = str(role.file)
            else:
                values["role_file"] = str(temp.write("role", role_text))
        if "prompt_file" in used:
            values["prompt_file"] = str(temp.write("prompt", composition.prompt))
        command = agent_template.build(agent.command, values)
        argv = list(command.argv)
        if agent_args:
            if command.uses_shell:
                raise UsageError(
                    f"arguments after -- cannot be added to agent '{agent.name}': its command "
                    "uses shell operators; put the options in the command instead"
                )
            argv.extend(agent_args)
        if command.uses_shell:
            if "bin" in used:
                resolve_binary(values["bin"], agent, cwd)
            binary = argv[0]
        else:
            binary = resolve_binary(argv[0], agent, cwd)
            argv[0] = binary
        check_sizes(argv, {**os.environ, **command.env}, command.env)
    except BaseException:
        temp.remove()
        raise
    return Launch(
        binary, tuple(argv), dict(command.env), cwd, command.uses_shell, tuple(temp.created)
    )


def resolve_binary(name: str, agent: Agent, cwd: Path) -> str:
    """The absolute path of the agent binary: 127 when missing, 126 when not executable."""
    if os.sep in name:
        path = Path(name).expanduser()
        path = path if path.is_absolute() else cwd / path
        if not path.exists():
            raise AgentNotFoundError(_missing(agent, str(path)))
        if path.is_dir() or not os.access(path, os.X_OK):
            raise AgentNotExecutableError(
                f"agent '{agent.name}': {path} is not executable; check its permissions "
                f"(chmod +x) or fix bin in {agent.origin.path}"
            )
        return str(path)
    found = shutil.which(name)
    if found is None:
        raise AgentNotFoundError(_missing(agent, name))
    return os.path.abspath(found)


def _missing(agent: Agent, name: str) -> str:
    hint = f"install it or fix agents.{agent.name}.bin in {agent.origin.path}"
    if agent.url:
        hint = f"install it ({agent.url}) or fix agents.{agent.name}.bin in {agent.origin.path}"
    return (
        f"agent '{agent.name}': '{name}' not found on PATH; {hint}, or choose another with --agent"
    )


def arg_max() -> int:
    try:
        value = os.sysconf("SC_ARG_MAX")
    except (ValueError, OSError):
        value = -1
    return value if value > 0 else 2_097_152


def check_sizes(argv: Sequence[str], env: dict[str, str], added: dict[str, str]) -> None:
    """Refuse, before exec, arguments that the OS would reject with E2BIG."""
    fix = (
        "Use {prompt_file} in the agent's command (or a file flag of the agent) instead of "
        "passing the text as an argument, or shorten the prompt."
    )
    per_arg = MAX_ARG_STRLEN if sys.platform.startswith("linux") else None
    sizes = [len(os.fsencode(a)) + 1 for a in argv]
    if per_arg is not None:
        for index, size in enumerate(sizes):
            if size > per_arg:
                raise OversizeError(
                    f"argv[{index}] of the agent command is {size:,} bytes; the limit for one "
                    f"argument is {per_arg:,} bytes.\n{fix}"
                )
        for name, value in added.items():
            size = len(os.fsencode(f"{name}={value}")) + 1
            if size > per_arg:
                raise OversizeError(
                    f"environment variable {name} is {size:,} bytes; the limit for one entry is "
                    f"{per_arg:,} bytes.\n{fix}"
                )
    env_size = sum(len(os.fsencode(f"{k}={v}")) + 1 + _POINTER for k, v in env.items())
    total = sum(sizes) + _POINTER * len(sizes) + env_size
    limit = arg_max() - 4096
    if total > limit:
        raise OversizeError(
            f"the agent command and environment total {total:,} bytes; the limit is "
            f"{limit:,} bytes.\n{fix}"
        )


def exec_agent(launch: Launch) -> NoReturn:
    """Replace this process with the agent. The agent owns the terminal and the exit status."""
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
    sys.stdout.flush()
    sys.stderr.flush()
    env = {**os.environ, **launch.env}
    try:
        os.chdir(launch.cwd)
        os.execve(launch.binary, list(launch.argv), env)
    except OSError as error:
        launch.cleanup()
        raise AgentNotExecutableError(f"cannot run {launch.binary}: {error.strerror}") from error
