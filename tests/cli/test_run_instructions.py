"""The user's text: the safe forms (--instructions=TEXT, -i FILE, -i -) arrive exactly and never
change start's own options; every form follows the one text rule for bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FAKE, FAKE_AGENT, REPO, invoke, launch, write_tree

TASKS = '[tasks.echo]\nprompt = "{instructions}"\n'
OPTION_WORDS = [
    "--agent=llm", "-a", "llm", "-d/tmp", "-d", "/tmp", "--directory=/tmp", "--dry-run",
    "--json", "-q", "-v", "-vv", "--debug", "--no-role", "-r", "nobody", "--role=nobody",
    "-m", "opus", "--model=o", "--no-project", "--", "-", "-i", "--instructions",
    "--instructions=x", "--help", "-h", "--version", "-V", "task", "prompt", "-x",
]  # fmt: skip


# The agent's command puts '--' before the prompt, as every shipped agent's does: text that starts
# with '-' is then the agent's text, never its option (test_a_template_without_the_double_dash...).
FAKE_DASHED = FAKE.replace(" '{prompt}'\"", " -- '{prompt}'\"")


@pytest.fixture
def repo(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": FAKE_DASHED})
    write_tree(isolated, {".start/tasks.toml": TASKS})
    return isolated


def dry(*args: str, stdin: str | None = None) -> dict[str, Any]:
    result = invoke(*args, "--dry-run", "--json", stdin=stdin)
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def chosen(data: dict[str, Any]) -> dict[str, Any]:
    """What the options chose: everything but the text (the prompt is the last argument)."""
    # Each dry run keeps its files in a directory of its own.
    rest = {k: v for k, v in data.items() if k not in ("instructions", "prompt", "kept_dir")}
    rest["argv"] = data["argv"][:-1]
    return rest


# --- the safe forms -------------------------------------------------------------------------

hostile = st.one_of(
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
    st.lists(st.sampled_from(OPTION_WORDS), min_size=1, max_size=6).map(" ".join),
    st.tuples(st.sampled_from(OPTION_WORDS), st.text()).map(lambda p: p[0] + p[1]),
).filter(lambda text: text.strip() != "" and "\x00" not in text)


# 150 examples of two dry runs each (make check); the fixed forms below run always.
@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=hostile)
def test_instructions_option_arrives_exactly_and_never_changes_options(
    repo: Path, text: str
) -> None:
    data = dry("task", "echo", f"--instructions={text}")
    assert data["prompt"] == data["instructions"] == data["argv"][-1] == text
    assert chosen(data) == chosen(dry("task", "echo", "plain"))
    # The same text read from stdin, and as prompt TEXT.
    assert dry("task", "echo", "-i", "-", stdin=text)["prompt"] == text
    assert dry("prompt", f"--instructions={text}")["prompt"] == text


@pytest.mark.parametrize(
    "text",
    ["--dry-run", "--agent=llm", "-d/tmp", "--", "- fix the list item", "-v means verbose?"],
)
def test_option_looking_text_never_changes_a_real_launch(repo: Path, text: str) -> None:
    """Through a real exec: the agent runs (no dry run), is the fake, in the repo, with the text."""
    proc, record = launch(repo, "task", "echo", "-q", f"--instructions={text}")
    assert proc.returncode == 0, proc.stderr
    assert record is not None
    assert record["argv"][-1] == text
    assert record["argv"][:2] == ["--model", "sonnet-x"]
    assert record["cwd"] == str(repo)
    proc, record = launch(repo, "prompt", "-q", "-i", "-", stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert record is not None and record["argv"][-1] == text


def test_a_template_without_the_double_dash_refuses_text_that_would_be_an_option(
    repo: Path,
) -> None:
    """The agent would read `--dry-run` as its own option: start says so, and runs nothing."""
    config = repo.parent / "home" / ".config" / "start" / "config.toml"
    config.write_text(FAKE)
    proc, record = launch(repo, "task", "echo", "-q", "--instructions=--dry-run")
    assert (proc.returncode, proc.stdout, record) == (2, "", None)
    assert proc.stderr == (
        "start: agent 'fake': the prompt starts with '-', and its command passes it as an "
        "argument of its own before '--', where its CLI would read it as an option; the agent "
        "was not started. Put '--' before {prompt} in its command, or join it to its option "
        f"('--option={{prompt}}'), in [agents.fake] in {config}\n"
    )
    proc, record = launch(repo, "task", "echo", "-q", "--instructions=x --dry-run")
    assert record is not None and record["argv"][-1] == "x --dry-run"


def test_leading_dash_text_in_the_help_and_prompt_examples(repo: Path) -> None:
    assert dry("task", "help", "--instructions=- fix the list item")["prompt"] == (
        "Help me with: - fix the list item"
    )
    assert dry("prompt", "--instructions=-v means verbose?")["prompt"] == "-v means verbose?"


def test_instructions_from_a_file_exactly(repo: Path) -> None:
    (repo / "notes.md").write_bytes(b"--agent=llm\r\n  line two\n")
    assert dry("task", "echo", "-i", "notes.md")["prompt"] == "--agent=llm\r\n  line two\n"
    assert dry("prompt", "--instructions-file=notes.md")["prompt"] == "--agent=llm\r\n  line two\n"


def test_agent_arguments_still_follow_the_double_dash(repo: Path) -> None:
    result = invoke(
        "task", "echo", "--dry-run", "--json", "--instructions=-- not agent args", "--", "--flag"
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["prompt"] == "-- not agent args"
    assert data["argv"][-3:] == ["--flag", "--", "-- not agent args"]


def test_words_that_start_with_a_dash_name_the_safe_form(repo: Path) -> None:
    result = invoke("task", "help", "- fix the list item", "--dry-run")
    assert result.exit_code == 2
    assert result.stderr == (
        "start: no such option '- '\n"
        "hint: to send text that starts with '-', use --instructions=TEXT or -i FILE\n"
        "hint: run 'start task --help' for usage\n"
    )
    typo = invoke("prompt", "x", "--dryrun")
    assert typo.stderr == (
        "start: no such option '--dryrun'; did you mean '--dry-run'?\n"
        "hint: run 'start prompt --help' for usage\n"
    )


def test_the_text_comes_one_way(repo: Path) -> None:
    result = invoke("task", "echo", "words", "--instructions=x", "--dry-run")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: give the text one way: as words, with --instructions=TEXT, or with -i FILE\n",
    )
    result = invoke("task", "--instructions=x")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: instructions need a task: start task NAME --instructions=TEXT\n",
    )
    for args in (("prompt", "--dry-run"), ("prompt",)):
        result = invoke(*args)
        assert (result.exit_code, result.stderr) == (
            2,
            "start: missing argument TEXT (or --instructions=TEXT, or -i FILE)\n",
        )
    result = invoke("task", "echo", "-i", "missing.md", "--dry-run")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: cannot read the text from missing.md: no such file\n",
    )


def test_blank_instructions_are_none(repo: Path) -> None:
    assert dry("task", "echo", "--instructions=")["prompt"] == "None"
    assert dry("task", "echo", "-i", "-", stdin=" \n")["prompt"] == "None"


def test_help_shows_the_safe_form_for_scripts(repo: Path) -> None:
    for command in ("task", "prompt"):
        text = invoke(command, "--help").stdout
        assert '  start task gdr --instructions="$TEXT"\n' in text
        assert "  printf '%s' \"$TEXT\" | start task gdr -i -\n" in text


# --- one text rule for bytes ----------------------------------------------------------------


def start_bytes(
    repo: Path, *args: str | bytes, stdin: bytes = b"", **extra: str
) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
    return subprocess.run(
        [sys.executable, "-m", "start", *args],
        cwd=repo,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=60,
    )


def test_non_utf8_argument_bytes_become_replacement_characters(repo: Path) -> None:
    write_tree(
        repo,
        {
            ".start/agents.toml": f'[agents.pf]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} {{prompt_file}}"\n'
        },
    )
    record = repo.parent / "record.json"
    for args in (
        ("task", "echo", b"caf\xe9", b"\xff\xfe ok"),
        ("task", "echo", b"--instructions=caf\xe9 \xff\xfe ok"),
        ("prompt", b"caf\xe9", b"\xff\xfe ok"),
    ):
        proc = start_bytes(repo, *args, "-q", "-a", "pf", FAKE_AGENT_RECORD=str(record))
        assert proc.returncode == 0, proc.stderr
        prompt_file = Path(json.loads(record.read_text())["argv"][0])
        assert prompt_file.read_bytes() == "caf\ufffd \ufffd\ufffd ok".encode()


def test_stdin_bytes_follow_the_text_rule(repo: Path) -> None:
    raw = b"a\x00b\xffc\r\n"
    for args in (("prompt", "-"), ("prompt", "-i", "-"), ("task", "echo", "-i", "-")):
        proc = start_bytes(repo, *args, "--dry-run", "--json", stdin=raw)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["prompt"] == "a\ufffdb\ufffdc\r\n"


def test_text_from_a_file_or_stdin_is_bounded(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from start.cli import text

    monkeypatch.setattr(text, "TEXT_LIMIT", 10)
    assert dry("prompt", "-", stdin="0123456789")["prompt"] == "0123456789"
    result = invoke("prompt", "-", "--dry-run", stdin="0123456789+")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: the text on stdin is larger than 10 bytes\n",
    )
    (repo / "big.md").write_text("0123456789+")
    result = invoke("task", "echo", "-i", "big.md", "--dry-run")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: big.md: the text is larger than 10 bytes\n",
    )
    (repo / "dir").mkdir()
    result = invoke("task", "echo", "-i", "dir", "--dry-run")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: cannot read the text from dir: is a directory, not a regular file\n",
    )
