"""`start board serve`: the board and the history in the browser (start.web)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from start.base.errors import ExitCode
from start.cli.board_options import epilog, person
from start.cli.commands import command
from start.cli.inputs import count
from start.cli.options import DIRECTORY, NO_PROJECT, QUIET, common_options
from start.cli.state import get_options
from start.ui import console


@command(
    examples=[
        ("The board in the browser", "start board serve"),
        (
            "On a port of your choosing, printing the address only",
            "start board serve --port 8765 --no-open",
        ),
    ],
    epilog=epilog(
        "0 stopped (Ctrl-C, or SIGTERM)",
        "1 the port is taken, or the board cannot be read",
    ),
)
@click.option(
    "--port",
    type=count(1, 65535),
    metavar="PORT",
    help="Listen on 127.0.0.1:PORT (default: any free port).",
)
@click.option("--no-open", is_flag=True, help="Print the address; open no browser.")
@common_options(DIRECTORY, QUIET, NO_PROJECT)
def serve(port: int | None, no_open: bool) -> int:
    """Show this project's board and run history in the browser, live, until Ctrl-C.

    The page lists the items in columns by status, with what each waits on, a graph of the
    dependencies, the items in progress and their time, each item whole with its answer
    rendered, and the runs of the history; it adds, edits, comments on, archives, reassigns
    and reopens items as start board does. It listens on 127.0.0.1 only; the address on stdout
    carries a secret token, without which every request is refused. With --json, stdout has
    one JSON object instead: the address, its port and its token.
    """
    import sys

    from start.web import server

    options = get_options()
    with server.running(port or 0, options.workdir, person(None)) as running:
        gate = running.gate
        address = gate.address()
        if options.json:
            console.print_json(
                {"url": address, "port": gate.port, "token": gate.token}, indent=None
            )
        else:
            console.out(address)
        sys.stdout.flush()
        if not options.quiet:
            console.err(
                f"start: serving the board of {running.root} at http://127.0.0.1:{gate.port}/ "
                "(the address on stdout carries its token; Ctrl-C stops)"
            )
        if no_open or not _shown():
            server.serve(running)
            return ExitCode.OK
        with _opener(address) as page:
            server.serve(running, lambda _: _open(page))
    return ExitCode.OK


def _shown() -> bool:
    """Whether this machine may show a browser: a display, macOS, or BROWSER set (a server or a
    CI job only prints the address)."""
    import os
    import sys

    return bool(
        sys.platform == "darwin"
        or os.environ.get("BROWSER")
        or os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
    )


@contextmanager
def _opener(address: str) -> Iterator[str]:
    """A file only the user may read, that sends the browser on to `address`: the browser is
    started with the file's path, so the token never shows in its command line, which every
    local user can read (ps); removed when the server stops."""
    import html
    import os
    import tempfile

    from start.base import paths

    directory = paths.runtime_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="start-board-", suffix=".html", dir=directory)
    shown = html.escape(address, quote=True)
    text = (
        f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={shown}">'
        f'<title>start board</title><p><a href="{shown}">Open the board</a></p>\n'
    )
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    try:
        yield path
    finally:
        os.unlink(path)


def _open(page: str) -> None:
    """Open `page` in the browser Python's webbrowser finds; not in a console browser (w3m,
    lynx, links, which it falls back to where no graphical one is installed): it would take the
    terminal the address was printed to. A browser the user named in BROWSER is theirs."""
    import os
    import webbrowser

    if not os.environ.get("BROWSER"):
        try:
            chosen = webbrowser.get()
        except webbrowser.Error:
            return
        if type(chosen) is webbrowser.GenericBrowser:  # a console one; graphical ones differ
            return
    webbrowser.open("file://" + page)
