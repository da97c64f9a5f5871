"""Tests for start.proc.argv: templates become argv and env byte-exact, checked against /bin/sh."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from start.proc.argv import (
    AgentArgsError,
    AgentCommand,
    AgentTemplateError,
    AgentValueError,
    OptionValueError,
    build,
    needs_shell,
    placeholders,
)
from start.proc.shellwords import problems as validate
from tests import conftest
from tests.conftest import REPO

FAKE_AGENT = REPO / "tests" / "fake_agent.py"

CLAUDE = "{bin} --model {model} --append-system-prompt '{role}' '{prompt}'"
DOUBLE = '{bin} "{prompt}"'
BARE = "{bin} {prompt}"
GEMINI = "GEMINI_SYSTEM_MD='{role_file}' {bin} --model {model} '{prompt}'"

# Values that start with '-' are refused where they would be an argument of their own before
# '--' (OPTION_LIKE, below); these are the rest.
HOSTILE = [
    "'",
    '"',
    "$(touch MARKER)",
    "`touch MARKER`",
    "; rm -rf x",
    "line one\nline two\n",
    "x --flag",
    "héllo ☃ 日本語 \u200b",
    "{prompt}",
    "{role} and {{prompt}}",
    "{{",
    "}}",
    "back\\slash\\",
    "\\\"'$`!*?[a]~#",
    "",
    "  spaced\t out  ",
    '${1} $0 $@ "$*"',
    "'\"'\"'",
    "a\r\nb",
]

TEXT = st.text(alphabet=st.characters(exclude_characters="\x00", exclude_categories=["Cs"]))
# Text that the option rule lets through anywhere (see test_a_value_is_never_an_option).
WORD = TEXT.filter(lambda text: not text.startswith("-"))


@pytest.fixture(scope="session")
def fake_agent() -> str:
    """The fake agent whose shebang names this interpreter (tests/conftest.py): no PATH lookup."""
    return str(conftest.FAKE_AGENT)


def hostile(value: str, tmp_path: Path) -> str:
    return value.replace("MARKER", str(tmp_path / "pwned"))


def run(
    command: AgentCommand, cwd: Path, *, record: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the argv without any shell of ours, the way launch would exec it."""
    env = {**os.environ, **command.env}
    env.pop("FAKE_AGENT_EXIT", None)
    if record is not None:
        env["FAKE_AGENT_RECORD"] = str(record)
    return subprocess.run(
        command.argv,
        cwd=cwd,
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def recorded(command: AgentCommand, cwd: Path, *, stdin: str | None = None) -> dict[str, Any]:
    path = cwd / "record.json"
    path.unlink(missing_ok=True)
    run(command, cwd, record=path, stdin=stdin)
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


def values(agent: str, **more: str) -> dict[str, str]:
    return {"bin": agent, "model": "opus", "role": "You review.", "prompt": "Fix it.", **more}


# --- the public helpers -------------------------------------------------------------------------


def test_placeholders_are_listed_once_in_order_of_first_use() -> None:
    assert placeholders(CLAUDE) == ["bin", "model", "role", "prompt"]
    assert placeholders("{bin} {prompt} {prompt} {{role}} {date}") == ["bin", "prompt", "date"]


@pytest.mark.parametrize(
    "template",
    [
        CLAUDE,
        DOUBLE,
        BARE,
        GEMINI,
        "~/bin/claude {prompt}",
        "{bin} '{prompt}' # a | comment; it's (fine)",
        "{bin} '|&;<>()`$' \\| \\$HOME \"a|b;c\"",
        "{bin} {{prompt}} '$(x)'",
    ],
)
def test_templates_without_operators_take_the_direct_path(template: str) -> None:
    assert needs_shell(template) is False
    assert validate(template) == []


@pytest.mark.parametrize(
    "template",
    [
        "{bin} '{prompt}' | cat",
        '{bin} "{prompt}" > out.txt',
        "cd /tmp && {bin} {prompt}",
        "{bin} {prompt} &",
        "{bin} {prompt}; echo done",
        "{bin} < /dev/null",
        "({bin} {prompt})",
        "{bin} $HOME",
        '{bin} "$HOME"',
        "{bin} `date`",
        '{bin} "`date`"',
        '{bin} "$(cat {prompt_file})"',
    ],
)
def test_templates_with_operators_or_expansions_take_the_shell_path(template: str) -> None:
    assert needs_shell(template) is True
    assert validate(template) == []


# --- the direct path ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", HOSTILE)
def test_claude_form_passes_hostile_role_and_prompt_verbatim(value: str, tmp_path: Path) -> None:
    agent = "/opt/claude"
    value = hostile(value, tmp_path)
    command = build(CLAUDE, values(agent, role=value, prompt=value + "!"))
    assert command == AgentCommand(
        (agent, "--model", "opus", "--append-system-prompt", value, value + "!"), {}, False
    )


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("template", [CLAUDE, DOUBLE, BARE, GEMINI])
def test_hostile_values_reach_the_agent_byte_exact(
    template: str, value: str, fake_agent: str, tmp_path: Path
) -> None:
    value = hostile(value, tmp_path)
    given_values = values(fake_agent, role=value, prompt=value, model=value, role_file=value)
    command = build(template, given_values)
    record = recorded(command, tmp_path)
    model = [value] if value else []  # an unquoted word that is empty once filled vanishes
    expected = {
        CLAUDE: ["--model", *model, "--append-system-prompt", value, value],
        DOUBLE: [value],
        BARE: model,
        GEMINI: ["--model", *model, value],
    }[template]
    assert record["argv"] == expected
    assert record["argv0"] == fake_agent
    if template == GEMINI:
        assert command.env == {"GEMINI_SYSTEM_MD": value}
        assert record["env"]["GEMINI_SYSTEM_MD"] == value
    assert not (tmp_path / "pwned").exists()


def test_values_are_never_scanned_again() -> None:
    command = build("{bin} {role} '{prompt}'", {"bin": "b", "role": "{prompt}", "prompt": "{role}"})
    assert command.argv == ("b", "{prompt}", "{role}")


def test_escaped_braces_are_literal_text() -> None:
    command = build("{bin} {{prompt}} '{{role}}' \"x{{date}}y\"", {"bin": "b", "prompt": "P"})
    assert command.argv == ("b", "{prompt}", "{role}", "x{date}y")


def test_missing_values_leave_the_placeholder_text() -> None:
    assert build("{bin} --model {model} '{prompt}'", {"bin": "b"}).argv == (
        "b",
        "--model",
        "{model}",
        "{prompt}",
    )


@pytest.mark.parametrize(
    ("template", "argv"),
    [
        ("b one  two\tthree\nfour", ["b", "one", "two", "three", "four"]),
        ("b 'a b' \"c d\" e\\ f", ["b", "a b", "c d", "e f"]),
        ("b 'it'\\''s' \"say \\\"hi\\\"\"", ["b", "it's", 'say "hi"']),
        ('b "\\$ \\` \\\\ \\a \\{"', ["b", "$ ` \\ \\a \\{"]),
        ("b 'no \\escapes \" here'", ["b", 'no \\escapes " here']),
        ("b one\\\ntwo", ["b", "onetwo"]),
        ('b "one\\\ntwo"', ["b", "onetwo"]),
        ("b 'keeps\nnewline'", ["b", "keeps\nnewline"]),
        ("b a'b'\"c\"d", ["b", "abcd"]),
        ("b '' \"\" ''\"\"", ["b", "", "", ""]),
        ("b # comment 'unbalanced", ["b"]),
        ("b a#b", ["b", "a#b"]),
        ("b \\# '#'", ["b", "#", "#"]),
        ("b *.py ? \\[a\\] '[b]' [ ]", ["b", "*.py", "?", "[a]", "[b]", "[", "]"]),
        ("  b  ", ["b"]),
    ],
)
def test_posix_word_rules(template: str, argv: list[str]) -> None:
    assert list(build(template, {}).argv) == argv


def test_unquoted_words_that_fill_empty_are_dropped() -> None:
    given_values = {"bin": "b", "model": "", "role": "", "prompt": ""}
    command = build("{bin} {model} --x {role}{prompt} y{model} '{prompt}' \"{role}\"", given_values)
    assert command.argv == ("b", "--x", "y", "", "")


def test_a_program_that_fills_empty_is_dropped_too() -> None:
    assert build("{model} {bin} x", {"bin": "b", "model": ""}).argv == ("b", "x")


def test_backslash_before_a_placeholder_in_double_quotes_is_literal() -> None:
    assert build('b "\\{prompt}"', {"prompt": "$x"}).argv == ("b", "\\$x")


def test_backslash_before_a_placeholder_in_single_quotes_is_literal() -> None:
    assert build("b '\\{prompt}'", {"prompt": "x"}).argv == ("b", "\\x")


# --- optional groups and extra arguments --------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "argv"),
    [
        ({"model": "m", "role": "R"}, ("b", "--model", "m", "--p=R\n\nP")),
        ({"model": "", "role": ""}, ("b", "--p=P")),
        ({"role": "R"}, ("b", "--p=R\n\nP")),  # a missing value drops its group too
    ],
)
def test_a_group_is_kept_bare_or_dropped_whole(given: dict[str, str], argv: tuple[str]) -> None:
    template = "{bin} [--model {model}] '--p='[{role}'\n\n']{prompt}"
    assert build(template, {"bin": "b", "prompt": "P", **given}).argv == argv


def test_a_group_goes_when_any_of_its_placeholders_is_empty() -> None:
    template = "{bin} [--sys {role} --at {date}] {prompt}"
    assert build(template, {"bin": "b", "role": "r", "date": "d", "prompt": "p"}).argv == (
        "b",
        "--sys",
        "r",
        "--at",
        "d",
        "p",
    )
    assert build(template, {"bin": "b", "role": "r", "date": "", "prompt": "p"}).argv == ("b", "p")


def test_groups_work_on_the_shell_path(fake_agent: str, tmp_path: Path) -> None:
    template = "{bin} [--model {model}] '{prompt}' | cat"
    with_model = build(template, values(fake_agent, model="m"))
    without = build(template, values(fake_agent, model=""))
    assert with_model.argv[2] == '"${1}" --model "${2}" \'\'"${3}"\'\' | cat'
    assert without.argv[2] == "\"${1}\"  ''\"${2}\"'' | cat"
    assert recorded(with_model, tmp_path)["argv"] == ["--model", "m", "Fix it."]
    assert recorded(without, tmp_path)["argv"] == ["Fix it."]


ARGS = ["--debug", "-x", "two words", "", "--", "$(touch MARKER)"]


@pytest.mark.parametrize(
    ("template", "argv"),
    [
        ("{bin} --model m {args} -- {prompt}", ["--model", "m", *ARGS, "--", "P"]),
        ("{bin} --model m -- {prompt}", ["--model", "m", *ARGS, "--", "P"]),
        ("{bin} '--p={prompt}' --x", ["--p=P", "--x", *ARGS]),
        ("{bin} {args} '--p={prompt}' --x", [*ARGS, "--p=P", "--x"]),
        ("{bin} '--' {prompt}", [*ARGS, "--", "P"]),
        ("{bin} x--y {prompt} --", ["x--y", "P", *ARGS, "--"]),  # only a word of its own
        ("{bin} --{model} {prompt}", ["--m", "P", *ARGS]),
        ("{bin} {args} {prompt} | cat", [*ARGS, "P"]),
        ("[ -n {prompt} ] && {bin} {args}", ARGS),
    ],
)
def test_extra_arguments_go_to_args_else_before_the_first_double_dash(
    template: str, argv: list[str], fake_agent: str, tmp_path: Path
) -> None:
    args = [hostile(arg, tmp_path) for arg in ARGS]
    argv = [hostile(arg, tmp_path) for arg in argv]
    command = build(template, {"bin": fake_agent, "model": "m", "prompt": "P"}, args)
    assert recorded(command, tmp_path)["argv"] == argv
    assert not (tmp_path / "pwned").exists()
    if not command.uses_shell:
        assert command.argv == (fake_agent, *argv)


def test_no_extra_arguments_leave_no_trace() -> None:
    assert build("{bin} {args} {prompt}", {"bin": "b", "prompt": "p"}).argv == ("b", "p")
    script = build("{bin} {args} {prompt} | cat", {"bin": "b", "prompt": "p"}).argv[2]
    assert script == '"${1}"  "${2}" | cat'


def test_a_shell_template_without_args_refuses_extra_arguments() -> None:
    with pytest.raises(AgentArgsError) as caught:
        build("{bin} {prompt} | cat", {"bin": "b", "prompt": "p"}, ["-x"])
    assert caught.value.exit_code == 2
    assert str(caught.value) == (
        "extra arguments have no place: {args} is missing in agent command: {bin} {prompt} | cat"
    )


# --- environment assignments and ~ ----------------------------------------------------------------


def test_leading_assignments_become_the_environment(fake_agent: str, tmp_path: Path) -> None:
    template = "A=1 _B='two words' c3={prompt} EMPTY= {bin} D=4 '{prompt}'"
    command = build(template, {"bin": fake_agent, "prompt": "$(x) 'y'"})
    assert command == AgentCommand(
        (fake_agent, "D=4", "$(x) 'y'"),
        {"A": "1", "_B": "two words", "c3": "$(x) 'y'", "EMPTY": ""},
        False,
    )
    env = recorded(command, tmp_path)["env"]
    assert {key: env[key] for key in command.env} == command.env


@pytest.mark.parametrize(
    "template",
    ["'A=1' b", '"A"=1 b', "A\\=1 b", "1A=1 b", "A-B=1 b", "{model}=1 b", "=1 b"],
)
def test_quoted_or_invalid_names_are_not_assignments(template: str) -> None:
    command = build(template, {"model": "A"})
    assert command.env == {}
    assert command.argv[1:] == ("b",)


def test_assignments_stop_at_the_first_other_word_even_an_empty_one() -> None:
    assert build("A=1 {model} B=2 b", {"model": ""}) == AgentCommand(
        ("B=2", "b"), {"A": "1"}, False
    )


def test_tilde_expands_like_sh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/tester")
    got = build(
        "~/bin/claude --settings ~/s.json '~/q' \\~/e ~ a~ ~{prompt} X=~/v", {"prompt": "p"}
    )
    assert got.argv == (
        "/home/tester/bin/claude",
        "--settings",
        "/home/tester/s.json",
        "~/q",
        "~/e",
        "/home/tester",
        "a~",
        "~p",
        "X=~/v",
    )
    assert build("CFG=~/c ~/b", {}).env == {"CFG": "/home/tester/c"}


def test_tilde_in_values_is_not_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/tester")
    assert build("{bin} {prompt}", {"bin": "~/b", "prompt": "~"}).argv == ("~/b", "~")


def test_tilde_runs_the_agent_from_home(
    fake_agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    shutil.copy(fake_agent, home / "bin" / "claude")
    monkeypatch.setenv("HOME", str(home))
    record = recorded(build("~/bin/claude {prompt}", {"prompt": "hi there"}), tmp_path)
    assert record["argv0"] == str(home / "bin" / "claude")
    assert record["argv"] == ["hi there"]


def test_nul_in_a_value_is_refused() -> None:
    with pytest.raises(AgentValueError) as caught:
        build(BARE, {"bin": "b", "prompt": "a\x00b"})
    assert str(caught.value) == (
        "the value of {prompt} contains a NUL character, which no command argument can carry"
    )


# --- a program that vanishes ---------------------------------------------------------------------


def test_a_program_that_vanishes_after_filling_is_refused() -> None:
    with pytest.raises(AgentTemplateError) as caught:
        build("{bin} {prompt}", {"bin": "", "prompt": ""})
    assert str(caught.value) == (
        "no program to run once the placeholders are filled in agent command: {bin} {prompt}"
    )


# --- the shell path -------------------------------------------------------------------------------


def test_shell_script_refers_to_values_by_quote_context() -> None:
    template = "A={model} {bin} {model} '{role}' \"x{prompt}\" {{date}} | cat"
    command = build(template, {"bin": "/b", "model": "m", "role": "r", "prompt": "$(p)"})
    assert command == AgentCommand(
        (
            "/bin/sh",
            "-c",
            'A="${1}" "${2}" "${1}" \'\'"${3}"\'\' "x${4}" {date} | cat',
            "start",
            "m",
            "/b",
            "r",
            "$(p)",
        ),
        {},
        True,
    )


def test_shell_path_keeps_missing_placeholders_literal() -> None:
    assert build("{bin} {prompt} | cat", {"bin": "b"}).argv[3:] == ("start", "b", "{prompt}")


def test_shell_path_leaves_comments_and_tilde_to_sh() -> None:
    command = build("~/b {prompt} | cat # {role}'s", {"prompt": "p", "role": "r"})
    assert command.argv[2:] == ('~/b "${1}" | cat # {role}\'s', "start", "p")


@pytest.mark.parametrize("value", HOSTILE)
def test_pipe_form(value: str, fake_agent: str, tmp_path: Path) -> None:
    value = hostile(value, tmp_path)
    command = build("{bin} '{prompt}' | cat", values(fake_agent, prompt=value))
    assert command.uses_shell
    assert recorded(command, tmp_path)["argv"] == [value]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("value", HOSTILE)
def test_redirect_form(value: str, fake_agent: str, tmp_path: Path) -> None:
    value = hostile(value, tmp_path)
    command = build('{bin} "{prompt}" > out.txt', values(fake_agent, prompt=value))
    assert run(command, tmp_path).stdout == ""
    assert json.loads((tmp_path / "out.txt").read_text(encoding="utf-8"))["argv"] == [value]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("value", HOSTILE)
def test_cd_form(value: str, fake_agent: str, tmp_path: Path) -> None:
    value = hostile(value, tmp_path)
    work = tmp_path / "work dir"
    work.mkdir()
    command = build("cd {date} && {bin} {prompt}", values(fake_agent, prompt=value, date=str(work)))
    record = recorded(command, tmp_path)
    assert record["argv"] == [value]
    assert record["cwd"] == str(work)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("value", HOSTILE)
def test_mixed_quote_contexts(value: str, fake_agent: str, tmp_path: Path) -> None:
    value = hostile(value, tmp_path)
    template = (
        "{bin} x'{role}'y\"{prompt}\"z{model} '{prompt}' \"\\{role}\" "
        '"$(printf %s {prompt})" ROLE={role} && true'
    )
    command = build(template, values(fake_agent, role=value, prompt=value, model=value))
    assert recorded(command, tmp_path)["argv"] == [
        f"x{value}y{value}z{value}",
        value,
        "\\" + value,
        value.rstrip("\n"),  # $(...) strips trailing newlines
        f"ROLE={value}",
    ]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("value", HOSTILE)
def test_prompt_file_on_stdin_replaces_a_here_document(
    value: str, fake_agent: str, tmp_path: Path
) -> None:
    value = hostile(value, tmp_path)
    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_text(value, encoding="utf-8")
    command = build(
        "{bin} --print < {prompt_file}", values(fake_agent, prompt_file=str(prompt_file))
    )
    record = recorded(command, tmp_path)
    assert record["argv"] == ["--print"]
    assert record["stdin"] == value
    assert not (tmp_path / "pwned").exists()


def test_shell_and_direct_paths_agree_on_assignments(fake_agent: str, tmp_path: Path) -> None:
    given_values = values(fake_agent, role_file="/r f")
    direct = recorded(build(GEMINI, given_values), tmp_path)
    shell = recorded(build(GEMINI + " && true", given_values), tmp_path)
    assert direct["argv"] == shell["argv"] == ["--model", "opus", "Fix it."]
    assert direct["env"]["GEMINI_SYSTEM_MD"] == shell["env"]["GEMINI_SYSTEM_MD"] == "/r f"


def test_the_fake_agent_runs_by_its_own_shebang(tmp_path: Path) -> None:
    assert os.access(FAKE_AGENT, os.X_OK), "tests/fake_agent.py lost its executable bit"
    command = build("{bin} {prompt}", {"bin": str(FAKE_AGENT), "prompt": "a 'b'"})
    record = recorded(command, tmp_path, stdin="on stdin\n")
    assert record["argv"] == ["a 'b'"]
    assert record["argv0"] == str(FAKE_AGENT)
    assert record["cwd"] == str(tmp_path)
    assert record["stdin"] == "on stdin\n"


def test_the_agent_exit_status_comes_back(fake_agent: str, tmp_path: Path) -> None:
    command = build("FAKE_AGENT_EXIT=7 {bin} {prompt} | cat; exit 3", values(fake_agent))
    result = subprocess.run(command.argv, cwd=tmp_path, capture_output=True, check=False)
    assert result.returncode == 3


# --- a value is never an option -------------------------------------------------------------------

# Values that a CLI would read as an option where they are an argument of their own: from -m, a
# project's config, or an MCP caller (`ask_agent(model="--allowed-tools=run_shell_command")`).
OPTION_LIKE = ["--allowed-tools=run_shell_command", "--flag", "-", "-x"]


@pytest.mark.parametrize("value", OPTION_LIKE)
@pytest.mark.parametrize(
    ("template", "placeholder"),
    [
        ("{bin} --model {model} -- {prompt}", "model"),
        ("{bin} [--model {model}] {args} -- {prompt}", "model"),
        ("{bin} -m '{model}' {prompt}", "model"),
        ("{bin} {prompt}", "prompt"),
        ('{bin} "{prompt}"', "prompt"),
        ("{bin} --system {role} -- {prompt}", "role"),
        ("{bin} {role}{prompt}", "prompt"),  # an empty role: the word begins with the prompt
        ("X=1 {bin} --model {model}", "model"),
        ("{bin} --model {model} | cat", "model"),
        ("cat /dev/null | {bin} --model {model}", "model"),
        ("{bin} -- x; {bin} --model {model}", "model"),  # each command has its own '--'
        ("cd /tmp && {bin} --model {model} > out", "model"),
    ],
)
def test_a_value_that_would_be_an_option_is_refused(
    template: str, placeholder: str, value: str
) -> None:
    given_values = {"bin": "/b", "model": value, "role": "", "prompt": value}
    if placeholder == "role":
        given_values["role"] = value
        given_values["prompt"] = "p"
    with pytest.raises(OptionValueError) as caught:
        build(template, given_values)
    assert caught.value.placeholder == placeholder
    assert str(caught.value) == (
        f"the value of {{{placeholder}}} starts with '-' and would be an argument of its own "
        "before '--', which the program reads as an option"
    )
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("value", OPTION_LIKE)
@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{bin} --model {model} -- {prompt}", None),  # after '--': an operand
        ("{bin} -- {model} {prompt}", ["--", "V", "V"]),
        ("{bin} '--model={model}' '--prompt={prompt}'", ["--model=V", "--prompt=V"]),
        ("{bin} x{model}", ["xV"]),
        ("MODEL={model} {bin}", []),  # a variable, not an argument
        ("{bin} {args} -- {prompt}", ["--", "V"]),
        ("{bin} -- x | {bin} -- {prompt}", None),
    ],
)
def test_a_value_after_double_dash_or_joined_to_text_is_passed_verbatim(
    template: str, expected: list[str] | None, value: str
) -> None:
    given_values = {"bin": "/b", "model": value, "prompt": value}
    if template.startswith("{bin} --model"):
        given_values["model"] = "m"
    command = build(template, given_values)
    if expected is None:
        assert value in command.argv  # the prompt, after '--'
    else:
        assert list(command.argv[1:]) == [word.replace("V", value) for word in expected]
    if template.startswith("MODEL="):
        assert command.env == {"MODEL": value}


def test_extra_arguments_are_options_on_purpose() -> None:
    command = build("{bin} {args} -- {prompt}", {"bin": "/b", "prompt": "p"}, ["--yolo"])
    assert command.argv == ("/b", "--yolo", "--", "p")


def test_the_program_itself_is_not_an_option() -> None:
    assert build("{bin} {prompt}", {"bin": "-b", "prompt": "p"}).argv == ("-b", "p")


@settings(max_examples=500, deadline=None)
@given(value=TEXT.map(lambda text: "-" + text), form=st.sampled_from([CLAUDE, BARE, GEMINI]))
def test_no_value_starting_with_a_dash_is_an_argument_of_its_own(value: str, form: str) -> None:
    """Whatever follows the dash: the role, the prompt or the model, each in turn."""
    for name in ("model", "role", "prompt"):
        given_values = {"bin": "/b", "model": "m", "role": "r", "prompt": "p", name: value}
        if f"{{{name}}}" not in form:
            continue
        with pytest.raises(OptionValueError):
            build(form, given_values)


# --- properties -----------------------------------------------------------------------------------

SUBPROCESS = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
PURE = settings(max_examples=500, deadline=None)

FORMS: Mapping[str, Any] = {
    CLAUDE: lambda role, prompt: ["--model", "opus", "--append-system-prompt", role, prompt],
    '{bin} --append-system-prompt "{role}" "{prompt}"': lambda role, prompt: [
        "--append-system-prompt",
        role,
        prompt,
    ],
    "{bin} {role} {prompt}": lambda role, prompt: [v for v in (role, prompt) if v],
    "{bin} --append-system-prompt '{role}' \"{prompt}\" && true": lambda role, prompt: [
        "--append-system-prompt",
        role,
        prompt,
    ],
}


# A real /bin/sh and the fake agent per example (make check); the fixed cases above run always.
@pytest.mark.slow
@pytest.mark.parametrize("template", list(FORMS))
@SUBPROCESS
@given(role=WORD, prompt=WORD)
def test_any_text_arrives_byte_exact(
    template: str, role: str, prompt: str, fake_agent: str, tmp_path: Path
) -> None:
    command = build(template, values(fake_agent, role=role, prompt=prompt))
    assert command.uses_shell is template.endswith("&& true")
    assert recorded(command, tmp_path)["argv"] == FORMS[template](role, prompt)


# A real /bin/sh and the fake agent per example (make check); the fixed cases above run always.
@pytest.mark.slow
@SUBPROCESS
@given(role=WORD.filter(bool), prompt=WORD.filter(bool))
def test_sh_agrees_with_the_direct_path(
    role: str, prompt: str, fake_agent: str, tmp_path: Path
) -> None:
    """Non-empty values: sh keeps a quoted empty "${N}" where the direct path drops the word."""
    template = 'X={role} {bin} {role}x\'{prompt}\'"{role}" \\  {prompt} "\\{role}" ~'
    given_values = values(fake_agent, role=role, prompt=prompt)
    direct = build(template, given_values)
    shell = build(template + " && true", given_values)
    direct_record = recorded(direct, tmp_path)
    shell_record = recorded(shell, tmp_path)
    assert direct_record["argv"] == shell_record["argv"] == list(direct.argv[1:])
    assert direct_record["env"]["X"] == shell_record["env"]["X"] == role


@PURE
@given(role=WORD, prompt=WORD, model=WORD)
def test_direct_argv_is_the_values_verbatim(role: str, prompt: str, model: str) -> None:
    given_values = {"bin": "/b", "model": model, "role": role, "prompt": prompt, "role_file": role}
    models = (model,) if model else ()  # an unquoted word that is empty once filled vanishes
    assert build(CLAUDE, given_values) == AgentCommand(
        ("/b", "--model", *models, "--append-system-prompt", role, prompt), {}, False
    )
    assert build(DOUBLE, given_values).argv == ("/b", prompt)
    assert build(BARE, given_values).argv == (("/b", prompt) if prompt else ("/b",))
    assert build(GEMINI, given_values) == AgentCommand(
        ("/b", "--model", *models, prompt),
        {"GEMINI_SYSTEM_MD": role},
        False,
    )


@PURE
@given(role=WORD, prompt=WORD)
def test_values_never_reach_the_shell_script(role: str, prompt: str) -> None:
    template = "{bin} '{role}' \"{prompt}\" {prompt} | cat"
    command = build(template, {"bin": "/b", "role": role, "prompt": prompt})
    assert command.argv == (
        "/bin/sh",
        "-c",
        '"${1}" \'\'"${2}"\'\' "${3}" "${3}" | cat',
        "start",
        "/b",
        role,
        prompt,
    )


# Random templates: an oracle for the lexer is sh itself parsing the same words.
_CHAR = st.characters(exclude_characters="\x00{}", exclude_categories=["Cs"])
_PLAIN = st.text(  # no brackets: unquoted, they make optional groups, which sh does not know
    alphabet=st.characters(
        exclude_characters="\x00{}|&;<>()$`\\\"' \t\n[]", exclude_categories=["Cs"]
    ),
    min_size=1,
)
_NAME = st.sampled_from(["{prompt}", "{role}"])


def _pieces(placeholders: bool) -> st.SearchStrategy[str]:
    """Template text after the program word: words, quotes, escapes, blanks (no newline)."""
    escape = _CHAR.map(lambda c: "\\" + c)
    single_body = [st.text(alphabet=_CHAR.filter(lambda c: c != "'"))]
    double_body = [_CHAR.filter(lambda c: c not in '"\\$`'), escape]
    unquoted = [_PLAIN, escape]
    if placeholders:
        single_body.append(_NAME)
        double_body += [_NAME, _NAME.map(lambda n: "\\" + n)]
        unquoted.append(_NAME)
    single = st.lists(st.one_of(single_body)).map(lambda p: "'" + "".join(p) + "'")
    double = st.lists(st.one_of(double_body)).map(lambda p: '"' + "".join(p) + '"')
    blank = st.sampled_from([" ", "\t", "  "])
    return st.lists(st.one_of([*unquoted, single, double, blank])).map("".join)


# A real /bin/sh and the fake agent per example (make check); the fixed cases above run always.
@pytest.mark.slow
@SUBPROCESS
@given(rest=_pieces(placeholders=False))
def test_the_lexer_splits_words_as_sh_does(rest: str, fake_agent: str, tmp_path: Path) -> None:
    command = build("{bin} " + rest, {"bin": fake_agent})
    assert not command.uses_shell
    script = f"set -f\nexec {shlex.quote(fake_agent)} {rest}"  # -f: no globbing, as in argv
    sh = AgentCommand(("/bin/sh", "-c", script), {}, True)
    assert recorded(command, tmp_path)["argv"] == recorded(sh, tmp_path)["argv"]


# A real /bin/sh and the fake agent per example (make check); the fixed cases above run always.
@pytest.mark.slow
@SUBPROCESS
@given(rest=_pieces(placeholders=True), role=WORD.filter(bool), prompt=WORD.filter(bool))
def test_the_shell_script_quotes_placeholders_as_the_words_do(
    rest: str, role: str, prompt: str, fake_agent: str, tmp_path: Path
) -> None:
    """The same template, once split by the lexer and once by sh reading its script."""
    given_values = values(fake_agent, role=role, prompt=prompt)
    direct = build("{bin} " + rest, given_values)
    shell = build("{bin} " + rest + "\n: | :", given_values)
    assert not direct.uses_shell
    assert shell.uses_shell
    assert recorded(direct, tmp_path)["argv"] == recorded(shell, tmp_path)["argv"]
