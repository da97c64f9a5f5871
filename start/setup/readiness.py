"""Whether an agent can answer on this machine, as far as its CLI tells without a request: for
`llm`, whether the model it would use has its key. `start init` says so when it picks such an
agent, and `start doctor` checks the agent `start` would launch.

llm tells it with three local commands, none of which sends a request: `llm models default` (the
model it uses when start passes none), `llm models list --options -m MODEL` (the key a model
needs, and its environment variable) and `llm keys list` (the keys stored). A key is there when
it is stored under that name or its variable is set, as llm itself looks for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final

from start.base.errors import StartError
from start.base.record import Record
from start.config.model import Agent, Config
from start.proc import shell

# How long each question to the CLI may take (llm loads its plugins first).
TIMEOUT: Final = 30
_KEY = re.compile(r"^\s*key: (\S+)\s*$", re.MULTILINE)
_VARIABLE = re.compile(r"^\s*env_var: (\S+)\s*$", re.MULTILINE)
KEYS: Final = ("keys", "list")
DEFAULT: Final = ("models", "default")


class Readiness(Record):
    """What the agent's CLI says of its setup: fine or not, in words, and the fix."""

    ok: bool
    message: str
    fix: str | None = None


class _Unanswered(Exception):
    """A question the CLI did not answer: which, and why."""

    def __init__(self, words: tuple[str, ...], readiness: Readiness) -> None:
        super().__init__(readiness.message)
        self.words = words
        self.readiness = readiness


def check(
    agent: Agent,
    binary: str,
    model: str | None,
    workdir: str,
    environ: Mapping[str, str] | None = None,
) -> Readiness | None:
    """The readiness of `agent` (its CLI at `binary`) with `model` (None: the CLI's own
    default); None for an agent whose CLI cannot tell (any but llm)."""
    if os.path.basename(agent.bin) != "llm":
        return None
    env = os.environ if environ is None else environ
    told = "llm's default model" if model is None else "the model start passes llm"
    chosen = model or ""
    try:
        if model is None:
            keys, chosen = _ask(binary, workdir, [KEYS, DEFAULT])
            chosen = chosen.strip()
            if not chosen:
                return Readiness(
                    False,
                    "llm names no default model",
                    "choose one: llm models default MODEL (llm models list names them)",
                )
            (options,) = _ask(binary, workdir, [_options(chosen)])
        else:
            options, keys = _ask(binary, workdir, [_options(chosen), KEYS])  # both at once
    except _Unanswered as error:
        if error.words != _options(chosen):
            return error.readiness
        return error.readiness._replace(
            message=f"llm does not know {told}, {chosen}: {error.readiness.message}",
            fix="choose a model that llm lists: llm models default MODEL (llm models list)",
        )
    if not options.strip():  # llm lists nothing for a model it does not know
        return Readiness(
            False,
            f"llm does not know {told}, {chosen}: a run fails with 'Unknown model'",
            "choose a model that llm lists (llm models list): -m MODEL, or the agent's "
            "default_model in your config",
        )
    key = _KEY.search(options)
    if key is None:
        return Readiness(True, f"{told}, {chosen}, needs no key")
    name = key.group(1)
    found = _VARIABLE.search(options)
    variable = found.group(1) if found is not None else None
    if name in {line.strip() for line in keys.splitlines()}:
        return Readiness(True, f"{told}, {chosen}, has its key ('{name}', llm keys list)")
    if variable is not None and env.get(variable):
        return Readiness(True, f"{told}, {chosen}, has its key (${variable})")
    instead = f" or set {variable}" if variable is not None else ""
    return Readiness(
        False,
        f"{told}, {chosen}, needs the '{name}' key, and llm has none: a run fails with "
        "'No key found'",
        f"llm keys set {name}{instead}; or choose a model with a key: llm models default MODEL",
    )


def of(config: Config, name: str, binary: str) -> Readiness | None:
    """The readiness of agent `name` of `config`, its CLI at `binary`, as `start` would launch
    it (its model as a session chooses it); None when its CLI cannot tell, or no model can be
    chosen (which `start doctor` tells otherwise)."""
    from start.compose.ask import Ask
    from start.compose.resolve import select_model

    agent = config.agents.get(name)
    if agent is None:
        return None
    try:
        model, _ = select_model(agent, Ask("session"), None)
    except StartError:
        return None
    return check(agent, binary, model, config.project.workdir)


def _options(model: str) -> tuple[str, ...]:
    """The question whose answer names the key `model` needs, if any."""
    return ("models", "list", "--options", "-m", model)


def _ask(binary: str, workdir: str, questions: list[tuple[str, ...]]) -> list[str]:
    """Each question's stdout, asked of the CLI at once. Raises _Unanswered for the first that
    fails."""
    specs = [
        shell.CommandSpec(
            'exec "$@"',
            None,
            TIMEOUT,
            workdir,
            separate=True,
            label=" ".join(("llm", *words)),
            args=(binary, *words),
        )
        for words in questions
    ]
    results = shell.run_all(specs)
    for words, result in zip(questions, results, strict=True):
        if not result.ok:
            said = (result.stderr or result.stdout).strip().splitlines()
            last = f": {said[-1]}" if said else ""
            message = f"`llm {' '.join(words)}` {result.status}{last}"
            raise _Unanswered(
                words, Readiness(False, message, "check that llm runs: llm --version")
            )
    return [result.stdout for result in results]
