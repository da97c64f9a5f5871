"""The editing tests' global config directory, and the scope of the layer they edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from start.setup import layerfile


@pytest.fixture
def global_dir(isolated: Path) -> Path:
    return isolated.parent / "home" / ".config" / "start"


def scope(layer: layerfile.Layer = "global") -> layerfile.Scope:
    return layerfile.Scope(layer, str(Path.cwd()))
