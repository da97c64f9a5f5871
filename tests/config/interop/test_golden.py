"""Golden expansions: a task imported from each format composes the text its CLI would send.

The cases are tests/fixtures/interop/golden.json, derived from each CLI's documented (Claude
Code) or source-read (Gemini CLI, Codex, opencode) rules; each test names the rules it checks
and where they are written. Shell output that is not deterministic in the fixture tree (git)
is the golden marker `<<SHELL_OUTPUT: COMMAND>>` (see conftest.runner).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from start.base.errors import UsageError
from start.compose.expand import attachment
from start.config.interop import words
from tests.config.interop.conftest import FIXTURES, Layout, compose

CASES: list[dict[str, Any]] = json.loads((FIXTURES / "golden.json").read_text(encoding="utf-8"))


def cases(form: str) -> list[Any]:
    return [pytest.param(case, id=case["id"]) for case in CASES if case["format"] == form]


def task_name(case: dict[str, Any]) -> str:
    """The task a golden case's file becomes: SOURCE:PATH with `:` between folders."""
    path = re.sub(
        r"^(home/)?(\.claude/commands|\.gemini/commands|\.codex/prompts)/", "", case["file"]
    )
    path = re.sub(r"^\.opencode/commands?/", "", path)
    path = re.sub(r"\.(md|toml)$", "", path)
    return f"{case['format']}:{path.replace('/', ':')}"


def arguments(case: dict[str, Any]) -> str | None:
    """What the user typed after the command's name, as the instructions."""
    _, space, rest = case["invocation"].partition(" ")
    return rest if space else None


def text(workdir: Path, case: dict[str, Any]) -> str:
    prepared = compose(workdir, task_name(case), arguments(case))
    assert prepared.composition.task is not None
    return prepared.composition.task.text


# --- Claude Code -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case", [c for c in cases("claude") if c.values[0]["id"] != "claude-7-legacy"]
)
def test_claude(layout: Layout, case: dict[str, Any]) -> None:
    """Claude Code, by its documentation (https://code.claude.com/docs/en/skills) and CHANGELOG:

    - `$ARGUMENTS` is the arguments as typed (claude-1, claude-2);
    - `$ARGUMENTS[N]` and `$N` are the N-th word counting from 0: "Added shorthand $0, $1 ..."
      (CHANGELOG 2.1.19; claude-2, claude-6, claude-7), words split shell-style with quotes
      removed (claude-2: `"error handling"` is one word);
    - `$name` is the word at the position of `name` in the front matter's `arguments` (claude-5);
    - a reference to a word that was not given stays as written (CHANGELOG 2.1.210; claude-3,
      claude-7);
    - `\\$` is a literal `$` (CHANGELOG 2.1.163; claude-6);
    - arguments are appended as `ARGUMENTS: <input>` when no placeholder was filled (Claude Code
      2.1.332's bundle, and `claude -p` run against the offline model server; claude-4): a
      filled `$N` or `$name` is enough to leave them out (claude-5 to claude-7);
    - `` !`cmd` `` and a ```` ```! ```` block are replaced by the command's output (claude-6);
    - `@path` attaches the file and the text stays (CHANGELOG 1.0.30; claude-4): start adds it
      after the text in the documented wrapper (docs/interop.md, decision D-C4).
    """
    workdir = layout("claude")
    expected = case["expected"]
    for path in case["attachments"]:
        content = (workdir / path).read_text(encoding="utf-8")
        expected += "\n\n" + attachment(path, content)
    assert text(workdir, case) == expected


def test_claude_legacy_numbering_is_reported(layout: Layout) -> None:
    """claude-7-legacy: a file written when `$1` was the first word (before CHANGELOG 2.1.19) is
    expanded by today's numbering, and `config validate` says why (decision D-C1)."""
    from start.config.load import load

    workdir = layout("claude")
    config = load(str(workdir))
    standup = Path.home() / ".claude" / "commands" / "standup.md"
    found = [str(p) for p in config.problems if p.file == str(standup)]
    assert found == [
        f"{standup}:5:1: $1 is the word numbered 1 counting from 0 (Claude Code 2.1.19 and "
        "later; $0 is the first word), and this file never uses $0; if it was written when $1 "
        "was the first word, renumber it"
    ]


# --- Gemini CLI ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", cases("gemini"))
def test_gemini(layout: Layout, case: dict[str, Any]) -> None:
    """Gemini CLI, read in google-gemini/gemini-cli@5411f113 (packages/cli/src/services/):

    - `{{args}}` outside `!{...}` is the arguments, whitespace runs joined by one space
      (utils/commands.ts; gemini-1, gemini-3, gemini-5a);
    - `!{cmd}` is replaced by the command's stdout and stderr, trimmed; a failure adds
      `[Shell command '<cmd>' exited with code N]` with the arguments shown escaped by npm
      shell-quote (prompt-processors/shellProcessor.ts:199, core/utils/shell-utils.ts; gemini-5a);
      braces inside balance (injectionParser.ts; gemini-6);
    - `@{path}` is replaced by the file's text (prompt-processors/atFileProcessor.ts; gemini-3);
    - without `{{args}}`, arguments append the typed line after a blank line
      (prompt-processors/argumentProcessor.ts, utils/partUtils.ts; gemini-2);
    - TOML's rules decide the prompt's text (`'''` literal, `\\\\n` in a basic string; gemini-4,
      gemini-6).
    """
    workdir = layout("gemini")
    assert text(workdir, case) == case["expected"]


@pytest.mark.parametrize("case", cases("gemini"))
def test_gemini_shows_commands_as_gemini_quotes_them(case: dict[str, Any]) -> None:
    """The exit-code line shows each command with `{{args}}` quoted by npm shell-quote's
    `quote()` (shell-utils.ts escapeShellArg; decision D-G4), which differs from shlex.quote."""
    from start.config.interop import gemini

    source = FIXTURES / "gemini" / case["file"]
    parsed = gemini.parse_toml(source.read_text(encoding="utf-8"), source.name)
    quoted = words.shell_quote(case["args_seen"])
    shown = [
        "".join(part if isinstance(part, str) else quoted for part in segment.parts)
        for segment in parsed.segments
        if hasattr(segment, "parts")
    ]
    assert shown == case["shell_commands_run"]


# --- Codex CLI -------------------------------------------------------------------------------


# The prompts with $UPPER_CASE words, which Codex gives named arguments.
NAMED = ("ticket.md", "draftpr.md", "env-check.md")


def codex_params(rest: str | None) -> tuple[tuple[str, str], ...]:
    """`KEY=value` words, as Codex takes named arguments, as start's `-p KEY=value`."""
    pairs = [word.partition("=") for word in words.codex(rest or "")]
    return tuple((key, value) for key, equals, value in pairs if equals and key)


@pytest.mark.parametrize("case", cases("codex"))
def test_codex(layout: Layout, case: dict[str, Any]) -> None:
    """Codex CLI, read in openai/codex codex-rs/tui/src/bottom_pane/prompt_args.rs@adc4676f:

    - `$1`..`$9` are words counting from 1, split by the Rust shlex crate (quotes group, `#`
      starts a comment; codex-1, codex-10); a missing one is empty (codex-2); `$ARGUMENTS` is
      every word joined by one space (codex-3);
    - any `$UPPER_CASE` word makes the prompt take required named arguments, which are start's
      task parameters (codex-4, codex-7); `$$` stays as written (codex-4); missing ones stop the
      launch (codex-5, codex-6, codex-9: `$HOME`, decision D-X1);
    - the body after the front matter is not trimmed (custom_prompts.rs, parse_frontmatter).

    codex-8 (words and no placeholder) is test_codex_never_drops_words: Codex drops them.
    """
    workdir = layout("codex")
    rest = arguments(case)
    named = case["file"].endswith(NAMED)
    params = codex_params(rest) if named else ()
    instructions = None if named else rest
    if "error" in case:
        with pytest.raises(UsageError):
            compose(workdir, task_name(case), instructions, params)
        return
    if case["id"] == "codex-8":
        return
    prepared = compose(workdir, task_name(case), instructions, params)
    assert prepared.composition.task is not None
    assert prepared.composition.task.text == case["expected"]


def test_codex_missing_named_arguments(layout: Layout) -> None:
    """codex-5: Codex refuses to send the prompt; start stops with the parameters to give."""
    workdir = layout("codex")
    with pytest.raises(UsageError) as raised:
        compose(workdir, "codex:ticket", params=(("TICKET_ID", "PAY-231"),))
    assert str(raised.value) == (
        "task 'codex:ticket' needs the parameter 'TITLE': pass -p TITLE=VALUE\n"
        "  TITLE: $TITLE of the prompt"
    )


def test_codex_never_drops_words(layout: Layout) -> None:
    """codex-8: Codex drops words a prompt has no place for (prompt_args.rs); start's rule is
    that your words are never dropped, so it appends them and says so (decision D-X4)."""
    workdir = layout("codex")
    prepared = compose(workdir, "codex:explain", "the cache layer")
    assert prepared.composition.task is not None
    golden = next(c for c in CASES if c["id"] == "codex-8")["expected"]
    assert prepared.composition.task.text == golden.rstrip("\n") + "\n\nthe cache layer"
    assert prepared.composition.notes == (
        "codex:explain: Codex would drop your words here (the prompt has no place for them); "
        "start added them at the end",
    )


# --- opencode --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", cases("opencode"))
def test_opencode(layout: Layout, case: dict[str, Any]) -> None:
    """opencode, read in anomalyco/opencode packages/opencode/src/session/prompt.ts
    (SessionPrompt.command) and PRs #3456 and #9606:

    - words are `"..."`, `'...'` or runs of other characters, one outer quote removed
      (opencode-2); `$N` counts from 1, the highest one takes the rest of the words (opencode-1,
      opencode-6), a missing one is empty (opencode-3);
    - `$ARGUMENTS` is the arguments as typed (opencode-5, opencode-7);
    - without any placeholder, arguments are appended after a blank line (PR #9606; opencode-4);
    - `` !`cmd` `` is replaced by its standard output as it is, and the whole text is trimmed
      (opencode-5, opencode-7);
    - `@path` attaches the file and the text stays; a sentence's final `.` is not part of the
      path (config/markdown.ts FILE_REGEX; opencode-6): start adds it after the text.
    """
    workdir = layout("opencode")
    expected = case["expected"]
    for file in case["attachments"]:
        expected += "\n\n" + attachment(file["path"], file["content"])
    assert text(workdir, case) == expected


def test_round_trip_with_another_agent(layout: Layout) -> None:
    """`start task claude:review:pr ... -a gemini` sends the prompt Claude Code would have sent
    for `/review:pr 512 "error handling" dana` (golden claude-2); the role is start's own."""
    from tests.conftest import invoke, write_tree

    workdir = layout("claude")
    write_tree(
        Path.home() / ".config" / "start",
        {"agents.toml": '[agents.gemini]\nbin = "true"\ncommand = "{bin} {prompt}"\n'},
    )
    result = invoke(
        "task", "claude:review:pr", "512", '"error handling"', "dana", "-a", "gemini",
        "--no-role", "--dry-run", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    golden = next(c for c in CASES if c["id"] == "claude-2")
    assert data["prompt"] == golden["expected"]
    assert data["notes"] == [
        "claude:review:pr asks for the model 'sonnet' in its front matter, for claude; not used "
        "with the agent gemini"
    ]
    assert workdir.is_dir()
