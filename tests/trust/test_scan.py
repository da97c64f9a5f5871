"""What an approval covers (start.trust.scan): every .start file, project role files, links, FIFOs
and unsafe modes."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from start import trust
from start.base.errors import UntrustedError
from start.base.wall import classify
from start.config import memo
from start.config.load import load
from start.trust.scan import _Scanner
from tests.conftest import write_tree
from tests.trust.conftest import CONFIG, labels

# --- what an approval covers ----------------------------------------------------------------


def test_scan_covers_every_start_file_and_project_role_files(project: Path) -> None:
    write_tree(project, {".start/notes.md": "n", ".start/sub/deep.txt": "d"})
    found = trust.scan(load())
    assert labels(found) == [
        (".start/config.toml", "file"),
        (".start/notes.md", "file"),
        (".start/sub/deep.txt", "file"),
        ("roles/r.md", "file"),
    ]
    assert found is not None and found.unsafe == ()


def test_no_config_files_means_nothing_to_trust(isolated: Path) -> None:
    write_tree(isolated, {".start/README.md": "only notes"})
    assert trust.scan(load()) is None
    assert trust.describe(load()) == (True, "no project config")


def test_config_files_use_the_digest_of_the_bytes_load_parsed(project: Path) -> None:
    config = load()
    [layer] = [f for f in config.files if f.layer == "project"]
    found = trust.scan(config)
    assert found is not None
    entry = found.entries[0]
    assert (entry.label, entry.digest, entry.data) == (".start/config.toml", layer.digest, None)


def test_one_byte_added_file_and_role_file_change_the_fingerprint(project: Path) -> None:
    def current() -> str:
        found = trust.scan(load())
        assert found is not None
        return found.fingerprint

    first = current()
    (project / ".start/config.toml").write_text(CONFIG.replace("v1", "v2"))
    second = current()
    (project / "roles/r.md").write_text("ROLE v2\n")
    third = current()
    (project / ".start/extra").write_text("")
    fourth = current()
    assert len({first, second, third, fourth}) == 4


def test_a_missing_role_file_is_covered_by_its_absence(project: Path) -> None:
    (project / "roles/r.md").unlink()
    found = trust.scan(load())
    assert ("roles/r.md", "missing") in labels(found)


def test_symlinks_leaving_the_project_are_never_followed(project: Path) -> None:
    secret = project.parent / "home" / "secret.txt"
    (project / ".start/link").symlink_to(secret)
    (project / "roles/r.md").unlink()
    (project / "roles/r.md").symlink_to(secret)
    found = trust.scan(load())
    assert found is not None
    # The role file resolves outside the project: the approval covers its real path, and it is
    # read only after approval, if used.
    assert labels(found) == [
        (".start/config.toml", "file"),
        (".start/link", "symlink"),
        (str(secret), "outside"),
    ]
    assert all(entry.data is None for entry in found.entries)
    link = found.entries[1]
    assert (link.outside, link.target, link.data) == (True, str(secret), None)


def test_symlinks_inside_the_project_cover_target_and_bytes(project: Path) -> None:
    (project / ".start/role.md").symlink_to(project / "roles/r.md")
    found = trust.scan(load())
    assert found is not None
    assert (".start/role.md", "symlink") in labels(found)
    [entry] = [e for e in found.entries if e.label == ".start/role.md" and e.what == "file"]
    assert entry.data == b"ROLE v1\n"


def test_a_fifo_is_covered_without_being_opened(project: Path) -> None:
    os.mkfifo(project / ".start/pipe")
    assert (".start/pipe", "other") in labels(trust.scan(load()))


def test_group_or_other_writable_and_foreign_files_are_unsafe(project: Path) -> None:
    path = project / ".start/config.toml"
    path.chmod(0o664)
    (project / ".start").chmod(0o757)
    found = trust.scan(load())
    assert found is not None
    assert found.unsafe == (
        f"{project}/.start: writable by group or others (run: chmod go-w {project}/.start)",
        f"{path}: writable by group or others (run: chmod go-w {path})",
    )
    with pytest.raises(UntrustedError) as caught:
        trust.approve(found)
    assert str(caught.value) == "\n".join(
        [f"{project}/.start is not safe to use; fix its permissions:"]
        + [f"  {p}" for p in found.unsafe]
    )


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a file to another user")
def test_files_owned_by_another_user_are_unsafe(project: Path) -> None:
    os.chown(project / "roles/r.md", 65534, -1)
    found = trust.scan(load())
    assert found is not None
    assert found.unsafe == (f"{project}/roles/r.md: owned by another user (uid 65534)",)


# --- where a named file really is -----------------------------------------------------------

NAMES = ["a", "b", "f", "l", "m", "..", ".", "gone", ".start", "root"]
TARGETS = [
    *NAMES,
    "a/b",
    "../a",
    "../../outside",
    "ROOT/a",
    "ROOT",
    "ROOT/.start",
    "../root",
    "/",
]


def _loops(path: str) -> bool:
    """Whether the system finds a loop of links on the way to `path` (ELOOP)."""
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


@settings(max_examples=500, deadline=None)
@given(
    links=st.lists(
        st.tuples(st.sampled_from(["", "a", "a/b", ".start"]), st.sampled_from(["l", "m"]),
                  st.sampled_from(TARGETS)),
        max_size=5,
    ),
    named=st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), min_size=1),
    start=st.sampled_from([".start", "a/.start"]),
)  # fmt: skip
# A name that is the project root itself, and one spelled as `.start` through a link and `..`.
@example(links=[("", "l", "..")], named=[["l", "root"]], start=".start")
@example(links=[("", "l", "a/b")], named=[["l", "..", ".start"]], start=".start")
@example(
    links=[("", "m", "m"), (".start", "l", "a")], named=[["m", "..", ".start", "l"]], start=".start"
)  # a loop of links on the way: realpath's answer varies by version
@example(links=[("", "m", "m")], named=[["m", ".."]], start=".start")  # `..` of a loop: the root
def test_the_scan_places_a_named_file_as_realpath_and_classify_do(
    links: list[tuple[str, str, str]], named: list[list[str]], start: str
) -> None:
    # The scan resolves and classifies each directory once, and a name in it from there
    # (_Scanner.resolve): for every path, through links to directories, files, nowhere, the
    # root and `.start`, in loops and out of the root, the answer is os.path.realpath's and
    # classify's.
    with tempfile.TemporaryDirectory() as scratch:
        root = os.path.join(scratch, "root")
        os.makedirs(os.path.join(root, "a", "b"))
        os.makedirs(os.path.join(root, ".start"))
        for name in ("f", "a/f", "a/b/f", ".start/f"):
            Path(root, name).write_text("x")
        for directory, name, target in links:
            link = os.path.join(root, directory, name)
            if not os.path.lexists(link):
                os.symlink(target.replace("ROOT", root), link)
        start_dir = os.path.join(root, start)
        scanner = _Scanner(root, start_dir, {}, memo.Memo(root))
        real_root, real_start = os.path.realpath(root), os.path.realpath(start_dir)
        for parts in named:
            path = os.path.join(root, *parts)
            real = os.path.realpath(path)
            where = classify(path, real, real_root, start_dir, real_start)
            found = scanner.resolve(path)
            if _loops(path):
                # Through a loop of links no read reaches a file, whatever the scan calls the
                # path (realpath's spelling of it differs between Python versions, and `m/..`
                # through the loop `m -> m` is the root lexically): what is read is `path`.
                assert not os.path.exists(path), path
                with pytest.raises(OSError):
                    Path(path).read_bytes()
                continue
            assert found == (real, where), path
