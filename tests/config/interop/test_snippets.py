"""Arguments never become shell text: a snippet reads them from environment variables, quoted for
where the reference stands, so any value reaches a real /bin/sh byte-exact."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from start.config.interop import words
from start.config.interop.common import snippet
from start.config.interop.model import ALL, WORD, Arg
from start.proc import shell
from tests.config.interop.conftest import compose
from tests.conftest import FAKE_AGENT, run_start, write_tree

# Every reference context of POSIX sh: unquoted, double-quoted, single-quoted, inside other
# text, inside $(...) and backquotes. `|` ends each value, so trailing newlines are kept.
CLAUDE = """\
---
description: Print the arguments back
---
A: !`printf '%s|' $ARGUMENTS`
B: !`printf '%s|' "$ARGUMENTS"`
C: !`printf '%s|' '$ARGUMENTS'`
D: !`printf '%s|' x"$ARGUMENTS"y`
E: !`printf '%s' "$(printf '%s|' "$ARGUMENTS")"`
F: !`printf '%s|' $0`
G: !`printf '%s|' '$1'`
Z
"""

GEMINI = """\
prompt = '''
A: !{printf '%s|' {{args}}}
B: !{printf '%s|' "{{args}}"}
C: !{printf '%s|' '{{args}}'}
Z
'''
"""

OPENCODE = """\
---
description: Print the arguments back
---
A: !`printf '%s|' $ARGUMENTS` :A
B: !`printf '%s|' "$1"` :B
C: !`printf '%s|' '$2'` :C
Z
"""

GLOBAL = f"""\
[settings]
default_agent = "fake"
shell = "/bin/sh"

[agents.fake]
bin = "{FAKE_AGENT}"
command = "{{bin}} {{prompt}}"
"""

# Arbitrary text without NUL (no environment variable can hold one) and lone surrogates.
TEXT = st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), min_size=1
)
HOSTILE = st.sampled_from(
    [
        "'",
        '"',
        "$(touch pwned)",
        "`touch pwned`",
        "; touch pwned",
        "&& touch pwned",
        "\n",
        "\\",
        "--flag",
        "-n",
        "-",
        "$HOME",
        "${HOME}",
        "*",
        "~",
        "'\"'\"'",
        "ünï 中文 🚀",
        "{{args}}",
        "$ARGUMENTS",
        "$1",
        " ",
        "\t",
        "#",
        "|",
    ]
)
# Blank text is no instructions at all (start task drops it), so every value holds a word.
VALUE = (
    st.lists(st.one_of(TEXT, HOSTILE), min_size=1, max_size=6)
    .map("".join)
    .filter(lambda v: bool(v.strip()))
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_tree(
        isolated,
        {
            ".claude/commands/echo.md": CLAUDE,
            ".gemini/commands/echo.toml": GEMINI,
            ".opencode/command/echo.md": OPENCODE,
        },
    )
    write_tree(Path.home() / ".config" / "start", {"config.toml": GLOBAL})
    (isolated / ".git").mkdir()
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    return isolated


def lines(text: str) -> dict[str, str]:
    """`X: value|` lines of a composed text, by X (a value may hold newlines)."""
    found = re.findall(r"(?ms)^([A-G]): (.*?)\|(?: :[A-G])?$(?=\n[A-GZ]|\Z)", text)
    return dict(found)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=VALUE)
def test_claude_snippets_get_the_arguments_byte_exact(project: Path, value: str) -> None:
    prepared = compose(project, "claude:echo", value, run=shell.run_all)
    assert prepared.composition.task is not None
    got = prepared.composition.task.text
    first = words.claude(value)
    second = first[1] if len(first) > 1 else ""
    for label, expected in (
        ("A", value),
        ("B", value),
        ("C", value),
        ("D", f"x{value}y"),
        ("E", value),
        ("F", first[0] if first else ""),
        ("G", second),
    ):
        assert f"{label}: {expected}|\n" in got, (label, got)
    assert not (project / "pwned").exists()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=VALUE)
def test_gemini_snippets_get_the_arguments_byte_exact(project: Path, value: str) -> None:
    prepared = compose(project, "gemini:echo", value, run=shell.run_all)
    assert prepared.composition.task is not None
    got = prepared.composition.task.text
    # {{args}} is the words joined by one space; the output is trimmed, escapes removed.
    args = words.gemini(value)
    expected = _ANSI.sub("", args + "|").strip()
    if not args.strip():
        return  # no arguments: Gemini appends nothing and prints `|`
    for label in "ABC":
        assert f"{label}: {expected}\n" in got, (label, got)
    assert not (project / "pwned").exists()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=VALUE)
def test_opencode_snippets_get_the_arguments_byte_exact(project: Path, value: str) -> None:
    prepared = compose(project, "opencode:echo", value, run=shell.run_all)
    assert prepared.composition.task is not None
    got = prepared.composition.task.text
    tokens = words.opencode(value)
    for label, expected in (
        ("A", value),
        ("B", tokens[0] if tokens else ""),
        ("C", " ".join(tokens[1:])),
    ):
        assert f"{label}: {expected}| :{label}\n" in got, (label, got)
    assert not (project / "pwned").exists()


def test_a_reference_is_quoted_for_where_it_stands() -> None:
    """The script refers to the variable, never the value: unquoted and in `$(...)` as "${V}",
    in double quotes as ${V}, in single quotes by leaving them around "${V}"."""
    arg = Arg(ALL, literal="$ARGUMENTS")
    word = Arg(WORD, 1, literal="$1")
    built = snippet(["echo ", arg, ' "', arg, "\" '", word, "' $(cat ", arg, ")"], "!`...`", 1)
    assert built.command == (
        'echo "${START_INSTRUCTIONS}" "${START_INSTRUCTIONS}" \'\'"${START_ARG_2}"\'\' '
        '$(cat "${START_INSTRUCTIONS}")'
    )


def test_a_snippet_start_cannot_quote_safely_is_not_imported(isolated: Path) -> None:
    """A here-document hides where a reference stands: the file is skipped, with a warning that
    names it, rather than pasting the value (no unsafe fallback)."""
    from start.config.load import load

    body = "---\ndescription: x\n---\n```!\ncat <<EOF\n$ARGUMENTS\nEOF\n```\n"
    write_tree(isolated, {".claude/commands/doc.md": body})
    (isolated / ".git").mkdir()
    config = load(str(isolated))
    assert "claude:doc" not in config.tasks
    path = isolated / ".claude" / "commands" / "doc.md"
    assert [str(p) for p in config.problems if p.file == str(path)] == [
        f"{path}:4:1: not imported: the shell command '```!\\ncat <<EOF\\n$ARGUMENTS\\nEOF\\n```' "
        "cannot take the arguments safely: here-documents ('<<') are not supported; pass the "
        "prompt as a file instead: {prompt_file} with an option of the agent that reads a file, "
        "or '< {prompt_file}'; it is not imported"
    ]


@pytest.mark.parametrize(
    "value",
    ["$(touch pwned)", "`touch pwned`", "x'; touch pwned; '", '"; touch pwned; "', "-n\nhi"],
)
def test_hostile_instructions_through_start_task(project: Path, value: str) -> None:
    """End to end, `start task claude:echo --instructions=VALUE`: the agent's prompt holds the
    value as the snippets printed it, and nothing else ran."""
    record = project / "record.json"
    result = run_start(
        "task",
        "claude:echo",
        f"--instructions={value}",
        "--no-role",
        cwd=project,
        env={"FAKE_AGENT_RECORD": str(record), "START_TRUSTED_PATHS": str(project)},
    )
    assert result.returncode == 0, result.stderr
    argv = json.loads(record.read_text(encoding="utf-8"))["argv"]
    assert f"B: {value}|\n" in argv[-1]
    assert not (project / "pwned").exists()
    assert os.path.exists(record)
