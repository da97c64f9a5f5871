"""Composition through a real launch (dry runs in-process): contexts, prompts, placeholders and the
commands of tasks and roles."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import dry, invoke, running, write_tree

# --- composition ---------------------------------------------------------------------------


def test_session_includes_every_context_in_order_prompt_and_task_only_required(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/contexts.toml": (
                '[contexts.one]\nprompt = "ONE"\n'
                '[contexts.two]\nprompt = "TWO"\nrequired = true\n'
                '[contexts.three]\nprompt = "THREE"\n'
            ),
            ".start/tasks.toml": '[tasks.t]\nprompt = "TASK {instructions}"\n',
        },
    )
    session = dry()
    assert [c["name"] for c in session["contexts"]] == ["project-guide", "one", "two", "three"]
    assert session["prompt"] == "ONE\n\nTWO\n\nTHREE"
    assert [c["status"] for c in session["contexts"]] == ["empty", "ok", "ok", "ok"]
    assert dry("prompt", "hello")["prompt"] == "TWO\n\nhello"
    assert dry("task", "t", "now")["prompt"] == "TWO\n\nTASK now"


def test_project_guide_context_points_at_agents_md(repo: Path) -> None:
    write_tree(repo, {"AGENTS.md": "# rules\n"})
    [context] = dry()["contexts"]
    assert context["status"] == "ok"
    assert dry()["prompt"] == (
        f"Read {repo}/AGENTS.md before starting: it describes this project and how to work on it.\n"
    )


def test_missing_context_file_is_a_warning_and_skipped(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/contexts.toml": (
                '[contexts.env]\nfile = "ENV.md"\nprompt = "env: {file_contents}"\nrequired = true\n'
                '[contexts.ok]\nprompt = "fine"\nrequired = true\n'
            )
        },
    )
    data = dry("prompt", "x")
    assert data["contexts"][0] == {
        "name": "env",
        "status": "missing",
        "source": f"file {repo / 'ENV.md'}, prompt",
        "detail": f"file not found: {repo / 'ENV.md'}",
    }
    assert data["prompt"] == "fine\n\nx"
    result = invoke("prompt", "x", "--dry-run")
    assert f"⚠ env (file not found: {repo / 'ENV.md'})" in result.stdout


def test_failing_context_command_is_a_warning(repo: Path) -> None:
    write_tree(
        repo, {".start/contexts.toml": '[contexts.bad]\ncommand = "exit 3"\nrequired = true\n'}
    )
    data = dry("prompt", "x")
    assert data["contexts"][0]["status"] == "failed"
    assert data["contexts"][0]["detail"] == "command failed with exit code 3"
    assert data["prompt"] == "x"


def test_instructions_are_none_when_absent_and_appended_when_unused(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/tasks.toml": (
                '[tasks.uses]\nprompt = "Focus: {instructions}"\n'
                '[tasks.ignores]\nprompt = "Just review.\\n"\n'
            )
        },
    )
    assert dry("task", "uses")["prompt"] == "Focus: None"
    assert dry("task", "uses", "a", "b")["prompt"] == "Focus: a b"
    assert dry("task", "ignores")["prompt"] == "Just review.\n"
    assert dry("task", "ignores", "be", "strict")["prompt"] == "Just review.\n\nbe strict"


def test_file_plus_command_uses_the_file_as_template(repo: Path) -> None:
    write_tree(
        repo,
        {
            "tpl.md": "Output of {command}:\n{command_output}Focus {instructions}\n",
            ".start/tasks.toml": '[tasks.t]\nfile = "tpl.md"\ncommand = "echo hi"\n',
        },
    )
    assert dry("task", "t", "x")["prompt"] == "Output of echo hi:\nhi\nFocus x\n"


def test_file_only_task_is_a_template(repo: Path) -> None:
    """Seed 003: a task's `file` is its prompt template, with or without a `command`."""
    write_tree(
        repo,
        {
            "t.md": "for {model}: {instructions} {{date}}\n",
            "plain.md": "Review {file}.\n",
            ".start/tasks.toml": '[tasks.t]\nfile = "t.md"\n[tasks.plain]\nfile = "plain.md"\n',
        },
    )
    assert dry("task", "t", "go")["prompt"] == "for sonnet-x: go {date}\n"
    assert dry("task", "t")["prompt"] == "for sonnet-x: None {date}\n"
    # A template without {instructions} still gets the instructions appended.
    assert dry("task", "plain", "go")["prompt"] == f"Review {repo / 'plain.md'}.\n\ngo"


def test_single_pass_filling_with_hostile_values(repo: Path) -> None:
    write_tree(
        repo,
        {
            "role.md": "{prompt}{role}{date} {{x}} $(touch pwned) `id`",
            ".start/config.toml": (
                '[roles.r]\nfile = "role.md"\n'
                "[tasks.t]\n"
                'role = "r"\n'
                "command = \"printf '%s' '{instructions} {{date}}'\"\n"
                'prompt = "Out: {command_output} | In: {instructions} | {{model}}"\n'
            ),
        },
    )
    data = dry("task", "t", "{command_output}", "$(id)")
    assert data["role_text"] == "{prompt}{role}{date} {{x}} $(touch pwned) `id`"
    assert data["prompt"] == ("Out: {instructions} {{date}} | In: {command_output} $(id) | {model}")
    assert not (repo / "pwned").exists()


def test_date_is_one_iso_timestamp_everywhere(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/config.toml": (
                '[contexts.c]\nprompt = "{date}"\nrequired = true\n[tasks.t]\nprompt = "{date}"\n'
            )
        },
    )
    first, second = dry("task", "t")["prompt"].split("\n\n")
    assert first == second
    from datetime import datetime

    assert datetime.fromisoformat(first).utcoffset() is not None


def test_model_placeholder_in_task_prompt(repo: Path) -> None:
    write_tree(repo, {".start/tasks.toml": '[tasks.t]\nprompt = "model={model}"\n'})
    assert dry("task", "t", "-m", "o")["prompt"] == "model=opus-x"


def test_model_and_date_in_role_and_context_prompts(repo: Path) -> None:
    """Seed 003: {model} and {date} are global, available in every prompt."""
    write_tree(
        repo,
        {
            ".start/config.toml": (
                '[roles.r]\nprompt = "R {model} {date}"\n'
                '[contexts.c]\nprompt = "C {model}"\nrequired = true\n'
            )
        },
    )
    data = dry("prompt", "-r", "r", "-m", "o", "hi")
    assert data["role_text"].startswith("R opus-x ")
    date = data["role_text"].removeprefix("R opus-x ")
    from datetime import datetime

    assert datetime.fromisoformat(date).utcoffset() is not None
    assert data["prompt"] == "C opus-x\n\nhi"


def test_a_placeholder_without_its_source_is_empty_with_a_warning(repo: Path) -> None:
    """Seed 003: {file}, {file_contents}, {command}, {command_output} without their field."""
    write_tree(
        repo,
        {
            ".start/tasks.toml": (
                '[tasks.t]\nprompt = "a[{file}][{file_contents}][{command}][{command_output}]b"\n'
            )
        },
    )
    assert dry("task", "t")["prompt"] == "a[][][][]b"
    assert dry("task", "t", "x")["prompt"] == "a[][][][]b\n\nx"
    result = invoke("task", "t", "--dry-run")
    assert result.exit_code == 0
    assert "  ⚠ the config has 4 warnings; run 'start config validate'\n" in result.stdout
    validated = invoke("config", "validate")
    assert validated.exit_code == 0
    assert (
        f"{repo / '.start' / 'tasks.toml'}:2:21: warning: tasks.t.prompt: {{file_contents}} is "
        "used but 'file' is not set, so it is empty\n"
    ) in validated.stdout


def test_prompt_reads_stdin_exactly(repo: Path) -> None:
    result = invoke("prompt", "-", "--dry-run", "--json", stdin="line 1\r\nline 2\n")
    assert json.loads(result.stdout)["prompt"] == "line 1\r\nline 2\n"


# --- task command failures -----------------------------------------------------------------


def test_failing_task_command_exits_1_and_shows_the_command_and_its_output(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/tasks.toml": '[tasks.t]\ncommand = "echo out; echo err >&2; exit 2"\nprompt = "{command_output}"\n'
        },
    )
    result = invoke("task", "t", "--dry-run")
    assert result.exit_code == 1
    assert result.stderr == (
        "start: task 't' command failed with exit code 2\n"
        "  command: echo out; echo err >&2; exit 2\n"
        "  output:\n    out\n    err\n"
    )


def test_task_command_timeout_kills_grandchildren(repo: Path) -> None:
    pidfile = repo.parent / "grandchild.pid"
    write_tree(
        repo,
        {
            ".start/tasks.toml": (
                "[tasks.t]\ncommand_timeout = 1\n"
                f"command = \"sh -c 'echo $$ > {pidfile}; exec sleep 60' & sleep 60\"\n"
                'prompt = "{command_output}"\n'
            )
        },
    )
    result = invoke("task", "t", "--dry-run")
    assert result.exit_code == 1
    assert result.stderr.startswith("start: task 't' command timed out after 1 s\n")
    assert not alive(int(pidfile.read_text()))


def alive(pid: int) -> bool:
    """Still running after a moment for SIGKILL to land (a zombie counts as dead)."""
    import time

    deadline = time.monotonic() + 5
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return running(pid)


def test_role_command_failure_is_an_error(repo: Path) -> None:
    write_tree(repo, {".start/roles.toml": '[roles.r]\ncommand = "exit 9"\n'})
    result = invoke("prompt", "x", "-r", "r", "--dry-run")
    assert result.exit_code == 1
    assert result.stderr.startswith("start: role 'r' command failed with exit code 9\n")
