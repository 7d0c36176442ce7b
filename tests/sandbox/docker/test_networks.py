"""The network each phase asks for, on docker: a task that declares the network gets
`public_network`, one that says nothing gets `network`, `offline` takes it from all, and the
agent's phase and the verifier's can differ - the container is reattached between them.

These need a bridge network, which the engine here (`dockerd --bridge=none`) has only when a
test makes one; the peer the sandbox tries to reach is a container on that network.
"""

from __future__ import annotations

import asyncio

import pytest

from evalrun.sandbox.base import Network, SandboxSpec
from evalrun.sandbox.docker.backend import DockerBackend
from tests.conftest import BASE_IMAGE

PROBE = (
    "import os, urllib.request\n"
    "try:\n"
    "    print(urllib.request.urlopen(os.environ['URL'], timeout=3).read().decode().strip())\n"
    "except Exception as exc:\n"
    "    print('unreachable', type(exc).__name__)\n"
)


async def _phases(backend: DockerBackend, spec: SandboxSpec, url: str) -> list[str]:
    """What the sandbox reaches in the agent's phase, the verifier's, and the agent's again."""
    seen = []
    async with backend.open("networks", spec) as box:
        for step in (None, box.end_agent, box.begin_agent):
            if step is not None:
                await step()
            done = await box.exec(["python3", "-c", PROBE], env={"URL": url}, timeout_s=30)
            seen.append(done.stdout.strip().split()[0] if done.stdout.strip() else done.stderr)
    return seen


@pytest.mark.docker
@pytest.mark.parametrize(
    ("networks", "expected"),
    [
        ((Network.none, Network.public), ["unreachable", "hello", "unreachable"]),
        ((Network.public, Network.none), ["hello", "unreachable", "hello"]),
        ((Network.public, Network.public), ["hello", "hello", "hello"]),
        ((Network.unspecified, Network.public), ["unreachable", "hello", "unreachable"]),
    ],
)
def test_each_phase_gets_the_network_it_asks_for(bridge, networks, expected):
    name, url = bridge
    backend = DockerBackend(image=BASE_IMAGE, public_network=name)  # `network` stays none
    spec = SandboxSpec(network=networks[0], verifier_network=networks[1])
    assert backend.cannot_host(spec) is None
    assert asyncio.run(_phases(backend, spec, url)) == expected


@pytest.mark.docker
def test_offline_takes_the_network_from_every_phase(bridge):
    name, url = bridge
    backend = DockerBackend(image=BASE_IMAGE, public_network=name, offline=True)
    spec = SandboxSpec(network=Network.public)
    assert backend.cannot_host(spec) is None
    assert asyncio.run(_phases(backend, spec, url)) == ["unreachable"] * 3


@pytest.mark.docker
def test_a_network_the_engine_lacks_or_cannot_switch_is_a_reason_to_skip(docker_client):
    backend = DockerBackend(image=BASE_IMAGE, public_network="evalrun-no-such-network")
    reason = backend.cannot_host(SandboxSpec(network=Network.public))
    assert reason is not None and "no network 'evalrun-no-such-network'" in reason
    assert "sandbox.public_network" in reason
    host = DockerBackend(image=BASE_IMAGE, public_network="host")
    assert host.cannot_host(SandboxSpec(network=Network.public)) is None
    split = host.cannot_host(SandboxSpec(network=Network.none, verifier_network=Network.public))
    assert split is not None and "only bridge networks can be switched" in split
