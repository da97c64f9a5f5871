"""Config problems as a listing: on a terminal, grouped under their file, each at LINE:COLUMN,
errors in red; otherwise one line per problem, `PATH:LINE:COL: severity: key: message`, the form
editors, CI annotations and grep read (as gcc, ruff and mypy print it)."""

from __future__ import annotations

from start.base.errors import Problem
from start.ui import console
from start.ui.console import Styled


def show_problems(out: console.Printer, problems: tuple[Problem, ...] | list[Problem]) -> None:
    """On a terminal, problems grouped under their file, each at LINE:COLUMN, errors in red;
    otherwise one line each, in the order of the groups."""
    if not console.is_tty(out.stream):
        for _where, group_problems in group_by_file(problems):
            for problem in group_problems:
                out.line(one_line(problem))
        return
    for where, group_problems in group_by_file(problems):
        out.line(Styled(where, "bold"))
        width = max(len(_at(p)) for p in group_problems)
        for problem in group_problems:
            severity = (
                Styled("error  ", "red bold") if problem.is_error else Styled("warning", "yellow")
            )
            out.line("  ", _at(problem).ljust(width), "  ", severity, "  ", problem.detail)


def group_by_file(problems: tuple[Problem, ...] | list[Problem]) -> list[tuple[str, list[Problem]]]:
    """Problems by file, in the order files first appear, then by line."""
    groups: dict[str, list[Problem]] = {}
    for problem in problems:
        groups.setdefault(problem.where, []).append(problem)
    return [(where, sorted(found, key=lambda p: p.line or 0)) for where, found in groups.items()]


def _at(problem: Problem) -> str:
    return f"{problem.line}:{problem.column or 1}" if problem.line is not None else "-"


def one_line(problem: Problem) -> str:
    """`PATH:LINE:COL: severity: key: message`; without a position, `PATH: severity: ...`."""
    where = problem.where
    if problem.line is not None:
        where += f":{problem.line}:{problem.column or 1}"
    return f"{where}: {problem.severity}: {problem.detail}"
