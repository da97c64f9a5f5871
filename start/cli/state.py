"""The shared flags of one run, as the root group and each command leave them."""

from __future__ import annotations

import os

import click

from start.base.paths import current_dir


class Options:
    """Every shared flag; the last place a flag is given wins."""

    def __init__(self, agent_args: list[str] | None = None, argv: list[str] | None = None) -> None:
        self.agent: str | None = None
        self.agents: list[str] = []  # every -a, in order (A,B gives two): --print runs them all
        self.role: str | None = None
        self.no_role = False
        self.model: str | None = None
        self.directory: str | None = None
        self.quiet = False
        self.verbose = 0
        # --debug and START_DEBUG=1 are one switch: show internals, tracebacks included.
        self.debug = bool(os.environ.get("START_DEBUG"))
        self.dry_run = False
        self.json = False
        # --json-fields: the keys of a run's record that --print --json prints (None: the brief
        # ones, start.runs.BRIEF).
        self.json_fields: tuple[str, ...] | None = None
        self.no_color = False
        self.no_project = False
        self.raw = False  # --raw: an answer on a terminal as it is, its escape sequences too
        self.fail_if: str | None = None  # --fail-if PATH: exit 6 when an answer holds true there
        self.contexts: list[str] = []  # -c, from every place it is given, in order
        self.agent_args: list[str] = agent_args or []
        # Every argument given to `start`, `--` and the agent's included: what the history
        # records, and `start again` repeats.
        self.argv: list[str] = argv or []
        # The directory `start` was started in (`start again` repeats a run there).
        self.started_in: str | None = None
        # The command being run, for "run 'start config add --help'" under a usage error.
        self.command_path = "start"

    @property
    def workdir(self) -> str:
        return os.path.realpath(self.directory or current_dir())


def get_options() -> Options:
    return click.get_current_context().ensure_object(Options)
