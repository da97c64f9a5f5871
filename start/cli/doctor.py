"""`start doctor`: the offline health check, printed as ✓, ·, ⚠ and ✗ lines (or JSON)."""

from __future__ import annotations

from collections.abc import Sequence

from start.base.errors import ExitCode
from start.cli.commands import command
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options
from start.cli.state import Options, get_options
from start.setup import doctor as core
from start.setup.report import SECTIONS, Check, Report
from start.ui import console, display
from start.ui.console import Styled

TITLES = {
    "environment": "Environment",
    "config": "Config",
    "agents": "Agents",
    "items": "Roles, contexts and tasks",
    "project": "Project",
}
_MARKS = {"ok": "✓", "info": "·", "warning": "⚠", "error": "✗"}
_STYLES = {"ok": "green", "info": "dim", "warning": "yellow", "error": "red bold"}
# Subjects longer than this are not padded, so one long name does not push every line right.
_SUBJECT_WIDTH = 16


@command(
    examples=[
        ("Check everything", "start doctor"),
        ("Only the problems, for a script or a prompt", "start doctor -q"),
        ("Every agent and detail", "start doctor -v"),
    ],
    epilog="Docs: start help setup",
)
@common_options(
    DIRECTORY, QUIET, NO_PROJECT, verbose="Show every check: each agent that is not installed too."
)
def doctor() -> int:
    """Check the setup offline: config, agents, named files, shells and trust.

    Exit 3 when the config has an error (as start config validate does), else 1 when there is
    any other error or a warning, else 0 (info lines do not count). Nothing is fetched and no
    configured command is run. -q prints only problems; -v lists every agent and detail; --json
    prints the checks.
    """
    options = get_options()
    report = core.diagnose(options.workdir, use_project=not options.no_project)
    if options.json:
        console.print_json(report.as_dict())
    else:
        show(report, options)
    if report.config_invalid:
        return ExitCode.CONFIG
    return ExitCode.OK if report.healthy else ExitCode.ERROR


def show(report: Report, options: Options) -> None:
    """The report on stdout: it is the command's data. Problems carry a one-line fix.

    Long lines wrap with a hanging indent. Without -v, the checks that share a `fold` label (the
    shipped agents that are not installed) collapse into one line.
    """
    page = display.Page()
    for section in SECTIONS:
        checks = [c for c in report.checks if c.section == section]
        if options.quiet:
            checks = [c for c in checks if c.is_problem]
        if not options.verbose:
            checks = fold(checks)
        if not checks:
            continue
        if not options.quiet:
            page.line(Styled(TITLES[section], "bold"))
        width = min(_SUBJECT_WIDTH, max(display.display_width(c.subject) for c in checks))
        heading = None
        for check in checks:
            if check.heading is not None and check.heading != heading:
                page.row([Styled(check.heading, "bold")], [], indent=2)
            heading = check.heading
            style = "bold" if check.selected else ""
            mark = Styled(_MARKS[check.status], _STYLES[check.status])
            cells = [mark, Styled(check.subject, style), Styled(check.message, style)]
            page.row(cells, [1, width], indent=2, gaps=[1, 2])
            if check.fix:
                page.row([Styled("→", "dim"), Styled(check.fix, "dim")], [1], indent=6)
        if not options.quiet:
            page.blank()
    if not options.quiet:
        page.line(summary(report))
    page.show(no_color=options.no_color)


def fold(checks: Sequence[Check]) -> list[Check]:
    """Checks with the same `fold` label become one line, where the first of them was."""
    folded: dict[str, list[Check]] = {}
    for check in checks:
        if check.fold is not None:
            folded.setdefault(check.fold, []).append(check)
    result = []
    for check in checks:
        if check.fold is None:
            result.append(check)
        elif folded[check.fold][0] is check:
            group = folded[check.fold]
            names = ", ".join(c.subject for c in group)
            result.append(Check(check.section, check.status, check.fold, f"{names} ({len(group)})"))
    return result


def summary(report: Report) -> Styled:
    if report.healthy:
        return Styled("✓ healthy: no errors or warnings", "green")
    parts = [
        f"{count} {word}{'s' if count != 1 else ''}"
        for count, word in ((report.errors, "error"), (report.warnings, "warning"))
    ]
    mark, colour = ("✗", "red") if report.errors else ("⚠", "yellow")
    return Styled(f"{mark} {', '.join(parts)}", f"{colour} bold")
