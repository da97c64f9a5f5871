"""`start doctor`: the offline health check, printed as ✓, ⚠ and ✗ lines (or JSON)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from start import console
from start import doctor as core
from start.cli.options import Options, common_options, get_options
from start.errors import ExitCode

TITLES = {
    "environment": "Environment",
    "config": "Config",
    "agents": "Agents",
    "items": "Roles, contexts and tasks",
    "project": "Project",
}
_MARKS = {"ok": "✓", "info": "·", "warning": "⚠", "error": "✗"}
_STYLES = {"ok": ("green",), "info": ("dim",), "warning": ("yellow",), "error": ("red", "bold")}
# Subjects longer than this are not padded, so one long name does not push every line right.
_SUBJECT_WIDTH = 16


@click.command()
@common_options
def doctor() -> int:
    """Check the setup offline: config files, agents on PATH, named files, shells and trust.

    Exit 0 when there is no error and no warning (info lines do not count), 3 when a config
    file has errors, else 1. Nothing is fetched and no configured command is run. -q prints only
    problems; --json prints the checks.
    """
    options = get_options()
    report = core.diagnose(options.workdir, use_project=not options.no_project)
    if options.json:
        console.print_json(report.as_dict())
    else:
        show(report, options)
    if any(c.section == "config" and c.status == "error" for c in report.checks):
        return ExitCode.CONFIG
    return ExitCode.OK if report.healthy else ExitCode.ERROR


def show(report: core.Report, options: Options) -> None:
    """The report on stdout: it is the command's data. Problems carry a one-line fix."""
    from start.console import printable

    printer = console.Printer(sys.stdout, no_color=options.no_color)
    style = printer.style
    for section in core.SECTIONS:
        checks = [c for c in report.checks if c.section == section]
        if options.quiet:
            checks = [c for c in checks if c.is_problem]
        if not checks:
            continue
        if not options.quiet:
            printer.line(style(TITLES[section], "bold"))
        width = min(_SUBJECT_WIDTH, max(len(c.subject) for c in checks))
        for check in checks:
            mark = style(_MARKS[check.status], *_STYLES[check.status])
            subject = printable(check.subject).ljust(width)
            message = printable(check.message)
            if check.selected:
                subject, message = style(subject, "bold"), style(message, "bold")
            printer.line(f"  {mark} {subject}  {message}")
            if check.fix:
                printer.line(style(f"      → {printable(check.fix)}", "dim"))
        if not options.quiet:
            printer.line()
    if not options.quiet:
        printer.line(summary(report, style))
    printer.flush()


def summary(report: core.Report, paint: Callable[..., str]) -> str:
    if report.healthy:
        return paint("✓ healthy: no errors or warnings", "green")
    parts = [
        f"{count} {word}{'s' if count != 1 else ''}"
        for count, word in ((report.errors, "error"), (report.warnings, "warning"))
    ]
    mark, colour = ("✗", "red") if report.errors else ("⚠", "yellow")
    return paint(f"{mark} {', '.join(parts)}", colour, "bold")
