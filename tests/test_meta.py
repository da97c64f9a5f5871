"""Meta-tests: the core imports without click or rich, and every command has --help."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from start.cli import cli
from tests.conftest import REPO, invoke

CORE = [
    "start.errors",
    "start.paths",
    "start.template",
    "start.config.load",
    "start.config.render",
    "start.resolve",
    "start.sources",
    "start.shell",
    "start.shellwords",
    "start.agent",
    "start.tempfiles",
    "start.launch",
    "start.trust",
    "start.doctor",
    "start.init",
    "start.config.cache",
    "start.config.edit",
    "start.config.splice",
    "start.mcp.library",
    "start.mcp.report",
    "start.mcp.clients",
    "start.adhoc",
    "start.params",
    "start.details",
]


def test_core_imports_without_click_or_rich() -> None:
    code = (
        "import sys\n"
        f"for name in {CORE!r}: __import__(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich', 'tomlkit'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def _commands(
    group: click.Group, ctx: click.Context, prefix: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"command {name} is listed but cannot be loaded"
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found.extend(_commands(command, ctx, (*prefix, name)))
    return found


def all_commands() -> list[tuple[str, ...]]:
    with click.Context(cli) as ctx:
        return [(), *_commands(cli, ctx)]


@pytest.mark.parametrize("path", all_commands(), ids=lambda p: " ".join(p) or "start")
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    result = invoke(*path, "--help")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("Usage: start")


def test_version() -> None:
    from start import __version__

    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout == f"start, version {__version__}\n"


def test_help_lists_the_exit_codes() -> None:
    out = invoke("--help").stdout
    assert "Exit codes:" in out
    for code in ("  0", "  3", "  4", "  5", "126", "127", "130"):
        assert code in out


def test_unknown_command_suggests() -> None:
    result = invoke("tsak")
    assert result.exit_code == 2
    assert result.stderr == (
        "start: no such command 'tsak'; did you mean 'task'?\nhint: run 'start --help' for usage\n"
    )
