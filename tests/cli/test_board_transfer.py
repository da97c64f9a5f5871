"""`start board export`, `import` and `add --file` (start.board.transfer, start.board.foreign,
start.cli.board_transfer; docs/board.md, "Export and import"): the format, a round trip through
real processes, beads' and Backlog.md's files as they write them, and what a hostile file could
do, each refused with nothing imported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, invoke, run_start, write_tree

FIXTURES = REPO / "tests" / "fixtures" / "board"

CONFIG = """
[agents.a]
bin = "true"
command = "{bin} {prompt}"

[tasks.review]
prompt = "Review: {instructions}"
"""


@pytest.fixture
def config(isolated: Path) -> Path:
    write_tree(isolated.parent / "home/.config/start", {"config.toml": CONFIG})
    return isolated


def ok(*args: str, stdin: str | None = None) -> Any:
    result = invoke(*args, stdin=stdin)
    assert result.exit_code == 0, result.stderr
    return result


def exported(directory: Path | None = None) -> list[dict[str, Any]]:
    where = ["-d", str(directory)] if directory is not None else []
    return [json.loads(line) for line in ok(*where, "board", "export").stdout.splitlines()]


def board(directory: Path) -> list[dict[str, Any]]:
    """The items of the board of `directory`, whole, in order."""
    return exported(directory)[1:]


def other(isolated: Path) -> Path:
    """A directory of no project beside the working one: a board of its own, empty."""
    found = isolated / "other"
    found.mkdir(exist_ok=True)
    return found


# --- export -----------------------------------------------------------------------------------


def test_export_writes_a_header_then_every_item_with_its_fields_in_sorted_order(
    config: Path,
) -> None:
    ok("board", "add", "Plan", "-d", "the plan", "--label", "x", "--priority", "1")
    ok(
        "board",
        "add",
        "Code",
        "--after",
        "1",
        "--parent",
        "1",
        "--prompt",
        "do {answers}",
        "-a",
        "a",
    )
    ok("board", "archive", "2")
    from start.board import Holder
    from start.board import file as boardfile

    with boardfile.opened(str(config)) as opened:
        opened.comment("item-1", Holder("bob"), "looks right")
    out = ok("board", "export").stdout
    lines = out.splitlines()
    assert lines[0] == '{"format":"start.board","version":1}'
    assert out.isascii()
    first, second = (json.loads(line) for line in lines[1:])
    for line in lines[1:]:
        assert list(json.loads(line)) == sorted(json.loads(line))
    assert set(first) == {
        "id", "title", "description", "status", "assignee", "blocked_by", "parent", "labels",
        "priority", "metadata", "run", "answer", "reason", "history", "created_by", "created",
        "updated", "archived", "level", "level_by", "answer_level", "epoch", "releases",
        "comments", "events",
    }  # fmt: skip
    assert (first["title"], first["description"], first["labels"], first["priority"]) == (
        "Plan", "the plan", ["x"], 1,
    )  # fmt: skip
    assert [(c["author"], c["text"]) for c in first["comments"]] == [("bob", "looks right")]
    assert [e["op"] for e in first["events"]] == ["create"]
    assert (second["blocked_by"], second["parent"], second["archived"] is not None) == (
        ["item-1"], "item-1", True,
    )  # fmt: skip
    assert second["run"]["prompt"] == "do {answers}" and second["run"]["agents"] == ["a"]
    assert [e["op"] for e in second["events"]] == ["create", "archive"]


def test_export_to_a_file_is_private_and_says_how_many(config: Path) -> None:
    ok("board", "add", "One")
    result = ok("board", "export", "-o", "out.jsonl")
    assert result.stderr == "start: exported 1 item to out.jsonl\n"
    assert (config / "out.jsonl").stat().st_mode & 0o777 == 0o600
    assert (config / "out.jsonl").read_text().count("\n") == 2


# --- the round trip, with real processes --------------------------------------------------------


def _strip(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An export's items but what an import changes (docs/board.md, "Export and import"): the
    ids, kept as they are mapped, `imported_from`, the last `import` event, `history`."""
    kept = []
    for item in items:
        item = dict(item)
        item["metadata"] = {k: v for k, v in item["metadata"].items() if k != "imported_from"}
        if item["events"] and item["events"][-1]["op"] == "import":
            item["events"] = item["events"][:-1]
        item["history"] = None
        kept.append(item)
    return kept


def test_export_import_export_is_equal_but_for_what_the_docs_name(config: Path) -> None:
    here = config

    def start(*args: str) -> Any:
        return run_start(*args, cwd=here)

    assert start("board", "add", "Plan", "-d", "caf\u00e9 \u2014 \U0001f600").returncode == 0
    assert start("board", "add", "Code", "--after", "1", "--prompt", "do {answers}", "-a", "a",
                 "--label", "b", "--priority", "0", "--meta", "k=[1,2]").returncode == 0  # fmt: skip
    assert start("board", "add", "Child", "--parent", "1", "--task", "review").returncode == 0
    assert start("board", "claim", "1").returncode == 0
    assert start("board", "done", "1", "--answer", "the answer").returncode == 0
    assert start("board", "add", "Broken").returncode == 0
    assert start("board", "fail", "4", "--reason", "no").returncode == 0
    assert start("board", "add", "Held").returncode == 0
    assert start("board", "add", "Done without an answer").returncode == 0
    assert start("board", "done", "6").returncode == 0
    assert start("board", "claim", "5", "--as", "carol").returncode == 0
    assert start("board", "archive", "4").returncode == 0
    first = start("board", "export")
    assert first.returncode == 0, first.stderr
    fresh = other(here)
    imported = run_start("board", "import", "-", cwd=fresh, stdin=first.stdout)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout == (
        "item-1 -> item-1\n"
        "item-2 -> item-2  runs prompt 'do {answers}' with a at read-only\n"
        "item-3 -> item-3  runs task review with the default agent at the task's\n"
        "item-4 -> item-4\n"
        "item-5 -> item-5\n"
        "item-6 -> item-6\n"
    )
    assert imported.stderr == "start: imported 6 items from - (start)\n"
    again = run_start("board", "export", cwd=fresh)
    before = [json.loads(line) for line in first.stdout.splitlines()]
    after = [json.loads(line) for line in again.stdout.splitlines()]
    assert after[0] == before[0]
    # The held item comes in pending, without its holder: no process here holds it.
    held_before, held_after = before[5], after[5]
    assert (held_before["status"], held_before["assignee"]) == ("in_progress", "carol")
    assert (held_after["status"], held_after["assignee"]) == ("pending", None)
    for item in (held_before, held_after):
        item["status"], item["assignee"] = "pending", None
    assert _strip(after[1:]) == _strip(before[1:])
    assert [item["metadata"]["imported_from"] for item in after[1:]] == [
        {"format": "start", "id": f"item-{n}"} for n in range(1, 7)
    ]
    assert [item["events"][-1]["op"] for item in after[1:]] == ["import"] * 6
    assert (after[6]["answer"], after[6]["answer_level"]) == (None, "full")


def test_ids_are_mapped_onto_a_board_that_has_items(config: Path) -> None:
    ok("board", "add", "A")
    ok("board", "add", "B", "--after", "1")
    text = ok("board", "export").stdout
    result = ok("board", "import", "-", stdin=text)
    assert result.stdout == "item-1 -> item-3\nitem-2 -> item-4\n"
    items = board(config)
    assert (items[3]["blocked_by"], items[3]["metadata"]["imported_from"]["id"]) == (
        ["item-3"], "item-2",
    )  # fmt: skip


def test_a_dry_run_says_what_it_would_create_and_changes_nothing(config: Path) -> None:
    ok("board", "add", "A", "--prompt", "go", "-a", "a", "--permissions", "edit")
    text = ok("board", "export").stdout
    fresh = other(config)
    result = ok("-d", str(fresh), "board", "import", "-", "--dry-run", stdin=text)
    assert result.stdout == "item-1 -> item-1  runs prompt 'go' with a at edit\n"
    assert result.stderr == "start: dry run: would import 1 item from - (start); nothing changed\n"
    assert board(fresh) == []
    listed = json.loads(ok("-d", str(fresh), "board", "import", "-", "--dry-run", "--json",
                           stdin=text).stdout)  # fmt: skip
    assert listed == [
        {"from": "item-1", "id": "item-1",
         "runs": {"agent": "a", "prompt": True, "task": None, "permissions": "edit"}},
    ]  # fmt: skip


def test_from_says_what_a_file_is_and_a_directory_is_backlogs(config: Path) -> None:
    beads = str(FIXTURES / "beads" / "issues.jsonl")
    forced = invoke("board", "import", beads, "--from", "start", "--dry-run")
    assert (forced.exit_code, forced.stderr) == (
        2,
        f'start: {beads}:1: not an export of start: its first line names no "format": '
        '"start.board" (give --from beads or --from backlog for theirs)\n',
    )
    folder = invoke("board", "import", str(FIXTURES / "backlog"), "--from", "beads")
    assert (folder.exit_code, folder.stderr) == (
        2,
        f"start: {FIXTURES / 'backlog'} is a directory: --from beads reads a file\n",
    )
    file = invoke("board", "import", beads, "--from", "backlog")
    assert (file.exit_code, file.stderr) == (
        2,
        f"start: --from backlog reads a directory (backlog/tasks), not {beads}\n",
    )
    missing = invoke("board", "import", "nothing.jsonl")
    assert (missing.exit_code, missing.stderr) == (
        2,
        "start: cannot read nothing.jsonl: No such file or directory\n",
    )
    assert ok("board", "import", beads, "--from", "beads", "-q").stderr == ""


# --- beads and Backlog.md ---------------------------------------------------------------------


def _shape(item: dict[str, Any]) -> tuple[Any, ...]:
    return (item["id"], item["title"], item["status"], item["priority"], item["labels"],
            item["blocked_by"], item["parent"], item["assignee"], item["answer"],
            item["archived"] is not None)  # fmt: skip


def test_a_beads_issues_jsonl_comes_in_with_its_dependencies_parents_and_statuses(
    config: Path,
) -> None:
    result = run_start("board", "import", str(FIXTURES / "beads" / "issues.jsonl"), cwd=config)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "bd-a1b2 -> item-1\nbd-c3d4 -> item-2\nbd-c3d4.1 -> item-3\nbd-e5f6 -> item-4\n"
        "bd-g7h8 -> item-5\nbd-i9j0 -> item-6\n"
    )
    items = board(config)
    assert [_shape(item) for item in items] == [
        ("item-1", "Set up the database", "completed", 1, ["backend"], [], None, "alice",
         "Merged in #12", False),
        ("item-2", "Authentication", "pending", 0, ["auth"], [], None, None, None, False),
        ("item-3", "Login API", "pending", 1, ["auth", "backend"], ["item-1"], "item-2", None,
         None, False),
        ("item-4", "Flaky login test", "pending", 2, [], ["item-3"], None, None, None, False),
        ("item-5", "An idea we dropped", "failed", 4, [], [], None, None, None, True),
        ("item-6", "Write the docs", "pending", 3, ["docs"], [], None, None, None, False),
    ]  # fmt: skip
    assert items[0]["description"] == (
        "SQLite, in WAL mode.\n\n## Design\n\nOne file per project.\n\n## Acceptance criteria"
        "\n\nTwo writers never deadlock."
    )
    assert items[0]["comments"] == [
        {"at": items[0]["comments"][0]["at"], "author": "bob", "text": "Use BEGIN IMMEDIATE."}
    ]
    assert (
        items[0]["created"].startswith("2025-10-30T16:12:44") or "2025-10-30" in items[0]["created"]
    )
    assert items[2]["metadata"] == {
        "assignee": "carol",
        "imported_from": {"format": "beads", "id": "bd-c3d4.1"},
        "issue_type": "feature",
    }
    assert items[3]["metadata"]["beads_links"] == [{"type": "discovered-from", "id": "bd-a1b2"}]
    assert items[4]["reason"] == "deleted in beads (tombstone)"


def test_a_backlog_md_folder_comes_in_with_its_dependencies_parents_and_statuses(
    config: Path,
) -> None:
    result = run_start("board", "import", str(FIXTURES / "backlog"), cwd=config)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "task-1 -> item-1\ntask-2 -> item-2\ntask-2.1 -> item-3\ntask-3 -> item-4\n"
    )
    assert result.stderr == f"start: imported 4 items from {FIXTURES / 'backlog'} (backlog)\n"
    items = board(config)
    assert [_shape(item) for item in items] == [
        ("item-1", "Set up the database", "completed", 1, ["backend"], [], None, None, "", False),
        ("item-2", "Authentication", "pending", 2, ["auth"], [], None, None, None, False),
        ("item-3", "Login API", "pending", 2, ["auth", "backend"], ["item-1"], "item-2", None,
         None, False),
        ("item-4", "Fix the \"flaky\" login test: it's one run in ten", "pending", 3,
         ["bug", "ci"], ["item-3"], None, None, None, False),
    ]  # fmt: skip
    assert items[0]["description"] == (
        "## Description\n\n<!-- SECTION:DESCRIPTION:BEGIN -->\nSQLite, in WAL mode.\n"
        "<!-- SECTION:DESCRIPTION:END -->\n\n## Acceptance Criteria\n<!-- AC:BEGIN -->\n"
        "- [x] #1 Two writers never deadlock\n<!-- AC:END -->"
    )
    assert items[0]["metadata"] == {
        "assignee": ["@alice"],
        "imported_from": {"format": "backlog", "id": "task-1"},
    }
    assert items[3]["metadata"]["milestone"] == "v1.0"


def test_a_backlog_status_it_does_not_know_is_refused_naming_the_file(config: Path) -> None:
    folder = config / "bl"
    shutil.copytree(FIXTURES / "backlog", folder)
    task = folder / "backlog" / "tasks" / "task-2 - Authentication.md"
    task.write_text(task.read_text().replace("status: To Do", "status: Review"))
    result = invoke("board", "import", str(folder))
    assert (result.exit_code, result.stderr) == (
        2,
        f"start: {task}: status: 'Review' is no status start knows of Backlog.md; the known "
        "are To Do, In Progress and Done: edit the task to one of them\n",
    )
    assert board(config) == []


def test_backlog_front_matter_beyond_what_it_writes_is_refused_not_evaluated(
    config: Path,
) -> None:
    write_tree(
        config / "bl" / "tasks",
        {"task-1 - X.md": "---\nid: task-1\ntitle: !!python/object x\n---\n"},
    )
    result = invoke("board", "import", str(config / "bl"))
    assert (result.exit_code, result.stderr) == (
        2,
        f"start: {config / 'bl' / 'tasks' / 'task-1 - X.md'}:3: YAML start does not read here "
        "(!); write the value on its line, quoted\n",
    )


def test_a_backlog_task_that_is_a_symlink_is_refused_not_read(config: Path) -> None:
    secret = config / "secret"
    secret.write_text("---\nid: task-9\ntitle: the key\n---\nPRIVATE\n")
    folder = config / "bl" / "tasks"
    folder.mkdir(parents=True)
    (folder / "task-1 - Key.md").symlink_to(secret)
    result = invoke("board", "import", str(config / "bl"))
    assert (result.exit_code, result.stderr) == (
        2,
        f"start: {folder / 'task-1 - Key.md'}: a symlink; start reads a task's own file, never "
        "what a link points to (in a cloned repository it could be a file of yours): copy the "
        "task there\n",
    )
    assert board(config) == []


# --- a hostile file: refused, naming the line, nothing imported --------------------------------

HEADER = '{"format":"start.board","version":1}\n'


def _item(key: str, **fields: Any) -> str:
    return json.dumps({"id": key, "title": f"t {key}", **fields}) + "\n"


def refused(config: Path, text: str, message: str, *args: str) -> None:
    path = config / "in.jsonl"
    path.write_text(text)
    result = invoke("board", "import", "in.jsonl", *args)
    assert (result.exit_code, result.stderr) == (2, f"start: {message}\n")
    assert board(config) == []


def test_a_bad_line_names_its_line_and_nothing_is_half_imported(config: Path) -> None:
    text = HEADER + _item("a") + _item("b") + '{"id": "c", "title": "x", "status": "done"}\n'
    refused(config, text, "in.jsonl:4: status: 'done' is no status; give one of pending, "
            "in_progress, completed, failed")  # fmt: skip


def test_a_beads_status_it_does_not_know_is_refused_naming_the_line(config: Path) -> None:
    line = '{"id": "bd-1", "title": "x", "status": "review", "priority": 2}\n'
    refused(config, line, "in.jsonl:1: status: 'review' is no status of beads start knows; the "
            "known are open, in_progress, blocked, deferred, pinned, hooked, closed, tombstone: "
            "edit the line to one of them")  # fmt: skip
    refused(config, line.replace("review", "open").replace("2}", "7}"),
            "in.jsonl:1: priority: 7; give a whole number from 0 to 4")  # fmt: skip


def test_cycles_self_references_and_duplicate_ids_are_refused(config: Path) -> None:
    refused(
        config,
        HEADER + _item("a", blocked_by=["c"]) + _item("b", blocked_by=["a"])
        + _item("c", blocked_by=["b"]),
        "in.jsonl:2: dependencies: the items of in.jsonl:2 -> in.jsonl:4 -> in.jsonl:3 -> in.jsonl:2 "
        "make a cycle, which would never end; remove one of these references",
    )  # fmt: skip
    refused(config, HEADER + _item("a", blocked_by=["a"]),
            "in.jsonl:2: blocked_by: the item waits on itself; remove its own key")  # fmt: skip
    refused(config, HEADER + _item("a", parent="a"),
            "in.jsonl:2: parent: the item is its own parent; remove it")  # fmt: skip
    refused(
        config,
        HEADER + _item("a", parent="b") + _item("b", parent="a"),
        "in.jsonl:2: parent: the items of in.jsonl:2 -> in.jsonl:3 -> in.jsonl:2 make a cycle, "
        "which would never end; remove one of these references",
    )
    refused(config, HEADER + _item("a") + _item("a"),
            "in.jsonl:3: id: 'a' is also the id of in.jsonl:2; give each item its own")  # fmt: skip
    refused(config, HEADER + _item("a", blocked_by=["item-9"]),
            "in.jsonl:2: blocked_by: 'item-9' is no item of the file; give the key of a line")  # fmt: skip


def test_a_twenty_digit_id_is_a_name_kept_not_a_number_trusted(config: Path) -> None:
    key = "9" * 20
    ok("board", "import", "-", stdin=HEADER + _item(key) + _item("b", blocked_by=[key]))
    items = board(config)
    assert [(i["id"], i["blocked_by"], i["metadata"]["imported_from"]["id"]) for i in items] == [
        ("item-1", [], key), ("item-2", ["item-1"], "b"),
    ]  # fmt: skip


def test_deep_json_long_lines_bad_bytes_and_newer_versions_are_refused(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = '{"id": "a", "title": "t", "metadata": ' + '{"a": ' * 200 + "1" + "}" * 201 + "\n"
    refused(config, HEADER + deep, "in.jsonl:2: the JSON nests deeper than 103 levels of arrays "
            "and objects; start reads at most 103")  # fmt: skip
    from start.board import transfer

    with monkeypatch.context() as patched:
        patched.setattr(transfer, "LINE_LIMIT", 100)
        refused(config, HEADER + _item("a", description="x" * 200), "in.jsonl:2: the line is longer "
                "than 0 MiB, the most a line may take; split the item's text (its description holds "
                "at most 1,048,576 characters)")  # fmt: skip
    path = config / "in.jsonl"
    path.write_bytes(HEADER.encode() + b'{"id": "a", "title": "\xff"}\n')
    result = invoke("board", "import", "in.jsonl")
    assert result.stderr == "start: in.jsonl:2: byte 23 is not UTF-8; save the file as UTF-8\n"
    refused(config, '{"format":"start.board","version":2}\n', "in.jsonl:1: version: 2 is newer "
            "than this start reads (1); upgrade start")  # fmt: skip
    refused(config, "[1]\n", "in.jsonl:1: cannot tell what this file is: its first line is "
            "neither the header of start's export nor an issue of beads; give --from start, "
            "--from beads, or a Backlog.md folder")  # fmt: skip
    refused(config, HEADER + _item("a", title=""), "in.jsonl:2: title: empty; give some text")
    refused(config, HEADER + _item("a", labels=["a b"]), "in.jsonl:2: labels: 'a b' is not a "
            "label: a label is 1 to 50 characters, without spaces or commas")  # fmt: skip


def test_metadata_that_imported_from_takes_over_its_limit_names_the_line(config: Path) -> None:
    full = {"k": "x" * (65_536 - 10)}
    refused(config, HEADER + _item("a", metadata=full), "in.jsonl:2: metadata takes 65,578 bytes "
            "as JSON, over the limit of 65,536; keep long text in the description")  # fmt: skip


def test_text_comes_in_byte_for_byte(config: Path) -> None:
    text = "a\u0000b\r\n\u202e\udc80 \U0001f600"
    ok("board", "import", "-", stdin=HEADER + _item("a", description=text))
    assert board(config)[0]["description"] == text


def test_a_run_is_checked_as_add_checks_it(config: Path) -> None:
    run = {"prompt": "go", "agents": ["nosuch"]}
    path = config / "in.jsonl"
    path.write_text(HEADER + _item("a") + _item("b", run=run))
    result = invoke("board", "import", "in.jsonl")
    assert result.exit_code == 4
    assert result.stderr.startswith("start: in.jsonl:3: run: ")
    assert "nosuch" in result.stderr
    assert board(config) == []
    # Only what `add` sets is kept of a run: a directory, arguments or a ceiling are not.
    hostile = {"prompt": "go", "agents": ["a"], "directory": "/", "agent_args": ["--yolo"],
               "most": "full", "contexts": ["/etc/passwd"]}  # fmt: skip
    ok("board", "import", "-", stdin=HEADER + _item("a", run=hostile))
    kept = board(config)[0]["run"]
    assert (kept["directory"], kept["agent_args"], kept["most"], kept["contexts"]) == (
        None, [], None, [],
    )  # fmt: skip


def test_the_level_a_file_names_is_checked_and_a_lower_one_kept(config: Path) -> None:
    refused(config, HEADER + _item("a", level="root"), "in.jsonl:2: level: 'root'; give one of "
            "read-only, edit, full")  # fmt: skip
    ok("board", "import", "-", stdin=HEADER + _item("a", level="full", level_by="mallory")
       + _item("b", level="read-only", level_by="mcp:x:1"))  # fmt: skip
    items = board(config)
    assert [(i["level"], i["level_by"]) for i in items] == [
        ("full", "mallory"), ("read-only", "mcp:x:1"),
    ]  # fmt: skip


# --- add --file -------------------------------------------------------------------------------

PLAN = (
    '{"key": "plan", "title": "Plan it", "prompt": "Plan the fix", "agent": "a"}\n'
    '{"key": "code", "title": "Code it", "after": ["plan", "item-1"], "priority": 0}\n'
    '{"title": "Review it", "after": ["code"], "parent": "1", "labels": ["review"]}\n'
)


def test_add_file_makes_a_plan_of_items_with_dependencies_in_one_step(config: Path) -> None:
    ok("board", "add", "Epic")
    result = run_start("board", "add", "--file", "-", cwd=config, stdin=PLAN)
    assert (result.returncode, result.stdout, result.stderr) == (0, "item-2\nitem-3\nitem-4\n", "")
    items = board(config)
    assert [(i["title"], i["blocked_by"], i["parent"], i["priority"], i["labels"])
            for i in items[1:]] == [
        ("Plan it", [], None, 2, []),
        ("Code it", ["item-2", "item-1"], None, 0, []),
        ("Review it", ["item-3"], "item-1", 2, ["review"]),
    ]  # fmt: skip
    assert items[1]["run"]["prompt"] == "Plan the fix" and items[1]["run"]["agents"] == ["a"]
    assert [e["op"] for e in items[1]["events"]] == ["create"]
    assert "imported_from" not in items[1]["metadata"]


def test_add_file_refuses_a_bad_line_and_adds_nothing(config: Path) -> None:
    (config / "plan.jsonl").write_text(PLAN + '{"title": "x", "afer": ["plan"]}\n')
    result = invoke("board", "add", "--file", "plan.jsonl")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: plan.jsonl:4: afer: not a field of an item; did you mean 'after'? the fields "
        "are key, title, description, priority, labels, parent, after, metadata, prompt, task, "
        "agent, model, permissions\n",
    )
    (config / "plan.jsonl").write_text('{"title": "x", "after": ["99999999999999999999"]}\n')
    result = invoke("board", "add", "--file", "plan.jsonl")
    assert (result.exit_code, result.stderr) == (
        2,
        "start: plan.jsonl:1: after: '99999999999999999999' is no item of the file or the id "
        "of an item on the board; give the key of a line\n",
    )
    (config / "plan.jsonl").write_text('{"title": "x", "after": ["item-7"]}\n')
    result = invoke("board", "add", "--file", "plan.jsonl")
    assert (result.exit_code, result.stderr) == (
        4,
        "start: plan.jsonl:1: after names item-7, which is not on the board ('start board "
        "--all' lists the items)\n",
    )
    assert board(config) == []
    both = invoke("board", "add", "T", "--file", "plan.jsonl")
    assert (both.exit_code, both.stderr) == (
        2,
        "start: --file takes each item's fields from its line: give title there, not beside it\n",
    )
    none = invoke("board", "add")
    assert (none.exit_code, none.stderr) == (
        2,
        "start: give the item's TITLE, or --file FILE for many items\n",
    )


def test_a_chain_of_parents_deeper_than_the_limit_is_refused_naming_the_line(
    config: Path,
) -> None:
    lines = [_item("k1"), *(_item(f"k{n}", parent=f"k{n - 1}") for n in range(2, 102))]
    refused(config, HEADER + "".join(lines),
            "in.jsonl:102: item-101 would be more than 100 levels deep under its parents, the "
            "limit; nest the file's items less deeply")  # fmt: skip
    ok("board", "import", "-", stdin=HEADER + "".join(lines[:100]))
