"""The project's memo (start.config.memo): a warm trust check takes no digest and parses no
approval record, and nothing it remembers lets a changed byte of an approved file, or a changed
approval, go unseen.

What is computed is observed, not assumed: the `computed` fixture records every SHA-256 taken and
every JSON document parsed. Each test's memo is read from its file as a new process reads it
(`new_process`), unless the test says otherwise.
"""

from __future__ import annotations

import json
import marshal
from pathlib import Path
from typing import Any

import pytest

from start import trust
from start.base import fs
from start.config import cache, memo
from start.config.load import load
from start.trust.scan import FILE, Entry, fingerprint
from tests.conftest import write_tree

CONFIG = (
    '[roles.r]\ndescription = "v1"\nfile = "roles/r.md"\n\n'
    '[tasks.t]\nrole = "r"\nprompt = "{instructions}"\n'
)
# A config file, a file beside it in `.start/` and a role file: the approval covers each by its
# bytes, and each is read and digested on every check.
PROJECT = {".start/config.toml": CONFIG, ".start/notes.md": "Notes v1\n", "roles/r.md": "ROLE v1\n"}


def new_process() -> None:
    """Forget the memos this process read: the next check reads its memo from the file."""
    memo._MEMOS.clear()


@pytest.fixture
def project(isolated: Path) -> Path:
    """An approved project, checked once since: its memo holds every answer of a check."""
    write_tree(isolated, PROJECT)
    found = trust.scan(load())
    assert found is not None
    trust.approve(found)
    assert trust.check(load()).trusted  # the approval record's answer too
    new_process()
    return isolated


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What is computed from here on, in order: `sha256` for a digest taken, `json` for a JSON
    document parsed."""
    found: list[str] = []
    sha256, loads = fs.sha256, json.loads

    def digest(data: bytes) -> str:
        found.append("sha256")
        return sha256(data)

    def parse(*args: Any, **kwargs: Any) -> Any:
        found.append("json")
        return loads(*args, **kwargs)

    monkeypatch.setattr(fs, "sha256", digest)
    monkeypatch.setattr(json, "loads", parse)
    return found


def entry_of(root: Path) -> Path:
    return Path(cache.directory()) / memo.Memo(str(root)).name


def rewrite(root: Path, change: Any) -> None:
    """Change the answers the project's memo file holds, as `change(answers)` does."""
    path = entry_of(root)
    key = memo.Memo(str(root)).key
    payload = cache.payload_of(path.read_bytes(), key)
    assert payload is not None
    answers = marshal.loads(payload)
    change(answers)
    path.write_bytes(cache.pack(key, answers))


def test_a_warm_check_takes_no_digest_and_parses_no_record(
    project: Path, computed: list[str]
) -> None:
    verdict = trust.check(load())

    assert verdict.trusted
    assert computed == []


def test_without_its_memo_a_check_computes_every_answer_again(
    project: Path, computed: list[str]
) -> None:
    # The control of the test above: what the memo spares a check, when there is none.
    entry_of(project).unlink()

    assert trust.check(load()).trusted
    assert computed.count("json") == 1  # the approval record
    assert computed.count("sha256") >= 4  # the three files, and the list of them
    computed.clear()
    new_process()
    assert trust.check(load()).trusted
    assert computed == []  # remembered again


@pytest.mark.parametrize("path", list(PROJECT))
@pytest.mark.parametrize("process", ["new process", "same process"])
def test_a_changed_byte_of_an_approved_file_asks_again(
    project: Path, path: str, process: str
) -> None:
    if process == "same process":
        assert trust.check(load()).trusted  # this process remembers the answers too
    file = project / path
    file.write_text(file.read_text().replace("v1", "v2"))

    verdict = trust.check(load())

    assert (verdict.trusted, verdict.reason) == (
        False,
        "not trusted: 1 file changed since approval",
    )


def test_a_revoked_approval_asks_again(project: Path) -> None:
    trust.revoke(str(project))

    verdict = trust.check(load())

    assert (verdict.trusted, verdict.reason) == (False, "not trusted: never approved")


def test_a_changed_approval_record_is_read_again(project: Path, computed: list[str]) -> None:
    [record], _ = trust.records(str(project))
    path = Path(record.path)
    path.write_text(path.read_text().replace("ROLE v1", "ROLE v9"))

    verdict = trust.check(load())

    assert verdict.trusted is False
    assert verdict.warnings == (
        f"ignoring corrupt trust record {record.path}: the copy of roles/r.md does not match "
        "its digest",
    )
    assert "json" in computed


def test_a_wrong_remembered_answer_is_computed_again(project: Path, computed: list[str]) -> None:
    # Every digest and fingerprint the memo holds made wrong: the config cache's digests disagree
    # and are computed again (the entry stays), and the check that finds no approval checks
    # again with nothing remembered, and remembers the right answers.
    def wrong(answers: dict[str, dict[bytes, Any]]) -> None:
        for kind in (memo.SHA256, memo.FINGERPRINT):
            answers[kind] = dict.fromkeys(answers[kind], "0" * 64)

    rewrite(project, wrong)

    assert trust.check(load()).trusted
    assert "sha256" in computed
    computed.clear()
    new_process()
    assert trust.check(load()).trusted
    assert computed == []


def cut(root: Path) -> None:
    path = entry_of(root)
    path.write_bytes(path.read_bytes()[:-10])


@pytest.mark.parametrize(
    "damage",
    [
        lambda root: entry_of(root).write_bytes(b"not a memo"),
        cut,
        lambda root: rewrite(root, lambda answers: answers.pop(memo.RECORD)),
        lambda root: rewrite(root, lambda answers: answers[memo.SHA256].update({1: "x"})),
        lambda root: rewrite(
            root, lambda answers: answers[memo.RECORD].update(dict.fromkeys(answers[memo.RECORD]))
        ),
    ],
    ids=["not marshal data", "cut short", "a kind missing", "a key not bytes", "a record not one"],
)
def test_a_memo_of_another_shape_remembers_nothing_wrong(
    project: Path, computed: list[str], damage: Any
) -> None:
    damage(project)

    assert trust.check(load()).trusted
    assert computed != []


def test_a_memo_is_the_projects_own(project: Path, tmp_path: Path, computed: list[str]) -> None:
    # Another project with the same files remembers nothing of this one's answers: its memo is
    # another entry, and this one's key names its root.
    other = tmp_path / "other"
    write_tree(other, PROJECT)
    entry = entry_of(project)
    entry_of(other).write_bytes(entry.read_bytes())
    found = trust.scan(load(str(other)))
    assert found is not None
    computed.clear()
    trust.approve(found)
    assert trust.check(load(str(other))).trusted
    assert "json" in computed


def test_the_fingerprint_is_remembered_by_every_character_of_its_entries() -> None:
    # An undecodable byte (a surrogate escape) and the character its UTF-8 spells are two
    # labels: two fingerprints, remembered apart.
    remembered = memo.Memo("/nowhere")
    one = [Entry("é", FILE, "a" * 64, "p")]
    other = [Entry("\udcc3\udca9", FILE, "a" * 64, "p")]

    first, second = fingerprint(one, remembered), fingerprint(other, remembered)

    assert (first, second) == (fingerprint(one), fingerprint(other))
    assert first != second
    assert (fingerprint(one, remembered), fingerprint(other, remembered)) == (first, second)
