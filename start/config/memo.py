"""What a project's launches compute from its bytes, remembered by those bytes for the next one.

A launch in an approved project takes the SHA-256 of every file the approval covers, and of the
list of them (the fingerprint), and parses and checks the approval record: the same answers from
the same bytes, launch after launch, for a digest library (hashlib loads OpenSSL) and a JSON
parser that the launch needs for nothing else. Each answer is a function of its bytes alone, so
it is remembered by them: the bytes themselves are the key, compared whole (a dict of bytes), never
a digest of them. A changed byte of any file, or of the approval record, is another key: its
answer is computed again. There is nothing else to invalidate.

One entry per project root, in the config cache's directory (`start.config.cache.read` and
`write`: a private file of ours in a directory of ours), holds the answers one launch used, and is
written again only when a launch computed one it did not hold. An entry that cannot be read, or
does not have exactly the shape `save` writes, remembers nothing. Only a computation puts an
answer here, and a remembered answer that is wrong fails safe: a digest that disagrees with the
config cache's is computed again (start.config.load), and a trust check that finds no approval
checks again with nothing remembered (start.trust.check).
"""

from __future__ import annotations

import marshal
from typing import Any

from start.base import fs
from start.config import cache

# The shape of an entry; another is a miss (with the config cache's own FORMAT, in its head).
FORMAT = 1
# The kinds of answers: a SHA-256 by the bytes digested (`sha256`), a project's fingerprint by its
# entries (start.trust.scan), an approval record by its bytes (start.trust.store).
SHA256 = "sha256"
FINGERPRINT = "fingerprint"
RECORD = "record"
KINDS = (SHA256, FINGERPRINT, RECORD)

_Answers = dict[str, dict[bytes, Any]]


class Memo:
    """The answers remembered for one project root, read when first asked."""

    __slots__ = ("_known", "changed", "forgotten", "hits", "key", "made", "name", "used")

    def __init__(self, root: str) -> None:
        place = root.encode("utf-8", "surrogateescape")
        self.name = cache.entry_name(place, cache.MEMO_ENTRY)
        self.key = cache.head() + b"memo %d|%d|%s" % (FORMAT, len(place), place)
        self._known: _Answers | None = None
        # Since the entry was read or last written, the answers taken from it, and those
        # computed: what the next write keeps.
        self.used: _Answers = _none()
        self.made: _Answers = _none()
        self.hits = 0  # answers taken from the entry
        self.changed = False  # an answer computed is not the entry's: the entry is to be written
        self.forgotten = False  # no answer is taken from the entry (`forget`)

    def known(self) -> _Answers:
        if self._known is None:
            self._known = _read(self.name, self.key)
        return self._known

    def get(self, kind: str, key: bytes) -> Any:
        """The answer remembered for `key`, or None."""
        found = self.made[kind].get(key)
        if found is None and not self.forgotten:
            used = self.used[kind]
            found = used.get(key)
            if found is None:
                found = self.known()[kind].get(key)
                if found is None:
                    return None
                used[key] = found
            self.hits += 1
        return found

    def put(self, kind: str, key: bytes, answer: Any) -> None:
        """Remember `answer`, just computed from `key`."""
        self.made[kind][key] = answer
        if self.known()[kind].get(key) != answer:
            self.changed = True

    def sha256(self, data: bytes) -> str:
        """The SHA-256 of `data` (start.base.fs.sha256), remembered."""
        found = self.get(SHA256, data)
        if type(found) is str and len(found) == 64:
            return found
        return self.digest(data)

    def digest(self, data: bytes) -> str:
        """The SHA-256 of `data`, computed (whatever is remembered) and remembered."""
        digest = fs.sha256(data)
        self.put(SHA256, data, digest)
        return digest

    def forget(self) -> None:
        """Take no answer from the entry until the next `save`: each is computed again, and
        the entry written again if one is not what it held."""
        self.used = _none()
        self.forgotten = True

    def save(self) -> None:
        """Write the answers taken or computed since the entry was read, when one computed is
        not the entry's; then start over with those as the entry's."""
        if self.changed:
            answers = {kind: self.used[kind] | self.made[kind] for kind in KINDS}
            cache.write(self.name, cache.pack(self.key, answers))
            self._known = answers
        self.used, self.made = _none(), _none()
        self.changed = self.forgotten = False


def _none() -> _Answers:
    return {kind: {} for kind in KINDS}


def _read(name: str, key: bytes) -> _Answers:
    """The entry's answers by kind; none when it is missing, of another root or Python, or not
    exactly a table of answers by bytes for each kind."""
    empty = _none()
    raw = cache.read(name)
    payload = None if raw is None else cache.payload_of(raw, key)
    if payload is None:
        return empty
    try:
        found = marshal.loads(payload)
    except Exception:  # whatever is wrong with the bytes, they remember nothing
        return empty
    if (
        type(found) is not dict
        or found.keys() != set(KINDS)
        or not all(type(answers) is dict for answers in found.values())
        or not all(set(map(type, answers)) <= {bytes} for answers in found.values())
    ):
        return empty
    return found


# One memo for each root a process launches in, so that loading the config and checking trust
# share the answers of one launch, and write them once.
_MEMOS: dict[tuple[str, str], Memo] = {}


def of(root: str) -> Memo:
    """The memo of the project at `root`, in the current state directory."""
    place = (cache.directory(), root)
    memo = _MEMOS.get(place)
    if memo is None:
        memo = _MEMOS[place] = Memo(root)
    return memo
