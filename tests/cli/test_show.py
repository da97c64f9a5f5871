"""`start show [KIND] NAME`: one item, where it is defined, what it replaces, its fields, its text
(files read through the wall, commands only with --run and never untrusted), and a task's choices."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from start import trust
from start.config.load import load
from tests.conftest import invoke, run_start, write_tree

GLOBAL = """\
[settings]
default_agent = "two"

[agents.two]
bin = "true"
command = "{bin} {prompt}"
[agents.two.models]
fast = "two-fast-1"

[roles.reviewer]
description = "Reviews code"
prompt = "You review code."

[contexts.guide]
file = "GUIDE.md"

[contexts.shared]
prompt = "a context"

[roles.shared]
prompt = "a role"

[tasks.review]
alias = "rv"
description = "Review with a focus"
role = "reviewer"
model = "fast"
command = 'printf "%s" "$START_PARAM_FOCUS"'
prompt = "Focus on {focus} ({depth}); {instructions}. Output: {command_output}"

[tasks.review.params]
focus = { default = "security", description = "What to look at" }
depth = { description = "How deep" }

[tasks.help]
description = "Override of the built-in help"
prompt = "my help: {instructions}"
"""


@pytest.fixture
def home(isolated: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    directory = isolated.parent / "home" / ".config" / "start"
    write_tree(directory, {"config.toml": GLOBAL})
    write_tree(isolated, {"GUIDE.md": "The guide.\n"})
    return directory


def data(*args: str) -> dict[str, Any]:
    result = invoke("show", *args, "--json")
    assert result.exit_code == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def builtin_line(name: str) -> int:
    text = (Path(__file__).resolve().parents[2] / "config" / "tasks.toml").read_text()
    return text.split("\n").index(f"[tasks.{name}]") + 1


def test_a_task_in_full_as_data(home: Path) -> None:
    found = data("task", "review")
    assert found == {
        "kind": "task",
        "name": "review",
        "layer": "global",
        "file": str(home / "config.toml"),
        "line": 23,
        "replaces": [],
        "fields": {
            "description": "Review with a focus",
            "command": 'printf "%s" "$START_PARAM_FOCUS"',
            "prompt": "Focus on {focus} ({depth}); {instructions}. Output: {command_output}",
            "alias": "rv",
            "role": "reviewer",
            "model": "fast",
        },
        "params": [
            {
                "name": "focus",
                "default": "security",
                "description": "What to look at",
                "env": "START_PARAM_FOCUS",
            },
            {
                "name": "depth",
                "default": None,
                "description": "How deep",
                "env": "START_PARAM_DEPTH",
            },
        ],
        "text": "Focus on security ({depth}); {instructions}. Output: [command output: not run]",
        "notes": [
            "parameter 'depth' has no default: {depth} is shown as written",
            "the command was not run: --run runs it",
        ],
        "trust": "no project config",
        "selects": {
            "role": {"value": "reviewer", "reason": "task 'review'"},
            "agent": {"value": "two", "reason": "settings.default_agent"},
            "model": {"value": "two-fast-1", "reason": "task 'review' (alias 'fast')"},
        },
    }


def test_run_runs_the_command_with_the_parameters_in_its_environment(home: Path) -> None:
    found = data("task", "review", "--run")
    assert found["text"] == "Focus on security ({depth}); {instructions}. Output: security"
    assert found["notes"] == ["parameter 'depth' has no default: {depth} is shown as written"]


def test_what_an_item_replaces_in_lower_layers(home: Path) -> None:
    found = data("help")
    assert (found["layer"], found["line"]) == ("global", 35)
    builtin = Path(__file__).resolve().parents[2] / "config" / "tasks.toml"
    assert found["replaces"] == [
        {"layer": "built-in", "file": str(builtin), "line": builtin_line("help")}
    ]


def test_a_project_item_replaces_the_global_and_built_in_ones(home: Path, isolated: Path) -> None:
    write_tree(isolated, {".start/tasks.toml": '\n[tasks.help]\nprompt = "project help"\n'})
    trust.approve(trust.scan(load()))  # type: ignore[arg-type]
    found = data("task", "help")
    assert (found["layer"], found["line"]) == ("project", 2)
    assert [r["layer"] for r in found["replaces"]] == ["global", "built-in"]
    assert found["text"] == "project help"
    assert found["trust"].startswith("trusted (approved ")


def test_the_human_output(home: Path) -> None:
    result = invoke("show", "review")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        "task review\n"
        f"  defined in   global: {home / 'config.toml'}:23\n"
        "  replaces     nothing\n"
        "\n"
        "fields\n"
        'description = "Review with a focus"\n'
        'command = "printf \\"%s\\" \\"$START_PARAM_FOCUS\\""\n'
        'prompt = "Focus on {focus} ({depth}); {instructions}. Output: {command_output}"\n'
        'alias = "rv"\n'
        'role = "reviewer"\n'
        'model = "fast"\n'
        "\n"
        "parameters\n"
        '  focus  default "security"  What to look at\n'
        "  depth  required            How deep\n"
        "  Set with -p NAME=VALUE. Its command sees $START_PARAM_FOCUS, $START_PARAM_DEPTH, and "
        "the instructions as $START_INSTRUCTIONS.\n"
        "\n"
        "selects\n"
        "  role   reviewer    task 'review'\n"
        "  agent  two         settings.default_agent\n"
        "  model  two-fast-1  task 'review' (alias 'fast')\n"
        "\n"
        "──── text ────\n"
        "Focus on security ({depth}); {instructions}. Output: [command output: not run]\n"
        "\n"
        "⚠ parameter 'depth' has no default: {depth} is shown as written\n"
        "⚠ the command was not run: --run runs it\n"
    )


def test_a_context_with_its_file_read_and_an_agent(home: Path, isolated: Path) -> None:
    assert data("context", "guide")["text"] == "The guide.\n"
    agent = data("agents", "two")
    assert agent["text"] is None
    assert agent["fields"]["models"] == {"fast": "two-fast-1"}
    assert "selects" not in agent


def test_an_agent_says_whether_start_continue_can_continue_it(home: Path, isolated: Path) -> None:
    """Issue 49: an agent whose CLI cannot resume a conversation headless says so, with the
    agents that can; `continue` in --json."""
    able = "claude, gemini, codex, opencode, qwen, copilot, llm, llm-chat, droid"
    cannot = (
        'it has no resume_command, which start continue needs ("Continuing a conversation" '
        f"in 'start help agents' says which CLIs can resume headless). Agents that can: {able}"
    )
    shown = run_start("show", "agent", "cn", "--no-pager", cwd=isolated)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[3] == f"  continue     no: {cannot}"
    llm = run_start("show", "agent", "llm", "--no-pager", cwd=isolated).stdout.splitlines()
    assert llm[3] == "  continue     yes: start continue resumes its headless runs' conversations"
    assert data("agent", "two")["continue"] == {
        "able": False,
        "reason": "it has no headless form (print_command) to continue",
    }
    assert data("agent", "aider")["continue"] == {"able": False, "reason": cannot}
    assert "continue" not in data("task", "review")


def test_kind_is_optional_when_the_name_is_unique_and_aliases_and_prefixes_find_tasks(
    home: Path,
) -> None:
    assert data("reviewer")["kind"] == "role"
    assert data("rv")["name"] == "review"
    assert data("revi")["name"] == "review"
    assert data("task", "rev")["name"] == "review"


def test_a_name_of_several_kinds_exits_4_and_lists_them(home: Path) -> None:
    result = invoke("show", "shared")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: name 'shared' is ambiguous; it matches: role shared, context shared\n"
        "Name its kind: start show role shared\n",
    )
    assert data("context", "shared")["text"] == "a context"


def test_unknown_names_exit_4_with_did_you_mean(home: Path) -> None:
    result = invoke("show", "reveiw")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown name 'reveiw'; did you mean 'review'?\n",
    )
    result = invoke("show", "role", "reveiwer")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown role 'reveiwer'; did you mean 'reviewer'?\n",
    )


def test_an_ambiguous_task_prefix_exits_4(home: Path) -> None:
    config = home / "config.toml"
    config.write_text(config.read_text() + '\n[tasks.refactor]\nprompt = "r"\n')
    for args in (("task", "re"), ("re",)):
        result = invoke("show", *args)
        assert (result.exit_code, result.stderr) == (
            4,
            "start: task 're' is ambiguous; it matches: refactor, review\n",
        )


def test_an_unknown_kind_and_a_kind_without_a_name_are_usage_errors(home: Path) -> None:
    result = invoke("show", "taks", "review")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: unknown kind 'taks'; did you mean 'tasks'?\n",
    )
    result = invoke("show", "task")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: 'start show task' needs NAME: start show task NAME\n",
    )


def test_control_characters_are_escaped_and_json_is_exact(home: Path) -> None:
    config = home / "config.toml"
    config.write_text(
        config.read_text() + '\n[roles.evil]\nprompt = "x\\u001b]0;title\\u0007\\u001b[2J"\n'
    )
    result = invoke("show", "evil")
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "x\\x1b]0;title\\x07\\x1b[2J" in result.stdout
    assert data("evil")["text"] == "x\x1b]0;title\x07\x1b[2J"


# --- an untrusted project: no project file read, no command run ----------------------------


@pytest.fixture
def untrusted(home: Path, isolated: Path) -> Path:
    (isolated.parent / "secret.md").write_text("SECRET-CANARY\n")
    write_tree(
        isolated,
        {
            "PTASK.md": "project task file\n",
            ".start/tasks.toml": (
                '[tasks.mine]\nfile = "PTASK.md"\n'
                '[tasks.leak]\nfile = "../secret.md"\n'
                '[tasks.pwn]\ncommand = "touch pwned"\nprompt = "{command_output}"\n'
            ),
        },
    )
    return isolated


def test_an_untrusted_projects_files_are_not_read(untrusted: Path) -> None:
    found = data("task", "mine")
    assert found["text"] == f"[{untrusted / 'PTASK.md'}: not read, the project is not trusted]"
    assert found["notes"] == [
        f"{untrusted / 'PTASK.md'} was not read: the project is not trusted; run 'start trust'"
    ]
    assert found["trust"] == (
        f"{untrusted / '.start'} is not trusted (never approved); run 'start trust' to review it"
    )
    result = invoke("show", "leak")
    assert result.exit_code == 0
    assert "SECRET-CANARY" not in result.stdout


def test_no_command_runs_in_an_untrusted_project_even_with_run(untrusted: Path) -> None:
    result = invoke("show", "pwn", "--run")
    assert result.exit_code == 0, result.stderr
    assert not (untrusted / "pwned").exists()
    assert "⚠ the command was not run: commands never run in an untrusted project\n" in (
        result.stdout
    )
    # Nor a global item's command: every command runs in the project root.
    found = data("review", "--run")
    assert found["text"].endswith("Output: [command output: not run]")


def test_a_trusted_project_file_is_read_with_the_approved_bytes(untrusted: Path) -> None:
    trust.approve(trust.scan(load()))  # type: ignore[arg-type]
    assert data("mine")["text"] == "project task file\n"
    assert data("pwn", "--run")["text"] == ""
    assert (untrusted / "pwned").exists()


def test_a_symlink_in_the_project_never_leads_shown_text_outside(
    home: Path, isolated: Path
) -> None:
    """A global context's relative file is the project's: a link to a secret is not followed."""
    secret = isolated.parent / "secret.md"
    secret.write_text("SECRET-CANARY\n")
    (isolated / "GUIDE.md").unlink()
    (isolated / "GUIDE.md").symlink_to(secret)
    result = invoke("show", "guide")
    assert result.exit_code == 0, result.stderr
    assert "SECRET-CANARY" not in result.stdout
    assert data("guide")["notes"] == [
        f"{isolated / 'GUIDE.md'} was not read: {isolated / 'GUIDE.md'} leads outside the project "
        f"root (to {secret}) through a symlink; start does not follow it. Name the file by its "
        "real path in your config if you mean it."
    ]
