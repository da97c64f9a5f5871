"""`start find TEXT`: the tasks and workflows ranked by how well their names, aliases and
descriptions hold TEXT's words (start.config.finding), with a score and why."""

from __future__ import annotations

import click

from start.base.errors import ExitCode, StartError, UsageError
from start.cli.commands import command
from start.cli.inputs import count
from start.cli.options import DIRECTORY, NO_PROJECT, common_options
from start.cli.state import get_options
from start.config import finding
from start.config.load import load
from start.ui import console

HEADERS = ("name", "score", "why", "description")
CUT = (2, 3)  # why and description narrow to the page's width


class NoTaskMatchesError(StartError):
    """No task holds any of TEXT's words (exit 4, as a name that is not there)."""

    exit_code = ExitCode.UNKNOWN_NAME

    def __init__(self, text: str) -> None:
        super().__init__(
            f"no task matches '{text}'; try other words, or list every task with 'start task'"
        )


@command(
    examples=[
        ("The tasks that review a diff, best first", "start find review the diff"),
        ("The three best, as data", "start find --limit 3 --json commit message"),
    ],
    epilog="Exit codes: 0 found; 2 usage; 3 config invalid; 4 no task matches.\n\n"
    "Docs: start help usage",
)
@click.argument("words", metavar="TEXT...", nargs=-1, required=True)
@click.option(
    "--limit",
    type=count(),
    default=finding.LIMIT,
    show_default=True,
    metavar="N",
    help="Show at most N tasks.",
)
@common_options(DIRECTORY, NO_PROJECT)
def find(words: tuple[str, ...], limit: int) -> int:
    """Find a task by what it does: the tasks and workflows whose names, aliases and
    descriptions hold TEXT's words, best first, with a score and why.

    Start's tasks, other agents' command files, Agent Skills and workflows are searched
    (internal tasks are not); a workflow is shown as 'NAME (workflow)'. A word counts 2 in a
    name or alias and 1 in a description; the same word counts whole, its stem 0.9, a prefix
    0.7 and, in a name, a close spelling 0.6. The score (0 to 1) is what TEXT's words are worth
    together over what they could be; `why` says where each was found.
    """
    options = get_options()
    text = " ".join(words)
    if not finding.words(text):
        raise UsageError(
            f"TEXT {text!r} has no word to look for; say what the task does in words: "
            "start find review the diff"
        )
    config = load(options.workdir, use_project=not options.no_project, strict=True)
    # The index kept beside the config cache's entry, made by the first find after a change: no
    # task is decoded to rank them.
    found = finding.search(finding.of_config(config), text, limit)
    if options.json:
        console.print_json([match.as_data() for match in found])
    if not found:
        raise NoTaskMatchesError(text)
    if options.json:
        return ExitCode.OK
    rows = [
        [
            match.name if match.kind != finding.WORKFLOW else f"{match.name} (workflow)",
            f"{match.score:.2f}",
            finding.why(match),
            match.description or "",
        ]
        for match in found
    ]
    from start.ui import display

    display.print_table(HEADERS, rows, no_color=options.no_color, cut=CUT)
    return ExitCode.OK
