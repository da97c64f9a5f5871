"""What real command libraries showed (issue 29): names with `:`, linked folders, and the edges
of each source's substitution. Each test has the smallest input that shows its defect."""

from __future__ import annotations

from pathlib import Path

import pytest

from start.base.errors import UsageError
from start.config.load import load
from start.proc import shell
from tests.config.interop.conftest import GLOBAL, compose
from tests.conftest import invoke, run_start, write_tree


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (isolated / ".git").mkdir()
    write_tree(Path.home() / ".config" / "start", {"config.toml": GLOBAL})
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    return isolated


def text(root: Path, task: str, instructions: str | None = None, **kwargs: object) -> str:
    prepared = compose(root, task, instructions, **kwargs)  # type: ignore[arg-type]
    assert prepared.composition.task is not None
    return prepared.composition.task.text


# --- 1. names with `:` -----------------------------------------------------------------------


def test_a_colon_in_a_file_name_separates_segments_as_in_claude_code(project: Path) -> None:
    """`svelte/svelte:a11y.md` is Claude Code's /svelte:svelte:a11y, so start's
    claude:svelte:svelte:a11y: it runs, `start show` shows it, completion offers it."""
    write_tree(project, {".claude/commands/svelte/svelte:a11y.md": "Check $ARGUMENTS\n"})
    config = load(str(project))
    task = config.tasks["claude:svelte:svelte:a11y"]
    assert task.imported is not None and task.imported.command == "/svelte:svelte:a11y"
    assert text(project, "claude:svelte:svelte:a11y", "App.svelte") == "Check App.svelte\n"
    shown = invoke("show", "claude:svelte:svelte:a11y", "--no-pager")
    assert shown.exit_code == 0, shown.stderr
    assert "Check $ARGUMENTS" in shown.stdout
    env = {
        "_START_COMPLETE": "bash_complete",
        "COMP_WORDS": "start task claude:svelte:sv",
        "COMP_CWORD": "2",
    }
    completed = run_start(env=env, cwd=project)
    assert (completed.returncode, completed.stderr) == (0, "")
    assert completed.stdout == "plain,claude:svelte:svelte:a11y\n"


def test_a_colon_with_an_empty_part_is_still_refused(project: Path) -> None:
    write_tree(project, {".claude/commands/a::b.md": "x\n"})
    path = project / ".claude" / "commands" / "a::b.md"
    assert [str(p) for p in load(str(project)).problems if p.file == str(path)] == [
        f"{path}: not imported: 'a::b' cannot be part of a task name (letters, digits, '_', "
        "'.' and '-', not starting with '.' or '-'; a ':' between two such parts)"
    ]


def test_opencode_and_codex_keep_the_colon_in_their_own_command(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(project, {".opencode/command/svelte/svelte:a11y.md": "x\n"})
    write_tree(Path.home(), {".codex/prompts/a:b.md": "y\n"})
    tasks = load(str(project)).tasks
    opencode = tasks["opencode:svelte:svelte:a11y"].imported
    codex = tasks["codex:a:b"].imported
    assert opencode is not None and opencode.command == "/svelte/svelte:a11y"
    assert codex is not None and codex.command == "/prompts:a:b"


# --- 3. Claude Code's `$N` ends at a word boundary --------------------------------------------


def test_claude_dollar_number_is_not_followed_by_a_word_character(project: Path) -> None:
    """Claude Code's `\\$(\\d+)(?!\\w)`: `$1M` and `$1x` are text, `$10` is the word numbered
    10, and without it stays as written."""
    write_tree(project, {".claude/commands/cost.md": "Costs $1M, $10, $1x\n"})
    assert text(project, "claude:cost", "a b c") == "Costs $1M, $10, $1x\n\n\nARGUMENTS: a b c"
    many = " ".join(f"w{n}" for n in range(11))
    assert text(project, "claude:cost", many) == "Costs $1M, w10, $1x\n"


# --- 4. a placeholder right after `@` ---------------------------------------------------------


def test_claude_fills_a_placeholder_right_after_an_at_sign(project: Path) -> None:
    write_tree(project, {".claude/commands/see.md": "See @$1 and @$ARGUMENTS.\n"})
    assert text(project, "claude:see", "a b") == "See @b and @a b.\n"


def test_opencode_fills_a_placeholder_right_after_an_at_sign(project: Path) -> None:
    write_tree(project, {".opencode/command/see.md": "See @$1 and @$ARGUMENTS.\n"})
    assert text(project, "opencode:see", "a b") == "See @a b and @a b."


# --- 5. Gemini CLI's `@{{args}}` ---------------------------------------------------------------


def test_gemini_fills_args_inside_an_at_brace(project: Path) -> None:
    """Gemini CLI's file step finds no file `{args}` and leaves the text; its argument step then
    fills `{{args}}` (atFileProcessor.ts, shellProcessor.ts)."""
    write_tree(project, {".gemini/commands/read.toml": 'prompt = "Read @{{args}}"\n'})
    assert text(project, "gemini:read", "x.md") == "Read @x.md"


# --- 6. Codex accepts a KEY=value the prompt does not use ---------------------------------------


def test_codex_accepts_a_named_argument_the_prompt_does_not_use(project: Path) -> None:
    write_tree(Path.home(), {".codex/prompts/t.md": "Review $FILE\n"})
    prepared = compose(project, "codex:t", params=(("FILE", "a.py"), ("FOCUS", "tests")))
    assert prepared.composition.task is not None
    assert prepared.composition.task.text == "Review a.py\n"
    assert prepared.composition.notes == (
        "codex:t: the prompt does not use FOCUS=...; accepted and not used, as Codex does",
    )


def test_a_parameter_of_another_task_is_still_refused(project: Path) -> None:
    write_tree(Path.home(), {".claude/commands/t.md": "Review $ARGUMENTS\n"})
    with pytest.raises(UsageError) as caught:
        compose(project, "claude:t", params=(("FOCUS", "tests"),))
    assert str(caught.value) == "task 'claude:t' has no parameters; drop -p FOCUS=..."


# --- 7. Gemini CLI runs a command's snippets in order -----------------------------------------

# The first snippet waits (up to a second) for the second one to have run; in order, it never has.
WAITS = "i=0; while [ ! -e two ] && [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done; ls"


def test_gemini_snippets_run_one_after_another(project: Path) -> None:
    prompt = f"!{{{WAITS}}}\\n!{{touch two}}"
    write_tree(project, {".gemini/commands/two.toml": f'prompt = "{prompt}"\n'})
    assert "two" not in text(project, "gemini:two", run=shell.run_all).split("\n")[0]
    assert (project / "two").exists()


# --- 8. Qwen Code's `$ARGUMENTS` ---------------------------------------------------------------


def test_qwen_keeps_dollar_arguments_outside_a_shell_command(project: Path) -> None:
    """Qwen Code 0.24.4 (shellProcessor.ts, argumentProcessor.ts in its npm bundle): outside
    `!{...}` `$ARGUMENTS` is text, and a prompt without `{{args}}` gets the typed line."""
    write_tree(project, {".qwen/commands/q.md": "Do $ARGUMENTS\n"})
    assert text(project, "qwen:q", "x") == "Do $ARGUMENTS\n\n/q x"
    path = project / ".qwen" / "commands" / "q.md"
    assert [str(p) for p in load(str(project)).problems if p.file == str(path)] == [
        f"{path}:1:1: $ARGUMENTS outside !{{...}} is kept as written, as Qwen Code 0.24.4 does "
        "(it fills it only in a shell command); write {{args}} for the arguments"
    ]


def test_qwen_fills_dollar_arguments_inside_a_shell_command(project: Path) -> None:
    write_tree(project, {".qwen/commands/q.toml": 'prompt = "!{printf %s $ARGUMENTS}"\n'})
    assert text(project, "qwen:q", "x", run=shell.run_all) == "x\n\n/q x"
    write_tree(project, {".qwen/commands/r.toml": 'prompt = "!{printf %s $ARGUMENTS} {{args}}"\n'})
    assert text(project, "qwen:r", "x", run=shell.run_all) == "x x"


def test_a_chain_runs_in_order_beside_commands_that_run_at_once(tmp_path: Path) -> None:
    """Within a chain one command at a time, even past one that cannot start; the command of
    no chain runs at the same time as the chain's first."""

    here = tmp_path / "here"
    here.mkdir()

    def spec(command: str, chain: str = "", cwd: Path = here) -> shell.CommandSpec:
        return shell.CommandSpec(command, None, 30.0, str(cwd), chain=chain)

    def wait(name: str) -> str:
        return f"i=0; while [ ! -e {name} ] && [ $i -lt 40 ]; do sleep 0.05; i=$((i+1)); done"

    results = shell.run_all(
        [
            spec(f"touch a; {wait('c')}; {wait('b')}; ls", "x"),
            spec("true", "x", cwd=tmp_path / "missing"),
            spec("touch b", "x"),
            spec(f"{wait('a')}; touch c"),
        ]
    )
    assert results[0].output.split() == ["a", "c"]
    assert results[1].error == f"working directory '{tmp_path / 'missing'}' does not exist"
    assert results[2].ok and results[3].ok
    assert (here / "b").exists()


# --- 2. symlinked folders -----------------------------------------------------------------------


def problems(root: Path) -> list[str]:
    return [str(p) for p in load(str(root)).problems]


def imported(root: Path) -> dict[str, str]:
    tasks = load(str(root)).tasks.values()
    return {t.name: t.origin.layer for t in tasks if t.imported is not None}


def test_a_folder_linked_inside_the_root_is_read(project: Path) -> None:
    """One library links `.claude/commands/git` to `../../src/commands/git`; Claude Code follows
    it (`rg --follow`), and so does start while the link stays inside the project root."""
    write_tree(
        project, {"src/commands/git/commit.md": "Commit\n", ".claude/commands/own.md": "x\n"}
    )
    (project / ".claude" / "commands" / "git").symlink_to("../../src/commands/git")
    assert imported(project) == {"claude:git:commit": "project", "claude:own": "project"}
    assert problems(project) == []


def test_a_folder_linked_outside_the_root_stays_refused(project: Path, tmp_path: Path) -> None:
    write_tree(tmp_path / "elsewhere", {"x.md": "x\n"})
    link = project / ".claude" / "commands" / "git"
    link.parent.mkdir(parents=True)
    link.symlink_to(tmp_path / "elsewhere")
    assert imported(project) == {}
    assert problems(project) == [
        f"{link}: not imported: leads outside the project root (to {tmp_path / 'elsewhere'}) "
        "through a symlink; start does not read it"
    ]


def test_a_user_folder_may_link_inside_the_home_only(project: Path, tmp_path: Path) -> None:
    home = Path.home()
    write_tree(home, {"dotfiles/cmds/a.md": "a\n"})
    write_tree(tmp_path / "elsewhere", {"b.md": "b\n"})
    commands = home / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "mine").symlink_to(home / "dotfiles" / "cmds")
    (commands / "theirs").symlink_to(tmp_path / "elsewhere")
    assert imported(project) == {"claude:mine:a": "imported"}
    assert problems(project) == [
        f"{commands / 'theirs'}: not imported: leads outside the home directory (to "
        f"{tmp_path / 'elsewhere'}) through a symlink; start does not read it"
    ]


def test_a_folder_linked_twice_or_in_a_loop_is_read_once(project: Path) -> None:
    write_tree(project, {".claude/commands/a/x.md": "x\n"})
    commands = project / ".claude" / "commands"
    (commands / "b").symlink_to("a")
    (commands / "a" / "loop").symlink_to("..")
    assert imported(project) == {"claude:a:x": "project"}
    assert problems(project) == [
        f"{commands / 'a' / 'loop'}: not imported: is the folder {commands}, which start already "
        "read",
        f"{commands / 'b'}: not imported: is the folder {commands / 'a'}, which start already read",
    ]


def test_trust_covers_a_linked_folder_its_files_and_its_target(project: Path) -> None:
    """The approval pins the bytes read through the link and the link itself: a file changed in
    the target, or the link pointed at another folder (even one with the same files), asks
    again (exit 5 without a terminal)."""
    write_tree(
        project,
        {
            "src/commands/git/commit.md": "Commit\n",
            "copy/git/commit.md": "Commit\n",
            ".claude/commands/.keep": "",
        },
    )
    link = project / ".claude" / "commands" / "git"
    link.symlink_to("../../src/commands/git")
    env = {"START_TRUSTED_PATHS": ""}

    def launch() -> tuple[int, str]:
        result = run_start("task", "claude:git:commit", "--dry-run", cwd=project, env=env)
        return result.returncode, result.stderr

    assert launch()[0] == 5
    assert run_start("trust", "--yes", cwd=project, env=env).returncode == 0
    assert launch() == (0, "")
    target = project / "src" / "commands" / "git" / "commit.md"
    target.write_text("Commit and push\n")
    assert launch() == (
        5,
        f"start: {project / '.claude' / 'commands'} is not trusted (1 file changed since "
        "approval); run 'start trust' to review it\n",
    )
    target.write_text("Commit\n")
    assert launch() == (0, "")
    link.unlink()
    link.symlink_to("../../copy/git")
    assert launch() == (
        5,
        f"start: {project / '.claude' / 'commands'} is not trusted (1 file changed since "
        "approval); run 'start trust' to review it\n",
    )


def test_a_claude_command_without_output_says_so_as_claude_code_does(project: Path) -> None:
    """What `claude -p` 2.1.332 sent for claudekit's checkpoint:create, whose `git stash` printed
    nothing."""
    write_tree(project, {".claude/commands/e.md": "Out: !`true`\n"})
    assert text(project, "claude:e", run=shell.run_all) == "Out: (Bash completed with no output)\n"


def test_qwen_shows_dollar_arguments_as_it_pastes_them(project: Path) -> None:
    """Qwen Code's failure line: `$ARGUMENTS` without one pair of outer single quotes, or quoted
    like `{{args}}` when it looks like shell syntax (checkArgumentSafety)."""
    write_tree(project, {".qwen/commands/q.toml": 'prompt = "!{false $ARGUMENTS {{args}}}"\n'})
    got = text(project, "qwen:q", "'a b'", run=shell.run_all)
    assert got == "\n[Shell command 'false a b \"'a b'\"' exited with code 1]"
    got = text(project, "qwen:q", "a;b", run=shell.run_all)
    assert got == "\n[Shell command 'false a\\;b a\\;b' exited with code 1]"
