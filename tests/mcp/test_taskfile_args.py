"""run_user_task's words and the shell (issue 44, finding 3): go-task quotes each word of
{{.CLI_ARGS}} for a shell, which holds bare, but not inside the quotes a Taskfile puts around it.
Below `full` permissions a word may hold only characters that no shell context expands; at `full`
the words pass as they are. With the real go-task, through the SDK's client and a real
`start mcp`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, write_tree
from tests.mcp.conftest import connect
from tests.mcp.test_taskfile import needs_task, texts

pytestmark = [pytest.mark.anyio, needs_task]

# {{.CLI_ARGS}} as Taskfiles put it: bare, in single quotes and in double quotes, and the
# reported task, word for word. Each task first leaves a mark that it ran.
TASKFILE = """\
version: '3'

tasks:
  greet:
    desc: "Greets whoever args name."
    cmds:
      - touch ran
      - echo "Hello {{.CLI_ARGS}}"
    silent: true

  bare:
    desc: "Each word on a line of its own."
    cmds:
      - touch ran
      - printf '[%s]\\n' {{.CLI_ARGS}}
    silent: true

  single:
    desc: "The words in single quotes."
    cmds:
      - touch ran
      - printf '[%s]\\n' '{{.CLI_ARGS}}'
    silent: true

  double:
    desc: "The words in double quotes."
    cmds:
      - touch ran
      - printf '[%s]\\n' "{{.CLI_ARGS}}"
    silent: true
"""

CONTEXTS = ["greet", "bare", "single", "double"]


def rule(allowed: str = "'read-only' (settings.mcp_permissions by default)") -> str:
    """What a refusal says after the word and its character."""
    return (
        ". Below 'full' permissions a word may hold only ASCII letters, digits and any of "
        "`._-/:@%+,`, which no shell expands, bare or in the quotes a Taskfile puts around "
        f"{{{{.CLI_ARGS}}}}; the user allows {allowed}. Nothing ran. Pass only such words, or ask "
        "the user to raise settings.mcp_permissions to full, or to write the task so that it "
        "needs no such words"
    )


RULE = rule()

# args that would make a shell create MARK, or end the Taskfile's quotes, in one context or
# another; and the word and character each refusal names.
HOSTILE = [
    ("$(touch MARK)", "word 1 of args, '$(touch', holds '$'"),
    ("'$(touch MARK)'", "word 1 of args, '$(touch MARK)', holds '$'"),
    ("'`touch MARK`'", "word 1 of args, '`touch MARK`', holds '`'"),
    ("'x\"; touch MARK; echo \"'", "word 1 of args, 'x\"; touch MARK; echo \"', holds '\"'"),
    ("\"x'; touch MARK; echo '\"", 'word 1 of args, "x\'; touch MARK; echo \'", holds "\'"'),
    ("'x;touch MARK'", "word 1 of args, 'x;touch MARK', holds ';'"),
    ("'x|touch MARK'", "word 1 of args, 'x|touch MARK', holds '|'"),
    ("'x&&touch MARK'", "word 1 of args, 'x&&touch MARK', holds '&'"),
    ("'x>MARK'", "word 1 of args, 'x>MARK', holds '>'"),
    ("'a\\b'", "word 1 of args, 'a\\\\b', holds '\\\\'"),
    ("'a\ntouch MARK'", "word 1 of args, 'a\\ntouch MARK', holds '\\n' (U+000A)"),
    ("'a\tb'", "word 1 of args, 'a\\tb', holds '\\t' (U+0009)"),
    ("*", "word 1 of args, '*', holds '*'"),
    ("'?'", "word 1 of args, '?', holds '?'"),
    ("'[ab]'", "word 1 of args, '[ab]', holds '['"),
    ("~", "word 1 of args, '~', holds '~'"),
    ("'{a,b}'", "word 1 of args, '{a,b}', holds '{'"),
    ("'$HOME'", "word 1 of args, '$HOME', holds '$'"),
    ("'#x'", "word 1 of args, '#x', holds '#'"),
    ("'!x'", "word 1 of args, '!x', holds '!'"),
    ("'(x)'", "word 1 of args, '(x)', holds '('"),
    ("-count=1", "word 1 of args, '-count=1', holds '='"),
    ("José", "word 1 of args, 'José', holds 'é' (U+00E9)"),
    ("-v ok $(id)", "word 3 of args, '$(id)', holds '$'"),
    ("x" * 41 + "$", f"word 1 of args, {'x' * 40!r}..., holds '$'"),
]


@pytest.fixture
def project(global_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory with TASKFILE, trusted by path."""
    write_tree(isolated, {"Taskfile.yml": TASKFILE})
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    return isolated


def allow(global_dir: Path, level: str) -> None:
    """settings.mcp_permissions = LEVEL in the user's own config."""
    path = global_dir / "config.toml"
    text = path.read_text().replace("[settings]\n", f'[settings]\nmcp_permissions = "{level}"\n')
    path.write_text(text)


async def call(workdir: Path, mode: str, calls: list[tuple[str, str]]) -> list[Any]:
    async with connect(workdir, mode) as client:
        return [
            await client.call_tool("run_user_task", {"task_name": name, "args": args})
            for name, args in calls
        ]


async def test_the_reported_attack_is_refused_below_full(project: Path, mode: str) -> None:
    (result,) = await call(project, mode, [("greet", "$(id)")])
    assert (result.is_error, texts(result)) == (
        True,
        [f"refused: word 1 of args, '$(id)', holds '$'{RULE}"],
    )
    assert not (project / "ran").exists()


@pytest.mark.parametrize("context", CONTEXTS)
async def test_a_word_a_shell_could_expand_is_refused_below_full_and_nothing_runs(
    project: Path, mode: str, context: str
) -> None:
    results = await call(project, mode, [(context, args) for args, _ in HOSTILE])
    for result, (args, named) in zip(results, HOSTILE, strict=True):
        assert (result.is_error, texts(result)) == (True, [f"refused: {named}{RULE}"]), args
    assert sorted(os.listdir(project)) == ["GUIDE.md", "Taskfile.yml"]  # no MARK, nothing ran


async def test_at_edit_the_words_are_held_as_at_read_only(
    project: Path, global_dir: Path, mode: str
) -> None:
    allow(global_dir, "edit")
    path = global_dir / "config.toml"
    (result,) = await call(project, mode, [("greet", "$(touch MARK)")])
    assert texts(result) == [
        "refused: word 1 of args, '$(touch', holds '$'"
        + rule(f"'edit' (settings.mcp_permissions in {path})")
    ]
    assert not (project / "MARK").exists()
    assert not (project / "ran").exists()


# Every character the rule allows, alone, leading, inside and trailing a word; options; and
# the words go-task quotes though they hold none of those characters (empty, a shell keyword).
PLAIN_WORDS = [
    *"._-/:@%+,",
    "-v",
    "--count",
    "1",
    "a.b_c-d/e:f@g%h+i,j",
    ".a",
    "_a",
    "/a",
    ":a",
    "@a",
    "%a",
    "+a",
    ",a",
    "a.",
    "a/",
    "a:",
    "a@",
    "a%",
    "a+",
    "a,",
    "ABCxyz0123456789",
    "%s%%",
    "./..",
]


async def test_plain_words_arrive_intact_in_every_context(project: Path, mode: str) -> None:
    args = " ".join(PLAIN_WORDS)
    bare, single, double, greet = await call(
        project, mode, [(name, args) for name in ("bare", "single", "double", "greet")]
    )
    assert bare.structured_content is not None
    assert bare.structured_content["stdout"] == "".join(f"[{word}]\n" for word in PLAIN_WORDS)
    joined = " ".join(PLAIN_WORDS)
    for result in (single, double):
        assert result.structured_content is not None
        assert result.structured_content["stdout"] == f"[{joined}]\n"
    assert greet.structured_content is not None
    assert greet.structured_content["stdout"] == f"Hello {joined}\n"


async def test_an_empty_word_and_a_shell_keyword_pass_and_stay_text(
    project: Path, mode: str
) -> None:
    # go-task quotes both (''), which inside the Taskfile's double quotes arrive as text, and
    # inside its single quotes close and reopen them around nothing a shell expands.
    args = "'' if in -v"
    bare, single, double = await call(
        project, mode, [(name, args) for name in ("bare", "single", "double")]
    )
    outputs = [(r.structured_content or {}).get("stdout") for r in (bare, single, double)]
    assert outputs == ["[]\n[if]\n[in]\n[-v]\n", "[ if in -v]\n", "['' 'if' 'in' -v]\n"]


async def test_at_full_the_words_pass_as_they_are(
    project: Path, global_dir: Path, mode: str
) -> None:
    # The user allows callers a shell: then the Taskfile's quotes are the Taskfile's business.
    allow(global_dir, "full")
    greet, bare = await call(
        project, mode, [("greet", "'$(touch MARK)'"), ("bare", "'a b' '$(id)' * ~")]
    )
    assert (greet.is_error, (greet.structured_content or {}).get("stdout")) == (False, "Hello ''\n")
    assert (project / "MARK").exists()
    assert (bare.structured_content or {}).get("stdout") == "[a b]\n[$(id)]\n[*]\n[~]\n"


async def test_the_rule_is_in_the_instructions_and_the_schema(
    project: Path, global_dir: Path, mode: str
) -> None:
    async with connect(project, mode) as client:
        instructions = client.instructions or ""
        tools = (await client.list_tools()).tools
    schema = next(tool for tool in tools if tool.name == "run_user_task").input_schema
    assert instructions.endswith(
        " The project's Taskfile (Taskfile.yml, run by go-task) is offered too: list_user_tasks "
        "lists its tasks and run_user_task(task_name, args) runs one, with args in its "
        "{{.CLI_ARGS}} (each word of ASCII letters, digits and any of `._-/:@%+,` only, as the "
        "user allows 'read-only')."
    )
    assert schema["properties"]["args"]["description"].endswith(
        "Unless the user allows 'full' permissions, each word may hold only ASCII letters, "
        "digits and any of `._-/:@%+,`."
    )
    allow(global_dir, "full")
    async with connect(project, mode) as client:
        assert (client.instructions or "").endswith("with args in its {{.CLI_ARGS}}.")


def test_a_real_start_mcp_refuses_the_reported_attack(project: Path, anyio_backend: str) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    async def session() -> tuple[list[str], list[str]]:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp"], env=env, cwd=str(project)
        )
        async with Client(parameters, mode="legacy") as client:
            attack = await client.call_tool(
                "run_user_task", {"task_name": "greet", "args": "$(touch MARK)"}
            )
            plain = await client.call_tool("run_user_task", {"task_name": "greet", "args": "you"})
            return texts(attack), texts(plain)

    attack, plain = anyio.run(session)
    assert attack == [f"refused: word 1 of args, '$(touch', holds '$'{RULE}"]
    assert plain == ["Task 'greet' completed successfully. Output:\nHello you\nError Output:\n"]
    assert not (project / "MARK").exists()
