"""The health check's report (start.setup.report): its counts, health and JSON."""

from __future__ import annotations

from start.setup.report import Check, Report


def test_info_lines_do_not_make_a_report_unhealthy() -> None:
    info = Check("agents", "info", "beta", "not installed")
    warning = Check("items", "warning", "task t", "x", "fix it", "/p")
    assert Report((info,)).healthy
    report = Report((info, warning))
    assert (report.healthy, report.errors, report.warnings) == (False, 0, 1)
    assert report.as_dict() == {
        "healthy": False,
        "config_invalid": False,
        "errors": 0,
        "warnings": 1,
        "checks": [
            {
                "section": "agents",
                "status": "info",
                "subject": "beta",
                "message": "not installed",
                "fix": None,
                "path": None,
                "selected": False,
            },
            {
                "section": "items",
                "status": "warning",
                "subject": "task t",
                "message": "x",
                "fix": "fix it",
                "path": "/p",
                "selected": False,
            },
        ],
    }
