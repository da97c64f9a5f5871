"""The import layer: which files become which tasks, in which layer, and what validate says."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from start.base import fs
from start.base.errors import ConfigError
from start.compose import resolve
from start.compose.ask import Ask
from start.config import interop
from start.config.interop import dirs
from start.config.load import load
from tests.config.interop.conftest import GLOBAL, Layout, compose
from tests.conftest import invoke, write_tree

USER = Path("~").expanduser


def config_dir() -> Path:
    return Path.home() / ".config" / "start"


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (isolated / ".git").mkdir()
    write_tree(config_dir(), {"config.toml": GLOBAL})
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    return isolated


def setting(line: str) -> str:
    return GLOBAL.replace("[settings]", f"[settings]\n{line}")


def names(root: Path) -> dict[str, str]:
    """Imported task names and their layers."""
    config = load(str(root))
    return {t.name: t.origin.layer for t in config.tasks.values() if t.imported is not None}


def problems(root: Path, path: Path) -> list[str]:
    return [str(p) for p in load(str(root)).problems if p.file == str(path)]


# --- names -----------------------------------------------------------------------------------


def test_every_fixture_library_is_imported(layout: Layout) -> None:
    """Names are SOURCE:PATH with folders as `:` segments; Codex reads only the top level
    (codex-rs/core/src/custom_prompts.rs), so team/triage.md is not a task."""
    found: dict[str, str] = {}
    for form in ("claude", "gemini", "qwen", "codex", "opencode"):
        found.update(names(layout(form)))
    assert found == {
        "claude:standup": "imported",
        "claude:docs:explain": "project",
        "claude:fix-issue": "project",
        "claude:frontend:component": "project",
        "claude:git:commit": "project",
        "claude:release:notes": "project",
        "claude:review:pr": "project",
        "gemini:standup": "imported",
        "gemini:api-payload": "project",
        "gemini:git:commit": "project",
        "gemini:grep-code": "project",
        "gemini:refactor:pure": "project",
        "gemini:release:notes": "project",
        "gemini:review": "project",
        "qwen:git:commit": "project",
        "qwen:review": "project",
        "codex:draftpr": "imported",
        "codex:env-check": "imported",
        "codex:explain": "imported",
        "codex:review-file": "imported",
        "codex:ticket": "imported",
        "opencode:standup": "imported",
        "opencode:component": "project",
        "opencode:create-file": "project",
        "opencode:explain-error": "project",
        "opencode:git:review": "project",
        "opencode:test": "project",
    }


def test_gemini_names_are_sanitized_like_gemini_cli(project: Path) -> None:
    """FileCommandLoader.ts: characters outside [a-zA-Z0-9_-.] become `_`, a segment over 50
    characters is cut to 47 and `...`."""
    long = "x" * 60
    write_tree(
        project,
        {
            ".gemini/commands/my cmd.toml": 'prompt = "a"\n',
            f".gemini/commands/{long}.toml": 'prompt = "b"\n',
        },
    )
    assert set(names(project)) == {"gemini:my_cmd", f"gemini:{'x' * 47}..."}


def test_a_name_start_cannot_spell_is_skipped_with_a_warning(project: Path) -> None:
    write_tree(project, {".claude/commands/my cmd.md": "hi\n", ".claude/commands/ok.md": "ok\n"})
    assert set(names(project)) == {"claude:ok"}
    path = project / ".claude" / "commands" / "my cmd.md"
    assert problems(project, path) == [
        f"{path}: not imported: 'my cmd' cannot be part of a task name (letters, digits, '_', "
        "'.' and '-', not starting with '.' or '-'; a ':' between two such parts)"
    ]


def test_hidden_files_and_other_suffixes_are_not_commands(project: Path) -> None:
    write_tree(
        project,
        {
            ".claude/commands/.draft.md": "x\n",
            ".claude/commands/.wip/a.md": "x\n",
            ".claude/commands/notes.txt": "x\n",
            ".claude/commands/README.MD": "x\n",
            ".claude/commands/real.md": "x\n",
        },
    )
    assert set(names(project)) == {"claude:real"}


def test_opencode_reads_command_and_commands(project: Path) -> None:
    """config/command.ts globs `{command,commands}/**/*.md`; nested folders keep their path
    (`/git/review`), which start spells with `:`."""
    write_tree(
        project,
        {
            ".opencode/command/a.md": "a\n",
            ".opencode/commands/deep/b.md": "b\n",
        },
    )
    assert set(names(project)) == {"opencode:a", "opencode:deep:b"}


# --- layers ----------------------------------------------------------------------------------


def test_a_project_command_shadows_a_user_one_and_validate_says_so(project: Path) -> None:
    """start's layering (decision D-C7): the project layer wins, as in Gemini CLI, Qwen Code
    and opencode; Claude Code lets the personal one win, which the warning says."""
    write_tree(Path.home(), {".claude/commands/review.md": "mine\n"})
    write_tree(project, {".claude/commands/review.md": "theirs\n"})
    assert names(project) == {"claude:review": "project"}
    mine = Path.home() / ".claude" / "commands" / "review.md"
    assert problems(project, mine) == [
        f"{mine}: 'claude:review' is shadowed by the project's "
        f"{project / '.claude/commands/review.md'}: the project layer wins (Claude Code itself "
        "would use this personal one)"
    ]


def test_user_config_replaces_an_imported_task(project: Path) -> None:
    write_tree(Path.home(), {".claude/commands/review.md": "imported\n"})
    write_tree(
        config_dir(),
        {"tasks.toml": '[tasks."claude:review"]\nprompt = "mine: {instructions}"\n'},
    )
    config = load(str(project), strict=True)
    task = config.tasks["claude:review"]
    assert (task.origin.layer, task.imported, task.prompt) == (
        "global",
        None,
        "mine: {instructions}",
    )


def test_a_project_start_task_replaces_a_project_command(project: Path) -> None:
    write_tree(
        project,
        {
            ".claude/commands/review.md": "imported\n",
            ".start/tasks.toml": '[tasks."claude:review"]\nprompt = "ours"\n',
        },
    )
    task = load(str(project), strict=True).tasks["claude:review"]
    assert (task.origin.path, task.prompt) == (str(project / ".start" / "tasks.toml"), "ours")


def test_a_name_with_a_colon_must_be_an_imported_one(project: Path) -> None:
    write_tree(config_dir(), {"tasks.toml": '[tasks."foo:bar"]\nprompt = "x"\n'})
    with pytest.raises(ConfigError) as raised:
        load(str(project), strict=True)
    assert [p.message for p in raised.value.problems] == [
        "invalid task name 'foo:bar': a name with ':' is an imported command's, SOURCE:NAME, "
        "where SOURCE is one of claude, gemini, qwen, codex, opencode, skill and each ':'-separated "
        "part is letters, digits, '_', '.' and '-', such as 'claude:git:commit'"
    ]


# --- the setting -----------------------------------------------------------------------------


def test_import_commands_chooses_the_sources(project: Path) -> None:
    write_tree(project, {".claude/commands/a.md": "a\n", ".gemini/commands/b.toml": 'prompt="b"'})
    assert set(names(project)) == {"claude:a", "gemini:b"}
    write_tree(config_dir(), {"config.toml": setting('import_commands = ["gemini"]')})
    assert set(names(project)) == {"gemini:b"}
    write_tree(config_dir(), {"config.toml": setting("import_commands = []")})
    config = load(str(project))
    assert not any(t.imported for t in config.tasks.values())
    # Off, the files are not project config: nothing to trust, nothing to review.
    assert not config.has_project


def test_import_commands_takes_only_known_sources(project: Path) -> None:
    write_tree(config_dir(), {"config.toml": setting('import_commands = ["cursor"]')})
    with pytest.raises(ConfigError) as raised:
        load(str(project), strict=True)
    assert [p.message for p in raised.value.problems] == [
        "must be an array of sources; 'cursor' is not one of claude, gemini, qwen, codex, opencode, skill"
    ]


def test_config_set_import_commands(project: Path) -> None:
    result = invoke("config", "set", "import_commands", "claude, codex")
    assert result.exit_code == 0, result.stderr
    assert load(str(project)).settings.import_commands == ("claude", "codex")


# --- untranslatable parts ----------------------------------------------------------------------


def test_validate_names_the_file_and_line_of_what_is_not_imported(layout: Layout) -> None:
    workdir = layout("opencode")
    result = invoke("config", "validate")
    assert result.exit_code == 0
    review = workdir / ".opencode" / "command" / "git" / "review.md"
    test = workdir / ".opencode" / "command" / "test.md"
    assert (
        f"{review}:3:1: warning: agent: not imported: start has no opencode agents; pick the "
        "role with -r and the agent with -a\n"
        f"{review}:4:1: warning: subtask: not imported: start cannot run a command as a "
        "sub-agent\n"
        f"{test}:3:1: warning: agent: not imported: start has no opencode agents; pick the role "
        "with -r and the agent with -a\n"
    ) in result.stdout


def test_a_broken_command_file_is_skipped_never_fatal(project: Path) -> None:
    write_tree(
        project,
        {
            ".gemini/commands/bad.toml": "prompt = \n",
            ".gemini/commands/open.toml": 'prompt = "run !{ls"\n',
            ".gemini/commands/good.toml": 'prompt = "fine"\n',
        },
    )
    config = load(str(project), strict=True)  # warnings only: a launch is never stopped
    assert set(names(project)) == {"gemini:good"}
    bad = project / ".gemini" / "commands" / "bad.toml"
    opened = project / ".gemini" / "commands" / "open.toml"
    assert [str(p) for p in config.problems if p.file in (str(bad), str(opened))] == [
        f"{bad}:1:1: not imported: not valid TOML: Invalid value (at line 1, column 10)",
        f"{opened}:1:1: not imported: '!{{' is not closed with a matching '}}'; Gemini CLI "
        "refuses to run the command (Invalid syntax)",
    ]


DIGITS = sys.get_int_max_str_digits()


@pytest.mark.parametrize(
    ("text", "message", "at"),
    [
        (
            "prompt = 'x'\nn = 1" + "0" * DIGITS + "\n",
            f"an integer has more than {DIGITS:,} digits; start reads at most that",
            "",
        ),
        (
            "prompt = 'x'\nn = " + "[" * 3000 + "]" * 3000 + "\n",
            "arrays or inline tables are nested too deeply to read",
            ":2:1",  # the line where the deep value starts
        ),
    ],
    ids=["a long integer", "deep arrays"],
)
def test_toml_past_pythons_limits_is_a_broken_command_file(
    project: Path, text: str, message: str, at: str
) -> None:
    write_tree(
        project, {".gemini/commands/bad.toml": text, ".gemini/commands/ok.toml": "prompt='x'"}
    )
    config = load(str(project), strict=True)
    bad = project / ".gemini" / "commands" / "bad.toml"
    assert set(names(project)) == {"gemini:ok"}
    assert [str(p) for p in config.problems] == [f"{bad}{at}: not imported: {message}"]


@pytest.mark.parametrize(
    "data",
    [b"Explain\x00 this\n", b"\xff\xd8\xff\xe0 a JPEG\n", "caf\u00e9\n".encode("latin-1")],
    ids=["a NUL byte", "an image", "Latin-1"],
)
def test_a_file_that_is_not_text_is_skipped_with_a_warning(project: Path, data: bytes) -> None:
    write_tree(project, {".claude/commands/ok.md": "Explain\n"})
    binary = project / ".claude" / "commands" / "binary.md"
    binary.write_bytes(data)
    config = load(str(project), strict=True)
    assert set(names(project)) == {"claude:ok"}
    assert [str(p) for p in config.problems] == [
        f"{binary}: not imported: is not a text file (it is not UTF-8, or holds a NUL byte)"
    ]


# --- symlinks out of the project -------------------------------------------------------------


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The real paths of every file fs.read opens and every directory os.scandir lists."""
    seen: list[str] = []
    read, scandir = fs.read, os.scandir

    def reading(path: str, *args: Any, **kwargs: Any) -> fs.Read:
        seen.append(os.path.realpath(path))
        return read(path, *args, **kwargs)

    def listing(path: Any = ".") -> Any:
        seen.append(os.path.realpath(path))
        return scandir(path)

    monkeypatch.setattr(fs, "read", reading)
    monkeypatch.setattr(os, "scandir", listing)
    return seen


def test_a_command_file_linked_outside_is_never_opened(
    project: Path, tmp_path: Path, opened: list[str]
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("Hello !`touch x`\n")
    write_tree(project, {".claude/commands/ok.md": "ok\n"})
    link = project / ".claude" / "commands" / "out.md"
    link.symlink_to(outside)
    config = load(str(project))
    assert str(outside) not in opened
    assert set(names(project)) == {"claude:ok"}
    assert [str(p) for p in config.problems] == [
        f"{link}: not imported: leads outside the project root (to {outside}) through a "
        "symlink; start does not read it"
    ]


@pytest.mark.parametrize("linked", [".claude/commands", ".claude"])
def test_a_command_directory_linked_outside_is_never_listed(
    project: Path, tmp_path: Path, opened: list[str], linked: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    write_tree(elsewhere, {"commands/x.md": "Hello !`touch x`\n"})
    target = elsewhere / "commands" if linked == ".claude/commands" else elsewhere
    (project / linked).parent.mkdir(parents=True, exist_ok=True)
    (project / linked).symlink_to(target)
    config = load(str(project))
    assert not [path for path in opened if path.startswith(str(elsewhere))]
    assert not names(project)
    directory = project / ".claude" / "commands"
    assert [str(p) for p in config.problems] == [
        f"{directory}: not imported: leads outside the project root (to {elsewhere / 'commands'}) "
        "through a symlink; start does not read it"
    ]


def test_a_command_directory_linked_inside_the_project_is_read(project: Path) -> None:
    write_tree(project, {"shared/commands/x.md": "Hello\n"})
    (project / ".claude").mkdir()
    (project / ".claude" / "commands").symlink_to("../shared/commands")
    config = load(str(project))
    assert (names(project), config.problems) == ({"claude:x": "project"}, ())


# --- bounds ----------------------------------------------------------------------------------


def test_a_directory_without_commands_costs_a_stat_each(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch where no source has a command directory looks at each directory once."""
    calls: list[str] = []
    for name in ("stat", "lstat", "scandir", "open"):
        real = getattr(os, name)

        def counted(*args: object, _real: object = real, _name: str = name, **kw: object) -> object:
            calls.append(_name)
            return _real(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(os, name, counted)

    def realpath(path: str, **kw: object) -> str:
        calls.append("realpath")
        return path

    monkeypatch.setattr(os.path, "realpath", realpath)
    assert not interop.anywhere(str(project), user=True)
    assert calls == ["stat"] * 11


def test_a_project_directory_too_big_is_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dirs, "MAX_ENTRIES", 3)
    write_tree(project, {f".claude/commands/c{i}.md": "x\n" for i in range(4)})
    with pytest.raises(ConfigError) as raised:
        load(str(project), strict=True)
    assert [str(p) for p in raised.value.problems] == [
        f"{project / '.claude/commands'}: holds more than 3 files and directories; start does "
        "not read it; turn it off with [settings] import_commands, or move files out"
    ]


def test_a_project_directory_of_too_many_bytes_is_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 command files of 1 MiB each were a gigabyte held by every launch: a directory's
    files hold MAX_BYTES at most."""
    monkeypatch.setattr(dirs, "MAX_BYTES", 10)
    write_tree(project, {f".claude/commands/c{i}.md": "four\n" for i in range(3)})
    with pytest.raises(ConfigError) as raised:
        load(str(project), strict=True)
    assert [str(p) for p in raised.value.problems] == [
        f"{project / '.claude/commands'}: holds more than 10 bytes of command files; start does "
        "not read it; turn it off with [settings] import_commands, or move files out"
    ]


def test_a_user_directory_too_big_is_skipped_with_a_warning(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dirs, "MAX_DEPTH", 1)
    write_tree(
        Path.home(), {".claude/commands/a/b/c/deep.md": "x\n", ".claude/commands/ok.md": "x"}
    )
    config = load(str(project), strict=True)
    commands = Path.home() / ".claude" / "commands"
    assert not any(t.imported for t in config.tasks.values())
    assert [str(p) for p in config.problems] == [
        f"{commands}: is nested more than 1 directories deep ({commands / 'a' / 'b'}); "
        "start does not read it; turn it off with [settings] import_commands, or move files out"
    ]


def test_a_directory_symlink_is_not_followed(project: Path, tmp_path: Path) -> None:
    write_tree(tmp_path / "elsewhere", {"x.md": "x\n"})
    write_tree(project, {".claude/commands/ok.md": "ok\n"})
    (project / ".claude" / "commands" / "linked").symlink_to(tmp_path / "elsewhere")
    assert set(names(project)) == {"claude:ok"}


# --- the config cache ------------------------------------------------------------------------


def test_the_cache_key_covers_the_command_files(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from start.config.interop import library

    built: list[int] = []
    real = library.build

    def counted(*args: Any) -> library.Library:
        built.append(1)
        return real(*args)

    monkeypatch.setattr(library, "build", counted)
    path = project / ".claude" / "commands" / "a.md"
    write_tree(project, {".claude/commands/a.md": "first\n"})
    first = load(str(project))
    again = load(str(project))
    assert len(built) == 1  # the second load was served by the cache
    assert again.tasks["claude:a"] == first.tasks["claude:a"]
    path.write_text("second\n")
    changed = load(str(project))
    assert len(built) == 2
    imported = changed.tasks["claude:a"].imported
    assert imported is not None and imported.body == "second\n"


# --- listings, completion, show --------------------------------------------------------------


def test_the_listing_shows_the_source(layout: Layout) -> None:
    layout("qwen")
    result = invoke("task")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["TASK", "ALIAS", "DESCRIPTION", "SOURCE", "LAYER"]
    assert [line.split()[0] for line in lines[1:]] == [
        "commit-message",
        "gate",
        "git-diff-review",
        "help",
        "plan-fix",
        "qwen:git:commit",
        "qwen:review",
        "triage",
    ]
    assert lines[6].split()[-2:] == ["qwen", "project"]
    assert lines[1].split()[-2:] == ["start", "built-in"]


def test_completion_names_the_source(layout: Layout) -> None:
    from start.cli.completers import _task_help

    config = load(str(layout("codex")))
    assert _task_help(config.tasks["codex:ticket"]) == "codex command: Start work on a ticket"


def test_start_show_names_the_source_file(layout: Layout) -> None:
    workdir = layout("gemini")
    result = invoke("show", "gemini:review", "--no-pager")
    assert result.exit_code == 0, result.stderr
    path = workdir / ".gemini" / "commands" / "review.toml"
    assert f"defined in   project: {path}" in result.stdout
    assert 'source = "gemini"' in result.stdout
    assert "- Every new branch of logic needs a test." in result.stdout  # the include, read


def test_config_show_names_the_source_file(layout: Layout) -> None:
    workdir = layout("claude")
    result = invoke("config", "show", "task", "claude:review:pr", "--no-pager")
    assert result.exit_code == 0, result.stderr
    path = workdir / ".claude" / "commands" / "review" / "pr.md"
    assert result.stdout.splitlines()[:6] == [
        f"# from project ({path})",
        '[tasks."claude:review:pr"]',
        'description = "Review a pull request with a chosen focus"',
        'source = "claude"',
        'source_command = "/review:pr"',
        'argument_hint = "<pr-number> <focus> [second-reviewer]"',
    ]


# --- model -----------------------------------------------------------------------------------


def test_a_model_is_honoured_only_by_its_own_agent(layout: Layout) -> None:
    """`model: haiku` in .claude/commands/git/commit.md is Claude Code's: with the claude
    agent it is the model, with another agent a note."""
    workdir = layout("claude")
    request = Ask(
        "task", agents=("claude",), task="claude:git:commit", no_role=True, directory=str(workdir)
    )
    config = load(str(workdir))
    plan = resolve.plan(config, request)
    assert (plan.model, plan.model_reason) == (
        "claude-haiku-5-5",
        "task 'claude:git:commit' (alias 'haiku', from its front matter)",
    )
    prepared = compose(workdir, "claude:git:commit")
    assert prepared.plan.model is None
    assert prepared.composition.notes == (
        "claude:git:commit asks for the model 'haiku' in its front matter, for claude; not used "
        "with the agent fake",
    )


def test_a_mistyped_imported_name_is_an_unknown_task(project: Path) -> None:
    """`claude:revew` is spelled like a task name, so it is one (exit 4), not a missing file."""
    write_tree(project, {".claude/commands/review.md": "r\n"})
    result = invoke("task", "claude:revew", "--dry-run")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown task 'claude:revew'; did you mean 'claude:review'?\n",
    )


def test_a_launch_without_command_directories_loads_no_parser(project: Path) -> None:
    """A launch where no command directory is there imports no more of start.config.interop than its
    stat of each; the walk and the parsers load only when there are directories and files."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = (
        "import sys; from start.config.load import load; load(); "
        "print(sorted(m for m in sys.modules if m.startswith('start.config.interop')))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True
    )
    assert out.stdout.strip() == "['start.config.interop']", out.stderr


def test_the_summary_counts_only_the_running_task_file(layout: Layout) -> None:
    """A command file's warnings are another program's config: the summary names those of the
    task that runs, and leaves the others out of "the config has N warnings"."""
    workdir = layout("claude")
    result = invoke("task", "claude:review:pr", "512", "--no-role", "--dry-run")
    assert result.exit_code == 0, result.stderr
    path = workdir / ".claude" / "commands" / "review" / "pr.md"
    summary = result.stdout.split("──── role ────")[0]
    assert summary.endswith(
        "  ⚠ claude:review:pr asks for the model 'sonnet' in its front matter, for claude; not "
        "used with the agent fake\n"
        "  ⚠ claude:review:pr: $1, $2 had no word to take; left as written, as Claude Code does\n"
        f"  ⚠ {path} has 1 warning; run 'start config validate'\n\n"
    )
    assert "the config has" not in summary


def test_config_path_and_doctor_count_the_command_files(layout: Layout) -> None:
    workdir = layout("opencode")
    result = invoke("config", "path")
    assert result.exit_code == 0, result.stderr
    user = Path.home() / ".config" / "opencode" / "command" / "standup.md"
    assert f"imported: other agents' command directories\n  {user}\n" in result.stdout
    assert f"  {workdir / '.opencode' / 'command' / 'test.md'}\n" in result.stdout
    result = invoke("doctor")
    assert "imported  1 command file of other agents read" in result.stdout
    assert "project   5 command files of other agents read" in result.stdout
