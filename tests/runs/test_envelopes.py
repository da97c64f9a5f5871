"""The envelope readers (start.runs.envelopes) over what the installed CLIs printed, case by case
(tests/fixtures/envelopes, recorded by `python scripts/agents.py --record-envelopes`), and over
the shapes no recording has."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from start.config.schema import ENVELOPES
from start.runs.envelopes import Answer, EnvelopeError, read
from tests.conftest import REPO, run_start, write_tree

RECORDED = REPO / "tests" / "fixtures" / "envelopes"
KEY = "tests.model_server: invalid API key (this server answers every request with status 401)"
CLAUDE_LOGIN = "Not logged in · Please run /login"
FACTORY_LOGIN = (
    "Authentication failed. Please log in using /login or set a valid FACTORY_API_KEY "
    "environment variable."
)


class Recording(NamedTuple):
    facts: dict[str, Any]
    stdout: str
    stderr: str

    def answer(self, tmp_path: Path) -> Answer:
        """What the reader of its print_output makes of it (the answer file as the CLI left it)."""
        answer_file = None
        if self.facts["answer_file"] is not None:
            answer_file = tmp_path / "answer.md"
            answer_file.write_text(self.facts["answer_file"])
        envelope = self.facts["print_output"]
        return read(
            envelope, self.stdout, str(answer_file) if answer_file else None, stderr=self.stderr
        )


def recording(name: str) -> Recording:
    path = RECORDED / name
    facts = json.loads(path.with_suffix(".json").read_text())
    return Recording(
        facts, path.with_suffix(".stdout").read_text(), path.with_suffix(".stderr").read_text()
    )


def objects(stdout: str) -> list[dict[str, Any]]:
    """The CLI's JSON: one object, an array, or one object a line."""
    text = stdout.strip()
    try:
        value = json.loads(text)
    except ValueError:
        value = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return value if isinstance(value, list) else [value]


def last(stdout: str, kind: str, key: str = "type") -> dict[str, Any]:
    return [o for o in objects(stdout) if o.get(key) == kind][-1]


def picked(value: Mapping[str, Any], *keys: str) -> dict[str, Any] | None:
    return {k: value[k] for k in keys if value.get(k) is not None} or None


def aider_tokens(stdout: str) -> dict[str, Any]:
    return {"summary": next(line for line in stdout.splitlines() if line.startswith("Tokens:"))}


# Where each envelope's usage is, in what the CLI printed (none for a run that never got one).
USAGE: dict[str, Callable[[str], Mapping[str, Any] | None]] = {
    "result": lambda out: picked(last(out, "result"), "usage", "total_cost_usd", "num_turns"),
    "gemini": lambda out: picked(objects(out)[-1], "stats"),
    "codex": lambda out: picked(last(out, "turn.completed"), "usage"),
    "opencode": lambda out: picked(last(out, "step_finish")["part"], "tokens", "cost"),
    "cline": lambda out: picked(last(out, "run_result"), "usage"),
    "droid": lambda out: picked(last(out, "completion"), "usage", "numTurns"),
    "aider": aider_tokens,
    "llm": lambda out: picked(objects(out)[-1], "input_tokens", "output_tokens", "token_details"),
    "copilot": lambda out: picked(last(out, "result"), "usage"),
}


# Where each envelope's session id is, in what the CLI printed (none where it prints none).
SESSION: dict[str, Callable[[str], str | None]] = {
    "result": lambda out: (
        [o["session_id"] for o in objects(out) if o.get("session_id")] or [None]
    )[-1],
    "gemini": lambda out: (
        [o["session_id"] for o in objects(out) if o.get("session_id")] or [None]
    )[-1],
    "codex": lambda out: (
        last(out, "thread.started")["thread_id"] if "thread.started" in out else None
    ),
    "opencode": lambda out: (
        [o["sessionID"] for o in objects(out) if o.get("sessionID")] or [None]
    )[-1],
    "droid": lambda out: ([o["session_id"] for o in objects(out) if o.get("session_id")] or [None])[
        -1
    ],
    "llm": lambda out: objects(out)[-1]["conversation_id"],
    "copilot": lambda out: last(out, "result")["sessionId"] if '"result"' in out else None,
}


class Expected(NamedTuple):
    text: str = ""
    error: str | None = None
    usage: bool = False  # whether the output carries usage (where: USAGE)
    denied: tuple[str, ...] = ()


ANSWER = Expected("ANSWER-{cli}", usage=True)
JSON_ANSWER = Expected('{"response": "ANSWER-{cli}", "items": [1, 2]}', usage=True)
NO_TEXT = Expected(usage=True)  # an empty answer, which start then calls a failure
NOTHING = Expected()  # nothing on stdout: start quotes stderr and the exit status

# Every recorded case of every CLI: the exact answer its reader gives.
EXPECTED: dict[str, Expected] = {
    "claude/text": ANSWER,
    "claude/json": JSON_ANSWER,
    "claude/empty": NO_TEXT,
    "claude/auth": Expected("", f"Failed to authenticate. API Error: 401 {KEY}", usage=True),
    # The model did not call Claude Code's structured output tool: no structured_output, and the
    # text answer is left to start's check of the task's output.
    "claude/schema": ANSWER,
    "claude/unset": Expected("", CLAUDE_LOGIN, usage=True),
    # The model asked to read a file outside the working directory; read-only denied it.
    "claude/denied": Expected("ANSWER-claude", usage=True, denied=("Read /etc/hostname",)),
    "gemini/text": ANSWER,
    "gemini/json": JSON_ANSWER,
    "gemini/empty": Expected(
        "",
        "The model returned an empty response with no text or thoughts. This may be a transient "
        "API issue; please try again.",
        usage=True,
    ),
    # Gemini CLI exits 145 with nothing on stdout; its error object is on stderr, quoting the
    # API's error body.
    "gemini/auth": Expected("", f"401 UNAUTHENTICATED: {KEY}"),
    "gemini/unset": Expected(
        "",
        "Please set an Auth method in your ~/.gemini/settings.json or specify one of the "
        "following environment variables before running: GEMINI_API_KEY, "
        "GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA",
    ),
    "codex/text": ANSWER,
    "codex/json": JSON_ANSWER,
    "codex/empty": NO_TEXT,
    "codex/auth": Expected(
        "",
        f"unexpected status 401 Unauthorized: {KEY}, url: http://127.0.0.1:PORT/v1/responses",
    ),
    "codex/schema": Expected('{"answer": "ANSWER-codex"}', usage=True),
    # Without network codex retries until start's time limit (the recording's 120 s).
    "codex/unset": Expected(
        "", "Reconnecting... waiting for network (Connection failed: error sending request)"
    ),
    "opencode/text": ANSWER,
    "opencode/json": JSON_ANSWER,
    "opencode/empty": NO_TEXT,
    "opencode/auth": Expected("", KEY),
    "opencode/unset": Expected(
        "", "Cannot connect to API: Unable to connect. Is the computer able to access the url?"
    ),
    "qwen/text": ANSWER,
    "qwen/json": JSON_ANSWER,
    # Qwen Code's own words are in the result's error.message; its subtype is only
    # error_during_execution.
    "qwen/empty": Expected(
        "", "[API Error: Model stream ended with empty response text.]", usage=True
    ),
    "qwen/auth": Expected("", f"[API Error: 401 {KEY}]", usage=True),
    "qwen/schema": Expected(
        "",
        "Model produced plain text instead of calling the structured_output tool as required by "
        '--json-schema after 1 turn(s). Output preview (11 chars): "ANSWER-qwen".',
        usage=True,
    ),
    "qwen/unset": Expected(
        "",
        "No auth type is selected. Please configure an auth type (e.g. via settings or "
        "`--auth-type`) before running in non-interactive mode.",
        usage=True,
    ),
    # copilot --output-format json: the answer in assistant.message events, a failure in
    # session.error events (exit 1); not set up at all, it says so on stderr only.
    "copilot/text": ANSWER,
    "copilot/json": JSON_ANSWER,
    "copilot/empty": Expected(
        "", "No response was returned. Send your message again to retry.", usage=True
    ),
    "copilot/auth": Expected(
        "",
        "Authentication failed with provider at http://127.0.0.1:PORT/v1 (HTTP 401).\n  Check "
        "your COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_API_KEY_COMMAND, or "
        "COPILOT_PROVIDER_BEARER_TOKEN.",
        usage=True,
    ),
    "copilot/unset": NOTHING,
    "aider/text": ANSWER,
    "aider/json": JSON_ANSWER,
    # Aider exits 0 on both; what it printed instead of an answer is the error.
    "aider/empty": Expected(
        "", "Empty response received from LLM. Check your provider account?", usage=True
    ),
    "aider/auth": Expected("", f"litellm.BadRequestError: OpenAIException - {KEY}"),
    # With no key, aider offers an OpenRouter login and waits for a browser until start's time
    # limit; the text is never an answer, as the run timed out.
    "aider/unset": Expected(
        "Error checking pypi for new version: HTTPSConnectionPool(host='pypi.org', \n"
        "port=443): Max retries exceeded with url: /pypi/aider-chat/json (Caused by \n"
        "SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] \n"
        "certificate verify failed: self-signed certificate in certificate chain \n"
        "(_ssl.c:1006)')))\n"
        "No LLM model was specified and no API keys were provided.\n"
        "OpenRouter provides free and paid access to many LLMs.\n"
        "Login to OpenRouter or create a free account? (Y)es/(N)o [Yes]: \n"
        "Please open this URL in your browser to connect Aider with OpenRouter:\n\n"
        "{url}\n\n"
        "Waiting up to 5 minutes for you to finish in the browser...\n"
        "Use Control-C to interrupt."
    ),
    # llm prompt --json: the log's record of the response; its failures on stderr only (exit 1).
    "llm/text": ANSWER,
    "llm/json": JSON_ANSWER,
    "llm/empty": NO_TEXT,
    "llm/auth": NOTHING,
    "llm/schema": NOTHING,
    "llm/unset": NOTHING,
    "auggie/text": ANSWER,
    "auggie/json": JSON_ANSWER,
    # Auggie prints nothing at all for an empty answer, and its failures only on stderr.
    "auggie/empty": NOTHING,
    "auggie/auth": NOTHING,
    "auggie/unset": NOTHING,
    "droid/text": ANSWER,
    "droid/json": JSON_ANSWER,
    "droid/empty": NO_TEXT,
    # stream-json carries the cause, before droid's own "Exec failed".
    "droid/auth": Expected("", f"401 {KEY}"),
    "droid/unset": Expected("", f"Error: {FACTORY_LOGIN}"),
    # droid's -o json, which the catalog no longer uses: the cause is lost.
    "droid.result/text": ANSWER,
    "droid.result/json": JSON_ANSWER,
    "droid.result/empty": NO_TEXT,
    "droid.result/auth": Expected("", "Exec failed", usage=True),
    "droid.result/unset": Expected("", FACTORY_LOGIN, usage=True),
    # cn -p: the answer only; failures as JSON on stderr, exit 1.
    "cn/text": Expected("ANSWER-cn"),
    "cn/json": Expected('{"response": "ANSWER-cn", "items": [1, 2]}'),
    "cn/empty": NOTHING,
    "cn/auth": NOTHING,
    "cn/unset": NOTHING,
    # cn -p --format json: the text answer wrapped, the JSON answer as it is (not its
    # "response" field).
    "cn.continue/text": Expected("ANSWER-cn"),
    "cn.continue/json": Expected('{"response": "ANSWER-cn", "items": [1, 2]}'),
    "cn.continue/empty": NOTHING,
    "cn.continue/auth": NOTHING,
    "cn.continue/unset": NOTHING,
    "cline/text": ANSWER,
    "cline/json": JSON_ANSWER,
    "cline/empty": Expected("", "finished as error: Model returned empty response", usage=True),
    "cline/auth": Expected("", f"finished as error: {KEY}", usage=True),
    "cline/unset": Expected(
        "",
        "finished as error: Cannot connect to API: Was there a typo in the url or port?: Was "
        "there a typo in the url or port? (FailedToOpenSocket)",
        usage=True,
    ),
}


def test_every_recording_has_an_expectation() -> None:
    recorded = {f"{p.parent.name}/{p.stem}" for p in RECORDED.glob("*/*.json")}
    assert recorded == set(EXPECTED)


def test_every_cli_of_the_catalog_and_every_case_is_recorded() -> None:
    import tomllib

    catalog = tomllib.loads((REPO / "config" / "agents.toml").read_text())
    headless = {a for a, e in catalog["agents"].items() if "print_command" in e} - {"llm-chat"}
    clis = {name.partition("/")[0] for name in EXPECTED}
    assert {name for name in clis if "." not in name} == headless
    for cli in clis:
        cases = {name.partition("/")[2] for name in EXPECTED if name.startswith(f"{cli}/")}
        assert {"text", "json", "empty", "auth", "unset"} <= cases, cli


def test_the_recordings_name_no_path_of_the_machine_they_were_made_on() -> None:
    for path in RECORDED.glob("*/*"):
        text = path.read_text()
        assert "/tmp/start-agents" not in text and str(Path.home()) + "/" not in text, path


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_reader_of_each_recording(name: str, tmp_path: Path) -> None:
    found = recording(name)
    cli = found.facts["cli"]
    expected = EXPECTED[name]
    text = expected.text.replace("{cli}", cli)
    if "{url}" in text:  # a login link with a fresh challenge each time
        text = text.replace("{url}", next(ln for ln in found.stdout.splitlines() if "://" in ln))
    usage = USAGE[found.facts["print_output"]](found.stdout) if expected.usage else None
    where = SESSION.get(found.facts["print_output"])
    session = where(found.stdout) if where is not None and found.stdout.strip() else None
    assert found.answer(tmp_path) == Answer(text, expected.error, usage, expected.denied, session)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_only_an_answer_is_a_success(name: str, tmp_path: Path) -> None:
    """start's rule (start.runs.headless): exit 0, no error reported, and an answer that is not
    empty. Of the recordings, only the text and JSON answers pass it, codex's schema case, where
    the model was asked for JSON, and claude's answer after a denial (shown beside it); claude's
    schema answer passes here and fails start's check of the task's output."""
    found = recording(name)
    answer = found.answer(tmp_path)
    ok = found.facts["exit_code"] == 0 and answer.error is None and bool(answer.text.strip())
    case = name.partition("/")[2]
    expected = ("codex/schema", "claude/schema", "claude/denied")
    assert ok == (case in ("text", "json") or name in expected)


def test_the_model_server_was_asked_in_each_pointed_case() -> None:
    """The recordings come from runs that reached the server (or, unset, that did not)."""
    for path in RECORDED.glob("*/*.json"):
        facts = json.loads(path.read_text())
        if facts["case"] == "unset" or (facts["cli"] == "llm" and facts["case"] == "schema"):
            assert facts["requests"] == [], path
        else:
            assert facts["requests"], path


# --- shapes no recording has ------------------------------------------------------------------


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


def test_a_result_with_an_error_subtype_and_no_message() -> None:
    stdout = json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": False})
    assert read("result", stdout).error == "error_max_turns"


def test_permission_denials_one_line_each() -> None:
    denials = [
        {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}},
        {"tool_name": "Write", "tool_input": {"file_path": "a.py", "content": "x"}},
        {"tool_name": "WebFetch", "tool_input": {"url": "https://example.com"}},
        {"tool_name": "Task"},
    ]
    stdout = json.dumps({**RESULT, "permission_denials": denials})
    assert read("result", stdout).denied == (
        "Bash rm -rf build",
        "Write a.py",
        'WebFetch {"url": "https://example.com"}',
        "Task",
    )


def test_a_value_held_to_a_schema_is_the_answer() -> None:
    """Claude Code --json-schema gives structured_output; Qwen Code --json-schema gives
    structured_result beside its result text."""
    claude = {"type": "result", "is_error": False, "result": "Done.", "structured_output": {"a": 1}}
    qwen = {"type": "result", "is_error": False, "result": '{"a":1}', "structured_result": {"a": 1}}
    assert read("result", json.dumps(claude)).text == '{"a": 1}'
    assert read("result", json.dumps([{"type": "system"}, qwen])).text == '{"a": 1}'


@pytest.mark.parametrize(
    "envelope", ["result", "gemini", "opencode", "cline", "droid", "codex", "llm", "copilot"]
)
@pytest.mark.parametrize("stdout", ["Loading...\n", "[1, 2]"])
def test_output_that_is_not_the_envelope_is_an_envelope_error(envelope: str, stdout: str) -> None:
    with pytest.raises(EnvelopeError):
        read(envelope, stdout)


@pytest.mark.parametrize("envelope", ENVELOPES)
def test_nothing_printed_is_an_empty_answer(envelope: str) -> None:
    """start then says that the agent printed no answer, and quotes its stderr."""
    assert read(envelope, "\n") == Answer("", None)


def test_continue_reads_only_cns_exact_wrapper_as_a_wrapper() -> None:
    note = "Response was not valid JSON, so it was wrapped in a JSON object"
    wrapped = {"response": "x", "status": "success", "note": note}
    assert read("continue", json.dumps(wrapped)) == Answer("x", None)
    for answer in (
        {"response": "x", "status": "success"},
        {"response": "x", "status": "success", "note": "mine"},
        {"response": "x", "status": "failed", "note": note},
    ):
        assert read("continue", json.dumps(answer) + "\n") == Answer(json.dumps(answer), None)
    assert read("continue", "42\n") == Answer("42", None)  # a text answer that is JSON
    with pytest.raises(EnvelopeError, match="no JSON answer, nor cn's wrapper"):
        read("continue", "not JSON\n")


def test_codex_takes_the_answer_file_first(tmp_path: Path) -> None:
    events = [
        {"type": "item.completed", "item": {"type": "agent_message", "text": "first"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "last"}},
    ]
    stdout = "\n".join(json.dumps(e) for e in events)
    assert read("codex", stdout) == Answer("last", None)
    answer = tmp_path / "answer"
    answer.write_text("from the file\n")
    assert read("codex", stdout, str(answer)).text == "from the file"


def test_llm_s_answer_is_the_last_response_of_a_chain() -> None:
    """With tools (-T), llm logs a chain of responses, the tool calls first; the last answers."""
    records = [
        {"response": "", "conversation_id": "c-1", "tool_calls": [{"name": "t"}]},
        {"response": "the answer", "conversation_id": "c-1", "input_tokens": 9},
    ]
    assert read("llm", json.dumps(records)) == Answer(
        "the answer", None, {"input_tokens": 9}, session_id="c-1"
    )


def test_copilot_s_answer_is_its_last_message() -> None:
    """Copilot says what it does before a tool call in a message of its own; the last one
    answers."""
    events = [
        {"type": "assistant.message", "data": {"content": "I'll look.", "toolRequests": [{}]}},
        {"type": "tool.execution_complete", "data": {}},
        {"type": "assistant.message", "data": {"content": "the answer", "toolRequests": []}},
        {"type": "result", "sessionId": "s-1", "exitCode": 0, "usage": {"premiumRequests": 1}},
    ]
    stdout = "\n".join(json.dumps(e) for e in events)
    assert read("copilot", stdout) == Answer(
        "the answer", None, {"usage": {"premiumRequests": 1}}, session_id="s-1"
    )


def test_aider_notices_of_a_repository_it_created_are_not_the_answer() -> None:
    """What aider 0.86.2 printed with --yes-always in a folder that was not a git repository:
    the notices of the repository it created come before its banner, and what it did with the
    answer after its token count."""
    stdout = (
        "Added .aider* to .gitignore\n"
        "Git repository created in /tmp/work\n"
        'Update git name with: git config user.name "Your Name"\n'
        'Update git email with: git config user.email "you@example.com"\n'
        "Aider v0.86.2\n"
        "Main model: openai/gpt-4o with diff edit format\n"
        "Git repo: .git with 0 files\n"
        "Added role.md to the chat (read-only).\n\n"
        "ANSWER-aider\n"
        "Tokens: 2.4k sent, 6 received. Cost: $0.0062 message, $0.0062 session.\n"
        "Applied edit to hello.py\n"
        "Commit 1a2b3c4 feat: Add hello\n"
    )
    summary = "Tokens: 2.4k sent, 6 received. Cost: $0.0062 message, $0.0062 session."
    assert read("aider", stdout) == Answer(
        "ANSWER-aider\nApplied edit to hello.py\nCommit 1a2b3c4 feat: Add hello",
        None,
        {"summary": summary},
    )


def test_an_unknown_envelope() -> None:
    with pytest.raises(EnvelopeError, match="unknown print_output 'yaml'"):
        read("yaml", "")


# --- through start: a recording replayed by a stand-in agent ----------------------------------


def replay(isolated: Path, name: str, *args: str) -> Any:
    """`start --print` with an agent that prints the recording `name` (stdout, stderr, exit
    status) and reads it by the recording's print_output."""
    found = recording(name)
    path = RECORDED / name
    script = 'cat "$1"; cat "$2" >&2; exit "$3"'
    config = (
        "[agents.replay]\n"
        'bin = "/bin/sh"\n'
        'command = "{bin} {prompt}"\n'
        f"print_command = '''{{bin}} -c '{script}' replay '{path}.stdout' '{path}.stderr' "
        f"{found.facts['exit_code']} {{args}} {{prompt}}'''\n"
        f'print_output = "{found.facts["print_output"]}"\n'
        'print_permissions = { read-only = "" }\n\n'
        '[tasks.json]\nprompt = "Answer in JSON: {instructions}"\noutput = "json"\n'
    )
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": config})
    return run_start("-q", *args, "--print", "-a", "replay", "say hi", cwd=isolated)


def test_gemini_s_refused_key_is_quoted_from_its_stderr(isolated: Path) -> None:
    """Gemini CLI exits 145 with its error object on stderr only."""
    result = replay(isolated, "gemini/auth", "prompt")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(
        f"start: agent 'replay' failed: exited with status 145: 401 UNAUTHENTICATED: {KEY}\n"
    )


def test_a_json_answer_from_cn_s_json_form_passes_a_json_task(isolated: Path) -> None:
    """cn --format json prints a JSON answer as it is: the whole object is the answer."""
    result = replay(isolated, "cn.continue/json", "task", "json", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["success"], data["value"]) == (True, {"response": "ANSWER-cn", "items": [1, 2]})


def test_aider_s_empty_answer_is_a_failure(isolated: Path) -> None:
    result = replay(isolated, "aider/empty", "prompt")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(
        "start: agent 'replay' failed: Empty response received from LLM. Check your provider "
        "account?\n"
    )


def test_qwen_s_own_words_for_a_refused_key(isolated: Path) -> None:
    result = replay(isolated, "qwen/auth", "prompt")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(
        f"start: agent 'replay' failed: exited with status 1: [API Error: 401 {KEY}]\n"
    )


def test_droid_s_cause_of_a_refused_key(isolated: Path) -> None:
    result = replay(isolated, "droid/auth", "prompt")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(
        f"start: agent 'replay' failed: exited with status 1: 401 {KEY}\n"
    )


@pytest.mark.parametrize(
    "cli", ["claude", "codex", "gemini", "qwen", "opencode", "droid", "auggie", "llm", "copilot"]
)
def test_the_session_id_is_read_where_the_cli_prints_one(cli: str, tmp_path: Path) -> None:
    """What `start continue` resumes, and the run record keeps (start.runs.Run.session_id)."""
    session = recording(f"{cli}/text").answer(tmp_path).session_id
    assert session is not None and len(session) >= 8 and session.strip() == session
