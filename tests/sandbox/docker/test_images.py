"""Task images: Dockerfiles rewritten for an offline build, built once, and run end to end.

The docker tests need a running engine and the local base image (scripts/build-base-image.sh);
they skip without them, and FAIL without them when EVALRUN_CI=1.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent
from evalrun.errors import SandboxError
from evalrun.models.records import Outcome
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.docker.images import (
    TaskImages,
    build_context,
    context_digest,
    ensure_image,
    image_tag,
    offline_dockerfile,
)
from evalrun.tasks.base import TaskImage
from evalrun.tasks.loader import load_task
from tests.conftest import REPO, require_engine

FIXTURES = REPO / "tests" / "fixtures" / "harbor"
BASE_IMAGE = os.environ.get("EVALRUN_DOCKER_IMAGE", "evalrun-base:bookworm")
LIMITS = Limits(setup_s=60, agent_s=60, verify_s=60, max_retries=0)


def test_external_from_lines_point_at_the_local_base_image():
    dockerfile = (
        "ARG V=3\n"
        "FROM --platform=linux/amd64 ghcr.io/x/builder:1 AS build\n"
        "RUN make\n"
        "from python:3.13-slim\n"
        "COPY --from=build /out /app\n"
        "FROM build AS again\n"
    )
    assert offline_dockerfile(dockerfile, "evalrun-base:bookworm") == (
        "ARG V=3\n"
        "FROM evalrun-base:bookworm AS build\n"
        "RUN make\n"
        "from evalrun-base:bookworm\n"
        "COPY --from=build /out /app\n"
        "FROM build AS again\n"
    )


def test_the_tag_follows_the_context_and_the_base(tmp_path):
    context = tmp_path / "environment"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM x\n")
    first = context_digest(context, "sha256:base-1")
    assert context_digest(context, "sha256:base-1") == first
    assert context_digest(context, "sha256:base-2") != first
    (context / "data.txt").write_text("more\n")
    assert context_digest(context, "sha256:base-1") != first
    assert image_tag("Tool Version!", first) == f"evalrun-task/tool-version:{first[:16]}"


def test_the_build_context_carries_the_rewritten_dockerfile(tmp_path):
    import io
    import tarfile

    context = FIXTURES / "tool-version" / "environment"
    data = build_context(context, "FROM evalrun-base:bookworm\n")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = sorted(tar.getnames())
        dockerfile = tar.extractfile("Dockerfile").read().decode()
        tool_mode = tar.getmember("tool").mode
    assert names == ["Dockerfile", "tool"]
    assert dockerfile == "FROM evalrun-base:bookworm\n"
    assert tool_mode & 0o111


# --- against a real Docker engine ----------------------------------------------------------------


@pytest.fixture
def docker_client():
    try:
        import docker

        client = docker.from_env()
        client.ping()
        client.images.get(BASE_IMAGE)
        available = True
    except Exception:
        available = False
    require_engine(available, f"a Docker engine with the base image {BASE_IMAGE}")
    return client


@pytest.mark.docker
def test_a_task_image_builds_offline_once_and_holds_what_its_dockerfile_made(docker_client):
    image = load_task(FIXTURES / "tool-version").format.image
    assert image is not None
    tag = ensure_image(docker_client, image, BASE_IMAGE)
    built = docker_client.images.get(tag)
    assert ensure_image(docker_client, image, BASE_IMAGE) == tag  # found, not rebuilt
    assert docker_client.images.get(tag).id == built.id
    output = docker_client.containers.run(
        tag, ["/opt/tool/bin/tool", "--version"], remove=True, network_mode="none"
    )
    assert output == b"tool 2.4.1\n"


@pytest.mark.docker
def test_a_build_that_needs_the_network_fails_with_its_log(docker_client, tmp_path):
    context = tmp_path / "environment"
    context.mkdir()
    (context / "Dockerfile").write_text(
        "FROM ubuntu:24.04\nRUN python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), 2)'\n"
    )
    images = TaskImages(lambda: docker_client)
    image = TaskImage("needs-network", context)
    for _ in range(2):  # the failure is remembered, not rebuilt
        with pytest.raises(SandboxError, match="building the image of task needs-network offline"):
            asyncio.run(images.resolve(image, BASE_IMAGE))


@pytest.mark.docker
def test_a_missing_prebuilt_image_is_named(docker_client):
    image = TaskImage("prebuilt", None, prebuilt="evalrun-examples/not-here:never")
    with pytest.raises(SandboxError, match="needs the image 'evalrun-examples/not-here:never'"):
        ensure_image(docker_client, image, BASE_IMAGE)


def _image_backend(user: str):
    """The real docker backend; it opens samples in task images itself."""
    from evalrun.sandbox.docker.backend import DockerBackend

    return DockerBackend(image=BASE_IMAGE, user=user)


@pytest.mark.docker
def test_an_image_task_runs_both_ways_in_its_own_container(docker_client):
    backend = _image_backend(user="0:0")  # Terminal-Bench tasks expect root
    task = load_task(FIXTURES / "tool-version")
    assert backend.cannot_host(task.format.sandbox_spec) is None
    gold = asyncio.run(run_sample(task, 0, OracleAgent(), backend, LIMITS, "t"))
    assert gold.outcome is Outcome.passed, gold.reason
    assert gold.agent.output == "tool 2.4.1\n"
    untouched = asyncio.run(run_sample(task, 0, NoopAgent(), backend, LIMITS, "t"))
    assert untouched.outcome is Outcome.failed
    assert untouched.scores == {"reward": 0.0}


@pytest.mark.docker
def test_an_image_task_runs_as_the_unprivileged_sandbox_user_too(docker_client):
    backend = _image_backend(user="1000:1000")  # /logs/verifier is made for that user
    task = load_task(FIXTURES / "tool-version")
    rec = asyncio.run(run_sample(task, 0, OracleAgent(), backend, LIMITS, "t"))
    assert rec.outcome is Outcome.passed, rec.reason
    assert rec.scores == {"reward": 1.0}


@pytest.mark.docker
def test_an_image_workdir_is_the_workspace_and_task_limits_users_and_env_apply(
    docker_client, tmp_path
):
    """A Dockerfile's WORKDIR (no `workdir` in task.toml) is where the agent starts, with the
    image's files there handed to the task's user; cpus/memory_mb replace the backend's limits;
    [environment.env] reaches every command; [verifier] user runs test.sh."""
    task_dir = tmp_path / "app-task"
    files = {
        "task.toml": (
            "[agent]\nuser = 'nobody'\n[verifier]\nuser = 'root'\n"
            "[environment]\ncpus = 0.5\nmemory_mb = 300\n[environment.env]\nLABEL = 'app'\n"
        ),
        "instruction.md": "Append a line to notes.txt.\n",
        "environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\nCOPY notes.txt /app/\n",
        "environment/notes.txt": "first\n",
        "solution/solve.sh": (
            'echo "$(id -un) $LABEL" >> notes.txt\n'
            "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes\n"
        ),
        "tests/test.sh": (
            'want="first\nnobody app"; got=$(cat notes.txt)\n'
            '[ "$PWD" = /app ] && [ "$(id -u)" = 0 ] && [ "$LABEL" = app ] && '
            '[ "$got" = "$(printf "$want")" ] && r=1 || r=0\n'
            'echo "$PWD $(id -u) $got"; echo $r > "$VERIFIER_DIR/reward.txt"\n'
        ),
    }
    for rel, text in files.items():
        (task_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (task_dir / rel).write_text(text)
    task = load_task(task_dir)
    gold = asyncio.run(run_sample(task, 0, OracleAgent(), _image_backend("1000:1000"), LIMITS, "t"))
    assert gold.outcome is Outcome.passed, (gold.reason, gold.verify_output)
    assert gold.agent.output.strip() == str(300 * 1024 * 1024)  # the task's memory_mb
