"""`Sandbox.clear`'s script, run by bash on a host folder as every backend runs it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from evalrun.sandbox.common.clear import clear_argv, clear_notes


def clear(root: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(clear_argv(paths), cwd=root, capture_output=True, text=True)


def test_many_paths_are_removed_and_a_locked_parent_is_restored_once(tmp_path: Path):
    ws = tmp_path / "ws"
    (ws / "sub" / "pkg").mkdir(parents=True)
    (ws / "sub" / "pkg" / "__init__.py").write_text("x")
    (ws / "sub" / "m.so").write_text("x")
    (ws / "top.py").write_text("x")
    (ws / "sub").chmod(0o555)
    ws.chmod(0o555)
    absent = [f"sub/none{i}" for i in range(30)]
    done = clear(ws, "top.py", "sub/pkg", *absent, "sub/m.so", "ghost")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in ws.rglob("*")) == ["sub"]
    notes = clear_notes(done.stdout, str(ws))
    assert notes == [
        "the harness restored the owner's rwx on the workspace root (the agent removed it)",
        "the harness restored the owner's rwx on sub (the agent removed it)",
    ]


def test_absolute_paths_and_the_filesystem_root_as_parent(tmp_path: Path):
    target = tmp_path / "a" / "b"
    target.mkdir(parents=True)
    done = clear(tmp_path, str(target), "/nonexistent-evalrun-path")
    assert done.returncode == 0, done.stderr
    assert not target.exists() and (tmp_path / "a").is_dir()
