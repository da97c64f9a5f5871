"""`start trust` and `start untrust`; and the terminal prompt that launches use to ask for trust."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import IO, Any

import click

from start import trust as core
from start.base import fs, paths
from start.base.errors import ConfigError, ExitCode, Problem, UntrustedError, UsageError
from start.cli.commands import command
from start.cli.options import DIRECTORY, QUIET, common_options, printer
from start.cli.state import get_options
from start.config.load import load
from start.config.model import Config
from start.ui import console
from start.ui.console import Line, Part, Styled, printable

# On the terminal question, each text shows this many lines; `start trust --show` shows all.
SHORT_LINES = 6


def _rows(
    mentions: tuple[core.Mention, ...], indent: str, limit: Callable[[str], int | None]
) -> tuple[list[Line], int]:
    """The lines of `mentions`, aligned, and how many lines of text `limit(key)` left out."""
    lines: list[Line] = []
    width = max((len(printable(m.key)) for m in mentions), default=0)
    hidden = 0
    for mention in mentions:
        first, *rest = mention.value.rstrip("\n").split("\n")
        line: list[Part] = [f"{indent}{printable(mention.key).ljust(width)}  ", first]
        if mention.where:
            colour = "red bold" if mention.where == "outside project root" else "dim"
            line += ["  ", Styled(f"({mention.where})", colour)]
        lines.append(line)
        most = limit(mention.key)
        more: list[Part] = []
        if most is not None and len(rest) > most - 1:
            left = len(rest) - (most - 1)
            hidden += left
            rest = rest[: most - 1]
            more = [Styled(f"... {left} more line{'s' if left != 1 else ''}", "dim")]
        lines.extend([f"{indent}{'':{width}}  ", text] for text in rest)
        if more:
            lines.append([f"{indent}{'':{width}}  ", *more])
    return lines, hidden


def _whole(key: str) -> int | None:
    return None


def _mention_lines(title: str, mentions: tuple[core.Mention, ...]) -> list[Line]:
    """The lines of one review section, every value whole."""
    lines: list[Line] = [[f"  {title}:"]]
    if not mentions:
        return [*lines, ["    (none)"]]
    return [*lines, *_rows(mentions, "    ", _whole)[0]]


def _item_lines(review: core.Review, limit: int | None) -> tuple[list[Line], int]:
    """Every project item with every field it sets; with `limit`, each text field shows its
    first lines. The lines, and how many lines of text were left out."""
    lines: list[Line] = [
        [
            "  define these agents, roles, contexts, tasks and workflows (each replaces yours of "
            "its name):"
        ]
    ]
    if not review.items:
        return [*lines, ["    (none)"]], 0

    def cut(key: str) -> int | None:
        return limit if core.is_text(key) else None

    root = os.path.realpath(review.scan.root)
    hidden = 0
    for item in review.items:
        file = item.path
        if fs.within(os.path.realpath(file), root):
            file = os.path.relpath(os.path.realpath(file), root)
        heading: list[Part] = [f"    {printable(item.key)}  ", Styled(f"({file})", "dim")]
        if item.replaces is not None:
            what = f"replaces the {item.replaces.layer} one in {item.replaces.path}"
            heading += ["  ", Styled(what, "yellow")]
        lines.append(heading)
        rows, left = _rows(item.fields, "      ", cut)
        lines.extend(rows)
        hidden += left
    return lines, hidden


def review_lines(review: core.Review, *, full: bool = True) -> list[Line]:
    """The review as lines of text segments, for the prompt and `start trust --show`.

    Without `full`, each text shows its first lines and a count of the rest.
    """
    found = review.scan
    lines: list[Line] = [
        [Styled(f"{found.subject} comes with this project.", "bold")],
        [f"Trusting it lets start, in {found.root}:"],
    ]
    for title, mentions in (
        ("run these commands", review.commands),
        ("run these agent binaries and shells", review.binaries),
        ("set these variables for the agent", review.environment),
        ("read these files into the prompt sent to the agent", review.files),
        ("apply these settings", review.settings),
    ):
        lines.extend(_mention_lines(title, mentions))
    if review.taskfiles:
        title = (
            "run this Taskfile's tasks, as tools of agents through start mcp and with start task "
            "taskfile:NAME (the approval pins its bytes: once it changes, none of its tasks runs "
            "until you approve again)"
        )
        lines.extend(_mention_lines(title, review.taskfiles))
    items, hidden = _item_lines(review, None if full else SHORT_LINES)
    lines.extend(items)
    lines.append(["  The approval covers exactly these files; any change asks again:"])
    for entry in found.entries:
        if entry.what == core.SYMLINK:
            line: list[Part] = [f"    {entry.label} -> {entry.target or ''}"]
            if entry.outside:
                line += ["  ", Styled("(outside project root, not followed)", "red bold")]
            lines.append(line)
        elif entry.what == core.MISSING:
            lines.append([f"    {entry.label}  (does not exist)"])
        elif entry.what == core.OTHER:
            lines.append([f"    {entry.label}  (not a regular file)"])
        elif entry.what == core.OUTSIDE:
            note = Styled("(outside project root: its path, not its bytes)", "dim")
            lines.append([f"    {entry.label}  ", note])
        else:
            lines.append([f"    {entry.label}"])
    pinned = found.taskfile
    if pinned is not None and pinned.what == core.FILE:
        lines.append([f"    {pinned.label}  ", Styled("(the Taskfile)", "dim")])
    changed = [c for c in review.changes if c.status != "same"]
    previous = review.previous
    if previous is not None and changed:
        when = console.local_time(previous.approved)
        lines.append([Styled(f"Changes since the approval of {when}:", "bold")])
        for change in changed:
            line = [f"    {change.label}  {change.status}"]
            if change.taskfile and not previous.pins_taskfile:
                line.append(" (that approval was given before approvals pinned the Taskfile)")
            lines.append(line)
        for change in changed:
            for text in change.diff:
                colour = {"+": "green", "-": "red", "@": "cyan"}.get(text[:1], "")
                if text.startswith(("+++", "---")):
                    colour = "bold"
                lines.append(["  ", Styled(text, colour)])
    if review.errors:
        lines.append(
            [
                f"The config has {review.errors} error{'s' if review.errors != 1 else ''}; "
                "run 'start config validate'."
            ]
        )
    lines.extend(["warning: ", w] for w in review.warnings)
    if hidden:
        text = (
            f"({hidden} line{'s' if hidden != 1 else ''} of prompt text not shown; "
            "'start trust --show' prints everything)"
        )
        lines.append([Styled(text, "yellow")])
    return lines


def _terminal() -> tuple[IO[str], bool] | None:
    """Where to read an answer: stdin when it is a terminal, else /dev/tty; None without one."""
    if not console.is_tty(sys.stderr):
        return None
    if console.is_tty(sys.stdin):
        return sys.stdin, False
    try:
        return open("/dev/tty", encoding="utf-8", errors="replace"), True
    except OSError:
        return None


def confirm(review: core.Review, question: str, *, full: bool = False) -> bool | None:
    """Show the review on stderr and ask `question`, defaulting to No; None without a terminal."""
    terminal = _terminal()
    if terminal is None:
        return None
    source, owned = terminal
    out = console.Printer("stderr")
    try:
        lines = review_lines(review, full=full)
        if not _paged(lines):
            out.lines(lines)
        out.prompt(question, " [y/N] ")
        answer = source.readline()
    finally:
        if owned:
            source.close()
    if not answer.endswith("\n"):
        out.line()
    return answer.strip().lower() in ("y", "yes")


def _paged(lines: list[Line]) -> bool:
    """Show a review taller than the terminal through the pager, as other long output is, so
    its top is read before the question; only when stdout, where the pager writes, is that
    terminal too. Whether it was."""
    if not console.is_tty(sys.stdout):
        return False
    from start.ui import display

    command = display.pager_command()
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except OSError:
        return False
    # Rows as the terminal wraps them; the question takes one more. (`less -F` shows a text
    # that fits on one screen without paging, so an estimate a little high costs nothing.)
    width = max(size.columns, 1)
    plain = ("".join(p.text if isinstance(p, Styled) else p for p in line) for line in lines)
    rows = sum(max(1, -(-len(text) // width)) for text in plain)
    # A terminal that reports no size (a new pty) is taken to be tall enough.
    if command is None or not size.lines or rows + 1 < size.lines:
        return False
    printer = console.Printer(stream=sys.stdout)
    display.run_pager(command, "".join(printer.render(line) + "\n" for line in lines))
    return True


def ask(review: core.Review) -> bool | None:
    """The `ask` callback of trust.require for launches."""
    return confirm(review, f"Trust {review.scan.subject} and continue?")


def warn(message: str) -> None:
    console.warning(message)


def _review_data(review: core.Review, verdict: core.Verdict) -> dict[str, Any]:
    def mentions(items: tuple[core.Mention, ...]) -> list[dict[str, str]]:
        return [{"key": m.key, "value": m.value, "where": m.where} for m in items]

    found = review.scan
    return {
        "root": str(found.root),
        "start_dir": str(found.start_dir),
        "command_dirs": [str(path) for path in found.commands],
        "trusted": verdict.trusted,
        "reason": verdict.reason,
        "fingerprint": found.fingerprint,
        "taskfile_reason": verdict.taskfile,
        "files": [
            {
                "path": e.label,
                "kind": e.what,
                "sha256": e.digest,
                "target": e.target,
                "outside": e.outside,
            }
            for e in (*found.entries, *_pinned(found))
        ],
        "commands": mentions(review.commands),
        "binaries": mentions(review.binaries),
        "environment": mentions(review.environment),
        "reads": mentions(review.files),
        "settings": mentions(review.settings),
        "taskfile": mentions(review.taskfiles),
        "items": [
            {
                "key": item.key,
                "file": item.path,
                "replaces": (
                    {"layer": item.replaces.layer, "file": item.replaces.path}
                    if item.replaces is not None
                    else None
                ),
                "fields": dict(item.data),
            }
            for item in review.items
        ],
        "previous": review.previous.approved if review.previous else None,
        "changes": [
            {"path": c.label, "status": c.status, "diff": list(c.diff), "taskfile": c.taskfile}
            for c in review.changes
            if c.status != "same"
        ],
        "errors": review.errors,
        "warnings": list(review.warnings),
    }


@command(
    examples=[
        ("Review this project's config and approve it", "start trust"),
        ("See what approval would allow, without approving", "start trust --show"),
        ("Approve in CI, after a person reviewed it", "start trust --yes"),
        ("Every approval you have given", "start trust --list"),
    ],
    epilog="Docs: start help security",
)
@click.argument(
    "path",
    metavar="[DIR]",
    required=False,
    type=click.Path(exists=True, file_okay=False),
)
@click.option(
    "-y", "--yes", is_flag=True, help="Approve without asking (a person already decided)."
)
@click.option("--list", "listing", is_flag=True, help="List the approvals.")
@click.option("--show", is_flag=True, help="Print what approval covers, without approving.")
@common_options(DIRECTORY, QUIET)
def trust(path: str | None, yes: bool, listing: bool, show: bool) -> int:
    """Review the project's config and approve its exact bytes.

    The project's config is its .start/ and the command directories of other agents in it
    (.claude/commands, .gemini/commands, .qwen/commands, .opencode/command). DIR is the project
    (default: here). Until approved, it can be shown and validated, but start runs nothing from
    it. --json prints the review (--show), the approvals
    (--list) or the outcome.
    """
    options = get_options()
    if listing:
        return _list(options.json, options.no_color)
    # Parsed from the files, never the config cache: what is shown and approved is what they say.
    config = load(os.path.realpath(path or options.workdir), use_cache=False)
    verdict = core.check(config)
    found = verdict.scan
    unreadable = _unreadable(config)
    if found is None and unreadable:
        start_dir = config.project.start_dir
        raise ConfigError(unreadable, headline=f"cannot review {start_dir}: it cannot be read")
    if found is None:
        if options.json:
            console.print_json({"start_dir": None, "trusted": False, "approved": False})
        else:
            printer().note(f"start: no project config in {config.root}; nothing to trust")
        return ExitCode.OK
    if found.unsafe:
        raise UntrustedError(core.unsafe_message(found))
    if show:
        review = core.review(config, found, verdict.warnings)
        if options.json:
            console.print_json(_review_data(review, verdict))
        else:
            out = printer("stdout")
            out.lines(review_lines(review))
            out.line(f"Status: {_status(found, verdict)}")
        return ExitCode.OK
    for message in verdict.warnings:
        warn(message)
    if verdict.record is not None and (verdict.taskfile is None or not _pinned(found)):
        if options.json:
            _outcome(found, approved=False)
        else:
            printer().note(f"start: {found.subject} is already trusted ({verdict.reason})")
        return ExitCode.OK
    if not yes:
        answer = confirm(core.review(config, found, verdict.warnings), f"Trust {found.subject}?")
        if answer is None:
            raise UsageError(
                "no terminal to ask on; review with 'start trust --show', "
                "then approve with 'start trust --yes'"
            )
        if not answer:
            raise UntrustedError(f"{found.subject} was not approved")
    core.approve(found)
    if options.json:
        _outcome(found, approved=True)
        return ExitCode.OK
    printer().note(f"start: trusted {found.subject} ({covered(found)})")
    return ExitCode.OK


def _pinned(found: core.Scan) -> tuple[core.Entry, ...]:
    """The Taskfile, when an approval of `found` pins it."""
    taskfile = found.taskfile
    return (taskfile,) if taskfile is not None and taskfile.what == core.FILE else ()


def _status(found: core.Scan, verdict: core.Verdict) -> str:
    """`start trust --show`'s last line: the verdict, and why the Taskfile is not offered when
    the project is trusted but its Taskfile is not."""
    if verdict.taskfile is None or not verdict.trusted or found.taskfile is None:
        return verdict.reason
    return f"{verdict.reason}; {found.taskfile.label} is not offered: {verdict.taskfile}"


def _outcome(found: core.Scan, *, approved: bool) -> None:
    """`start trust --json`: the project is trusted now; `approved` says whether this run did it."""
    console.print_json(
        {
            "start_dir": str(found.start_dir),
            "command_dirs": [str(path) for path in found.commands],
            "trusted": True,
            "approved": approved,
            "fingerprint": found.fingerprint,
            "files": [e.label for e in (*found.entries, *_pinned(found))],
        }
    )


def _unreadable(config: Config) -> list[Problem]:
    """Errors about the project's .start/ itself, or a file in it, that kept load from reading."""
    start_dir = config.project.start_dir
    if start_dir is None:
        return []
    return [
        p
        for p in config.errors
        if p.file is not None
        and (p.file == start_dir or os.path.dirname(p.file) == start_dir)
        and not p.key
        and p.line is None
    ]


def covered(found: core.Scan) -> str:
    """What an approval of `found` covers, in a few words: "3 files, 1 path outside the root"."""
    outside = sum(1 for e in found.entries if e.what == core.OUTSIDE)
    count = len(found.entries) - outside + len(_pinned(found))
    text = f"{count} file{'s' if count != 1 else ''}"
    if outside:
        text += f", {outside} path{'s' if outside != 1 else ''} outside the project root"
    return text


def _list(as_json: bool, no_color: bool) -> int:
    found, warnings = core.records()
    for message in warnings:
        warn(message)
    if as_json:
        console.print_json(
            [
                {
                    "root": r.root,
                    "approved": r.approved,
                    "fingerprint": r.fingerprint,
                    "files": [c.label for c in (*r.copies, *filter(None, [r.taskfile]))],
                    "record": str(r.path),
                }
                for r in found
            ]
        )
        return ExitCode.OK
    if not found:
        printer().note("No approvals. Run 'start trust' in a project to review and approve it.")
        return ExitCode.OK
    from start.ui import display

    rows = [
        [
            r.root,
            console.local_time(r.approved),
            str(len(r.copies) + (r.taskfile is not None)),
            r.fingerprint[:12],
        ]
        for r in found
    ]
    display.print_table(["root", "approved", "files", "id"], rows, no_color=no_color)
    return ExitCode.OK


@command(
    examples=[
        ("Revoke the approval of this project", "start untrust"),
        ("Of a project that is gone", "start untrust ~/src/old-project"),
    ],
    epilog="Docs: start help security",
)
@click.argument("path", metavar="[DIR]", required=False, type=click.Path(file_okay=False))
@common_options(DIRECTORY, QUIET)
def untrust(path: str | None) -> int:
    """Revoke every approval of a project.

    DIR is the project (default: here); it need not exist any more.
    """
    options = get_options()
    target = os.path.realpath(path or options.workdir)
    root = target
    if os.path.isdir(target):
        project = paths.find_project(target)
        if project.start_dir is not None:
            root = os.path.dirname(project.start_dir)
    removed = core.revoke(root)
    if options.json:
        console.print_json({"root": str(root), "revoked": removed})
    elif removed:
        printer().note(f"start: revoked {removed} approval{'s' if removed != 1 else ''} of {root}")
    else:
        printer().note(f"start: no approvals of {root}")
    return ExitCode.OK
