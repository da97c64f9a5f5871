"""Finding a task by what it does (`start find TEXT`, MCP's find_tasks, "did you mean"): the
tasks ranked by how well their names, aliases and descriptions hold TEXT's words.

The score is a weighted share of TEXT's words found, without a model or an index, so that the
same words always rank the same tasks the same way, and `why` says where each word was found.
Each of TEXT's words (lower case, split at anything that is not a letter or a digit, common
words such as 'the' left out) counts once, at its best place:

- where: 2 in the task's name or alias, 1 in its description (WEIGHTS);
- how: 1 the same word, 0.9 the same stem ('reviews', 'reviewing' and 'review'), 0.7 a prefix of
  at least three letters ('sec' of 'security'), 0.6 spelled close, in a name or alias only
  (difflib's ratio at least 0.8: 'reveiw' for 'review') (HOW).

The score is the sum over TEXT's words divided by the most it could be (2 for each word), so 1.0
means every word is a word of the name or alias. Ties go by name. docs/usage.md, "start find",
says the same for users.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from start.base.record import Record
from start.config.model import Task

# Where a word was found, and what it is worth there.
WEIGHTS: Final[Mapping[str, float]] = {"name": 2.0, "alias": 2.0, "description": 1.0}
# How a word matched, and what it is worth: a share of its place's weight.
HOW: Final[Mapping[str, float]] = {"exact": 1.0, "stem": 0.9, "prefix": 0.7, "spelling": 0.6}
# The fewest letters of a word that may match as a prefix, or be spelled close.
PREFIX_LETTERS: Final = 3
SPELLING_LETTERS: Final = 4
SPELLING_CUTOFF: Final = 0.8
# Words too common to say what a task does.
STOP_WORDS: Final = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "so", "that", "the", "their",
    "them", "then", "this", "to", "up", "what", "when", "which", "with", "you", "your"
})  # fmt: skip
LIMIT: Final = 10  # the matches `start find` shows by default

_WORD = re.compile(r"[^\W_]+")
# Suffixes taken off a word to find its stem, in this order; `es` only after ss, x, z, ch or sh.
_SUFFIXES: Final = (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""), ("er", ""))
_ENDINGS: Final = frozenset(suffix[-1] for suffix, _ in _SUFFIXES)


class Hit(Record):
    """One of TEXT's words found in a task: where, as which word of it, and how."""

    word: str
    field: str  # name, alias or description (WEIGHTS)
    matched: str  # the task's word it matched
    how: str  # exact, stem, prefix or spelling (HOW)


class Match(Record):
    """A task that holds some of TEXT's words, its score (0 to 1) and why."""

    name: str
    kind: str  # task, or where an imported task comes from: claude, gemini, ..., skill
    score: float
    why: tuple[Hit, ...]
    description: str | None

    def as_data(self) -> dict[str, object]:
        """`start find --json`'s and find_tasks' object of one match."""
        return {
            "name": self.name,
            "kind": self.kind,
            "score": self.score,
            "why": [
                {"word": hit.word, "field": hit.field, "matched": hit.matched, "how": hit.how}
                for hit in self.why
            ],
            "description": self.description,
        }


def words(text: str) -> list[str]:
    """TEXT's words to look for, each once, in order: lower case, common words left out (all of
    them kept when nothing else is left)."""
    found = list(dict.fromkeys(_WORD.findall(text.lower())))
    kept = [word for word in found if word not in STOP_WORDS]
    return kept or found


def stem(word: str) -> str:
    """`word` without its first plural or verb ending that leaves three letters or more."""
    if word[-1:] not in _ENDINGS:
        return word
    for suffix, instead in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= PREFIX_LETTERS:
            base = word[: -len(suffix)]
            if suffix == "es" and not base.endswith(("ss", "x", "z", "ch", "sh")):
                continue
            return base + instead
    return word


def kind(task: Task) -> str:
    return task.imported.source if task.imported is not None else "task"


def rank(tasks: Iterable[Task], text: str, limit: int | None = LIMIT) -> list[Match]:
    """The tasks that hold any of TEXT's words, best first (ties by name), at most `limit`."""
    wanted = words(text)
    if not wanted:
        return []
    most = WEIGHTS["name"] * len(wanted)
    matcher = _Matcher(wanted)
    scored: list[tuple[float, str, Task, list[_Found | None]]] = []
    for task in tasks:
        total, best = matcher.best(_texts(task))
        if total:
            scored.append((-round(total / most, 2), task.name, task, best))
    scored.sort(key=lambda entry: entry[:2])
    return [
        Match(task.name, kind(task), -score, matcher.hits(best), task.description)
        for score, _, task, best in (scored if limit is None else scored[:limit])
    ]


def _texts(task: Task) -> list[tuple[str, str]]:
    """The task's name, alias and description, by field."""
    found = [("name", task.name)]
    if task.alias:
        found.append(("alias", task.alias))
    if task.description:
        found.append(("description", task.description))
    return found


# Where a word was found, as which word, and how: a Hit without its word, until it is shown.
_Found = tuple[str, str, str]


class _Matcher:
    """TEXT's words against tasks' fields, at a cost a ranking of 1,000 tasks can pay on a warm
    launch's time (benchmarks: target 12): each text's words and each pair of words are worked
    out once a ranking, and a text is read word by word only for the words that may match in
    it: whose root (the stem, less a 'y' it gained) it holds, as any word that matches them
    does, or, in a name or alias, that share a letter with it (a spelling)."""

    def __init__(self, wanted: Sequence[str]) -> None:
        self.wanted = [(word, stem(word), _root(word), frozenset(word)) for word in wanted]
        self._words: dict[str, list[tuple[str, str]]] = {}
        self._stems: dict[str, str] = {}
        self._how: dict[tuple[str, str, bool], str | None] = {}

    def hits(self, best: Sequence[_Found | None]) -> tuple[Hit, ...]:
        """The hits of `best`'s words: a record made only for a match that is shown."""
        return tuple(
            Hit(word, *found)
            for (word, _, _, _), found in zip(self.wanted, best, strict=True)
            if found is not None
        )

    def best(self, texts: Sequence[tuple[str, str]]) -> tuple[float, list[_Found | None]]:
        """Where each of TEXT's words is worth most in `texts` ((field, text) pairs), and
        what they are worth together; 0 when none is there."""
        best: list[_Found | None] = [None] * len(self.wanted)
        values = [0.0] * len(self.wanted)
        for field, text in texts:
            weight = WEIGHTS[field]
            named = field != "description"
            lowered = text.lower()
            targets: list[tuple[str, str]] | None = None
            for index, (word, stemmed, root, letters) in enumerate(self.wanted):
                spelled = named and len(word) >= SPELLING_LETTERS
                if (
                    values[index] >= weight
                    or (root not in lowered and not spelled)
                    or letters.isdisjoint(lowered)
                ):
                    continue
                if targets is None:
                    targets = self.words(lowered)
                for target, target_stem in targets:
                    key = (word, target, named)
                    if key in self._how:
                        how = self._how[key]
                    else:
                        how = _how(word, stemmed, letters, target, target_stem, named=named)
                        self._how[key] = how
                    if how is not None and weight * HOW[how] > values[index]:
                        best[index] = (field, target, how)
                        values[index] = weight * HOW[how]
                        if values[index] >= weight:
                            break
        return sum(values), best

    def words(self, lowered: str) -> list[tuple[str, str]]:
        """The words of a text in lower case, each once, with its stem."""
        found = self._words.get(lowered)
        if found is None:
            stems = self._stems
            found = self._words[lowered] = [
                (word, stems.get(word) or stems.setdefault(word, stem(word)))
                for word in dict.fromkeys(_WORD.findall(lowered))
            ]
        return found


def _root(word: str) -> str:
    """What any word that matches `word` (the same, the same stem, or `word` as its prefix)
    holds: the stem, less a 'y' that stands for 'ies' ('polic' of 'policies')."""
    stemmed = stem(word)
    return stemmed[:-1] if stemmed.endswith("y") else stemmed


def _how(
    word: str,
    stemmed: str,
    letters: frozenset[str],
    target: str,
    target_stem: str,
    *,
    named: bool,
) -> str | None:
    if word == target:
        return "exact"
    if stemmed == target_stem:
        return "stem"
    if len(word) >= PREFIX_LETTERS and target.startswith(word):
        return "prefix"
    if not named or min(len(word), len(target)) < SPELLING_LETTERS or letters.isdisjoint(target):
        return None
    # difflib's ratio is at most twice the letters the words share over their lengths (its
    # quick_ratio): most pairs are ruled out by that alone, without building a matcher.
    shared = sum(min(word.count(c), target.count(c)) for c in letters if c in target)
    if 2 * shared >= SPELLING_CUTOFF * (len(word) + len(target)):
        import difflib  # only for the names' words that match no other way

        if difflib.SequenceMatcher(None, word, target).ratio() >= SPELLING_CUTOFF:
            return "spelling"
    return None


def why(match: Match) -> str:
    """What `start find` shows of a match's hits: 'name: review; description: diffs~diff'
    (a word that matched another word of the task shows both, '~' between)."""
    by_field: dict[str, list[str]] = {}
    for hit in match.why:
        shown = hit.word if hit.how == "exact" else f"{hit.word}~{hit.matched}"
        by_field.setdefault(hit.field, []).append(shown)
    return "; ".join(f"{field}: {', '.join(shown)}" for field, shown in by_field.items())


def by_meaning(tasks: Mapping[str, Task], name: str, most: int = 3) -> list[str]:
    """The tasks that a task name that does not exist may have meant by its words (split at
    '-', '_', ':' and the like): those not internal whose description holds every one of them
    (as `rank` matches a word: itself, its stem or a prefix), best first, at most `most`. The
    names' likeness is the spelling's part of the hint (start.base.errors.suggest)."""
    wanted = words(name)
    if not wanted:
        return []
    matcher = _Matcher(wanted)
    found: list[tuple[float, str]] = []
    for task in tasks.values():
        if task.internal or not task.description:
            continue
        total, best = matcher.best([("description", task.description)])
        if all(best):
            found.append((-total, task.name))
    return [task for _, task in sorted(found)[:most]]
