"""A compose environment on sandbox=docker: one `docker compose` project per sample.

A Harbor task whose environment/ holds a `docker-compose.yaml` runs several containers: `main`,
where the agent and the verifier exec, and sidecars (a database, a server) that `main` reaches by
service name on the project's network. As in Harbor 0.26, three files are merged, in this order:

1. evalrun's base for `main` (`base_file`): the sample's image as evalrun built it (the task's
   Dockerfile or prebuilt image, the agent's layer on top) and a keep-alive command;
2. the task's own file, which may add services and change `main`;
3. evalrun's overlay (`overlay_file`): `main` hardened as evalrun's single containers are
   (capabilities dropped, no-new-privileges, init, pids / memory / CPU / file-size limits, the
   live read-only mounts), evalrun's owner labels on every service, network and volume (so the
   orphan sweep finds what a killed run left), the project's networks `internal` when the task
   must have no network, and each sidecar's build on `build_network` under a stable tag.

One difference from a single container: compose cannot make `/proc` read-only in `main`.

Each project is named `evalrun-<random>`; `up -d --wait` starts it and awaits every healthcheck,
`down -v --remove-orphans` removes its containers, networks and volumes (`remove_project` does the
same through the SDK, for `abandon` and the orphan sweep, which need no compose binary).
"""

from __future__ import annotations

import functools
import json
import subprocess
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.errors import SandboxError
from evalrun.sandbox.docker.images import aliased, context_digest, image_tag

MAIN = "main"
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
UP_WAIT_S = 300  # how long `up --wait` waits for every service to be running and healthy
DOWN_TIMEOUT_S = 120
OUTPUT_TAIL = 1500  # what of compose's output a failure's reason keeps
PLUGIN_HINT = (
    "install the Compose v2 plugin: `evalrun setup docker` (or scripts/docker-compose-plugin.sh) "
    "puts it in ~/.docker/cli-plugins"
)


@functools.cache
def compose_missing() -> str | None:
    """Why `docker compose` cannot run here (None: it can). Asked once per process."""
    try:
        done = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the docker CLI could not run `docker compose version` ({exc}); {PLUGIN_HINT}"
    if done.returncode != 0:
        return f"the docker CLI has no compose plugin; {PLUGIN_HINT}"
    return None


def read_compose(path: Path) -> dict[str, Any]:
    """The task's compose file as a mapping; `ValueError` naming the file when it is not one."""
    import yaml

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: not a readable compose file ({exc})") from exc
    if not isinstance(document, dict) or not isinstance(document.get("services"), dict):
        raise ValueError(f"{path}: expected a mapping with `services`")
    return document


def offline_problem(document: Mapping[str, Any]) -> str | None:
    """Why a task's services could reach past an internal project network (None: they cannot):
    a `network_mode` other than none or another service's, or an external network."""
    for name, service in document["services"].items():
        mode = (service or {}).get("network_mode")
        if mode is not None and mode != "none" and not str(mode).startswith("service:"):
            return f"its service {name!r} has network_mode {mode!r}"
    for name, network in (document.get("networks") or {}).items():
        if (network or {}).get("external"):
            return f"its network {name!r} is external"
    return None


def _build_context(service: Mapping[str, Any], project_dir: Path) -> tuple[Path, str] | None:
    """A service's build context folder and Dockerfile name (None: it builds nothing)."""
    build = service.get("build")
    if build is None:
        return None
    if isinstance(build, str):
        return (project_dir / build).resolve(), "Dockerfile"
    return (project_dir / str(build.get("context", "."))).resolve(), str(
        build.get("dockerfile", "Dockerfile")
    )


@dataclass(frozen=True)
class Hardening:
    """What evalrun gives `main` (as `DockerBackend._create` gives a single container) and the
    labels every object of the project carries."""

    labels: Mapping[str, str]
    capabilities: Sequence[str]
    memory: str | None
    cpus: float | None
    pids_limit: int | None
    fsize_bytes: int | None
    read_only_mounts: Sequence[str]

    def main_service(self) -> dict[str, Any]:
        service: dict[str, Any] = {
            "init": True,
            "cap_drop": ["ALL"],
            "cap_add": list(self.capabilities),
            "security_opt": ["no-new-privileges"],
            "labels": dict(self.labels),
        }
        if self.memory is not None:
            service |= {"mem_limit": self.memory, "memswap_limit": self.memory}
        if self.cpus is not None:
            service["cpus"] = self.cpus
        if self.pids_limit is not None:
            service["pids_limit"] = self.pids_limit
        if self.fsize_bytes is not None:
            service["ulimits"] = {"fsize": {"soft": self.fsize_bytes, "hard": self.fsize_bytes}}
        if self.read_only_mounts:
            service["volumes"] = [
                {"type": "bind", "source": p, "target": p, "read_only": True}
                for p in self.read_only_mounts
            ]
        return service


@dataclass(frozen=True)
class ComposeProject:
    """One sample's compose project: its name, its files in merge order, the folder relative
    paths of the task's file resolve against, and the sidecar images evalrun tagged."""

    name: str
    files: tuple[Path, ...]
    project_dir: Path
    builds: tuple[str, ...]  # tags of the sidecar images `build` makes (`up` when missing)

    @property
    def network(self) -> str:
        return f"{self.name}_default"

    def run(self, args: Sequence[str], timeout_s: float) -> None:
        """Run one compose command to its end; `SandboxError` with its output's tail when it
        fails or takes longer than `timeout_s`."""
        files = [arg for path in self.files for arg in ("-f", str(path))]
        where = ["-p", self.name, "--project-directory", str(self.project_dir)]
        argv = ["docker", "compose", *where, *files, *args]
        try:
            done = subprocess.run(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s
            )
        except subprocess.TimeoutExpired as exc:
            tail = (exc.output or b"").decode(errors="replace")[-OUTPUT_TAIL:]
            raise SandboxError(
                f"docker compose {args[0]} of {self.name} took over {timeout_s:.0f}s: {tail}"
            ) from exc
        except OSError as exc:
            raise SandboxError(f"docker compose {args[0]} could not run: {exc}") from exc
        if done.returncode != 0:
            tail = done.stdout.decode(errors="replace")[-OUTPUT_TAIL:].strip()
            raise SandboxError(
                f"docker compose {args[0]} of {self.name} failed (exit {done.returncode}): {tail}"
            )

    def up(self, build_timeout_s: float) -> None:
        """Start every service and wait until each runs and is healthy (building what is
        missing first)."""
        wait = ["--wait", "--wait-timeout", str(UP_WAIT_S)]
        self.run(["up", "--detach", *wait], build_timeout_s + UP_WAIT_S + 60)

    def down(self) -> None:
        self.run(["down", "--volumes", "--remove-orphans", "--timeout", "0"], DOWN_TIMEOUT_S)

    def kill(self) -> None:
        """Stop every container, keeping them (`keep_workspaces`)."""
        self.run(["kill"], DOWN_TIMEOUT_S)


def write_project(
    folder: Path,
    task_file: Path,
    task_id: str,
    image: str,
    workdir: str,
    hardening: Hardening,
    internal: bool,
    build_network: str | None,
    local_id: Callable[[str], str],
) -> ComposeProject:
    """Write evalrun's base and overlay files into `folder` around the task's compose file.
    A sidecar built from a Dockerfile is tagged by its context and the ids of its FROM images
    (`local_id`: a name's local image id, or "absent"), as task images are. Raises `ValueError`
    naming the task's file when it is not a compose file."""
    document = read_compose(task_file)
    main = {"image": image, "command": ["sleep", "infinity"], "working_dir": workdir}
    labels = dict(hardening.labels)
    services: dict[str, Any] = {MAIN: hardening.main_service()}
    for name, service in document["services"].items():
        if name != MAIN:
            services[name] = {"labels": labels}
            services[name] |= _sidecar_build(
                service or {}, task_file.parent, f"{task_id}-{name}", build_network, local_id
            )
    networks = {"default": {"internal": internal, "labels": labels}}
    for name, network in (document.get("networks") or {}).items():
        if not (network or {}).get("external"):
            networks[name] = {"internal": internal, "labels": labels}
    volumes = {
        name: {"labels": labels}
        for name, volume in (document.get("volumes") or {}).items()
        if not (volume or {}).get("external")
    }
    overlay = {"services": services, "networks": networks}
    if volumes:
        overlay["volumes"] = volumes
    files = []
    for name, content in (("base.json", {"services": {MAIN: main}}), ("overlay.json", overlay)):
        path = folder / name
        path.write_text(json.dumps(content, indent=1), encoding="utf-8")
        files.append(path)
    builds = tuple(str(s["image"]) for n, s in services.items() if n != MAIN and "image" in s)
    project = f"evalrun-{uuid.uuid4().hex[:12]}"
    return ComposeProject(project, (files[0], task_file, files[1]), task_file.parent, builds)


def _sidecar_build(
    service: Mapping[str, Any],
    project_dir: Path,
    name: str,
    build_network: str | None,
    local_id: Callable[[str], str],
) -> dict[str, Any]:
    """What the overlay sets of a sidecar that builds from a Dockerfile: a stable tag (built
    once, not once per project) unless it names its own image, and the build's network."""
    context = _build_context(service, project_dir)
    if context is None:
        return {}
    own: dict[str, Any] = {}
    if "image" not in service:
        text = (context[0] / context[1]).read_bytes().decode(errors="replace")
        bases = {base: local_id(base) for base in aliased(text, {})[1]}
        own["image"] = image_tag(name, context_digest(context[0], bases, text))
    if build_network is not None:
        own["build"] = {"context": str(context[0]), "network": build_network}
    return own


def main_container(client: Any, project: str) -> Any:
    """The running `main` container of `project`; `SandboxError` when there is none."""
    filters = {"label": [f"{PROJECT_LABEL}={project}", f"{SERVICE_LABEL}={MAIN}"]}
    found = client.containers.list(filters=filters)
    if not found:
        raise SandboxError(f"compose project {project} has no running {MAIN} service")
    return found[0]


def remove_project(client: Any, project: str) -> None:
    """Remove every container, then network and volume, of `project` (through the SDK); what
    is already gone, or still in use, is passed over."""
    import docker

    label = {"label": f"{PROJECT_LABEL}={project}"}
    for container in client.containers.list(all=True, filters=label, sparse=True):
        with suppress(docker.errors.DockerException):
            container.remove(force=True, v=True)
    for kind in (client.networks, client.volumes):
        for item in kind.list(filters=label):
            with suppress(docker.errors.DockerException):
                item.remove()
