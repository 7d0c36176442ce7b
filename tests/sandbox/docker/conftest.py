"""Fixtures of the docker tests: a bridge network with a web server on it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import BASE_IMAGE

SERVER_NAMES = ("web.evalrun.test", "other.evalrun.test")
WAIT_FOR_SERVER = (  # until the web server answers (up to 20 s)
    "import socket, time\n"
    "for _ in range(200):\n"
    "    try:\n"
    "        socket.create_connection(('127.0.0.1', 8000), 1).close()\n"
    "        break\n"
    "    except OSError:\n"
    "        time.sleep(0.1)\n"
)


@pytest.fixture
def bridge(docker_client) -> Iterator[tuple[str, str]]:
    """A bridge network of its own and a web server on it, also known there by `SERVER_NAMES`:
    (network name, the server's URL by address)."""
    name = f"evalrun-test-{uuid.uuid4().hex[:8]}"
    network = docker_client.networks.create(name, driver="bridge")
    server = docker_client.containers.run(
        BASE_IMAGE,
        [
            "bash",
            "-c",
            "mkdir -p /srv && echo hello > /srv/index.html && cd /srv && "
            "exec python3 -m http.server 8000",
        ],
        detach=True,
        network=name,
        labels={"evalrun.test": "1"},
    )
    try:  # two names for the server on the network, for the allow-list tests
        network.disconnect(server)
        network.connect(server, aliases=list(SERVER_NAMES))
        server.reload()
        server.exec_run(["python3", "-c", WAIT_FOR_SERVER])
        address = server.attrs["NetworkSettings"]["Networks"][name]["IPAddress"]
        yield name, f"http://{address}:8000/"
    finally:
        server.remove(force=True)
        network.remove()
