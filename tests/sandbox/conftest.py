"""The backends every sandbox test runs against, built one way, skipped or failed one way.

`BACKEND_FACTORIES` is the one place a backend joins the suite: its id, how to build it, and what
the suite can check about it from the host. A backend whose module does not exist yet is skipped
with "backend module not written yet"; one whose engine is missing (no bubblewrap, no Docker
daemon) is skipped locally and FAILS when EVALRUN_CI=1 (`require_engine`).

Test-only limits: the bwrap backend is built with smaller limits than its shipped defaults
(conf/sandbox/bwrap.yaml), so the fork-bomb check stays light on a shared 2-core machine.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from evalrun.errors import SandboxUnavailable
from evalrun.sandbox.base import Sandbox, SandboxBackend
from tests.conftest import require_engine

TEST_MAX_PROCESSES = 128
TEST_MEMORY_MB = 2048


def host_root_leftovers(box: Sandbox) -> list[str]:
    """What a closed sandbox left on the host: its temp root, if the backend keeps one."""
    root = getattr(box, "root", None)
    return [str(root)] if root is not None and Path(root).exists() else []


@dataclass(frozen=True)
class BackendSpec:
    """How the suite builds one backend and checks it from the outside.

    `build` gets the pytest request (for `monkeypatch`, `tmp_path`, ...) and may skip.
    `host_processes`: its commands are host processes, so leftovers can be found in /proc.
    `leftovers`: what a closed sandbox left behind (paths, container ids, ...); [] when clean.
    """

    build: Callable[[pytest.FixtureRequest], SandboxBackend]
    host_processes: bool = False
    leftovers: Callable[[Sandbox], list[str]] = host_root_leftovers


def backend_module(name: str) -> ModuleType:
    """Import a backend module, skipping (never failing) while it has not been written."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            pytest.skip("backend module not written yet")
        raise


def _local(request: pytest.FixtureRequest) -> SandboxBackend:
    from evalrun.sandbox.local import LocalBackend

    return LocalBackend(keep_workspaces=False)


def _bwrap(request: pytest.FixtureRequest) -> SandboxBackend:
    require_engine(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")
    module = backend_module("evalrun.sandbox.bwrap.backend")
    return module.BwrapBackend(
        keep_workspaces=False, max_processes=TEST_MAX_PROCESSES, memory_mb=TEST_MEMORY_MB
    )


def _docker(request: pytest.FixtureRequest) -> SandboxBackend:
    module = backend_module("evalrun.sandbox.docker.backend")
    image = os.environ.get("EVALRUN_DOCKER_IMAGE", "evalrun-base:bookworm")
    return module.DockerBackend(image=image, keep_workspaces=False)


def _modal(request: pytest.FixtureRequest) -> SandboxBackend:
    module = backend_module("evalrun.sandbox.modal")
    try:
        from .modal_standin import available, install_modal_standin
    except ModuleNotFoundError as exc:
        if not (exc.name or "").endswith("modal_standin"):
            raise
        pytest.skip("the Modal SDK stand-in (tests/sandbox/modal_standin.py) is not written yet")
    require_engine(available(), "the Modal stand-in (bwrap, nsenter, root)")
    install_modal_standin(request.getfixturevalue("monkeypatch"))
    return module.ModalBackend(keep_workspaces=False)


def docker_leftovers(box: Sandbox) -> list[str]:
    """The sample's container, if it still exists after close."""
    import docker

    found = docker.from_env().containers.list(
        all=True, sparse=True, filters={"id": box.container_id}
    )
    return [f"container {c.short_id}" for c in found]


def modal_leftovers(box: Sandbox) -> list[str]:
    """The stand-in sandbox's processes and files, if any survived terminate."""
    from . import modal_standin

    sandbox = next(s for s in modal_standin.STATE.sandboxes if s.object_id == box.sandbox_id)
    left = [str(sandbox.root)] if sandbox.root.exists() else []
    if Path(f"/proc/{sandbox.init_pid}").exists():
        left.append(f"init process {sandbox.init_pid}")
    return left


BACKEND_FACTORIES: dict[str, BackendSpec] = {
    "local": BackendSpec(_local, host_processes=True),
    "bwrap": BackendSpec(_bwrap, host_processes=True),
    "docker": BackendSpec(_docker, leftovers=docker_leftovers),
    "modal": BackendSpec(_modal, leftovers=modal_leftovers),
}
ALL_BACKENDS = ["local", "bwrap", "docker", "modal"]
ISOLATED_BACKENDS = ["bwrap", "docker"]
_MARKS = {"bwrap": pytest.mark.bwrap, "docker": pytest.mark.docker}


def backend_params(ids: list[str]) -> list:
    return [pytest.param(i, id=i, marks=_MARKS.get(i, ())) for i in ids]


def build_backend(backend_id: str, request: pytest.FixtureRequest) -> SandboxBackend:
    """Build the backend and run its preflight: unusable here means skip (or fail in CI)."""
    backend = BACKEND_FACTORIES[backend_id].build(request)
    try:
        backend.preflight()
    except SandboxUnavailable as exc:
        require_engine(False, f"sandbox={backend_id} ({exc})")
    return backend


@pytest.fixture(params=backend_params(ALL_BACKENDS))
def backend_id(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def backend(backend_id: str, request: pytest.FixtureRequest) -> SandboxBackend:
    return build_backend(backend_id, request)


@pytest.fixture
def spec(backend_id: str) -> BackendSpec:
    return BACKEND_FACTORIES[backend_id]


@pytest.fixture(params=backend_params(ISOLATED_BACKENDS))
def isolated_backend_id(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def isolated_backend(isolated_backend_id: str, request: pytest.FixtureRequest) -> SandboxBackend:
    return build_backend(isolated_backend_id, request)


def host_pids_with(marker: str) -> list[int]:
    """Host processes whose command line contains `marker` (a token only a test puts there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


@pytest.fixture
def stray_processes() -> Iterator[Callable[[str], list[int]]]:
    """Find host processes by a test's marker; any still alive at teardown are killed.

    The kill is by pid, only for processes carrying a marker the test itself generated.
    """
    markers: list[str] = []

    def find(marker: str) -> list[int]:
        markers.append(marker)
        return host_pids_with(marker)

    yield find
    for marker in markers:
        for pid in host_pids_with(marker):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    if markers:
        time.sleep(0.05)
