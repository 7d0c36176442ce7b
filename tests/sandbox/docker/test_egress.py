"""The egress gate on a real engine: a container on the gate's internal network reaches an
allowed host through it, is refused any other, and reaches nothing directly; the allow file can
change between phases; the gate logs every decision."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalrun.sandbox.base import Network, SandboxSpec
from evalrun.sandbox.docker import egress_proxy
from evalrun.sandbox.docker.backend import LABEL, OWNER_LABEL, DockerBackend
from evalrun.sandbox.docker.egress import EgressGate, proxy_env
from tests.conftest import BASE_IMAGE, REPO

PROBE = (
    "import sys, urllib.request\n"
    "for url in sys.argv[1:]:\n"
    "    try:\n"
    "        print(urllib.request.urlopen(url, timeout=5).read().decode().strip())\n"
    "    except urllib.error.HTTPError as exc:\n"
    "        print('refused', exc.code)\n"
    "    except Exception as exc:\n"
    "        print('unreachable', type(exc).__name__)\n"
)


def _reach(docker_client, network: str, env: dict[str, str], *urls: str) -> list[str]:
    """What a container on `network` alone gets for each URL."""
    out = docker_client.containers.run(
        BASE_IMAGE,
        ["python3", "-c", PROBE, *urls],
        network=network,
        environment=env,
        labels={"evalrun.test": "1"},
        remove=True,
    )
    return out.decode().split("\n")[: len(urls)]


@pytest.mark.docker
def test_only_allowed_hosts_are_reached_and_only_through_the_gate(docker_client, bridge):
    public, by_address = bridge
    address = by_address.split("//")[1].split(":")[0]
    gate = EgressGate.open(docker_client, BASE_IMAGE, public, {"evalrun.test": "1"})
    try:
        gate.allow(("web.evalrun.test",))
        urls = ("http://web.evalrun.test:8000/", "http://other.evalrun.test:8000/", by_address)
        assert _reach(docker_client, gate.network, proxy_env(), *urls) == [
            "hello",
            "refused 403",
            "refused 403",  # the address of an allowed name is not allowed by itself
        ]
        assert _reach(docker_client, gate.network, {}, by_address) == ["unreachable URLError"]

        gate.allow((address,))  # the verifier's phase may allow other hosts
        assert _reach(docker_client, gate.network, proxy_env(), *urls) == [
            "refused 403",
            "refused 403",
            "hello",
        ]
        assert gate.decisions() == [
            "allow web.evalrun.test:8000",
            "deny other.evalrun.test:8000",
            f"deny {address}:8000",
            "deny web.evalrun.test:8000",
            "deny other.evalrun.test:8000",
            f"allow {address}:8000",
        ]
    finally:
        gate.close(docker_client)
    names = [n.name for n in docker_client.networks.list()]
    assert gate.network not in names


@pytest.mark.parametrize(
    ("host", "entries", "expected"),
    [
        ("pypi.org", ["pypi.org"], True),
        ("PyPI.org.", ["pypi.org"], True),
        ("files.pypi.org", ["pypi.org"], False),  # a name allows itself, not its subdomains
        ("files.pypi.org", ["*.pypi.org"], True),
        ("pypi.org", ["*.pypi.org"], False),
        ("evilpypi.org", ["*.pypi.org"], False),
        ("10.1.2.3", ["10.0.0.0/8"], True),
        ("10.1.2.3", ["10.1.2.3"], True),
        ("11.1.2.3", ["10.0.0.0/8"], False),
        ("[::1]", ["::1"], True),
        ("localhost", [], False),
    ],
)
def test_allow_list_entries_match_as_harbor_defines_them(host, entries, expected):
    assert egress_proxy.allowed(host, entries) is expected


def test_the_proxy_forwards_allowed_requests_and_refuses_the_rest(tmp_path: Path):
    """The proxy program itself, on the host's loopback: plain HTTP forwarding and CONNECT."""
    (tmp_path / "index.html").write_text("hello\n")
    allow = tmp_path / "allow"
    allow.write_text("127.0.0.1\n")
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    proxy = subprocess.Popen(
        [sys.executable, egress_proxy.__file__, str(allow), "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = _port_of(server.stdout)
        proxy_port = int(proxy.stdout.readline().split()[1])
        via = f"http://127.0.0.1:{proxy_port}"
        url = f"http://127.0.0.1:{port}/index.html"
        assert _curl("-x", via, url) == "hello"
        assert _curl("-p", "-x", via, url) == "hello"  # through a CONNECT tunnel
        assert "not in the task's allowed_hosts" in _curl(
            "-x", via, url.replace("127.0.0.1", "localhost")
        )
    finally:
        for process in (server, proxy):
            process.kill()
            process.wait()


def _port_of(stream) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        line = stream.readline()
        if "port" in line:
            return int(line.split("port")[1].split()[0])
    raise AssertionError("the web server did not start")


def _curl(*args: str) -> str:
    done = subprocess.run(["curl", "-s", *args], capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


@pytest.mark.docker
def test_a_sample_behind_the_gate_reaches_each_phases_hosts_and_leaves_nothing(
    docker_client, bridge
):
    """Through the backend, as a task's sample: the agent's phase may reach one name, the
    verifier's only the server's address; the gate and its network go with the sample."""
    public, by_address = bridge
    address = by_address.split("//")[1].split(":")[0]
    backend = DockerBackend(image=BASE_IMAGE, public_network=public)
    spec = SandboxSpec(
        network=Network.allowlist,
        allowed_hosts=("web.evalrun.test",),
        verifier_allowed_hosts=(address,),
    )
    urls = ("http://web.evalrun.test:8000/", by_address)

    async def phases() -> tuple[list[str], list[str]]:
        async with backend.open("egress", spec) as box:
            agent = await box.exec(["python3", "-c", PROBE, *urls], timeout_s=60)
            await box.end_agent()
            verifier = await box.exec(["python3", "-c", PROBE, *urls], timeout_s=60)
            return agent.stdout.split("\n")[:2], verifier.stdout.split("\n")[:2]

    agent, verifier = asyncio.run(phases())
    assert agent == ["hello", "refused 403"]
    assert verifier == ["refused 403", "hello"]
    left = docker_client.containers.list(all=True, filters={"label": "evalrun.sample=egress"})
    assert left == []
    assert not [n for n in docker_client.networks.list() if n.name.startswith("evalrun-egress-")]


@pytest.mark.docker
def test_an_allow_list_needs_the_public_network_for_the_gates_way_out(docker_client):
    backend = DockerBackend(image=BASE_IMAGE, public_network="no-such-network")
    spec = SandboxSpec(network=Network.allowlist, allowed_hosts=("pypi.org",))
    reason = backend.cannot_host(spec)
    assert reason is not None and "'no-such-network'" in reason
    offline = DockerBackend(image=BASE_IMAGE, public_network="no-such-network", offline=True)
    assert offline.cannot_host(spec) is None  # offline: no network at all, recorded as such


FETCH_SUITE = REPO / "tests" / "fixtures" / "harbor-network"


@pytest.mark.docker
def test_a_harbor_allow_list_task_is_honest_behind_the_gate(docker_client, bridge, tmp_path):
    """The fixture's gold solution reaches its one allowed host through the gate in the agent's
    phase and passes; the untouched workspace fails (`evalrun check`, the real CLI); its
    verifier runs with no network."""
    public, _ = bridge
    proc = subprocess.run(
        [
            sys.executable, "-m", "evalrun.cli.main", "check", "--tamper=none", "sandbox=docker",
            f"sandbox.public_network={public}", f"tasks_dir={FETCH_SUITE}",
        ],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 1 verifiers honest" in proc.stdout


@pytest.mark.docker
def test_a_killed_runs_gate_network_goes_with_the_next_preflight(docker_client):
    """A run killed outright (SIGKILL) leaves its gate's network; the next run's orphan sweep
    removes it, as it removes the containers - and leaves a live owner's alone."""
    dead = {LABEL: "1", OWNER_LABEL: f"{socket.gethostname()}:{2**22 + 7}"}  # no such pid
    alive = {LABEL: "1", OWNER_LABEL: f"{socket.gethostname()}:{os.getpid()}"}
    orphan = docker_client.networks.create(f"evalrun-egress-test-{os.getpid()}a", labels=dead)
    live = docker_client.networks.create(f"evalrun-egress-test-{os.getpid()}b", labels=alive)
    try:
        DockerBackend(image=BASE_IMAGE).remove_orphans()
        names = {n.name for n in docker_client.networks.list()}
        assert orphan.name not in names
        assert live.name in names
    finally:
        live.remove()


@pytest.mark.docker
def test_a_task_that_needs_gpus_is_skipped_where_the_engine_has_none(docker_client):
    """These machines have no GPU: the engine reports no GPU runtime, so the task is skipped
    with what to install, before anything starts."""
    reason = DockerBackend(image=BASE_IMAGE).cannot_host(SandboxSpec(gpus=2))
    assert reason == (
        "needs 2 GPU(s); the Docker engine has no GPU runtime (install the NVIDIA Container "
        "Toolkit and restart the engine)"
    )
