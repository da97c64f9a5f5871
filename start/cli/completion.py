"""`start completion bash|zsh|fish`, and the answer to a shell's completion request (the names
themselves come from start.cli.completers)."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

from start.cli.commands import Choice, command
from start.cli.completers import escaped
from start.cli.options import common_options
from start.cli.state import Options
from start.ui import console

SHELLS = ("bash", "zsh", "fish")
PROG = "start"
COMPLETE_VAR = "_START_COMPLETE"


@command(
    json=False,
    examples=[
        ("bash: add to ~/.bashrc", 'eval "$(start completion bash)"'),
        ("zsh: add to ~/.zshrc, after compinit", 'eval "$(start completion zsh)"'),
        ("fish", "start completion fish > ~/.config/fish/completions/start.fish"),
    ],
    epilog="Docs: start help --topic completion",
)
@click.argument("shell", type=Choice(SHELLS), metavar="SHELL")
@common_options()
@click.pass_context
def completion(ctx: click.Context, shell: str) -> int:
    """Print the tab-completion script for SHELL: bash, zsh or fish."""
    shell_class = get_completion_class(shell)
    assert shell_class is not None
    script = shell_class(ctx.find_root().command, {}, PROG, COMPLETE_VAR)
    # Not script.source(): for bash it runs `bash` to check its version; docs/completion.md says
    # which versions work instead.
    console.out(script.source_template % script.source_vars(), end="")
    return 0


def respond(cli: click.Command, instruction: str, options: Options) -> int:
    """Answer the shell's `_START_COMPLETE=SHELL_complete` request (or print the script for
    `SHELL_source`). Every value and description is escaped, so config text cannot put a control
    sequence on the terminal while the user presses Tab."""
    shell, _, action = instruction.partition("_")
    shell_class = get_completion_class(shell)
    if shell_class is None or action not in ("complete", "source"):
        console.err(f"start: unknown completion request '{instruction}'")
        return 1
    found = shell_class(cli, {"obj": options}, PROG, COMPLETE_VAR)
    if action == "source":
        console.out(found.source_template % found.source_vars(), end="")
        return 0
    args, incomplete = found.get_completion_args()
    items = found.get_completions(args, incomplete)
    lines = [found.format_completion(escaped(item)) for item in items]
    console.out("\n".join(lines))
    return 0
