"""Frozen, slotted records of a validated and merged configuration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from start.errors import Problem
from start.paths import ProjectLocation

LAYERS = ("built-in", "global", "project")


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an item or setting was defined: its layer and file."""

    layer: str
    path: Path

    def __str__(self) -> str:
        return f"{self.layer} ({self.path})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    name: str
    origin: Origin
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Agent(Item):
    bin: str
    command: str
    url: str | None = None
    models_url: str | None = None
    default_model: str | None = None
    models: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceItem(Item):
    """An item built from `file`, `command` and `prompt` (the seed's UTD pattern)."""

    file: str | None = None
    command: str | None = None
    prompt: str | None = None
    shell: str | None = None
    command_timeout: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Role(SourceItem):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Context(SourceItem):
    required: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Task(SourceItem):
    alias: str | None = None
    role: str | None = None
    agent: str | None = None
    model: str | None = None
    internal: bool = False


DEFAULT_COMMAND_TIMEOUT = 30
DEFAULT_OUTPUT_LIMIT = 1_048_576


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    default_agent: str | None = None
    default_role: str | None = None
    shell: str | None = None
    command_timeout: int = DEFAULT_COMMAND_TIMEOUT
    command_output_limit: int = DEFAULT_OUTPUT_LIMIT
    origins: Mapping[str, Origin] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LayerFile:
    """One config file as read: its bytes' digest and whether it parsed."""

    layer: str
    path: Path
    digest: str
    parsed: bool


@dataclass(frozen=True, slots=True)
class Config:
    """The merged configuration, every problem found, and where it was found."""

    settings: Settings
    agents: Mapping[str, Agent]
    roles: Mapping[str, Role]
    contexts: Mapping[str, Context]
    tasks: Mapping[str, Task]
    project: ProjectLocation
    files: tuple[LayerFile, ...]
    layer_dirs: Mapping[str, Path | None]
    problems: tuple[Problem, ...] = ()

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.is_error)

    @property
    def root(self) -> Path:
        return self.project.root
