"""Entry point for ``python -m start`` and the installed ``start`` script (both call `run`)."""

from __future__ import annotations

import gc
from typing import NoReturn


def run() -> NoReturn:
    """The command line, with the cyclic garbage collector off from the first import.

    A `start` process is short-lived: a launch ends in exec and every other command exits, so
    collecting cycles only costs time, most of it while modules are imported
    (docs/performance.md). Reference counting still frees everything else. `start mcp`, which
    serves until its client leaves, turns the collector back on.
    """
    gc.disable()
    from start.cli import main

    main()


if __name__ == "__main__":
    run()
