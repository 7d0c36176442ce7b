"""What a task may ask of its sandbox (`SandboxSpec`), honoured - or refused with a reason - by
every backend: no network (even where the backend has one), its workspace at another path, and
variables every command sees."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
from collections.abc import Iterator

import pytest

from evalrun.errors import SandboxError
from evalrun.sandbox.base import Network, SandboxBackend, SandboxSpec, TaskImage
from tests.conftest import require_engine

from .conftest import backend_module, backend_params, build_backend

PROBE = (
    "import os, socket\n"
    "s = socket.socket(); s.settimeout(3)\n"
    "try:\n"
    "    s.connect(('127.0.0.1', int(os.environ['PORT']))); print(s.recv(32).decode().strip())\n"
    "except OSError as e:\n"
    "    print('unreachable', type(e).__name__)\n"
)


@pytest.fixture(scope="module")
def loopback_server() -> Iterator[int]:
    """A TCP server on the host's loopback that answers `hello` (port yielded)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello\n")

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def networked(backend_id: str, request: pytest.FixtureRequest) -> SandboxBackend:
    """The backend configured WITH the host's network (where it can have one at all)."""
    if backend_id == "local":
        return build_backend("local", request)
    if backend_id == "bwrap":
        require_engine(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")
        backend = backend_module("evalrun.sandbox.bwrap.backend").BwrapBackend(
            max_processes=128, memory_mb=2048, network="host"
        )
    else:
        image = os.environ.get("EVALRUN_DOCKER_IMAGE", "evalrun-base:bookworm")
        backend = backend_module("evalrun.sandbox.docker.backend").DockerBackend(
            image=image, network="host", public_network="host"
        )
    try:
        backend.preflight()
    except Exception as exc:  # engine missing: skip here, fail in CI
        require_engine(False, f"sandbox={backend_id} ({exc})")
    return backend


async def probe(backend: SandboxBackend, spec: SandboxSpec, port: int) -> str:
    async with backend.open("spec-probe", spec) as box:
        result = await box.exec(["python3", "-c", PROBE], env={"PORT": str(port)}, timeout_s=30)
        return result.stdout.strip() or result.stderr.strip()


@pytest.mark.parametrize("backend_id", backend_params(["local", "bwrap", "docker"]))
def test_no_network_means_none_even_where_the_backend_has_one(backend_id, request, loopback_server):
    backend = networked(backend_id, request)
    reached = asyncio.run(probe(backend, SandboxSpec(network=Network.public), loopback_server))
    assert reached == "hello"  # the server is there, and this backend can reach it
    assert backend.cannot_host(SandboxSpec(network=Network.none)) is None
    offline = asyncio.run(probe(backend, SandboxSpec(network=Network.none), loopback_server))
    assert offline.startswith("unreachable")


@pytest.mark.parametrize("backend_id", backend_params(["bwrap", "docker"]))
def test_a_backend_without_a_network_refuses_a_task_that_needs_one(backend_id, request):
    backend = build_backend(backend_id, request)
    if backend_id == "docker":  # its default, bridge, may exist: take it away
        backend.public_network = "none"
    reason = backend.cannot_host(SandboxSpec(network=Network.public))
    assert reason is not None and reason.startswith("needs the network")


@pytest.mark.parametrize("backend_id", backend_params(["bwrap", "docker"]))
def test_the_workspace_can_live_at_the_tasks_path(backend_id, request, tmp_path):
    backend = build_backend(backend_id, request)
    (tmp_path / "data.txt").write_text("seed\n")

    async def go() -> tuple[str, bytes, str]:
        async with backend.open("spec-workdir", SandboxSpec(workdir="/app")) as box:
            await box.put(tmp_path, ".")
            await box.write_file("out.txt", "written\n")
            where = await box.exec("pwd; cat data.txt; echo more >> data.txt", timeout_s=30)
            absolute = await box.exec(["cat", "/app/out.txt"], timeout_s=30)
            return where.stdout, await box.read_file("/app/data.txt"), absolute.stdout

    where, data, absolute = asyncio.run(go())
    assert where == "/app\nseed\n"
    assert data == b"seed\nmore\n"
    assert absolute == "written\n"


@pytest.mark.parametrize("backend_id", backend_params(["local", "bwrap", "docker", "modal"]))
def test_task_variables_reach_every_command(backend_id, request):
    backend = build_backend(backend_id, request)
    spec = SandboxSpec(env=(("TASK_LABEL", "from-task.toml"),))

    async def go() -> str:
        async with backend.open("spec-env", spec) as box:
            result = await box.exec("echo $TASK_LABEL-$EXTRA", env={"EXTRA": "x"}, timeout_s=30)
            return result.stdout

    assert asyncio.run(go()) == "from-task.toml-x\n"


@pytest.mark.parametrize(
    ("backend_id", "spec", "words"),
    [
        ("local", SandboxSpec(workdir="/app"), "sandbox=local works in a temp folder"),
        ("local", SandboxSpec(image=TaskImage("t", None, "x:1")), "cannot run task images"),
        ("bwrap", SandboxSpec(image=TaskImage("t", None, "x:1")), "cannot run task images"),
        ("bwrap", SandboxSpec(workdir="/usr/app"), "'/usr/app' is or holds /usr"),
        ("modal", SandboxSpec(workdir="/app"), "sandbox=modal keeps it at /workspace"),
    ],
)
def test_what_a_backend_cannot_give_is_refused_with_the_reason(backend_id, spec, words, request):
    backend = build_backend(backend_id, request)
    reason = backend.cannot_host(spec)
    assert reason is not None and words in reason

    async def go() -> None:
        async with backend.open("spec-refused", spec):
            pass

    with pytest.raises(SandboxError, match=words.replace("(", r"\(")):
        asyncio.run(go())
