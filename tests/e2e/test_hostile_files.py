"""Hostile files in a clone: a config file linked out of the repository to a secret, TOML past
Python's limits, and errors whose text would quote an untrusted file. Nothing of such a file
reaches the model through `start mcp`, and nothing crashes.

`start mcp` is checked in process (start.mcp.library, and the SDK's client on start.mcp.server);
the CLI through the real `start` in a subprocess.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from start import trust
from start.base import paths
from start.config.load import load
from start.mcp import library
from start.runs import rules
from tests.conftest import run_start, write_tree
from tests.mcp.conftest import CONFIG, NO_ASKING, TASKS, connect

pytestmark = pytest.mark.slow

KEY_ID = "AKIAIOSFODNN7EXAMPLE"
SECRETS = {
    # ~/.aws/credentials: tomllib stops at the unquoted key id, which was then quoted.
    ".aws/credentials": f"[default]\naws_access_key_id = {KEY_ID}\n",
    # ~/.env: the same at the first line.
    ".env": f"AWS_ACCESS_KEY_ID={KEY_ID}\n",
}
OUTSIDE = "is a symlink that leads outside the project root; start does not read it"
UNTRUSTED = "is not trusted (never approved); run 'start trust' to review it"
WITHHELD = "not quoted because it is not approved; 'start config validate' shows them"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def repo(isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone with a global config of the user's (tests/mcp's), and no shipped items."""
    directory = tmp_path / "global"
    write_tree(directory, {"config.toml": CONFIG})
    monkeypatch.setenv("START_CONFIG_DIR", str(directory))
    builtin = tmp_path / "builtin"
    builtin.mkdir()
    monkeypatch.setattr(paths, "builtin_config_dir", lambda: str(builtin))
    write_tree(isolated, {"GUIDE.md": "The guide.\n", ".git/HEAD": ""})
    return isolated


def intro(workdir: Path) -> str:
    return (
        f"start serves the user's tasks for {workdir}. Each task is a prompt; the list_tasks tool "
        "lists them and run_task(task_name, instructions) composes one as `start task NAME "
        "INSTRUCTIONS` would, running its command, and returns the command's output followed by "
        "the composed prompt, which you then follow; find_tasks(text) ranks them by what they "
        "do. Contexts and roles are resources: start://context/NAME and start://role/NAME."
    )


def offered(repo: Path, errors: str) -> str:
    """The instructions when only the user's items are offered: the project is not trusted and
    its config has errors at `errors`."""
    return (
        f"{intro(repo)} Only built-in and global items are offered: {repo}/.start {UNTRUSTED}; "
        f"the project's config has errors ({errors}), {WITHHELD}."
    )


# --- a config file linked out of the repository ---------------------------------------------


@pytest.mark.parametrize("secret", SECRETS, ids=SECRETS)
def test_a_config_link_to_a_secret_reaches_no_model_and_no_terminal(
    repo: Path, secret: str
) -> None:
    target = Path.home() / secret
    write_tree(Path.home(), {secret: SECRETS[secret]})
    link = repo / ".start" / "config.toml"
    link.parent.mkdir()
    link.symlink_to(target)

    assert library.instructions(rules.Scope(str(repo))) == offered(repo, f"{link}: cannot be read")
    seen = rules.view(rules.Scope(str(repo)))
    assert [task.name for task in rules.listed(seen.config)] == TASKS

    # Approved or not, the link is never followed: the error names it, and nothing else.
    found = trust.scan(load(str(repo)))
    assert found is not None
    trust.approve(found)
    assert library.instructions(rules.Scope(str(repo))) == (
        f"{intro(repo)} The configuration cannot be loaded now: configuration is invalid "
        f"(1 error)\n  {link}\n    error: {OUTSIDE}\nRun 'start config validate' to see every "
        "problem."
    )

    validate = run_start("config", "validate", cwd=repo)
    launch = run_start("task", "greet", cwd=repo)
    assert (launch.returncode, launch.stdout) == (3, "")
    assert launch.stderr == (
        f"start: configuration is invalid (1 error)\n  {link}\n    error: {OUTSIDE}\n"
        "Run 'start config validate' to see every problem.\n"
    )
    assert validate.returncode == 3
    assert f"{link}: error: {OUTSIDE}\n" in validate.stdout
    for output in (validate.stdout, validate.stderr):
        assert KEY_ID not in output


def test_a_start_dir_linked_out_of_the_repository_is_not_read(repo: Path) -> None:
    write_tree(Path.home(), {"secrets/config.toml": f'x = "{KEY_ID}"\n'})
    (repo / ".start").symlink_to(Path.home() / "secrets")
    expected = (
        f"{intro(repo)} Only built-in and global items are offered: the project's config has "
        f"errors ({repo}/.start: cannot be read), {WITHHELD}."
    )
    assert library.instructions(rules.Scope(str(repo))) == expected
    validate = run_start("config", "validate", cwd=repo)
    assert validate.returncode == 3
    assert f"{repo}/.start: error: {OUTSIDE}\n" in validate.stdout
    assert KEY_ID not in validate.stdout + validate.stderr


@pytest.mark.anyio
async def test_the_listing_of_a_repository_with_such_a_link_names_the_file_only(
    repo: Path,
) -> None:
    write_tree(Path.home(), {".env": SECRETS[".env"]})
    link = repo / ".start" / "config.toml"
    link.parent.mkdir()
    link.symlink_to(Path.home() / ".env")
    async with connect(repo, "legacy") as client:
        instructions = client.instructions
        listing = await client.call_tool("list_tasks", {})
    no_taskfile = (
        f" No Taskfile tools (list_user_tasks, run_user_task): {repo} has no .agent/Taskfile.yml "
        "or Taskfile.yml."
    )
    assert instructions == offered(repo, f"{link}: cannot be read") + NO_ASKING + no_taskfile
    assert listing.structured_content is not None
    assert listing.structured_content["message"] == (
        f"Successfully listed 5 tasks for {repo}. Only built-in and global tasks are offered: "
        f"{repo}/.start {UNTRUSTED}; the project's config has errors ({link}: cannot be read), "
        f"{WITHHELD}.{NO_ASKING}"
    )
    assert [task["name"] for task in listing.structured_content["tasks"]] == TASKS


# --- errors in an untrusted project: named by place, never quoted ---------------------------


@pytest.mark.parametrize(
    ("text", "place"),
    [
        (f"[tasks.x]\nprompt = {KEY_ID}\n", ":2:10: a syntax error"),
        (f"[{KEY_ID}\nx = 1\n", ":1:1: a syntax error"),
        (f'[settings]\ndefault_agent = "{KEY_ID}"\n', ":2:1: an error"),
        (f'[tasks.x]\nprompt = "x"\nrole = "{KEY_ID}"\n', ":3:1: an error"),
    ],
    ids=["an unquoted value", "an unclosed header", "an unknown agent", "an unknown role"],
)
def test_an_untrusted_projects_errors_reach_the_model_by_place_only(
    repo: Path, text: str, place: str
) -> None:
    write_tree(repo, {".start/config.toml": text})
    path = repo / ".start" / "config.toml"
    instructions = library.instructions(rules.Scope(str(repo)))
    errors = [str(p) for p in load(str(repo)).errors]
    assert any(KEY_ID in error for error in errors)  # the CLI's own words quote it
    assert instructions == offered(repo, f"{path}{place}")
    seen = rules.view(rules.Scope(str(repo)))
    assert [task.name for task in rules.listed(seen.config)] == TASKS


def test_at_most_five_places_are_named(repo: Path) -> None:
    text = "".join(f"[tasks.t{i}]\nprompt = {i}\n" for i in range(7))
    write_tree(repo, {".start/config.toml": text})
    path = repo / ".start" / "config.toml"
    places = ", ".join(f"{path}:{line}:1: an error" for line in range(2, 12, 2))
    assert library.instructions(rules.Scope(str(repo))) == offered(repo, f"{places} and 2 more")


# --- TOML past Python's limits ---------------------------------------------------------------

DIGITS = sys.get_int_max_str_digits()
LONG = f"an integer has more than {DIGITS:,} digits; start reads at most that"
DEEP = "arrays or inline tables are nested too deeply to read"


def test_a_long_integer_in_the_project_stops_neither_the_cli_nor_start_mcp(repo: Path) -> None:
    write_tree(repo, {".start/tasks.toml": "[tasks.x]\nprompt = 'x'\nn = 1" + "0" * DIGITS})
    path = repo / ".start" / "tasks.toml"
    assert library.instructions(rules.Scope(str(repo))) == offered(repo, f"{path}: cannot be read")
    launch = run_start("task", "greet", cwd=repo)
    assert (launch.returncode, launch.stdout) == (3, "")
    assert launch.stderr == (
        f"start: configuration is invalid (1 error)\n  {path}\n    error: {LONG}\n"
        "Run 'start config validate' to see every problem.\n"
    )


@pytest.mark.parametrize(
    ("text", "message", "at"),
    [
        ("prompt = 'x'\nn = 1" + "0" * DIGITS + "\n", LONG, ""),
        ("prompt = 'x'\nn = " + "[" * 3000 + "]" * 3000 + "\n", DEEP, ":2:1"),
    ],
    ids=["a long integer", "deep arrays"],
)
def test_a_hostile_gemini_command_file_is_skipped_with_a_warning(
    repo: Path, text: str, message: str, at: str
) -> None:
    write_tree(repo, {".gemini/commands/bad.toml": text})
    path = repo / ".gemini" / "commands" / "bad.toml"
    validate = run_start("config", "validate", cwd=repo)
    assert validate.returncode == 0, validate.stderr
    assert f"{path}{at}: warning: not imported: {message}\n" in validate.stdout
    assert library.instructions(rules.Scope(str(repo))).startswith(intro(repo))


# --- command files ---------------------------------------------------------------------------


def test_a_binary_command_file_is_not_a_task(repo: Path) -> None:
    write_tree(repo, {".claude/commands/ok.md": "Explain\n"})
    binary = repo / ".claude" / "commands" / "image.md"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    validate = run_start("config", "validate", cwd=repo)
    assert validate.returncode == 0, validate.stderr
    assert (
        f"{binary}: warning: not imported: is not a text file (it is not UTF-8, or holds a "
        "NUL byte)\n"
    ) in validate.stdout
    listing = run_start("task", cwd=repo)
    assert "claude:ok" in listing.stdout and "claude:image" not in listing.stdout
