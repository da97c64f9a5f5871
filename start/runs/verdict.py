"""`--fail-if PATH`: the true or false a checked JSON answer holds at PATH, which fails a headless
run when it is true. The shipped task `gate` answers `{"block": ..., "findings": [...]}`, and the
`start-gate` pre-commit hook runs it with `--fail-if block`; any task with an `output` format can
be a gate the same way.

PATH is keys separated by dots, as config keys are (`block`, `verdict.block`; a number picks an
item of a list: `checks.0.failed`). What is wrong is said with the JSON path of the answer, as a
schema's problems are (`$.verdict.block`, `$.checks[0]`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from start.base.errors import ExitCode, UsageError
from start.base.record import Record
from start.runs import Run


class VerdictError(ValueError):
    """An answer that holds no true or false at PATH; `str()` says what is there instead."""


class Said(Record):
    """One message of a judgement, for `start: MESSAGE` on stderr, with its hints."""

    message: str
    hints: tuple[str, ...] = ()


class Judgement(Record):
    """The exit code of runs judged by --fail-if, and what to say about each answer."""

    code: int
    said: tuple[Said, ...]


# How much of an answer a message quotes: a key's or a value's first characters, a few keys.
_QUOTED = 60
_KEYS = 8

# What to do about an answer that holds no verdict: the answer itself is printed above.
_NO_VERDICT = (
    "name a true or false the answer holds (the answer is above; --json shows it as value), "
    "or hold the task to a JSON Schema that requires one there"
)
_OUT_OF_FORMAT = (
    "run it again; an agent whose entry has print_schema (claude, codex, qwen, llm) holds its "
    "answer to the task's schema itself (start help agents)"
)


def parse(text: str) -> tuple[str, ...]:
    """PATH's keys; UsageError for a PATH with an empty key (`""`, `a..b`, `.block`)."""
    keys = tuple(text.split("."))
    if all(keys):
        return keys
    plain = ".".join(key for key in text.removeprefix("$").split(".") if key)
    fix = f" (--fail-if {plain})" if plain else ""
    raise UsageError(
        f"--fail-if '{text}': PATH is keys separated by dots, with none empty, such as block "
        f"or verdict.block{fix}"
    )


def text_answer(fail_if: str, task: str | None) -> UsageError:
    """--fail-if of a run whose answer is text (a prompt's, or `task`'s without an `output`
    format), before any agent runs: the error that says so."""
    what = f"task '{task}' answers text" if task is not None else "a prompt's answer is text"
    return UsageError(
        f"--fail-if {fail_if} reads a JSON answer, and {what}: give the task an output format "
        '(output = "json", or a JSON Schema; start help configuration)'
    )


def judge(runs: Sequence[Run], fail_if: str, code: int) -> Judgement:
    """Runs that ended with `code` (printing.exit_code), judged by --fail-if: BLOCKED when an
    answer holds true at PATH, OUTPUT when an answer holds no true or false there or none could
    be read (a gate that cannot say must not let a change through); the code of runs that
    failed stands. What is said names the agent, PATH, what the answer holds and the fix."""
    keys = parse(fail_if)
    said: list[Said] = []
    blocked = unreadable = False
    for run in runs:
        if run.mismatched:
            said.append(
                Said(
                    f"--fail-if {fail_if}: agent '{run.agent}' gave no verdict to read (its "
                    "answer, above, is out of the task's output format), so it does not pass",
                    (_OUT_OF_FORMAT,),
                )
            )
            continue
        if not run.ok:
            continue
        try:
            holds_true = holds(run.value, keys)
        except VerdictError as error:
            said.append(
                Said(
                    f"agent '{run.agent}' answered, but not true or false at --fail-if "
                    f"{fail_if}: {error}",
                    (_NO_VERDICT,),
                )
            )
            unreadable = True
            continue
        if holds_true:
            lines = [f"blocked: agent '{run.agent}' answered true at --fail-if {fail_if}"]
            lines += [f"  {line}" for line in findings(run.value, keys)]
            said.append(Said("\n".join(lines)))
            blocked = True
    if code != ExitCode.OK:
        return Judgement(code, tuple(said))
    if unreadable:
        return Judgement(ExitCode.OUTPUT, tuple(said))
    return Judgement(ExitCode.BLOCKED if blocked else ExitCode.OK, tuple(said))


def holds(value: Any, keys: tuple[str, ...]) -> bool:
    """The true or false at `keys` in an answer's checked JSON value; VerdictError when there is
    something else there, or nothing."""
    from start.proc.schemacheck import step

    where = "$"
    for key in keys:
        if isinstance(value, dict):
            if key not in value:
                raise VerdictError(f"{where}{step(key)} is missing{_holding(where, value)}")
            value, where = value[key], where + step(key)
        elif isinstance(value, list):
            if not (key.isascii() and key.isdecimal()):
                raise VerdictError(f"{where} is a list: '{key}' is not an index of it")
            if int(key) >= len(value):
                count = len(value)
                raise VerdictError(
                    f"{where}[{int(key)}] is missing: {where} has {count} "
                    f"item{'' if count == 1 else 's'}"
                )
            value, where = value[int(key)], f"{where}[{int(key)}]"
        else:
            raise VerdictError(f"{where} is {_kind(value)}, which has no '{key}'")
    if not isinstance(value, bool):
        raise VerdictError(f"{where} is {_kind(value)}, not true or false")
    return value


def findings(value: Any, keys: tuple[str, ...]) -> list[str]:
    """The findings beside the true at `keys` (the `findings` list of the object that holds
    it, as `gate` answers them), one line each: `FILE:LINE: MESSAGE`, as far as each has them."""
    for key in keys[:-1]:
        value = value[int(key)] if isinstance(value, list) else value[key]
    listed = value.get("findings") if isinstance(value, dict) else None
    if not isinstance(listed, list):
        return []
    lines = []
    for finding in listed:
        if isinstance(finding, str):
            lines.append(finding)
            continue
        if not isinstance(finding, dict) or not isinstance(finding.get("message"), str):
            continue
        where = ":".join(
            str(part) for part in (finding.get("file"), finding.get("line")) if _plain(part)
        )
        lines.append(f"{where}: {finding['message']}" if where else finding["message"])
    return lines


def _plain(part: Any) -> bool:
    """Whether a finding's file or line can be shown: a string, or a number that is no bool."""
    return isinstance(part, str | int) and not isinstance(part, bool) and part != ""


def _holding(where: str, value: dict[str, Any]) -> str:
    """What an object holds instead of a missing key: its first keys, each cut short."""
    if not value:
        return f": {where} is an empty object"
    shown = [repr(key if len(key) <= _QUOTED else key[:_QUOTED] + "…") for key in value][:_KEYS]
    more = f" and {len(value) - _KEYS} more" if len(value) > _KEYS else ""
    return f": {where} has {', '.join(shown)}{more}"


def _kind(value: Any) -> str:
    """What a JSON value is, in words, with a short value quoted: `null`, `the string 'yes'`."""
    import json

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        text = json.dumps(value, ensure_ascii=False)
        shown = text if len(text) <= _QUOTED else text[:_QUOTED] + "…"
        return f"the {'string' if isinstance(value, str) else 'number'} {shown}"
    return "a list" if isinstance(value, list) else "an object"
