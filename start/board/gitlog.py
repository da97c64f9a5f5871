"""The board's log of operations on a ref of its own in the project's git repository, and its
exchange with a remote (docs/board-sync-design.md, "The log on a ref of its own" and "Confirmed
by a push").

Only git's plumbing, run as the user's own `git` with an argv list (never a shell): objects are
written with hash-object and mktree, commits with commit-tree, refs moved with update-ref (a
compare-and-swap), the remote reached by fetch and push with a lease. The index, the work tree,
HEAD and every branch are never read or written. The remote's log is other people's input: each
operation is read through start.board.oplog (bounded, checked, forged names refused), a path
that is no operation's is refused, and a remote ref that was rewritten is refused whole.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from start.base.errors import StartError
from start.base.record import Record
from start.board.oplog import MOST_OP_BYTES, Refused, is_origin, union
from start.board.replay import Entry

# The log's ref, here and on the remote: under refs/start/, so no forge shows it as a branch and
# no clone fetches it unless asked; the remote's, as last fetched, beside it.
REF: Final = "refs/start/board"
REMOTE_REF: Final = "refs/start/remote-board"
FORMAT: Final = b"start.board.log 1\n"
# Operations are kept as ops/ORIGIN/BUCKET/REST, seq = BUCKET * FANOUT + REST: each commit
# rewrites the few small trees on its operations' paths, never a folder of all of them.
FANOUT: Final = 256
# The most operations a log may hold, and commits its history: a remote of more is refused
# with a message rather than read into memory.
MOST_OPS: Final = 500_000
MOST_COMMITS: Final = 500_000
# The most bytes of operations a sync reads from a log (those it has not read before, each
# at most MOST_OP_BYTES): a remote of more is refused whole, before any is read.
MOST_READ_BYTES: Final = 256 << 20
# The longest field (a path, a line of git's) read from git's output: git's paths are far
# shorter, and a longer one is no log start writes.
MOST_FIELD_BYTES: Final = 1 << 16
# How many times a sync fetches again after its push lost the race to another machine's.
ATTEMPTS: Final = 20
# Who a commit of the log names: the board, not the user (no name or address of theirs leaves
# the machine through the log, and a repository without user.name still syncs).
_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "start board",
    "GIT_AUTHOR_EMAIL": "board@start.invalid",
    "GIT_COMMITTER_NAME": "start board",
    "GIT_COMMITTER_EMAIL": "board@start.invalid",
}
# Variables that would point git at another repository, index or work tree than the project's.
_REDIRECTS: Final = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_COMMON_DIR",
)  # fmt: skip


class GitLogError(StartError):
    """The log cannot be read or written: git failed, or the remote's log is not one start
    takes (rewritten, too large). Its message names the repository, the remote and the fix."""


class Log(Record):
    """A log as read from a ref: its tip, each operation's bytes by name, where each first
    appeared in the ref's first-parent history (1 the oldest commit), and what was refused."""

    tip: str | None
    ops: Mapping[str, bytes]
    positions: Mapping[str, int]
    refused: tuple[Refused, ...]
    # Each operation's blob id, read or not: two blobs of one id hold the same bytes.
    oids: Mapping[str, str] = {}
    commits: int = 0  # the commits of its first-parent history (read with its history)


class Synced(Record):
    """What a sync did: the operations that arrived, those it pushed, those it refused, and the
    remote's tip after it (None: the remote has no log yet and nothing was pushed)."""

    arrived: tuple[str, ...]
    pushed: tuple[str, ...]
    refused: tuple[Refused, ...]
    tip: str | None
    # This machine's log as the sync left it, when it is the remote's log (nothing refused):
    # its operations' ids and places, and the bytes read of them; what `taking` needs, so
    # that it lists neither log again. None: `taking` reads it.
    log: Log | None = None


# --- git -------------------------------------------------------------------------------------


# Settings every git of the log runs with, after the user's own: a fetch or push that starts
# git's automatic gc runs it before it returns, never in the background, where it packs and
# removes loose objects that the log's next mktree names (thousands of operations are thousands
# of loose blobs: "object ... is unavailable").
_SETTINGS: Final = (("gc.autoDetach", "false"), ("maintenance.autoDetach", "false"))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
    count = env.get("GIT_CONFIG_COUNT", "0")
    first = int(count) if count.isascii() and count.isdigit() else 0
    for index, (key, value) in enumerate(_SETTINGS, first):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env["GIT_CONFIG_COUNT"] = str(first + len(_SETTINGS))
    return env | _IDENTITY | {"LC_ALL": "C"}


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """git's stdout for `args` in `repo`; GitLogError with its stderr when it fails."""
    found = _run(repo, *args, stdin=stdin)
    if found.returncode != 0:
        said = found.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitLogError(
            f"git {args[0]} failed in {repo} (exit {found.returncode}): "
            f"{said[-1] if said else 'no message'}"
        )
    return found.stdout


def _run(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args],
            input=stdin if stdin is not None else b"",
            capture_output=True,
            env=_env(),
            check=False,
        )
    except FileNotFoundError:
        raise GitLogError(
            "git is not on PATH: the board syncs through your own git; install it, or unset "
            "board_remote"
        ) from None


def tip(repo: Path, ref: str) -> str | None:
    """The commit `ref` names; None when there is no such ref."""
    found = _run(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return found.stdout.decode("ascii").strip() if found.returncode == 0 else None


# --- paths ----------------------------------------------------------------------------------


def path(name: str) -> str:
    """Where operation `name` (ORIGIN/SEQ) is kept in the log's tree."""
    origin, _, seq = name.partition("/")
    bucket, rest = divmod(int(seq), FANOUT)
    return f"ops/{origin}/{bucket}/{rest}"


# A bucket's or a rest's name: a number in ASCII digits, without leading zeros.
_NUMBER: Final = re.compile(r"0|[1-9][0-9]*")


def name_of(found: str) -> str | None:
    """The operation a path of the tree keeps; None for a path that keeps none."""
    parts = found.split("/")
    if len(parts) != 4 or parts[0] != "ops" or not is_origin(parts[1]):
        return None
    bucket, rest = parts[2], parts[3]
    if not (_NUMBER.fullmatch(bucket) and _NUMBER.fullmatch(rest)):
        return None
    if len(bucket) > 16 or int(rest) >= FANOUT:
        return None
    seq = int(bucket) * FANOUT + int(rest)
    return f"{parts[1]}/{seq}" if seq > 0 else None


# --- reading a log ---------------------------------------------------------------------------


def read(
    repo: Path,
    ref: str,
    *,
    history: bool = True,
    wanted: Callable[[str, str], bool] = lambda name, oid: True,
    what: str | None = None,
) -> Log:
    """The log at `ref`: every operation of its tip's tree by its blob's id, the bytes of
    those `wanted` (by name and id: a sync reads only what it has not read before), and (with
    `history`: the remote's log) where each first appeared in its history. `what` names the log
    in a message. A path that is no operation's, an entry that is no file or is over the limit,
    and a path that a later commit changed or removed (a rewritten log) are refused by name,
    and the rest is read; a log of more entries or commits than the limits, or (the remote's)
    of more bytes to read, is refused whole (GitLogError), before any operation is read. This
    machine's own log (REF) is read without its history: what it holds is what this machine
    took, wherever its commits came from."""
    what = what or ref
    at = tip(repo, ref)
    if at is None:
        return Log(None, {}, {}, ())
    oids: dict[str, str] = {}
    reading: dict[str, tuple[str, int]] = {}
    refused: list[Refused] = []
    for mode, kind, oid, size, where in _tree(repo, at, what):
        if where == "format":
            continue
        name = name_of(where)
        if name is None:
            refused.append(
                Refused(where, f"{where}: no operation's path in the board's log; it is not read")
            )
        elif kind != "blob" or mode not in ("100644", "100755") or not size.isdigit():
            refused.append(Refused(name, f"operation {name}: not a file; it is not read"))
        elif int(size) > MOST_OP_BYTES:
            refused.append(Refused(name, (
                f"operation {name}: {int(size):,} bytes, over the limit of {MOST_OP_BYTES:,}; "
                "it is not read")))  # fmt: skip
        else:
            oids[name] = oid
            if wanted(name, oid):
                reading[name] = (oid, int(size))
    positions, rewritten, commits = _history(repo, at, what) if history else ({}, set(), 0)
    refused[:0] = [
        Refused(name, f"operation {name}: a later commit of {ref} changed or removed it, and "
                      "the log only grows; it is not read")
        for name in sorted(rewritten)
    ]  # fmt: skip
    for name in rewritten:
        oids.pop(name, None)
        reading.pop(name, None)
    total = sum(size for _, size in reading.values())
    if total > MOST_READ_BYTES and history:
        raise GitLogError(
            f"{what} holds {total:,} bytes of operations this machine has not read, over the "
            f"limit of {MOST_READ_BYTES:,} a sync reads: start reads none of it, and nothing here "
            "is lost; ask who writes the board's log to start a new one"
        )
    contents = _contents(repo, [oid for oid, _ in reading.values()])
    ops = {name: contents[oid] for name, (oid, _) in reading.items()}
    placed = {n: p for n, p in positions.items() if n in oids}
    return Log(at, ops, placed, tuple(refused), oids, commits)


def _fields(repo: Path, *args: str) -> Iterator[bytes]:
    """Each NUL-terminated field of what `git args` writes, as git writes it: a listing of
    millions of entries is never held in memory at once. GitLogError when git fails, or writes
    a field longer than MOST_FIELD_BYTES."""
    import tempfile

    with tempfile.TemporaryFile() as said:
        try:
            process = subprocess.Popen(
                ["git", "-C", str(repo), *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=said,
                env=_env(),
            )
        except FileNotFoundError:
            raise GitLogError(
                "git is not on PATH: the board syncs through your own git; install it, or unset "
                "board_remote"
            ) from None
        assert process.stdout is not None
        try:
            rest = b""
            while chunk := os.read(process.stdout.fileno(), 1 << 16):
                *done, rest = (rest + chunk).split(b"\0")
                if max((len(rest), *map(len, done))) > MOST_FIELD_BYTES:
                    raise GitLogError(
                        f"git {args[0]} in {repo} listed a path or line of more than "
                        f"{MOST_FIELD_BYTES:,} bytes, which no board's log has: start reads none "
                        "of it, and nothing here is lost; ask who writes the board's log to start "
                        "a new one"
                    )
                yield from done
            if rest:
                yield rest
            code = process.wait()
        finally:
            if process.poll() is None:  # left early: what is left of the listing is not read
                process.kill()
            process.stdout.close()
            process.wait()
        if code != 0:
            said.seek(0)
            lines = said.read(1 << 16).decode("utf-8", "replace").strip().splitlines()
            raise GitLogError(
                f"git {args[0]} failed in {repo} (exit {code}): "
                f"{lines[-1] if lines else 'no message'}"
            )


def _tree(repo: Path, at: str, what: str) -> Iterator[tuple[str, str, str, str, str]]:
    """Each entry of the tree of commit `at`, recursively: mode, type, id, size and path, read
    as git lists them; GitLogError once there are more than MOST_OPS of them (and `format`)."""
    count = 0
    for entry in _fields(repo, "ls-tree", "-r", "-l", "-z", "--full-tree", at):
        if not entry:
            continue
        count += 1
        if count > MOST_OPS + 1:
            raise GitLogError(
                f"{what} holds more than {MOST_OPS:,} entries, over the limit of {MOST_OPS:,} "
                "operations a log may hold: start reads none of it, and nothing here is lost; "
                "ask who writes the board's log to start a new one"
            )
        head, _, where = entry.partition(b"\t")
        mode, kind, oid, size = [*head.decode("ascii", "replace").split(), "", "", "", ""][:4]
        yield mode, kind, oid, size, where.decode("utf-8", "replace")


def _history(repo: Path, at: str, what: str) -> tuple[dict[str, int], set[str], int]:
    """Where each operation's path first appeared in the first-parent history of `at` (1 the
    oldest commit), the operations a later commit modified or deleted, and the count of
    commits, read as git lists them; GitLogError for a history of more than MOST_COMMITS
    commits or MOST_OPS paths."""
    positions: dict[str, int] = {}
    rewritten: set[str] = set()
    commits = 0
    fields = _fields(
        repo, "log", "--first-parent", "--reverse", "--root", "--no-renames", "--name-status",
        "-z", "--format=%x01%H", f"--max-count={MOST_COMMITS + 1}", at,
    )  # fmt: skip
    for field in fields:
        text = field.decode("utf-8", "replace").lstrip("\n")
        if text.startswith("\x01"):
            commits += 1
            continue
        if text not in ("A", "M", "D", "T"):
            continue
        name = name_of(next(fields, b"").decode("utf-8", "replace"))
        if name is None:
            continue
        if text == "A" and name not in positions:
            positions[name] = commits
        elif text != "A":
            rewritten.add(name)
        if len(positions) + len(rewritten) > MOST_OPS:
            raise GitLogError(
                f"{what} has written more than {MOST_OPS:,} operations in its history, over the "
                "limit a log may hold: start reads none of it, and nothing here is lost; ask who "
                "writes the board's log to start a new one"
            )
    if commits > MOST_COMMITS:
        raise GitLogError(
            f"{what} has more than {MOST_COMMITS:,} commits: start reads none of it, and nothing "
            "here is lost; ask who writes the board's log to start a new one"
        )
    return positions, rewritten, commits


def _contents(repo: Path, oids: Sequence[str]) -> dict[str, bytes]:
    """The bytes of each blob of `oids`, read by one `git cat-file --batch` as it writes them."""
    import tempfile

    if not oids:
        return {}
    found: dict[str, bytes] = {}
    with tempfile.TemporaryFile() as asked, tempfile.TemporaryFile() as said:
        asked.write("".join(f"{o}\n" for o in oids).encode("ascii"))
        asked.seek(0)
        try:
            process = subprocess.Popen(
                ["git", "-C", str(repo), "cat-file", "--batch"],
                stdin=asked, stdout=subprocess.PIPE, stderr=said, env=_env(),
            )  # fmt: skip
        except FileNotFoundError:
            raise GitLogError("git is not on PATH: the board syncs through your own git") from None
        assert process.stdout is not None
        try:
            for oid in oids:
                header = process.stdout.readline(200).decode("ascii", "replace").split()
                if len(header) != 3 or header[1] != "blob" or not header[2].isdigit():
                    raise GitLogError(f"git cat-file did not give blob {oid}: {' '.join(header)}")
                size = int(header[2])
                if size > MOST_OP_BYTES:  # the listing said otherwise: no blob of ours is this
                    raise GitLogError(f"git cat-file gave blob {oid} of {size:,} bytes")
                found[oid] = process.stdout.read(size)
                process.stdout.read(1)  # the newline after each
        finally:
            if process.poll() is None:
                process.kill()
            process.stdout.close()
            process.wait()
    return found


# --- writing a log ---------------------------------------------------------------------------


def commit(
    repo: Path,
    parent: str | None,
    ops: Mapping[str, bytes],
    base: str | None,
    oids: Mapping[str, str] | None = None,
    dropped: Sequence[str] = (),
) -> str:
    """A commit whose tree is the tree of commit `base` (None: none) with `ops` (by name, their
    bytes) and `oids` (by name, blobs already written) added, and whose parent is `parent`:
    written to the repository's objects, no ref moved. An entry of `base`'s tree that this
    machine refused stays as it is (the log only grows, and every machine refuses it alike);
    the operations `dropped` (by name) are left out."""
    entries = _entries(repo, base)
    for name in dropped:
        entries.pop(path(name), None)
    blobs = _blobs(repo, [FORMAT, *ops.values()])
    entries["format"] = ("100644", "blob", blobs[0])
    for name, oid in [*zip(ops, blobs[1:], strict=True), *(oids or {}).items()]:
        entries[path(name)] = ("100644", "blob", oid)
    tree = _mktree(repo, entries)
    count = len(ops) + len(oids or {})
    message = f"start board: {count} operation{'s' if count != 1 else ''}\n"
    args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-m", message]
    return _git(repo, *args).decode("ascii").strip()


def _entries(repo: Path, at: str | None) -> dict[str, tuple[str, str, str]]:
    """Each entry of the tree of commit `at` at an operation's path, as its mode, type and id,
    as they are (one this machine refused too: every machine refuses it alike). Entries at
    other paths are left out: they keep no operation, and no machine reads them."""
    if at is None:
        return {}
    found: dict[str, tuple[str, str, str]] = {}
    for mode, kind, oid, _, where in _tree(repo, at, at):
        if name_of(where) is not None:
            found[where] = (mode, kind, oid)
    return found


def _blobs(repo: Path, contents: Sequence[bytes]) -> list[str]:
    """Write each of `contents` as a blob, with one git process; their ids, in order."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="start-board-") as scratch:
        paths = []
        for number, content in enumerate(contents):
            each = Path(scratch) / str(number)
            each.write_bytes(content)
            paths.append(str(each))
        out = _git(
            repo, "hash-object", "-w", "--no-filters", "--stdin-paths",
            stdin="".join(f"{p}\n" for p in paths).encode(),
        )  # fmt: skip
    return out.decode("ascii").split()


def _mktree(repo: Path, files: Mapping[str, tuple[str, str, str]]) -> str:
    """The tree of `files` (path to mode, type and id), written by one `git mktree --batch` for
    each depth of folders, the deepest first: a handful of processes for any number of files.
    Every path is an operation's or `format`, so no name holds a newline or a tab."""
    folders: dict[str, dict[str, tuple[str, str, str]]] = {"": {}}
    for where, entry in files.items():
        parent, _, leaf = where.rpartition("/")
        folders.setdefault(parent, {})[leaf] = entry
        while parent:  # make every folder above it, down to the root
            above, _, name = parent.rpartition("/")
            folders.setdefault(above, {}).setdefault(name, ("040000", "tree", ""))
            parent = above
    made: dict[str, str] = {}
    for depth in sorted({f.count("/") + bool(f) for f in folders}, reverse=True):
        level = sorted(f for f in folders if f.count("/") + bool(f) == depth)
        text = ""
        for folder in level:
            for leaf, (mode, kind, oid) in sorted(folders[folder].items()):
                if kind == "tree":
                    oid = made[f"{folder}/{leaf}" if folder else leaf]
                text += f"{mode} {kind} {oid}\t{leaf}\n"
            text += "\n"
        out = _git(repo, "mktree", "--batch", stdin=text.encode("ascii")).decode("ascii").split()
        made.update(zip(level, out, strict=True))
    return made[""]


def move(repo: Path, ref: str, new: str, old: str | None) -> bool:
    """Move `ref` from `old` (None: it must not exist) to `new`, as one compare-and-swap;
    whether it moved (False: another process moved it first)."""
    instruction = f"update {ref} {new} {old}\n" if old else f"create {ref} {new}\n"
    found = _run(repo, "update-ref", "--stdin", stdin=instruction.encode("ascii"))
    if found.returncode != 0:
        _unlocked(repo, ref)
    return found.returncode == 0


def _unlocked(repo: Path, ref: str) -> None:
    """GitLogError when git's lock file of `ref` is there: a git that writes the ref holds it,
    or one was killed while it did (a SIGKILL of a sync), and git never removes it by itself:
    every later move would fail as if another process had moved the ref first."""
    common = _run(repo, "rev-parse", "--git-common-dir")
    if common.returncode != 0:
        return
    lock = (repo / os.fsdecode(common.stdout.strip()) / f"{ref}.lock").resolve()
    if lock.exists():
        raise GitLogError(
            f"{lock} is there: a git process is writing {ref} in {repo}, or one was killed "
            "while it did, and git leaves its lock behind; nothing here is lost. If no git is "
            f"running in {repo}, remove {lock} and sync again"
        )


def append(repo: Path, ops: Mapping[str, bytes]) -> str:
    """Add this machine's new operations to its log (REF) as one commit, offline or not; the
    new tip. Retries when another process of this machine appended meanwhile."""
    for _ in range(ATTEMPTS):
        base = read_tip_only(repo, REF)
        made = commit(repo, base.tip, ops, base.tip)
        if move(repo, REF, made, base.tip):
            return made
    raise GitLogError(f"{REF} in {repo} kept moving under {ATTEMPTS} attempts to append: try again")


def drop(repo: Path, names: Sequence[str]) -> None:
    """Take operations `names` out of this machine's log (REF), offline or not: they were
    written again under other names (start.board.journal.renamed), and only those are pushed.
    None of them was pushed (the remote holds others under their names)."""
    for _ in range(ATTEMPTS):
        at = tip(repo, REF)
        if at is None or not names:
            return
        if move(repo, REF, commit(repo, at, {}, at, dropped=names), at):
            return
    raise GitLogError(f"{REF} in {repo} kept moving under {ATTEMPTS} attempts: try again")


def read_tip_only(repo: Path, ref: str) -> Log:
    """A log of `ref`'s tip alone, its operations unread: what `commit` builds upon."""
    return Log(tip(repo, ref), {}, {}, ())


# --- the remote -------------------------------------------------------------------------------


def fetch(repo: Path, remote: str) -> str | None:
    """Fetch the remote's log into REMOTE_REF; its tip (None: the remote has no log yet). The
    ref is taken even when rewritten: `sync` refuses a rewritten one before reading it."""
    found = _run(
        repo, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
        f"+{REF}:{REMOTE_REF}",
    )  # fmt: skip
    if found.returncode != 0:
        listed = _run(repo, "ls-remote", remote, REF)
        if listed.returncode == 0 and not listed.stdout.strip():
            return None  # reachable, and no log yet
        _unlocked(repo, REMOTE_REF)
        said = found.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OfflineError(
            f"the board's remote '{remote}' could not be fetched: "
            f"{_said(said[-1] if said else '')}; the board works on here, and the next sync "
            "brings it up to date"
        )
    return tip(repo, REMOTE_REF)


class OfflineError(GitLogError):
    """The remote cannot be reached: the board works on, and the next sync catches up."""


# The most characters of what git or the remote said that a message quotes.
_SAID: Final = 300


def _said(line: str) -> str:
    """What git (or the remote, through it) said, as a message may quote it: printable, short."""
    kept = "".join(c if c.isprintable() else "?" for c in line.strip())
    return (kept[: _SAID - 1] + "…" if len(kept) > _SAID else kept) or "no message"


def push(repo: Path, remote: str, new: str, expected: str | None) -> bool:
    """Push `new` to the remote's log if the remote's log is still `expected` (None: it has
    none): a compare-and-swap of the ref. Whether the remote took it (False: another machine
    pushed first); OfflineError when the remote refused it otherwise (a hook, a permission, the
    network), which git's words do not tell apart: the remote's ref tells."""
    lease = f"--force-with-lease={REF}:{expected or ''}"
    found = _run(repo, "push", "--porcelain", "--quiet", lease, remote, f"{new}:{REF}")
    if found.returncode == 0:
        return True
    listed = _run(repo, "ls-remote", remote, REF)
    now = listed.stdout.decode("ascii", "replace").split()[:1]
    if listed.returncode == 0 and now != ([expected] if expected else []):
        return False  # it moved: another machine's push came first
    said = found.stdout.decode("utf-8", "replace") + found.stderr.decode("utf-8", "replace")
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    why = next((line for line in lines if line.startswith("remote:")), lines[-1] if lines else "")
    raise OfflineError(
        f"the board's remote '{remote}' did not take the push: {_said(why)}; the board "
        "works on here, and the next sync pushes again"
    )


class ForgedNamesError(GitLogError):
    """The remote's log holds other operations under names this machine wrote and has not
    pushed (a forged name): this machine writes those operations again under free names
    (start.board.syncing), and syncs again."""

    def __init__(self, message: str, names: Sequence[str], used: frozenset[int]) -> None:
        super().__init__(message)
        self.names = tuple(names)  # this machine's operations whose names are taken
        self.used = used  # every number of this machine's origin the remote's log holds


def sync(repo: Path, remote: str, ours: str, now_ms: int | None = None) -> Synced:
    """Fetch the remote's log, take its operations that this machine does not have (refusing
    forged, rewritten and malformed ones, and holding back those whose clock is far ahead of
    `now_ms`, this machine's time), and push this machine's log on top of it with a lease,
    fetching again when another machine pushed first. Only the operations this machine has not
    read before are read. Nothing of this machine's log is ever dropped; REF ends as the
    remote's new tip."""
    import time

    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    seen = tip(repo, REMOTE_REF)
    where = f"the board's log on '{remote}'"
    for _ in range(ATTEMPTS):
        remote_tip = fetch(repo, remote)
        if seen is not None and (remote_tip is None or not _descends(repo, remote_tip, seen)):
            if remote_tip is not None:
                move(repo, REMOTE_REF, seen, remote_tip)  # keep what we saw, not the rewrite
            # Positions are places in the remote's history: a new history would reorder claims
            # that were confirmed, so it is refused whatever it holds.
            what = (
                "removed" if remote_tip is None else f"rewritten ({remote_tip} does not follow it)"
            )
            raise GitLogError(
                f"{where} was {what} since this machine fetched {seen}. "
                "Nothing was taken from it, and nothing here is lost; to put the log back as it "
                f"was: git push --force {remote} {REMOTE_REF}:{REF}"
            )
        if remote_tip is not None and remote_tip == seen and tip(repo, REF) == remote_tip:
            # The remote's log is as this machine last took it, and this machine's log is that
            # log (it appended nothing since, and refused nothing of it): nothing to read or push.
            return Synced((), (), (), remote_tip)
        mine = read(repo, REF, history=False, wanted=lambda name, oid: False)
        try:
            theirs = (
                read(repo, REMOTE_REF, what=where, wanted=_unlike(mine.oids))
                if remote_tip
                else Log(None, {}, {}, ())
            )
        except GitLogError:
            _put_back(repo, seen, remote_tip)  # a log refused whole is not kept as seen
            raise
        missing = {name: oid for name, oid in mine.oids.items() if name not in theirs.oids}
        unreadable = {r.name for r in theirs.refused}
        conflicting = [n for n, oid in mine.oids.items() if theirs.oids.get(n, oid) != oid]
        conflicting += [n for n in missing if n in unreadable]
        if conflicting:
            mark = f"{ours}/"
            used = frozenset(
                int(name.removeprefix(mark))
                for name in [*theirs.oids, *unreadable]
                if name.startswith(mark) and name.removeprefix(mark).isdigit()
            )
            raise ForgedNamesError(
                f"{where} holds other operations under names this machine wrote "
                f"({', '.join(sorted(conflicting)[:3])}): they cannot be pushed under those "
                "names. Nothing here is lost; start board sync writes those not yet pushed "
                "again under free names, and who writes the remote's log can put back the others",
                sorted(conflicting),
                used,
            )
        # What was read is what this machine's log does not hold: each name is new here.
        arriving, refused = union({}, theirs.ops.items(), ours, now)
        refused = [*theirs.refused, *refused]
        if not missing:
            new = remote_tip
        else:
            new = commit(repo, remote_tip, {}, remote_tip, missing)
            if not push(repo, remote, new, remote_tip):
                seen = remote_tip
                continue
            move(repo, REMOTE_REF, new, remote_tip)
        local = new
        if refused and new is not None:  # this machine's log keeps only what it took
            taken = {**mine.oids, **{name: theirs.oids[name] for name in arriving}}
            local = commit(repo, new, {}, None, taken)
        if local is not None and not move(repo, REF, local, mine.tip):
            seen = new
            continue  # this machine appended meanwhile: push that too
        log = None
        if not refused and new is not None:  # this machine's log is the remote's: say it
            pushed_at = theirs.commits + 1  # a commit of our own on the remote's tip
            log = Log(
                new,
                {name: theirs.ops[name] for name in arriving},
                {**theirs.positions, **dict.fromkeys(missing, pushed_at)},
                (),
                {**theirs.oids, **missing},
                theirs.commits + (1 if missing else 0),
            )
        return Synced(
            tuple(sorted(arriving)), tuple(sorted(missing)), tuple(sorted(refused)), new, log
        )
    raise GitLogError(
        f"the board's remote '{remote}' moved under each of {ATTEMPTS} pushes: other machines "
        "are syncing; try again"
    )


def _unlike(held: Mapping[str, str]) -> Callable[[str, str], bool]:
    """Whether an operation (by name and blob id) is one `held` does not hold: what is read."""

    def unlike(name: str, oid: str) -> bool:
        return held.get(name) != oid

    return unlike


def _put_back(repo: Path, seen: str | None, fetched: str | None) -> None:
    """Put REMOTE_REF back to `seen`, the remote's tip as last taken, from `fetched`: a log
    refused whole is read again, whole, by the next sync."""
    if fetched is None or fetched == seen:
        return
    if seen is None:
        _run(repo, "update-ref", "-d", REMOTE_REF, fetched)
    else:
        move(repo, REMOTE_REF, seen, fetched)


def _descends(repo: Path, new: str, old: str) -> bool:
    return _run(repo, "merge-base", "--is-ancestor", old, new).returncode == 0


class Taking(Record):
    """What this machine's log holds that the board has not taken: each operation it does not
    know, decoded, with its place on the remote (None: not pushed); the place of each it knows
    unplaced that is now pushed; and what was refused reading it."""

    entries: tuple[Entry, ...]
    positions: Mapping[str, int]
    refused: tuple[Refused, ...]
    tip: str | None = None  # this machine's log's tip, as read


def taking(
    repo: Path,
    known: Mapping[str, int | None],
    since: str | None = None,
    synced: Log | None = None,
) -> Taking:
    """This machine's log as replay takes it, but for the operations of `known` (the board's,
    by name, with their places on the remote: None while not pushed), which are neither read
    nor decoded again: a sync reads what is new, however long the log. `since`: the tip of
    this machine's log the board last took whole; while the log is still there, nothing is
    new (a place on the remote comes with a push, which moves the log). `synced`: this
    machine's log as the sync that just ended left it (`Synced.log`), which is not listed
    again while it is this machine's log."""
    from start.board.oplog import OperationError, decode

    at = tip(repo, REF)
    if since is not None and at == since:
        return Taking((), {}, (), at)
    if synced is not None and synced.tip == at:
        # Its operations not read by the sync (this machine's own, kept by a sync killed before
        # the board took them) are read now.
        unread = {n: o for n, o in synced.oids.items() if n not in known and n not in synced.ops}
        contents = _contents(repo, list(unread.values()))
        ops = {**synced.ops, **{name: contents[oid] for name, oid in unread.items()}}
        mine = theirs = synced._replace(ops=ops)
    else:
        mine = read(repo, REF, history=False, wanted=lambda name, oid: name not in known)
        theirs = (
            read(repo, REMOTE_REF, wanted=lambda name, oid: False)
            if tip(repo, REMOTE_REF)
            else Log(None, {}, {}, ())
        )
    found: list[Entry] = []
    positions: dict[str, int] = {}
    refused = list(mine.refused)
    for name, oid in sorted(mine.oids.items()):
        # Pushed only if the remote holds these very bytes (one blob id): another operation
        # under its name there (a forgery) confirms nothing of ours.
        position = theirs.positions.get(name) if theirs.oids.get(name) == oid else None
        if name in known:
            if known[name] is None and position is not None:
                positions[name] = position
            continue
        try:
            found.append(Entry(decode(mine.ops[name], name), position))
        except OperationError as error:
            refused.append(Refused(name, str(error)))
    return Taking(tuple(found), positions, tuple(refused), mine.tip)


def entries(repo: Path) -> tuple[list[Entry], tuple[Refused, ...]]:
    """This machine's log as replay takes it: each operation with its place on the remote (as
    last fetched), None for those not yet pushed; and what was refused reading it."""
    every = taking(repo, {})
    return list(every.entries), every.refused
