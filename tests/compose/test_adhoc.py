"""Ad-hoc inputs on every launch command: `-c NAME|PATH`, `-r NAME|PATH`, `start task PATH`.

A name wins over a path of the same spelling, `./name` forces a path, and a file named on the
command line is read through the project root's wall: never from outside what the user named.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.base.test_wall import CANARY, World
from tests.conftest import FAKE_AGENT, git, invoke, run_start, write_tree


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


CONFIG = f'''
[settings]
default_agent = "fake"
default_role = "plain"

[agents.fake]
bin = "{FAKE_AGENT}"
command = "{{bin}} --append-system-prompt '{{role}}' '{{prompt}}'"

[roles.plain]
prompt = "be plain"

[roles.notes]
prompt = "the notes role"

[contexts.first]
prompt = "FIRST"
required = true

[contexts.optional]
prompt = "OPTIONAL"

[contexts.notes]
prompt = "the notes context"

[tasks.notes]
prompt = "the notes task: {{instructions}}"
'''


@pytest.fixture
def repo(isolated: Path) -> Path:
    """A git repository (the working directory, with no .start/) and a global config."""
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    write_tree(isolated, {"NOTES.md": "my notes\n", "notes": "a file called notes\n"})
    return isolated


def dry(*args: str) -> dict[str, Any]:
    result = invoke(*args, "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def contexts(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["name"], c["source"]) for c in data["contexts"]]


# --- -c NAME|PATH --------------------------------------------------------------------------


def test_c_adds_an_optional_context_by_name_in_definition_order(repo: Path) -> None:
    data = dry("prompt", "-c", "optional", "hi")
    assert [c["name"] for c in data["contexts"]] == ["first", "optional"]
    assert data["prompt"] == "FIRST\n\nOPTIONAL\n\nhi"


def test_c_adds_a_file_after_the_configs_contexts(repo: Path) -> None:
    data = dry("prompt", "-c", "NOTES.md", "hi")
    assert contexts(data) == [("first", "prompt"), ("NOTES.md", f"file {repo / 'NOTES.md'}")]
    assert data["prompt"] == "FIRST\n\nmy notes\n\nhi"


def test_c_works_on_every_launch_command_and_wherever_it_is_given(repo: Path) -> None:
    session = dry("-c", "NOTES.md")
    assert session["prompt"].endswith("my notes\n")
    both = dry("-c", "NOTES.md", "task", "notes", "-c", "optional", "go")
    assert [c["name"] for c in both["contexts"]] == ["first", "optional", "NOTES.md"]
    assert both["prompt"] == "FIRST\n\nOPTIONAL\n\nmy notes\n\nthe notes task: go"


def test_a_context_named_twice_is_included_once(repo: Path) -> None:
    data = dry("prompt", "-c", "first", "-c", "NOTES.md", "-c", "NOTES.md", "hi")
    assert [c["name"] for c in data["contexts"]] == ["first", "NOTES.md"]


def test_a_name_wins_over_a_file_of_the_same_spelling_and_dot_slash_forces_the_path(
    repo: Path,
) -> None:
    assert dry("prompt", "-c", "notes", "hi")["prompt"] == "FIRST\n\nthe notes context\n\nhi"
    assert dry("prompt", "-c", "./notes", "hi")["prompt"] == "FIRST\n\na file called notes\n\nhi"


def test_a_relative_path_is_relative_to_the_working_directory(repo: Path) -> None:
    write_tree(repo, {"sub/HERE.md": "here\n"})
    data = dry("-d", str(repo / "sub"), "prompt", "-c", "HERE.md", "-c", "../NOTES.md", "hi")
    assert data["prompt"] == "FIRST\n\nhere\n\nmy notes\n\nhi"


def test_a_home_path_and_an_absolute_path_outside_the_project_are_read(
    repo: Path, isolated: Path
) -> None:
    home = isolated.parent / "home"
    (home / "mine.md").write_text("in my home\n")
    (home / "other.md").write_text("other\n")
    data = dry("prompt", "-c", "~/mine.md", "-c", str(home / "other.md"), "hi")
    assert [c["name"] for c in data["contexts"]] == ["first", "~/mine.md", str(home / "other.md")]
    assert data["prompt"] == "FIRST\n\nin my home\n\nother\n\nhi"
    # The same file spelt two ways is one context.
    again = dry("prompt", "-c", "~/mine.md", "-c", str(home / "mine.md"), "hi")
    assert [c["name"] for c in again["contexts"]] == ["first", "~/mine.md"]


def test_an_unknown_name_exits_4_with_did_you_mean(repo: Path) -> None:
    result = invoke("prompt", "-c", "optinal", "hi")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown context 'optinal'; did you mean 'optional'?\n",
    )


@pytest.mark.parametrize("word", ["MISSING.md", "./optional", "docs/x.md", "~/nope.md"])
def test_a_path_to_nothing_exits_2(repo: Path, isolated: Path, word: str) -> None:
    result = invoke("prompt", "-c", word, "hi")
    where = Path(os.path.expanduser(word)) if word.startswith("~") else repo / word
    assert (result.exit_code, result.stderr) == (
        2,
        f"start: context '{word}': no such file: {where}\n",
    )


def test_a_directory_or_a_fifo_exits_2_without_blocking(repo: Path) -> None:
    (repo / "dir").mkdir()
    os.mkfifo(repo / "pipe")
    result = invoke("prompt", "-c", "dir", "hi")
    assert (result.exit_code, result.stderr) == (
        2,
        f"start: context 'dir': cannot read {repo / 'dir'}: is a directory, not a regular file\n",
    )
    result = invoke("prompt", "-c", "pipe", "hi")
    assert (result.exit_code, result.stderr) == (
        2,
        f"start: context 'pipe': cannot read {repo / 'pipe'}: is a FIFO (named pipe), not a "
        "regular file\n",
    )


def test_a_file_over_the_size_limit_is_cut_with_a_warning(repo: Path, isolated: Path) -> None:
    config = isolated.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(config.read_text().replace("[settings]", "[settings]\nfile_size_limit = 4"))
    (repo / "big.md").write_text("abcdefgh")
    result = invoke("prompt", "-c", "big.md", "hi", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "abcd\n[... truncated 4 bytes ...]\n" in result.stdout
    assert (
        f"  ⚠ context big.md: {repo / 'big.md'} is cut to its first 4 bytes; 4 more were left "
        "out (settings.file_size_limit)\n"
    ) in result.stdout


def test_a_command_output_over_the_limit_is_cut_with_a_warning(repo: Path, isolated: Path) -> None:
    config = isolated.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(
        config.read_text().replace("[settings]", "[settings]\ncommand_output_limit = 6")
        + '\n[tasks.big]\ncommand = "printf abcdefghij"\nprompt = "{command_output}"\n'
    )
    result = invoke("task", "big", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "[... truncated 4 bytes ...]" in result.stdout
    assert (
        "  ⚠ task big: its command's output is cut to 6 bytes; 4 more were left out "
        "(settings.command_output_limit)\n"
    ) in result.stdout


def test_the_summary_names_a_context_file_as_given(repo: Path) -> None:
    result = invoke("prompt", "-c", "NOTES.md", "hi", "--dry-run")
    assert "  contexts      ✓ first  ✓ NOTES.md\n" in result.stdout


# --- -r NAME|PATH --------------------------------------------------------------------------


def test_r_takes_a_role_file(repo: Path) -> None:
    (repo / "ROLE.md").write_text("You are {terse}.\n")
    data = dry("prompt", "-r", "ROLE.md", "hi")
    assert data["role"] == "ROLE.md"
    assert data["role_text"] == "You are {terse}.\n"  # a role file is data, not a template


def test_r_prefers_the_name_and_dot_slash_forces_the_file(repo: Path) -> None:
    assert dry("prompt", "-r", "notes", "hi")["role_text"] == "the notes role"
    assert dry("prompt", "-r", "./notes", "hi")["role_text"] == "a file called notes\n"


def test_r_with_an_unknown_name_or_a_missing_file(repo: Path) -> None:
    result = invoke("prompt", "-r", "plian", "hi")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown role 'plian'; did you mean 'plain'?\n",
    )
    result = invoke("prompt", "-r", "./plain", "hi")
    assert (result.exit_code, result.stderr) == (
        2,
        f"start: role './plain': no such file: {repo / 'plain'}\n",
    )


def test_a_tasks_own_role_is_still_a_name(repo: Path, isolated: Path) -> None:
    config = isolated.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(config.read_text() + '\n[tasks.t]\nprompt = "p"\nrole = "notes"\n')
    assert dry("task", "t")["role_text"] == "the notes role"


# --- start task PATH -----------------------------------------------------------------------


def test_a_task_file_is_a_template(repo: Path) -> None:
    (repo / "review.md").write_text("Review {file} on {{date}}: {instructions}\n")
    data = dry("task", "review.md", "be strict")
    assert data["task"] == "review.md"
    assert data["prompt"] == f"FIRST\n\nReview {repo / 'review.md'} on {{date}}: be strict\n"


def test_instructions_are_appended_to_a_task_file_without_the_placeholder(repo: Path) -> None:
    (repo / "t.txt").write_text("Do the thing.\n")
    assert dry("task", "./t.txt", "now")["prompt"] == "FIRST\n\nDo the thing.\n\nnow"


def test_a_task_name_wins_over_a_file_and_dot_slash_forces_it(repo: Path) -> None:
    assert dry("task", "notes", "x")["prompt"] == "FIRST\n\nthe notes task: x"
    assert dry("task", "./notes", "x")["prompt"] == "FIRST\n\na file called notes\n\nx"


def test_a_task_prefix_is_still_a_name(repo: Path) -> None:
    (repo / "not").write_text("a file\n")
    assert dry("task", "not", "x")["prompt"] == "FIRST\n\nthe notes task: x"


def test_the_summary_names_the_task_file(repo: Path) -> None:
    (repo / "t.md").write_text("T\n")
    result = invoke("task", "t.md", "--dry-run")
    assert f"  task          t.md  (command line: {repo / 't.md'})\n" in result.stdout


def test_a_task_file_takes_no_parameters(repo: Path) -> None:
    (repo / "t.md").write_text("T {focus}\n")
    result = invoke("task", "t.md", "-p", "focus=x")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: task 't.md' has no parameters; drop -p focus=...\n",
    )


def test_an_unknown_task_word_exits_4_and_a_missing_task_file_2(repo: Path) -> None:
    result = invoke("task", "nots")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown task 'nots'; did you mean 'notes'?\n",
    )
    result = invoke("task", "nots.md")
    assert (result.exit_code, result.stderr) == (
        2,
        f"start: task 'nots.md': no such file: {repo / 'nots.md'}\n",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("task", "révision"), "start: unknown task 'révision'; did you mean 'revision'?\n"),
        (("task", "Notes"), "start: unknown task 'Notes'; did you mean 'notes'?\n"),
        (
            ("task", "claude:reveiw"),
            "start: unknown task 'claude:reveiw'; did you mean 'claude:review'?\n",
        ),
        (
            ("prompt", "-c", "NOTES", "hi"),
            "start: unknown context 'NOTES'; known contexts: first, notes, optional, project-guide\n",
        ),
        (("-r", "Plain"), "start: unknown role 'Plain'; did you mean 'plain'?\n"),
    ],
)
def test_a_word_that_is_no_path_is_an_unknown_name(
    repo: Path, args: tuple[str, ...], message: str
) -> None:
    """Only a word with a `/`, a text file's extension, or a file there is read as a path."""
    tasks = "[tasks.revision]\nprompt = 'r'\n[tasks.'claude:review']\nprompt = 'c'\n"
    write_tree(repo.parent / "home/.config/start", {"tasks.toml": tasks})
    result = invoke(*args, "--dry-run")
    assert (result.exit_code, result.stdout, result.stderr) == (4, "", message)


def test_an_ad_hoc_launch_end_to_end(repo: Path) -> None:
    (repo / "t.md").write_text("Task: {instructions}\n")
    (repo / "ROLE.md").write_text("role from a file\n")
    record = repo.parent / "record.json"
    proc = run_start(
        "task", "./t.md", "-c", "NOTES.md", "-r", "ROLE.md", "-q", "go",
        cwd=repo, env={"FAKE_AGENT_RECORD": str(record)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    argv = json.loads(record.read_text())["argv"]
    assert argv == [
        "--append-system-prompt",
        "role from a file\n",
        "FIRST\n\nmy notes\n\nTask: go\n",
    ]


# --- the wall: never read from outside what the user named ---------------------------------


def test_a_path_in_the_project_that_a_symlink_leads_outside_is_refused(world: World) -> None:
    """The clone's NOTES.md becomes a link to a secret with a `git pull`; `-c NOTES.md` (and
    `-r`, and `start task`, and an absolute spelling) then exit 5 without reading it."""
    world.publish({"NOTES.md": "notes\n"})
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    ok = world.start("prompt", "-c", "NOTES.md", "hi")
    assert ok.returncode == 0, ok.stderr
    record = world.agent_record()
    assert record is not None and "notes\n" in record["argv"][-1]

    world.link_upstream("NOTES.md", "../../.aws/credentials")
    git(world.clone, "pull", "-q", "--no-rebase")
    assert (world.clone / "NOTES.md").read_text() == CANARY + "\n"  # the trap is set
    message = (
        f"start: {world.clone}/NOTES.md leads outside the project root (to {world.secret}) "
        "through a symlink; start does not follow it. Name the file by its real path if you mean "
        "it.\n"
    )
    for args in (
        ("prompt", "-c", "NOTES.md", "hi"),
        ("prompt", "-c", "./NOTES.md", "hi"),
        ("prompt", "-c", str(world.clone / "NOTES.md"), "hi"),
        ("prompt", "-r", "NOTES.md", "hi"),
        ("task", "NOTES.md", "x"),
        ("prompt", "-c", "NOTES.md", "hi", "--dry-run"),
    ):
        result = world.start(*args)
        assert (result.returncode, result.stderr) == (5, message), args
        world.assert_no_canary(result.stdout, result.stderr)


def test_a_directory_symlink_in_the_project_cannot_lead_a_path_outside(world: World) -> None:
    world.publish({"README.md": "x\n"})
    world.link_upstream("docs", "../../.aws")
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    result = world.start("prompt", "-c", "docs/credentials", "hi")
    assert result.returncode == 5
    world.assert_no_canary(result.stdout, result.stderr)


def test_the_real_path_outside_the_project_is_read_when_named(world: World) -> None:
    world.publish({"README.md": "x\n"})
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    notes = world.home / "notes.md"
    notes.write_text("my own notes\n")
    result = world.start("prompt", "-c", str(notes), "-c", "../../notes.md", "hi")
    assert result.returncode == 0, result.stderr
    record = world.agent_record()
    assert record is not None
    assert record["argv"][-1] == "my own notes\n\nmy own notes\n\nhi"


def test_a_file_on_the_command_line_needs_no_trust_but_the_project_still_does(
    world: World,
) -> None:
    """No question for the user's own file; an approved project stays approved; an unapproved
    .start/ is still refused, whatever is named on the command line."""
    world.publish({"NOTES.md": "notes\n", ".start/config.toml": '[contexts.c]\nprompt = "C"\n'})
    git(world.upstream.parent, "clone", "-q", str(world.upstream), str(world.clone))
    refused = world.start("prompt", "-c", "NOTES.md", "hi")
    assert refused.returncode == 5
    assert world.start("trust", "--yes").returncode == 0
    (world.clone / "NEW.md").write_text("new\n")
    result = world.start("prompt", "-c", "NEW.md", "hi")
    assert result.returncode == 0, result.stderr
    record = world.agent_record()
    assert record is not None and record["argv"][-1] == "new\n\nhi"
