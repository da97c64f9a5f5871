"""Entry point for ``python -m start``."""

from start.cli import main

main()
