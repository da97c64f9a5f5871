"""`start trust` and `start untrust` on the real command line: the review, --yes, --show, the list
and revoking."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, invoke, run_start, write_tree
from tests.hostile import Scene, approve, edit, run_task

# --- the trust and untrust commands ---------------------------------------------------------


def test_trust_show_lists_what_approval_allows_and_marks_outside(scene: Scene) -> None:
    result = scene.start("trust", "--show")
    home = scene.project.parent.parent / "home"
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        f"{scene.project}/.start comes with this project.",
        f"Trusting it lets start, in {scene.project}:",
        "  run these commands:",
    ]
    for line in (
        "    contexts.pwn.command  touch $CANARY",
        "    agents.evil.bin  ./evil  (inside the project)",
        f"    contexts.leak.file  {home}/secret.txt  (outside project root)",
        f"    roles.evil.file     {home}/secret.txt  (outside project root)",
        "    .start/config.toml",
    ):
        assert line in lines
    assert lines[-1] == "Status: not trusted: never approved"
    assert not scene.start("trust", "--list", "--json").stdout.strip("[]\n")


def test_trust_show_diffs_against_the_earlier_approval(scene: Scene) -> None:
    approve(scene)
    edit(scene.project, "# v1", "# v2")
    result = scene.start("trust", "--show")
    lines = result.stdout.splitlines()
    start = lines.index("    .start/config.toml  changed")
    assert lines[start + 1 : start + 5] == [
        "  --- a/.start/config.toml",
        "  +++ b/.start/config.toml",
        "  @@ -1,4 +1,4 @@",
        "  -# v1",
    ]
    assert lines[-1] == "Status: not trusted: 1 file changed since approval"


def test_trust_show_escapes_terminal_control_characters(scene: Scene) -> None:
    edit(
        scene.project,
        'command = "touch $CANARY"',
        'command = "touch $CANARY\\u001b[2K\\rls \\u202e"',
    )
    result = scene.start("trust", "--show")
    assert "touch $CANARY\\x1b[2K\\rls \\u202e" in result.stdout
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout


def test_trust_without_a_terminal_needs_yes(scene: Scene) -> None:
    result = scene.start("trust")
    assert (result.returncode, result.stderr) == (
        2,
        "start: no terminal to ask on; review with 'start trust --show', then approve with "
        "'start trust --yes'\n",
    )
    assert scene.start("trust", "--list", "--json").stdout == "[]\n"


def test_trust_a_directory_and_again(scene: Scene, tmp_path: Path) -> None:
    result = scene.start("trust", "--yes", str(scene.project), cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        0,
        f"start: trusted {scene.project}/.start (1 file, 1 path outside the project root)\n",
    )
    again = scene.start("trust", str(scene.project))
    assert again.returncode == 0
    assert again.stderr.startswith(f"start: {scene.project}/.start is already trusted (approved ")


def test_trust_with_nothing_to_trust(isolated: Path) -> None:
    result = invoke("trust", "--yes")
    assert (result.exit_code, result.stderr) == (
        0,
        f"start: no project config in {isolated}; nothing to trust\n",
    )


def test_trust_list(scene: Scene) -> None:
    assert scene.start("trust", "--list").stderr == (
        "No approvals. Run 'start trust' in a project to review and approve it.\n"
    )
    approve(scene)
    result = scene.start("trust", "--list")
    header, row = result.stdout.splitlines()
    assert header.split() == ["ROOT", "APPROVED", "FILES", "ID"]
    root, day, minute, files, _ = row.split()
    assert (root, files) == (str(scene.project), "2")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", f"{day} {minute}")  # local time


def test_untrust_revokes(scene: Scene, tmp_path: Path) -> None:
    approve(scene)
    result = scene.start("untrust")
    assert (result.returncode, result.stderr) == (
        0,
        f"start: revoked 1 approval of {scene.project}\n",
    )
    assert run_task(scene).returncode == 5
    again = scene.start("untrust", str(scene.project), cwd=tmp_path)
    assert again.stderr == f"start: no approvals of {scene.project}\n"


def test_untrust_a_deleted_project(scene: Scene, tmp_path: Path) -> None:
    approve(scene)
    shutil.rmtree(scene.project)
    result = run_start("untrust", str(scene.project), cwd=tmp_path)
    assert result.stderr == f"start: revoked 1 approval of {scene.project}\n"


def test_a_corrupt_record_warns_and_grants_nothing(scene: Scene) -> None:
    approve(scene)
    [record] = (scene.project.parent.parent / "home/.local/state/start/trust").glob("*.json")
    record.write_text("{}")
    result = run_task(scene)
    assert result.returncode == 5
    assert result.stderr == (
        f"start: warning: ignoring corrupt trust record {record}: not a trust record\n"
        + scene.refusal
    )
    scene.assert_nothing_happened(result.stdout)


def test_store_is_private(scene: Scene) -> None:
    approve(scene)
    directory = scene.project.parent.parent / "home/.local/state/start/trust"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert [stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir()] == [0o600]


def test_trust_explains_an_unreadable_start_dir(isolated: Path) -> None:
    from tests.e2e.test_faults import unprivileged

    write_tree(isolated, {".start/config.toml": '[tasks.t]\nprompt = "x"\n'})
    (isolated / ".start").chmod(0o000)
    try:
        result = subprocess.run(
            [*unprivileged(), sys.executable, "-m", "start", "trust"],
            cwd=isolated,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        (isolated / ".start").chmod(0o755)
    assert (result.returncode, result.stdout) == (3, "")
    assert result.stderr == (
        f"start: cannot review {isolated}/.start: it cannot be read\n"
        f"  {isolated}/.start\n"
        "    error: cannot be read: permission denied\n"
        "Run 'start config validate' to see every problem.\n"
    )


def test_trust_shows_a_dangling_config_link_as_a_link(isolated: Path) -> None:
    (isolated / ".start").mkdir()
    (isolated / ".start/config.toml").symlink_to("/nonexistent/config.toml")
    result = run_start("trust", "--show", cwd=isolated)
    assert result.returncode == 0, result.stderr
    assert (
        "    .start/config.toml -> /nonexistent/config.toml  (outside project root, not followed)\n"
        "The config has 1 error; run 'start config validate'.\n"
    ) in result.stdout
    assert "Errno" not in result.stdout + result.stderr


# --- a review taller than the terminal --------------------------------------------------------


def _review_on_a_terminal(scene: Scene, tmp_path: Path, rows: int) -> tuple[int, str, Path]:
    from tests.terminal import run_on_terminal

    paged = tmp_path / "paged"

    def answer(shown: str) -> bytes | None:
        return b"n\n" if shown.endswith("[y/N] ") else None

    code, screen = run_on_terminal(
        "trust",
        cwd=scene.project,
        env={**scene.env, "NO_COLOR": "1", "START_PAGER": f"cat > {paged}"},
        rows=rows,
        watch=answer,
        timeout=60,
    )
    return code, screen, paged


def test_a_review_taller_than_the_terminal_is_paged_before_the_question(
    scene: Scene, tmp_path: Path
) -> None:
    review = scene.start("trust", "--show").stdout.split("\nStatus: ", 1)[0]
    assert review.count("\n") > 10
    code, screen, paged = _review_on_a_terminal(scene, tmp_path, rows=10)
    assert code == 5
    assert paged.read_text() == review + "\n"  # the whole review, through the pager
    question = f"Trust {scene.project / '.start'}? [y/N] "
    assert screen.startswith(question), screen  # then the question, with nothing lost above it


def test_a_review_that_fits_is_not_paged(scene: Scene, tmp_path: Path) -> None:
    review = scene.start("trust", "--show").stdout.split("\nStatus: ", 1)[0]
    code, screen, paged = _review_on_a_terminal(scene, tmp_path, rows=200)
    assert code == 5
    assert not paged.exists()
    assert screen.startswith(review + "\n")
