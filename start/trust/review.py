"""The review shown before approval: what the project config would run, read and choose."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from start import paths
from start.config.model import Config
from start.record import Record
from start.trust.scan import FILE, SYMLINK, Named, Scan, current_bytes, within
from start.trust.store import COPY_LIMIT, Approval, records


class Mention(Record):
    """A command, binary, path or setting the project config uses, for the review."""

    key: str
    value: str
    where: str = ""  # "outside project root", "inside the project", "on PATH" or ""


class Change(Record):
    label: str
    status: str  # "added", "changed", "removed" or "same"
    diff: tuple[str, ...] = ()
    what: str = FILE  # what the entry is (scan.FILE, SYMLINK, OUTSIDE, ...)


class Review(Record):
    """Everything approval allows, and how it differs from the last approval of this root."""

    scan: Scan
    commands: tuple[Mention, ...]
    binaries: tuple[Mention, ...]
    environment: tuple[Mention, ...]  # NAME=value words of agent commands
    files: tuple[Mention, ...]
    texts: tuple[Mention, ...]  # every prompt text of project roles, contexts and tasks
    settings: tuple[Mention, ...]
    previous: Approval | None
    changes: tuple[Change, ...]
    errors: int
    warnings: tuple[str, ...]


# --- reviewing ------------------------------------------------------------------------------


def changes(found: Scan, previous: Approval, *, diff: bool = True) -> list[Change]:
    """How the files now differ from an earlier approval, with a unified diff of text files."""
    import difflib

    old = {(c.label, c.what): c for c in previous.copies}
    new = {(e.label, e.what): e for e in found.entries}
    result: list[Change] = []
    for key in sorted(old.keys() | new.keys()):
        label, what = key
        before, after = old.get(key), new.get(key)
        if after is None:
            result.append(Change(label, "removed", what=what))
            continue
        if before is not None and before.digest == after.digest:
            result.append(Change(label, "same", what=what))
            continue
        status = "added" if before is None else "changed"
        lines: tuple[str, ...] = ()
        if diff and what == FILE:
            old_text = before.text if before is not None else ""
            new_text = _text(current_bytes(after))
            if old_text is not None and new_text is not None:
                lines = tuple(
                    line.rstrip("\n")
                    for line in difflib.unified_diff(
                        old_text.splitlines(keepends=True),
                        new_text.splitlines(keepends=True),
                        f"a/{label}" if before is not None else "/dev/null",
                        f"b/{label}",
                    )
                )
        elif diff and what == SYMLINK and before is not None:
            lines = (f"symlink now points to {after.target}",)
        result.append(Change(label, status, lines, what))
    return result


def _text(data: bytes) -> str | None:
    if len(data) > COPY_LIMIT:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def review(config: Config, found: Scan, warnings: tuple[str, ...] = ()) -> Review:
    """What approving `found` allows: every command, binary, variable, file, text and setting."""
    from start import agent

    real_root = os.path.realpath(found.root)
    commands: list[Mention] = []
    binaries: list[Mention] = []
    environment: list[Mention] = []
    texts: list[Mention] = []

    def where(path: str) -> str:
        real = os.path.realpath(path)
        return "inside the project" if within(real, real_root) else "outside project root"

    for section in ("agents", "roles", "contexts", "tasks"):
        items: Mapping[str, Any] = getattr(config, section)
        for name, item in items.items():
            if item.origin.layer != "project":
                continue
            key = f"{section}.{name}"
            if section == "agents":
                bin_ = item.bin
                place = "on PATH"
                if os.sep in bin_:
                    place = where(paths.expand(bin_, found.root))
                binaries.append(Mention(f"{key}.bin", bin_, place))
                commands.append(Mention(f"{key}.command", item.command))
                for variable, value in agent.assignments(item.command):
                    environment.append(Mention(f"{key}.command", f"{variable}={value}"))
                if item.large_prompt is not None:
                    texts.append(Mention(f"{key}.large_prompt", item.large_prompt))
                continue
            imported = getattr(item, "imported", None)
            if imported is not None:
                # Another agent's command file: its shell commands, as they run, and its text.
                for snippet in imported.snippets():
                    commands.append(Mention(f"{key}: line {snippet.line}", snippet.command))
                texts.append(Mention(f"{key}: {os.path.basename(item.origin.path)}", imported.body))
            if item.command is not None:
                commands.append(Mention(f"{key}.command", item.command))
            if item.shell is not None:
                binaries.append(Mention(f"{key}.shell", item.shell))
            if item.prompt is not None:
                texts.append(Mention(f"{key}.prompt", item.prompt))
            # A parameter's default goes into the prompt and the command's environment.
            for param in getattr(item, "params", ()):
                if param.default:
                    texts.append(Mention(f"{key}.params.{param.name}.default", param.default))
    files = [_file(named) for named in found.named]
    settings = []
    for name, origin in config.settings.origins.items():
        if origin.layer == "project":
            value = getattr(config.settings, name)
            settings.append(Mention(f"settings.{name}", json.dumps(value)))
            if name == "shell":
                binaries.append(Mention("settings.shell", str(value)))
    earlier, more = records(found.root)
    previous = earlier[-1] if earlier else None
    diff = tuple(changes(found, previous)) if previous is not None else ()
    return Review(
        found,
        tuple(commands),
        tuple(binaries),
        tuple(environment),
        tuple(files),
        tuple(texts),
        tuple(settings),
        previous,
        diff,
        len(config.errors),
        (*warnings, *(m for m in more if m not in warnings)),
    )


_WHERE = {
    "start": "in .start/, covered by its bytes",
    "inside": "inside the project, read as it is at launch",
    "outside": "outside project root",
}


def _file(named: Named) -> Mention:
    """A named file, with its real target when a symlink (or `..`) leads elsewhere."""
    shown = str(named.path)
    if os.path.normpath(shown) != named.real:
        shown = f"{shown} -> {named.real}"
    return Mention(named.key, shown, _WHERE[named.where])
