"""Build a task's own container image offline, FROM the local base image, once per process.

A Harbor task whose environment/ holds a Dockerfile needs that image. No registry can be reached,
so every `FROM <anything>` that does not name an earlier build stage is rewritten to the
backend's local base image (`evalrun-base:bookworm` by default), the build runs with
`network_mode=none` and `pull=False`, and the result is tagged
`evalrun-task/<task-id>:<digest>`, where the digest covers the build context's files (path,
mode, bytes) and the base image's id: an unchanged task on an unchanged base is never rebuilt,
not even across runs. A Dockerfile whose RUN steps need the network fails to build; the build
log's tail is the sample's `error` reason. `.dockerignore` is not applied (the whole
environment/ folder is the context).

The docker backend uses this through `TaskImages` (see `DockerBackend.open_in_image`):

```python
images = TaskImages(lambda: backend.client, backend.image)
tag = await images.resolve(task_image)      # builds or finds it; raises SandboxError
```
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import re
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalrun.errors import SandboxError
from evalrun.formats.base import TaskImage

TAG_REPOSITORY = "evalrun-task"
_FROM = re.compile(
    r"^(?P<lead>\s*FROM\s+)(?P<flags>(?:--\S+\s+)*)(?P<image>\S+)"
    r"(?P<rest>(?:\s+AS\s+(?P<stage>\S+))?\s*)$",
    re.IGNORECASE,
)


def offline_dockerfile(text: str, base_image: str) -> str:
    """`text` with each external `FROM` pointed at `base_image` (stage references are kept)."""
    stages: set[str] = set()
    lines = []
    for line in text.splitlines():
        match = _FROM.match(line)
        if match:
            image = match["image"]
            if image.lower() not in stages:
                image = base_image
            if match["stage"]:
                stages.add(match["stage"].lower())
            line = f"{match['lead']}{image}{match['rest']}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _context_files(context_dir: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(context_dir):
        dirnames.sort()
        files.extend(Path(dirpath) / name for name in sorted(filenames))
    return files


def context_digest(context_dir: Path, base_id: str) -> str:
    """sha256 over the context's files (path, executable bit, bytes) and the base image's id."""
    digest = hashlib.sha256(f"base {base_id}\n".encode())
    for path in _context_files(context_dir):
        rel = path.relative_to(context_dir).as_posix()
        mode = "x" if os.access(path, os.X_OK) else "-"
        digest.update(f"F {rel} {mode}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def image_tag(task_id: str, digest: str) -> str:
    name = re.sub(r"[^a-z0-9_.-]+", "-", task_id.lower()).strip("-.") or "task"
    return f"{TAG_REPOSITORY}/{name}:{digest[:16]}"


def build_context(context_dir: Path, dockerfile: str) -> bytes:
    """A tar of `context_dir` whose Dockerfile is replaced by `dockerfile`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in _context_files(context_dir):
            rel = path.relative_to(context_dir).as_posix()
            if rel != "Dockerfile":
                tar.add(path, arcname=rel, recursive=False)
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def ensure_image(client: Any, image: TaskImage, base_image: str) -> str:
    """The local tag of `image`, building it first when absent. Blocking; raises `SandboxError`."""
    import docker

    if image.context_dir is None:
        assert image.prebuilt is not None
        try:
            client.images.get(image.prebuilt)
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(
                f"task {image.task_id} needs the image {image.prebuilt!r}, which is not in the "
                "local Docker engine and cannot be pulled offline; load it with `docker load`"
            ) from exc
        return image.prebuilt
    try:
        base_id = client.images.get(base_image).id
    except docker.errors.ImageNotFound as exc:
        raise SandboxError(f"base image {base_image!r} not found; build it first") from exc
    tag = image_tag(image.task_id, context_digest(image.context_dir, base_id))
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    dockerfile = (image.context_dir / "Dockerfile").read_text(encoding="utf-8")
    context = build_context(image.context_dir, offline_dockerfile(dockerfile, base_image))
    try:
        client.images.build(
            fileobj=io.BytesIO(context),
            custom_context=True,
            tag=tag,
            pull=False,
            network_mode="none",
            rm=True,
            forcerm=True,
            timeout=int(image.build_timeout_s),
            labels={"evalrun.task": image.task_id},
        )
    except docker.errors.BuildError as exc:
        tail = "".join(
            str(chunk.get("stream") or chunk.get("error") or "") for chunk in exc.build_log
        )
        raise SandboxError(
            f"building the image of task {image.task_id} offline from {base_image} failed: "
            f"{exc.msg}; log tail: {tail[-800:].strip()}"
        ) from exc
    except docker.errors.DockerException as exc:
        raise SandboxError(f"building the image of task {image.task_id} failed: {exc}") from exc
    return tag


class TaskImages:
    """Resolves task images for one backend: each built at most once per process, even when many
    samples of the task start at the same time; a failed build is remembered, not retried."""

    def __init__(self, client: Callable[[], Any], base_image: str):
        self._client = client
        self.base_image = base_image
        self._done: dict[TaskImage, str | SandboxError] = {}
        self._locks: dict[TaskImage, asyncio.Lock] = {}

    async def resolve(self, image: TaskImage) -> str:
        lock = self._locks.setdefault(image, asyncio.Lock())
        async with lock:
            if image not in self._done:
                try:
                    self._done[image] = await asyncio.to_thread(
                        ensure_image, self._client(), image, self.base_image
                    )
                except SandboxError as exc:
                    self._done[image] = exc
            result = self._done[image]
        if isinstance(result, SandboxError):
            raise SandboxError(str(result))
        return result
