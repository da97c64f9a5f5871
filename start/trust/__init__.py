"""Project-config trust: a project's `.start/` runs nothing until the user approves its exact bytes.

An approval is keyed by the real path of the project root and a SHA-256 over every file in `.start/`
and every file a project role names inside the project. Records live one per approval under
`$XDG_STATE_HOME/start/trust/`. This module decides and records; it never prints or prompts: the
caller passes `ask` (show a review, return the answer) and `warn` callbacks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple, Protocol

from start import paths
from start.config.model import Config
from start.errors import StartError, UntrustedError
from start.trust.review import Change, Mention, Review, changes, review
from start.trust.scan import (
    FILE,
    MISSING,
    OTHER,
    SYMLINK,
    Entry,
    Scan,
    current_bytes,
    fingerprint,
    pin,
    read_bytes,
    scan,
    unsafe_message,
    within,
)
from start.trust.store import Copy, Record, approve, lookup, records, revoke, store_dir

ENV_TRUSTED_PATHS = "START_TRUSTED_PATHS"

__all__ = [
    "ENV_TRUSTED_PATHS",
    "FILE",
    "MISSING",
    "OTHER",
    "SYMLINK",
    "Change",
    "Copy",
    "Entry",
    "Mention",
    "Record",
    "Review",
    "Scan",
    "Verdict",
    "approve",
    "changes",
    "check",
    "current_bytes",
    "describe",
    "fingerprint",
    "read_bytes",
    "records",
    "require",
    "review",
    "revoke",
    "scan",
    "self_edit",
    "store_dir",
    "trusted_prefixes",
    "unsafe_message",
]


class _Options(Protocol):
    @property
    def no_project(self) -> bool: ...


class Verdict(NamedTuple):
    trusted: bool
    reason: str
    scan: Scan | None
    record: Record | None = None
    warnings: tuple[str, ...] = ()


Ask = Callable[[Review], bool | None]
Warn = Callable[[str], None]


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
    """Whether the project layer of `config` may be used, and why. Never prompts."""
    found = scan(config)
    if found is None:
        ignored = config.layer_dirs.get("project") is None and config.project.start_dir is not None
        return Verdict(True, "project config ignored" if ignored else "no project config", None)
    if found.unsafe:
        return Verdict(False, f"not trusted: {found.unsafe[0]}", found)
    prefixes, warnings = trusted_prefixes()
    real = os.path.realpath(found.root)
    if any(within(real, prefix) for prefix in prefixes):
        return Verdict(True, f"trusted by {ENV_TRUSTED_PATHS}", found, None, tuple(warnings))
    # Project files cannot set this (their trust keys are dropped), so it is the user's own.
    configured = [os.path.realpath(os.path.expanduser(p)) for p in config.settings.trusted_paths]
    if any(within(real, prefix) for prefix in configured):
        origin = config.settings.origins.get("trusted_paths")
        where = f" in {origin.path}" if origin is not None else ""
        return Verdict(
            True, f"trusted by settings.trusted_paths{where}", found, None, tuple(warnings)
        )
    record, more = lookup(found)
    warnings.extend(more)
    if record is not None:
        return Verdict(True, f"approved {record.approved[:10]}", found, record, tuple(warnings))
    earlier, more = records(found.root)
    warnings.extend(m for m in more if m not in warnings)
    if not earlier:
        return Verdict(False, "not trusted: never approved", found, None, tuple(warnings))
    statuses = [c.status for c in changes(found, earlier[-1], diff=False)]
    counts = [(s, statuses.count(s)) for s in ("changed", "added", "removed") if s in statuses]
    parts = [
        f"{n} file{'s' if n != 1 else ''} {status}" if i == 0 else f"{n} {status}"
        for i, (status, n) in enumerate(counts)
    ]
    reason = f"not trusted: {', '.join(parts) or 'files changed'} since approval"
    return Verdict(False, reason, found, None, tuple(warnings))


def describe(config: Config) -> tuple[bool, str]:
    """(trusted?, the reason in a few words), for `start doctor`."""
    try:
        verdict = check(config)
    except StartError as error:
        return False, f"not trusted: {error}"
    return verdict.trusted, verdict.reason


def require(
    config: Config, options: _Options, *, ask: Ask | None = None, warn: Warn | None = None
) -> Config:
    """The config to launch with, once its project layer is trusted; else UntrustedError (5).

    `ask` shows the review and returns the answer, or None when there is no terminal to ask on.
    """
    if options.no_project or os.environ.get("START_NO_PROJECT") == "1":
        if config.layer_dirs.get("project") is not None:
            from start.config.load import load

            config = load(config.project.workdir, use_project=False, strict=True)
        pin(None)
        return config
    verdict = check(config)
    for message in verdict.warnings:
        if warn is not None:
            warn(message)
    found = verdict.scan
    if found is None or verdict.trusted:
        pin(found)
        return config
    if found.unsafe:
        raise UntrustedError(unsafe_message(found))
    answer = ask(review(config, found, verdict.warnings)) if ask is not None else None
    if answer is None:
        raise UntrustedError(f"{found.start_dir} is not trusted; run 'start trust' to review it")
    if not answer:
        raise UntrustedError(f"{found.start_dir} was not approved; nothing was run")
    approve(found)
    pin(found)
    return config


@contextmanager
def self_edit(root: Path) -> Iterator[None]:
    """Wrap a write by `start` to a project config file: keep it approved if it was before."""
    start_dir = Path(root).resolve() / paths.PROJECT_DIR_NAME
    try:
        if not os.path.lexists(start_dir) or (start_dir.is_dir() and not any(start_dir.iterdir())):
            approved = True
        else:
            before = _scan_at(root)
            approved = before is not None and not before.unsafe and lookup(before)[0] is not None
    except (StartError, OSError):
        approved = False
    yield
    if not approved:
        return
    try:
        after = _scan_at(root)
        if after is not None and not after.unsafe:
            approve(after)
    except (StartError, OSError):
        return  # the edit stands; the next launch asks


def _scan_at(root: Path) -> Scan | None:
    from start.config.load import load

    start_dir = Path(root).resolve() / paths.PROJECT_DIR_NAME
    if not start_dir.is_dir():
        return None
    config = load(start_dir.parent, layers=("project",))
    if config.project.start_dir != start_dir:
        return None
    return scan(config)
