"""Selection precedence for role, agent, model and contexts, and task name lookup."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from start.base.errors import AgentNotFoundError, UnknownNameError
from start.base.paths import ProjectLocation
from start.compose.ask import Ask
from start.compose.resolve import (
    UnknownModelError,
    Which,
    find_task,
    plan,
    resolve_model,
    select_contexts,
)
from start.config.model import Agent, Config, Context, Origin, Role, Settings, Task

BUILTIN = Origin("built-in", "/b/agents.toml")
GLOBAL = Origin("global", "/g/config.toml")


def asked(mode: str, agent: str | None = None, **fields: object) -> Ask:
    """An ask of the command line: `-a AGENT` and the other fields by name."""
    return Ask(mode, agents=(agent,) if agent else (), **fields)  # type: ignore[arg-type]


def agent(name: str, origin: Origin = BUILTIN, /, **models: str) -> Agent:
    return Agent(
        name=name,
        origin=origin,
        bin=name,
        command="{bin} {prompt}",
        models=models,
        default_model=next(iter(models), None) if models else None,
    )


def make_config(
    *,
    agents: list[Agent] | None = None,
    roles: Sequence[str] = ("first", "second", "third"),
    tasks: list[Task] | None = None,
    contexts: list[Context] | None = None,
    settings: Mapping[str, str] | None = None,
) -> Config:
    agents = agents if agents is not None else [agent("alpha"), agent("beta")]
    return Config(
        settings=Settings(**settings or {}),  # type: ignore[arg-type]
        agents={a.name: a for a in agents},
        roles={r: Role(name=r, origin=GLOBAL, prompt=r) for r in roles},
        contexts={c.name: c for c in contexts or []},
        tasks={t.name: t for t in tasks or []},
        project=ProjectLocation("/w", None, None),
        files=(),
        layer_dirs={},
    )


def on_path(*names: str) -> Which:
    return lambda name: f"/bin/{name}" if name in names else None


TASK = Task(name="review", origin=GLOBAL, prompt="p", role="second", agent="beta")
BARE_TASK = Task(name="review", origin=GLOBAL, prompt="p")


@pytest.mark.parametrize(
    ("request_", "task", "settings", "expected", "reason"),
    [
        (asked("task", role="third"), TASK, {"default_role": "first"}, "third", "--role"),
        (asked("task"), TASK, {"default_role": "first"}, "second", "task 'review'"),
        (asked("task"), BARE_TASK, {"default_role": "third"}, "third", "settings.default_role"),
        (asked("task"), BARE_TASK, {}, "first", "first role defined"),
        (asked("task", role="third", no_role=True), TASK, {}, None, "--no-role"),
    ],
)
def test_role_precedence(
    request_: Ask, task: Task, settings: dict[str, str], expected: str | None, reason: str
) -> None:
    config = make_config(tasks=[task], settings=settings)
    result = plan(config, _with_task(request_), which=on_path("alpha", "beta"))
    assert (result.role.name if result.role else None, result.role_reason) == (expected, reason)


def _with_task(request: Ask) -> Ask:
    return request._replace(task="review")


def test_no_roles_means_no_role() -> None:
    config = make_config(roles=[])
    result = plan(config, asked("session"), which=on_path("alpha"))
    assert (result.role, result.role_reason) == (None, "no roles are defined")


@pytest.mark.parametrize(
    ("request_", "task", "settings", "path", "expected", "reason"),
    [
        (asked("task", agent="alpha"), TASK, {"default_agent": "beta"}, (), "alpha", "--agent"),
        (asked("task"), TASK, {"default_agent": "alpha"}, (), "beta", "task 'review'"),
        (
            asked("task"),
            BARE_TASK,
            {"default_agent": "beta"},
            (),
            "beta",
            "settings.default_agent",
        ),
        (asked("task"), BARE_TASK, {}, ("beta",), "beta", "first agent on PATH"),
        (asked("task"), BARE_TASK, {}, ("alpha", "beta"), "alpha", "first agent on PATH"),
    ],
)
def test_agent_precedence(
    request_: Ask,
    task: Task,
    settings: dict[str, str],
    path: tuple[str, ...],
    expected: str,
    reason: str,
) -> None:
    config = make_config(tasks=[task], settings=settings)
    result = plan(config, _with_task(request_), which=on_path(*path))
    assert (result.agent.name, result.agent_reason) == (expected, reason)


def test_user_agents_on_path_come_before_shipped_ones() -> None:
    config = make_config(agents=[agent("alpha"), agent("mine", GLOBAL)])
    result = plan(config, asked("session"), which=on_path("alpha", "mine"))
    assert (result.agent.name, result.agent_reason) == ("mine", "first configured agent on PATH")


@pytest.mark.parametrize(
    ("variables", "config_file"),
    [
        ({}, "home/.config/start/config.toml"),
        ({"XDG_CONFIG_HOME": "xdg"}, "xdg/start/config.toml"),
        ({"XDG_CONFIG_HOME": "xdg", "START_CONFIG_DIR": "mine"}, "mine/config.toml"),
    ],
)
def test_no_agent_on_path_exits_127_naming_the_real_config_file(
    variables: dict[str, str], config_file: str, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = isolated.parent
    for name, value in variables.items():
        monkeypatch.setenv(name, str(scratch / value))
    with pytest.raises(AgentNotFoundError) as raised:
        plan(make_config(), asked("session"), which=on_path())
    assert raised.value.exit_code == 127
    assert str(raised.value) == (
        "no agent found on PATH; looked for: alpha (alpha), beta (beta).\n"
        "Install one of them, or choose one with --agent NAME, or set default_agent under "
        f"[settings] in {scratch / config_file}"
    )


def test_unknown_agent_exits_4_with_suggestion() -> None:
    with pytest.raises(UnknownNameError) as raised:
        plan(make_config(), asked("session", agent="alpah"), which=on_path())
    assert raised.value.exit_code == 4
    assert str(raised.value) == "unknown agent 'alpah'; did you mean 'alpha'?"


def test_unknown_role_exits_4_with_suggestion() -> None:
    with pytest.raises(UnknownNameError) as raised:
        plan(make_config(), asked("session", role="secnd"), which=on_path("alpha"))
    assert str(raised.value) == "unknown role 'secnd'; did you mean 'second'?"


CLAUDE = agent(
    "claude",
    sonnet="claude-sonnet-4-5",
    opus="claude-opus-4-1",
    **{"opus-4-8": "claude-opus-4-8"},
    haiku="claude-haiku-4-5",
    fable="claude-fable-5-2",
    o="claude-o-1",
)


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        ("opus", ("claude-opus-4-1", "alias 'opus'")),
        ("SONNET", ("claude-sonnet-4-5", "alias 'sonnet'")),
        ("Opus-4-8", ("claude-opus-4-8", "alias 'opus-4-8'")),
        ("son", ("claude-sonnet-4-5", "alias prefix of 'sonnet'")),
        ("HAI", ("claude-haiku-4-5", "alias prefix of 'haiku'")),
        ("opus-4", ("claude-opus-4-8", "alias prefix of 'opus-4-8'")),
        ("claude-opus-4-8", ("claude-opus-4-8", "model id of alias 'opus-4-8'")),
        ("claude-x-9", ("claude-x-9", "literal id, not an alias of claude")),
        ("gpt-6", ("gpt-6", "literal id, not an alias of claude")),
        ("x", ("x", "literal id, not an alias of claude")),  # aliases under 3 letters: no typos
        ("sonnet-4", ("sonnet-4", "literal id, not an alias of claude")),  # two edits off
        ("", (None, "none: the agent's own default applies")),
    ],
)
def test_model_resolution(wanted: str, expected: tuple[str | None, str]) -> None:
    assert resolve_model(CLAUDE, wanted) == expected


@pytest.mark.parametrize(
    ("wanted", "message"),
    [
        ("op", "model 'op' is ambiguous for agent 'claude'; it matches: opus, opus-4-8"),
        ("OP", "model 'OP' is ambiguous for agent 'claude'; it matches: opus, opus-4-8"),
        ("sonet", "unknown model 'sonet' for agent 'claude'; did you mean 'sonnet'?"),
        ("hiaku", "unknown model 'hiaku' for agent 'claude'; did you mean 'haiku'?"),
        ("Sonnett", "unknown model 'Sonnett' for agent 'claude'; did you mean 'sonnet'?"),
        ("opus-4-9", "unknown model 'opus-4-9' for agent 'claude'; did you mean 'opus-4-8'?"),
        ("fabel", "unknown model 'fabel' for agent 'claude'; did you mean 'fable'?"),
    ],
)
def test_typos_and_ambiguous_prefixes_exit_4(wanted: str, message: str) -> None:
    with pytest.raises(UnknownModelError) as raised:
        resolve_model(CLAUDE, wanted)
    assert raised.value.exit_code == 4
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("cli_model", "task_model", "default", "expected", "reason"),
    [
        ("haiku", "opus", "sonnet", "claude-haiku-4-5", "--model (alias 'haiku')"),
        (None, "son", "haiku", "claude-sonnet-4-5", "task 'review' (alias prefix of 'sonnet')"),
        (None, None, "haiku", "claude-haiku-4-5", "agent default_model 'haiku'"),
        (None, None, None, None, "none chosen: the agent's own default applies"),
        ("", "opus", "sonnet", None, "--model (none: the agent's own default applies)"),
    ],
)
def test_model_precedence(
    cli_model: str | None,
    task_model: str | None,
    default: str | None,
    expected: str | None,
    reason: str,
) -> None:
    claude = CLAUDE._replace(default_model=default)
    task = Task(name="review", origin=GLOBAL, prompt="p", model=task_model)
    config = make_config(agents=[claude], tasks=[task])
    result = plan(config, asked("task", model=cli_model, task="review"), which=on_path("claude"))
    assert (result.model, result.model_reason) == (expected, reason)


def test_a_task_model_typo_names_the_task() -> None:
    task = Task(name="review", origin=GLOBAL, prompt="p", model="sonet")
    config = make_config(agents=[CLAUDE], tasks=[task])
    with pytest.raises(UnknownModelError) as raised:
        plan(config, asked("task", task="review"), which=on_path("claude"))
    assert str(raised.value) == (
        "task 'review': unknown model 'sonet' for agent 'claude'; did you mean 'sonnet'?"
    )


def test_agent_without_models_has_no_model() -> None:
    result = plan(make_config(), asked("session"), which=on_path("alpha"))
    assert (result.model, result.model_reason) == (
        None,
        "none chosen: the agent's own default applies",
    )


def test_contexts_by_mode_in_definition_order() -> None:
    contexts = [
        Context(name="c1", origin=GLOBAL, prompt="1"),
        Context(name="c2", origin=GLOBAL, prompt="2", required=True),
        Context(name="c3", origin=GLOBAL, prompt="3"),
        Context(name="c4", origin=GLOBAL, prompt="4", required=True),
    ]
    config = make_config(contexts=contexts)
    assert [c.name for c in select_contexts(config, "session")] == ["c1", "c2", "c3", "c4"]
    assert [c.name for c in select_contexts(config, "prompt")] == ["c2", "c4"]
    assert [c.name for c in select_contexts(config, "task")] == ["c2", "c4"]


TASKS = {
    t.name: t
    for t in (
        Task(name="git-diff-review", origin=GLOBAL, prompt="p", alias="gdr"),
        Task(name="git-log", origin=GLOBAL, prompt="p", alias="gl"),
        Task(name="docs", origin=GLOBAL, prompt="p", alias="d"),
        Task(name="d", origin=GLOBAL, prompt="p"),
    )
}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("git-log", "git-log"),
        ("gdr", "git-diff-review"),
        ("git-d", "git-diff-review"),
        ("gd", "git-diff-review"),  # prefix of the alias gdr
        ("d", "d"),  # an exact name beats an alias
        ("do", "docs"),
    ],
)
def test_task_lookup(name: str, expected: str) -> None:
    assert find_task(TASKS, name).name == expected


def test_ambiguous_task_prefix_lists_candidates() -> None:
    with pytest.raises(UnknownNameError) as raised:
        find_task(TASKS, "git")
    assert raised.value.exit_code == 4
    assert str(raised.value) == "task 'git' is ambiguous; it matches: git-diff-review, git-log"


def test_unknown_task_did_you_mean() -> None:
    with pytest.raises(UnknownNameError) as raised:
        find_task(TASKS, "git-lgo")
    assert str(raised.value) == "unknown task 'git-lgo'; did you mean 'git-log'?"
