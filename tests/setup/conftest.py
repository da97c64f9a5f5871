"""What the setup tests share: the global config directory and the scope of the layer the editing
tests edit, and the health check's catalog and PATH."""

from __future__ import annotations

from pathlib import Path

import pytest

from start.setup import layerfile
from tests.setup.test_init import use_catalog, use_path


@pytest.fixture
def global_dir(isolated: Path) -> Path:
    return isolated.parent / "home" / ".config" / "start"


def scope(layer: layerfile.Layer = "global") -> layerfile.Scope:
    return layerfile.Scope(layer, str(Path.cwd()))


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test catalog (agents alpha and beta) and a PATH with only sh and bash on it."""
    use_catalog(tmp_path, monkeypatch)
    return use_path(tmp_path, monkeypatch)
