"""Hostile output schemas and answers (issue 37): a `$ref` reads nothing and fetches nothing, a
deep or slow check is a documented failure and never exit 70, an answer has a size cap, and the
history keeps no run larger than its limit."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import run_start, wait_gone, write_tree
from tests.fake_headless import agent

CONFIG = f"""
[settings]
default_agent = "fake"

{agent("fake", levels='read-only = "--ro"')}

[tasks.data]
prompt = "Data."
output = "json"

[tasks.word]
prompt = "A word."
output = {{ schema = {{ type = "string", pattern = "^(a+)+$" }} }}

[tasks.distinct]
prompt = "Distinct items."
output = {{ schema = {{ type = "array", uniqueItems = true }} }}

[tasks.notes]
prompt = "Notes."
"""

# A credentials file as Google's tools write it: no byte of it may come out of start.
CREDENTIALS = {
    "type": "service_account",
    "project_id": "acme-prod",
    "private_key_id": "6f1c0d3e9b",
    "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAAS\n-----END PRIVATE KEY-----\n",
    "client_email": "deploy@acme-prod.iam.gserviceaccount.com",
}
SECRETS = ("MIIEvQIBADANBgkqhkiG9w0BAQEFAAS", "acme-prod", "6f1c0d3e9b", "service_account")
WITHIN = (
    "is not in the schema: a $ref resolves within the schema only (put what it names under "
    "$defs); no file is read and nothing is fetched"
)


@pytest.fixture
def project(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("START_TRUSTED_PATHS", str(isolated))
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": CONFIG})
    return isolated


def start(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_start("-q", *args, cwd=project, env={"FAKE_MODE": "say", **env})


def history(project: Path) -> str:
    """Every recorded run, as `start log show --json` prints each."""
    listed = run_start("log", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    shown = [
        run_start("log", "show", str(run["id"]), "--json", cwd=project).stdout
        for run in json.loads(listed.stdout)
    ]
    return "\n".join(shown)


def test_a_ref_to_a_file_outside_the_project_is_never_read(project: Path) -> None:
    secret = project.parent / "gcloud" / "application_default_credentials.json"
    write_tree(secret.parent, {secret.name: json.dumps(CREDENTIALS)})
    write_tree(
        project,
        {
            ".start/config.toml": (
                '[tasks.leak]\nprompt = "x"\noutput = { schema = "leak.schema.json" }\n'
            ),
            ".start/leak.schema.json": json.dumps({"$ref": secret.as_uri()}),
        },
    )
    schema = project / ".start" / "leak.schema.json"
    expected = (
        "start: the task's output schema is not a valid JSON Schema\n"
        f"  {schema}\n"
        f"    error: $.$ref: '{secret.as_uri()}' {WITHIN}\n"
        "Run 'start config validate' to see every problem.\n"
    )
    seen = []
    for args in (("task", "leak", "--print"), ("task", "leak", "--print", "--json")):
        result = start(project, *args, FAKE_ANSWER="{}")
        assert (result.returncode, result.stdout, result.stderr) == (3, "", expected)
        seen += [result.stdout, result.stderr]
    validate = run_start("config", "validate", cwd=project)
    assert validate.returncode == 3
    assert f"{schema}: error: $.$ref: '{secret.as_uri()}' {WITHIN}" in validate.stdout
    seen += [validate.stdout, validate.stderr, history(project)]
    for text in seen:
        assert not [part for part in SECRETS if part in text]


class Recorder(BaseHTTPRequestHandler):
    """Answers every GET with a schema, and notes the path it was asked for."""

    asked: list[str]

    def do_GET(self) -> None:
        self.asked.append(self.path)
        body = json.dumps({"enum": ["fetched"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that records what it is asked for: its URL and that list."""
    asked: list[str] = []
    handler = type("Handler", (Recorder,), {"asked": asked})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", asked
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_ref_over_http_is_never_fetched(project: Path, server: tuple[str, list[str]]) -> None:
    url, asked = server
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    output = f'output = {{ schema = {{ "$ref" = "{url}/s" }} }}'
    text = config.read_text() + f'\n[tasks.far]\nprompt = "x"\n{output}\n'
    config.write_text(text)
    line = text.split("\n").index(output) + 1
    result = start(project, "task", "far", "--print", FAKE_ANSWER='"fetched"')
    assert asked == []
    assert (result.returncode, result.stdout) == (3, "")
    assert result.stderr == (
        "start: the task's output schema is not a valid JSON Schema\n"
        f"  {config}\n"
        f"    {line}:1: error: tasks.far.output.schema.$ref: '{url}/s' {WITHIN}\n"
        "Run 'start config validate' to see every problem.\n"
    )
    assert run_start("config", "validate", cwd=project).returncode == 3
    assert asked == []


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_an_answer_nested_deep_is_out_of_format_printed_and_recorded(project: Path) -> None:
    answer = nested(2000)  # 4 KB
    result = start(project, "task", "data", "--print", FAKE_ANSWER=answer)
    assert (result.returncode, result.stdout) == (65, "")
    assert result.stderr == (
        "start: agent 'fake' answered, but its answer is not the JSON the task's output asks "
        "for:\n"
        "  the answer is nested deeper than 100 levels of arrays and objects; start reads at "
        "most 100\n"
        f"Answer:\n{answer}\n"
    )
    data = start(project, "task", "data", "--print", "--json", FAKE_ANSWER=answer)
    value = json.loads(data.stdout)
    assert (data.returncode, value["success"], value["answer"], value["problems"]) == (
        65,
        False,
        answer,
        [
            "the answer is nested deeper than 100 levels of arrays and objects; start reads at "
            "most 100"
        ],
    )
    runs = json.loads(run_start("log", "--json", cwd=project).stdout)
    assert [(run["task"], run["state"]) for run in runs] == [("data", "out of format")] * 2


def test_an_envelope_nested_deep_is_no_answer_and_no_crash(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    with config.open("a", encoding="utf-8") as file:
        file.write("\n" + agent("enveloped", output="result", levels='read-only = "--ro"'))
    said = json.dumps({"type": "result", "is_error": False, "result": "x"})[:-1]
    deep = said + ', "structured_output": ' + nested(2000) + "}"
    result = start(project, "task", "data", "--print", "-a", "enveloped", FAKE_ANSWER=deep)
    assert result.returncode == 1
    assert result.stderr.startswith(
        "start: agent 'enveloped' failed: its output has no JSON result object "
        "(print_output = 'result')"
    )


def test_a_deep_schema_in_an_untrusted_clone_is_a_validation_problem(isolated: Path) -> None:
    deep = "{" + '"items": {' * 199 + "}" * 200
    inline = "{" + "items = {" * 199 + "}" * 200  # the same, in TOML
    write_tree(
        isolated,
        {
            ".start/config.toml": (
                '[tasks.filed]\nprompt = "x"\noutput = { schema = "deep.json" }\n\n'
                '[tasks.inline]\nprompt = "x"\n\n[tasks.inline.output]\n'
                f"schema = {inline}\n"
            ),
            ".start/deep.json": deep,
        },
    )
    result = run_start("config", "validate", cwd=isolated)
    config = isolated / ".start" / "config.toml"
    too_deep = "nested deeper than 100 levels of arrays and objects; start reads at most 100"
    assert result.returncode == 3, result.stderr
    assert result.stdout.split("\n")[:2] == [
        f"{isolated / '.start' / 'deep.json'}: error: {too_deep}",
        f"{config}:9:1: error: tasks.inline.output.schema: {too_deep}",
    ]


def test_a_check_past_the_timeout_is_stopped_and_times_out(project: Path) -> None:
    answer = json.dumps("a" * 40 + "!")  # ^(a+)+$ backtracks through 2^40 ways
    result = start(project, "task", "word", "--print", "--timeout", "2", FAKE_ANSWER=answer)
    assert (result.returncode, result.stdout) == (124, "")
    assert result.stderr == (
        "start: agent 'fake' answered, but timed out after 2 s checking its answer against the "
        "task's output schema (tasks.word.output.schema); the check was stopped:\n"
        "  the check did not finish in the time the run had left (--timeout); a `pattern` that "
        "backtracks, or `uniqueItems` over many items, can take that long\n"
        f"Answer:\n{answer}\n"
    )
    many = project.parent / "many.json"
    many.write_text(json.dumps([{"n": n} for n in range(30_000)]))  # compared pair by pair
    data = start(
        project, "task", "distinct", "--print", "--json-fields", "all", "--timeout", "2",
        FAKE_ANSWER_FILE=str(many),
    )  # fmt: skip
    value = json.loads(data.stdout)
    assert (data.returncode, value["success"], value["timed_out"], value["exit_code"]) == (
        124,
        False,
        True,
        0,
    )
    runs = json.loads(run_start("log", "--json", cwd=project).stdout)
    assert [(run["task"], run["state"]) for run in runs] == [
        ("distinct", "timed out"),
        ("word", "timed out"),
    ]


def test_an_answer_over_the_limit_is_not_read_and_its_agent_is_stopped(project: Path) -> None:
    """An agent that goes on after printing more than the limit is stopped then, not at its
    exit or its timeout: killed before it finishes, with nothing of its group left."""
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    text = config.read_text().replace("[settings]\n", "[settings]\nprint_answer_limit = 1048576\n")
    config.write_text(text)
    pids = project.parent / "pids"
    result = start(
        project, "task", "notes", "--print", FAKE_MODE="huge", FAKE_MIB="2", FAKE_PIDS=str(pids)
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(
        "start: agent 'fake' failed: printed more than settings.print_answer_limit (1 MiB) "
        "allows, so it was stopped and its answer was not read; raise the limit to read such "
        "answers\nOutput:\n"
    )
    assert result.stderr.endswith("\nExit Code: none (it did not exit by itself)\n")
    assert gone(pids)
    data = start(
        project, "task", "notes", "--print", "--json", FAKE_MODE="huge", FAKE_MIB="2",
        FAKE_PIDS=str(pids),
    )  # fmt: skip
    value = json.loads(data.stdout)
    assert (data.returncode, value["success"], value["answer"], value["exit_code"]) == (
        1, False, "", None
    )  # fmt: skip
    assert value["state"] == "failed"
    assert value["error"] == (
        "printed more than settings.print_answer_limit (1 MiB) allows, so it was stopped and its "
        "answer was not read; raise the limit to read such answers"
    )
    assert gone(pids)
    runs = json.loads(run_start("log", "--json", cwd=project).stdout)
    assert [(run["state"], run["exit_code"]) for run in runs] == [("failed", None)] * 2
    fits = start(project, "task", "notes", "--print", FAKE_MODE="huge", FAKE_MIB="1")
    assert (fits.returncode, len(fits.stdout)) == (0, 1 << 20)


def gone(pids: Path) -> bool:
    """Whether the stand-in agent that wrote `pids` and its child were killed before the agent
    finished (it would have said so in `pids`.finished); then the file is removed for the next."""
    started = [int(pid) for pid in pids.read_text().split()]
    assert wait_gone(started) == []
    finished = Path(f"{pids}.finished").exists()
    pids.unlink()
    return not finished


def test_the_history_keeps_no_run_larger_than_its_limit(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    limit = 300_000
    text = config.read_text().replace("[settings]\n", f"[settings]\nhistory_size_limit = {limit}\n")
    config.write_text(text)
    for _ in range(3):
        result = start(project, "task", "notes", "--print", FAKE_MODE="huge", FAKE_MIB="1")
        assert (result.returncode, len(result.stdout)) == (0, 1 << 20)  # printed whole
    shown = run_start("log", "show", "--json", cwd=project)
    answer = json.loads(shown.stdout)["answer"]
    assert len(answer.encode()) < limit
    whole = ("x" * 1023 + "\n") * 1024
    head, _, rest = answer.partition("\n[... ")
    count, _, tail = rest.partition(
        " characters cut: the run was larger than settings.history_size_limit]\n"
    )
    # The start and the end are kept, the middle is cut.
    assert whole.startswith(head) and whole.rstrip("\n").endswith(tail) and head and tail
    assert int(count) == len(whole.rstrip("\n")) - len(head) - len(tail)
    database = run_start("log", "path", cwd=project).stdout.strip()
    with sqlite3.connect(database) as connection:
        sizes = [size for (size,) in connection.execute("SELECT size FROM runs")]
    assert sum(sizes) <= limit and len(sizes) == 1


def test_an_answer_with_a_lone_surrogate_is_printed_and_recorded(project: Path) -> None:
    config = project.parent / "home" / ".config" / "start" / "config.toml"
    with config.open("a", encoding="utf-8") as file:
        file.write("\n" + agent("enveloped", output="result", levels='read-only = "--ro"'))
    # A JSON escape of half a surrogate pair: a string no UTF-8 can hold.
    said = '{"type": "result", "is_error": false, "result": "half \\ud800 a pair"}'
    result = start(project, "task", "notes", "--print", "-a", "enveloped", FAKE_ANSWER=said)
    assert (result.returncode, result.stdout, result.stderr) == (0, "half ��� a pair\n", "")
    shown = run_start("log", "show", "--json", cwd=project)
    assert (shown.returncode, json.loads(shown.stdout)["answer"]) == (0, "half ��� a pair")
