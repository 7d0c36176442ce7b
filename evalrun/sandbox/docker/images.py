"""Build a task's own container image offline, FROM the local base image, once per process.

A Harbor task whose environment/ holds a Dockerfile needs that image. No registry can be reached,
so every `FROM <anything>` that does not name an earlier build stage is rewritten to the
backend's local base image (`evalrun-base:bookworm` by default), the build runs with
`network_mode=none` and `pull=False`, and the result is tagged
`evalrun-task/<task-id>:<digest>`, where the digest covers the build context's files (path,
mode, bytes) and the base image's id: an unchanged task on an unchanged base is never rebuilt,
not even across runs. A Dockerfile whose RUN steps need the network fails to build; the build
log's tail is the sample's `error` reason. `.dockerignore` is not applied (the whole
environment/ folder is the context). A task's prebuilt image (`docker_image`, no Dockerfile)
is used when the engine has it, else pulled; when it can be neither, planning skips the task
with the reason (`TaskImages.unavailable`).

The docker backend uses this through `TaskImages` (see `DockerBackend.open`), naming the base
at each call: the base a sample starts from can change during a run (an agent preset's install
becomes a layer of it), and a task image built FROM an older base would lack what was added:

```python
images = TaskImages(lambda: backend.client)
tag = await images.resolve(task_image, base)  # builds or finds it; raises SandboxError
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

from evalrun.errors import SandboxError, SandboxUnavailable
from evalrun.sandbox.base import TaskImage

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
    files: list[Path] = []
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
        problem = prebuilt_problem(client, image.prebuilt)
        if problem:
            raise SandboxError(
                f"task {image.task_id} needs the image {image.prebuilt!r}: {problem}"
            )
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


def prebuilt_problem(client: Any, name: str) -> str | None:
    """None when the engine has image `name` or can pull it now; else why it cannot be had."""
    import docker

    try:
        client.images.get(name)
        return None
    except docker.errors.ImageNotFound:
        pass
    try:
        client.images.pull(name)
        return None
    except docker.errors.DockerException as exc:
        detail = (getattr(exc, "explanation", None) or str(exc) or type(exc).__name__).strip()
        return (
            f"not in the local Docker engine and it could not be pulled ({detail}); "
            "load it with `docker load`"
        )


class TaskImages:
    """Resolves task images for one backend: each built at most once per process, even when many
    samples of the task start at the same time; a failed build is remembered, not retried."""

    def __init__(self, client: Callable[[], Any]):
        self._client = client
        self._done: dict[tuple[TaskImage, str], str | SandboxError] = {}
        self._locks: dict[tuple[TaskImage, str], asyncio.Lock] = {}
        self._prebuilt: dict[str, str | None] = {}

    def unavailable(self, image: TaskImage) -> str | None:
        """Why a task's prebuilt image cannot be had (None: present, pulled, or no engine to ask -
        the backend's preflight says so). Blocking; asked once per image."""
        assert image.prebuilt is not None
        if image.prebuilt not in self._prebuilt:
            try:
                client = self._client()
            except (SandboxError, SandboxUnavailable):
                return None
            import docker

            try:
                client.ping()
            except docker.errors.DockerException:
                return None
            problem = prebuilt_problem(client, image.prebuilt)
            self._prebuilt[image.prebuilt] = (
                None if problem is None else f"needs the image {image.prebuilt!r}: {problem}"
            )
        return self._prebuilt[image.prebuilt]

    async def resolve(self, image: TaskImage, base_image: str) -> str:
        """`image`'s local tag: a Dockerfile built FROM `base_image`, or the prebuilt image."""
        key = (image, base_image if image.context_dir is not None else "")
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._done:
                try:
                    self._done[key] = await asyncio.to_thread(
                        ensure_image, self._client(), image, base_image
                    )
                except SandboxError as exc:
                    self._done[key] = exc
            result = self._done[key]
        if isinstance(result, SandboxError):
            raise SandboxError(str(result))
        return result
