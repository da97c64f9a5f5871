"""Reading a headless CLI's answer (start.envelopes.read): each envelope, its errors, and the rule
that exit 0 alone is not success (issue 25)."""

from __future__ import annotations

import json

import pytest

from start.envelopes import Answer, EnvelopeError, read


def test_text_is_stdout_without_its_last_newlines() -> None:
    assert read("text", "line one\nline two\n\n") == Answer("line one\nline two", None)


RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "result": "hi",
    "usage": {"output_tokens": 1},
}


@pytest.mark.parametrize(
    "stdout",
    [
        json.dumps(RESULT),
        json.dumps([{"type": "system"}, {"type": "assistant"}, RESULT]),  # qwen's array
        '{"type": "system"}\nnot json at all\n' + json.dumps(RESULT) + "\n",  # JSON lines
    ],
    ids=["object", "array", "lines"],
)
def test_a_result_object_alone_in_an_array_or_among_lines(stdout: str) -> None:
    assert read("result", stdout) == Answer("hi", None, {"usage": {"output_tokens": 1}})


def test_a_result_that_is_an_error_although_its_subtype_says_success() -> None:
    """Claude Code reports an auth failure as is_error with subtype success, and exits 0."""
    stdout = json.dumps({**RESULT, "is_error": True, "result": "Invalid API key"})
    assert read("result", stdout).error == "Invalid API key"


def test_a_result_with_an_error_subtype() -> None:
    stdout = json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": False})
    assert read("result", stdout).error == "error_max_turns"


@pytest.mark.parametrize("envelope", ["result", "gemini", "opencode", "continue", "cline"])
@pytest.mark.parametrize("stdout", ["", "Loading...\n", "[1, 2]"])
def test_output_that_is_not_the_envelope_is_an_envelope_error(envelope: str, stdout: str) -> None:
    with pytest.raises(EnvelopeError):
        read(envelope, stdout)


def test_gemini_response_and_error() -> None:
    ok = json.dumps({"session_id": "s", "response": "hi", "stats": {"models": {}}})
    assert read("gemini", ok) == Answer("hi", None, {"stats": {"models": {}}})
    failed = json.dumps({"error": {"message": "Invalid auth method selected.", "code": 41}})
    assert read("gemini", failed).error == "Invalid auth method selected."


def test_codex_takes_the_answer_file_first_then_the_last_agent_message(tmp_path: object) -> None:
    from pathlib import Path

    events = [
        {"type": "thread.started"},
        {"type": "item.completed", "item": {"type": "reasoning", "text": "thinking"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "first"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "last"}},
        {"type": "turn.completed", "usage": {"output_tokens": 5}},
    ]
    stdout = "\n".join(json.dumps(e) for e in events)
    assert read("codex", stdout) == Answer("last", None, {"usage": {"output_tokens": 5}})
    answer = Path(str(tmp_path)) / "answer"
    answer.write_text("from the file\n")
    assert read("codex", stdout, str(answer)).text == "from the file"


def test_codex_errors() -> None:
    stdout = "\n".join(
        json.dumps(e)
        for e in [
            {"type": "error", "message": "stream disconnected"},
            {"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}},
        ]
    )
    assert read("codex", stdout).error == "unexpected status 401 Unauthorized"


def test_opencode_joins_text_parts_and_reports_errors() -> None:
    events = [
        {"type": "step_start", "part": {}},
        {"type": "text", "part": {"type": "text", "text": "AN"}},
        {"type": "text", "part": {"type": "text", "text": "SWER"}},
        {"type": "step_finish", "part": {"tokens": {"output": 6}, "cost": 0}},
    ]
    stdout = "\n".join(json.dumps(e) for e in events)
    assert read("opencode", stdout) == Answer("ANSWER", None, {"tokens": {"output": 6}, "cost": 0})
    error = {"type": "error", "error": {"name": "APIError", "data": {"message": "quota exceeded"}}}
    assert read("opencode", json.dumps(error)).error == "quota exceeded"


def test_continue_response_and_status() -> None:
    assert read("continue", json.dumps({"response": "hi", "status": "success"})).text == "hi"
    failed = json.dumps({"response": "no model configured", "status": "error"})
    assert read("continue", failed).error == "no model configured"


def test_cline_run_result() -> None:
    done = {"type": "run_result", "finishReason": "completed", "text": "hi", "usage": {"x": 1}}
    assert read("cline", json.dumps(done)) == Answer("hi", None, {"usage": {"x": 1}})
    aborted = {**done, "finishReason": "aborted", "text": "rate limited"}
    assert read("cline", json.dumps(aborted)).error == "finished as aborted: rate limited"


AIDER = """\
Analytics have been permanently disabled.
Detected dumb terminal, disabling fancy input and pretty output.

Aider v0.86.2
Main model: openai/gpt-4o with diff edit format
Weak model: gpt-4o-mini
Git repo: none
Repo-map: disabled

ANSWER-aider

Tokens: 2.7k sent, 5 received. Cost: $0.0067 message, $0.0067 session.
"""


def test_aider_answer_between_its_banner_and_its_token_count() -> None:
    summary = "Tokens: 2.7k sent, 5 received. Cost: $0.0067 message, $0.0067 session."
    assert read("aider", AIDER) == Answer("ANSWER-aider", None, {"summary": summary})


# What aider 0.86.2 printed with --yes-always in a folder that was not a git repository: the
# notices of the repository it created come before its banner.
AIDER_NEW_REPO = """\
Added .aider* to .gitignore
Git repository created in /tmp/work
Update git name with: git config user.name "Your Name"
Update git email with: git config user.email "you@example.com"
Aider v0.86.2
Main model: openai/gpt-4o with diff edit format
Weak model: gpt-4o-mini
Git repo: .git with 0 files
Repo-map: using 4096 tokens, auto refresh
Added role.md to the chat (read-only).

ANSWER-aider
Tokens: 2.4k sent, 6 received. Cost: $0.0062 message, $0.0062 session.
"""


def test_aider_notices_of_a_repository_it_created_are_not_the_answer() -> None:
    summary = "Tokens: 2.4k sent, 6 received. Cost: $0.0062 message, $0.0062 session."
    assert read("aider", AIDER_NEW_REPO) == Answer("ANSWER-aider", None, {"summary": summary})


def test_aider_token_count_before_the_edits_it_reports() -> None:
    stdout = AIDER.replace(
        "session.\n", "session.\nApplied edit to hello.py\nCommit 1a2b3c4 feat: Add hello\n"
    )
    summary = "Tokens: 2.7k sent, 5 received. Cost: $0.0067 message, $0.0067 session."
    assert read("aider", stdout) == Answer(
        "ANSWER-aider\n\nApplied edit to hello.py\nCommit 1a2b3c4 feat: Add hello",
        None,
        {"summary": summary},
    )


def test_aider_exits_0_on_an_auth_error_and_that_is_a_failure() -> None:
    stdout = AIDER.replace("ANSWER-aider", "litellm.AuthenticationError: invalid x-api-key")
    assert read("aider", stdout).error == "litellm.AuthenticationError: invalid x-api-key"


def test_an_unknown_envelope() -> None:
    with pytest.raises(EnvelopeError, match="unknown print_output 'yaml'"):
        read("yaml", "")


def test_a_value_held_to_a_schema_is_the_answer() -> None:
    """Claude Code --json-schema gives structured_output; Qwen Code --json-schema gives
    structured_result beside its result text."""
    claude = {"type": "result", "is_error": False, "result": "Done.", "structured_output": {"a": 1}}
    qwen = {"type": "result", "is_error": False, "result": '{"a":1}', "structured_result": {"a": 1}}
    assert read("result", json.dumps(claude)).text == '{"a": 1}'
    assert read("result", json.dumps([{"type": "system"}, qwen])).text == '{"a": 1}'
