"""start.runs.headless beyond the envelope readers (tests/runs/test_envelopes.py has those)."""

from __future__ import annotations

from typing import Any

from start.runs.headless import tail


def test_tail_keeps_the_last_non_empty_lines() -> None:
    assert tail("a\n\nb\nc\n", 2) == "b\nc"


def test_an_answer_over_the_limit_is_not_read_whether_its_agent_exited_or_was_stopped() -> None:
    from types import SimpleNamespace

    from start.proc.agents import AgentRun
    from start.runs import headless

    agent = SimpleNamespace(print_output="text")
    prepared: Any = SimpleNamespace(
        plan=SimpleNamespace(agent=agent),
        config=SimpleNamespace(settings=SimpleNamespace(print_answer_limit=1 << 20)),
        launch=SimpleNamespace(answer_file=None),
    )
    exited = AgentRun(("fake",), 0, False, "x\n", "", 1.0, None, 2 << 20)
    stopped = exited._replace(returncode=None, stdout_size=(1 << 20) + 1, too_large=True)
    assert headless._read(prepared, exited, 60) == (
        None,
        "printed 2 MiB, more than settings.print_answer_limit (1 MiB) allows, so its answer was "
        "not read; raise the limit to read such answers",
    )
    assert headless._read(prepared, stopped, 60) == (
        None,
        "printed more than settings.print_answer_limit (1 MiB) allows, so it was stopped and its "
        "answer was not read; raise the limit to read such answers",
    )
