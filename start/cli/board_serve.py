"""`start board serve`: the board and the history in the browser (start.web)."""

from __future__ import annotations

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
    carries a secret token, without which every request is refused.
    """
    from start.web import server

    options = get_options()
    with server.running(port or 0, options.workdir, person(None)) as running:
        address = running.gate.address()
        console.out(address)
        import sys

        sys.stdout.flush()
        if not options.quiet:
            console.err(f"start: serving the board of {running.root} at {address} (Ctrl-C stops)")
        server.serve(running, None if no_open else _open)
    return ExitCode.OK


def _open(address: str) -> None:
    """Open `address` in the user's browser when this machine shows one (a display, macOS, or
    BROWSER set): never a text browser in the terminal the address went to."""
    import os
    import sys

    if not (sys.platform == "darwin" or os.environ.get("BROWSER")
            or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):  # fmt: skip
        return
    import webbrowser

    webbrowser.open(address)
