"""Hostile answers and schemas through the real `start mcp` process and the SDK's client (issue
37): each failure is an isError result, never an internal error, and no referenced file leaks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli.test_output_hostile import CREDENTIALS, SECRETS, WITHIN, nested
from tests.conftest import REPO, write_tree
from tests.fake_headless import agent

READ_ONLY = 'read-only = "--ro"'


def ask(env: dict[str, str], workdir: Path, *calls: dict[str, Any]) -> list[Any]:
    """Each ask_agent call's result, from one `start mcp` process."""
    from mcp import Client, StdioServerParameters

    async def session() -> list[Any]:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "start", "mcp", "-d", str(workdir)], env=env
        )
        async with Client(parameters, mode="legacy") as client:
            return [await client.call_tool("ask_agent", call) for call in calls]

    return anyio.run(session)


@pytest.fixture
def env(isolated: Path, tmp_path: Path) -> dict[str, str]:
    secret = tmp_path / "gcloud" / "application_default_credentials.json"
    write_tree(secret.parent, {secret.name: json.dumps(CREDENTIALS)})
    config = tmp_path / "global"
    write_tree(
        config,
        {
            "config.toml": (
                f"{agent('fake', levels=READ_ONLY)}\n"
                f"{agent('deep', levels=READ_ONLY, prefix='FAKE_NAME=deep ')}\n"
                '[tasks.data]\ndescription = "Data"\nprompt = "Data."\noutput = "json"\n\n'
                '[tasks.leak]\ndescription = "Leak"\nprompt = "x"\n'
                f'output = {{ schema = {{ "$ref" = "{secret.as_uri()}" }} }}\n\n'
                '[tasks.word]\ndescription = "A word"\nprompt = "A word."\n'
                'output = { schema = { type = "string", pattern = "^(a+)+$" } }\n'
            )
        },
    )
    return {
        **os.environ,
        "START_CONFIG_DIR": str(config),
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "FAKE_MODE": "say",
    }


def test_a_nested_answer_is_an_is_error_result(env: dict[str, str], isolated: Path) -> None:
    answer = nested(2000)
    result, fits = ask(
        {**env, "FAKE_ANSWER": answer, "FAKE_ANSWER_deep": nested(100)},
        isolated,
        {"agent": "fake", "task": "data"},
        {"agent": "deep", "task": "data"},  # as deep as an answer may be: it goes through
    )
    assert (fits.is_error, fits.structured_content["value"]) == (False, json.loads(nested(100)))
    data = result.structured_content
    assert result.is_error is True
    assert (data["success"], data["answer"], data["problems"]) == (
        False,
        answer,
        [
            "the answer is nested deeper than 100 levels of arrays and objects; start reads at "
            "most 100"
        ],
    )
    assert result.content[0].text.startswith(
        "agent 'fake' failed: its answer is not the JSON the task's output asks for:\n"
        "  the answer is nested deeper than 100 levels"
    )


def test_a_ref_outside_and_a_check_past_the_timeout_are_is_error_results(
    env: dict[str, str], isolated: Path
) -> None:
    word = json.dumps("a" * 40 + "!")
    config = Path(env["START_CONFIG_DIR"]) / "config.toml"
    config.write_text("[settings]\nprint_timeout = 2\n\n" + config.read_text())
    leak, slow = ask(
        {**env, "FAKE_ANSWER": word},
        isolated,
        {"agent": "fake", "task": "leak"},
        {"agent": "fake", "task": "word"},
    )
    assert leak.is_error is True
    text = leak.content[0].text
    assert "tasks.leak.output.schema.$ref: '" in text and WITHIN in text
    assert not [part for part in SECRETS if part in json.dumps(leak.model_dump(mode="json"))]
    assert slow.is_error is True
    assert (slow.structured_content["timed_out"], slow.structured_content["answer"]) == (True, word)
