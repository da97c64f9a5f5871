"""The shipped agent catalog (config/agents.toml) against the recorded help of the real CLIs.

Each agent NAME has tests/fixtures/agent_help/NAME.txt: the CLI's --help output (and that of the
subcommands it uses), each part under a header line `### <command line> (version X)`. An option
that the CLI accepts but hides from --help is evidenced by a recorded probe: a part whose command
line uses the option and whose output shows it was accepted (next to a contrast probe showing an
unknown option being rejected). The last part is the passthrough probe: start's own argv for
`start prompt -a NAME ... -- --version` (or `--help`), run on the real CLI, which printed its
version (or help). `make agents` (scripts/agents.py) re-records every fixture.

Only the standard library and pytest: these checks read files and run nothing.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path
from typing import Final

import pytest

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "config" / "agents.toml"
FIXTURES = REPO / "tests" / "fixtures" / "agent_help"

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
PLACEHOLDERS = frozenset(
    {"bin", "model", "prompt", "role", "role_file", "prompt_file", "prompt_dir", "date", "args"}
)
# print_command, the headless form, may also name the file its CLI writes the answer to.
PRINT_PLACEHOLDERS = PLACEHOLDERS | {"answer_file"}
LEVELS = ("read-only", "edit", "full")  # as start.config.schema.LEVELS
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
    """The template's words, optional groups' brackets left out (shlex has no such groups)."""
    return [word.removeprefix("[").removesuffix("]") for word in shlex.split(command)]


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


def _parts(agent: str) -> list[tuple[str, str, str]]:
    """The fixture's parts: (command line, version, the text under the header)."""
    text = _help(agent)
    headers = list(HEADER.finditer(text))
    ends = [h.start() for h in headers[1:]] + [len(text)]
    return [
        (h["command"], h["version"], text[h.end() : end])
        for h, end in zip(headers, ends, strict=True)
    ]


def _mentions(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def test_catalog_has_the_expected_agents() -> None:
    expected = {"claude", "gemini", "codex", "aider", "llm", "opencode", "qwen", "copilot"}
    assert expected | {"auggie", "droid", "cn", "cline"} <= set(AGENTS)


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
def test_a_model_is_passed_only_when_one_was_chosen(agent: str) -> None:
    """No default_model: the CLI's own default applies unless the user chooses a model."""
    entry = AGENTS[agent]
    command = str(entry["command"])
    assert "default_model" not in entry
    bare = re.sub(r"\[(--model|-m) \{model\}\]", "", command)
    assert "{model}" not in bare, "{model} only in an optional group, [--model {model}]"
    models = entry.get("models", {})
    assert isinstance(models, dict)
    if models:
        assert "{model}" in command, f"{agent} has models but never passes one"
    for alias, model_id in models.items():
        assert NAME.match(alias), f"model alias {alias!r}"
        assert isinstance(model_id, str) and model_id and not model_id.startswith("-")


# The parts of a fixture that list the models the CLI knows.
MODEL_LISTINGS: dict[str, tuple[str, ...]] = {
    "opencode": ("opencode models",),
    "llm": ("llm models",),
    "llm-chat": ("llm models",),
    "copilot": ("copilot help config", "copilot --help"),  # --help: "use 'auto' to let ..."
}


@pytest.mark.parametrize(
    ("agent", "model_id"),
    sorted(
        (agent, model_id)
        for agent in MODEL_LISTINGS
        for model_id in dict(AGENTS[agent].get("models", {})).values()  # type: ignore[call-overload]
    ),
)
def test_model_ids_are_known_to_the_recorded_cli(agent: str, model_id: str) -> None:
    parts = {line: text for line, _, text in _parts(agent)}
    whole = rf"(?<![\w.-]){re.escape(model_id)}(?![\w.-])"
    assert any(re.search(whole, parts[command]) for command in MODEL_LISTINGS[agent]), (
        f"{agent}: {model_id} is not in the recorded {' or '.join(MODEL_LISTINGS[agent])}"
    )


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_extra_arguments_have_their_slot_before_the_prompt(agent: str) -> None:
    words = _words(str(AGENTS[agent]["command"]))
    assert words.count("{args}") == 1, "{args} once, as a word of its own"
    slot = words.index("{args}")
    prompt_words = [i for i, w in enumerate(words) if "{prompt}" in w or "{prompt_file}" in w]
    assert slot < min(prompt_words), "{args} comes before the prompt"
    if "--" in words:
        assert slot < words.index("--")


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_large_prompt_has_a_way_to_the_cli(agent: str) -> None:
    """{prompt} inline is limited to 128 KiB: large_prompt says how a larger one gets there."""
    entry = AGENTS[agent]
    command = str(entry["command"])
    large = entry.get("large_prompt")
    if "{prompt}" not in command:
        assert "{prompt_file}" in command and large is None
        return
    assert isinstance(large, str), f"{agent} passes {{prompt}} inline but has no large_prompt"
    if entry.get("large_prompt_stdin"):
        assert "{prompt_file}" not in large
    else:
        assert "{prompt_file}" in large, "a pointer prompt names the file"


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_the_passthrough_probe_shows_its_effect(agent: str) -> None:
    """The last part: the real CLI, given start's argv with `-- --version`, printed its version."""
    command, version, text = _parts(agent)[-1]
    note, _, output = text.strip("\n").partition("\n")
    flag = "--help" if agent.startswith("llm") else "--version"
    assert note.startswith(f"# probe: passthrough, start's argv for `start prompt -a {agent} ")
    words = shlex.split(command.replace("$'", "'"))
    if words[0] == "env":
        words = [w for w in words[1:] if not ASSIGNMENT.match(w)]
    assert words[0] == AGENTS[agent]["bin"]
    assert flag in words
    prompt = [i for i, w in enumerate(words) if "probe prompt" in w or "$SCRATCH/prompt.md" in w]
    assert words.index(flag) < min(prompt), "the passthrough came before the prompt"
    if flag == "--help":
        assert output.startswith("Usage: llm ")
    else:
        assert version in output, f"{agent}: the probe's output does not show version {version}"


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


def _headless_options(entry: dict[str, object]) -> list[str]:
    """The options of an entry's headless form: its print_command's and resume_command's, and
    those of every level."""
    options = _options(str(entry["print_command"])) + _options(str(entry.get("resume_command", "")))
    levels = entry.get("print_permissions", {})
    assert isinstance(levels, dict)
    for value in levels.values():
        options += _options(str(value))
    options += _options(str(entry.get("print_max_turns", "")))
    return options + _options(str(entry.get("print_schema", "")))


# Options a CLI takes but leaves out of its --help: Claude Code's reference documents
# --max-turns for print mode, and its binary holds the option (`max-turns <turns>`).
HIDDEN_FROM_HELP: Final = {("claude", "--max-turns")}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_headless_form(agent: str) -> None:
    """Every shipped agent has a headless form (--print) built like its interactive command."""
    entry = AGENTS[agent]
    command = entry.get("print_command")
    assert isinstance(command, str) and command, f"{agent} has no print_command"
    assert isinstance(entry.get("print_output"), str), f"{agent} has no print_output"
    used = set(re.findall(r"(?<!\{)\{([a-z_]+)\}(?!\})", command))
    assert used <= PRINT_PLACEHOLDERS, f"unknown placeholders {sorted(used - PRINT_PLACEHOLDERS)}"
    assert "prompt" in used or "prompt_file" in used, "the prompt must reach the agent"
    assert "role" in used or "role_file" in used, "the role must reach the agent"
    words = _words(command)[len(_env_words(command)) :]
    assert words[0] == "{bin}", "the program is {bin}, after any variable assignments"
    bare = re.sub(r"\[(--model|-m) \{model\}\]", "", command)
    assert "{model}" not in bare, "{model} only in an optional group, [--model {model}]"
    assert words.count("{args}") == 1, "{args} once, as a word of its own"
    slot = words.index("{args}")
    prompt_words = [i for i, w in enumerate(words) if "{prompt}" in w or "{prompt_file}" in w]
    assert slot < min(prompt_words), "{args} comes before the prompt"
    if "--" in words:
        assert slot < words.index("--")


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_headless_permission_levels(agent: str) -> None:
    """read-only, the default level, is offered by every shipped agent; each level's value is
    options only (a level the CLI cannot enforce is left out, not given a placeholder value)."""
    levels = AGENTS[agent].get("print_permissions")
    assert isinstance(levels, dict) and "read-only" in levels
    assert set(levels) <= set(LEVELS)
    for level, value in levels.items():
        assert isinstance(value, str)
        words = shlex.split(value)
        assert not words or words[0].startswith("-"), f"{agent}.{level} starts with an option"
        assert "{" not in value, f"{agent}.{level}: no placeholders in permission options"


@pytest.mark.parametrize(
    ("agent", "option"),
    sorted((agent, option) for agent, e in AGENTS.items() for option in _headless_options(e)),
)
def test_headless_option_appears_in_recorded_help(agent: str, option: str) -> None:
    if (agent, option) in HIDDEN_FROM_HELP:
        assert not _mentions(_help(agent), option), "it is in the help now: drop the exception"
        return
    assert _mentions(_help(agent), option), (
        f"{agent}: {option} (print_command, print_permissions or print_schema) is not in "
        f"tests/fixtures/agent_help/{agent}.txt; check the CLI's --help (and that of the "
        "subcommand its headless form runs) and refresh the fixture"
    )


@pytest.mark.parametrize(
    ("agent", "word"),
    sorted(
        (agent, word)
        for agent, e in AGENTS.items()
        for field in ("command", "print_command")
        for word in _env_words(str(e.get(field, "")))
    ),
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


def test_headless_options_are_those_of_the_command_and_of_every_level() -> None:
    entry: dict[str, object] = {
        "print_command": "{bin} -p --out=json {args} -- {prompt}",
        "print_permissions": {"read-only": "--mode plan", "edit": "", "full": "--yolo=1"},
        "print_schema": "--schema {schema}",
    }
    assert _headless_options(entry) == ["-p", "--out", "--mode", "--yolo", "--schema"]


def test_the_agents_whose_cli_holds_an_answer_to_a_schema() -> None:
    """docs/agents.md ("Answers held to a schema") names these; the others are asked in the
    prompt."""
    held = {name: e["print_schema"] for name, e in AGENTS.items() if "print_schema" in e}
    assert held == {
        "claude": "--json-schema {schema}",
        "codex": "--output-schema '{schema_file}'",
        "qwen": "--json-schema {schema}",
        "llm": "--schema {schema}",
        "llm-chat": "--schema {schema}",
    }


def test_the_agents_whose_cli_has_a_turn_limit() -> None:
    """docs/configuration.md (print_max_turns) names these; a workflow step's max_turns with any
    other agent is an early error."""
    held = {name: e["print_max_turns"] for name, e in AGENTS.items() if "print_max_turns" in e}
    assert held == {
        "claude": "--max-turns {max_turns}",
        "qwen": "--max-session-turns {max_turns}",
        "auggie": "--max-turns {max_turns}",
    }


def test_the_agents_that_can_continue_a_conversation() -> None:
    """docs/agents.md ("Continuing a conversation") names these, each checked against its CLI by
    tests/e2e/test_continue_real.py, and says why the others cannot."""
    able = [name for name, e in AGENTS.items() if "resume_command" in e]
    assert able == [
        "claude", "gemini", "codex", "opencode", "qwen", "copilot", "llm", "llm-chat", "droid"
    ]  # fmt: skip
    docs = (REPO / "docs" / "agents.md").read_text()
    section = docs.partition("### Continuing a conversation")[2].partition("\n### ")[0]
    for name, entry in AGENTS.items():
        if name not in able:
            assert f"**{name}**" in section, f"docs/agents.md does not say why {name} cannot"
            continue
        assert f"| {name} |" in section, f"docs/agents.md's table has no row for {name}"
        command = str(entry["resume_command"])
        words = _words(command)[len(_env_words(command)) :]
        assert words[0] == "{bin}" and words.count("{args}") == 1, name
        assert "{session}" in command, name


def test_template_parsing_helpers() -> None:
    command = "A=1 B='x y' {bin} run [-m {model}] ['--s='{role}] '--prompt={prompt}' -- '{prompt}'"
    assert _env_words(command) == ["A=1", "B=x y"]
    assert _options(command) == ["-m", "--s", "--prompt"]
