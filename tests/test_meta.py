"""Meta-tests: the core imports without click or rich, and every command has --help."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import click
import pytest

import start
from start.cli import cli
from tests.conftest import REPO, invoke

# Every module of the package but the command line (start.cli), the terminal doors (console,
# status, and display, the one importer of rich), the MCP SDK adapter (the modules of start.mcp
# that import the SDK, which imports click) and `python -m start`: found by walking the package,
# not listed by hand, so a new module is checked the day it is added.
_NOT_CORE = (
    "start.cli", "start.ui.console", "start.ui.status", "start.ui.display", "start.mcp.server",
    "start.mcp.jobs", "start.mcp.stdio", "start.__main__",
)  # fmt: skip
CORE = sorted(
    module.name
    for module in pkgutil.walk_packages(start.__path__, "start.")
    if not module.name.startswith(_NOT_CORE)
)


def test_core_is_the_whole_package_but_the_shell_around_it() -> None:
    assert {
        "start.compose.pipeline",
        "start.trust.scan",
        "start.config.load",
        "start.base.fs",
    } <= set(CORE)
    assert not [name for name in CORE if name.startswith("start.cli")]


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


def test_every_end_to_end_module_is_marked_slow() -> None:
    """`make test` skips tests/e2e/ by the slow marker; `make check` (CI) runs it."""
    unmarked = [
        path.name
        for path in sorted((REPO / "tests" / "e2e").glob("test_*.py"))
        if "\npytestmark = pytest.mark.slow\n" not in path.read_text(encoding="utf-8")
    ]
    assert unmarked == []


def _import_graph() -> dict[str, set[str]]:
    """Which of start's modules each one imports, anywhere in it (deferred and type-only imports
    count: a circle through them is still a circle to read)."""
    import ast

    paths = {
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): path
        for path in (REPO / "start").rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                for alias in node.names:
                    # `from start.cli import run` imports the module start.cli.run; `from
                    # start.cli.options import Options` imports start.cli.options.
                    name = f"{base}.{alias.name}"
                    found.add(name if name in paths else base)
        graph[module] = {name for name in found if name in paths and name != module}
    return graph


def test_no_module_imports_itself_through_others() -> None:
    graph = _import_graph()
    circles = []
    for start_module in sorted(graph):
        seen, stack = set(), [(start_module, [start_module])]
        while stack:
            module, route = stack.pop()
            for imported in graph[module]:
                if imported == start_module:
                    circles.append(" -> ".join([*route, imported]))
                elif imported not in seen:
                    seen.add(imported)
                    stack.append((imported, [*route, imported]))
    assert circles == []


# The modules at the bottom: errors, records, paths and files, the door for processes and the
# runners of commands and headless agents on it (and their watchdog, the registry of process
# groups and its workers, the records of asking runs, and the live state of a run's agents), temp
# files and output, and the template lexers. They
# import each other and nothing above them (config, resolve, sources, launch, the CLI).
BOTTOM = {
    "start.base.errors", "start.base.record", "start.base.paths", "start.base.fs", "start.base.atomic", "start.proc.shellwords",
    "start.base.template", "start.ui.console", "start.ui.status", "start.ui.display", "start.proc.tempfiles",
    "start.proc.process", "start.proc.shell", "start.proc.agents", "start.base.wall", "start.proc.watchdog",
    "start.proc.lineage", "start.ui.progress", "start.proc.groups",
}  # fmt: skip


def test_the_bottom_modules_import_nothing_above_them() -> None:
    graph = _import_graph()
    upward = {
        m: sorted(graph[m] - BOTTOM - {"start"})
        for m in sorted(BOTTOM)
        if graph[m] - BOTTOM - {"start"}
    }
    assert upward == {}
