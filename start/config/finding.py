"""Finding a task by what it does (`start find TEXT`, MCP's find_tasks, "did you mean"): the
tasks and workflows ranked by how well their names, aliases and descriptions hold TEXT's words.

The score is a weighted share of TEXT's words found, without a model, so that the same words
always rank the same tasks the same way, and `why` says where each word was found. Each of
TEXT's words (lower case, split at anything that is not a letter or a digit, common words such
as 'the' left out) counts once, at its best place:

- where: 2 in the task's name or alias, 1 in its description (WEIGHTS);
- how: 1 the same word, 0.9 the same stem ('reviews', 'reviewing' and 'review'), 0.7 a prefix of
  at least three letters ('sec' of 'security'), 0.6 spelled close, in a name or alias only
  (difflib's ratio at least 0.8: 'reveiw' for 'review') (HOW).

The score is the sum over TEXT's words divided by the most it could be (2 for each word), so 1.0
means every word is a word of the name or alias. Ties go by name. docs/usage.md, "start find",
says the same for users.

The words are read from an `Index` of them, which the first `start find` after a change makes
and keeps in a file beside the config cache's entry (`of_config`), so that a warm `start find`
over many tasks neither decodes one nor splits its texts again, and a launch never makes it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from start.base.record import Record
from start.config.model import Config, Task

# The fields a task is found by, in the order a word's best place is looked for.
FIELDS: Final = ("name", "alias", "description")
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
# The kind of a workflow's match; a task's is "task", or where it was imported from.
WORKFLOW: Final = "workflow"
# The shape of the index's file (`of_config`): another is a miss.
FORMAT: Final = 1
INDEX: Final = "find"  # the key of the index's columns in its file
# This module, below the package: its code stamp is part of the index file's key.
_MODULE: Final = "config/finding.py"

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
    """A task or workflow that holds some of TEXT's words, its score (0 to 1) and why."""

    name: str
    # task, or where an imported task comes from (claude, gemini, ..., skill), or workflow
    kind: str
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


class Index(Record):
    """The fields of the tasks and workflows as `search` reads them, a column each, without a
    Task record: each one's name, kind and description, and the words of its name, alias and
    description (each text's words in lower case, in order: a word again in a text is worth no
    more than where it was first) one after another in `words`, where `ends` says where each of
    them ends (three a task). Plain data once a tuple, so that `start find` keeps it in a file of
    its own beside the config cache's entry (`of_config`) and a warm `start find` neither decodes
    a task nor splits a text (benchmarks: target 12)."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    descriptions: tuple[str | None, ...]
    words: tuple[str, ...]
    ends: tuple[int, ...]


# What an index is made of, for each task or workflow: its name, alias, description and kind.
_Entry = tuple[str, str | None, str | None, str]


def index(tasks: Iterable[Task], *, named: bool = True) -> Index:
    """The index of `tasks`, in their order; `named=False` leaves their names and aliases out
    (`by_meaning` looks in descriptions only)."""
    return _indexed(
        (
            # task, or where an imported task comes from: claude, gemini, ..., skill
            (task.name, task.alias, task.description,
             "task" if task.imported is None else task.imported.source)
            for task in tasks
        ),
        named=named,
    )  # fmt: skip


def _indexed(entries: Iterable[_Entry], *, named: bool = True) -> Index:
    names: list[str] = []
    kinds: list[str] = []
    descriptions: list[str | None] = []
    found: list[str] = []
    ends: list[int] = []
    split = _WORD.findall
    # Made by the first `start find` after a config changed, at the cost of a split of each
    # text, and little else.
    for name, alias, description, kind in entries:
        names.append(name)
        kinds.append(kind)
        descriptions.append(description)
        if named:
            found += split(name.lower())
            ends.append(len(found))
            if alias:
                found += split(alias.lower())
            ends.append(len(found))
        else:
            ends += (len(found), len(found))
        if description:
            found += split(description.lower())
        ends.append(len(found))
    return Index(tuple(names), tuple(kinds), tuple(descriptions), tuple(found), tuple(ends))


def made(config: Config) -> Index:
    """The index of what `start find` searches in `config`: its tasks not internal, then its
    workflows (kind WORKFLOW)."""
    tasks = index(task for task in config.tasks.values() if not task.internal)
    flows = _indexed(
        (name, None, description, WORKFLOW) for name, description in workflows(config).items()
    )
    return Index(
        tasks.names + flows.names,
        tasks.kinds + flows.kinds,
        tasks.descriptions + flows.descriptions,
        tasks.words + flows.words,
        tasks.ends + tuple(len(tasks.words) + end for end in flows.ends),
    )


def workflows(config: Config) -> dict[str, str | None]:
    """The names and descriptions of the config's workflows (`[workflows.NAME]`, a later layer's
    replacing an earlier one's), read from its layer files as start.config.workflows reads them,
    but neither checked nor their expressions parsed: jmespath stays off `start find`'s path. A
    file that holds no `workflows` is not parsed."""
    from start.config import files
    from start.config.workflows import SECTION

    found: dict[str, str | None] = {}
    for layer_file in config.files:
        if not layer_file.parsed:
            continue
        root = config.root if layer_file.layer == "project" else None
        data, _ = files.read_bytes(layer_file.path, root)
        if data is None or SECTION.encode() not in data:
            continue
        table = files.read(layer_file.path, data).table
        body = table.get(SECTION) if table is not None else None
        if not isinstance(body, dict):
            continue
        for name, workflow in body.items():
            if isinstance(workflow, dict):
                description = workflow.get("description")
                found[name] = description if isinstance(description, str) else None
    return found


def of_config(config: Config) -> Index:
    """The index of what `start find` searches in `config` (`made`): from its file beside the
    config cache's entry the config came from (start.config.cache.source), else made, and
    written there for the next find.

    The file's key is the entry's key and code stamp, and this module's own stamp: an edit of
    any layer file or command file (a task's or a workflow's) or of `start`'s code is another
    key, and so a miss. It is made by `start find` (and find_tasks) alone, never by a launch,
    which pays nothing for it. A file that cannot be read, is of another key or does not have
    exactly the shape written is a miss: the index is made again and the file written again.
    The workflows are read from the files after the load read them: a file changed in between
    is another key for the next load, so what was made from it is not used again."""
    from start.config import cache

    source = cache.source(config)
    own = cache.code_stamp([_MODULE])
    if source is None or own is None:
        return made(config)
    name = cache.beside(source, cache.FIND_ENTRY)
    key = source.key.data + b"%s %d|%s|%s" % (
        cache.FIND_ENTRY.encode(), FORMAT, source.stamp.encode(), own.encode()
    )  # fmt: skip
    raw = cache.read(name)
    payload = None if raw is None else cache.payload_of(raw, key)
    if payload is not None:
        found = _loaded(payload)
        if found is not None:
            return found
    fresh = made(config)
    cache.write(name, cache.pack(key, {INDEX: tuple(fresh)}))
    return fresh


def _loaded(payload: memoryview) -> Index | None:
    """The index `of_config` wrote; None when `payload` does not have exactly its shape (the
    index is then made again, as on a miss)."""
    import marshal

    try:
        data = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if type(data) is not dict or data.keys() != {INDEX}:
        return None
    columns = data[INDEX]
    if type(columns) is not tuple or len(columns) != len(Index._fields):
        return None
    names, kinds, descriptions, found, ends = columns
    if not all(type(column) is tuple for column in columns):
        return None
    count = len(names)
    if (
        len(kinds) != count
        or len(descriptions) != count
        or len(ends) != 3 * count
        or not set(map(type, names)) | set(map(type, kinds)) | set(map(type, found)) <= _STR
        or not set(map(type, descriptions)) <= _OPTIONAL_STR
        or not set(map(type, ends)) <= _INT
        or not all(map(operator.le, (0, *ends), (*ends, len(found))))
    ):
        return None
    return Index(names, kinds, descriptions, found, ends)


_STR: Final = frozenset({str})
_OPTIONAL_STR: Final = frozenset({str, type(None)})
_INT: Final = frozenset({int})


def rank(tasks: Iterable[Task], text: str, limit: int | None = LIMIT) -> list[Match]:
    """The tasks that hold any of TEXT's words, best first (ties by name), at most `limit`."""
    return search(index(tasks), text, limit)


def search(
    found: Index,
    text: str,
    limit: int | None = LIMIT,
    keep: Callable[[int], bool] | None = None,
) -> list[Match]:
    """`rank` over an index's tasks and workflows: those that hold any of TEXT's words, best
    first (ties by name), at most `limit`; only those at the places in the index that `keep`
    keeps, when it is given (find_tasks: those offered)."""
    wanted = words(text)
    if not wanted:
        return []
    most = WEIGHTS["name"] * len(wanted)
    matcher = _Matcher(wanted)
    # Ties go by name, then by the place in the index (as a stable sort by name would), which
    # no two tasks share: the lists of where the words were found are never compared.
    scored = [
        (-round(total / most, 2), found.names[at], at, best)
        for at, total, best in matcher.scan(found)
        if total and (keep is None or keep(at))
    ]
    if limit is None:
        scored.sort()
    else:
        import heapq  # the few shown of many

        scored = heapq.nsmallest(limit, scored)
    return [
        Match(name, found.kinds[at], -score, matcher.hits(best), found.descriptions[at])
        for score, name, at, best in scored
    ]


# Where a word was found, as which word, and how: a Hit without its word, until it is shown.
_Found = tuple[str, str, str]
# A word of a task's text, in a field: the places of TEXT's words it matches, what it is worth
# to each there, and where and how it matched.
_Worth = tuple[tuple[int, float, _Found], ...]


class _Matcher:
    """TEXT's words against an index's tasks, at a cost a ranking of 1,000 tasks can pay on a
    warm launch's time (benchmarks: target 12): what a word of a task is worth to each of
    TEXT's words is worked out once a ranking for each field it is in, and only for TEXT's words
    that may match it: whose root (the stem, less a 'y' it gained) it starts with, as any word
    that matches them as itself, its stem or a prefix does, or, in a name or alias, that share
    a letter with it (a spelling, of words of SPELLING_LETTERS or more)."""

    def __init__(self, wanted: Sequence[str]) -> None:
        self.wanted = [(word, stem(word), _root(word), frozenset(word)) for word in wanted]
        self._worth: list[dict[str, _Worth]] = [{} for _ in FIELDS]
        # What a word of a task holds to match any of TEXT's words at all: a root to start
        # with, or, in a name or alias, a letter of one that may be spelled close.
        self._roots = tuple(root for _, _, root, _ in self.wanted)
        self._spelled = frozenset().union(
            *(letters for word, _, _, letters in self.wanted if len(word) >= SPELLING_LETTERS)
        )

    def hits(self, best: Sequence[_Found | None]) -> tuple[Hit, ...]:
        """The hits of `best`'s words: a record made only for a match that is shown."""
        return tuple(
            Hit(word, *found)
            for (word, _, _, _), found in zip(self.wanted, best, strict=True)
            if found is not None
        )

    def scan(self, found: Index) -> list[tuple[int, float, list[_Found | None]]]:
        """Each task of `found` that holds any of TEXT's words: its place in the index, what
        the words are worth together, and where each is worth most (the first place of the
        most it is worth: name, then alias, then description, each in its words' order)."""
        words, ends, worths, roots = found.words, found.ends, self._worth, self._roots
        spelled, count = self._spelled, len(self.wanted)
        scanned = []
        start = 0
        for at in range(len(found.names)):
            values: list[float] | None = None
            best: list[_Found | None] = []
            for place in range(3):
                end = ends[3 * at + place]
                if end == start:
                    continue
                known = worths[place]
                for target in words[start:end]:
                    worth = known.get(target)
                    if worth is None:
                        may = target.startswith(roots) or (
                            place < 2
                            and len(target) >= SPELLING_LETTERS
                            and not spelled.isdisjoint(target)
                        )
                        worth = known[target] = self._worth_of(place, target) if may else ()
                    for i, value, where in worth:
                        if values is None:
                            values, best = [0.0] * count, [None] * count
                        if value > values[i]:
                            values[i], best[i] = value, where
                start = end
            if values is not None:
                scanned.append((at, sum(values), best))
        return scanned

    def _worth_of(self, place: int, target: str) -> _Worth:
        """What `target`, a word of a task's FIELDS[place], is worth to each of TEXT's words."""
        field = FIELDS[place]
        weight = WEIGHTS[field]
        named = field != "description"
        target_stem = stem(target)
        worth = []
        for i, (word, stemmed, root, letters) in enumerate(self.wanted):
            if not target.startswith(root) and not (
                named
                and min(len(word), len(target)) >= SPELLING_LETTERS
                and not letters.isdisjoint(target)
            ):
                continue  # no match: see the class's docstring
            how = _how(word, stemmed, letters, target, target_stem, named=named)
            if how is not None:
                worth.append((i, weight * HOW[how], (field, target, how)))
        return tuple(worth)


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
    described = (task for task in tasks.values() if not task.internal and task.description)
    return meant(((task.name, task.description) for task in described), name, most)


def meant(described: Iterable[tuple[str, str | None]], name: str, most: int = 3) -> list[str]:
    """`by_meaning` over names and their descriptions (a workflow's, say): those whose
    description holds every one of the words of `name`, best first, at most `most`."""
    wanted = words(name)
    if not wanted:
        return []
    entries = ((named, None, description, "") for named, description in described if description)
    found = _indexed(entries, named=False)
    scored = [
        (-total, found.names[at]) for at, total, best in _Matcher(wanted).scan(found) if all(best)
    ]
    return [task for _, task in sorted(scored)[:most]]
