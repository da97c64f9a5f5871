"""The launch pipeline end to end: composition (dry runs in-process) and exec (subprocess only)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKE_AGENT, invoke, run_start, write_tree

FAKE = f'''
[settings]
default_agent = "fake"

[agents.fake]
bin = "{FAKE_AGENT}"
command = "{{bin}} --model {{model}} --append-system-prompt '{{role}}' '{{prompt}}'"
default_model = "s"

[agents.fake.models]
s = "sonnet-x"
o = "opus-x"
'''


@pytest.fixture
def repo(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository (the working directory) and a global config whose agent is the fake.

    The scratch project is trusted through the environment: trust has tests of its own.
    """
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": FAKE})
    return isolated


def stage(repo: Path, name: str = "a.py", text: str = "x = 1\n") -> None:
    (repo / name).write_text(text)
    subprocess.run(["git", "add", name], cwd=repo, check=True)


def dry(*args: str) -> dict[str, Any]:
    result = invoke(*args, "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def launch(
    repo: Path, *args: str, stdin: str | None = None, **env: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    record = repo.parent / "record.json"
    record.unlink(missing_ok=True)
    proc = run_start(*args, cwd=repo, env={"FAKE_AGENT_RECORD": str(record), **env}, stdin=stdin)
    data = json.loads(record.read_text()) if record.exists() else None
    return proc, data


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


def test_single_pass_rendering_with_hostile_values(repo: Path) -> None:
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
    assert validated.stdout.startswith(f"{repo / '.start' / 'tasks.toml'}\n")
    assert (
        "  2:21  warning  tasks.t.prompt: {file_contents} is used but 'file' is not set, so it "
        "is empty\n"
    ) in validated.stdout


def test_prompt_reads_stdin_exactly(repo: Path) -> None:
    result = invoke("prompt", "-", "--dry-run", "--json", stdin="line 1\r\nline 2\n")
    assert json.loads(result.stdout)["prompt"] == "line 1\r\nline 2\n"


# --- task lookup ---------------------------------------------------------------------------


def test_task_by_alias_and_prefix(repo: Path) -> None:
    stage(repo)
    assert dry("task", "gdr")["task"] == "git-diff-review"
    assert dry("task", "git-d")["task"] == "git-diff-review"


def test_ambiguous_and_unknown_tasks_exit_4(repo: Path) -> None:
    write_tree(repo, {".start/tasks.toml": '[tasks.git-log]\nprompt = "p"\n'})
    result = invoke("task", "git", "--dry-run")
    assert result.exit_code == 4
    assert result.stderr == "start: task 'git' is ambiguous; it matches: git-diff-review, git-log\n"
    result = invoke("task", "git-lgo", "--dry-run")
    assert result.exit_code == 4
    assert result.stderr == "start: unknown task 'git-lgo'; did you mean 'git-log'?\n"


def test_unknown_agent_and_role_exit_4(repo: Path) -> None:
    result = invoke("prompt", "x", "--agent", "fak", "--dry-run")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: unknown agent 'fak'; did you mean 'fake'?\n",
    )
    result = invoke("prompt", "x", "-r", "code-reviwer", "--dry-run")
    assert result.exit_code == 4
    assert result.stderr == "start: unknown role 'code-reviwer'; did you mean 'code-reviewer'?\n"


def test_flags_anywhere(repo: Path) -> None:
    stage(repo)
    a = dry("--role", "code-reviewer", "task", "gdr", "x")
    b = dry("task", "gdr", "--role", "code-reviewer", "x")
    c = dry("task", "--role", "code-reviewer", "gdr", "x")
    assert a["role"] == b["role"] == c["role"] == "code-reviewer"
    assert a["prompt"] == b["prompt"] == c["prompt"]


def test_task_listing(repo: Path) -> None:
    write_tree(repo, {".start/tasks.toml": '[tasks.secret]\nprompt = "p"\ninternal = true\n'})
    listed = json.loads(invoke("task", "--json").stdout)
    assert [t["name"] for t in listed] == ["commit-message", "git-diff-review", "help"]
    assert listed[1] == {
        "name": "git-diff-review",
        "alias": "gdr",
        "description": "Review the staged git diff",
        "layer": "built-in",
        "file": listed[1]["file"],
        "internal": False,
        "params": [],
        "source": None,
    }
    names = [t["name"] for t in json.loads(invoke("task", "--all", "--json").stdout)]
    assert names == ["commit-message", "git-diff-review", "help", "secret"]
    text = invoke("task").stdout
    assert text.splitlines()[0].split() == ["TASK", "ALIAS", "DESCRIPTION", "LAYER"]
    assert "secret" not in text


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
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return _running(pid)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        return "\nState:\tZ" not in status.read_text()
    return True


def test_role_command_failure_is_an_error(repo: Path) -> None:
    write_tree(repo, {".start/roles.toml": '[roles.r]\ncommand = "exit 9"\n'})
    result = invoke("prompt", "x", "-r", "r", "--dry-run")
    assert result.exit_code == 1
    assert result.stderr.startswith("start: role 'r' command failed with exit code 9\n")


# --- the agent command ---------------------------------------------------------------------


def test_model_placeholder_without_model_is_an_error(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": '[agents.nomodel]\nbin = "true"\ncommand = "{bin} -m {model} {prompt}"\n'
        },
    )
    result = invoke("prompt", "x", "-a", "nomodel", "--dry-run")
    assert result.exit_code == 1
    assert result.stderr == (
        "start: agent 'nomodel' uses {model} in its command, but no model was chosen.\n"
        "Pass --model MODEL, set 'model' in the task, set default_model in [agents.nomodel] in "
        f"{repo / '.start' / 'agents.toml'}, or write [--model {{model}}] in its command so "
        "that no model option is passed when none is chosen\n"
    )
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                '[agents.nomodel]\nbin = "true"\ncommand = "{bin} [-m {model}] {prompt}"\n'
            )
        },
    )
    assert dry("prompt", "x", "-a", "nomodel")["argv"][1:] == ["x"]


def test_prompt_file_carries_large_prompts(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": f'[agents.big]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} --file {{prompt_file}}"\n'
        },
    )
    text = "y" * 300_000
    proc, record = launch(repo, "prompt", "-a", "big", "-q", "-", stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    path = Path(record["argv"][1])
    assert path.read_text() == text
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    assert not path.is_relative_to(repo)


def test_agent_binary_not_executable_exits_126(repo: Path) -> None:
    (repo / "agent.sh").write_text("#!/bin/sh\n")
    write_tree(
        repo,
        {
            ".start/agents.toml": f'[agents.noexec]\nbin = "{repo / "agent.sh"}"\ncommand = "{{bin}} {{prompt}}"\n'
        },
    )
    result = invoke("prompt", "x", "-a", "noexec", "--dry-run")
    assert result.exit_code == 126


# --- exec, through a real subprocess ------------------------------------------------------


def test_gdr_launches_with_the_diff_embedded_byte_exact(repo: Path) -> None:
    diff_text = "x = '$(rm -rf /)' `id` \"q\" {instructions} ünï\n"
    (repo / "a.py").write_text(diff_text)
    subprocess.run(["git", "add", "a.py"], cwd=repo, check=True)
    expected_diff = subprocess.run(
        ["git", "diff", "--staged"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout
    proc, record = launch(repo, "task", "gdr", "focus on security")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    argv = record["argv"]
    assert argv[:3] == ["--model", "sonnet-x", "--append-system-prompt"]
    assert argv[3].startswith("You are a meticulous senior code reviewer.")
    assert "## Special Instructions\n\nfocus on security\n" in argv[4]
    assert f"```diff\n{expected_diff}\n```\n" in argv[4]
    assert record["cwd"] == str(repo)
    assert record["stdin"] == ""
    assert "start ▸ fake  model sonnet-x" in proc.stderr
    assert "  role          code-reviewer  (task 'git-diff-review')" in proc.stderr


@pytest.mark.parametrize("code", [0, 1, 7])
def test_exit_status_is_the_agents(repo: Path, code: int) -> None:
    proc, record = launch(repo, "prompt", "hi", FAKE_AGENT_EXIT=str(code))
    assert record is not None
    assert proc.returncode == code


def test_double_dash_passes_arguments_to_the_agent(repo: Path) -> None:
    proc, record = launch(repo, "task", "help", "how", "--", "--temperature", "0.2", "--", "-x")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    assert record["argv"][-4:] == ["--temperature", "0.2", "--", "-x"]
    assert record["argv"][4].endswith("Help me with: how")


def test_env_assignments_reach_the_agent(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                f'[agents.gem]\nbin = "{FAKE_AGENT}"\n'
                "command = \"GEMINI_SYSTEM_MD='{role_file}' {bin} '{prompt}'\"\n"
            )
        },
    )
    proc, record = launch(repo, "prompt", "-a", "gem", "-r", "code-reviewer", "hi")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    role_file = Path(record["env"]["GEMINI_SYSTEM_MD"])
    assert role_file.read_text().startswith("You are a meticulous senior code reviewer.")
    assert record["argv"] == ["hi"]


def test_role_file_of_a_file_only_role_is_the_original_path(repo: Path) -> None:
    write_tree(
        repo.parent / "home" / ".config" / "start",
        {
            "roles.toml": '[roles.terse]\nfile = "ROLE.md"\n',
            "agents.toml": (
                f'[agents.rf]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} --sys {{role_file}} {{prompt}}"\n'
            ),
        },
    )
    write_tree(repo, {"ROLE.md": "be terse\n"})
    data = dry("prompt", "-a", "rf", "-r", "terse", "hi")
    assert data["argv"][1:] == ["--sys", str(repo / "ROLE.md"), "hi"]


def test_project_role_file_is_a_copy_of_the_approved_bytes(repo: Path) -> None:
    write_tree(
        repo,
        {
            "ROLE.md": "be terse\n",
            ".start/config.toml": (
                '[roles.terse]\nfile = "ROLE.md"\n'
                f'[agents.rf]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} --sys {{role_file}} {{prompt}}"\n'
            ),
        },
    )
    proc, record = launch(repo, "prompt", "-a", "rf", "-r", "terse", "hi")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    copy = Path(record["argv"][1])
    assert copy != repo / "ROLE.md"
    assert copy.read_text() == "be terse\n"


def test_verbose_shows_the_command_line(repo: Path) -> None:
    proc, _ = launch(repo, "-v", "prompt", "it's")
    assert f"  command       {FAKE_AGENT} --model sonnet-x --append-system-prompt" in proc.stderr
    assert "'it'\"'\"'s'" in proc.stderr


def test_quiet_prints_no_summary(repo: Path) -> None:
    proc, record = launch(repo, "-q", "prompt", "hi")
    assert record is not None
    assert proc.stderr == ""


def test_debug_shows_reasons_and_timings(repo: Path) -> None:
    proc, _ = launch(repo, "--debug", "prompt", "hi")
    assert "  agent from    settings.default_agent" in proc.stderr
    assert "  timings       load " in proc.stderr


def test_shell_operator_template(repo: Path) -> None:
    out = repo.parent / "out.txt"
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                f'[agents.piped]\nbin = "{FAKE_AGENT}"\n'
                f'command = "{{bin}} \'{{prompt}}\' \\"{{role}}\\" > {out}"\n'
            )
        },
    )
    proc = run_start("prompt", "-a", "piped", "--no-role", "a 'b' $(c) `d`", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["argv"] == ["a 'b' $(c) `d`", ""]


def test_exec_restores_default_signal_handling(repo: Path) -> None:
    """SIGPIPE and SIGXFSZ are not ignored and no signal is blocked in the agent."""
    status = repo.parent / "status.txt"
    agent = repo.parent / "sig-agent.sh"
    agent.write_text(f"#!/bin/sh\nexec grep -E '^Sig(Ign|Blk):' /proc/self/status > {status}\n")
    agent.chmod(0o755)
    write_tree(
        repo,
        {".start/agents.toml": f'[agents.sig]\nbin = "{agent}"\ncommand = "{{bin}} {{prompt}}"\n'},
    )
    proc = run_start("prompt", "-q", "-a", "sig", "x", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    fields = dict(line.split(":\t") for line in status.read_text().splitlines())
    ignored, blocked = int(fields["SigIgn"], 16), int(fields["SigBlk"], 16)
    import signal

    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (number - 1)), f"{number} is ignored"
    assert blocked == 0


def test_stale_temp_files_are_swept(repo: Path) -> None:
    import time

    from start.tempfiles import sweep

    runtime = repo.parent / "run" / "start"
    runtime.mkdir(mode=0o700)
    dead = runtime / "999999999-role-00000000.md"  # no such process
    old = runtime / f"{os.getpid()}-prompt-11111111.md"  # alive, but over a day old
    mine = runtime / f"{os.getpid()}-role-22222222.md"  # alive and fresh: kept
    for path in (dead, old, mine):
        path.write_text("x")
    day_ago = time.time() - 25 * 3600
    os.utime(old, (day_ago, day_ago))
    sweep(runtime)
    assert sorted(p.name for p in runtime.iterdir()) == [mine.name]


def test_a_launch_sweeps_files_of_finished_runs(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": f'[agents.pf]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} {{prompt_file}}"\n'
        },
    )
    first, record = launch(repo, "prompt", "-q", "-a", "pf", "one")
    assert first.returncode == 0 and record is not None
    left_behind = Path(record["argv"][0])
    assert left_behind.exists()  # the agent may still read it: exec leaves it in place
    second, record = launch(repo, "prompt", "-q", "-a", "pf", "two")
    assert second.returncode == 0 and record is not None
    assert not left_behind.exists()  # its process is gone, so the next run removed it
    assert Path(record["argv"][0]).read_text() == "two"


def test_json_without_dry_run_is_a_usage_error(repo: Path) -> None:
    result = invoke("prompt", "x", "--json")
    assert result.exit_code == 2
    assert result.stderr == (
        "start: --json prints a launch only with --dry-run (or a listing: start task --json)\n"
    )
