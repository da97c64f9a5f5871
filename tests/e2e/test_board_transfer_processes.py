"""An import while a runner claims, with real processes: the import is one transaction, so a
claim of the next ready item sees none of the imported items or all of them, never a part
(start.board.store.Board.bring; docs/board.md, "Export and import")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, run_start

# End to end (tests/e2e/): `make test` skips it; `make check`, which CI runs, runs it.
pytestmark = pytest.mark.slow

# A claimer in its own process: it claims the next ready item as `claim --next` does, again and
# again, until it gets one; it says when it has begun (argv[2]) and what it saw (stdout).
_CLAIMER = """
import json, sys
from start.board import Holder
from start.board import file as boardfile
empty = 0
with boardfile.opened(sys.argv[1]) as opened:
    open(sys.argv[2], "w").close()
    while True:
        found = opened.claim_next(Holder("racer"))
        if found is not None:
            break
        empty += 1
print(json.dumps({"id": found.id, "title": found.title, "empty": empty}))
"""

ITEMS = 3000


def test_a_claim_sees_none_or_all_of_an_import_never_a_part(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=isolated, check=True)
    # Every line ready; the last the highest priority. A claim that saw part of the file would
    # take a line of priority 4; one that sees it whole takes the last.
    lines = ['{"format":"start.board","version":1}']
    lines += [json.dumps({"id": f"x{n}", "title": f"low {n}", "priority": 4}) for n in range(ITEMS)]
    lines.append(json.dumps({"id": "last", "title": "the last line", "priority": 0}))
    (isolated / "big.jsonl").write_text("\n".join(lines) + "\n")
    begun = isolated.parent / "begun"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    claimer = subprocess.Popen(
        [sys.executable, "-c", _CLAIMER, str(isolated), str(begun)],
        cwd=isolated,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not begun.exists():
            assert claimer.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        imported = run_start("board", "import", "big.jsonl", "-q", cwd=isolated)
        assert imported.returncode == 0, imported.stderr
        out, _ = claimer.communicate(timeout=60)
    finally:
        if claimer.poll() is None:
            claimer.kill()
            claimer.wait()
    seen = json.loads(out)
    assert seen["title"] == "the last line"
    assert seen["empty"] > 0  # it was claiming before the import began
    assert seen["id"] == f"item-{ITEMS + 1}"
    listed = run_start("board", "--all", "--limit", "0", "--json", cwd=isolated)
    assert len(json.loads(listed.stdout)) == ITEMS + 1
