"""The GitHub Action (action.yml) and the pre-commit hook (.pre-commit-hooks.yaml) on the real path.

`act` needs Docker, so the Action's steps are run here as a runner runs a composite action's: in
order, each step's `env` with `${{ inputs.* }}` and `${{ github.action_path }}` filled in, its
`run` script by `bash --noprofile --norc -eo pipefail`, with GITHUB_OUTPUT, GITHUB_PATH and
RUNNER_TEMP; the install step really installs this checkout (pip, from the package registry).
The hook runs under the real pre-commit, installed from the registry, on a real repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from tests.conftest import REPO, write_tree
from tests.fake_headless import agent

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

# An agent that answers with its prompt, one that fails, a task of the user's, and a stand-in
# reviewer that answers the task gate: it blocks a change that adds a line holding SECRET.
CONFIG = """
[settings]
default_agent = "printer"

[agents.printer]
bin = "printf"
command = "{bin} '%s' {prompt}"
print_command = "{bin} '%s' {prompt}"
print_output = "text"
print_permissions = { read-only = "", edit = "", full = "" }

[agents.echoer]
bin = "printf"
command = "{bin} 'echoer: %s' {prompt}"
print_command = "{bin} 'echoer: %s' {prompt}"
print_output = "text"
print_permissions = { read-only = "" }

[agents.broken]
bin = "false"
command = "{bin} {prompt}"
print_command = "{bin} {prompt}"
print_output = "text"
print_permissions = { read-only = "" }

[tasks.fix]
prompt = "Fix this: {instructions}"

""" + agent("reviewer", levels='read-only = ""', prefix="FAKE_MODE=gate ")

# Words a workflow could take from an issue title: shell, quotes, an option, an expression.
HOSTILE = """$(touch pwned) `touch pwned2` "q" 'q' --model=x ${{ github.token }} ; rm -rf ~"""


def _expand(text: str, values: Mapping[str, str]) -> str:
    """`${{ NAME }}` filled in from `values`; an expression the test does not know fails it."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        assert name in values, f"action.yml uses ${{{{ {name} }}}}, which this runner lacks"
        return values[name]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def _outputs(path: Path) -> dict[str, str]:
    """A GITHUB_OUTPUT file: `name=value` lines and `name<<END` ... `END` blocks."""
    found: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n") if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, end = line.split("<<", 1)
            block = []
            while lines[index] != end:
                block.append(lines[index])
                index += 1
            index += 1
            found[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            found[name] = value
    return found


class Step(NamedTuple):
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


class Runner:
    """What a GitHub runner gives a composite action's steps, in a scratch directory."""

    def __init__(self, root: Path, env: Mapping[str, str]) -> None:
        self.root = root
        self.temp = root / "runner-temp"
        self.workspace = root / "workspace"
        self.temp.mkdir(parents=True)
        self.workspace.mkdir()
        self.github_path = root / "github-path"
        self.github_path.touch()
        self.env = dict(env)
        self.action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))

    def step(self, index: int, inputs: Mapping[str, str]) -> Step:
        declared = self.action["inputs"]
        unknown = set(inputs) - set(declared)
        assert not unknown, f"action.yml has no input {unknown}"
        values = {f"inputs.{name}": spec.get("default", "") for name, spec in declared.items()}
        values.update({f"inputs.{name}": value for name, value in inputs.items()})
        values["github.action_path"] = str(REPO)
        step = self.action["runs"]["steps"][index]
        assert step["shell"] == "bash"
        script = self.root / f"step-{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        output = self.root / f"output-{index}"
        output.unlink(missing_ok=True)
        # Each line of GITHUB_PATH goes before PATH for the steps after it, the last first.
        added = self.github_path.read_text(encoding="utf-8").split()
        env = {
            **self.env,
            **{name: _expand(str(value), values) for name, value in step.get("env", {}).items()},
            "PATH": os.pathsep.join([*reversed(added), self.env["PATH"]]),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_PATH": str(self.github_path),
            "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_TEMP": str(self.temp),
        }
        assert "${{" not in step["run"], "inputs reach the script through env, never as text"
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return Step(done.returncode, done.stdout, done.stderr, _outputs(output))

    def run(self, **inputs: str) -> Step:
        """The `start` step, its outputs as the action's outputs name them."""
        done = self.step(1, {name.replace("_", "-"): value for name, value in inputs.items()})
        outputs = {}
        for name, spec in self.action["outputs"].items():
            match = re.fullmatch(r"\$\{\{ steps\.run\.outputs\.([\w-]+) \}\}", spec["value"])
            assert match is not None, spec["value"]
            if match.group(1) in done.outputs:
                outputs[name] = done.outputs[match.group(1)]
        return done._replace(outputs=outputs)


def _base_env(root: Path) -> dict[str, str]:
    """A runner's environment: a home, the user config above, and a PATH with a python3 and the
    system's tools, but neither this venv's `start` nor pipx."""
    home = root / "home"
    config = root / "config"
    write_tree(config, {"config.toml": CONFIG})
    tools = root / "tools"
    tools.mkdir(parents=True)
    (tools / "python3").symlink_to(sys.executable)
    keep = {"LANG", "LC_ALL", "TMPDIR", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT"}
    keep |= {name for name in os.environ if name.startswith(("PIP_", "UV_"))}
    return {
        **{name: os.environ[name] for name in keep if name in os.environ},
        "HOME": str(home),
        "START_CONFIG_DIR": str(config),
        "XDG_STATE_HOME": str(home / ".state"),
        "PATH": os.pathsep.join([str(tools), "/usr/local/bin", "/usr/bin", "/bin"]),
    }


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    """A runner whose first step, the install, has run."""
    root = tmp_path_factory.mktemp("action")
    runner = Runner(root, _base_env(root))
    assert shutil.which("pipx", path=runner.env["PATH"]) is None
    installed = runner.step(0, {})
    assert installed.returncode == 0, installed.stderr
    (bin_dir,) = runner.github_path.read_text(encoding="utf-8").split()
    assert (Path(bin_dir) / "start").is_file()
    assert bin_dir.startswith(str(runner.temp))
    return runner


def test_the_install_step_puts_start_on_path(runner: Runner) -> None:
    added = runner.github_path.read_text(encoding="utf-8").split()
    version = subprocess.run(
        [str(Path(added[0]) / "start"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("start, version ")


def test_a_task_runs_headless_and_its_answer_is_an_output_and_a_file(runner: Runner) -> None:
    import json

    done = runner.run(task="fix", instructions=HOSTILE)
    assert done.returncode == 0, done.stderr
    assert done.outputs["answer"] == f"Fix this: {HOSTILE}"
    assert done.outputs["exit-code"] == "0"
    result = json.loads(Path(done.outputs["result-file"]).read_text(encoding="utf-8"))
    assert (result["agent"], result["task"], result["success"]) == ("printer", "fix", True)
    assert result["permissions"] == "read-only"
    assert Path(done.outputs["result-file"]).parent == runner.temp
    # The words stayed words: nothing ran, and no option was added.
    assert not list(runner.workspace.glob("pwned*"))
    assert result["model"] is None


def test_a_prompt_with_inputs_for_the_agent_permissions_and_timeout(runner: Runner) -> None:
    import json

    file = runner.root / "answers" / "one.json"
    file.parent.mkdir(exist_ok=True)
    done = runner.run(
        prompt="a 'quoted' prompt; $(id)",
        agent="echoer",
        permissions="read-only",
        timeout="30",
        result_file=str(file),
    )
    assert done.returncode == 0, done.stderr
    assert done.outputs["answer"] == "echoer: a 'quoted' prompt; $(id)"
    assert done.outputs["result-file"] == str(file)
    assert json.loads(file.read_text(encoding="utf-8"))["agent"] == "echoer"


def test_several_agents_give_each_answer_under_its_heading(runner: Runner) -> None:
    done = runner.run(task="fix", instructions="it", agent="printer,echoer")
    assert done.returncode == 0, done.stderr
    assert done.outputs["answer"] == (
        "## printer\n\nFix this: it\n\n## echoer\n\nechoer: Fix this: it"
    )


def test_a_failed_run_fails_the_step_and_still_sets_the_outputs(runner: Runner) -> None:
    done = runner.run(task="fix", instructions="it", agent="broken")
    assert done.returncode == 1
    assert (done.outputs["exit-code"], done.outputs["answer"]) == ("1", "")
    assert "::error::start: agent 'broken': exited with status 1\n" in done.stderr


def test_an_agent_that_is_not_installed_is_127(runner: Runner) -> None:
    done = runner.run(task="fix", instructions="it", agent="claude")
    assert (done.returncode, done.outputs["exit-code"]) == (127, "127")


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        ({}, "::error::give the action a task or a prompt\n"),
        ({"task": "fix", "prompt": "p"}, "::error::give the action a task or a prompt, not both\n"),
        ({"prompt": "p", "instructions": "i"}, "::error::instructions go with a task\n"),
    ],
)
def test_inputs_that_do_not_go_together_are_refused(
    runner: Runner, inputs: dict[str, str], said: str
) -> None:
    done = runner.run(**inputs)
    assert (done.returncode, done.stdout, done.outputs) == (2, said, {})


def test_an_untrusted_project_is_not_run_unless_the_input_trusts_it(runner: Runner) -> None:
    write_tree(
        runner.workspace,
        {".start/tasks.toml": '[tasks.own]\nprompt = "own task: {instructions}"\n'},
    )
    subprocess.run(["git", "init", "-q"], cwd=runner.workspace, check=True)
    try:
        refused = runner.run(task="own", instructions="x")
        assert (refused.returncode, refused.outputs["exit-code"]) == (5, "5")
        trusted = runner.run(task="own", instructions="x", trust_project="true")
        assert trusted.returncode == 0, trusted.stderr
        assert trusted.outputs["answer"] == "own task: x"
    finally:
        shutil.rmtree(runner.workspace / ".start")
        shutil.rmtree(runner.workspace / ".git")


def _verdict(*lines: int) -> dict[str, Any]:
    """The stand-in reviewer's verdict on app.py, flagging `lines`."""
    message = "it adds SECRET: keep it out of the repository"
    return {
        "block": bool(lines),
        "findings": [{"file": "app.py", "line": line, "message": message} for line in lines],
    }


def _unstopped(log: str) -> str:
    """A step's log without its `::stop-commands::TOKEN` ... `::TOKEN::` blocks: the lines in
    which the runner would act on a workflow command."""
    return re.sub(r"^::stop-commands::(\w+)\n.*?^::\1::\n", "", log, flags=re.M | re.S)


def test_the_fail_if_input_fails_the_step_on_the_gates_verdict(runner: Runner) -> None:
    import json

    subprocess.run(["git", "init", "-q"], cwd=runner.workspace, check=True)
    app = runner.workspace / "app.py"
    # A file whose name is a workflow command: the reviewer's finding quotes it.
    hostile = runner.workspace / "::warning::pwned.py"
    try:
        app.write_text("print('hi')\nKEY = 'SECRET'\n", encoding="utf-8")
        hostile.write_text("SECRET\n", encoding="utf-8")
        subprocess.run(["git", "add", "."], cwd=runner.workspace, check=True)
        blocked = runner.run(task="gate", agent="reviewer", fail_if="block")
        assert (blocked.returncode, blocked.outputs["exit-code"]) == (6, "6"), blocked.stderr
        verdict = _verdict(2)
        verdict["findings"].insert(0, {**verdict["findings"][0], "file": hostile.name, "line": 1})
        assert json.loads(blocked.outputs["answer"]) == verdict
        # The findings are in the log, where no workflow command in the answer runs.
        assert (
            "start: blocked: agent 'reviewer' answered true at --fail-if block\n"
            "  ::warning::pwned.py:1: it adds SECRET: keep it out of the repository\n"
            "  app.py:2: it adds SECRET: keep it out of the repository\n"
        ) in blocked.stderr
        said = re.search(
            r"^::error::start: the answer holds true at fail-if block\n"
            r"::stop-commands::(\w{32})\n(.*)\n::\1::\n",
            blocked.stderr,
            re.MULTILINE,
        )
        assert said is not None, blocked.stderr
        assert json.loads(said.group(2)) == verdict
        assert "::warning::" not in _unstopped(blocked.stderr), blocked.stderr
        unstage = ["git", "rm", "-q", "--cached", f"./{hostile.name}"]  # ./: not a :(magic)
        subprocess.run(unstage, cwd=runner.workspace, check=True)
        hostile.unlink()
        # Without the input, the verdict is an answer like any other: the step passes.
        told = runner.run(task="gate", agent="reviewer")
        assert (told.returncode, told.outputs["exit-code"]) == (0, "0"), told.stderr
        assert json.loads(told.outputs["answer"]) == _verdict(2)
        app.write_text("print('hi')\nKEY = 'from the environment'\n", encoding="utf-8")
        subprocess.run(["git", "add", "app.py"], cwd=runner.workspace, check=True)
        passed = runner.run(task="gate", agent="reviewer", fail_if="block")
        assert (passed.returncode, passed.outputs["exit-code"]) == (0, "0"), passed.stderr
        assert json.loads(passed.outputs["answer"]) == _verdict()
        assert "::error::" not in passed.stderr
    finally:
        app.unlink(missing_ok=True)
        hostile.unlink(missing_ok=True)
        shutil.rmtree(runner.workspace / ".git")


# The pre-commit hook.

HOOK_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "start", "config", "docs")


def _git(cwd: Path, *args: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="module")
def hooked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A repository with pre-commit installed and start-task in its config, from a repository
    that holds this checkout's files at one commit (pre-commit clones a `repo` at its `rev`)."""
    root = tmp_path_factory.mktemp("hook")
    env = _base_env(root)
    env |= {
        "PRE_COMMIT_HOME": str(root / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": str(root / "gitconfig"),
    }
    tools = root / "pre-commit-venv"
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True, timeout=300)
    pip = subprocess.run(
        [str(tools / "bin" / "python"), "-m", "pip", "install", "--quiet", "pre-commit"],
        capture_output=True, text=True, timeout=900, env={**env, "PIP_CONSTRAINT": ""},
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    env["PATH"] = os.pathsep.join([str(tools / "bin"), env["PATH"]])
    source = root / "start-source"
    source.mkdir()
    for name in HOOK_FILES:
        if (REPO / name).is_dir():
            shutil.copytree(
                REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(REPO / name, source / name)
    for args in (("init", "-q"), ("add", "."), ("commit", "-qm", "start")):
        assert _git(source, *args, env=env).returncode == 0
    rev = _git(source, "rev-parse", "HEAD", env=env).stdout.strip()
    project = root / "project"
    project.mkdir()
    write_tree(
        project,
        {
            "app.py": "print('hello')\n",
            ".pre-commit-config.yaml": (
                f"repos:\n  - repo: {source}\n    rev: {rev}\n    hooks:\n"
                "      - id: start-task\n"
                "      - id: start-gate\n"
                "        args: [gate, --agent=reviewer]\n"
                "      - id: start-task\n"
                "        name: start task (the broken agent)\n"
                "        args: [git-diff-review, --agent=broken]\n"
                "        stages: [manual]\n"
            ),
        },
    )
    for args in (("init", "-q"), ("add", "."), ("commit", "-qm", "first")):
        assert _git(project, *args, env=env).returncode == 0
    installed = subprocess.run(
        ["pre-commit", "install"], cwd=project, env=env, capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stderr
    return project, env


def test_the_hook_reviews_the_staged_change_on_commit(hooked: tuple[Path, Any]) -> None:
    project, env = hooked
    (project / "app.py").write_text("print('hello, world')\n", encoding="utf-8")
    _git(project, "add", "app.py", env=env)
    committed = _git(project, "commit", "-m", "greet the world", env=env)
    shown = committed.stdout + committed.stderr  # git passes the hook's output on to stderr
    assert committed.returncode == 0, shown
    # The printer agent answers with its prompt: the review prompt, holding the staged diff.
    assert "start task (headless, on the staged change)" in shown
    assert "Analyze the following git diff" in shown
    assert "+print('hello, world')" in shown
    log = _git(project, "log", "--format=%s", env=env).stdout.split("\n")
    assert log[0] == "greet the world"


def test_a_failed_run_stops_the_commit(hooked: tuple[Path, Any]) -> None:
    project, env = hooked
    (project / "app.py").write_text("print('bye')\n", encoding="utf-8")
    _git(project, "add", "app.py", env=env)
    ran = subprocess.run(
        ["pre-commit", "run", "--hook-stage", "manual", "start-task"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "start: agent 'broken' failed: exited with status 1" in ran.stdout
    assert "- exit code: 1" in ran.stdout


def test_the_gate_blocks_a_commit_the_reviewer_flags_and_passes_one_it_does_not(
    hooked: tuple[Path, Any],
) -> None:
    import json

    project, env = hooked
    head = _git(project, "rev-parse", "HEAD", env=env).stdout
    (project / "app.py").write_text("print('hi')\nKEY = 'SECRET'\n", encoding="utf-8")
    _git(project, "add", "app.py", env=env)
    blocked = _git(project, "commit", "-m", "add the key", env=env)
    shown = blocked.stdout + blocked.stderr
    assert blocked.returncode == 1, shown
    assert re.search(
        r"^start gate \(blocks the commit when the review says so\)\.+Failed$", shown, re.M
    )
    assert "- exit code: 6\n" in shown
    # The verdict, its findings, and why it failed.
    assert json.dumps(_verdict(2)) + "\n" in shown
    assert (
        "start: blocked: agent 'reviewer' answered true at --fail-if block\n"
        "  app.py:2: it adds SECRET: keep it out of the repository\n"
    ) in shown
    assert _git(project, "rev-parse", "HEAD", env=env).stdout == head
    # The non-blocking hook ran on the same change, and passed.
    assert re.search(r"^start task \(headless, on the staged change\)\.+Passed$", shown, re.M)
    (project / "app.py").write_text("print('hi')\nKEY = 'from the environment'\n", encoding="utf-8")
    _git(project, "add", "app.py", env=env)
    passed = _git(project, "commit", "-m", "read the key", env=env)
    shown = passed.stdout + passed.stderr
    assert passed.returncode == 0, shown
    assert re.search(
        r"^start gate \(blocks the commit when the review says so\)\.+Passed$", shown, re.M
    )
    assert json.dumps(_verdict()) + "\n" in shown
    log = _git(project, "log", "--format=%s", env=env).stdout.split("\n")
    assert log[0] == "read the key"
