"""`start config set | unset | add | remove` through the real command line (`edit`:
tests/cli/test_config_editor.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from start.base import paths
from start.cli import config_edit
from tests.conftest import invoke, write_tree

MINE = """\
# My start config.

[settings]
shell = "bash"  # the shell I use

# Reviews the staged diff.
[tasks.review]
prompt = "Review: {instructions}"
"""


@pytest.fixture
def global_dir(isolated: Path) -> Path:
    return isolated.parent / "home" / ".config" / "start"


@pytest.fixture
def config_file(global_dir: Path) -> Path:
    write_tree(global_dir, {"config.toml": MINE})
    return global_dir / "config.toml"


@pytest.fixture
def tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config_edit, "interactive", lambda: True)


# --- set and unset --------------------------------------------------------------------------------


def test_set_changes_a_setting_and_keeps_its_comment(config_file: Path) -> None:
    result = invoke("config", "set", "shell", "zsh")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == f'Set shell = "zsh" ({config_file})\n'
    assert config_file.read_text() == MINE.replace('"bash"', '"zsh"')


def test_set_parses_integers(config_file: Path) -> None:
    result = invoke("config", "set", "command_timeout", "12")
    assert result.stderr == f"Set command_timeout = 12 ({config_file})\n"
    assert config_file.read_text() == MINE.replace(
        "the shell I use\n", "the shell I use\ncommand_timeout = 12\n"
    )


def test_set_takes_a_taskfile_timeout_in_seconds(config_file: Path) -> None:
    result = invoke("config", "set", "taskfile_timeout", "1800")
    assert result.stderr == f"Set taskfile_timeout = 1800 ({config_file})\n"
    refused = invoke("config", "set", "taskfile_timeout", "0")
    assert (refused.exit_code, refused.stderr) == (
        2,
        "start: taskfile_timeout must be a whole number of seconds from 1 to 86400 (a day), "
        "not 0\n",
    )


def test_set_the_same_value_writes_nothing(config_file: Path) -> None:
    result = invoke("config", "set", "shell", "bash")
    assert (result.exit_code, result.stderr) == (
        0,
        f'Already set: shell = "bash" ({config_file})\n',
    )


def test_set_rejects_a_value_of_the_wrong_type(config_file: Path) -> None:
    result = invoke("config", "set", "command_timeout", "soon")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: command_timeout must be a whole number of seconds from 1 to 86400 (a day), not 'soon'\n",
    )
    assert config_file.read_text() == MINE


def test_set_rejects_an_unknown_key(config_file: Path) -> None:
    result = invoke("config", "set", "default-agent", "x")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: unknown setting 'default-agent'; did you mean 'default_agent'?\n",
    )


def test_a_setting_may_be_named_in_its_table_as_the_file_spells_it(config_file: Path) -> None:
    result = invoke("config", "set", "settings.command_timeout", "10")
    assert (result.exit_code, result.stderr) == (0, f"Set command_timeout = 10 ({config_file})\n")
    assert config_file.read_text() == MINE.replace(
        "the shell I use\n", "the shell I use\ncommand_timeout = 10\n"
    )
    result = invoke("config", "unset", "settings.command_timeout")
    assert (result.exit_code, result.stderr) == (0, f"Unset command_timeout ({config_file})\n")
    assert config_file.read_text() == MINE
    for key, named in (
        ("setting.command_timeout", "setting.command_timeout"),
        ("settings.command_timout", "command_timout"),
    ):
        wrong = invoke("config", "set", key, "10")
        assert (wrong.exit_code, wrong.stderr) == (
            2,
            f"start: unknown setting '{named}'; did you mean 'command_timeout'?\n",
        )


def test_set_refuses_a_reference_to_nothing(config_file: Path) -> None:
    result = invoke("config", "set", "default_role", "revewer")
    assert result.exit_code == 3
    assert result.stderr == (
        f"start: refused: the change would make the config invalid, so {config_file} was not "
        "changed\n"
        f"  {config_file}\n"
        "    5:1: error: settings.default_role: role 'revewer' is not defined "
        "(did you mean 'code-reviewer'?)\n"
        "Run 'start config validate' to see every problem.\n"
    )
    assert config_file.read_text() == MINE


def test_set_project_writes_the_projects_config(isolated: Path, config_file: Path) -> None:
    result = invoke("config", "set", "--project", "command_timeout", "5")
    path = isolated / ".start" / "config.toml"
    assert (result.exit_code, result.stderr) == (0, f"Set command_timeout = 5 ({path})\n")
    assert path.read_text() == "[settings]\ncommand_timeout = 5\n"
    assert config_file.read_text() == MINE


def test_project_and_no_project_contradict(isolated: Path) -> None:
    result = invoke("config", "set", "--project", "--no-project", "shell", "sh")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: --project edits the project's config, so it cannot be used with --no-project\n",
    )


def test_local_is_the_unlisted_old_name_of_project(isolated: Path, config_file: Path) -> None:
    result = invoke("config", "set", "--local", "command_timeout", "5")
    path = isolated / ".start" / "config.toml"
    assert (result.exit_code, result.stderr) == (0, f"Set command_timeout = 5 ({path})\n")
    assert path.read_text() == "[settings]\ncommand_timeout = 5\n"
    assert config_file.read_text() == MINE
    shown = invoke("config", "show", "--local", "--json")
    assert shown.stdout == invoke("config", "show", "--project", "--json").stdout
    assert json.loads(shown.stdout)["settings"]["command_timeout"]["value"] == 5
    for command in ("set", "unset", "add", "remove", "edit", "show"):
        listed = invoke("config", command, "--help").stdout
        assert ("--project" in listed, "--local" in listed) == (True, False), command
    listed = invoke("init", "--help").stdout
    assert ("--project" in listed, "--local" in listed) == (True, False)


def test_unset_removes_the_key_only(config_file: Path) -> None:
    result = invoke("config", "unset", "shell")
    assert (result.exit_code, result.stderr) == (0, f"Unset shell ({config_file})\n")
    assert config_file.read_text() == MINE.replace('shell = "bash"  # the shell I use\n', "")
    again = invoke("config", "unset", "shell")
    assert (again.exit_code, again.stderr) == (
        0,
        f"shell is not set in the global config ({config_file})\n",
    )


def test_unset_takes_the_dotted_keys_that_set_takes(config_file: Path) -> None:
    agent = (
        '\n# Mine.\n[agents.mine]\nbin = "mine"  # on PATH\ncommand = "mine {prompt}"\n'
        'default_model = "fast"\n\n[agents.mine.models]\nfast = "mine-1"\nbig = "mine-2"\n'
    )
    config_file.write_text(MINE + agent)
    result = invoke("config", "unset", "agents.mine.default_model")
    assert (result.exit_code, result.stderr) == (
        0,
        f"Unset agents.mine.default_model ({config_file})\n",
    )
    assert config_file.read_text() == MINE + agent.replace('default_model = "fast"\n', "")
    assert invoke("config", "unset", "agent.mine.models.fast").exit_code == 0
    assert invoke("config", "unset", "agents.mine.models.big").exit_code == 0
    assert config_file.read_text() == MINE + (
        '\n# Mine.\n[agents.mine]\nbin = "mine"  # on PATH\ncommand = "mine {prompt}"\n\n'
    )
    again = invoke("config", "unset", "agents.mine.default_model")
    assert (again.exit_code, again.stderr) == (
        0,
        f"agents.mine.default_model is not set in the global config ({config_file})\n",
    )
    refused = invoke("config", "unset", "agents.mine.command")
    assert (refused.exit_code, refused.stderr) == (
        3,
        f"start: refused: the change would make the config invalid, so {config_file} was not "
        f"changed\n  {config_file}\n    11:1: error: agents.mine: missing required field "
        "'command'\nRun 'start config validate' to see every problem.\n",
    )
    wrong = invoke("config", "unset", "agents.mine.comand")
    assert (wrong.exit_code, wrong.stderr) == (
        2,
        "start: unknown field 'comand' of agent 'mine'; did you mean 'command'?\n",
    )


def test_json_reports_the_file_and_the_change(config_file: Path) -> None:
    result = invoke("config", "set", "shell", "zsh", "--json")
    assert json.loads(result.stdout) == {"file": str(config_file), "changed": True, "problems": []}
    assert result.stderr == ""


# --- add ------------------------------------------------------------------------------------------


def test_add_task_disturbs_no_comment(config_file: Path) -> None:
    result = invoke(
        "config", "add", "task", "diff", "--alias", "d", "--description", "Review the diff",
        "--role", "code-reviewer", "--command", "git diff", "--prompt",
        "Review:\n{command_output}\n",
    )  # fmt: skip
    assert (result.exit_code, result.stderr) == (0, f"Added task 'diff' ({config_file})\n")
    assert config_file.read_text() == MINE + (
        "\n[tasks.diff]\n"
        'alias = "d"\n'
        'description = "Review the diff"\n'
        'role = "code-reviewer"\n'
        'command = "git diff"\n'
        "prompt = '''\nReview:\n{command_output}\n'''\n"
    )


def test_add_agent_with_models(config_file: Path) -> None:
    result = invoke(
        "config", "add", "agent", "mine", "--bin", "mine", "--command", "mine -m {model} {prompt}",
        "--model-alias", "fast=mine-1", "--model-alias", "big=mine-2", "--default-model", "fast",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert config_file.read_text() == MINE + (
        '\n[agents.mine]\nbin = "mine"\ncommand = "mine -m {model} {prompt}"\n'
        'default_model = "fast"\n\n[agents.mine.models]\nfast = "mine-1"\nbig = "mine-2"\n'
    )


def test_add_agent_with_a_level_that_needs_no_option(config_file: Path) -> None:
    """llm's headless form: read-only is what it does without any option."""
    result = invoke(
        "config", "add", "agent", "echo", "--bin", "llm", "--command", "{bin} {prompt}",
        "--print-command", "{bin} prompt {args} {prompt}", "--print-output", "text",
        "--print-permission", "read-only=",
    )  # fmt: skip
    assert (result.exit_code, result.stderr) == (0, f"Added agent 'echo' ({config_file})\n")
    assert config_file.read_text() == MINE + (
        '\n[agents.echo]\nbin = "llm"\ncommand = "{bin} {prompt}"\n'
        'print_command = "{bin} prompt {args} {prompt}"\nprint_output = "text"\n\n'
        '[agents.echo.print_permissions]\nread-only = ""\n'
    )
    result = invoke(
        "config", "add", "agent", "a", "--bin", "a", "--command", "a", "--print-permission", "="
    )
    assert (result.exit_code, result.stderr) == (
        2,
        "start: --print-permission takes LEVEL=OPTIONS, such as edit=--yes (read-only= when a "
        "level needs no option); got '='\n",
    )


def test_add_context_flags(config_file: Path) -> None:
    result = invoke("config", "add", "context", "docs", "--file", "README.md", "--required")
    assert result.exit_code == 0, result.stderr
    assert config_file.read_text().endswith(
        '\n[contexts.docs]\nrequired = true\nfile = "README.md"\n'
    )


def test_add_reads_the_prompt_from_stdin(config_file: Path) -> None:
    result = invoke("config", "add", "role", "terse", "--prompt", "-", stdin="Be brief.\nVery.\n")
    assert result.exit_code == 0, result.stderr
    assert config_file.read_text().endswith(
        "\n[roles.terse]\nprompt = '''\nBe brief.\nVery.\n'''\n"
    )


def test_add_refuses_an_empty_prompt_from_stdin(config_file: Path) -> None:
    for empty in ("", "\n  \n"):
        result = invoke("config", "add", "role", "terse", "--prompt", "-", stdin=empty)
        assert (result.exit_code, result.stderr) == (
            2,
            "start: --prompt - read nothing from stdin, and a role with an empty prompt says "
            "nothing; pipe the text in (cat prompt.md | start config add role terse --prompt -), "
            "or give --prompt TEXT\n",
        )
    assert config_file.read_text() == MINE


def test_add_rejects_flags_of_another_kind(config_file: Path) -> None:
    result = invoke("config", "add", "role", "r", "--prompt", "p", "--bin", "x", "--required")
    assert result.exit_code == 2
    assert result.stderr == (
        "start: --bin, --required: not a field of a role; a role takes --description, --file, "
        "--command, --prompt, --shell, --command-timeout\n"
    )


def test_add_without_a_terminal_names_the_missing_flags(config_file: Path) -> None:
    result = invoke("config", "add", "task", "t", "--alias", "x")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: a task needs at least one of --file, --command or --prompt\n",
    )
    result = invoke("config", "add", "agent", "a", "--bin", "a")
    assert (result.exit_code, result.stderr) == (2, "start: an agent needs --command\n")
    assert config_file.read_text() == MINE


def test_add_on_a_terminal_asks_for_missing_fields(config_file: Path, tty: None) -> None:
    result = invoke("config", "add", "agent", "a", stdin="a-cli\na-cli {prompt}\n")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        f"Bin: a-cli\nCommand: a-cli {{prompt}}\nAdded agent 'a' ({config_file})\n"
    )
    assert config_file.read_text().endswith(
        '\n[agents.a]\nbin = "a-cli"\ncommand = "a-cli {prompt}"\n'
    )


def test_add_rejects_a_bad_model_alias(config_file: Path) -> None:
    result = invoke(
        "config", "add", "agent", "a", "--bin", "a", "--command", "a", "--model-alias", "x"
    )
    assert (result.exit_code, result.stderr) == (
        2,
        "start: --model-alias takes ALIAS=ID, such as fast=model-id-1; got 'x'\n",
    )


def test_add_refuses_an_invalid_item(config_file: Path) -> None:
    result = invoke("config", "add", "task", "Bad_Name", "--prompt", "p", "--role", "nobody")
    assert result.exit_code == 3
    assert result.stderr == (
        f"start: refused: the change would make the config invalid, so {config_file} was not "
        "changed\n"
        f"  {config_file}\n"
        "    10:1: error: tasks.Bad_Name: invalid task name 'Bad_Name': use lowercase "
        "letters and digits in words joined by single hyphens, such as 'code-review'\n"
        "    11:1: error: tasks.Bad_Name.role: role 'nobody' is not defined; defined "
        "roles: pair-programmer, code-reviewer, documentation-writer\n"
        "Run 'start config validate' to see every problem.\n"
    )


def test_add_reports_new_warnings(config_file: Path) -> None:
    result = invoke("config", "add", "task", "t", "--prompt", "{banana}")
    assert result.exit_code == 0
    assert result.stderr == (
        f"Added task 't' ({config_file})\n"
        f"{config_file}:11:11: warning: tasks.t.prompt: unknown placeholder {{banana}} is kept "
        "as literal text; write {{banana}} to silence this\n"
    )


# --- remove ---------------------------------------------------------------------------------------


def test_remove_without_a_terminal_needs_yes(config_file: Path) -> None:
    result = invoke("config", "remove", "task", "review")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: not removing task 'review' without confirmation; pass --yes\n",
    )
    assert config_file.read_text() == MINE


def test_remove_yes_removes_the_item_and_its_comment(config_file: Path) -> None:
    result = invoke("config", "remove", "task", "review", "--yes")
    assert (result.exit_code, result.stderr) == (0, f"Removed task 'review' ({config_file})\n")
    assert config_file.read_text() == MINE.split("\n# Reviews")[0]


def test_remove_asks_on_a_terminal(config_file: Path, tty: None) -> None:
    result = invoke("config", "remove", "task", "review", stdin="n\n")
    assert (result.exit_code, result.stderr) == (
        1,
        f"Remove task 'review' from {config_file}? [y/N]: n\nNothing was removed.\n",
    )
    assert config_file.read_text() == MINE
    result = invoke("config", "remove", "task", "review", stdin="y\n")
    assert result.exit_code == 0
    assert "[tasks.review]" not in config_file.read_text()


def test_remove_what_the_layer_does_not_have(config_file: Path) -> None:
    result = invoke("config", "remove", "role", "code-reviewer")
    shipped = Path(paths.builtin_config_dir()) / "roles.toml"
    assert (result.exit_code, result.stderr) == (
        4,
        "start: role 'code-reviewer' is not defined in the global config; it is defined in the "
        f"built-in layer ({shipped}); a built-in one cannot be removed, but one you add with its "
        "name wins\n",
    )
    result = invoke("config", "remove", "task", "reveiw", "--yes")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: task 'reveiw' is not defined in the global config; did you mean 'review'?\n",
    )


def test_remove_refuses_to_break_a_reference(config_file: Path) -> None:
    write_tree(config_file.parent, {"roles.toml": '[roles.mine]\nprompt = "me"\n'})
    invoke("config", "add", "task", "t", "--prompt", "p", "--role", "mine")
    result = invoke("config", "remove", "role", "mine", "--yes")
    assert result.exit_code == 3
    assert result.stderr.splitlines()[1:3] == [
        f"  {config_file}",
        "    11:1: error: tasks.t.role: role 'mine' is not defined; defined roles: "
        "pair-programmer, code-reviewer, documentation-writer",
    ]
    assert (config_file.parent / "roles.toml").read_text() == '[roles.mine]\nprompt = "me"\n'


def test_trusted_paths_set_globally_and_refused_locally(isolated: Path) -> None:

    result = invoke("config", "set", "trusted_paths", f"/srv/a{os.pathsep}~/work")
    assert result.exit_code == 0, result.stderr
    text = (isolated.parent / "home" / ".config" / "start" / "config.toml").read_text()
    assert 'trusted_paths = ["/srv/a", "~/work"]' in text
    result = invoke("config", "set", "--project", "trusted_paths", "/srv/a")
    assert result.exit_code == 2
    assert "trusted_paths cannot be set in project config" in result.stderr


# --- a field of an item, copied from a lower layer first --------------------------------------


def _builtin_agents() -> Path:
    return Path(paths.builtin_config_dir()) / "agents.toml"


def _load_agent(name: str) -> object:
    from start.config.load import load

    return load(str(Path.cwd())).agents[name]


def test_set_a_field_of_a_built_in_agent_copies_it_with_its_comments(config_file: Path) -> None:
    """`start init` picked llm; llm-echo needs `-m echo`: one command, not a whole new agent."""
    from start.config.splice import Layout

    result = invoke("config", "set", "agents.llm.default_model", "echo")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (
        "Copied agent 'llm' from the built-in config, with its comments (your copy replaces "
        "it whole):\n"
        f"  from {_builtin_agents()}\n"
        f"  into {config_file}\n"
        f'Set agents.llm.default_model = "echo" ({config_file})\n'
    )
    builtin = _builtin_agents().read_text()
    layout = Layout(builtin)
    span = layout.item_span("agents", "llm")
    assert span is not None
    block = "".join(layout.lines[span[0] : span[1]]).rstrip("\n") + "\n"
    # The built-in entry, comments and all, with the one field added to its own table.
    own, models, rest = block.partition("\n\n[agents.llm.")
    expected = own + '\ndefault_model = "echo"' + models + rest
    assert config_file.read_text() == MINE + "\n" + expected
    agent = _load_agent("llm")
    assert (agent.default_model, agent.origin.layer) == ("echo", "global")  # type: ignore[attr-defined]
    # Now the global layer has it: the next field is set there, with nothing copied.
    again = invoke("config", "set", "agent.llm.models.fast", "fast-1")
    assert again.stderr == f'Set agent.llm.models.fast = "fast-1" ({config_file})\n'
    models = _load_agent("llm").models  # type: ignore[attr-defined]
    assert (models["echo"], models["fast"]) == ("echo", "fast-1")


def test_add_on_a_built_in_item_copies_it_then_sets_the_fields(config_file: Path) -> None:
    result = invoke("config", "add", "agent", "llm", "--default-model", "echo", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {
        "file": str(config_file),
        "changed": True,
        "problems": [],
        "copied": {"layer": "built-in", "file": str(_builtin_agents())},
    }
    agent = _load_agent("llm")
    assert (agent.default_model, agent.bin) == ("echo", "llm")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("key", "value", "code", "message"),
    [
        (
            "agents.llm.default_mdl",
            "echo",
            2,
            "start: unknown field 'default_mdl' of agent 'llm'; did you mean 'default_model'?\n",
        ),
        (
            "agents.lml.default_model",
            "echo",
            4,
            "start: unknown agent 'lml'; did you mean 'llm'?\n",
        ),
        (
            "agents.zzz.default_model",
            "echo",
            4,
            "start: unknown agent 'zzz'; to define a new one, run 'start config add agent zzz ...'\n",
        ),
        (
            "agents.llm.models",
            "echo",
            2,
            "start: 'agents.llm.models' is not a field to set; use agents.llm.models.KEY\n",
        ),
        (
            "agents.llm.default_model",
            "nope",
            3,
            None,
        ),
    ],
)
def test_set_a_field_errors(
    config_file: Path, key: str, value: str, code: int, message: str | None
) -> None:
    result = invoke("config", "set", key, value)
    assert result.exit_code == code
    if message is not None:
        assert result.stderr == message
    assert config_file.read_text() == MINE


def test_a_field_of_a_project_item_is_not_set_in_the_global_config(
    config_file: Path, isolated: Path
) -> None:
    write_tree(isolated, {".start/tasks.toml": '[tasks.mine]\nprompt = "p"\n'})
    result = invoke("config", "set", "tasks.mine.description", "x")
    assert (result.exit_code, result.stderr) == (
        4,
        f"start: task 'mine' is defined in the project layer ({isolated / '.start' / 'tasks.toml'})"
        ", which the global config cannot change; use --project to edit the project's config\n",
    )


def test_a_project_may_only_turn_the_history_off(isolated: Path) -> None:
    (isolated / ".start").mkdir()
    result = invoke("config", "set", "--project", "history", "false")
    assert result.exit_code == 0, result.stderr
    assert "history = false" in (isolated / ".start" / "config.toml").read_text()
    for key, value in (("history", "true"), ("history_size_limit", "5")):
        result = invoke("config", "set", "--project", key, value)
        assert (result.exit_code, result.stderr) == (
            2,
            f"start: {key} = {value} cannot be set in project config: the history is yours, "
            "and a project may only turn it off (history = false). Set it in your global "
            "config (without --project).\n",
        )
