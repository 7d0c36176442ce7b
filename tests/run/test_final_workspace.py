"""Keeping a final workspace and unpacking it again: what the agent planted stays inert."""

from __future__ import annotations

import asyncio
import io
import os
import tarfile
from pathlib import Path

import pytest

from evalrun.models.records import CellKey
from evalrun.run.final_workspace import KeepCaps, WorkspaceKeeper, unpack
from evalrun.sandbox.local import LocalBackend

KEY = CellKey(task_id="001-x", fingerprint="f", trial=0)
ROOMY = KeepCaps(sample_bytes=10**6, run_bytes=10**7)


def keep(folder_contents, tmp_path: Path, caps: KeepCaps = ROOMY):
    """Plant files in a fresh local sandbox with `folder_contents(workspace)`, then keep it."""
    keeper = WorkspaceKeeper(tmp_path / "run", caps)

    async def go():
        async with LocalBackend().open("t") as box:
            folder_contents(Path(box.workdir))
            await box.end_agent()
            return await keeper.keep(box, KEY, 30.0)

    return asyncio.run(go()), tmp_path / "run/samples/001-x/0/workspace.tar.gz"


def test_links_stay_links_special_files_are_left_out_and_it_unpacks_as_it_was(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("host secret")

    def plant(ws: Path) -> None:
        (ws / "src").mkdir()
        (ws / "src" / "main.py").write_text("print(42)\n")
        os.chmod(ws / "src" / "main.py", 0o755)
        (ws / "out").symlink_to(outside)
        (ws / "src" / "same.py").hardlink_to(ws / "src" / "main.py")
        os.mkfifo(ws / "pipe")

    kept, archive = keep(plant, tmp_path)

    assert kept.kept and kept.bytes == archive.stat().st_size
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert b"host secret" not in b"".join(
            tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()
        )
    assert "pipe" not in names
    dest = tmp_path / "unpacked"
    dest.mkdir()
    unpack(archive, dest)
    assert os.readlink(dest / "out") == str(outside)
    assert (dest / "src" / "main.py").read_text() == "print(42)\n"
    assert os.access(dest / "src" / "main.py", os.X_OK)
    assert (dest / "src" / "same.py").read_text() == "print(42)\n"
    assert outside.read_text() == "host secret"


def test_an_archive_that_writes_through_a_link_out_is_refused_and_writes_nothing(tmp_path):
    """A tar handed over as a kept workspace cannot write outside the folder it unpacks into:
    the entry through the link is refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        link = tarfile.TarInfo("out")
        link.type, link.linkname = tarfile.SYMTYPE, str(outside)
        tar.addfile(link)
        payload = tarfile.TarInfo("out/pwned")
        payload.size = 4
        tar.addfile(payload, io.BytesIO(b"pwnd"))
    dest = tmp_path / "unpacked"
    dest.mkdir()
    with pytest.raises(tarfile.OutsideDestinationError):
        unpack(archive, dest)
    assert list(outside.iterdir()) == []


def test_the_quota_counts_what_an_earlier_attempt_of_the_run_kept(tmp_path):
    earlier = tmp_path / "run/samples/002-y/0/workspace.tar.gz"
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"x" * 5000)

    kept, archive = keep(lambda ws: None, tmp_path, KeepCaps(10**6, 5000))

    assert not kept.kept and not archive.exists()
    assert (
        kept.reason == "the run's quota (final_workspaces.max_mb_per_run: 5,000 bytes) is used up"
    )
