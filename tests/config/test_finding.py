"""The ranking of `start find` and find_tasks (start.config.finding): words, stems, and the
score's parts as docs/usage.md states them."""

from __future__ import annotations

import pytest

from start.config import finding
from start.config.model import Origin, Task


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
