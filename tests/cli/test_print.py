"""`start task|prompt --print`: the agent's headless form run to its end, the answer alone on
stdout, success proven, and no process left behind however the run ends (issue 25)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from start.proc import agents as agentrun
from tests.conftest import HANG, REPO, read_pids, run_start, wait_gone, write_tree
from tests.fake_headless import agent

FAKE = REPO / "tests" / "fake_headless.py"

CONFIG = f'''
[settings]
default_agent = "fake"

{agent("fake")}
{agent("json", output="result", levels='read-only = ""')}

[agents.plain]
bin = "{sys.executable}"
command = "{{bin}} {FAKE} {{prompt}}"

[tasks.review]
prompt = "Review: {{instructions}}"

[tasks.fixer]
prompt = "Fix: {{instructions}}"
permissions = "edit"
'''


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def start(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_start("-q", *args, cwd=project, env=env)


def test_the_answer_and_nothing_else_goes_to_stdout(project: Path) -> None:
    record = project.parent / "record.json"
    result = start(project, "task", "review", "--print", "the diff", FAKE_RECORD=str(record))
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "ANSWER: Review: the diff\n",
        "",
    )
    assert json.loads(record.read_text()) == {
        "argv": ["--ro", "--", "Review: the diff"],
        "stdin": "",
    }


def test_the_summary_goes_to_stderr(project: Path) -> None:
    result = run_start("prompt", "--print", "hi", cwd=project)
    assert result.stdout == "ANSWER: hi\n"
    assert result.stderr.startswith("start ▸ fake\n")


# OSC 52 (set the clipboard), a colour, a carriage return that would hide what came before.
HOSTILE = "hi \x1b]52;c;cHduZWQ=\x07 there \x1b[31mred\tand\rover"
HOSTILE_SHOWN = "ANSWER: hi \\x1b]52;c;cHduZWQ=\\x07 there \\x1b[31mred\tand\\rover\n"


def test_an_answer_on_a_terminal_is_shown_escaped(project: Path) -> None:
    from tests.terminal import run_on_terminal

    code, screen = run_on_terminal("-q", "prompt", "--print", HOSTILE, cwd=project)
    assert (code, screen) == (0, HOSTILE_SHOWN)
    code, screen = run_on_terminal(
        "-q", "prompt", "--print", "-a", "fake,fake", HOSTILE, cwd=project
    )
    assert (code, screen) == (0, f"## fake\n\n{HOSTILE_SHOWN}\n## fake\n\n{HOSTILE_SHOWN}")


def test_the_live_board_on_a_terminal_shows_each_agents_state_and_time(project: Path) -> None:
    """The board (start.ui.display.Board) reads the run's record of its jobs (start.ui.progress): two
    runs of one CLI go one after the other, so the second is seen waiting while the first runs."""
    import re

    from tests.terminal import run_on_terminal

    code, screen = run_on_terminal(
        "prompt", "--print", "-a", "fake,fake", "hi", cwd=project,
        env={"FAKE_MODE": "slow", "FAKE_SECONDS": "1"},
    )  # fmt: skip
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    assert code == 0, screen
    assert re.search(r"  fake  running +[0-9]+ s\n  fake  waiting ", drawn), drawn
    assert re.search(r"  fake  done +[0-9]+ s\n  fake  running +[0-9]+ s", drawn), drawn
    assert drawn.endswith("## fake\n\nANSWER: hi from ?\n\n## fake\n\nANSWER: hi from ?\n")


def test_an_answer_piped_or_with_raw_is_exact(project: Path) -> None:
    from tests.terminal import run_on_terminal

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    piped = subprocess.run(
        [sys.executable, "-m", "start", "-q", "prompt", "--print", HOSTILE],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    answer = f"ANSWER: {HOSTILE}\n"
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, answer.encode(), b"")
    code, screen = run_on_terminal("-q", "prompt", "--print", "--raw", HOSTILE, cwd=project)
    assert (code, screen) == (0, answer)
    refused = start(project, "prompt", "--raw", "hi")
    assert (refused.returncode, refused.stderr) == (
        2,
        "start: --raw goes with --print (a headless run)\n",
    )


def test_permissions_from_the_command_line_then_the_task_then_read_only(project: Path) -> None:
    record = project.parent / "record.json"
    env = {"FAKE_RECORD": str(record)}
    for args, expected in (
        (("task", "review", "--print", "x"), "--ro"),
        (("task", "fixer", "--print", "x"), "--edit"),
        (("task", "fixer", "--print", "--permissions", "read-only", "x"), "--ro"),
        (("prompt", "--print", "--permissions", "edit", "x"), "--edit"),
    ):
        assert start(project, *args, **env).returncode == 0
        assert json.loads(record.read_text())["argv"][0] == expected


def test_the_level_and_where_it_comes_from_are_named(project: Path) -> None:
    """In the launch summary, in --print --json and in --dry-run --json; several agents too."""
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    by_task = f"task fixer's permissions (global: {config})"
    for args, level, source in (
        (("task", "review", "--print", "x"), "read-only", "the default"),
        (("task", "fixer", "--print", "x"), "edit", by_task),
        (("task", "fixer", "--print", "--permissions", "read-only", "x"), "read-only",
         "the --permissions option"),
    ):  # fmt: skip
        summary = run_start(*args, cwd=project)
        assert summary.returncode == 0, summary.stderr
        assert f"\n  permissions   {level}  ({source})\n" in summary.stderr
        for how in (("--json-fields", "permissions,permissions_from"), ("--dry-run", "--json")):
            data = json.loads(start(project, *args, *how).stdout)
            assert (data["permissions"], data["permissions_from"]) == (level, source), how
    several = run_start("task", "fixer", "--print", "-a", "fake,fake", "x", cwd=project)
    assert several.stderr.startswith(f"start ▸ fake, fake  (edit permissions: {by_task})\n")
    data = json.loads(start(project, "task", "fixer", "--print", "-a", "fake,fake",
                            "--json-fields", "all", "x").stdout)  # fmt: skip
    assert [(r["permissions"], r["permissions_from"]) for r in data] == [("edit", by_task)] * 2


def test_a_level_the_cli_cannot_enforce_is_refused(project: Path) -> None:
    result = start(project, "prompt", "--print", "--permissions", "full", "hi")
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "start: agent 'fake' cannot run with 'full' permissions: its CLI has no way to enforce "
        f"that level (it offers read-only, edit; print_permissions in [agents.fake] in {config}). "
        "Choose another level with --permissions, or another agent\n"
    )


def test_an_agent_without_a_headless_form_says_what_to_add(project: Path) -> None:
    result = start(project, "prompt", "--print", "-a", "plain", "hi")
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "start: agent 'plain' has no headless form for --print: add print_command and "
        f'print_output to [agents.plain] in {config} (see docs/agents.md, "Headless runs"), '
        "or choose another agent with -a\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("prompt", "--permissions", "edit", "hi"),
            "--permissions goes with --print (a headless run)",
        ),
        (("prompt", "--timeout", "5", "hi"), "--timeout goes with --print (a headless run)"),
        (("task", "--print"), "--print needs a task: start task NAME --print"),
    ],
)
def test_usage_errors(project: Path, args: tuple[str, ...], message: str) -> None:
    result = start(project, *args)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"start: {message}\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("prompt", "--print", "--json-fields", "id,anwser", "hi"),
            "invalid value for --json-fields: no key 'anwser' in a run's record (did you mean "
            "'answer'?); give 'all', or keys separated by commas such as id,answer,usage ('start "
            "help usage' lists them)\nhint: run 'start prompt --help' for usage",
        ),
        (
            ("prompt", "--print", "--json-fields", ",", "hi"),
            "invalid value for --json-fields: no key ',' in a run's record; give 'all', or keys "
            "separated by commas such as id,answer,usage ('start help usage' lists them)\nhint: "
            "run 'start prompt --help' for usage",
        ),
        (
            ("prompt", "--json-fields", "all", "hi"),
            "--json-fields goes with --print (the keys of a run's record), not with a launch or "
            "--dry-run",
        ),
        (
            ("task", "review", "--print", "--dry-run", "--json-fields", "id", "x"),
            "--json-fields goes with --print (the keys of a run's record), not with a launch or "
            "--dry-run",
        ),
    ],
)
def test_json_fields_are_checked_before_anything_runs(
    project: Path, args: tuple[str, ...], message: str
) -> None:
    record = project.parent / "record.json"
    result = start(project, *args, FAKE_RECORD=str(record))
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"start: {message}\n")
    assert not record.exists()


def test_json_fields_picks_keys_in_its_order(project: Path) -> None:
    result = start(project, "prompt", "--print", "--json-fields", "answer, id,answer", "hi")
    assert json.loads(result.stdout) == {"answer": "ANSWER: hi", "id": 1}
    assert list(json.loads(result.stdout)) == ["answer", "id"]


def test_a_json_envelope_gives_the_answer_and_its_usage(project: Path) -> None:
    """--json prints the keys a script reads first, the tokens and cost read from the CLI's
    usage among them; --json-fields all the whole record, the usage as the CLI reported it."""
    result = start(project, "prompt", "--print", "-a", "json", "--json", "hi", FAKE_MODE="result")
    data = json.loads(result.stdout)
    assert result.returncode == 0
    from start import runs as records

    assert data == {
        "id": 1,
        "state": "ok",
        "success": True,
        "answer": "ANSWER: hi",
        "value": None,
        "problems": [],
        "error": None,
        "agent": "json",
        "model": None,
        "exit_code": 0,
        "duration": data["duration"],
        "session_id": None,
        "input_tokens": 3,
        "output_tokens": 2,
        "cost_usd": 0.01,
        "denied": [],
    }
    assert list(data) == list(records.BRIEF)
    every = start(
        project, "prompt", "--print", "-a", "json", "--json-fields", "all", "hi", FAKE_MODE="result"
    )
    full = json.loads(every.stdout)
    assert list(full) == [*records.Run._fields, *records.DERIVED]
    assert (full["id"], full["agent"], full["permissions"], full["answer"]) == (
        2,
        "json",
        "read-only",
        "ANSWER: hi",
    )
    assert full["usage"] == {
        "usage": {"input_tokens": 3, "output_tokens": 2},
        "total_cost_usd": 0.01,
    }
    assert (full["input_tokens"], full["output_tokens"], full["cost_usd"]) == (3, 2, 0.01)


def test_actions_the_agent_was_refused_are_shown_not_hidden(project: Path) -> None:
    result = start(project, "prompt", "--print", "-a", "json", "hi", FAKE_MODE="denied")
    assert (result.returncode, result.stdout) == (0, "ANSWER: hi\n")
    assert result.stderr == (
        "start: ⚠ json was refused 1 action(s) at read-only permissions (--permissions grants "
        "more):\n  Bash rm -rf build\n"
    )
    data = json.loads(
        start(project, "prompt", "--print", "-a", "json", "--json", "hi", FAKE_MODE="denied").stdout
    )
    assert data["denied"] == ["Bash rm -rf build"]


def test_exit_0_with_an_error_in_the_envelope_is_a_failure(project: Path) -> None:
    result = start(project, "prompt", "--print", "-a", "json", "hi", FAKE_MODE="is-error")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(
        "start: agent 'json' failed: Invalid API key · Please run /login\nOutput:\n{"
    )
    assert result.stderr.endswith("Error Output: (none)\nExit Code: 0\n")


def test_exit_0_with_no_answer_is_a_failure(project: Path) -> None:
    result = start(project, "prompt", "--print", "hi", FAKE_MODE="empty")
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        "start: agent 'fake' failed: exited 0 but printed no answer\n"
        "Output: (none)\nError Output: (none)\nExit Code: 0\n",
    )


def test_output_that_is_not_the_envelope_is_a_failure(project: Path) -> None:
    result = start(project, "prompt", "--print", "-a", "json", "hi", FAKE_MODE="not-json")
    assert result.returncode == 1
    assert result.stderr.startswith(
        "start: agent 'json' failed: its output has no JSON result object "
        "(print_output = 'result'): Loading...\n"
    )


def test_a_failing_agent_in_seed_000s_format(project: Path) -> None:
    result = start(project, "prompt", "--print", "hi", FAKE_MODE="fail")
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        "start: agent 'fake' failed: exited with status 3: Error: unknown option '--bogus'\n"
        "Output:\npartial output\n"
        "Error Output:\nError: unknown option '--bogus'\n"
        "Exit Code: 3\n",
    )


def test_the_agents_stderr_is_shown_with_verbose(project: Path) -> None:
    quiet = start(project, "prompt", "--print", "hi", FAKE_MODE="stderr")
    assert (quiet.stdout, quiet.stderr) == ("ANSWER: hi\n", "")
    loud = start(project, "-v", "prompt", "--print", "hi", FAKE_MODE="stderr")
    assert loud.stdout == "ANSWER: hi\n"
    assert loud.stderr.endswith("a warning on stderr\n")


def test_an_answer_as_large_as_the_limit_arrives_whole(project: Path) -> None:
    # settings.print_answer_limit's default: 16 MiB
    result = start(project, "prompt", "--print", "hi", FAKE_MODE="huge", FAKE_MIB="16")
    assert result.returncode == 0
    assert len(result.stdout) == 16 * 1024 * 1024
    assert set(result.stdout) == {"x", "\n"}


def test_a_dry_run_shows_the_headless_command(project: Path) -> None:
    result = start(
        project, "prompt", "--print", "--permissions", "edit", "--dry-run", "--json", "hi"
    )
    data = json.loads(result.stdout)
    assert (data["argv"][2:], data["permissions"]) == (["--edit", "--", "hi"], "edit")


# --- every way a run ends: nothing is left behind ------------------------------------------


def test_a_timeout_stops_the_whole_group_and_exits_124(project: Path) -> None:
    pids = project.parent / "pids"
    result = start(
        project, "prompt", "--print", "--timeout", "2", "hi", FAKE_MODE="sleep", FAKE_PIDS=str(pids)
    )
    assert (result.returncode, result.stdout) == (124, "")
    assert result.stderr.startswith(
        "start: agent 'fake' failed: timed out after 2 s; its process group was stopped\n"
    )
    assert wait_gone(read_pids(pids)) == []


def test_what_the_agent_leaves_behind_is_killed(project: Path) -> None:
    pids = project.parent / "pids"
    result = start(project, "prompt", "--print", "hi", FAKE_MODE="leave-child", FAKE_PIDS=str(pids))
    assert (result.returncode, result.stdout) == (0, "ANSWER: hi\n")
    assert wait_gone(read_pids(pids)) == []


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)]
)
def test_a_signal_stops_the_agents_group(project: Path, signum: int, code: int) -> None:
    pids = project.parent / "pids"
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKE_MODE": "sleep", "FAKE_PIDS": str(pids)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "start", "-q", "prompt", "--print", "hi"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        started = read_pids(pids)
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out) == (code, b"")
    assert wait_gone(started) == []


def test_an_agent_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    env = {**os.environ, "FAKE_MODE": "stubborn", "FAKE_PIDS": str(pids)}
    done = agentrun.run_agent(
        [sys.executable, str(FAKE), "hi"], env, str(tmp_path), timeout=1, grace=0.5
    )
    assert (done.timed_out, done.returncode) == (True, None)
    assert wait_gone(read_pids(pids)) == []
    assert not Path(f"{pids}.finished").exists()  # killed, not left to sleep its 300 s


def test_a_large_prompt_reaches_the_agent_whole(project: Path) -> None:
    """A prompt too large for the command line goes as the agent's large_prompt says."""
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(
        CONFIG.replace(
            'print_output = "text"\n',
            'print_output = "text"\nlarge_prompt = "(on stdin)"\nlarge_prompt_stdin = true\n',
            1,
        )
    )
    text = "y" * 300_000
    result = run_start(
        "-q", "prompt", "--print", "-i", "-", cwd=project, env={"FAKE_MODE": "stdin"}, stdin=text
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"ANSWER: {text}\n"


def test_config_validate_checks_the_headless_form(conf: Path) -> None:
    from tests.conftest import invoke

    conf.write_text(
        '[agents.a]\nbin = "a"\ncommand = "{bin} {prompt}"\nprint_command = "{bin} {answer} {prompt}"\n'
        'print_output = "jsonl"\nprint_permissions = { readonly = "", edit = "\'" }\n'
        '[tasks.t]\nprompt = "x"\npermissions = "write"\n'
    )
    result: Any = invoke("config", "validate")
    assert result.exit_code == 3
    assert "print_command: unknown placeholder {answer}" in result.stdout + result.stderr
    out = result.stdout + result.stderr
    assert (
        "'jsonl' is not a known output: one of text, result, gemini, codex, opencode, continue, cline, droid, aider"
        in out
    )
    assert "'readonly' is not a permission level: one of read-only, edit, full" in out
    assert "the options cannot be split into words" in out
    assert "must be one of read-only, edit, full, not 'write'" in out


# --- several agents at once ------------------------------------------------------------------


def agents_config(tmp: Path, modes: dict[str, str], settings: str = "") -> str:
    """One agent per name, each its own binary (a link to Python named after it, since runs of
    one CLI never overlap), FAKE_NAME set and FAKE_MODE as given."""
    real = os.path.realpath(sys.executable)
    body = f'[settings]\ndefault_agent = "{next(iter(modes))}"\n{settings}\n'
    for name, env in modes.items():
        link = tmp / "bin" / f"cli-{name}"
        link.parent.mkdir(exist_ok=True)
        if not link.exists():
            link.symlink_to(real)
        body += (
            f'[agents.{name}]\nbin = "{link}"\ncommand = "{{bin}} {FAKE} {{prompt}}"\n'
            f'print_command = "FAKE_NAME={name} {env} {{bin}} -S {FAKE} {{args}} -- {{prompt}}"\n'
            'print_output = "text"\nprint_permissions = { read-only = "" }\n'
        )
    return body + '[tasks.review]\nprompt = "Review: {instructions}"\n'


def intervals(log: Path) -> dict[str, tuple[float, float]]:
    found = {}
    for line in log.read_text().splitlines():
        name, began, ended = line.split()
        found[name] = (float(began), float(ended))
    return found


def test_several_agents_run_at_once_and_answer_in_the_order_given(project: Path) -> None:
    """Each agent answers once this test makes its file, which it does only once all three run
    (one at a time, the first would wait for ever), c's first and a's last: c ends first, yet
    is shown last."""
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    pids, go = project.parent / "pids", project.parent / "go"
    config.write_text(
        agents_config(project.parent, {name: f"FAKE_UNTIL={go}.{name}" for name in "abc"})
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKE_MODE": "slow", "FAKE_PIDS": str(pids)}
    runner = subprocess.Popen(
        [sys.executable, "-m", "start", "-q", "task", "review", "--print", "-a", "a,b", "-a",
         "c", "x"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        agents = {name: read_pids(Path(f"{pids}.{name}"))[0] for name in "abc"}
        for name in "cba":
            Path(f"{go}.{name}").touch()
            assert wait_gone([agents[name]]) == []
        out, err = runner.communicate(timeout=HANG)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert (runner.returncode, err) == (0, "")
    said = [f"## {name}\n\n{name} is thinking\nANSWER: Review: x from {name}" for name in "abc"]
    assert out == "\n\n".join(said) + "\n"


def test_a_cap_of_one_runs_them_one_after_another(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(
        agents_config(
            project.parent, {"a": "FAKE_SECONDS=0.3", "b": "FAKE_SECONDS=0.3"}, "print_agents = 1"
        )
    )
    log = project.parent / "log"
    result = start(
        project, "prompt", "--print", "-a", "a,b", "x", FAKE_MODE="slow", FAKE_LOG=str(log)
    )
    assert result.returncode == 0
    ran = intervals(log)
    assert ran["a"][1] <= ran["b"][0]


def test_two_runs_of_one_cli_never_overlap(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(agents_config(project.parent, {"a": "FAKE_SECONDS=0.3"}))
    log = project.parent / "log"
    result = start(
        project, "prompt", "--print", "-a", "a,a", "x", FAKE_MODE="slow", FAKE_LOG=str(log)
    )
    assert result.returncode == 0
    assert result.stdout.count("## a\n") == 2
    times = sorted(tuple(map(float, line.split()[1:])) for line in log.read_text().splitlines())
    assert times[0][1] <= times[1][0]


def test_one_failure_hides_no_other_answer(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(agents_config(project.parent, {"a": "FAKE_MODE=text", "b": "FAKE_MODE=fail"}))
    result = start(project, "prompt", "--print", "-a", "a,b", "x")
    assert result.returncode == 1
    assert result.stdout == (
        "## a\n\nANSWER: x\n\n## b\n\n(no answer: exited with status 3: Error: unknown option '--bogus')\n"
    )
    assert result.stderr == (
        "start: agent 'b' failed: exited with status 3: Error: unknown option '--bogus'\n"
    )


def test_one_that_times_out(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(
        agents_config(project.parent, {"a": "FAKE_MODE=text", "b": "FAKE_MODE=sleep"})
    )
    pids = project.parent / "pids"
    result = start(
        project,
        "prompt",
        "--print",
        "--timeout",
        "2",
        "-a",
        "a,b",
        "--json",
        "x",
        FAKE_PIDS=str(pids),
    )
    assert result.returncode == 124
    data = json.loads(result.stdout)
    assert [(d["agent"], d["success"], d["state"]) for d in data] == [
        ("a", True, "ok"),
        ("b", False, "timed out"),
    ]
    assert wait_gone(read_pids(Path(f"{pids}.b"))) == []


def test_ctrl_c_leaves_no_agent_behind(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(agents_config(project.parent, {"a": "", "b": "", "c": "FAKE_MODE=stubborn"}))
    pids = project.parent / "pids"
    env = {**os.environ, "PYTHONPATH": str(REPO), "FAKE_MODE": "sleep", "FAKE_PIDS": str(pids)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "start", "-q", "prompt", "--print", "-a", "a,b,c", "hi"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        started = [pid for name in "abc" for pid in read_pids(Path(f"{pids}.{name}"))]
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out) == (130, b"")
    assert wait_gone(started) == []


def sigkill_start(project: Path, args: list[str], ready: list[Path], **env: str) -> list[int]:
    """Run `start ARGS`; once each file of `ready` lists pids, SIGKILL start. The pids listed."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "start", "-q", *args],
        cwd=project, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        pids = [pid for path in ready for pid in read_pids(path)]
        proc.kill()
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out) == (-signal.SIGKILL, b"")
    return pids


def test_sigkill_of_start_leaves_no_agent_behind(project: Path, survivors: list[int]) -> None:
    """A watchdog ends the agent's group, the child it left there included."""
    pids = project.parent / "pids"
    args = ["prompt", "--print", "hi"]
    survivors += sigkill_start(project, args, [pids], FAKE_MODE="sleep", FAKE_PIDS=str(pids))
    assert len(survivors) == 2
    assert wait_gone(survivors) == []


def test_sigkill_of_start_leaves_none_of_several_agents_behind(
    project: Path, survivors: list[int]
) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(agents_config(project.parent, {"a": "", "b": "", "c": "FAKE_MODE=stubborn"}))
    pids = project.parent / "pids"
    ready = [Path(f"{pids}.{name}") for name in "abc"]
    args = ["prompt", "--print", "-a", "a,b,c", "hi"]
    survivors += sigkill_start(project, args, ready, FAKE_MODE="sleep", FAKE_PIDS=str(pids))
    assert len(survivors) == 6
    assert wait_gone(survivors) == []


def test_sigkill_of_start_leaves_no_command_of_the_prompt_behind(
    project: Path, survivors: list[int]
) -> None:
    """The task's command runs before the agent does: the watchdog ends its group too.

    It names its pids a second after it started: a group that starts in the instant before start
    is killed, before start has named it to the watchdog, is not on its list (docs/security.md).
    """
    pids = project.parent / "pids"
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(
        config.read_text()
        + f"""
[tasks.slow]
command = 'sleep 300 & sleep 1; echo "$$ $!" > {pids}; wait'
command_timeout = 600
prompt = "{{command_output}}"
"""
    )
    survivors += sigkill_start(project, ["task", "slow", "--print"], [pids])
    assert len(survivors) == 2
    assert wait_gone(survivors) == []


def test_output_dir_and_dry_run_of_several(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(agents_config(project.parent, {"a": "", "b": ""}))
    out = project.parent / "answers"
    result = start(project, "prompt", "--print", "-a", "a,b", "--output", str(out), "x")
    assert result.returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.md", "b.md", "summary.json"]
    assert (out / "a.md").read_text() == "ANSWER: x"
    assert [d["file"] for d in json.loads((out / "summary.json").read_text())] == ["a.md", "b.md"]
    dry = json.loads(
        start(project, "prompt", "--print", "-a", "a,b", "--dry-run", "--json", "x").stdout
    )
    assert [(d["agent"], d["argv"][-1]) for d in dry] == [("a", "x"), ("b", "x")]


def test_output_files_are_private_whatever_the_umask(project: Path) -> None:
    """summary.json holds every prompt: the files are 0600 like the history, each directory
    start creates 0700, and one that was there keeps its mode."""
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(agents_config(project.parent, {"a": "", "b": ""}))
    kept = project.parent / "kept"
    kept.mkdir(mode=0o755)
    kept.chmod(0o755)
    (kept / "a.md").write_text("before\n")
    (kept / "a.md").chmod(0o644)
    made = project.parent / "made" / "answers"
    for out in (kept, made):
        argv = [sys.executable, "-m", "start", "-q", "prompt", "--print", "-a", "a,b"]
        result = subprocess.run(
            ["sh", "-c", 'umask 022 && exec "$@"', "sh", *argv, "--output", str(out), "x"],
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            check=False,
        )
        assert (result.returncode, result.stderr) == (0, "")
        modes = {p.name: oct(p.stat().st_mode & 0o777) for p in out.iterdir()}
        assert modes == {"a.md": "0o600", "b.md": "0o600", "summary.json": "0o600"}
    assert oct(kept.stat().st_mode & 0o777) == "0o755"
    assert oct(made.stat().st_mode & 0o777) == "0o700"
    assert oct(made.parent.stat().st_mode & 0o777) == "0o700"


def test_several_agents_need_print(project: Path) -> None:
    result = start(project, "prompt", "-a", "fake,json", "x")
    assert (result.returncode, result.stderr) == (
        2,
        "start: several agents (-a A,B) run only with --print: a launch hands the terminal to "
        "one agent\n",
    )


def test_a_dry_run_of_several_shows_a_control_escaped_in_a_line_that_pastes_back(
    project: Path,
) -> None:
    """Each agent's command line goes to stdout: a value holding ESC (here a model name) is
    quoted `$'...'`, so the terminal is untouched and the line pastes back (issue 44)."""
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    models = '[agents.m.models]\nh = "x\\u001b]0;owned\\u0007"\n'
    config.write_text(
        f'[settings]\ndefault_agent = "m"\n\n{agent("m", prefix="M={model} ")}{models}'
    )
    result = start(project, "--dry-run", "prompt", "--print", "-a", "m,m", "-m", "h", "hi")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all(line.isprintable() for line in lines), lines
    assert lines[0].startswith("m: M=$'x\\x1b]0;owned\\x07' ")
