"""The terminal doors (start.ui.console, start.ui.display, start.ui.status): escaping, the colour rules,
display width, paging on a real terminal, and the status line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from start.ui import console, display
from start.ui.console import Printer, Styled, printable
from start.ui.display import Page, trim_end
from start.ui.status import StatusLine
from tests.conftest import FAKE_AGENT, REPO, invoke, run_start, write_tree
from tests.fake_headless import agent
from tests.terminal import run_on_terminal


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# --- escaping --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain text", "plain text"),
        ("tab\tkept", "tab\tkept"),
        ("x\x1b]0;title\x07\x1b[2J", "x\\x1b]0;title\\x07\\x1b[2J"),
        ("csi\x9b31m", "csi\\x9b31m"),
        ("bidi \u202eevil", "bidi \\u202eevil"),
        ("line\nbreak\r", "line\\nbreak\\r"),
        ("名前 ✓ café", "名前 ✓ café"),
    ],
)
def test_printable_escapes_what_could_disguise_text(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_printable_keeps_newlines_when_multiline() -> None:
    assert printable("a\nb\x1b", multiline=True) == "a\nb\\x1b"


def test_a_printer_escapes_every_segment_before_styling_it() -> None:
    out = Terminal()
    Printer(stream=out).line("a\x1b[2J ", Styled("b\x07", "bold red"))
    assert out.getvalue() == "a\\x1b[2J \x1b[1;31mb\\x07\x1b[0m\n"


def test_a_pre_styled_string_is_shown_not_obeyed() -> None:
    out = Terminal()
    Printer(stream=out).line("\x1b[1mbold?\x1b[0m")
    assert out.getvalue() == "\\x1b[1mbold?\\x1b[0m\n"


def test_a_block_keeps_its_lines() -> None:
    out = io.StringIO()
    Printer(stream=out).block("one\ntwo\x1b")
    assert out.getvalue() == "one\ntwo\\x1b\n"


def test_quiet_silences_notes_only() -> None:
    out = io.StringIO()
    printer = Printer(stream=out, quiet=True)
    printer.note("done")
    printer.line("a problem")
    assert out.getvalue() == "a problem\n"


# --- colour rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "flag", "tty", "coloured"),
    [
        ({}, False, True, True),
        ({}, False, False, False),
        ({}, True, True, False),
        ({"NO_COLOR": "1"}, False, True, False),
        ({"NO_COLOR": ""}, False, True, True),
        ({"TERM": "dumb"}, False, True, False),
        ({"FORCE_COLOR": "1"}, False, False, True),
        ({"FORCE_COLOR": "1", "TERM": "dumb"}, False, True, True),
        ({"CLICOLOR_FORCE": "1"}, False, False, True),
        ({"CLICOLOR_FORCE": "0"}, False, False, False),
        ({"FORCE_COLOR": "0"}, False, False, False),
        ({"FORCE_COLOR": ""}, False, False, False),
        ({"FORCE_COLOR": "0"}, False, True, True),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, False, False),
        ({"FORCE_COLOR": "1"}, True, False, False),
    ],
)
def test_colour_rules(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], flag: bool, tty: bool, coloured: bool
) -> None:
    monkeypatch.setenv("TERM", "xterm")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    stream = Terminal() if tty else io.StringIO()
    assert console.color_enabled(stream, flag) is coloured
    Printer(stream=stream, no_color=flag).line(Styled("x", "bold"))
    assert stream.getvalue() == ("\x1b[1mx\x1b[0m\n" if coloured else "x\n")


def test_rich_output_without_colour_has_no_sgr_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich's own NO_COLOR keeps bold; start's rule is no styling whatsoever."""
    monkeypatch.setenv("NO_COLOR", "1")
    page = Page()
    page.line(Styled("heading", "bold"), " ", Styled("dim", "dim"))
    page.table(["task", "alias"], [[Styled("a", "bold cyan"), "b"]])
    page.syntax('[settings]\nshell = "bash"\n', "toml")
    page.markdown("# Title\n\n**bold** `code`\n")
    text = page.render(Terminal())
    assert "\x1b" not in text
    assert text.startswith("heading dim\n")


def test_rich_output_with_colour_has_no_background(monkeypatch: pytest.MonkeyPatch) -> None:
    page = Page()
    page.syntax('[settings]\nshell = "bash"  # a comment\n', "toml")
    text = page.render(Terminal())
    assert "\x1b[" in text
    # 4x, 48;5 and 48;2 select a background colour: the theme must leave the terminal's own.
    for code in text.split("\x1b[")[1:]:
        params = code.split("m", 1)[0].split(";")
        assert not any(p.startswith("4") and len(p) == 2 for p in params), repr(code)
        assert "48" not in params, repr(code)


# --- width -----------------------------------------------------------------------------------


def test_a_plain_table_pads_by_display_width(capsys: pytest.CaptureFixture[str]) -> None:
    display.print_table(
        ["task", "alias", "description"],
        [["名前", "n", "wide name"], ["ab", "a", "ascii"], ["x\x1b[2J", "", "escaped"]],
    )
    assert capsys.readouterr().out == (
        "TASK      ALIAS  DESCRIPTION\n"
        "名前      n      wide name\n"
        "ab        a      ascii\n"
        "x\\x1b[2J         escaped\n"
    )


def test_a_plain_table_is_never_wrapped_into_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    long = "word " * 60
    display.print_table(["task", "description"], [["t", long.strip()]])
    assert capsys.readouterr().out.splitlines()[1] == f"t     {long.strip()}"


def test_columns_wraps_a_pipe_with_a_hanging_indent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "30")
    page = Page()
    page.row(["·", "subject", "a message long enough to wrap twice over here"], [1, 8], indent=2)
    assert page.render(io.StringIO()) == (
        "  · subject  a message long\n             enough to wrap\n             twice over here\n"
    )


# --- on a real terminal ----------------------------------------------------------------------

LISTING = """
[tasks.review]
alias = "rv"
description = "Review the staged diff, with a description long enough to wrap on a narrow terminal"
prompt = "Review: {instructions}"
"""


@pytest.fixture
def config(isolated: Path) -> dict[str, str]:
    directory = isolated.parent / "config"
    write_tree(directory, {"config.toml": LISTING})
    return {"START_CONFIG_DIR": str(directory)}


def test_a_listing_on_a_terminal_is_coloured_and_fits(
    isolated: Path, config: dict[str, str]
) -> None:
    code, screen = run_on_terminal("task", cwd=isolated, env=config, columns=60)
    assert code == 0
    assert "\x1b[1mTASK" in screen  # the header is bold, in the capitals a pipe gets
    lines = _plain(screen).splitlines()
    piped = invoke("task").stdout.splitlines()[0]
    assert lines[0].split() == piped.split() == ["TASK", "ALIAS", "DESCRIPTION", "LAYER"]
    [row] = [index for index, line in enumerate(lines) if line.startswith("review ")]
    # The description wraps within its column: the next line is indented to it.
    column = lines[row].index("Review the staged")
    assert lines[row + 1][:column].strip() == ""
    assert lines[row + 1][column:].strip()
    assert all(len(line) <= 60 for line in lines)


def test_no_color_on_a_terminal_means_no_escape_at_all(
    isolated: Path, config: dict[str, str]
) -> None:
    for args, env in (
        (("task",), {"NO_COLOR": "1"}),
        (("--no-color", "task"), {}),
        (("doctor",), {"NO_COLOR": "1"}),
        (("config", "show", "--no-pager"), {"NO_COLOR": "1"}),
        (("config", "validate"), {"NO_COLOR": "1"}),
    ):
        _code, screen = run_on_terminal(*args, cwd=isolated, env={**config, **env})
        assert "\x1b" not in screen, (args, screen)


def test_config_show_pages_on_a_terminal(
    isolated: Path, config: dict[str, str], tmp_path: Path
) -> None:
    paged = tmp_path / "paged"
    pager = {"START_PAGER": f"cat > {paged}", "PAGER": "false"}
    code, screen = run_on_terminal("config", "show", "tasks", cwd=isolated, env={**config, **pager})
    assert code == 0
    assert screen == ""
    text = _plain(paged.read_text())
    assert "[tasks.review]" in text
    assert 'alias = "rv"' in text


def test_pager_falls_back_to_pager_and_can_be_turned_off(
    isolated: Path, config: dict[str, str], tmp_path: Path
) -> None:
    paged = tmp_path / "paged"
    code, screen = run_on_terminal(
        "config", "show", "tasks", cwd=isolated, env={**config, "PAGER": f"cat > {paged}"}
    )
    assert (code, screen) == (0, "")
    assert "[tasks.review]" in _plain(paged.read_text())
    paged.unlink()
    code, screen = run_on_terminal(
        "config", "show", "tasks", "--no-pager", cwd=isolated, env={**config, "PAGER": "false"}
    )
    assert code == 0
    assert "[tasks.review]" in _plain(screen)
    assert not paged.exists()
    code, screen = run_on_terminal(
        "config", "show", "tasks", cwd=isolated, env={**config, "START_PAGER": ""}
    )
    assert "[tasks.review]" in _plain(screen)


def test_config_show_wraps_instead_of_cropping(isolated: Path, config: dict[str, str]) -> None:
    code, screen = run_on_terminal(
        "config", "show", "tasks", "--no-pager", cwd=isolated, env=config, columns=50
    )
    assert code == 0
    joined = " ".join(_plain(screen).split())
    assert "with a description long enough to wrap on a narrow terminal" in joined
    assert all(len(line) <= 50 for line in _plain(screen).splitlines())


def test_a_help_topic_is_rendered_through_the_pager(isolated: Path, tmp_path: Path) -> None:
    paged = tmp_path / "paged"
    code, screen = run_on_terminal(
        "help", "placeholders", cwd=isolated, env={"START_PAGER": f"cat > {paged}"}
    )
    assert (code, screen) == (0, "")
    text = _plain(paged.read_text())
    assert "Placeholders" in text
    assert "# Placeholders" not in text  # rendered, not the Markdown source


def _plain(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# --- one door --------------------------------------------------------------------------------


def test_only_the_doors_write_to_the_terminal_and_only_the_display_imports_rich() -> None:
    """Writes and prints live in start/ui/console.py and start/ui/display.py, rich in
    start/ui/display.py only; elsewhere only flushes and isatty (start/ui/status.py writes to the
    stream it is given)."""
    import re

    package = REPO / "start"
    writes = re.compile(r"sys\.(stdout|stderr)\.write|\bprint\(|click\.(echo|secho)")
    rich = re.compile(r"^\s*(from|import) rich", re.MULTILINE)
    offenders = []
    for path in package.rglob("*.py"):
        name = str(path.relative_to(package))
        text = path.read_text(encoding="utf-8")
        if name not in ("ui/console.py", "ui/display.py"):
            offenders += [f"{name}: {match.group()}" for match in writes.finditer(text)]
        if name != "ui/display.py":
            offenders += [f"{name}: {match.group()}" for match in rich.finditer(text)]
    assert offenders == []


def test_a_pager_that_is_not_there_does_not_lose_the_page(
    isolated: Path, config: dict[str, str]
) -> None:
    code, screen = run_on_terminal(
        "config", "show", "tasks", cwd=isolated, env={**config, "START_PAGER": "no-such-pager"}
    )
    assert code == 0
    assert "[tasks.review]" in _plain(screen)


def test_no_trailing_spaces_even_inside_styles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    page = Page()
    page.row([Styled("→", "dim"), Styled("words that wrap " * 4, "dim")], [1], indent=2)
    text = page.render(Terminal())
    assert "\x1b[2m" in text
    assert all(not line.replace("\x1b[0m", "").endswith(" ") for line in text.splitlines())


_OLD_TRAILING = r"(?: |\x1b\[[0-9;]*m)+$"


@given(st.lists(st.sampled_from([" ", "  ", "a", "m", "\x1b[", "\x1b[0m", "\x1b[1;2m", "1", ";"])))
def test_trim_end_keeps_what_the_old_pattern_kept(pieces: list[str]) -> None:
    """The old regular expression is the oracle on short lines, where it was fast."""
    import re

    line = "".join(pieces)
    codes = re.compile(r"\x1b\[[0-9;]*m")
    expected = re.sub(_OLD_TRAILING, lambda m: "".join(codes.findall(m.group())), line)
    assert trim_end(line) == expected


def test_rendering_a_long_line_of_spaces_is_linear() -> None:
    """A long run of spaces, and a table with a 100,000-character description: the old pattern
    took minutes on 32,000 characters off a terminal."""
    line = ("a" + " " * 1_000_000) * 2 + "b"
    assert trim_end(line + " " * 10 + "\x1b[0m  ") == line + "\x1b[0m"


def test_an_indented_row_off_a_terminal_is_not_padded_to_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Off a terminal the page is 100,000 columns wide: a row padded to it made `start doctor`
    over 30,000 warnings take 23 GB and ten minutes."""
    import io

    page = Page()
    page.row(["a", "b"], [1], indent=2)
    stream = io.StringIO()
    monkeypatch.setattr("start.ui.display.is_tty", lambda stream: False)
    rendered = page.render(stream, no_color=True)
    assert rendered == "  a b\n"
    from rich.console import Console

    seen: list[int] = []
    real = Console.print

    def spy(self: Console, *args: object, **kwargs: object) -> None:
        before = self.file.tell()
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        seen.append(self.file.tell() - before)

    monkeypatch.setattr(Console, "print", spy)
    page.render(stream, no_color=True)
    assert seen == [6]


def test_the_task_list_with_a_long_description_is_linear(isolated: Path) -> None:
    """`start task | cat` with a 32,000-character description took 160 s with the old pattern."""
    description = "word " * 6_400
    write_tree(
        isolated.parent / "home/.config/start",
        {"tasks.toml": f'[tasks.big]\ndescription = "{description}"\nprompt = "x"\n'},
    )
    result = invoke("task")
    assert result.exit_code == 0
    assert " ".join(result.stdout.split()).count("word") == 6_400


# --- the status line ------------------------------------------------------------------------


def test_a_status_line_counts_the_seconds_elapsed() -> None:
    now = [100.0]
    stream = Terminal()
    status = StatusLine(stream, elapsed=True, clock=lambda: now[0])
    try:
        status(["task slow"])
        assert stream.getvalue() == "\rstart: running task slow …"
        now[0] += 0.9
        status.tick()
        assert stream.getvalue().endswith("\rstart: running task slow …")  # no "0 s"
        now[0] += 2.2
        status.tick()
        assert stream.getvalue().endswith("\rstart: running task slow … 3 s")
        status(["context git-status", "task slow"])
        assert stream.getvalue().endswith("\rstart: running context git-status, task slow … 3 s")
    finally:
        status([])
    line = "start: running context git-status, task slow … 3 s"
    assert stream.getvalue().endswith("\r" + " " * len(line) + "\r")
    status.tick()  # cleared: nothing more is drawn
    assert stream.getvalue().endswith("\r" + " " * len(line) + "\r")


def test_a_status_line_keeps_the_time_in_view_when_cut() -> None:
    now = [0.0]
    stream = Terminal()
    status = StatusLine(stream, elapsed=True, clock=lambda: now[0])
    try:
        status(["x" * 200])
        now[0] = 12.5
        status.tick()
    finally:
        status([])
    drawn = stream.getvalue().split("\r")[-3]
    assert (len(drawn), drawn[-9:]) == (79, "xxx… 12 s")


def test_validation_is_grouped_on_a_terminal_and_one_line_each_otherwise(isolated: Path) -> None:
    directory = isolated.parent / "config"
    write_tree(directory, {"config.toml": '[tasks.t]\ncomand = "x"\n'})
    path = directory / "config.toml"
    env = {"START_CONFIG_DIR": str(directory), "NO_COLOR": "1"}
    _code, screen = run_on_terminal("config", "validate", cwd=isolated, env=env)
    assert screen.startswith(
        f"{path}\n"
        "  1:1  error    tasks.t: needs at least one of 'file', 'command' or 'prompt'\n"
        "  2:1  warning  tasks.t.comand: unknown key 'comand' (did you mean 'command'?)\n"
    )
    piped = run_start("config", "validate", cwd=isolated, env=env)
    assert piped.stdout.startswith(
        f"{path}:1:1: error: tasks.t: needs at least one of 'file', 'command' or 'prompt'\n"
        f"{path}:2:1: warning: tasks.t.comand: unknown key 'comand' (did you mean 'command'?)\n"
    )


# --- wrapping summary lines -----------------------------------------------------------------


def _rows(line: list[console.Part], width: int) -> list[str]:
    return [
        "".join(p.text if isinstance(p, Styled) else p for p in row)
        for row in console.wrap_line(line, width)
    ]


def test_a_long_line_wraps_between_words_under_its_value() -> None:
    path = "/home/me/.local/pipx/venvs/start-agent/lib/python3.12/site-packages/start/t.toml"
    assert _rows([f"  task          gdr  (built-in: {path})"], 80) == [
        "  task          gdr  (built-in:",
        f"                {path})",  # the path is whole, under the value
    ]
    assert _rows(["  role          short"], 80) == ["  role          short"]


def test_wrapping_keeps_styles_across_the_break() -> None:
    line: list[console.Part] = [
        "  contexts      ",
        Styled("✓ first", "green"),
        "  ",
        Styled("✗ second (missing: /a/b/c)", "yellow"),
    ]
    rows = console.wrap_line(line, 40)
    assert rows == [
        ["  contexts      ", Styled("✓ first", "green"), "  ", Styled("✗ second", "yellow")],
        [" " * 16, Styled("(missing: /a/b/c)", "yellow")],
    ]


def test_the_launch_summary_wraps_between_words_on_a_terminal(isolated: Path) -> None:
    deep = isolated / ("a-rather-long-directory-name/" * 3)
    write_tree(deep, {"t.md": "x"})
    directory = isolated.parent / "config"
    agent = f'[agents.fake]\nbin = "{FAKE_AGENT}"\ncommand = "{{bin}} {{prompt}}"\n'
    write_tree(directory, {"config.toml": agent})
    env = {"START_CONFIG_DIR": str(directory), "NO_COLOR": "1"}
    _code, screen = run_on_terminal(
        "--dry-run", "task", str(deep / "t.md"), cwd=isolated, env=env, columns=60
    )
    piped = run_start("--dry-run", "task", str(deep / "t.md"), cwd=isolated, env=env)
    assert piped.returncode == 0, piped.stderr
    summary = piped.stdout.split("\n\n", 1)[0]
    shown = screen.split("\n\n", 1)[0]
    assert shown.split() == summary.split()  # the same words, none cut
    [task] = [line for line in summary.splitlines() if line.startswith("  task ")]
    assert len(task) > 60
    # The label keeps its value's first word, however long; the rest wraps under it.
    assert f"\n  task          {deep / 't.md'}\n                (command line:" in shown


# --- streams that cannot take every character (issue 44) ----------------------------------------

WORD = "café✓"  # é is in Latin-1, ✓ is not
JSON_WORD = b"caf\\u00e9\\u2713"
HEADLESS = f'[settings]\ndefault_agent = "fake"\n\n{agent("fake")}'


def start_bytes(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The real `start` in a subprocess, its output as the bytes it wrote."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "start", *args],
        env=full,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_stdout_that_cannot_take_a_character_shows_it_escaped(
    isolated: Path, encoding: str
) -> None:
    """`doctor`, `board`, `board show` and `log show` exited 70 (UnicodeEncodeError): now a
    character stdout cannot take is written as stderr writes it (`\\u2713`), and JSON is all
    ASCII in its own escapes; nothing is lost."""
    write_tree(isolated.parent / "home" / ".config" / "start", {"config.toml": HEADLESS})
    for step in (
        ("board", "add", f"t-{WORD}"),
        ("board", "done", "1", "--answer", f"a-{WORD}"),
        ("-q", "prompt", "--print", f"p-{WORD}"),
    ):
        assert start_bytes(*step).returncode == 0
    human = WORD.encode(encoding, "backslashreplace")
    cases: list[tuple[tuple[str, ...], bytes]] = [
        (("doctor",), b"\\u2713"),
        (("board", "--all", "-q"), b"t-" + human),  # completed: not open; -q: no root line
        (("board", "--all", "--json"), b"t-" + JSON_WORD),
        (("board", "show", "1"), b"a-" + human),
        (("board", "show", "1", "--json"), b"a-" + JSON_WORD),
        (("board", "watch", "1", "-q"), b"a-" + human),
        (("log", "show", "--no-pager"), b"ANSWER: p-" + human),
        (("log", "show", "--answer"), b"ANSWER: p-" + human + b"\n"),
        (("log", "--json"), b"p-" + JSON_WORD),
    ]
    for args, shown in cases:
        result = start_bytes(*args, env={"PYTHONIOENCODING": encoding})
        assert (result.returncode, result.stderr) == (0, b""), args
        assert shown in result.stdout, (args, result.stdout)
        if "--json" in args:
            json.loads(result.stdout)


def test_json_goes_all_ascii_where_stdout_cannot_take_it_or_a_terminal_would_hide_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    value = {"word": WORD, "sneaky": "a\u202eb\x9b"}
    exact = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    escaped = json.dumps(value, indent=2) + "\n"
    for stream, expected in (
        (io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), exact),
        (io.TextIOWrapper(io.BytesIO(), encoding="latin-1"), escaped),
        (io.TextIOWrapper(io.BytesIO(), encoding="ascii"), escaped),
        (Terminal(), escaped),
    ):
        monkeypatch.setattr(sys, "stdout", stream)
        console.print_json(value)
        stream.flush()
        written = stream.getvalue() if isinstance(stream, Terminal) else stream.buffer.getvalue()
        assert (written if isinstance(written, str) else written.decode()) == expected
    # A lone surrogate (a byte that was not UTF-8) cannot be written as UTF-8: its escape can.
    buffer = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(buffer, encoding="utf-8"))
    console.print_json(["x\udcff"], indent=None)
    sys.stdout.flush()
    assert buffer.getvalue() == b'["x\\udcff"]\n'
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    console.print_json([WORD], indent=None)
    assert terminal.getvalue() == f'["{WORD}"]\n'  # what a terminal shows plainly stays as is


def test_data_from_others_is_escaped_on_a_terminal_and_exact_off_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hostile = "hi \x1b]52;c;cHduZWQ=\x07 \x1b]0;title\x07\nnext\tline"
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert console.for_stdout(hostile) == (
        "hi \\x1b]52;c;cHduZWQ=\\x07 \\x1b]0;title\\x07\nnext\tline"
    )
    assert console.for_stdout(hostile, raw=True) == hostile
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert console.for_stdout(hostile) == hostile


def test_local_time_shows_a_recorded_time_in_this_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "XYZ-9")
    time.tzset()
    try:
        assert console.local_time("2026-01-31T18:00:05+00:00") == "2026-02-01 03:00"
        assert console.local_time("2026-01-31T18:00:05+01:00", seconds=True) == (
            "2026-02-01 02:00:05"
        )
        # Without an offset it is local already; what is no time is shown as it is.
        assert console.local_time("2026-01-31T18:00:05") == "2026-01-31 18:00"
        assert console.local_time("yesterday") == "yesterday"
    finally:
        monkeypatch.undo()
        time.tzset()
