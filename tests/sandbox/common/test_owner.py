"""A sample's temp root is removed whatever the agent left in it: the sample's close and the next
start's sweep both go through `remove_tree`, which must neither raise nor leak the root."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalrun.sandbox.common.owner import remove_tree

FOLDER = os.O_RDONLY | os.O_DIRECTORY


def chain(top: Path, name: str, depth: int) -> None:
    """`depth` nested folders called `name` under `top`, made by descriptor (no path is ever
    longer than `name`), the last holding a file."""
    fd = os.open(top, FOLDER)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        inner = os.open(name, FOLDER, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("bottom.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    os.close(fd)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """Where the test builds a sample root; whatever a failing `remove_tree` left is removed by
    GNU rm, so pytest's own clean-up (`shutil.rmtree`, recursive) never meets the deep tree."""
    yield tmp_path / "evalrun-root"
    if os.path.lexists(tmp_path / "evalrun-root"):
        subprocess.run(["chmod", "-R", "u+rwx", tmp_path / "evalrun-root"], check=False)
        subprocess.run(["rm", "-rf", "--", tmp_path / "evalrun-root"], check=True)


def test_a_root_is_removed_whatever_the_agent_left_in_it(root, tmp_path):
    """Folders 5000 deep (past the recursion limit), a path far past PATH_MAX, folders without
    any permission, undecodable names, a FIFO; a symlink out of the root is not followed."""
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    chain(workspace, "d", 5000)
    chain(workspace, "x" * 250, 40)  # a 10 KB path
    (workspace / "locked" / "inner").mkdir(parents=True)
    (workspace / "locked" / "inner" / "f").write_text("x")
    os.mkfifo(workspace / "pipe")
    (workspace / os.fsdecode(b"\xff\xfe\x1b.txt")).write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    for folder in (workspace / "locked" / "inner", workspace / "locked", workspace):
        folder.chmod(0o000)
    remove_tree(root)
    assert not root.exists()
    assert (outside / "keep.txt").read_text() == "kept"


def test_a_root_that_is_a_symlink_loses_only_the_link(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("kept")
    link = tmp_path / "evalrun-link"
    link.symlink_to(target, target_is_directory=True)
    remove_tree(link)
    remove_tree(tmp_path / "never-existed")
    assert not link.is_symlink() and (target / "keep.txt").read_text() == "kept"
