"""Shell completion: the scripts, and dynamic names, aliases and models that never run anything."""

from __future__ import annotations

import shlex
from pathlib import Path

import click
import pytest
from click.shell_completion import ShellComplete

from start.cli import cli, completers, completion
from start.cli.state import Options
from start.config import schema
from tests.conftest import invoke, run_start, write_tree

AGENTS = """\
[settings]
default_agent = "two"

[agents.one]
bin = "one"
command = "one {prompt}"
description = "The first agent"
[agents.one.models]
fast = "one-fast-1"
smart = "one-smart-2"

[agents.two]
bin = "two"
command = "two {prompt}"
[agents.two.models]
tiny = "two-tiny"

[tasks.hidden]
prompt = "p"
internal = true

[tasks.via-one]
agent = "one"
prompt = "p"
"""


def complete(line: str) -> list[tuple[str, str | None]]:
    """What the shell is offered for `line` (the word being completed is the last one)."""
    words = shlex.split(line)
    incomplete = "" if line.endswith(" ") else words.pop()
    found = ShellComplete(cli, {"obj": Options()}, "start", completion.COMPLETE_VAR)
    return [(item.value, item.help) for item in found.get_completions(words[1:], incomplete)]


def values(line: str) -> list[str]:
    return [value for value, _ in complete(line)]


@pytest.fixture
def agents(isolated: Path) -> None:
    write_tree(isolated.parent / "home/.config/start", {"config.toml": AGENTS})


def test_commands() -> None:
    assert {"completion", "config", "task", "prompt"} <= set(values("start "))


def test_tasks_and_aliases_with_descriptions() -> None:
    assert complete("start task g") == [
        ("git-diff-review", "Review the staged git diff"),
        ("gate", "Review the staged git diff: a verdict that blocks the commit, and the findings"),
        ("gdr", "alias of git-diff-review: Review the staged git diff"),
    ]


def test_internal_tasks_are_not_offered(agents: None) -> None:
    assert "hidden" not in values("start task ")
    assert "via-one" in values("start task ")


def test_roles_and_agents(agents: None) -> None:
    assert complete("start --role code") == [
        ("code-reviewer", "Reviews changes for correctness, security and maintainability")
    ]
    assert ("one", "The first agent") in complete("start task gdr -a ")
    assert "two" in values("start prompt --agent t")


def test_models_of_the_agent_on_the_command_line(agents: None) -> None:
    assert complete("start -a one -m ") == [("fast", "one-fast-1"), ("smart", "one-smart-2")]
    assert values("start task gdr --agent one --model s") == ["smart"]


def test_models_of_the_default_agent(agents: None) -> None:
    assert complete("start -m ") == [("tiny", "two-tiny")]


def test_models_of_the_tasks_agent(agents: None) -> None:
    assert values("start task via-one -m ") == ["fast", "smart"]


def test_models_of_the_agent_given_to_config_add(agents: None) -> None:
    assert values("start config add task t --agent one --model ") == ["fast", "smart"]


def test_no_models_for_an_unknown_agent(agents: None) -> None:
    assert values("start -a nobody -m ") == []


def test_contexts(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": '[contexts.docs]\nfile = "x"\ndescription = "D"\n'})
    with click.Context(cli, obj=Options()) as ctx:
        found = completers.complete_contexts(ctx, ctx.command.params[0], "d")
    assert [(i.value, i.help) for i in found] == [("docs", "D")]


def test_settings_and_their_values() -> None:
    assert values("start config set ") == list(schema.SETTINGS)
    assert "shell" in values("start config unset s")
    assert values("start config set default_role doc") == ["documentation-writer"]
    assert values("start config set shell ") == []


def test_names_to_remove_come_from_the_layer_being_edited(isolated: Path) -> None:
    write_tree(
        isolated.parent / "home/.config/start", {"config.toml": '[tasks.mine]\nprompt = "p"\n'}
    )
    write_tree(isolated, {".start/config.toml": '[tasks.ours]\nprompt = "p"\n'})
    assert values("start config remove task ") == ["mine"]
    assert values("start config remove --project task ") == ["ours"]
    assert "git-diff-review" in values("start config add task ")
    assert "mine" not in values("start config add task ")


def test_completion_in_a_subprocess_with_descriptions() -> None:
    env = {"_START_COMPLETE": "zsh_complete", "COMP_WORDS": "start task gd", "COMP_CWORD": "2"}
    result = run_start(env=env)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == ("plain\ngdr\nalias of git-diff-review: Review the staged git diff\n")
    env = {"_START_COMPLETE": "bash_complete", "COMP_WORDS": "start task gd", "COMP_CWORD": "2"}
    assert run_start(env=env).stdout == "plain,gdr\n"
    env = {"_START_COMPLETE": "fish_complete", "COMP_WORDS": "start task gd", "COMP_CWORD": "gd"}
    assert run_start(env=env).stdout == (
        "plain,gdr\talias of git-diff-review: Review the staged git diff\n"
    )


def test_completion_is_safe_in_an_untrusted_project(isolated: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    evil = f'command = "touch {canary}"\nprompt = "{{command_output}}"\n'
    write_tree(
        isolated,
        {
            ".start/config.toml": (
                f'[settings]\nshell = "touch {canary}; sh"\n\n'
                f"[contexts.evil]\nrequired = true\n{evil}\n"
                f"[roles.evil]\n{evil}\n"
                f"[tasks.evil]\n{evil}\n"
                '[agents.evil]\nbin = "./evil"\ncommand = "./evil {prompt}"\n'
                '[agents.evil.models]\nm = "m"\n'
            )
        },
    )
    env = {"VISUAL": f"touch {canary}", "EDITOR": f"touch {canary}"}
    for line in (
        "start task ",
        "start -r ",
        "start -a evil -m ",
        "start config edit ",
        "start config remove --project context ",
        "start config set default_agent ",
    ):
        words = line.split()
        env.update(_START_COMPLETE="bash_complete", COMP_WORDS=line, COMP_CWORD=str(len(words)))
        result = run_start(env=env, cwd=isolated)
        assert (result.returncode, result.stderr) == (0, "")
    assert not canary.exists()
    env.update(_START_COMPLETE="bash_complete", COMP_WORDS="start task e", COMP_CWORD="2")
    assert run_start(env=env, cwd=isolated).stdout == "plain,evil\n"
    assert not canary.exists()


def test_completion_after_an_unknown_command_offers_nothing() -> None:
    env = {"_START_COMPLETE": "bash_complete", "COMP_WORDS": "start nosuch x", "COMP_CWORD": "2"}
    result = run_start(env=env)
    assert (result.returncode, result.stdout, result.stderr) == (0, "\n", "")


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "_START_COMPLETE=bash_complete"),
        ("zsh", "#compdef start"),
        ("fish", "complete --no-files --command start"),
    ],
)
def test_completion_prints_the_script(shell: str, marker: str) -> None:
    result = invoke("completion", shell)
    assert (result.exit_code, result.stderr) == (0, "")
    assert marker in result.stdout
    assert result.stdout.endswith("\n")


def test_completion_rejects_other_shells() -> None:
    result = invoke("completion", "tcsh")
    assert result.exit_code == 2
    assert result.stderr == (
        "start: unknown shell 'tcsh'; choose from bash, zsh, fish\n"
        "hint: run 'start completion --help' for usage\n"
    )


def test_a_task_added_by_config_add_is_offered(isolated: Path) -> None:
    write_tree(isolated.parent / "home/.config/start", {"config.toml": "# mine\n"})
    invoke("config", "add", "task", "lint", "--prompt", "Lint {instructions}", "--alias", "li")
    assert complete("start task li") == [("lint", None), ("li", "alias of lint")]
