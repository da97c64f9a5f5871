"""The health check's config section: each layer's files, read or not, and what validation found."""

from __future__ import annotations

import os
from collections.abc import Iterator
from stat import S_ISREG

from start.base import paths
from start.base.errors import Problem
from start.config.model import Config
from start.setup.report import Check

# How many validator problems of one file the report lists; `start config validate` lists all.
SHOWN_PER_FILE = 20
# A validator problem that a later section reports in its own words: (file, key path).
Claim = tuple[str | None, str]


def config_files(config: Config, use_project: bool, claims: set[Claim]) -> Iterator[Check]:
    """Each file of each layer, parsed or not, then every validator problem."""
    from start.config.interop.dirs import in_command_dir
    from start.config.interop.skills import in_skill_dir

    # A file's own problem (syntax, or why it cannot be read) is told on the file's line.
    unparsed = {f.path for f in config.files if not f.parsed}
    syntax = {p.file: p for p in config.problems if p.file in unparsed and not p.key}
    for layer, directory in config.layer_dirs.items():
        layer_files = [f for f in config.files if f.layer == layer]
        # Other agents' command files (start.config.interop): one line, their findings below.
        commands = [f for f in layer_files if in_command_dir(f.path, config.root)]
        # Skill folders (start.config.interop.skills): one line for all their files.
        skills = [f for f in layer_files if f not in commands and in_skill_dir(f.path, config.root)]
        layer_files = [f for f in layer_files if f not in commands and f not in skills]
        if commands:
            many = "s" if len(commands) != 1 else ""
            yield Check(
                "config", "ok", layer, f"{len(commands)} command file{many} of other agents read"
            )
        if skills:
            count = len({os.path.dirname(f.path) for f in skills if f.path.endswith("SKILL.md")})
            many = "s" if count != 1 else ""
            yield Check("config", "ok", layer, f"{count} skill{many} of other agents read")
        for read in layer_files:
            problem = syntax.get(read.path)
            if read.parsed:
                yield Check("config", "ok", layer, f"{read.path} parsed", path=read.path)
            elif problem is not None:
                fix = (
                    f"correct the TOML at line {problem.line}, column {problem.column} of "
                    f"{os.path.basename(read.path)}"
                    if problem.line is not None
                    else _unread_fix(read.path)
                )
                yield Check("config", "error", layer, str(problem), fix, read.path)
            else:
                yield Check(
                    "config", "error", layer, f"{read.path} could not be parsed", path=read.path
                )
        if layer_files or commands or skills or layer == "imported":
            continue
        if layer == "project" and not use_project:
            yield Check("config", "info", layer, "ignored (--no-project or START_NO_PROJECT=1)")
        elif layer == "project" and directory is None:
            yield Check(
                "config",
                "info",
                layer,
                f"no {paths.PROJECT_DIR_NAME}/ directory in {config.root}",
                "run 'start init --project' to add project config",
            )
        elif layer == "global":
            yield Check(
                "config",
                "info",
                layer,
                f"no config files in {directory}",
                "run 'start init' to write a starter config",
                directory,
            )
        else:
            yield Check("config", "info", layer, f"no config files in {directory}", path=directory)
    shown = [
        p for p in config.problems if p not in syntax.values() and (p.file, p.key) not in claims
    ]
    per_file: dict[str | None, int] = {}
    for problem in sorted(shown, key=lambda p: (p.where, p.line or 0)):
        count = per_file[problem.file] = per_file.get(problem.file, 0) + 1
        if count > SHOWN_PER_FILE:
            continue
        yield Check(
            "config",
            "error" if problem.is_error else "warning",
            f"{problem.line}:{problem.column or 1}" if problem.line is not None else "-",
            problem.detail,
            _fix(problem),
            problem.file,
            heading=problem.where,
        )
    for file, count in per_file.items():
        if count > SHOWN_PER_FILE:
            more = count - SHOWN_PER_FILE
            yield Check(
                "config",
                "warning",
                "-",
                f"{more:,} more problem{'s' if more != 1 else ''} of this file not shown",
                "run 'start config validate' to see every one",
                file,
                heading=next(p.where for p in shown if p.file == file),
            )
    if not config.problems:
        count = len(config.files)
        yield Check(
            "config", "ok", "validate", f"no problems in {count} file{'s' if count != 1 else ''}"
        )


def _unread_fix(path: str) -> str:
    """The fix for a config file that was not read: its size, when that was all that was wrong."""
    from start.config.files import CONFIG_LIMIT

    try:
        stat = os.stat(path)
    except OSError:
        stat = None
    readable = stat is not None and S_ISREG(stat.st_mode) and os.access(path, os.R_OK)
    if readable and stat is not None and stat.st_size > CONFIG_LIMIT:
        return f"shorten {path} to at most {CONFIG_LIMIT:,} bytes, or remove it"
    return f"make {path} a regular file you can read, or remove it"


def _fix(problem: Problem) -> str:
    where = os.path.basename(problem.file) if problem.file is not None else "your config"
    if problem.suggestion and not problem.key:
        return f"rename {where} to '{problem.suggestion}', or remove it"
    if problem.suggestion:
        return f"use '{problem.suggestion}' instead, in {where}"
    if problem.key:
        return f"edit {problem.key} in {where}, then run 'start doctor' again"
    return f"edit {where}, then run 'start doctor' again"
