"""Tests for start.compose.launch: large prompts, kept dry-run files, the terminal as stdin, and hints."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from start.compose.ask import Ask
from tests.conftest import FAKE_AGENT, REPO, drain_terminal, invoke, run_start, write_tree

FAKE = f'''
[settings]
default_agent = "fake"

[agents.fake]
bin = "{FAKE_AGENT}"
command = "{{bin}} [--model {{model}}] --append-system-prompt '{{role}}' {{args}} -- '{{prompt}}'"
large_prompt = "Read {{prompt_file}} first: it holds the whole prompt."

[agents.fake.models]
s = "sonnet-x"
'''


@pytest.fixture
def repo(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A trusted git repository, and a global config whose agent is the fake."""
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": FAKE})
    return isolated


def launch(
    repo: Path, *args: str, stdin: str | None = None, **env: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    record = repo.parent / "record.json"
    record.unlink(missing_ok=True)
    proc = run_start(*args, cwd=repo, env={"FAKE_AGENT_RECORD": str(record), **env}, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(record.read_text())
    return proc, data


def dry(*args: str) -> dict[str, Any]:
    result = invoke("--dry-run", "--json", *args)
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# --- passthrough -----------------------------------------------------------------------------


def test_agent_options_after_double_dash_reach_the_agent_as_options(repo: Path) -> None:
    _, record = launch(repo, "prompt", "-q", "--no-role", "hi", "--", "--debug-to-stderr", "-x")
    assert record["argv"] == [
        "--append-system-prompt",
        "",
        "--debug-to-stderr",
        "-x",
        "--",
        "hi",
    ]


def test_a_literal_model_id_is_noted_in_the_summary(repo: Path) -> None:
    proc, record = launch(repo, "prompt", "--no-role", "-m", "claude-x-9", "hi")
    assert record["argv"][:2] == ["--model", "claude-x-9"]
    assert proc.stderr.splitlines()[:2] == [
        "start ▸ fake  model claude-x-9",
        "  model from    --model (literal id, not an alias of fake)",
    ]
    proc, record = launch(repo, "prompt", "--no-role", "-m", "S", "hi")
    assert record["argv"][:2] == ["--model", "sonnet-x"]
    assert "model from" not in proc.stderr


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("sonet", "unknown model 'sonet' for agent 'claude'; did you mean 'sonnet'?"),
        ("op", "model 'op' is ambiguous for agent 'claude'; it matches: opus, opus-4-8"),
    ],
)
def test_model_typos_and_ambiguous_prefixes_exit_4(repo: Path, model: str, message: str) -> None:
    result = invoke("prompt", "x", "-a", "claude", "-m", model, "--dry-run")
    assert (result.exit_code, result.stderr) == (4, f"start: {message}\n")


# --- large prompts ---------------------------------------------------------------------------


def test_a_prompt_too_large_for_one_argument_goes_as_a_file(repo: Path) -> None:
    text = "y" * 200_000
    proc, record = launch(repo, "prompt", "--no-role", "-", stdin=text)
    *options, pointer = record["argv"]
    assert options == ["--append-system-prompt", "", "--"]
    path = Path(pointer.removeprefix("Read ").removesuffix(" first: it holds the whole prompt."))
    assert pointer == f"Read {path} first: it holds the whole prompt."
    assert path.read_text() == text
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert (
        f"  prompt        200,000 bytes, too large for the command line: the agent is asked "
        f"to read {path}\n"
    ) in proc.stderr


def test_a_prompt_too_large_for_argv_and_environment_together_goes_as_a_file(
    repo: Path,
) -> None:
    """Each argument is under 128 KiB, but all of them are more than ARG_MAX allows."""
    from start.compose.launch import arg_max

    write_tree(
        repo,
        {
            ".start/contexts.toml": "".join(
                f'[contexts.c{n}]\nrequired = true\ncommand = "head -c 100000 /dev/zero | tr \\\\\\\\0 {n % 10}"\n'
                for n in range(arg_max() // 100_000 + 1)
            )
        },
    )
    data = dry("prompt", "x")
    assert data["large_prompt"] is not None
    assert data["argv"][-1] == f"Read {data['large_prompt']} first: it holds the whole prompt."
    assert Path(data["large_prompt"]).read_text() == data["prompt"]


def test_a_large_prompt_can_go_to_the_agents_stdin(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                f'[agents.piped]\nbin = "{FAKE_AGENT}"\n'
                "command = \"{bin} ['--dir={prompt_dir}'] {args} -- {prompt}\"\n"
                'large_prompt = "(the prompt is on stdin)"\nlarge_prompt_stdin = true\n'
            )
        },
    )
    text = "z" * 150_000 + "\n"
    proc, record = launch(repo, "prompt", "-a", "piped", "--no-role", "-", "--", "-v", stdin=text)
    path = Path(record["argv"][0].removeprefix("--dir=")) / "prompt.md"
    assert record["argv"] == [f"--dir={path.parent}", "-v", "--", "(the prompt is on stdin)"]
    assert (record["stdin"], record["stdin_tty"]) == (text, False)
    assert path.read_text() == text
    assert f"too large for the command line: goes to the agent's stdin from {path}\n" in proc.stderr
    data = dry("prompt", "-a", "piped", "--no-role", "x" * 150_000)
    assert data["stdin"] == data["large_prompt"] == f"{data['kept_dir']}/prompt.md"
    shown = invoke("--dry-run", "prompt", "-a", "piped", "--no-role", "x" * 150_000).stdout
    kept = shown.split("(its files are kept in ", 1)[1].split(";", 1)[0]
    assert f"-- '(the prompt is on stdin)' < {kept}/prompt.md\n" in shown


def test_prompt_dir_is_empty_until_the_prompt_is_in_a_file(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                f'[agents.grouped]\nbin = "{FAKE_AGENT}"\n'
                'command = "{bin} [--dir={prompt_dir}] {prompt}"\n'
                f'[agents.bare]\nbin = "{FAKE_AGENT}"\n'
                'command = "{bin} --dir={prompt_dir} {prompt}"\n'
            )
        },
    )
    assert dry("prompt", "-a", "grouped", "--no-role", "hi")["argv"][1:] == ["hi"]
    data = dry("prompt", "-a", "bare", "--no-role", "hi")
    assert data["argv"][1:] == [f"--dir={data['kept_dir']}", "hi"]
    assert Path(data["kept_dir"], "prompt.md").read_text() == "hi"


def test_without_large_prompt_an_oversize_prompt_names_the_fix_and_the_file(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                '[agents.big]\nbin = "true"\ncommand = "{bin} --role-file {role_file} {prompt}"\n'
            )
        },
    )
    result = invoke("prompt", "x" * 200_000, "-a", "big", "--dry-run")
    assert result.exit_code == 1
    assert result.stderr == (
        "start: argv[3] of the agent command is 200,001 bytes; the limit for one argument is "
        "131,072 bytes.\nSet large_prompt in [agents.big] in "
        f"{repo / '.start' / 'agents.toml'} so that a long prompt goes as a file, use "
        "{prompt_file} in its command, or shorten the prompt.\n"
    )
    assert list((repo.parent / "run" / "start").iterdir()) == []


# --- dry runs --------------------------------------------------------------------------------


def test_a_dry_run_prints_the_prompt_once_and_a_command_line_that_pastes(repo: Path) -> None:
    prompt = "it's $(not run) `id`\n- a list item\n"
    result = invoke("prompt", "--dry-run", "-r", "code-reviewer", "-m", "s", prompt)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.count("- a list item") == 1
    [kept] = (repo.parent / "run" / "start").glob("dry-run-*")
    assert (kept / "prompt.md").read_text() == prompt
    role = (kept / "role.md").read_text()
    assert role.startswith("You are a meticulous senior code reviewer.")
    line = out.split("──── command ────\n", 1)[1].split("\n", 1)[0]
    assert line == (
        f"{FAKE_AGENT} --model sonnet-x --append-system-prompt "
        f'"$(cat {kept}/role.md)" -- "$(cat {kept}/prompt.md)"'
    )
    assert out.endswith(f"(its files are kept in {kept}; a run a day later removes them)\n")
    record = repo.parent / "pasted.json"
    env = {**os.environ, "FAKE_AGENT_RECORD": str(record)}
    subprocess.run(["sh", "-c", line], env=env, check=True, stdin=subprocess.DEVNULL)
    # $(cat FILE) drops trailing newlines, which no agent minds.
    assert json.loads(record.read_text())["argv"] == [
        "--model",
        "sonnet-x",
        "--append-system-prompt",
        role.rstrip("\n"),
        "--",
        prompt.rstrip("\n"),
    ]


def test_a_dry_run_keeps_the_files_its_command_names(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                f'[agents.rf]\nbin = "{FAKE_AGENT}"\n'
                'command = "{bin} --sys {role_file} --file {prompt_file}"\n'
            )
        },
    )
    data = dry("prompt", "-a", "rf", "-r", "code-reviewer", "hello")
    kept = Path(data["kept_dir"])
    assert data["argv"][1:] == ["--sys", f"{kept}/role.md", "--file", f"{kept}/prompt.md"]
    assert (kept / "prompt.md").read_text() == "hello"
    assert (kept / "role.md").read_text() == data["role_text"]
    assert oct(kept.stat().st_mode & 0o777) == "0o700"


def test_old_dry_run_directories_are_swept(repo: Path) -> None:
    from start.proc.tempfiles import sweep

    runtime = repo.parent / "run" / "start"
    old = runtime / "dry-run-1-00000000"
    fresh = runtime / "dry-run-2-11111111"
    for directory in (old, fresh):
        write_tree(directory, {"prompt.md": "x"})
    day_ago = time.time() - 25 * 3600
    os.utime(old, (day_ago, day_ago))
    sweep(str(runtime))
    assert sorted(p.name for p in runtime.iterdir()) == [fresh.name]


def test_the_sweep_deletes_only_names_start_writes(repo: Path) -> None:
    from start.proc.tempfiles import sweep

    runtime = repo.parent / "run" / "start"
    ours = ["1-prompt-0123abcd.md", "1-role-0123abcd.md", "1-prompt-0123abcd", "dry-run-1-0123abcd"]
    others = [
        "notes",
        "1-notes-0123abcd.md",
        "1-prompt-0123abcd.txt",
        "1-prompt-0123ABCD.md",
        "dry-run-1-x",
        "dry-run-notes",
        "x-prompt-0123abcd.md",
        ".config",
    ]
    write_tree(runtime, {name: "" for name in ours[:2] + others})
    write_tree(runtime, {f"{name}/prompt.md": "" for name in ours[2:]})
    day_ago = time.time() - 25 * 3600
    for name in ours + others:
        os.utime(runtime / name, (day_ago, day_ago))
    sweep(str(runtime))
    assert sorted(p.name for p in runtime.iterdir()) == sorted(others)


def test_the_sweep_removes_a_link_of_its_own_name_and_never_follows_it(repo: Path) -> None:
    from start.proc.tempfiles import sweep

    runtime, mine = repo.parent / "run" / "start", repo.parent / "mine"
    write_tree(mine, {"keep": ""})
    runtime.mkdir(parents=True)
    (runtime / "1-prompt-0123abcd").symlink_to(mine)
    sweep(str(runtime))  # pid 1 is alive and the link is new: kept
    assert [p.name for p in runtime.iterdir()] == ["1-prompt-0123abcd"]
    os.utime(runtime / "1-prompt-0123abcd", (0, 0), follow_symlinks=False)
    sweep(str(runtime))
    assert list(runtime.iterdir()) == []
    assert [p.name for p in mine.iterdir()] == ["keep"]


def test_a_symlinked_runtime_dir_is_not_swept(repo: Path) -> None:
    from start.proc.tempfiles import sweep, sweep_due

    mine, link = repo.parent / "mine", repo.parent / "link"
    write_tree(mine, {"1-prompt-0123abcd.md": ""})
    os.utime(mine / "1-prompt-0123abcd.md", (0, 0))
    link.symlink_to(mine)
    sweep(str(link))
    sweep_due(str(link))
    assert [p.name for p in mine.iterdir()] == ["1-prompt-0123abcd.md"]


# --- the terminal as stdin -------------------------------------------------------------------


def run_on_terminal(
    repo: Path, *args: str, piped: str, env: Mapping[str, str], terminal: bool = True
) -> int:
    """Run `start` with stdout and stderr on a pseudo-terminal and stdin a pipe carrying `piped`.

    With `terminal`, the pseudo-terminal is start's controlling terminal (/dev/tty); without,
    start runs in a session of its own that has none.
    """
    full_env = {**os.environ, **env, "PYTHONPATH": str(REPO), "TERM": "dumb"}
    master, slave = pty.openpty()
    name = os.ttyname(slave)

    def controlling_terminal() -> None:
        os.setsid()
        if terminal:
            os.close(os.open(name, os.O_RDWR))  # a session leader's first tty becomes /dev/tty

    process = subprocess.Popen(
        [sys.executable, "-m", "start", *args],
        stdin=subprocess.PIPE,
        stdout=slave,
        stderr=slave,
        cwd=repo,
        env=full_env,
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    assert process.stdin is not None
    process.stdin.write(piped.encode())
    process.stdin.close()
    code, output = drain_terminal(process, master, 60)
    assert code == 0, output
    return code


def test_after_reading_stdin_the_agent_gets_the_terminal(repo: Path) -> None:
    record = repo.parent / "record.json"
    env = {"FAKE_AGENT_RECORD": str(record)}
    run_on_terminal(repo, "prompt", "-q", "-", piped="from a pipe\n", env=env)
    data = json.loads(record.read_text())
    assert data["argv"][-1] == "from a pipe\n"
    assert data["stdin_tty"] is True


def test_a_piped_stdin_is_replaced_by_the_terminal_even_when_unread(repo: Path) -> None:
    record = repo.parent / "record.json"
    env = {"FAKE_AGENT_RECORD": str(record)}
    run_on_terminal(repo, "prompt", "-q", "hi", piped="not for the agent\n", env=env)
    data = json.loads(record.read_text())
    assert (data["stdin_tty"], data["stdin"]) == (True, "")


def test_without_a_terminal_and_with_no_stdin_stdin_is_left_alone(repo: Path) -> None:
    record = repo.parent / "record.json"
    env = {"FAKE_AGENT_RECORD": str(record)}
    run_on_terminal(
        repo, "prompt", "-q", "--no-stdin", "hi", piped="for the agent\n", env=env, terminal=False
    )
    data = json.loads(record.read_text())
    assert (data["stdin_tty"], data["stdin"]) == (False, "for the agent\n")
    assert data["argv"][-1].endswith("hi")


def test_without_a_terminal_piped_text_goes_into_the_prompt(repo: Path) -> None:
    record = repo.parent / "record.json"
    env = {"FAKE_AGENT_RECORD": str(record)}
    run_on_terminal(repo, "prompt", "-q", "hi", piped="for the prompt\n", env=env, terminal=False)
    data = json.loads(record.read_text())
    assert (data["stdin_tty"], data["stdin"]) == (False, "")
    assert data["argv"][-1].endswith("for the prompt\n\nhi")


# --- hints that name the right file ----------------------------------------------------------


def test_a_missing_shipped_agent_lists_the_installed_ones(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = repo.parent / "bin"
    for name in ("gemini", "llm"):
        write_tree(bin_dir, {name: "#!/bin/sh\n"})
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    config = repo.parent / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    result = invoke("prompt", "x", "-a", "claude")  # it stops before any exec
    assert result.exit_code == 127
    assert result.stderr == (
        "start: agent 'claude': 'claude' not found on PATH.\n"
        "Install it (https://github.com/anthropics/claude-code), or choose an installed agent "
        "(gemini, llm, llm-chat) with --agent NAME or default_agent under [settings] in "
        f"{config / 'start' / 'config.toml'}.\n"
    )
    assert "site-packages" not in result.stderr and "_builtin" not in result.stderr


@pytest.mark.parametrize("headless", [False, True])
def test_a_dry_run_shows_the_command_of_an_agent_not_installed_and_says_so(
    repo: Path, monkeypatch: pytest.MonkeyPatch, headless: bool
) -> None:
    """A new user previews a launch before installing the agent: the dry run shows it."""
    monkeypatch.setenv("PATH", str(repo.parent / "empty"))
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                '[agents.gone]\nbin = "no-such-agent-xyz"\ncommand = "{bin} -- {prompt}"\n'
                'print_command = "{bin} -p -- {prompt}"\nprint_output = "text"\n'
                '[agents.gone.print_permissions]\nread-only = ""\nedit = ""\nfull = ""\n'
            )
        },
    )
    printing = ["--print"] if headless else []
    result = invoke("prompt", "hello", "-a", "gone", *printing, "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert ("no-such-agent-xyz -p -- " if headless else "no-such-agent-xyz -- ") in result.stdout
    assert (
        "(it could not be: agent 'gone': 'no-such-agent-xyz' not found on PATH.\n"
        f"Install it or fix agents.gone.bin in {repo / '.start' / 'agents.toml'}"
    ) in result.stdout
    found = invoke("prompt", "hello", "-a", "gone", *printing, "--dry-run", "--json")
    assert json.loads(found.stdout)["unavailable"].startswith(
        "agent 'gone': 'no-such-agent-xyz' not found on PATH."
    )


def test_a_missing_agent_of_your_own_names_your_file(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(repo.parent / "empty"))
    write_tree(
        repo,
        {
            ".start/agents.toml": (
                '[agents.gone]\nbin = "no-such-agent-xyz"\ncommand = "{bin} {prompt}"\n'
            )
        },
    )
    result = invoke("prompt", "x", "-a", "gone")  # it stops before any exec
    assert result.exit_code == 127
    assert result.stderr == (
        "start: agent 'gone': 'no-such-agent-xyz' not found on PATH.\n"
        f"Install it or fix agents.gone.bin in {repo / '.start' / 'agents.toml'}, or choose "
        f"an installed agent (fake) with --agent NAME or default_agent under [settings] in "
        f"{repo.parent / 'home' / '.config' / 'start' / 'config.toml'}.\n"
    )


# --- the shipped catalog, dry run ------------------------------------------------------------

with (REPO / "config" / "agents.toml").open("rb") as catalog_file:
    CATALOG: dict[str, dict[str, Any]] = tomllib.load(catalog_file)["agents"]


@pytest.fixture
def installed(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every shipped agent's binary on PATH, as the fake agent; git stays reachable."""
    bin_dir = repo.parent / "bin"
    bin_dir.mkdir()
    for entry in CATALOG.values():
        target = bin_dir / entry["bin"]
        if not target.exists():
            target.symlink_to(FAKE_AGENT)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def prompt_positions(data: dict[str, Any], marker: str) -> list[int]:
    """Where the prompt reaches the agent: arguments holding its text or naming its file."""
    files = [
        data["kept_dir"] + "/prompt.md",
        *([data["large_prompt"]] * bool(data["large_prompt"])),
    ]
    return [
        index
        for index, arg in enumerate(data["argv"])
        if marker in arg or any(path in arg for path in files)
    ]


@pytest.mark.parametrize("agent", sorted(CATALOG))
def test_passthrough_comes_before_the_prompt_for_every_shipped_agent(
    agent: str, installed: Path
) -> None:
    data = dry("prompt", "-a", agent, "--no-role", "the prompt", "--", "--version")
    argv = data["argv"]
    assert argv.count("--version") == 1
    position = argv.index("--version")
    assert position < min(prompt_positions(data, "the prompt"))
    if "--" in argv:
        assert position < argv.index("--")


SMUGGLED = "--allowed-tools=run_shell_command"


@pytest.mark.parametrize("headless", [False, True], ids=["command", "print_command"])
@pytest.mark.parametrize("agent", sorted(CATALOG))
def test_a_model_that_looks_like_an_option_never_reaches_a_shipped_agent(
    agent: str, headless: bool, installed: Path
) -> None:
    """`gemini --model --allowed-tools=run_shell_command` would run shell commands unasked:
    every shipped template refuses such a model, or has no place for one."""
    field = "print_command" if headless else "command"
    args = ("prompt", "-a", agent, "-m", SMUGGLED, "--no-role", "hi")
    result = invoke("--dry-run", "--json", *args, *(("--print",) if headless else ()))
    if "{model}" not in CATALOG[agent][field]:
        assert result.exit_code == 0, result.stderr
        assert SMUGGLED not in json.loads(result.stdout)["argv"]
        return
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"start: agent '{agent}': the model starts with '-', and its {field} passes it as an "
        "argument of its own before '--', where its CLI would read it as an option; the agent "
        "was not started. A model's name never starts with '-': choose another with -m, or fix "
        "the task's model or the agent's default_model and models\n"
    )


@pytest.mark.parametrize("headless", [False, True], ids=["command", "print_command"])
@pytest.mark.parametrize("agent", sorted(CATALOG))
def test_a_prompt_that_looks_like_an_option_reaches_every_shipped_agent_as_text(
    agent: str, headless: bool, installed: Path
) -> None:
    """The shipped templates pass the prompt after '--', joined to its option, or as a file."""
    args = ("prompt", "-a", agent, "--no-role", f"--instructions={SMUGGLED}")
    data = dry(*args, *(("--print",) if headless else ()))
    argv = data["argv"]
    end = argv.index("--") if "--" in argv else len(argv)
    assert SMUGGLED not in argv[:end]
    assert prompt_positions(data, SMUGGLED) or data["stdin"]


def stage_a_large_diff(repo: Path, size: int) -> None:
    line = "x" * 99 + "\n"
    (repo / "big.txt").write_text(line * (size // len(line)))
    subprocess.run(["git", "add", "big.txt"], cwd=repo, check=True)


@pytest.mark.parametrize("agent", sorted(CATALOG))
def test_a_1_mb_staged_diff_reaches_every_shipped_agent(agent: str, installed: Path) -> None:
    from start.compose.launch import MAX_ARG_STRLEN, arg_max

    stage_a_large_diff(installed.parent / "work", 1_000_000)
    data = dry("task", "gdr", "-a", agent, "be strict")
    assert len(data["prompt"]) > 1_000_000
    sizes = [len(os.fsencode(arg)) + 1 for arg in data["argv"]]
    assert max(sizes) <= MAX_ARG_STRLEN
    assert sum(sizes) + sum(len(f"{k}={v}") + 1 for k, v in data["env"].items()) < arg_max()
    prompt_file = Path(data["large_prompt"] or data["kept_dir"] + "/prompt.md")
    assert prompt_file.read_text() == data["prompt"]
    if data["stdin"]:  # the CLI reads it on stdin and stays interactive
        assert (data["stdin"], CATALOG[agent].get("large_prompt_stdin")) == (str(prompt_file), True)
        return
    positions = prompt_positions(data, "## Git Diff")
    assert positions, "the prompt reaches the agent"
    if data["large_prompt"]:
        assert any(data["large_prompt"] in data["argv"][i] for i in positions)
    if "{prompt_dir}" in CATALOG[agent]["command"]:  # a CLI that reads only its workspace
        assert any(arg.endswith(f"={prompt_file.parent}") for arg in data["argv"])


@pytest.mark.parametrize(
    ("agent", "argument"),
    [
        ("gemini", "--prompt-interactive=the prompt"),
        ("copilot", "--interactive=the prompt"),
        ("cline", "the prompt"),
    ],
)
def test_no_role_adds_nothing_to_the_prompt(agent: str, argument: str, installed: Path) -> None:
    assert dry("prompt", "-a", agent, "--no-role", "the prompt")["argv"][-1] == argument
    with_role = dry("prompt", "-a", agent, "-r", "code-reviewer", "the prompt")["argv"][-1]
    assert with_role.startswith(argument.removesuffix("the prompt") + "You are a meticulous")
    assert with_role.endswith("fine.\n\n\nthe prompt")  # the role ends with a newline


# --- what a launch does while its commands run -----------------------------------------------


def test_the_agent_is_readied_while_the_contexts_commands_run(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The context's command waits for the file that readying the agent writes: were the agent
    # readied after the commands, the command would time out and the context be left out.
    from start.compose import launch as launcher
    from start.compose import pipeline

    flag = repo / "readied"
    waits = f"while [ ! -e {flag} ]; do sleep 0.01; done; echo after"
    settings = FAKE.replace("[settings]\n", "[settings]\ncommand_timeout = 5\n")
    config = settings + f"[contexts.wait]\nrequired = true\ncommand = '{waits}'\n"
    write_tree(repo.parent / "home" / ".config" / "start", {"config.toml": config})
    readied: list[str] = []

    def ready(agent: Any, *, headless: bool = False) -> None:
        readied.append(agent.name)
        flag.write_text("")

    monkeypatch.setattr(launcher, "ready", ready)
    request = Ask(prompt="hi", directory=str(repo))
    prepared = pipeline.prepare(request)
    prepared.launch.cleanup()

    assert readied == ["fake"]
    assert [(p.name, p.status, p.text) for p in prepared.composition.contexts] == [
        ("wait", "ok", "after\n")
    ]


def test_the_config_cache_is_written_while_the_commands_run(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from start.compose import pipeline
    from start.config import cache
    from start.proc import process

    config = FAKE + "[contexts.c]\nrequired = true\ncommand = 'echo hi'\n"
    write_tree(repo.parent / "home" / ".config" / "start", {"config.toml": config})
    events: list[str] = []
    spawn, put = process.spawn, cache.put

    def spawned(*args: Any, **kwargs: Any) -> Any:
        events.append("spawn")
        return spawn(*args, **kwargs)

    def stored(*args: Any) -> None:
        events.append("put")
        put(*args)

    monkeypatch.setattr(process, "spawn", spawned)
    monkeypatch.setattr(cache, "put", stored)
    request = Ask(prompt="hi", directory=str(repo))
    pipeline.prepare(request).launch.cleanup()
    # The first load writes the built-in layer's entry and the merged one, after the command
    # has started.
    assert events == ["spawn", "put", "put"]


@pytest.mark.parametrize("text", ["hi", None], ids=["no command", "an unknown task"])
def test_the_config_cache_is_written_without_commands_and_when_the_launch_fails(
    repo: Path, text: str | None
) -> None:
    from start.base.errors import StartError
    from start.compose import pipeline
    from start.config import cache

    if text is None:
        selection = Ask("task", task="no-such-task", directory=str(repo))
    else:
        selection = Ask(prompt=text, directory=str(repo))
    try:
        pipeline.prepare(selection).launch.cleanup()
    except StartError:
        assert text is None
    assert len(list(Path(cache.directory()).glob("config-*.bin"))) == 1
