"""Config editing: byte-exact text changes, typed values, and where an item to change is (the
writes themselves: tests/setup/test_layerfile.py)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from start.base.errors import StartError, UsageError
from start.config import splice
from start.setup import edit
from tests.conftest import REPO, write_tree
from tests.setup.conftest import scope

COMMENTED = """\
# Tasks of mine.

# about a
[tasks.a]
prompt = "a"  # inline a
# below a

# about b
[tasks.b]
prompt = "b"
# below b

# about c
[tasks.c]
prompt = "c"
# below c
"""


# --- removing items: the comments of the neighbours survive -------------------------------------


def test_removing_the_first_item_takes_its_comments_only() -> None:
    assert (
        splice.without_item(COMMENTED, "tasks", "a")
        == """\
# Tasks of mine.

# about b
[tasks.b]
prompt = "b"
# below b

# about c
[tasks.c]
prompt = "c"
# below c
"""
    )


def test_removing_a_middle_item_takes_its_comments_only() -> None:
    assert (
        splice.without_item(COMMENTED, "tasks", "b")
        == """\
# Tasks of mine.

# about a
[tasks.a]
prompt = "a"  # inline a
# below a

# about c
[tasks.c]
prompt = "c"
# below c
"""
    )


def test_removing_the_last_item_takes_its_comments_and_the_blank_line_before() -> None:
    assert (
        splice.without_item(COMMENTED, "tasks", "c")
        == """\
# Tasks of mine.

# about a
[tasks.a]
prompt = "a"  # inline a
# below a

# about b
[tasks.b]
prompt = "b"
# below b
"""
    )


def test_tomlkit_alone_loses_a_neighbours_comment() -> None:
    """Why removal does not simply delete through tomlkit."""
    import tomlkit

    document = tomlkit.parse(COMMENTED)
    del document["tasks"]["b"]
    assert "# about c" not in document.as_string()
    assert "# about c" in splice.without_item(COMMENTED, "tasks", "b")


def test_a_comment_directly_above_a_header_belongs_to_that_header() -> None:
    text = '[tasks.a]\nprompt = "a"\n# about b\n[tasks.b]\nprompt = "b"\n'
    assert splice.without_item(text, "tasks", "a") == '# about b\n[tasks.b]\nprompt = "b"\n'
    assert splice.without_item(text, "tasks", "b") == '[tasks.a]\nprompt = "a"\n'


def test_a_comment_after_a_blank_line_stays_with_what_follows() -> None:
    text = (
        '[tasks.a]\nprompt = "a"\n\n# --- settings ---\n\n# about settings\n'
        '[settings]\nshell = "sh"\n'
    )
    assert splice.without_item(text, "tasks", "a") == (
        '# --- settings ---\n\n# about settings\n[settings]\nshell = "sh"\n'
    )


def test_removing_an_agent_takes_its_sub_tables() -> None:
    text = (
        '[agents.x]\nbin = "x"\ncommand = "x {prompt}"\n\n[agents.x.models]\nfast = "x-1"\n\n'
        '[agents.y]\nbin = "y"\ncommand = "y {prompt}"\n'
    )
    assert splice.without_item(text, "agents", "x") == (
        '[agents.y]\nbin = "y"\ncommand = "y {prompt}"\n'
    )


def test_lines_inside_multi_line_strings_are_not_comments_or_headers() -> None:
    text = (
        '[tasks.a]\nprompt = """\n# Heading\n[not a header]\n"""\n\n'
        "[tasks.b]\nprompt = '''\n# heading'''\n# below b\n\n[tasks.c]\nprompt = \"c\"\n"
    )
    assert splice.without_item(text, "tasks", "b") == (
        '[tasks.a]\nprompt = """\n# Heading\n[not a header]\n"""\n\n[tasks.c]\nprompt = "c"\n'
    )
    assert splice.without_item(text, "tasks", "a") == (
        "[tasks.b]\nprompt = '''\n# heading'''\n# below b\n\n[tasks.c]\nprompt = \"c\"\n"
    )


def test_arrays_spanning_lines_are_not_headers() -> None:
    text = '[x]\nlist = [\n  [1],\n  # note\n]\n\n[tasks.a]\nprompt = "a"\n'
    assert splice.without_item(text, "tasks", "a") == "[x]\nlist = [\n  [1],\n  # note\n]\n"


def test_the_seed_spelling_context_is_removed_in_place() -> None:
    text = '[context.a]\nprompt = "a"\n\n[context.b]\nprompt = "b"\n'
    assert splice.without_item(text, "context", "a") == '[context.b]\nprompt = "b"\n'


def test_an_inline_item_is_removed_by_tomlkit() -> None:
    text = '# mine\ntasks.a = { prompt = "a" }  # a\ntasks.b = { prompt = "b" }\n'
    assert splice.without_item(text, "tasks", "a") == '# mine\ntasks.b = { prompt = "b" }\n'


# Tables whose lines look like comments, headers or blanks but sit inside strings or arrays.
BODIES = [
    'prompt = "pN"\n',
    'prompt = """\n# not a comment N\n\n[not.a.header]\n"""\n',
    "prompt = '''\n# not a comment N'''\nkeys = [\n  [1], # N\n\n]\n",
    'prompt = """pN ""\\""""\n',
]


@st.composite
def commented_documents(draw: st.DrawFn) -> tuple[str, int, list[str]]:
    """A tasks file with comments above, below and between tables; which one to remove."""
    count = draw(st.integers(1, 5))
    chunks, comments = [], []
    if draw(st.booleans()):
        chunks.append("# file header\n\n")
    for i in range(count):
        mine = []
        if draw(st.booleans()):
            mine.append(f"# above t{i}")
        body = draw(st.sampled_from(BODIES)).replace("N", str(i))
        chunk = (f"# above t{i}\n" if mine else "") + f"[tasks.t{i}]\n{body}"
        if draw(st.booleans()):
            mine.append(f"# below t{i}")
            chunk += f"# below t{i}\n"
        chunk += "\n" * draw(st.integers(0 if i == count - 1 else 1, 2))
        comments.append(mine)
        chunks.append(chunk)
    victim = draw(st.integers(0, count - 1))
    kept = [c for i, mine in enumerate(comments) if i != victim for c in mine]
    return "".join(chunks), victim, kept


@given(commented_documents())
def test_removal_keeps_every_other_comment_in_order(case: tuple[str, int, list[str]]) -> None:
    text, victim, kept = case
    result = splice.without_item(text, "tasks", f"t{victim}")
    tasks = tomllib.loads(result).get("tasks", {})
    before = tomllib.loads(text)["tasks"]
    del before[f"t{victim}"]
    assert tasks == before
    comments = [line for line in result.splitlines() if line.startswith(("# above", "# below"))]
    assert comments == kept
    assert ("# file header" in result) == ("# file header" in text)


# --- adding items and setting keys ----------------------------------------------------------------


def test_a_new_item_follows_the_last_of_its_kind_and_its_comments() -> None:
    text = COMMENTED + '\n# about settings\n[settings]\nshell = "sh"\n'
    result = splice.with_item(text, "tasks", "d", {"alias": "dd", "prompt": "d"})
    assert result == COMMENTED + (
        '\n[tasks.d]\nalias = "dd"\nprompt = "d"\n\n# about settings\n[settings]\nshell = "sh"\n'
    )


def test_a_new_kind_is_appended_after_a_blank_line() -> None:
    result = splice.with_item(COMMENTED, "roles", "r", {"prompt": "r"})
    assert result == COMMENTED + '\n[roles.r]\nprompt = "r"\n'
    assert splice.with_item("x = 1", "roles", "r", {"prompt": "r"}) == (
        'x = 1\n\n[roles.r]\nprompt = "r"\n'
    )
    assert splice.with_item("", "roles", "r", {"prompt": "r"}) == '[roles.r]\nprompt = "r"\n'


def test_multi_line_values_start_on_their_own_line() -> None:
    result = splice.with_item("", "tasks", "t", {"prompt": "Line one\nLine two\n"})
    assert result == "[tasks.t]\nprompt = '''\nLine one\nLine two\n'''\n"


def test_a_value_that_starts_with_a_newline_keeps_it() -> None:
    # Old tomlkit (< 0.15.1) writes such a value so that the parser drops its first newline.
    result = splice.with_item("", "tasks", "t", {"prompt": "\nLine two\n"})
    assert result == "[tasks.t]\nprompt = '''\n\nLine two\n'''\n"


def test_models_become_a_sub_table() -> None:
    fields = {"bin": "x", "command": "x {prompt}", "models": {"fast": "x-1", "big": "x-2"}}
    assert splice.with_item("", "agents", "x", fields) == (
        '[agents.x]\nbin = "x"\ncommand = "x {prompt}"\n\n'
        '[agents.x.models]\nfast = "x-1"\nbig = "x-2"\n'
    )


@settings(max_examples=300)
@given(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"])))
def test_any_string_value_round_trips(value: str) -> None:
    result = splice.with_item(COMMENTED, "tasks", "new", {"prompt": value})
    assert result.startswith(COMMENTED)
    assert tomllib.loads(result)["tasks"]["new"] == {"prompt": value}


def test_setting_an_existing_key_keeps_its_comment() -> None:
    text = '# mine\n[settings]\nshell = "bash"  # my shell\ndefault_role = "r"\n'
    assert splice.with_setting(text, "shell", "zsh") == (
        '# mine\n[settings]\nshell = "zsh"  # my shell\ndefault_role = "r"\n'
    )


def test_a_new_setting_goes_after_the_last_key_not_after_the_next_tables_comment() -> None:
    text = '[settings]\nshell = "bash"\n\n# about a\n[tasks.a]\nprompt = "a"\n'
    assert splice.with_setting(text, "command_timeout", 5) == (
        '[settings]\nshell = "bash"\ncommand_timeout = 5\n\n# about a\n[tasks.a]\nprompt = "a"\n'
    )


def test_a_settings_table_is_appended_when_there_is_none() -> None:
    assert splice.with_setting(COMMENTED, "shell", "zsh") == (
        COMMENTED + '\n[settings]\nshell = "zsh"\n'
    )


def test_unsetting_removes_only_that_key() -> None:
    text = '[settings]\n# the shell\nshell = "bash"  # mine\ndefault_role = "r"\n\n# a\n[tasks.a]\n'
    assert splice.without_setting(text, "shell") == (
        '[settings]\n# the shell\ndefault_role = "r"\n\n# a\n[tasks.a]\n'
    )
    assert splice.without_setting(text, "command_timeout") == text


def test_an_edit_that_cannot_be_made_cleanly_is_refused() -> None:
    with pytest.raises(splice.EditError) as caught:
        splice.with_item("tasks = 3\n", "tasks", "t", {"prompt": "p"})
    assert str(caught.value) == "'tasks' is not a table"


# --- settings values ------------------------------------------------------------------------------


def test_settings_are_typed_from_the_schema() -> None:
    assert edit.parse_setting("command_timeout", "12") == 12
    assert edit.parse_setting("shell", "zsh") == "zsh"
    with pytest.raises(UsageError) as caught:
        edit.parse_setting("command_timeout", "soon")
    assert (
        str(caught.value)
        == "command_timeout must be a whole number of seconds from 1 to 86400 (a day), not 'soon'"
    )
    with pytest.raises(UsageError) as caught:
        edit.parse_setting("command_timeout", "0")
    assert (
        str(caught.value)
        == "command_timeout must be a whole number of seconds from 1 to 86400 (a day), not 0"
    )
    with pytest.raises(UsageError) as caught:
        edit.parse_setting("shel", "zsh")
    assert str(caught.value) == "unknown setting 'shel'; did you mean 'shell'?"


# --- adding and removing items: where the item is -----------------------------------------------


def test_adding_an_existing_item_is_refused(global_dir: Path) -> None:
    write_tree(global_dir, {"tasks.toml": '[tasks.t]\nprompt = "p"\n'})
    with pytest.raises(StartError) as caught:
        edit.add_item(scope(), "tasks", "t", {"prompt": "q"})
    assert str(caught.value) == (
        f"task 't' already exists in {global_dir / 'tasks.toml'}; remove it first "
        "('start config remove task t') or change it with 'start config edit'"
    )


def test_removing_an_item_of_another_layer_says_where_it_is(isolated: Path) -> None:
    write_tree(isolated, {".start/config.toml": '[tasks.mine]\nprompt = "p"\n'})
    with pytest.raises(edit.NotInLayerError) as caught:
        edit.remove_item(scope(), "tasks", "mine")
    assert str(caught.value) == (
        "task 'mine' is not defined in the global config; it is defined in the project layer "
        f"({isolated / '.start/config.toml'}); use --project to edit the project's config"
    )
    assert caught.value.exit_code == 4
    with pytest.raises(edit.NotInLayerError) as caught:
        edit.remove_item(scope(), "tasks", "gdr")
    assert str(caught.value) == (
        "task 'gdr' is not defined in the global config; "
        "it is the alias of task 'git-diff-review' (built-in)"
    )


def test_editing_modules_import_without_click_rich_or_tomlkit() -> None:
    code = (
        "import sys, start.setup.edit, start.config.splice\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich', 'tomlkit')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
