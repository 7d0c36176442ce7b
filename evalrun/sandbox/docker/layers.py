"""A derived Docker image: an image plus host folders at the same path, built once, offline.

`sandbox=docker` shows an agent's install (read-only software: the CLI, its runtime) to its
containers this way rather than with a bind mount, so the containers stay free of host mounts
for everything but the gateway's socket folder. Every image a sample starts from gets it: the
configured base (a task's Dockerfile is then built FROM that layered base) and a task's prebuilt
`docker_image` alike (`DockerBackend.with_layer`). The image is made by starting nothing: a
container is created from the image, the folders are copied in with `put_archive` (files owned
by root, modes kept) and the container is committed as `evalrun-layer:<digest>`, where the
digest covers the image's id and each folder's path and `installed.json` (which pins what the
folder holds). An unchanged install on an unchanged image is never rebuilt, not even across runs.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
import tempfile
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from evalrun.errors import SandboxUnavailable
from evalrun.sandbox.common.transfer import owned_by

REPOSITORY = "evalrun-layer"
MARKER = "installed.json"


def layer_tag(base_id: str, folders: Sequence[Path]) -> str:
    digest = hashlib.sha256(f"base {base_id}\n".encode())
    for folder in folders:
        digest.update(f"folder {folder}\n".encode())
        marker = folder / MARKER
        digest.update(
            marker.read_bytes() if marker.is_file() else str(folder.stat().st_mtime_ns).encode()
        )
    return f"{REPOSITORY}:{digest.hexdigest()[:16]}"


def ensure_layer(client: Any, base_image: str, folders: Sequence[Path]) -> str:
    """The tag of `base_image` + `folders`, building it when absent. Blocking."""
    import docker

    try:
        base_id = client.images.get(base_image).id
    except docker.errors.ImageNotFound as exc:
        raise SandboxUnavailable(f"image {base_image!r} is not in the Docker engine") from exc
    tag = layer_tag(base_id, folders)
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    container = client.containers.create(base_image, ["true"], network_mode="none")
    try:
        with tempfile.TemporaryFile(dir=os.environ.get("TMPDIR")) as handle:
            with tarfile.open(fileobj=handle, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for folder in folders:
                    name = str(folder).lstrip("/")
                    tar.add(folder, arcname=name, filter=partial(owned_by, owner=(0, 0)))
            handle.seek(0)
            container.put_archive("/", handle)
        repository, _, version = tag.partition(":")
        container.commit(repository=repository, tag=version)
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"building the image layer {tag} failed: {exc}") from exc
    finally:
        container.remove(force=True)
    return tag
