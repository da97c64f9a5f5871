"""Tests for start.proc.shellwords: POSIX words, optional groups, {args}, and the problems reported."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from start.base.template import Placeholder, scan
from start.proc.argv import AgentTemplateError, build, needs_shell
from start.proc.shellwords import HEREDOC_PROBLEM as HEREDOC
from start.proc.shellwords import Lexed, lex_units, problems, split, units

ARGS_ALONE = "{args} stands for zero or more arguments, so it must be a word of its own, unquoted"


# --- syntax problems ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{bin} '{prompt}", "unterminated single quote"),
        ('{bin} "{prompt}', "unterminated double quote"),
        ("{bin} \"it's", "unterminated double quote"),
        ('{bin} \'say "hi"', "unterminated single quote"),
        ('{bin} "a\\"', "unterminated double quote"),
        ("{bin} {prompt} \\", "backslash at the end"),
        (
            "{bin} \\{prompt}",
            "backslash before placeholder {prompt} outside quotes; "
            "write {{prompt}} for the literal text",
        ),
        (
            "{bin} ${prompt}",
            "'$' directly before placeholder {prompt}; write ${{prompt}} for a shell variable",
        ),
        (
            '{bin} "${prompt}"',
            "'$' directly before placeholder {prompt}; write ${{prompt}} for a shell variable",
        ),
        ("{bin} $(cat {prompt_file}", "unterminated command substitution '$('"),
        ("{bin} `date", "unterminated backquote"),
        ("{bin} <<EOF\n{prompt}\nEOF", HEREDOC),
        ("{bin} <<", HEREDOC),
        ("{bin} <<'EOF'\nit's {prompt}\nEOF", HEREDOC),
        ("{bin} <<<{prompt}", HEREDOC),
        ("{bin} [--model {model}", "optional group '[' is not closed with ']'"),
        (
            "{bin} [--model x] {prompt}",
            "optional group [--model x] holds no placeholder; write \\[ for a literal '['",
        ),
        (
            "{bin} *.[ch]{prompt}",
            "optional group [ch] holds no placeholder; write \\[ for a literal '['",
        ),
        (
            "{bin} --model {model}] {prompt}",
            "']' without an open optional group; write \\] for a literal",
        ),
        ("{bin} [--x [{model}]]", "optional groups cannot be nested; write \\[ for a literal '['"),
        ("{bin} '{args}'", ARGS_ALONE),
        ("{bin} x{args}", ARGS_ALONE),
        ("{bin} {args}x", ARGS_ALONE),
        ('{bin} "$(echo {args})"', ARGS_ALONE),
        ("{bin} $(echo {args})", ARGS_ALONE),
        (
            "{bin} [--x {args}]",
            "{args} cannot be inside an optional group; it vanishes by itself when there are no "
            "extra arguments",
        ),
        ("{args} {bin}", "{args} cannot be the program to run"),
        ("A=1 {args} {bin}", "{args} cannot be the program to run"),
        ("{bin} a\x00b", "NUL character"),
    ],
)
def test_syntax_problems_are_reported_and_raised(template: str, problem: str) -> None:
    assert problems(template) == [problem]
    message = f"{problem} in agent command: {template}"
    with pytest.raises(AgentTemplateError) as caught:
        build(template, {"bin": "b", "prompt": "p"})
    assert str(caught.value) == message
    with pytest.raises(AgentTemplateError) as caught:
        needs_shell(template)
    assert str(caught.value) == message


def test_validate_collects_every_problem() -> None:
    assert problems("\\{prompt} ${role} 'x") == [
        "backslash before placeholder {prompt} outside quotes; "
        "write {{prompt}} for the literal text",
        "'$' directly before placeholder {role}; write ${{role}} for a shell variable",
        "unterminated single quote",
    ]


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("", "agent command is empty"),
        ("  \n ", "agent command is empty"),
        ("# just a comment", "agent command is empty"),
        ("A=1 B={prompt}", "agent command sets variables but names no program to run"),
    ],
)
def test_a_template_without_a_program_is_refused(template: str, problem: str) -> None:
    assert problems(template) == [problem]
    assert needs_shell(template) is False
    with pytest.raises(AgentTemplateError) as caught:
        build(template, {})
    assert str(caught.value) == f"{problem} in agent command: {template}"


def test_a_problem_that_shows_only_once_a_group_is_dropped_is_reported() -> None:
    """Dropping a group joins what was around it, as if the group had never been written."""
    template = "{bin} x[{model} ]{args}"
    assert split(template).problems == ()
    assert problems(template) == [ARGS_ALONE]


@pytest.mark.parametrize(
    "template",
    [
        "{bin} [--model {model}] {prompt}",
        "{bin} [--model={model}] {args} -- {prompt}",
        "{bin} '--prompt='[{role}'\n\n']{prompt}",
        "{bin} [-m {model} --sys {role}] {prompt}",
        '[ -n "$HOME" ] && {bin} [--model {model}] {prompt}',
        "{bin} \\[{prompt}\\] '[x]' \"[y]\" a[{model}]b",
        "{bin} {args} {prompt} | cat",
        "{bin} {args}",
    ],
)
def test_well_formed_templates_have_no_problems(template: str) -> None:
    assert problems(template) == []


def test_groups_record_their_placeholders_and_required_names_exclude_them() -> None:
    lexed = split("{bin} [--model {model}] [--sys {role} {date}] {args} -- {prompt}")
    assert [sorted(group.names) for group in lexed.groups] == [["model"], ["date", "role"]]
    assert lexed.required == {"bin", "args", "prompt"}


def test_brackets_are_only_groups_at_the_top_level() -> None:
    """Inside quotes and $(...) a bracket is the shell's, and `[` alone is the test command."""
    lexed = split("[ -f x ] && {bin} \"$([ -f y ] && echo [z])\" '[{prompt}'")
    assert lexed.groups == ()
    assert lexed.problems == ()


# Every character the lexer treats specially, placeholders, and ordinary text around them.
_PIECES = [*" \t\n|&;<>()'\"\\$`#[]", "{bin}", "{prompt}", "{args}", "{{x}}", "a", "-m", "=", "é"]


def _char_by_char(template: str) -> list[str | Placeholder]:
    found: list[str | Placeholder] = []
    for segment in scan(template):
        found.extend([segment] if isinstance(segment, Placeholder) else segment)
    return found


def _observable(lexed: Lexed) -> tuple[object, ...]:
    words = [(word.parts, word.quoted, word.prefix, word.literal) for word in lexed.words]
    names = [group.names for group in lexed.groups]
    filled = [lexed.fill_groups(lambda name: name == "bin").script_text(1)] if names else []
    return (words, lexed.script_text(2), lexed.params, lexed.shell, names, lexed.required,
            lexed.problems, filled)  # fmt: skip


@settings(max_examples=400)
@given(st.lists(st.sampled_from(_PIECES), max_size=24).map("".join))
def test_runs_of_ordinary_characters_lex_as_their_characters_do(template: str) -> None:
    """`units` hands runs of ordinary characters over whole; the result is the same as when
    every character is a unit of its own (which is how the lexer worked before)."""
    by_runs = lex_units(units(template), groups=True)
    by_chars = lex_units(_char_by_char(template), groups=True)
    assert _observable(by_runs) == _observable(by_chars)


@given(st.one_of(st.lists(st.sampled_from(_PIECES), max_size=24).map("".join), st.text()))
def test_units_split_text_as_the_regular_expression_did(template: str) -> None:
    """The oracle: the pattern `units` split literal text with before it scanned it itself."""
    import re

    expected: list[str | Placeholder] = []
    for segment in scan(template):
        if isinstance(segment, Placeholder):
            expected.append(segment)
        else:
            pieces = re.split(r"""([ \t\n|&;<>()'"\\$`#\[\]])""", segment)
            expected.extend(piece for piece in pieces if piece)
    assert units(template) == expected


def test_units_keep_special_characters_apart_and_ordinary_runs_whole() -> None:
    assert units("{bin} --model {model} '$(x)' [-s {role}]") == [
        Placeholder("bin", 0), " ", "--model", " ", Placeholder("model", 14), " ", "'", "$",
        "(", "x", ")", "'", " ", "[", "-s", " ", Placeholder("role", 33), "]",
    ]  # fmt: skip


@given(st.text(alphabet="aZ_9=-é. $x", max_size=12))
def test_an_assignment_is_an_ascii_name_then_equals(prefix: str) -> None:
    # POSIX's NAME=value: the name is letters, digits and underscores, not starting with a digit.
    import re

    from start.proc.shellwords import Word

    word = Word()
    word.prefix = prefix
    match = re.match(r"[A-Za-z_][A-Za-z0-9_]*(?==)", prefix)
    assert word.assignment() == (match.group() if match else None)


# --- quoting words to show and paste -------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "quoted"),
    [
        ("plain", "plain"),
        ("my dir", "'my dir'"),
        ("it's", "'it'\"'\"'s'"),
        ("café ✓", "'café ✓'"),
        ("", "''"),
        ("/src/x\x1b]0;title\x07", "$'/src/x\\x1b]0;title\\x07'"),
        ("two\nlines\tand\r", "$'two\\nlines\\tand\\r'"),
        ("it's \\ \x1b", "$'it\\'s \\\\ \\x1b'"),
        ("csi\x9b1 \u202ebidi", "$'csi\\u009b1 \\u202ebidi'"),
        ("not utf-8 \udcff", "$'not utf-8 \\xff'"),
        ("tag \U000e0041", "$'tag \\U000e0041'"),
    ],
)
def test_quote_escapes_what_a_terminal_would_act_on(word: str, quoted: str) -> None:
    from start.proc.shellwords import quote

    assert quote(word) == quoted


_PASTED = st.one_of(
    st.characters(exclude_characters="\x00", exclude_categories=["Cs"]),
    st.sampled_from(["\x1b]52;c;eA==\x07", "\x1b]0;t\x07", "\n", "'", "\\", "\udc80", "\udcff"]),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(_PASTED, max_size=8).map("".join), min_size=1, max_size=4))
def test_a_joined_line_is_printable_and_bash_reads_the_words_back(words: list[str]) -> None:
    """The oracle is a real bash: the line, pasted, gives each word back byte for byte."""
    import os
    import subprocess

    from start.proc.shellwords import join

    line = join(words)
    assert line.isprintable()
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    read = subprocess.run(
        ["bash", "-c", 'printf "%s\\0" ' + line], env=env, capture_output=True, check=True
    )
    assert read.stdout.split(b"\0")[:-1] == [w.encode("utf-8", "surrogateescape") for w in words]
