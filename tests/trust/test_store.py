"""The approval store (start.trust.store): private records, several per root, corrupt or foreign
records ignored, revoke."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from start import trust
from start.base import fs
from start.config.load import load
from tests.conftest import write_tree
from tests.trust.conftest import CONFIG, approve_here

# --- the store ------------------------------------------------------------------------------


def test_approval_is_a_private_file_under_the_state_dir(project: Path, isolated: Path) -> None:
    record = approve_here()
    directory = isolated.parent / "home" / ".local" / "state" / "start" / "trust"
    assert Path(record.path).parent == directory
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(Path(record.path).stat().st_mode) == 0o600
    data = json.loads(Path(record.path).read_text())
    assert data["root"] == str(project)
    assert [(e["label"], e["text"]) for e in data["entries"]] == [
        (".start/config.toml", CONFIG),
        ("roles/r.md", "ROLE v1\n"),
    ]
    assert trust.describe(load())[0] is True


def test_several_approvals_per_root_are_kept(project: Path) -> None:
    approve_here()
    (project / "roles/r.md").write_text("ROLE v2\n")
    approve_here()
    found, warnings = trust.records(str(project))
    assert (len(found), warnings) == (2, [])
    (project / "roles/r.md").write_text("ROLE v1\n")
    assert trust.describe(load())[0] is True


def test_the_copies_in_a_record_are_bounded_in_all(project: Path) -> None:
    """Every launch reads the record: past 8 MiB of copies, files are covered by their digest
    alone (and a change to one is shown without a diff)."""
    files = {f".claude/skills/big/part{i}.md": f"{i}" * 1_000_000 for i in range(10)}
    write_tree(project, {".claude/skills/big/SKILL.md": "Read the parts\n", **files})
    record = approve_here()
    copied = {c.label: c.text for c in record.copies}
    assert copied[".start/config.toml"] == CONFIG
    assert copied[".claude/skills/big/part0.md"] == "0" * 1_000_000
    texts = [c.text for c in record.copies if c.text is not None]
    assert sum(len(text) for text in texts) <= 8 * 1_048_576
    assert copied[".claude/skills/big/part9.md"] is None
    assert Path(record.path).stat().st_size < 9 * 1_048_576
    (project / ".claude/skills/big/part9.md").write_text("changed\n")
    found = trust.scan(load())
    assert found is not None
    assert [
        (c.label, c.status, c.diff) for c in trust.changes(found, record) if c.status != "same"
    ] == [(".claude/skills/big/part9.md", "changed", ())]


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda p: p.write_text("{not json"), "not a trust record"),
        (lambda p: p.write_text('{"version": 1}'), "not a trust record"),
        (
            lambda p: p.write_text(p.read_text().replace('"version": 1', '"version": 9')),
            "unknown version 9",
        ),
        (
            lambda p: p.write_text(p.read_text().replace("ROLE v1", "ROLE v9")),
            "the copy of roles/r.md does not match its digest",
        ),
        (lambda p: p.chmod(0o666), "writable by another user"),
    ],
)
def test_a_corrupt_record_is_ignored_with_a_warning(
    project: Path, damage: object, why: str
) -> None:
    record = approve_here()
    damage(Path(record.path))  # type: ignore[operator]
    verdict = trust.check(load())
    assert verdict.trusted is False
    assert verdict.warnings[0] == f"ignoring corrupt trust record {record.path}: {why}"
    with pytest.raises(trust.TrustRequired) as caught:
        trust.grant(load())
    assert caught.value.verdict.warnings[0] == (
        f"ignoring corrupt trust record {record.path}: {why}"
    )


def test_a_record_whose_digest_disagrees_with_its_files_is_ignored(project: Path) -> None:
    record = approve_here()
    data = json.loads(Path(record.path).read_text())
    data["entries"] = data["entries"][:1]
    Path(record.path).write_text(json.dumps(data))
    assert trust.check(load()).warnings == (
        f"ignoring corrupt trust record {record.path}: its digest does not match its files",
    )


def test_a_record_pins_the_taskfile_apart_from_its_digest(project: Path) -> None:
    """The Taskfile's bytes are in the record, not in its fingerprint: a launch is not asked
    again when only the Taskfile changes; start mcp's Taskfile tools are (trust.vouched)."""
    taskfile = "version: '3'\ntasks: {}\n"
    before = trust.scan(load())
    write_tree(project, {"Taskfile.yml": taskfile})
    record = approve_here()
    data = json.loads(Path(record.path).read_text())
    assert data["taskfile"] == {
        "kind": "file",
        "label": "Taskfile.yml",
        "digest": fs.sha256(taskfile.encode()),
        "text": taskfile,
    }
    assert before is not None and record.fingerprint == before.fingerprint
    assert trust.vouched(load()) == (True, f"approved {record.approved[:10]}")
    (project / "Taskfile.yml").write_text(taskfile + "# pulled\n")
    verdict = trust.check(load())
    # The approval a check finds, without the texts of its copies: it decides, and shows none.
    assert record.taskfile is not None
    textless = record._replace(
        copies=tuple(copy._replace(text=None) for copy in record.copies),
        taskfile=record.taskfile._replace(text=None),
    )
    assert (verdict.trusted, verdict.record) == (True, textless)
    why = (
        f"it changed since the project's approval ({record.approved[:10]}); run 'start trust' "
        "to review it"
    )
    assert (verdict.taskfile, trust.vouched(load())) == (why, (False, why))


def test_a_record_whose_taskfile_copy_disagrees_with_its_digest_is_ignored(
    project: Path,
) -> None:
    write_tree(project, {"Taskfile.yml": "version: '3'\n"})
    record = approve_here()
    data = json.loads(Path(record.path).read_text())
    data["taskfile"]["text"] = "version: '3'\ntasks: {pwn: {cmds: [id]}}\n"
    Path(record.path).write_text(json.dumps(data))
    assert trust.check(load()).warnings == (
        f"ignoring corrupt trust record {record.path}: the copy of Taskfile.yml does not match "
        "its digest",
    )


def test_a_store_writable_by_others_grants_nothing(project: Path) -> None:
    record = approve_here()
    Path(record.path).parent.chmod(0o777)
    verdict = trust.check(load())
    assert (verdict.trusted, verdict.warnings) == (
        False,
        (f"ignoring trust records: {Path(record.path).parent} is writable by another user",),
    )


def test_revoke_removes_every_approval_of_the_root(project: Path) -> None:
    approve_here()
    (project / "roles/r.md").write_text("ROLE v2\n")
    approve_here()
    assert trust.revoke(str(project)) == 2
    assert trust.records() == ([], [])
