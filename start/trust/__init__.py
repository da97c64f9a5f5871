"""Project-config trust: a project's `.start/` runs nothing until the user approves its exact bytes.

An approval is keyed by the real path of the project root and a SHA-256 over every file in
`.start/`, every project role file, and the real path of every file outside the root that a project
item names. It also pins the bytes of the project's Taskfile, apart from that key: a changed
Taskfile stops `start mcp` offering its tasks (`vouched`), not a launch. Records live one per
approval under `$XDG_STATE_HOME/start/trust/`. This package decides and records; it never prints or
prompts. `grant` returns what a launch may read, or raises `TrustRequired`, which carries what the
caller needs to ask the user.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from start.base import paths
from start.base.errors import Problem, StartError, UntrustedError
from start.base.record import Record
from start.base.wall import Grant
from start.config import memo
from start.config.model import Config
from start.trust.review import Defined, Mention, Review, changes, is_text, review
from start.trust.scan import (
    FILE,
    FILE_LIMIT,
    MISSING,
    OTHER,
    OUTSIDE,
    SYMLINK,
    Entry,
    Scan,
    scan,
    unsafe_message,
    within,
)
from start.trust.store import Approval, approve, lookup, records, revoke

ENV_TRUSTED_PATHS = "START_TRUSTED_PATHS"

__all__ = [
    "ENV_TRUSTED_PATHS",
    "FILE",
    "MISSING",
    "OTHER",
    "OUTSIDE",
    "SYMLINK",
    "Approval",
    "Defined",
    "Entry",
    "Grant",
    "Mention",
    "Review",
    "Scan",
    "TrustRequired",
    "Verdict",
    "approve",
    "changes",
    "check",
    "describe",
    "grant",
    "is_text",
    "records",
    "review",
    "revoke",
    "scan",
    "self_edit",
    "trusted_prefixes",
    "unsafe_message",
    "vouched",
    "withheld",
]


class Verdict(Record):
    trusted: bool
    reason: str
    scan: Scan | None
    record: Approval | None = None
    warnings: tuple[str, ...] = ()
    everything: bool = False  # trusted by a prefix (START_TRUSTED_PATHS, settings.trusted_paths)
    # Why the project's Taskfile is not approved as it is now; None when it is, or there is none.
    taskfile: str | None = None


class TrustRequired(UntrustedError):
    """The project's `.start/` is not approved: exit 5, unless the caller asks and approves."""

    def __init__(self, config: Config, verdict: Verdict) -> None:
        assert verdict.scan is not None
        self.config = config
        self.verdict = verdict
        self.scan = verdict.scan
        super().__init__(
            f"{self.scan.subject} is not trusted "
            f"({verdict.reason.removeprefix('not trusted: ')}); run 'start trust' to review it"
        )

    def review(self) -> Review:
        return review(self.config, self.scan, self.verdict.warnings)


# --- deciding -------------------------------------------------------------------------------


def trusted_prefixes(environ: Mapping[str, str] | None = None) -> tuple[list[str], list[str]]:
    """`START_TRUSTED_PATHS` as real absolute prefixes, and warnings for entries ignored."""
    value = (os.environ if environ is None else environ).get(ENV_TRUSTED_PATHS, "")
    prefixes: list[str] = []
    warnings: list[str] = []
    for part in value.split(os.pathsep):
        if not part:
            continue
        if not os.path.isabs(part):
            warnings.append(f"{ENV_TRUSTED_PATHS}: ignoring '{part}': not an absolute path")
            continue
        prefixes.append(os.path.realpath(part))
    return prefixes, warnings


def check(config: Config) -> Verdict:
    """Whether the project layer of `config` may be used, and why. Never prompts.

    What earlier checks computed from the same bytes (the files' digests, the project's
    fingerprint, the approval record) is remembered (start.config.memo), and remembered again.
    A project found not trusted with anything remembered is checked again with nothing
    remembered: what a launch remembers can make it ask, never skip the question.
    """
    digests = memo.of(config.root)
    used = digests.hits
    verdict = _check(config)
    if not verdict.trusted and digests.hits != used:
        digests.forget()
        verdict = _check(config)
    digests.save()
    return verdict


def _check(config: Config) -> Verdict:
    found = scan(config)
    if found is None:
        ignored = config.layer_dirs.get("project") is None and config.project.start_dir is not None
        return Verdict(True, "project config ignored" if ignored else "no project config", None)
    if found.unsafe:
        return Verdict(False, f"not trusted: {found.unsafe[0]}", found)
    reason, warnings = _by_path(config, found.root)
    if reason is not None:
        return Verdict(True, reason, found, None, tuple(warnings), everything=True)
    record, more = lookup(found)
    warnings.extend(more)
    taskfile = _taskfile_withheld(config.root, found, record)
    if record is not None:
        approved = f"approved {record.approved[:10]}"
        return Verdict(True, approved, found, record, tuple(warnings), taskfile=taskfile)
    earlier, more = records(found.root)
    warnings.extend(m for m in more if m not in warnings)
    if not earlier:
        reason = "not trusted: never approved"
        return Verdict(False, reason, found, None, tuple(warnings), taskfile=taskfile)
    found_changes = changes(found, earlier[-1], diff=False)
    statuses = [c.status for c in found_changes if c.what != OUTSIDE]
    counts = [(s, statuses.count(s)) for s in ("changed", "added", "removed") if s in statuses]
    parts = [
        f"{n} file{'s' if n != 1 else ''} {status}" if i == 0 else f"{n} {status}"
        for i, (status, n) in enumerate(counts)
    ]
    leaving = sum(1 for c in found_changes if c.what == OUTSIDE and c.status == "added")
    if leaving:
        parts.append(f"{leaving} more file{'s' if leaving != 1 else ''} outside the project root")
    reason = f"not trusted: {', '.join(parts) or 'files changed'} since approval"
    return Verdict(False, reason, found, None, tuple(warnings), taskfile=taskfile)


def _taskfile_withheld(root: str, found: Scan, record: Approval | None) -> str | None:
    """Why the Taskfile of `found` is not approved by `record` (the approval of its files as they
    are now), for `start mcp`'s message after "Taskfile.yml is not used: "; None when it is, or
    when the project has none."""
    pinned = found.taskfile
    if pinned is None:
        return None
    if pinned.what == OUTSIDE:
        return f"it leads outside the project root (to {pinned.target}), so start does not offer it"
    if pinned.what != FILE:
        return (
            f"it is not a regular file of at most {FILE_LIMIT:,} bytes, so start does not offer it"
        )
    if record is None:
        return (
            f"nothing vouches for {root}: no approval covers the Taskfile, and the project is "
            "not under settings.trusted_paths or START_TRUSTED_PATHS; review and approve it with "
            "'start trust', or add the project to trusted_paths"
        )
    approval = f"the project's approval ({record.approved[:10]})"
    approved = record.taskfile
    if not record.pins_taskfile:
        return (
            f"{approval} was given before approvals pinned the Taskfile, and does not cover "
            "it; run 'start trust' to review it"
        )
    if approved is None or approved.label != pinned.label:
        return f"{approval} does not cover it; run 'start trust' to review it"
    if approved.digest != pinned.digest:
        return f"it changed since {approval}; run 'start trust' to review it"
    return None


def _by_path(config: Config, root: str) -> tuple[str | None, list[str]]:
    """Why `root` is trusted by a path the user gave (START_TRUSTED_PATHS, then
    settings.trusted_paths), or None; and warnings for entries ignored."""
    prefixes, warnings = trusted_prefixes()
    real = os.path.realpath(root)
    if any(within(real, prefix) for prefix in prefixes):
        return f"trusted by {ENV_TRUSTED_PATHS}", warnings
    # Project files cannot set this (their trust keys are dropped), so it is the user's own.
    configured = [os.path.realpath(os.path.expanduser(p)) for p in config.settings.trusted_paths]
    if any(within(real, prefix) for prefix in configured):
        origin = config.settings.origins.get("trusted_paths")
        where = f" in {origin.path}" if origin is not None else ""
        return f"trusted by settings.trusted_paths{where}", warnings
    return None, warnings


def vouched(config: Config) -> tuple[bool, str]:
    """Whether the user vouches for the project's Taskfile as it is now, for start mcp's
    Taskfile tools: (True, why) when a trusted path covers the project, or the approval of its
    config as it is now (if any) pins the Taskfile's bytes; else (False, why not)."""
    try:
        verdict = check(config)
    except StartError as error:
        return False, f"the project's files cannot be scanned: {error}"
    found = verdict.scan
    if found is None or found.taskfile is None:
        return False, f"{config.root} has no {' or '.join(paths.TASKFILES)}"
    if verdict.everything:
        return True, verdict.reason
    if verdict.taskfile is not None:
        return False, verdict.taskfile
    if not verdict.trusted:  # start mcp leaves such a project out before it asks (rules.view)
        return False, str(TrustRequired(config, verdict))
    return True, verdict.reason


def describe(config: Config) -> tuple[bool, str]:
    """(trusted?, the reason in a few words), for `start doctor`."""
    try:
        verdict = check(config)
    except StartError as error:
        return False, f"not trusted: {error}"
    return verdict.trusted, verdict.reason


def grant(config: Config) -> tuple[Grant | None, tuple[str, ...]]:
    """What a launch may read from the project layer, and warnings to show.

    None when there is no project layer to trust. Raises TrustRequired when it is not approved
    (the caller may ask, `approve(error.scan)` and try again), or UntrustedError when its files
    are unsafe.
    """
    if not config.has_project:
        return None, ()
    verdict = check(config)
    found = verdict.scan
    if found is None or not found.entries:  # no config; a Taskfile alone is not for launches
        return None, verdict.warnings
    if verdict.trusted:
        return found.grant(verdict.reason, everything=verdict.everything), verdict.warnings
    if found.unsafe:
        raise UntrustedError(unsafe_message(found))
    raise TrustRequired(config, verdict)


# At most this many places of an unapproved project's errors are named.
WITHHELD_PLACES = 5


def withheld(config: Config, own: Config) -> str | None:
    """The errors that the project layer adds to `own` (the same config without it), by place
    and kind only; None when it adds none.

    For where an unapproved project's errors are told to someone other than the user at their
    terminal, such as a model through `start mcp`: their messages may quote the files' bytes (a
    value, a key, the token at a syntax error), and these are not approved.
    """
    mine = set(own.problems)
    unparsed = {f.path for f in config.files if f.layer == "project" and not f.parsed}
    directory = config.layer_dirs.get("project")
    if directory is not None:
        unparsed.add(directory)  # a problem of `.start` itself: it cannot be read
    places = list(dict.fromkeys(_place(p, unparsed) for p in config.errors if p not in mine))
    if not places:
        return None
    named = ", ".join(places[:WITHHELD_PLACES])
    if len(places) > WITHHELD_PLACES:
        named += f" and {len(places) - WITHHELD_PLACES} more"
    return (
        f"the project's config has errors ({named}), not quoted because it is not approved; "
        "'start config validate' shows them"
    )


def _place(problem: Problem, unparsed: set[str]) -> str:
    where = problem.where
    if problem.line is not None:
        where += f":{problem.line}:{problem.column or 1}"
    if problem.file not in unparsed:
        return f"{where}: an error"
    from start.config.files import LIMITS

    unreadable = problem.line is None or problem.message.startswith(LIMITS)
    return f"{where}: {'cannot be read' if unreadable else 'a syntax error'}"


@contextmanager
def self_edit(root: str) -> Iterator[None]:
    """Wrap a write by `start` to a project config file: keep it approved if it was before."""
    start_dir = os.path.join(os.path.realpath(root), paths.PROJECT_DIR_NAME)
    kept: str | None = None  # the digest of the Taskfile approved before the edit
    try:
        empty = not os.path.lexists(start_dir) or (
            os.path.isdir(start_dir) and not os.listdir(start_dir)
        )
        # Without project config the user's own edit makes the first; other agents' command
        # files in the project are project config too, never approved unseen by an edit.
        before = _scan_at(root)
        record = None if before is None or before.unsafe else lookup(before)[0]
        approved = empty if before is None or not before.entries else record is not None
        # The Taskfile stays approved only if it was: an edit of .start/ never approves it.
        if before is not None and before.taskfile is not None and record is not None:
            kept = (
                before.taskfile.digest if _taskfile_withheld(root, before, record) is None else None
            )
    except (StartError, OSError):
        approved = False
    yield
    if not approved:
        return
    try:
        after = _scan_at(root)
        if after is not None and not after.unsafe:
            same = after.taskfile is not None and after.taskfile.digest == kept
            approve(after, taskfile=same)
    except (StartError, OSError):
        return  # the edit stands; the next launch asks


def _scan_at(root: str) -> Scan | None:
    """What an approval of the project at `root` covers now, as a launch there would see it."""
    from start.config.load import load

    resolved = os.path.realpath(root)
    start_dir = os.path.join(resolved, paths.PROJECT_DIR_NAME)
    # All layers: the settings that choose which command files are imported are in any of them.
    config = load(resolved)
    if config.project.start_dir not in (None, start_dir) or config.root != resolved:
        return None
    return scan(config)
