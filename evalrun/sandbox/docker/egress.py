"""The egress gate: how a docker sample reaches only the hosts its task allows (Harbor's
`network_mode = "allowlist"` with `allowed_hosts`).

Per sample that asks for an allow-list in some phase, the backend makes an *internal* network
(no route out) and starts a gate container on it and on `public_network`, running the proxy in
`egress_proxy.py` from evalrun's base image. The sample's container joins only the internal
network in such a phase, and its commands get `HTTP_PROXY` / `HTTPS_PROXY` (upper and lower case)
naming the gate: a client that honours them (curl, pip, apt, git, npm, Python's urllib and
requests) reaches an allowed host through the gate and gets `403 Forbidden` for any other; a
client that ignores them reaches nothing. That is the difference from Harbor's docker gate, which
redirects traffic transparently: here an allow-list never lets more through, but a tool that
ignores the proxy variables gets less.

The allow file is rewritten when the phase changes (`allow`), so the agent's phase and the
verifier's may allow different hosts. Every decision the gate made is read back (`decisions`)
into the sample's record. The gate and its network carry evalrun's labels, so they go with the
sample's container: at its end, on Ctrl-C, and by the orphan sweep.
"""

from __future__ import annotations

import time
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.sandbox.common.transfer import tar_bytes

PROXY_PORT = 3128
GATE_ALIAS = "evalrun-egress-gate"  # the gate's name on the internal network
ALLOW_FILE = "/etc/evalrun-egress/allow"
PROXY_PATH = "/etc/evalrun-egress/egress_proxy.py"
PROXY_SOURCE = Path(__file__).with_name("egress_proxy.py")
READY_TIMEOUT_S = 20.0


def proxy_env() -> dict[str, str]:
    """The variables that send a command's HTTP(S) traffic through the gate."""
    url = f"http://{GATE_ALIAS}:{PROXY_PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
    local = dict.fromkeys(("NO_PROXY", "no_proxy"), "localhost,127.0.0.1")
    return {**dict.fromkeys(names, url), **local}


@dataclass
class EgressGate:
    """One sample's gate: its internal network (what the sample's container joins) and the
    proxy container between that network and the public one."""

    network: str
    container: Any

    @classmethod
    def open(
        cls, client: Any, image: str, public_network: str, labels: dict[str, str]
    ) -> EgressGate:
        """Make the internal network and start the gate (blocking); removes what it made if
        the gate does not come up."""
        name = f"evalrun-egress-{uuid.uuid4().hex[:12]}"
        network = client.networks.create(name, driver="bridge", internal=True, labels=labels)
        container = None
        try:
            container = client.containers.create(
                image,
                ["python3", PROXY_PATH, ALLOW_FILE, str(PROXY_PORT)],
                network=public_network,
                labels=labels,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                user="65534:65534",
                mem_limit="128m",
                pids_limit=64,
                init=True,
            )
            files = {PROXY_PATH: PROXY_SOURCE.read_bytes(), ALLOW_FILE: b""}
            container.put_archive("/", _tar(files))
            network.connect(container, aliases=[GATE_ALIAS])
            container.start()
            gate = cls(name, container)
            gate._wait_ready()
            return gate
        except Exception:
            if container is not None:
                with suppress(Exception):
                    container.remove(force=True)
            with suppress(Exception):
                network.remove()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            logs = self.container.logs(stdout=True, stderr=True).decode(errors="replace")
            if "ready " in logs:
                return
            self.container.reload()
            if self.container.status == "exited":
                raise RuntimeError(f"the egress gate stopped: {logs.strip()[-500:]}")
            time.sleep(0.05)
        raise RuntimeError(f"the egress gate did not start within {READY_TIMEOUT_S:.0f} s")

    def allow(self, hosts: tuple[str, ...]) -> None:
        """Let through exactly `hosts` from now on (blocking)."""
        allowed = "".join(f"{h}\n" for h in hosts).encode()
        self.container.put_archive("/", _tar({ALLOW_FILE: allowed}))

    def decisions(self) -> list[str]:
        """Each request the gate saw: `allow host:port` or `deny host:port`, in order."""
        with suppress(Exception):
            logs = self.container.logs(stdout=True, stderr=False).decode(errors="replace")
            return [line for line in logs.splitlines() if line.startswith(("allow ", "deny "))]
        return []

    def close(self, client: Any) -> None:
        """Remove the gate and its network (blocking; never raises)."""
        with suppress(Exception):
            self.container.remove(force=True)
        with suppress(Exception):
            client.networks.get(self.network).remove()


def _tar(files: dict[str, bytes]) -> bytes:
    """A tar of `files` (absolute paths) and their folders, readable by the gate's nobody user."""
    folders = sorted({str(Path(p).parent).lstrip("/") for p in files})
    entries = [(folder, None, 0o755, (0, 0)) for folder in folders]
    return tar_bytes(entries + [(p.lstrip("/"), data, 0o644, (0, 0)) for p, data in files.items()])
