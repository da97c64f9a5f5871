"""The health check's report: a Check for each line, in its section, and the Report of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "info", "warning", "error"]
SECTIONS = ("environment", "config", "agents", "items", "project")


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report. `fix`, a one-line remedy, comes with every problem."""

    section: str
    status: Status
    subject: str
    message: str
    fix: str | None = None
    path: str | None = None
    selected: bool = False
    # Presentation hints: the heading (a file) a line is listed under, and the label under which
    # lines collapse into one unless -v. Neither is part of the JSON: `path` says the same.
    heading: str | None = None
    fold: str | None = None

    @property
    def is_problem(self) -> bool:
        return self.status in ("warning", "error")

    def as_dict(self) -> dict[str, object]:
        return {
            "section": self.section,
            "status": self.status,
            "subject": self.subject,
            "message": self.message,
            "fix": self.fix,
            "path": str(self.path) if self.path is not None else None,
            "selected": self.selected,
        }


@dataclass(frozen=True, slots=True)
class Report:
    checks: tuple[Check, ...]
    # A config file has an error (`start config validate` would exit 3), or could not be read;
    # whichever section the error is told in.
    config_invalid: bool = False

    @property
    def errors(self) -> int:
        return sum(1 for c in self.checks if c.status == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for c in self.checks if c.status == "warning")

    @property
    def healthy(self) -> bool:
        """No error and no warning; info lines do not count."""
        return not self.errors and not self.warnings

    def as_dict(self) -> dict[str, object]:
        return {
            "healthy": self.healthy,
            "config_invalid": self.config_invalid,
            "errors": self.errors,
            "warnings": self.warnings,
            "checks": [c.as_dict() for c in self.checks],
        }
