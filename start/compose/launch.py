"""Builds the agent's argv and env from a composition, checks it, and execs the agent."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NoReturn

from start.base import paths
from start.base.errors import (
    AgentNotExecutableError,
    AgentNotFoundError,
    ExitCode,
    StartError,
    UsageError,
)
from start.base.record import Record
from start.base.template import fill
from start.compose import resolve
from start.compose.resolve import Plan
from start.compose.sources import Composition
from start.config.model import Agent
from start.proc import argv as agent_template
from start.proc.tempfiles import TempFiles, remove, sweep_due

if TYPE_CHECKING:
    from start.config.output import Spec

# Linux limits one argument or environment string to 32 pages (MAX_ARG_STRLEN), NUL included.
MAX_ARG_STRLEN = 131072
_POINTER = 8


class OversizeError(StartError):
    """An argument or environment entry is larger than the OS accepts for exec."""


class Launch(Record):
    """The exact process to start."""

    binary: str
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    uses_shell: bool
    temp_files: tuple[str, ...] = ()
    # Set when the prompt was too large for the command line and went as a file instead.
    large_prompt: str | None = None
    stdin: str | None = None  # a file to give the agent as stdin (the large prompt)
    # A dry run's kept files, and its command line as shell words that refer to them.
    kept: str | None = None
    shown: tuple[str, ...] = ()
    # A headless run (--print): its permission level, and the file its CLI writes the answer to.
    permissions: str | None = None
    answer_file: str | None = None
    # Where the permission level comes from, in words (pipeline.level).
    permissions_from: str | None = None
    # Why the agent cannot run (its binary is missing, or not executable), when the launch was
    # built to be shown or run among others anyway (`build(..., missing_ok=True)`).
    unavailable: StartError | None = None

    def cleanup(self) -> None:
        remove(self.temp_files)


def user_file(agent: Agent) -> str:
    """The file where the user changes an agent: its own, or the global config for a shipped one.

    An item defined in the user's config replaces the shipped item of that name as a whole.
    """
    if agent.origin.layer == "built-in":
        return paths.global_config_file()
    return agent.origin.path


def _where(agent: Agent) -> str:
    if agent.origin.layer == "built-in":
        return f"a copy of [agents.{agent.name}] in {user_file(agent)}"
    return f"[agents.{agent.name}] in {agent.origin.path}"


def ready(agent: Agent, *, headless: bool = False) -> None:
    """Lex the command template that `build` fills for `agent` (lexing is cached), ahead of
    it: the pipeline calls this while the launch's commands run, so that this module's import
    and the lexing overlap them. A template that cannot be lexed is left for `build` to report.
    """
    template = agent.print_command if headless else agent.command
    if template is not None:
        with contextlib.suppress(StartError):
            agent_template.required(template)


def build(
    plan: Plan,
    composition: Composition,
    date: str,
    cwd: str,
    agent_args: Sequence[str] = (),
    temp: TempFiles | None = None,
    *,
    dry_run: bool = False,
    agents: Mapping[str, Agent] | None = None,
    permissions: str | None = None,
    permissions_from: str | None = None,
    output: Spec | None = None,
    missing_ok: bool = False,
    session: str | None = None,
) -> Launch:
    """Fill the agent's command template; the values never pass through a shell parser.

    With `permissions` (a level of schema.LEVELS), the template is the agent's headless form,
    `print_command`, and the options of `print_permissions` for that level come before the
    arguments after `--`; `permissions_from` says where that level comes from. With a task's
    output schema (start.config.output), an agent with `print_schema` gets those options (the prompt
    of any other agent names the format: see pipeline.told).

    A value that would be an argument of its own before `--` and starts with `-` (a model named
    `--allowed-tools=...`) is refused with exit 2 (agent.OptionValueError), whoever gave it.

    A prompt too large for the command line is written to a file and replaced by the agent's
    `large_prompt`, which names that file, or, with `large_prompt_stdin`, goes to its stdin.
    `agents` (every configured agent) lets a missing binary's message list the installed ones.
    A dry run keeps its files (see TempFiles). With `missing_ok` (a dry run, or one of several
    headless runs), a binary that is missing or not executable does not stop the build: the
    launch says why it cannot run (`unavailable`). With `session` (a headless run), the
    template is the agent's `resume_command`, which continues that conversation.
    """
    agent = plan.agent
    template = agent.command
    headless = permissions is not None
    granted: list[str] = []
    if permissions is not None:
        template = headless_command(agent) if session is None else resume_command(agent)
        granted = permission_options(agent, permissions)
        agent_args = [*granted, *agent_args]
    used = agent_template.placeholders(template)
    model = plan.model
    if "model" in agent_template.required(template) and not model:
        # The plan falls back for the agent's command; its headless form may need one too.
        model = resolve.first_model(agent)[0]
        if not model:
            raise StartError(
                f"agent '{agent.name}' uses {{model}} in its command, but no model was chosen "
                "and it has no models.\n"
                f"Pass --model MODEL, set 'model' in the task, add a models table to "
                f"{_where(agent)}, or write [--model {{model}}] in its command so that no model "
                "option is passed when none is chosen"
            )
    if agent_args and not agent_template.takes_args(template):
        raise UsageError(
            f"arguments after -- cannot be added to agent '{agent.name}': its command uses "
            f"shell operators and has no {{args}}; add {{args}} where they belong in "
            f"{_where(agent)}, or put the options in the command"
        )
    role = composition.role
    role_text = role.text if role is not None else ""
    values = {
        "bin": os.path.expanduser(agent.bin),
        "model": model or "",
        "prompt": composition.prompt,
        "role": role_text,
        "date": date,
        "prompt_dir": "",
        "session": session or "",
    }
    temp = temp or TempFiles(keep=dry_run)
    sweep_due(temp.directory)
    schema_options: list[str] = []
    if permissions is not None and holds_to_schema(agent, output):
        assert output is not None and agent.print_schema is not None
        schema_options = _schema_options(agent, output, temp)
    if schema_options:
        agent_args = [*granted, *schema_options, *agent_args[len(granted) :]]

    def write_prompt() -> None:
        if "prompt_file" not in values:
            path = temp.write("prompt", composition.prompt, own_directory=True)
            values["prompt_file"], values["prompt_dir"] = path, os.path.dirname(path)

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
        if "prompt_file" in used or "prompt_dir" in agent_template.required(template):
            write_prompt()
        if "answer_file" in used:
            values["answer_file"] = temp.write("answer", "")
        fill_in = functools.partial(
            _assemble, agent, agents=agents, template=template, headless=headless,
            missing_ok=missing_ok,
        )  # fmt: skip
        parts = fill_in(values, agent_args, cwd)
        large: str | None = None
        try:
            check_sizes(parts.argv, {**os.environ, **parts.env}, parts.env)
        except OversizeError as error:
            if agent.large_prompt is None or "prompt" not in used or not composition.prompt:
                raise OversizeError(f"{error}\n{_oversize_fix(agent)}") from None
            write_prompt()
            large = values["prompt_file"]
            values["prompt"] = fill(agent.large_prompt, values)
            parts = fill_in(values, agent_args, cwd)
            try:
                check_sizes(parts.argv, {**os.environ, **parts.env}, parts.env)
            except OversizeError as still:
                raise OversizeError(
                    f"{still}\nThis is with the prompt passed as a file ({large}): "
                    "the rest of the command, such as the role, is too large."
                ) from None
        stdin = large if large is not None and agent.large_prompt_stdin else None
        shown: tuple[str, ...] = ()
        if dry_run:
            shown = _shown(
                agent, values, agent_args, cwd, agents, temp, composition.prompt, template
            )
            if stdin is not None:
                shown = (*shown, "<", _quote(str(stdin)))
    except BaseException:
        temp.remove()
        raise
    return Launch(
        parts.binary,
        parts.argv,
        parts.env,
        cwd,
        parts.uses_shell,
        tuple(temp.created),
        large,
        stdin,
        temp.kept,
        shown,
        permissions,
        values.get("answer_file"),
        permissions_from,
        parts.unavailable,
    )


def headless_command(agent: Agent) -> str:
    """The agent's headless form; UnsupportedError naming what to add when it has none."""
    if agent.print_command is None or agent.print_output is None:
        missing = " and ".join(
            f for f in ("print_command", "print_output") if getattr(agent, f) is None
        )
        raise HeadlessError(
            f"agent '{agent.name}' has no headless form for --print: add {missing} to "
            f'{_where(agent)} (see docs/agents.md, "Headless runs"), or choose another '
            "agent with -a"
        )
    return agent.print_command


def resume_command(agent: Agent) -> str:
    """The agent's form that continues a conversation; HeadlessError naming the agents that have
    one when it has none."""
    headless_command(agent)
    if agent.resume_command is None:
        raise HeadlessError(
            f"agent '{agent.name}' cannot continue a conversation: it has no resume_command "
            f'(see docs/agents.md, "Continuing a conversation")'
        )
    return agent.resume_command


def able_to_continue(agents: Mapping[str, Agent]) -> list[str]:
    """The agents whose headless runs `start continue` can continue: those with a
    resume_command, in their config's order."""
    return [name for name, agent in agents.items() if agent.resume_command is not None]


def permission_options(agent: Agent, level: str) -> list[str]:
    """The options that give the agent's headless form `level`; HeadlessError where its CLI
    cannot enforce that level."""
    from start.config import schema

    options = agent.print_permissions.get(level)
    if options is None:
        has = [name for name in schema.LEVELS if name in agent.print_permissions]
        offered = f"it offers {', '.join(has)}" if has else "it declares no permission level"
        raise HeadlessError(
            f"agent '{agent.name}' cannot run with '{level}' permissions: its CLI has no way "
            f"to enforce that level ({offered}; print_permissions in {_where(agent)}). Choose "
            "another level with --permissions, or another agent"
        )
    return _words(agent, options, f"'{level}' permission", "print_permissions")


def turn_options(agent: Agent, turns: int) -> list[str]:
    """The options that hold the agent's headless run to `turns` turns (its
    `print_max_turns`); HeadlessError when its CLI has no turn limit."""
    if agent.print_max_turns is None:
        raise HeadlessError(
            f"agent '{agent.name}' cannot be held to {turns} turns: its CLI has no turn limit "
            f"(no print_max_turns in {_where(agent)}). Leave max_turns out, or choose an agent "
            "that has one"
        )
    words = _words(agent, agent.print_max_turns, "print_max_turns", "print_max_turns")
    return [fill(word, {"max_turns": str(turns)}) for word in words]


def _words(agent: Agent, options: str, what: str, key: str) -> list[str]:
    """An agent's `key` option string as words; HeadlessError when it cannot be split."""
    import shlex

    try:
        return shlex.split(options)
    except ValueError as error:
        raise HeadlessError(
            f"agent '{agent.name}': its {what} options cannot be split into words: {error}; "
            f"fix {key} in {_where(agent)}"
        ) from None


def holds_to_schema(agent: Agent, output: Spec | None) -> bool:
    """Whether the agent's CLI is given the task's output schema (its `print_schema`)."""
    return output is not None and output.format == "schema" and agent.print_schema is not None


def _schema_options(agent: Agent, output: Spec, temp: TempFiles) -> list[str]:
    """An agent's `print_schema` as words, {schema} and {schema_file} filled in each."""
    options = agent.print_schema
    assert options is not None
    # A launch does not lex the shipped agents' (config.load).
    words = _words(agent, options, "print_schema", "print_schema")
    text = output.schema_text()
    values = {"schema": text}
    if "{schema_file}" in options:
        values["schema_file"] = temp.write("schema", text + "\n")
    return [fill(word, values) for word in words]


class HeadlessError(StartError):
    """An agent, or a permission level, that a headless run (--print) cannot use."""

    exit_code = ExitCode.USAGE


def _quote(text: str) -> str:
    from start.proc.shellwords import quote

    return quote(text)


class _Parts(Record):
    binary: str
    argv: tuple[str, ...]
    env: dict[str, str]
    uses_shell: bool
    unavailable: StartError | None = None


def _assemble(
    agent: Agent,
    values: Mapping[str, str],
    args: Sequence[str],
    cwd: str,
    agents: Mapping[str, Agent] | None,
    template: str | None = None,
    *,
    headless: bool = False,
    missing_ok: bool = False,
) -> _Parts:
    """The agent's command filled; with `missing_ok`, a binary that is missing or not
    executable is left as named, and the parts say why it cannot run."""
    template = agent.command if template is None else template
    try:
        command = agent_template.build(template, values, args)
    except agent_template.OptionValueError as error:
        field = "print_command" if headless else "command"
        raise _option_error(agent, field, error.placeholder) from None
    argv = list(command.argv)
    binary = argv[0]
    try:
        if command.uses_shell:
            if "bin" in agent_template.placeholders(template):
                resolve_binary(values["bin"], agent, cwd, agents)
        else:
            binary = argv[0] = resolve_binary(argv[0], agent, cwd, agents)
    except (AgentNotFoundError, AgentNotExecutableError) as error:
        if not missing_ok:
            raise
        return _Parts(binary, tuple(argv), dict(command.env), command.uses_shell, error)
    return _Parts(binary, tuple(argv), dict(command.env), command.uses_shell)


def _option_error(agent: Agent, field: str, placeholder: str) -> UsageError:
    """Why a value cannot be an argument of its own (agent.OptionValueError), and the fix."""
    what = {"model": "the model", "prompt": "the prompt", "role": "the role's text"}.get(
        placeholder, f"the value of {{{placeholder}}}"
    )
    if placeholder == "model":
        fix = (
            "A model's name never starts with '-': choose another with -m, or fix the task's "
            "model or the agent's default_model and models"
        )
    else:
        fix = (
            f"Put '--' before {{{placeholder}}} in its {field}, or join it to its option "
            f"('--option={{{placeholder}}}'), in {_where(agent)}"
        )
    return UsageError(
        f"agent '{agent.name}': {what} starts with '-', and its {field} passes it as an argument "
        "of its own before '--', where its CLI would read it as an option; the agent was not "
        f"started. {fix}"
    )


# Private-use characters mark where a value goes, to be shown as a reference to its file.
_MARK = "\ue000{}\ue001"


def _shown(
    agent: Agent,
    values: dict[str, str],
    args: Sequence[str],
    cwd: str,
    agents: Mapping[str, Agent] | None,
    temp: TempFiles,
    prompt: str,
    template: str,
) -> tuple[str, ...]:
    """The dry run's command line as shell words, each long value a reference to its file."""
    files: dict[str, str] = {}
    marked = dict(values)
    for name in ("prompt", "role"):
        text = values[name]
        if not text or (name == "prompt" and text != prompt):
            continue  # an empty value keeps its groups out; a large_prompt pointer is short
        if name == "prompt" and "prompt_file" in values:
            files[name] = values["prompt_file"]
        else:
            files[name] = str(temp.write(name, text))
        marked[name] = _MARK.format(name)
    parts = _assemble(agent, marked, args, cwd, agents, template, missing_ok=True)

    def word(text: str) -> str:
        out = []
        for index, piece in enumerate(re.split("\ue000(prompt|role)\ue001", text)):
            if index % 2:
                out.append(f'"$(cat {_quote(files[piece])})"')
            elif piece or len(text) == 0:
                out.append(_quote(piece))
        return "".join(out)

    env = [f"{name}={word(value)}" for name, value in parts.env.items()]
    return (*env, *(word(arg) for arg in parts.argv))


def _oversize_fix(agent: Agent) -> str:
    return (
        f"Set large_prompt in {_where(agent)} so that a long prompt goes as a file, use "
        "{prompt_file} in its command, or shorten the prompt."
    )


def resolve_binary(
    name: str, agent: Agent, cwd: str, agents: Mapping[str, Agent] | None = None
) -> str:
    """The absolute path of the agent binary: 127 when missing, 126 when not executable."""
    if os.sep in name:
        path = paths.expanduser(name)
        path = path if os.path.isabs(path) else paths.join(cwd, path)
        if not os.path.exists(path):
            raise AgentNotFoundError(_missing(agent, path, "does not exist", agents))
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise AgentNotExecutableError(
                f"agent '{agent.name}': {path} is not executable; check its permissions "
                f"(chmod +x) or fix agents.{agent.name}.bin in {user_file(agent)}"
            )
        return str(path)
    found = paths.which(name)
    if found is None:
        raise AgentNotFoundError(_missing(agent, name, "not found on PATH", agents))
    return os.path.abspath(found)


def _missing(agent: Agent, name: str, problem: str, agents: Mapping[str, Agent] | None) -> str:
    install = f"Install it ({agent.url})" if agent.url else "Install it"
    if agent.origin.layer != "built-in":
        install += f" or fix agents.{agent.name}.bin in {agent.origin.path}"
    installed = [
        other.name
        for other in (agents or {}).values()
        if other.name != agent.name and paths.which(os.path.expanduser(other.bin))
    ]
    if installed:
        choose = (
            f", or choose an installed agent ({', '.join(installed)}) with --agent NAME or "
            f"default_agent under [settings] in {paths.global_config_file()}"
        )
    elif agents:
        choose = "; no other configured agent is installed either"
    else:
        choose = ", or choose another with --agent NAME"
    return f"agent '{agent.name}': '{name}' {problem}.\n{install}{choose}."


def arg_max() -> int:
    try:
        value = os.sysconf("SC_ARG_MAX")
    except (ValueError, OSError):
        value = -1
    return value if value > 0 else 2_097_152


def check_sizes(argv: Sequence[str], env: dict[str, str], added: dict[str, str]) -> None:
    """Refuse, before exec, arguments that the OS would reject with E2BIG."""
    per_arg = MAX_ARG_STRLEN if sys.platform.startswith("linux") else None
    sizes = [len(os.fsencode(a)) + 1 for a in argv]
    if per_arg is not None:
        for index, size in enumerate(sizes):
            if size > per_arg:
                raise OversizeError(
                    f"argv[{index}] of the agent command is {size:,} bytes; the limit for one "
                    f"argument is {per_arg:,} bytes."
                )
        for name, value in added.items():
            size = len(os.fsencode(f"{name}={value}")) + 1
            if size > per_arg:
                raise OversizeError(
                    f"environment variable {name} is {size:,} bytes; the limit for one entry is "
                    f"{per_arg:,} bytes."
                )
    env_size = sum(len(os.fsencode(f"{k}={v}")) + 1 + _POINTER for k, v in env.items())
    total = sum(sizes) + _POINTER * len(sizes) + env_size
    limit = arg_max() - 4096
    if total > limit:
        raise OversizeError(
            f"the agent command and environment total {total:,} bytes; the limit is "
            f"{limit:,} bytes."
        )


def exec_agent(launch: Launch, *, keep_stdin: bool = False) -> NoReturn:
    """Replace this process with the agent. The agent owns the terminal and the exit status.

    With `keep_stdin` (a program that start gave no input, as a Taskfile task), stdin stays
    what it is: what is piped to start is the program's."""
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
    sys.stdout.flush()
    sys.stderr.flush()
    if launch.stdin is not None:
        _as_stdin(os.open(launch.stdin, os.O_RDONLY))
    elif not keep_stdin:
        terminal_stdin()
    env = {**os.environ, **launch.env}
    try:
        os.chdir(launch.cwd)
        os.execve(launch.binary, list(launch.argv), env)
    except OSError as error:
        launch.cleanup()
        raise AgentNotExecutableError(f"cannot run {launch.binary}: {error.strerror}") from error


def terminal_stdin() -> None:
    """Make the controlling terminal stdin when stdin is not a terminal; else leave it alone.

    An interactive agent needs the keyboard: after `git diff | start prompt -` stdin is a pipe
    that start has drained, and under a script it may be /dev/null. Without a controlling
    terminal (cron, CI) there is nothing better, and stdin stays as it is.
    """
    if os.isatty(0):
        return
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return
    _as_stdin(fd)


def _as_stdin(fd: int) -> None:
    if fd != 0:
        os.dup2(fd, 0)
        os.close(fd)
