"""The harness's host-side file work on a workspace folder: the same result as the sandboxed
commands it replaces, and a link the agent planted is never followed out of the workspace."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from evalrun.sandbox.common import hostfs
from evalrun.sandbox.local import LocalBackend


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): ("link:" + os.readlink(p)) if p.is_symlink() else p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


def test_copy_in_keeps_modes_mtimes_links_and_replaces_what_is_there(tmp_path: Path):
    src, ws = tmp_path / "src", tmp_path / "ws"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "run.sh").write_text("#!/bin/sh\n")
    (src / "pkg" / "run.sh").chmod(0o751)
    os.utime(src / "pkg" / "run.sh", ns=(1_000_000_000, 1_000_000_000))
    (src / "link").symlink_to("pkg/run.sh")
    (ws / "dest" / "pkg").mkdir(parents=True)
    (ws / "dest" / "pkg" / "run.sh").write_text("the agent's")
    (ws / "dest" / "link").write_text("a file where the link goes")

    hostfs.copy_in(src, ws, "dest", uid=None)

    assert _tree(ws / "dest") == {"link": "link:pkg/run.sh", "pkg/run.sh": "#!/bin/sh\n"}
    copied = (ws / "dest" / "pkg" / "run.sh").stat()
    assert (copied.st_mode & 0o777, copied.st_mtime_ns) == (0o751, 1_000_000_000)


def test_copy_in_never_writes_through_a_planted_link(tmp_path: Path):
    src, ws, host = tmp_path / "src", tmp_path / "ws", tmp_path / "host"
    src.mkdir()
    (src / "verify.sh").write_text("exit 0\n")
    ws.mkdir()
    host.mkdir()
    (ws / "tests").symlink_to(host)  # the agent's `ln -s /somewhere tests`
    (ws / "sub").symlink_to(host)
    for rel in ("tests", "sub/deeper"):
        with pytest.raises(hostfs.NotHere):
            hostfs.copy_in(src, ws, rel, uid=None)
    assert list(host.iterdir()) == []


def test_copy_in_refuses_a_file_link_where_a_file_goes_by_replacing_the_link(tmp_path: Path):
    src, ws, host = tmp_path / "src", tmp_path / "ws", tmp_path / "host.txt"
    src.mkdir()
    (src / "verify.sh").write_text("exit 0\n")
    ws.mkdir()
    host.write_text("the host's")
    (ws / "verify.sh").symlink_to(host)
    hostfs.copy_in(src, ws, ".", uid=None)
    assert host.read_text() == "the host's"
    assert not (ws / "verify.sh").is_symlink() and (ws / "verify.sh").read_text() == "exit 0\n"


def test_clear_removes_links_not_their_targets_and_restores_a_locked_parent(tmp_path: Path):
    ws, host = tmp_path / "ws", tmp_path / "host"
    (host / "keep").mkdir(parents=True)
    (host / "keep" / "file").write_text("the host's")
    (ws / "locked").mkdir(parents=True)
    (ws / "locked" / "tree" / "deep").mkdir(parents=True)
    (ws / "locked" / "tree" / "deep" / "f").write_text("x")
    (ws / "tests").symlink_to(host)
    (ws / "locked").chmod(0o555)

    restored = hostfs.clear(ws, ["tests", "locked/tree", "never-there", "no/such/parent"])

    assert restored == ["locked"]
    assert not (ws / "tests").exists() and not (ws / "tests").is_symlink()
    assert not (ws / "locked" / "tree").exists()
    assert (host / "keep" / "file").read_text() == "the host's"


def test_clear_through_a_planted_link_is_left_to_the_sandbox(tmp_path: Path):
    ws, host = tmp_path / "ws", tmp_path / "host"
    host.mkdir()
    (host / "target").write_text("the host's")
    ws.mkdir()
    (ws / "sub").symlink_to(host)
    with pytest.raises(hostfs.NotHere):
        hostfs.clear(ws, ["sub/target"])
    with pytest.raises(hostfs.NotHere):
        hostfs.clear_in({"/workspace": ws}, ["/etc/passwd"])
    assert (host / "target").read_text() == "the host's"


def test_a_sandbox_clears_the_same_with_the_host_side_or_with_its_script(tmp_path: Path):
    """`LocalSandbox.clear` works on the host; forced to its script, the result is the same."""
    src = tmp_path / "src"
    (src / "_verifier").mkdir(parents=True)
    (src / "_verifier" / "check.py").write_text("ok = True\n")

    async def once() -> tuple[list[str], dict[str, str]]:
        async with LocalBackend(keep_workspaces=False).open("hostfs") as box:
            ws = Path(box.workdir)
            (ws / "_verifier").mkdir()
            (ws / "_verifier" / "check.py").write_text("ok = 'planted'\n")
            (ws / "_verifier" / "extra.py").write_text("planted\n")
            ws.chmod(0o555)
            notes = await box.clear(["_verifier"])
            await box.put(src, ".")
            return notes, _tree(ws)

    here = asyncio.run(once())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hostfs, "clear_in", _not_here)
        assert asyncio.run(once()) == here
    assert here == (
        ["the harness restored the owner's rwx on the workspace root (the agent removed it)"],
        {"_verifier/check.py": "ok = True\n"},
    )


def _not_here(*args: object) -> list[str]:
    raise hostfs.NotHere("forced")
