"""A task's own container image: its Dockerfile built as written, or its prebuilt image.

A Harbor task whose environment/ holds a Dockerfile runs in the image it builds, built as the
file is written: the engine pulls a base image it lacks, and RUN steps get the network
`build_network` names (the engine's default when unset; `host` on an engine without a bridge).
The task's network policy is for the agent and the verifier, not for the build - as in Harbor.
The result is tagged `evalrun-task/<task-id>:<digest>`, where the digest covers the build
context's files (path, mode, bytes), the aliases applied and the ids of the local images its
FROM lines name: an unchanged task on unchanged bases is never rebuilt, not even across runs.
The context is sent as the Docker CLI sends it (`.dockerignore` applied). A failed build's log
tail is the sample's `error` reason.

A task that names a prebuilt image (`docker_image`) runs in it, pulled when the engine lacks it,
also when it has a Dockerfile too, as Harbor does; `force_build` builds the Dockerfile instead.
When a prebuilt image can be had neither way, planning skips the task with the reason
(`TaskImages.unavailable`).

For a machine without a registry, `image_aliases` maps names FROM lines use to local images
(`{"ubuntu:24.04": "my-ubuntu"}`; the key `*` for every name not listed): an explicit setting,
in the run's config and provenance, never a silent rewrite. A FROM naming an earlier build stage
is never aliased.

The docker backend uses this through `TaskImages` (see `DockerBackend.sample_image`); the agent's
install goes on top of whichever image a sample starts from (a derived layer):

```python
images = TaskImages(lambda: backend.client, aliases={}, build_network=None)
tag = await images.resolve(task_image)  # builds, finds or pulls it; raises SandboxError
```
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalrun.errors import SandboxError, SandboxUnavailable
from evalrun.sandbox.base import TaskImage

TAG_REPOSITORY = "evalrun-task"
ANY_IMAGE = "*"  # the `image_aliases` key for every FROM name not listed
_FROM = re.compile(
    r"^(?P<lead>\s*FROM\s+)(?P<flags>(?:--\S+\s+)*)(?P<image>\S+)"
    r"(?P<rest>(?:\s+AS\s+(?P<stage>\S+))?\s*)$",
    re.IGNORECASE,
)
# What a build log says when the engine could not get an image or a RUN step the network.
_NEEDS_REGISTRY = re.compile(
    r"pull access denied|manifest unknown|not found: manifest|"
    r"no such host|repository does not exist",
    re.IGNORECASE,
)
_NEEDS_NETWORK = re.compile(
    r"Temporary failure resolving|Could not resolve|Network is unreachable|"
    r"Failed to establish a new connection|Name or service not known",
    re.IGNORECASE,
)


def aliased(text: str, aliases: Mapping[str, str]) -> tuple[str, list[str]]:
    """`text` with each FROM of an external image that `aliases` names pointed at its alias, and
    the names FROM lines use after that (stage references are kept, never aliased)."""
    stages: set[str] = set()
    lines, used = [], []
    for line in text.splitlines():
        match = _FROM.match(line)
        if match:
            image = match["image"]
            if image.lower() not in stages:
                image = aliases.get(image, aliases.get(ANY_IMAGE, image))
                used.append(image)
            if match["stage"]:
                stages.add(match["stage"].lower())
            line = f"{match['lead']}{match['flags']}{image}{match['rest']}"
        lines.append(line)
    return "\n".join(lines) + "\n", used


def _context_files(context_dir: Path) -> list[Path]:
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(context_dir):
        dirnames.sort()
        files.extend(Path(dirpath) / name for name in sorted(filenames))
    return files


def context_digest(context_dir: Path, bases: Mapping[str, str], dockerfile: str) -> str:
    """sha256 over the context's files (path, executable bit, bytes), the Dockerfile as built
    and the ids of the local images its FROM lines name (`bases`: name -> id, or "absent")."""
    digest = hashlib.sha256(dockerfile.encode())
    for name, image_id in sorted(bases.items()):
        digest.update(f"B {name} {image_id}\n".encode())
    for path in _context_files(context_dir):
        rel = path.relative_to(context_dir).as_posix()
        mode = "x" if os.access(path, os.X_OK) else "-"
        digest.update(f"F {rel} {mode}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def image_tag(task_id: str, digest: str) -> str:
    name = re.sub(r"[^a-z0-9_.-]+", "-", task_id.lower()).strip("-.") or "task"
    return f"{TAG_REPOSITORY}/{name}:{digest[:16]}"


def local_id(client: Any, name: str) -> str:
    import docker

    try:
        return str(client.images.get(name).id)
    except docker.errors.ImageNotFound:
        return "absent"


def build_image(
    client: Any, image: TaskImage, aliases: Mapping[str, str], network: str | None
) -> str:
    """The local tag of `image`'s Dockerfile built as written (FROM names in `aliases` pointed at
    their local images), building it first when absent. Blocking; raises `SandboxError`."""
    import docker

    assert image.context_dir is not None
    context = image.context_dir
    written = (context / "Dockerfile").read_text(encoding="utf-8")
    dockerfile, bases = aliased(written, aliases)
    tag = image_tag(
        image.task_id,
        context_digest(context, {b: local_id(client, b) for b in bases}, dockerfile),
    )
    if local_id(client, tag) != "absent":
        return tag
    with tempfile.TemporaryDirectory(prefix="evalrun-dockerfile-") as scratch:
        given = None
        if dockerfile != written:  # outside the context: the SDK adds it to what it sends
            given = os.path.join(scratch, "Dockerfile")
            Path(given).write_text(dockerfile, encoding="utf-8")
        try:
            client.images.build(
                path=str(context),
                dockerfile=given,
                tag=tag,
                pull=False,  # the engine still pulls a base it lacks
                network_mode=network,
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
                f"building the image of task {image.task_id} ({context / 'Dockerfile'}) "
                f"failed: {exc.msg}{_build_hint(tail + exc.msg, network)}; "
                f"log tail: {tail[-800:].strip()}"
            ) from exc
        except docker.errors.DockerException as exc:
            raise SandboxError(
                f"building the image of task {image.task_id} failed: {exc}"
                f"{_build_hint(str(exc), network)}"
            ) from exc
    return tag


def _build_hint(log: str, network: str | None) -> str:
    """What to do about a build that could not reach a registry or the network, if it says so."""
    if _NEEDS_REGISTRY.search(log):
        return (
            " (the engine could not get a base image: on a machine without a registry, tag a "
            "local image with the name FROM uses, or set sandbox.image_aliases)"
        )
    if _NEEDS_NETWORK.search(log):
        where = f"sandbox.build_network={network}" if network else "the engine's default network"
        return f" (a RUN step could not reach the network with {where}; set sandbox.build_network)"
    return ""


def prebuilt_problem(client: Any, name: str) -> str | None:
    """None when the engine has image `name` or can pull it now; else why it cannot be had."""
    import docker

    if local_id(client, name) != "absent":
        return None
    try:
        client.images.pull(name)
        return None
    except docker.errors.DockerException as exc:
        detail = (getattr(exc, "explanation", None) or str(exc) or type(exc).__name__).strip()
        return (
            f"not in the local Docker engine and it could not be pulled ({detail}); "
            "load it with `docker load` or tag a local image with that name"
        )


class TaskImages:
    """Resolves task images for one backend: each built or pulled at most once per process, even
    when many samples of the task start at the same time; a failure is remembered, not retried.
    `aliases`, `build_network` and `force_build` are the backend's settings of those names."""

    def __init__(
        self,
        client: Callable[[], Any],
        aliases: Mapping[str, str] | None = None,
        build_network: str | None = None,
        force_build: bool = False,
    ):
        self._client = client
        self.aliases = dict(aliases or {})
        self.build_network = build_network
        self.force_build = force_build
        self._done: dict[TaskImage, str | SandboxError] = {}
        self._locks: dict[TaskImage, asyncio.Lock] = {}
        self._prebuilt: dict[str, str | None] = {}

    def uses_prebuilt(self, image: TaskImage) -> bool:
        """Whether samples run in the task's prebuilt image (else its Dockerfile is built)."""
        return image.prebuilt is not None and (image.context_dir is None or not self.force_build)

    def unavailable(self, image: TaskImage) -> str | None:
        """Why a task's prebuilt image cannot be had (None: present, pulled, built from a
        Dockerfile, or no engine to ask - the backend's preflight says so). Blocking; asked
        once per image."""
        if not self.uses_prebuilt(image):
            return None
        name = image.prebuilt
        assert name is not None
        if name not in self._prebuilt:
            try:
                client = self._client()
            except (SandboxError, SandboxUnavailable):
                return None
            import docker

            try:
                client.ping()
            except docker.errors.DockerException:
                return None
            problem = prebuilt_problem(client, name)
            self._prebuilt[name] = (
                None if problem is None else f"needs the image {name!r}: {problem}"
            )
        return self._prebuilt[name]

    async def resolve(self, image: TaskImage) -> str:
        """`image`'s local tag: its prebuilt image, or its Dockerfile built."""
        lock = self._locks.setdefault(image, asyncio.Lock())
        async with lock:
            if image not in self._done:
                try:
                    self._done[image] = await asyncio.to_thread(self._ensure, image)
                except SandboxError as exc:
                    self._done[image] = exc
            result = self._done[image]
        if isinstance(result, SandboxError):
            raise SandboxError(str(result))
        return result

    def _ensure(self, image: TaskImage) -> str:
        client = self._client()
        if not self.uses_prebuilt(image):
            return build_image(client, image, self.aliases, self.build_network)
        assert image.prebuilt is not None
        problem = prebuilt_problem(client, image.prebuilt)
        if problem:
            raise SandboxError(
                f"task {image.task_id} needs the image {image.prebuilt!r}: {problem}"
            )
        return image.prebuilt
