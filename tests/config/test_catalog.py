"""The shipped agent catalog (config/agents.toml) against the recorded help of the real CLIs.

Each agent NAME has tests/fixtures/agent_help/NAME.txt: the CLI's --help output (and that of the
subcommands it uses), each part under a header line `### <command line> (version X)`. An option
that the CLI accepts but hides from --help is evidenced by a recorded probe: a part whose command
line uses the option and whose output shows it was accepted (next to a contrast probe showing an
unknown option being rejected). docs/agents.md ("Refreshing the fixtures") says how to refresh these files.

Only the standard library and pytest: these checks read files and run nothing.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "config" / "agents.toml"
FIXTURES = REPO / "tests" / "fixtures" / "agent_help"

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
PLACEHOLDERS = frozenset({"bin", "model", "prompt", "role", "role_file", "prompt_file", "date"})
HEADER = re.compile(r"^### (?P<command>.+) \(version (?P<version>[^()\s]+)\)$", re.MULTILINE)
ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=")

# Environment variables a template may set, each with where the CLI documents or defines it.
DOCUMENTED_ENV: dict[str, str] = {
    # opencode: inline JSON config merged last over the user's config; documented on
    # opencode.ai/docs/config (packages/web/src/content/docs/config.mdx in the opencode repository).
    # The opencode fixture records a probe of `opencode debug config` with it set.
    "OPENCODE_CONFIG_CONTENT": "opencode",
    # Gemini CLI: a file that replaces the built-in system prompt; documented in
    # docs/cli/system-prompt.md of google-gemini/gemini-cli, read in
    # packages/core/src/prompts/promptProvider.ts. The shipped
    # gemini entry does not use it (it would drop Gemini's own prompt); it is allowed so that the
    # alternative shown in the entry's comment passes.
    "GEMINI_SYSTEM_MD": "gemini",
}


def _catalog() -> dict[str, dict[str, object]]:
    with CATALOG.open("rb") as f:
        agents = tomllib.load(f)["agents"]
    assert isinstance(agents, dict)
    return agents


AGENTS = _catalog()


def _words(command: str) -> list[str]:
    return shlex.split(command)


def _env_words(command: str) -> list[str]:
    """The leading NAME=value words of a template."""
    env: list[str] = []
    for word in _words(command):
        if not ASSIGNMENT.match(word):
            break
        env.append(word)
    return env


def _options(command: str) -> list[str]:
    """The options a template passes: words starting with `-`, without an `=value` part."""
    options: list[str] = []
    for word in _words(command)[len(_env_words(command)) :]:
        if word == "--":  # the end of options: what follows is the prompt
            break
        if word.startswith("-") and len(word) > 1:
            options.append(word.split("=", 1)[0])
    return options


def _help(agent: str) -> str:
    return (FIXTURES / f"{agent}.txt").read_text(encoding="utf-8")


def _mentions(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def test_catalog_has_the_expected_agents() -> None:
    assert {"claude", "gemini", "codex", "aider", "llm", "opencode", "qwen", "copilot"} <= set(
        AGENTS
    )


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_agent_has_a_fixture_with_versioned_headers(agent: str) -> None:
    path = FIXTURES / f"{agent}.txt"
    assert path.is_file(), f"record the help of {agent} in {path.relative_to(REPO)}"
    text = _help(agent)
    assert text.startswith("### "), "a fixture starts with a `### <command> (version X)` header"
    headers = [line for line in text.splitlines() if line.startswith("### ")]
    assert headers
    for line in headers:
        assert HEADER.match(line), f"malformed header: {line!r}"


def test_every_fixture_belongs_to_an_agent() -> None:
    stale = {p.stem for p in FIXTURES.glob("*.txt")} - set(AGENTS)
    assert not stale, f"fixtures without a catalog entry: {sorted(stale)}"


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_entry_fields(agent: str) -> None:
    entry = AGENTS[agent]
    assert NAME.match(agent)
    for field in ("bin", "command", "description", "url", "models_url"):
        assert isinstance(entry.get(field), str) and entry[field], f"{agent}.{field}"
    command = entry["command"]
    assert isinstance(command, str)
    used = set(re.findall(r"(?<!\{)\{([a-z_]+)\}(?!\})", command))
    assert used <= PLACEHOLDERS, f"unknown placeholders {sorted(used - PLACEHOLDERS)}"
    assert "prompt" in used or "prompt_file" in used, "the prompt must reach the agent"
    assert "role" in used or "role_file" in used, "the role must reach the agent"
    words = _words(command)[len(_env_words(command)) :]
    assert words[0] == "{bin}", "the program is {bin}, after any variable assignments"


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_default_model_is_a_model_alias(agent: str) -> None:
    entry = AGENTS[agent]
    if "{model}" not in str(entry["command"]):
        assert "models" not in entry and "default_model" not in entry, "models without {model}"
        return
    models = entry.get("models")
    assert isinstance(models, dict) and models, f"{agent} takes {{model}} but has no models"
    assert entry.get("default_model") in models
    for alias, model_id in models.items():
        assert NAME.match(alias), f"model alias {alias!r}"
        assert isinstance(model_id, str) and model_id and not model_id.startswith("-")


@pytest.mark.parametrize(
    ("agent", "option"),
    sorted(
        (agent, option) for agent, e in AGENTS.items() for option in _options(str(e["command"]))
    ),
)
def test_option_appears_in_recorded_help(agent: str, option: str) -> None:
    assert _mentions(_help(agent), option), (
        f"{agent}: {option} is not in tests/fixtures/agent_help/{agent}.txt; "
        "check the CLI's --help and refresh the fixture"
    )


@pytest.mark.parametrize(
    ("agent", "word"),
    sorted((agent, word) for agent, e in AGENTS.items() for word in _env_words(str(e["command"]))),
)
def test_environment_variables_are_documented(agent: str, word: str) -> None:
    match = ASSIGNMENT.match(word)
    assert match
    name = match["name"]
    assert name in DOCUMENTED_ENV, (
        f"{agent} sets {name}: add it, with its source, to DOCUMENTED_ENV"
    )
    assert DOCUMENTED_ENV[name] == agent or DOCUMENTED_ENV[name] == AGENTS[agent]["bin"]


def test_option_matching_is_whole_word() -> None:
    text = "  --append-system-prompt <prompt>   Append\n  -m, --model <model>\n"
    assert _mentions(text, "--model")
    assert _mentions(text, "-m")
    assert _mentions(text, "--append-system-prompt")
    assert not _mentions(text, "--append-system-prompt-file")
    assert not _mentions(text, "--mode")
    assert not _mentions(text, "-p")


def test_template_parsing_helpers() -> None:
    command = "A=1 B='x y' {bin} run -m {model} '--prompt={prompt}' -- '{prompt}'"
    assert _env_words(command) == ["A=1", "B=x y"]
    assert _options(command) == ["-m", "--prompt"]
