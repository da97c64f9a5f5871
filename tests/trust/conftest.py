"""The trust tests' project: a .start/ config with a role file, and a secret outside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from start import trust
from start.config.load import load
from tests.conftest import write_tree

SENTINEL = "SENTINEL-5c1d0e"
CONFIG = '# v1\n[roles.r]\nfile = "roles/r.md"\n\n[tasks.t]\ncommand = "echo hi"\n'


@pytest.fixture
def project(isolated: Path) -> Path:
    write_tree(isolated, {".start/config.toml": CONFIG, "roles/r.md": "ROLE v1\n"})
    (isolated.parent / "home" / "secret.txt").write_text(SENTINEL)
    return isolated


def labels(found: trust.Scan | None) -> list[tuple[str, str]]:
    assert found is not None
    return [(e.label, e.what) for e in found.entries]


def approve_here() -> trust.Approval:
    found = trust.scan(load())
    assert found is not None
    return trust.approve(found)
