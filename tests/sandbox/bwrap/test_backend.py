"""bwrap-specific behaviour beyond the shared conformance suite: config, preflight, limits."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra.utils import instantiate

from evalrun.cli.hydra import compose_config
from evalrun.errors import SandboxUnavailable, UsageError
from evalrun.sandbox.bwrap import cgroup
from evalrun.sandbox.bwrap.backend import BwrapBackend
from tests.conftest import require_engine


@pytest.fixture
def bwrap_ready() -> None:
    require_engine(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")


def test_config_builds_the_backend_and_rejects_typos():
    backend = instantiate(
        compose_config(
            ["sandbox=bwrap", "sandbox.memory_mb=1024", "sandbox.max_processes=64"]
        ).sandbox,
        keep_workspaces=True,
    )
    assert isinstance(backend, BwrapBackend)
    assert (backend.memory_mb, backend.max_processes, backend.keep_workspaces) == (1024, 64, True)
    with pytest.raises(UsageError, match="memory_mbb"):
        compose_config(["sandbox=bwrap", "sandbox.memory_mbb=1"])
    with pytest.raises(UsageError, match="max_processes"):
        BwrapBackend(max_processes=0)


def test_preflight_says_how_to_install_bubblewrap_when_missing(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match=r"apt-get install bubblewrap"):
        BwrapBackend().preflight()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A world-readable folder: as root, samples run under an unprivileged uid that must reach it
    (pytest's tmp_path is private to the user)."""
    folder = Path(tempfile.mkdtemp(prefix="evalrun-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def fake_bwrap(monkeypatch, shared_dir: Path) -> Path:
    """A `bwrap` on PATH that fails like one denied user namespaces."""
    fake = shared_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shared_dir}:/usr/bin:/bin")
    return fake


def test_preflight_reports_why_namespaces_cannot_be_created(fake_bwrap: Path):
    with pytest.raises(SandboxUnavailable, match="No permissions to create new namespace"):
        BwrapBackend().preflight()


@pytest.mark.bwrap
def test_limits_and_extra_read_only_paths_are_enforced(bwrap_ready, shared_dir: Path):
    shared = shared_dir / "tool"
    shared.mkdir()
    (shared / "version").write_text("tool 1.0\n")
    backend = BwrapBackend(max_processes=16, disk_mb=64, extra_ro_paths=[str(shared)])
    backend.preflight()

    async def body():
        async with backend.open("limits") as box:
            limits = await box.exec("ulimit -u; ulimit -f")
            tool = await box.exec(f"cat {shared}/version; touch {shared}/x")
            return limits, tool

    limits, tool = asyncio.run(body())
    assert limits.stdout.split() == ["16", str(64 * 1024)]
    assert tool.stdout == "tool 1.0\n" and "Read-only file system" in tool.stderr
    assert not (shared / "x").exists()


HOG = 'python3 -c \'import time; x = b"x" * (120 << 20); time.sleep(2); print("held")\''


@pytest.mark.bwrap
def test_the_memory_limit_covers_all_of_a_samples_processes(bwrap_ready):
    backend = BwrapBackend(memory_mb=300)
    backend.preflight()
    require_engine(backend.memory_cgroups is not None, "a memory cgroup (evalrun as root)")

    async def body():
        async with backend.open("memory") as box:
            alone = await box.exec(HOG)
            together = await box.exec(f"for i in 1 2 3; do {HOG} & done; wait")
            return alone, together

    alone, together = asyncio.run(body())
    assert alone.stdout.split() == ["held"], alone.stderr  # 120 MiB fits under 300
    assert together.stdout.count("held") < 3  # 3 x 120 MiB do not: the kernel ended one


@pytest.mark.bwrap
def test_without_a_cgroup_memory_falls_back_to_a_per_process_limit(bwrap_ready, monkeypatch):
    monkeypatch.setattr(cgroup, "find", lambda: None)
    backend = BwrapBackend(memory_mb=256)
    backend.preflight()
    assert "RLIMIT_AS fallback" in backend.memory_enforcement

    async def body():
        async with backend.open("rlimit") as box:
            limit = await box.exec("ulimit -v")
            big = await box.exec(["python3", "-c", "bytearray(512 * 1024 * 1024)"])
            return limit, big

    limit, big = asyncio.run(body())
    assert limit.stdout.split() == [str(256 * 1024)]
    assert big.exit_code != 0 and "MemoryError" in big.stderr


@pytest.mark.bwrap
def test_keep_workspaces_leaves_the_sample_root_for_inspection(bwrap_ready):
    backend = BwrapBackend(keep_workspaces=True)

    async def body():
        async with backend.open("kept") as box:
            await box.write_file("notes.txt", "kept")
        return box.root, box.kept_at

    root, kept_at = asyncio.run(body())
    try:
        assert (root / "workspace/notes.txt").read_bytes() == b"kept"
        assert kept_at == str(root / "workspace")  # what the run prints and records
    finally:
        shutil.rmtree(root)
