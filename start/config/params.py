"""Task parameters: the name rule, binding `-p NAME=VALUE` to a task, and what its command sees.

A parameter `focus` is the placeholder `{focus}` in the task's template (its `prompt`, or its
`file` when that is the template) and the environment variable START_PARAM_FOCUS of the task's
`command`. A command never gets a value pasted into its text: the shell reads the variable, so
`git log --grep="$START_PARAM_FOCUS"` is safe whatever the value holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from start.base import fs, template
from start.base.errors import UsageError, suggest
from start.config.model import Param, Task

# The placeholder rule (start.base.template): a parameter is `{name}`, so a hyphen cannot be part of
# it. A string, compiled on first use: validation needs it, a launch does not.
NAME_RULE: Final = r"[a-z][a-z0-9_]*"
FIELDS: Final = ("default", "description")
ENV_PREFIX: Final = "START_PARAM_"
INSTRUCTIONS_ENV: Final = "START_INSTRUCTIONS"
# The argument of `start mcp`'s run_task tool that names the task; the task's parameters are its
# other arguments, so no parameter can have this name.
TASK_NAME_ARGUMENT: Final = "task_name"


class ParamError(ValueError):
    """A parameter declared in code that breaks a rule TOML validation would report."""


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a parameter's name, or None."""
    if not re.fullmatch(NAME_RULE, name):
        fixed = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")
        if fixed and not fixed[0].isalpha():
            fixed = f"p_{fixed}"
        example = fixed if fixed and re.fullmatch(NAME_RULE, fixed) else "focus_area"
        return (
            f"invalid parameter name '{name}': use lowercase letters, digits and underscores, "
            f"starting with a letter, such as '{example}' (a parameter is the placeholder "
            f"{{{example}}})"
        )
    if name in template.KNOWN:
        return (
            f"parameter '{name}' would shadow the built-in placeholder {{{name}}}; "
            "choose another name"
        )
    if name == TASK_NAME_ARGUMENT:
        return (
            f"parameter '{name}' is reserved: start mcp's run_task tool names the task with it; "
            "choose another name"
        )
    return None


def declare(entries: Iterable[tuple[str, str | None, str | None]]) -> tuple[Param, ...]:
    """Parameters from (name, default, description) triples, checked by the rules TOML obeys.

    For code that builds tasks from other sources (imported command files, for example). Raises
    ParamError for a bad or repeated name.
    """
    found: dict[str, Param] = {}
    for name, default, description in entries:
        problem = name_problem(name)
        if problem is not None:
            raise ParamError(problem)
        if name in found:
            raise ParamError(f"parameter '{name}' is declared twice")
        found[name] = Param(name, default, description)
    return tuple(found.values())


def env_name(name: str) -> str:
    """The environment variable that holds parameter `name` in the task's command."""
    return ENV_PREFIX + name.upper()


def split(word: str) -> tuple[str, str]:
    """`NAME=VALUE` from `-p` as (NAME, VALUE); the value may hold anything, `=` included."""
    name, equals, value = word.partition("=")
    if not equals or not name:
        raise UsageError(f"-p '{word}': give a parameter as NAME=VALUE, such as -p focus=security")
    return name, value


def bind(task: Task, given: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Every parameter of `task` with its value: the one given (the last wins), else its default.

    Raises UsageError (exit 2) for a name the task does not declare, with "did you mean", and
    for parameters without a default that are not given, naming them all. A Codex prompt that
    takes named arguments accepts a name it does not use, as Codex does (prompt_args.rs): it is
    kept among the values, and the expansion notes it.
    """
    declared = {param.name: param for param in task.params}
    values: dict[str, str] = {}
    extra: dict[str, str] = {}
    unused_ok = bool(declared) and task.imported is not None and task.imported.format == "codex"
    for name, value in given:
        if name not in declared and unused_ok:
            extra[name] = fs.arg_text(value)
            continue
        if name not in declared:
            if not declared:
                raise UsageError(f"task '{task.name}' has no parameters; drop -p {name}=...")
            close = suggest(name, declared)
            hint = f"did you mean '{close}'?" if close else f"its parameters: {', '.join(declared)}"
            raise UsageError(f"unknown parameter '{name}' for task '{task.name}'; {hint}")
        values[name] = value
    missing = [p for p in task.params if p.name not in values and p.default is None]
    if missing:
        names = ", ".join(f"'{p.name}'" for p in missing)
        plural = "s" if len(missing) > 1 else ""
        flags = " ".join(f"-p {p.name}=VALUE" for p in missing)
        details = [f"  {p.name}: {p.description}" for p in missing if p.description]
        raise UsageError(
            "\n".join(
                [f"task '{task.name}' needs the parameter{plural} {names}: pass {flags}", *details]
            )
        )
    # A default follows the text rule like a value from the command line: no NUL.
    bound = {p.name: fs.arg_text(values.get(p.name, p.default or "")) for p in task.params}
    return {**bound, **extra}


def environment(values: Mapping[str, str], instructions: str | None) -> dict[str, str]:
    """The variables a task's command gets: START_INSTRUCTIONS ("" without instructions) and
    START_PARAM_NAME for each parameter, by the text rule (no variable can hold a NUL)."""
    env = {INSTRUCTIONS_ENV: fs.arg_text(instructions) if instructions is not None else ""}
    env.update((env_name(name), fs.arg_text(value)) for name, value in values.items())
    return env


def describe(param: Param) -> str:
    """`focus=security`, `focus=""` or `depth (required)`, for listings."""
    if param.default is None:
        return f"{param.name} (required)"
    if param.default == "":
        return f'{param.name}=""'
    return f"{param.name}={param.default}"
