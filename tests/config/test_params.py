"""Task parameters: declaration and validation, `-p NAME=VALUE`, placeholders, and the variables a
task's command gets (byte-exact through a real /bin/sh, whatever the value)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from start.base.errors import UsageError
from start.config import params
from start.config.load import load
from start.config.model import Origin, Param, Task
from start.proc.shell import CommandSpec, run_all
from tests.conftest import FAKE_AGENT, invoke, problems, run_start, write_tree

# --- declaring parameters in TOML ----------------------------------------------------------


def test_a_task_declares_parameters_with_defaults_and_descriptions(conf: Path) -> None:
    conf.write_text(
        '[tasks.review]\nprompt = "Focus on {focus}, {depth} deep."\n'
        "[tasks.review.params]\n"
        'focus = { default = "security", description = "What to look at" }\n'
        "depth = {}\n"
    )
    config = load()
    assert config.problems == ()
    assert config.tasks["review"].params == (
        Param("focus", "security", "What to look at"),
        Param("depth", None, None),
    )


def test_the_sub_table_spelling_is_the_same(conf: Path) -> None:
    conf.write_text(
        '[tasks.review]\nprompt = "{focus}"\n[tasks.review.params.focus]\ndefault = "x"\n'
    )
    assert load().tasks["review"].params == (Param("focus", "x", None),)


PARAM_CASES = [
    pytest.param(
        '[tasks.t]\nprompt = "p"\nparams = "x"\n',
        [
            'error: 3:1: tasks.t.params: must be a table of parameters, such as [tasks.NAME.params] focus = { default = "security", description = "..." }, not a string'
        ],
        id="params-not-a-table",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\n[tasks.t.params]\nFocus-Area = {}\n',
        [
            "error: 4:1: tasks.t.params.Focus-Area: invalid parameter name 'Focus-Area': use lowercase letters, digits and underscores, starting with a letter, such as 'focus_area' (a parameter is the placeholder {focus_area})"
        ],
        id="name-with-a-hyphen",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\n[tasks.t.params]\n2nd = {}\n',
        [
            "error: 4:1: tasks.t.params.2nd: invalid parameter name '2nd': use lowercase letters, digits and underscores, starting with a letter, such as 'p_2nd' (a parameter is the placeholder {p_2nd})"
        ],
        id="name-starting-with-a-digit",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "{file}"\nfile = "f"\n[tasks.t.params]\nfile = {}\n',
        [
            "error: 5:1: tasks.t.params.file: parameter 'file' would shadow the built-in placeholder {file}; choose another name"
        ],
        id="shadows-a-placeholder",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\n[tasks.t.params]\ninstructions = {}\n',
        [
            "error: 4:1: tasks.t.params.instructions: parameter 'instructions' would shadow the built-in placeholder {instructions}; choose another name"
        ],
        id="shadows-instructions",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "p"\n[tasks.t.params]\ntask_name = {}\n',
        [
            "error: 4:1: tasks.t.params.task_name: parameter 'task_name' is reserved: start mcp's run_task tool names the task with it; choose another name"
        ],
        id="reserved-for-run-task",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "{focus}"\n[tasks.t.params]\nfocus = "security"\n',
        [
            'error: 4:1: tasks.t.params.focus: must be a table, such as focus = { default = "...", description = "..." } (or focus = {} for a parameter that must be given), not a string'
        ],
        id="bare-string",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "{n}"\n[tasks.t.params]\nn = { default = 3 }\n',
        [
            'error: 4:1: tasks.t.params.n.default: must be a string, not an integer; write it in quotes: default = "3"'
        ],
        id="default-a-number",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "{n}"\n[tasks.t.params]\nn = { default = "x", descripton = "d" }\n',
        [
            "warning: 4:1: tasks.t.params.n.descripton: unknown key 'descripton' (did you mean 'description'?)"
        ],
        id="unknown-key",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "{focs}"\n[tasks.t.params]\nfocus = {}\n',
        [
            "error: 2:11: tasks.t.prompt: unknown placeholder {focs} (did you mean '{focus}'?)",
            "warning: 4:1: tasks.t.params.focus: parameter 'focus' is never used: put {focus} in the prompt, or $START_PARAM_FOCUS in the command",
        ],
        id="near-miss-of-a-parameter",
    ),
    pytest.param(
        '[tasks.t]\nprompt = "{focus}"\n',
        [
            "warning: 2:11: tasks.t.prompt: unknown placeholder {focus} is kept as literal text; write {{focus}} to silence this"
        ],
        id="undeclared-parameter",
    ),
    pytest.param(
        '[tasks.t]\ncommand = "git log --grep={focus}"\nprompt = "{command_output}"\n'
        "[tasks.t.params]\nfocus = {}\n",
        [
            'warning: 2:27: tasks.t.command: {focus} is not filled in a command, which is never a template; use "$START_PARAM_FOCUS" (the shell reads it, whatever the value holds)',
            "warning: 5:1: tasks.t.params.focus: parameter 'focus' is never used: put {focus} in the prompt, or $START_PARAM_FOCUS in the command",
        ],
        id="placeholder-in-a-command",
    ),
    pytest.param(
        '[tasks.t]\ncommand = "echo {instructions}"\nprompt = "{command_output}"\n',
        [
            'warning: 2:17: tasks.t.command: {instructions} is not filled in a command, which is never a template; use "$START_INSTRUCTIONS" (the shell reads it, whatever the value holds)'
        ],
        id="instructions-in-a-command",
    ),
    pytest.param(
        '[tasks.t]\ncommand = "echo ${focus:-x} \\"$START_PARAM_FOCUS\\""\n'
        'prompt = "{command_output}"\n[tasks.t.params]\nfocus = {}\n',
        [],
        id="the-shell's-own-braces-and-the-variable",
    ),
]


@pytest.mark.parametrize(("text", "expected"), PARAM_CASES)
def test_parameter_validation(conf: Path, text: str, expected: list[str]) -> None:
    assert problems(conf, text) == expected


def test_a_task_file_template_is_checked_by_config_validate(conf: Path, isolated: Path) -> None:
    (isolated / "t.md").write_text("Focus on {focs}; {focus} and {instructions}.\n")
    conf.write_text(
        f'[tasks.t]\nfile = "{isolated / "t.md"}"\n[tasks.t.params]\nfocus = {{}}\ndepth = {{}}\n'
    )
    result = invoke("config", "validate", "--json")
    assert result.exit_code == 0
    found = [
        (p["severity"], p["key"], p["message"], p["suggestion"]) for p in json.loads(result.stdout)
    ]
    assert found == [
        (
            "warning",
            "tasks.t.file",
            f"{isolated / 't.md'}: unknown placeholder {{focs}}",
            "{focus}",
        ),
        (
            "warning",
            "tasks.t.params.depth",
            f"parameter 'depth' is never used: put {{depth}} in {isolated / 't.md'}, or "
            "$START_PARAM_DEPTH in the command",
            None,
        ),
    ]


def test_validate_reads_no_project_task_file_outside_the_root(
    conf: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An untrusted project cannot make validate read (and name placeholders of) your files."""
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    outside = isolated.parent / "outside.md"
    outside.write_text("{secret_word}")
    (isolated / "link.md").symlink_to(outside)
    write_tree(
        isolated,
        {
            ".start/tasks.toml": f'[tasks.a]\nfile = "{outside}"\n[tasks.b]\nfile = "link.md"\n',
        },
    )
    result = invoke("config", "validate", "--json")
    assert "secret_word" not in result.stdout


# --- declaring parameters in code ----------------------------------------------------------


def test_parameters_can_be_declared_in_code_by_the_same_rules() -> None:
    assert params.declare([("focus", "security", "What"), ("depth", None, None)]) == (
        Param("focus", "security", "What"),
        Param("depth", None, None),
    )
    with pytest.raises(params.ParamError) as bad:
        params.declare([("Focus", None, None)])
    assert str(bad.value).startswith("invalid parameter name 'Focus'")
    with pytest.raises(params.ParamError) as twice:
        params.declare([("a", None, None), ("a", "x", None)])
    assert str(twice.value) == "parameter 'a' is declared twice"
    with pytest.raises(params.ParamError) as shadow:
        params.declare([("date", None, None)])
    assert str(shadow.value) == (
        "parameter 'date' would shadow the built-in placeholder {date}; choose another name"
    )


# --- binding -p NAME=VALUE -----------------------------------------------------------------

TASK = Task(
    "review",
    Origin("global", "/c.toml"),
    prompt="p",
    params=(Param("focus", "security", "What to look at"), Param("depth", None, "How deep")),
)


def test_bind_fills_defaults_and_the_last_value_given_wins() -> None:
    given = [("depth", "1"), ("focus", "a=b"), ("depth", "2")]
    assert params.bind(TASK, given) == {"focus": "a=b", "depth": "2"}


def test_an_unknown_parameter_is_a_usage_error_with_did_you_mean() -> None:
    with pytest.raises(UsageError) as error:
        params.bind(TASK, [("depth", "1"), ("focs", "x")])
    assert str(error.value) == "unknown parameter 'focs' for task 'review'; did you mean 'focus'?"
    assert error.value.exit_code == 2
    with pytest.raises(UsageError) as other:
        params.bind(TASK, [("zzz", "x")])
    assert (
        str(other.value)
        == "unknown parameter 'zzz' for task 'review'; its parameters: focus, depth"
    )
    with pytest.raises(UsageError) as none:
        params.bind(TASK._replace(params=()), [("x", "1")])
    assert str(none.value) == "task 'review' has no parameters; drop -p x=..."


def test_a_parameter_without_a_default_must_be_given() -> None:
    with pytest.raises(UsageError) as error:
        params.bind(TASK, [])
    assert str(error.value) == (
        "task 'review' needs the parameter 'depth': pass -p depth=VALUE\n  depth: How deep"
    )
    two = TASK._replace(params=(Param("a"), Param("b")))
    with pytest.raises(UsageError) as both:
        params.bind(two, [])
    assert (
        str(both.value) == "task 'review' needs the parameters 'a', 'b': pass -p a=VALUE -p b=VALUE"
    )


def test_a_word_without_equals_is_a_usage_error() -> None:
    assert params.split("focus=a=b") == ("focus", "a=b")
    assert params.split("focus=") == ("focus", "")
    for word in ("focus", "=x"):
        with pytest.raises(UsageError) as error:
            params.split(word)
        assert str(error.value) == (
            f"-p '{word}': give a parameter as NAME=VALUE, such as -p focus=security"
        )


def test_the_environment_of_a_task_command() -> None:
    assert params.environment({"focus": "x", "max_depth": ""}, None) == {
        "START_INSTRUCTIONS": "",
        "START_PARAM_FOCUS": "x",
        "START_PARAM_MAX_DEPTH": "",
    }
    assert params.environment({}, "be strict") == {"START_INSTRUCTIONS": "be strict"}
    # No variable can hold a NUL: the text rule makes it U+FFFD.
    assert params.environment({"a": "x\x00y"}, "\x00") == {
        "START_INSTRUCTIONS": "\ufffd",
        "START_PARAM_A": "x\ufffdy",
    }


def test_a_default_with_a_nul_follows_the_text_rule(repo: Path) -> None:
    config = repo.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(config.read_text().replace('default = "security"', 'default = "a\\u0000b"'))
    data = dry("task", "review", "-p", "depth=1")
    assert data["prompt"] == "Focus: a\ufffdb. Depth: 1. Said: None. Ran: a\ufffdb|"


# --- through the command line --------------------------------------------------------------

CONFIG = f'''
[settings]
default_agent = "fake"

[agents.fake]
bin = "{FAKE_AGENT}"
command = "{{bin}} '{{prompt}}'"

[tasks.review]
description = "Review with a focus"
command = 'printf "%s|%s" "$START_PARAM_FOCUS" "$START_INSTRUCTIONS"'
prompt = "Focus: {{focus}}. Depth: {{depth}}. Said: {{instructions}}. Ran: {{command_output}}"

[tasks.review.params]
focus = {{ default = "security", description = "What to look at" }}
depth = {{ description = "How deep" }}

[tasks.plain]
prompt = "p"
'''


@pytest.fixture
def repo(isolated: Path) -> Path:
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def dry(*args: str) -> dict[str, Any]:
    result = invoke(*args, "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_p_fills_placeholders_and_reaches_the_command_as_variables(repo: Path) -> None:
    data = dry("task", "review", "-p", "depth=$(id) `x` 'q'", "--param=focus=a b", "be strict")
    assert data["prompt"] == (
        "Focus: a b. Depth: $(id) `x` 'q'. Said: be strict. Ran: a b|be strict"
    )
    assert data["params"] == {"focus": "a b", "depth": "$(id) `x` 'q'"}


def test_defaults_apply_and_start_instructions_is_empty_without_instructions(repo: Path) -> None:
    data = dry("task", "review", "-p", "depth=1")
    assert data["prompt"] == "Focus: security. Depth: 1. Said: None. Ran: security|"


def test_a_value_is_never_scanned_for_placeholders(repo: Path) -> None:
    data = dry("task", "review", "-p", "depth={focus} {instructions} {{x}}")
    assert data["prompt"].startswith("Focus: security. Depth: {focus} {instructions} {{x}}. ")


def test_a_missing_parameter_exits_2_naming_it(repo: Path) -> None:
    result = invoke("task", "review")
    assert result.exit_code == 2
    assert result.stderr == (
        "start: task 'review' needs the parameter 'depth': pass -p depth=VALUE\n  depth: How deep\n"
    )


def test_an_unknown_parameter_exits_2_with_did_you_mean(repo: Path) -> None:
    result = invoke("task", "review", "-p", "depht=1")
    assert result.exit_code == 2
    assert (
        result.stderr
        == "start: unknown parameter 'depht' for task 'review'; did you mean 'depth'?\n"
    )
    result = invoke("task", "plain", "-p", "x=1")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: task 'plain' has no parameters; drop -p x=...\n",
    )


def test_p_without_a_task_is_a_usage_error(repo: Path) -> None:
    result = invoke("task", "-p", "x=1")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: parameters need a task: start task NAME -p NAME=VALUE\n",
    )


def test_the_summary_shows_the_parameters(repo: Path) -> None:
    result = invoke("task", "review", "-p", "depth=2", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "  params        focus=security, depth=2\n" in result.stdout


def test_listings_show_the_parameters(repo: Path) -> None:
    listed = json.loads(invoke("task", "--json").stdout)
    review = next(t for t in listed if t["name"] == "review")
    assert review["params"] == [
        {"name": "focus", "default": "security", "description": "What to look at"},
        {"name": "depth", "default": None, "description": "How deep"},
    ]
    table = invoke("task").stdout
    assert table.splitlines()[0].split() == ["TASK", "ALIAS", "DESCRIPTION", "PARAMS", "LAYER"]
    (row,) = [line for line in table.splitlines() if line.startswith("review")]
    assert "focus=security, depth (required)" in row


def test_config_show_writes_parameters_as_toml_that_reads_back(repo: Path) -> None:
    import tomllib

    shown = invoke("config", "show", "task", "review").stdout
    assert (
        '[tasks.review.params]\nfocus = { default = "security", description = "What to look at" }\n'
        'depth = { description = "How deep" }\n'
    ) in shown
    assert tomllib.loads(shown)["tasks"]["review"]["params"] == {
        "focus": {"default": "security", "description": "What to look at"},
        "depth": {"description": "How deep"},
    }
    data = json.loads(invoke("config", "show", "task", "review", "--json").stdout)
    assert data["tasks"]["review"]["params"]["depth"] == {"description": "How deep"}


def test_config_add_takes_parameters(isolated: Path) -> None:
    result = invoke(
        "config", "add", "task", "rv", "--prompt", "{focus} {depth}", "--param", "focus=sec",
        "--param", "depth",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    task = load().tasks["rv"]
    assert task.params == (Param("focus", "sec"), Param("depth"))


def test_the_launch_passes_hostile_values_exactly_to_a_real_agent_and_command(
    repo: Path,
) -> None:
    """End to end in a subprocess: argv through the OS, the command through bash, the exec."""
    record = repo.parent / "record.json"
    value = "-rf '$(touch pwned)' `id` \"; echo x\n\t ünï 🚀 {focus} $HOME"
    proc = run_start(
        "task", "review", "-q", f"--param=depth={value}", f"--instructions={value}",
        cwd=repo, env={"FAKE_AGENT_RECORD": str(record)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    prompt = json.loads(record.read_text())["argv"][-1]
    assert prompt == f"Focus: security. Depth: {value}. Said: {value}. Ran: security|{value}"
    assert not (repo / "pwned").exists()


# --- the property: hostile values through a real /bin/sh ----------------------------------

TEXT = st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), min_size=0
)
HOSTILE = st.sampled_from(
    ["'", '"', "$(touch pwned)", "`touch pwned`", "\n", "-", "--", "-rf", "$HOME", "\\", "ünï 🚀",
     "\r\n", "*", "~", "${IFS}", "'\"'\"'", ";", "|", "&", " ", "{focus}", "=", "%s"]
)  # fmt: skip
VALUE = st.lists(st.one_of(TEXT, HOSTILE), min_size=0, max_size=6).map("".join)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=VALUE)
def test_property_a_value_reaches_a_real_sh_byte_exact(value: str, tmp_path: Path) -> None:
    env = params.environment({"focus": value}, value)
    spec = CommandSpec(
        command='printf "%s" "$START_PARAM_FOCUS"; printf "%s" "$START_INSTRUCTIONS" >&2',
        shell="/bin/sh",
        timeout=10,
        cwd=str(tmp_path),
        env=env,
        separate=True,
    )
    (result,) = run_all([spec])
    assert result.ok, result
    assert result.stdout == value
    assert result.stderr == value
    assert not (tmp_path / "pwned").exists()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=VALUE)
def test_property_a_value_reaches_the_prompt_and_the_command_exactly(
    value: str, repo: Path
) -> None:
    data = dry("task", "review", f"--param=depth={value}", f"--instructions={value}")
    said = value if value.strip() else "None"
    assert data["prompt"] == (
        f"Focus: security. Depth: {value}. Said: {said}. Ran: security|{value if value.strip() else ''}"
    )
    assert data["params"]["depth"] == value
    assert not (repo / "pwned").exists()
