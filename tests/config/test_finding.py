"""The ranking of `start find` and find_tasks (start.config.finding): words, stems, and the
score's parts as docs/usage.md states them."""

from __future__ import annotations

import marshal
from pathlib import Path
from typing import Any

import pytest

from start.base.record import Record
from start.config import cache, finding
from start.config.load import load
from start.config.model import Origin, Table, Task
from tests.conftest import write_tree


def task(name: str, description: str | None = None, **fields: object) -> Task:
    return Task(name, Origin("user", "config.toml"), description, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("word", "stemmed"),
    [("reviews", "review"), ("reviewing", "review"), ("reviewed", "review"),
     ("reviewer", "review"), ("fixes", "fix"), ("classes", "class"), ("releases", "release"),
     ("policies", "policy"),
     ("bus", "bus"), ("is", "is"), ("diff", "diff")],
)  # fmt: skip
def test_stem_takes_off_one_ending_leaving_three_letters(word: str, stemmed: str) -> None:
    assert finding.stem(word) == stemmed


def test_words_are_lower_case_split_at_any_other_character_without_common_words() -> None:
    assert finding.words("Review the DIFF: git_diff, review!") == ["review", "diff", "git"]
    assert finding.words("the of") == ["the", "of"]
    assert finding.words("?!") == []


def test_each_word_counts_once_at_its_best_place() -> None:
    """2 in a name or alias, 1 in a description; exact 1, stem 0.9, prefix 0.7, spelling 0.6
    (names only); over 2 for each word."""
    tasks = [
        task("review", "Reviews code"),
        task("audit", "Security review of the code"),
        task("scan", alias="ss"),
        task("reveiw-bot", "Replies"),
    ]
    found = finding.rank(tasks, "review security", limit=None)
    assert [(m.name, m.score, finding.why(m)) for m in found] == [
        ("audit", 0.5, "description: review, security"),
        ("review", 0.5, "name: review"),
        ("reveiw-bot", 0.3, "name: review~reveiw"),
    ]


def test_a_prefix_of_three_letters_matches_and_ties_go_by_name() -> None:
    tasks = [task("zeta", "Security scan"), task("alpha", "Security audit")]
    found = finding.rank(tasks, "sec", limit=None)
    assert [(m.name, m.score, finding.why(m)) for m in found] == [
        ("alpha", 0.35, "description: sec~security"),
        ("zeta", 0.35, "description: sec~security"),
    ]
    assert finding.rank(tasks, "se", limit=None) == []


def test_by_meaning_needs_every_word_in_a_description() -> None:
    tasks = {
        t.name: t
        for t in [
            task("gdr", "Review the staged diff"),
            task("gate", "Review the staged diff and block"),
            task("notes", "Review notes"),
            task("hidden", "Review the diff", internal=True),
        ]
    }
    assert finding.by_meaning(tasks, "review-diff") == ["gate", "gdr"]
    assert finding.by_meaning(tasks, "review-diff", most=1) == ["gate"]


def test_an_index_written_and_loaded_is_the_same_index() -> None:
    """What `of_config` keeps in its file loads back as the index; data of another shape is no
    index (a miss: it is made again)."""
    tasks = [task("review", "Reviews code", alias="rv"), task("bare")]
    fresh = finding.index(tasks)
    assert fresh == finding.Index(
        ("review", "bare"),
        ("task", "task"),
        ("Reviews code", None),
        ("review", "rv", "reviews", "code", "bare"),
        (1, 2, 4, 5, 5, 5),
    )
    columns = tuple(fresh)

    def kept(data: Any) -> memoryview:
        return memoryview(marshal.dumps(data))

    assert finding._loaded(kept({finding.INDEX: columns})) == fresh
    for wrong in [
        memoryview(b""),
        kept(columns),
        kept({finding.INDEX: columns, "more": 1}),
        kept({finding.INDEX: columns[:4]}),
        kept({finding.INDEX: (*columns[:4], (1, 2, 4, 5, 5, 99))}),  # past the words' end
        kept({finding.INDEX: (*columns[:4], (1, 2, 4, 3, 5, 5))}),  # an end before the last
        kept({finding.INDEX: (columns[0], ("task", 1), *columns[2:])}),
    ]:
        assert finding._loaded(wrong) is None


CACHED = """\
[tasks.review]
alias = "rv"
description = "Review the staged diff"
prompt = "x"

[tasks.notes]
description = "Write the release notes"
prompt = "x"

[tasks.hidden]
description = "Review the diff quietly"
internal = true
prompt = "x"

[workflows.triage]
description = "Triage a bug report, then plan its fix"

[workflows.triage.steps.read]
prompt = "Triage {instructions}"
"""


def test_the_index_is_made_by_find_kept_beside_the_entry_and_follows_an_edit(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is made by the first `of_config` after a load, not by the load, and kept in
    a file beside the config's entry; the next load's `of_config` reads it, decoding no task
    and making nothing, and ranks exactly as the parsed tasks and workflows rank; an edited
    description is another key, and its new words are found."""
    config = isolated.parent / "home" / ".config" / "start" / "config.toml"
    write_tree(config.parent, {"config.toml": CACHED})
    entries = Path(cache.directory())
    fresh = load()  # parsed, and stored
    assert sorted(p.name.partition("-")[0] for p in entries.glob("*.bin")) == ["config", "layer"]
    made = finding.of_config(fresh)
    every = [t for t in fresh.tasks.values() if not t.internal]
    pairs = set(zip(made.names, made.kinds, strict=True))
    assert {("review", "task"), ("notes", "task"), ("triage", "workflow")} <= pairs
    [config_entry] = entries.glob("config-*.bin")
    assert (entries / config_entry.name.replace("config-", "find-", 1)).is_file()

    decoded: list[str] = []
    item = cache._item

    def counted(cls: type[Record], *args: Any) -> Any:
        decoded.append(str(args[2]))
        return item(cls, *args)  # type: ignore[arg-type]

    def unmade(config: object) -> finding.Index:
        raise AssertionError("the index was made again")

    make = finding.made
    monkeypatch.setattr(cache, "_item", counted)
    monkeypatch.setattr(finding, "made", unmade)
    cached = load()
    assert isinstance(cached.tasks, Table)
    found = finding.of_config(cached)
    assert found == made
    for text in ["review diff", "notes", "rv", "revew", "the task", "release-notes write", "zebra"]:
        tasks = [m for m in finding.search(found, text, None) if m.kind != finding.WORKFLOW]
        assert tasks == finding.rank(every, text, None), text
    assert [(m.name, m.kind, m.score) for m in finding.search(found, "triage a bug")][:1] == [
        ("triage", "workflow", 0.75)
    ]
    assert decoded == []
    monkeypatch.setattr(finding, "made", make)

    config.write_text(CACHED.replace("release", "zebra"), encoding="utf-8")
    edited = load()  # a miss: parsed, and stored again
    assert [(m.name, m.score, finding.why(m)) for m in finding.search(
        finding.of_config(edited), "zebras", None
    )] == [("notes", 0.45, "description: zebras~zebra")]  # fmt: skip
    assert finding.by_meaning(edited.tasks, "zebra-notes") == ["notes"]


def test_a_config_not_from_the_cache_has_its_index_made_and_kept_nowhere(isolated: Path) -> None:
    config = isolated.parent / "home" / ".config" / "start" / "config.toml"
    write_tree(config.parent, {"config.toml": CACHED})
    loaded = load(use_cache=False)
    index = finding.of_config(loaded)
    pairs = set(zip(index.names, index.kinds, strict=True))
    assert {("notes", "task"), ("triage", "workflow")} <= pairs
    assert not Path(cache.directory()).exists()


def test_meant_suggests_by_a_description_holding_every_word() -> None:
    described = [("triage", "Triage a bug report"), ("compare", "Ask three agents"), ("x", None)]
    assert finding.meant(described, "bug-triage") == ["triage"]
    assert finding.meant(described, "three-agents") == ["compare"]
    assert finding.meant(described, "nothing") == []
