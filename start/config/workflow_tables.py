"""The `[workflows]` tables of a config's layer files as the files hold them, unchecked: what a
listing, `start config show`, a shell's completion and the trust review show of workflows, none
of which pays for start.config.workflows' checks and jmespath."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from start.config.model import Config, Origin


def tables(config: Config) -> dict[str, tuple[Origin, dict[str, Any]]]:
    """The `[workflows]` tables of the config's layer files as they are, by name, each with
    where it is; a later layer's replaces an earlier one's (as start.config.workflows.read
    merges them). Unchecked: a listing, `start config show` and a shell's completion need no
    more, and none of them pays for the checks and jmespath. A project file whose bytes are not
    those the load read (and trust approved) is left out: its problems are validate's."""
    from start.base import fs
    from start.config import files
    from start.config.model import Origin

    found: dict[str, tuple[Origin, dict[str, Any]]] = {}
    for layer_file in config.files:
        if not layer_file.parsed:
            continue
        root = config.root if layer_file.layer == "project" else None
        data, _ = files.read_bytes(layer_file.path, root)
        if data is None or (layer_file.digest and fs.sha256(data) != layer_file.digest):
            continue
        table = files.read(layer_file.path, data).table
        body = table.get("workflows") if table is not None else None
        if not isinstance(body, dict):
            continue
        for name, workflow in body.items():
            if isinstance(workflow, dict):
                found[name] = (Origin(layer_file.layer, layer_file.path), workflow)
    return found
