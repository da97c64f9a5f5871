"""The agent command template becomes argv and environment; values never pass through a shell."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Final

from start.base.errors import StartError, UsageError
from start.base.record import Record
from start.base.template import fill, names
from start.proc import shellwords
from start.proc.shellwords import ARGS, Lexed, Word

SHELL: Final = "/bin/sh"
SHELL_NAME: Final = "start"  # $0 of the script: sh names it in its own error messages


class AgentTemplateError(StartError):
    """An agent command template that cannot be split into arguments."""


class AgentArgsError(UsageError):
    """Extra arguments for a template that runs under a shell and has no `{args}`."""


class AgentValueError(StartError):
    """A placeholder value that no command argument can carry."""


class OptionValueError(UsageError):
    """A value that would be an argument of its own before `--` and starts with `-`, so that the
    program would read it as an option (exit 2). `placeholder` names it."""

    def __init__(self, placeholder: str) -> None:
        self.placeholder = placeholder
        super().__init__(
            f"the value of {{{placeholder}}} starts with '-' and would be an argument of its own "
            "before '--', which the program reads as an option"
        )


class AgentCommand(Record):
    """What to exec: argv, the variables the template sets, and whether argv runs /bin/sh."""

    argv: tuple[str, ...]
    env: dict[str, str]
    uses_shell: bool


def placeholders(template: str) -> list[str]:
    """The placeholder names a command template uses, in order of first use."""
    return names(template)


def required(template: str) -> frozenset[str]:
    """The placeholders a template uses outside its optional groups: they must have a value."""
    return _split(template).required


def needs_shell(template: str) -> bool:
    """Whether the template uses shell operators or expansions, so it must run under /bin/sh."""
    return _split(template).shell


def assignments(template: str) -> list[tuple[str, str]]:
    """The leading NAME=value words of a template (the agent's environment), placeholders kept."""
    found: list[tuple[str, str]] = []
    for word in shellwords.split(template).words:
        name = word.assignment()
        if name is None:
            break
        found.append((name, fill(tuple(word.parts), {})[len(name) + 1 :]))
    return found


def build(template: str, values: Mapping[str, str], args: Sequence[str] = ()) -> AgentCommand:
    """Split the template into words, then fill each placeholder with its value verbatim.

    `args` fill `{args}`; a template without it gets them before its first `--` word, else at
    the end. An optional group is kept when all its placeholders have a non-empty value.
    A template with shell operators runs as `/bin/sh -c SCRIPT start V1 V2 ... ARG1 ...`, where
    the script refers to each value as a positional parameter quoted for its context.
    """
    lexed = _split(template)
    for name in lexed.params:
        value = values.get(name)
        if value is not None and "\x00" in value:
            raise AgentValueError(
                f"the value of {{{name}}} contains a NUL character, "
                "which no command argument can carry"
            )
    for arg in args:
        if "\x00" in arg:
            raise AgentValueError("an extra argument contains a NUL character")

    def present(name: str) -> bool:
        return bool(args) if name == ARGS else bool(values.get(name))

    lexed = lexed.fill_groups(present)
    if lexed.problems:
        raise AgentTemplateError(_message(lexed.problems[0], template))
    optional = _option_value(lexed.words, values)
    if optional is not None:
        raise OptionValueError(optional)
    if lexed.shell:
        if args and ARGS not in lexed.required:
            raise AgentArgsError(
                _message("extra arguments have no place: {args} is missing", template)
            )
        given = tuple(values.get(name, "{" + name + "}") for name in lexed.params)
        script = lexed.script_text(len(args))
        return AgentCommand((SHELL, "-c", script, SHELL_NAME, *given, *args), {}, uses_shell=True)
    missing = shellwords.missing_program(lexed.words)
    if missing:
        raise AgentTemplateError(_message(missing, template))
    argv, env = _expand(lexed.words, values, args)
    if not argv:
        raise AgentTemplateError(
            _message("no program to run once the placeholders are filled", template)
        )
    return AgentCommand(tuple(argv), env, uses_shell=False)


def takes_args(template: str) -> bool:
    """Whether extra arguments have a place: `{args}`, or any template that runs directly."""
    lexed = _split(template)
    return ARGS in lexed.required or not lexed.shell


def _option_value(words: Sequence[Word], values: Mapping[str, str]) -> str | None:
    """The placeholder whose value would begin an argument of its own with `-`, where the
    program reads options: after the program's name and before a `--` word. None if none.

    The rule holds for every placeholder, whoever gave its value (the command line, a project's
    config, an MCP caller): a template's own options are literal text, and `{args}`, which are
    options on purpose, is left alone. In a template that runs under /bin/sh, each command (after
    `|`, `;`, `&&`, ...) has its own program and its own `--`.
    """
    program = True  # the next word that sets no variable is the program
    ended = False  # a `--` word has ended the options
    for word in words:
        if word.first:
            program, ended = True, False
        if program:
            program = word.assignment() is not None
            continue
        if ended or word.is_args:
            continue
        if word.literal == "--":
            ended = True
            continue
        for part in word.parts:
            if isinstance(part, str):
                if part:
                    break  # the word begins with the template's own text
                continue
            value = values.get(part.name, "")
            if value:
                if value.startswith("-"):
                    return part.name
                break
    return None


def _split(template: str) -> Lexed:
    lexed = shellwords.split(template)
    if lexed.problems:
        raise AgentTemplateError(_message(lexed.problems[0], template))
    return lexed


def _message(problem: str, template: str) -> str:
    return f"{problem} in agent command: {template}"


def _expand(
    words: Sequence[Word], values: Mapping[str, str], args: Sequence[str]
) -> tuple[list[str], dict[str, str]]:
    argv: list[str] = []
    env: dict[str, str] = {}
    command_seen = False
    slot: int | None = None  # where the extra arguments go
    has_slot = False
    for word in words:
        if word.is_args:
            slot, has_slot = len(argv), True
            continue
        text = fill(tuple(word.parts), values)
        name = None if command_seen else word.assignment()
        if name is not None:
            skip = len(name) + 1
            env[name] = _tilde(word.prefix[skip:], word.open, text[skip:])
            continue
        # POSIX decides which words are assignments before expansion, so an empty first word
        # that vanishes below still ends the assignments.
        if command_seen and slot is None and word.literal == "--":
            slot = len(argv)
        command_seen = True
        if text or word.quoted:
            argv.append(_tilde(word.prefix, word.open, text))
    if not has_slot and slot is None:
        slot = len(argv)
    if slot is not None:
        argv[slot:slot] = args
    return argv, env


def _tilde(prefix: str, whole: bool, text: str) -> str:
    """Expand a leading unquoted `~` or `~user`, ending at the first `/`, as sh would."""
    if not prefix.startswith("~"):
        return text
    slash = prefix.find("/")
    if slash < 0 and not whole:
        return text
    head = prefix if slash < 0 else prefix[:slash]
    return os.path.expanduser(head) + text[len(head) :]
