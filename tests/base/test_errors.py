"""How a failed command reads: one line, a capped block, or everything (in_full)."""

from __future__ import annotations

from start.base.errors import CommandError


def error(output: str, **kwargs: object) -> CommandError:
    options: dict[str, object] = {"returncode": 1, "output": output, **kwargs}
    return CommandError("task 't'", "cmd", **options)  # type: ignore[arg-type]


def test_one_line_of_output_is_the_message() -> None:
    assert str(error("\n  not a git repository: run this task inside one\n\n")) == (
        "task 't' failed: not a git repository: run this task inside one"
    )


def test_one_line_in_full_still_shows_the_command() -> None:
    assert str(error("oops\n").in_full()) == (
        "task 't' command failed with exit code 1\n  command: cmd\n  output:\n    oops"
    )


def test_21_lines_are_shown_whole_and_22_are_cut() -> None:
    whole = "".join(f"{n}\n" for n in range(21))
    assert str(error(whole)).splitlines()[2:] == ["  output:", *(f"    {n}" for n in range(21))]
    cut = str(error("".join(f"{n}\n" for n in range(22)))).splitlines()
    assert cut[2:] == [
        "  output (22 lines; --debug shows them all):",
        *(f"    {n}" for n in range(10)),
        "    [... 2 lines cut ...]",
        *(f"    {n}" for n in range(12, 22)),
    ]


def test_long_lines_are_clipped_unless_in_full() -> None:
    long = "x" * 1000
    assert str(error(f"{long}\n")) == f"task 't' failed: {'x' * 300} [... 700 more characters]"
    assert str(error(f"a\n{long}\n").in_full()).endswith(f"\n    {long}")


def test_timeout_signal_and_start_failure() -> None:
    assert str(error("", returncode=None, timeout=2.5)) == (
        "task 't' command timed out after 2.5 s\n  command: cmd\n  output: (none)"
    )
    assert str(error("partial\n", returncode=-9)) == (
        "task 't' command was killed by SIGKILL\n  command: cmd\n  output:\n    partial"
    )
    assert str(error("", returncode=None, reason="shell 'fish-nope' not found on PATH")) == (
        "task 't' command could not start: shell 'fish-nope' not found on PATH\n  command: cmd"
    )
