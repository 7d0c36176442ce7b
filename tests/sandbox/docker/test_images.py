"""Task images: Dockerfiles built as written (aliases only where asked), a prebuilt image
preferred as in Harbor, built once, and run end to end.

The docker tests need a running engine and the local base image (scripts/build-base-image.sh);
they skip without them, and FAIL without them when EVALRUN_CI=1. The FROM names the fixtures
use are tagged locally (`tests.conftest.tag_local_bases`) - no registry is reachable here.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent
from evalrun.errors import SandboxError
from evalrun.models.records import Outcome
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.docker.images import TaskImages, aliased, context_digest, image_tag
from evalrun.tasks.base import TaskImage
from evalrun.tasks.loader import load_task
from tests.conftest import BASE_IMAGE, PACKAGES_BASE, REPO

FIXTURES = REPO / "tests" / "fixtures" / "harbor"
LIMITS = Limits(setup_s=60, agent_s=60, verify_s=60, max_retries=0)


def test_only_the_from_names_aliased_are_rewritten_and_stages_are_never():
    dockerfile = (
        "ARG V=3\n"
        "FROM --platform=linux/amd64 ghcr.io/x/builder:1 AS build\n"
        "RUN make\n"
        "from python:3.13-slim\n"
        "COPY --from=build /out /app\n"
        "FROM build AS again\n"
    )
    text, used = aliased(dockerfile, {"python:3.13-slim": "my-python"})
    assert text == dockerfile.replace("python:3.13-slim", "my-python")
    assert used == ["ghcr.io/x/builder:1", "my-python"]
    everything, used = aliased(dockerfile, {"*": "local-base", "python:3.13-slim": "my-python"})
    assert "FROM --platform=linux/amd64 local-base AS build" in everything
    assert used == ["local-base", "my-python"]
    assert aliased(dockerfile, {}) == (dockerfile, ["ghcr.io/x/builder:1", "python:3.13-slim"])


def test_the_tag_follows_the_context_the_dockerfile_as_built_and_the_bases(tmp_path):
    context = tmp_path / "environment"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM x\n")
    first = context_digest(context, {"x": "sha256:1"}, "FROM x\n")
    assert context_digest(context, {"x": "sha256:1"}, "FROM x\n") == first
    assert context_digest(context, {"x": "sha256:2"}, "FROM x\n") != first  # x re-tagged
    assert context_digest(context, {"y": "sha256:1"}, "FROM y\n") != first  # an alias
    (context / "data.txt").write_text("more\n")
    assert context_digest(context, {"x": "sha256:1"}, "FROM x\n") != first
    assert image_tag("Tool Version!", first) == f"evalrun-task/tool-version:{first[:16]}"


# --- against a real Docker engine ----------------------------------------------------------------


@pytest.mark.docker
def test_a_task_image_is_built_as_written_once_and_holds_what_its_dockerfile_made(docker_client):
    image = load_task(FIXTURES / "tool-version").format.image
    assert image is not None and image.prebuilt is None
    images = TaskImages(lambda: docker_client)
    tag = asyncio.run(images.resolve(image))
    built = docker_client.images.get(tag)
    assert asyncio.run(TaskImages(lambda: docker_client).resolve(image)) == tag  # not rebuilt
    assert docker_client.images.get(tag).id == built.id
    output = docker_client.containers.run(
        tag, ["/opt/tool/bin/tool", "--version"], remove=True, network_mode="none"
    )
    assert output == b"tool 2.4.1\n"


@pytest.mark.docker
def test_run_steps_reach_the_package_registries_with_the_build_network(docker_client, tmp_path):
    """`RUN apt-get install` and `RUN pip install`, as almost every Terminal-Bench Dockerfile
    has: built with `build_network=host` (this engine has no bridge) from Debian's archive and
    the Python package index. The first line makes each run build afresh (no layer cache)."""
    context = tmp_path / "environment"
    context.mkdir()
    (context / "Dockerfile").write_text(
        f"FROM {PACKAGES_BASE}\n"
        f"LABEL evalrun.test.nonce={uuid.uuid4().hex}\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends jq python3-pip "
        "&& rm -rf /var/lib/apt/lists/*\n"
        "RUN pip3 install --break-system-packages --no-cache-dir six==1.16.0\n"
    )
    images = TaskImages(lambda: docker_client, build_network="host")
    tag = asyncio.run(images.resolve(TaskImage("registries", context)))
    output = docker_client.containers.run(
        tag,
        ["sh", "-c", "jq --version; python3 -c 'import six; print(six.__version__)'"],
        remove=True,
        network_mode="none",
    )
    assert output.decode().split() == ["jq-1.6", "1.16.0"]


@pytest.mark.docker
def test_a_build_without_the_network_fails_with_its_log_and_what_to_set(docker_client, tmp_path):
    context = tmp_path / "environment"
    context.mkdir()
    (context / "Dockerfile").write_text(
        f"FROM {PACKAGES_BASE}\nLABEL nonce={uuid.uuid4().hex}\nRUN apt-get update\n"
        "RUN python3 -c 'import socket; socket.create_connection((\"deb.debian.org\", 80), 5)'\n"
    )
    images = TaskImages(lambda: docker_client, build_network="none")
    image = TaskImage("needs-network", context)
    for _ in range(2):  # the failure is remembered, not rebuilt
        with pytest.raises(SandboxError) as failed:
            asyncio.run(images.resolve(image))
        message = str(failed.value)
        assert message.startswith("building the image of task needs-network (")
        assert "set sandbox.build_network" in message and "log tail:" in message


@pytest.mark.docker
def test_a_from_name_the_engine_cannot_get_says_how_to_provide_it(docker_client, tmp_path):
    context = tmp_path / "environment"
    context.mkdir()
    (context / "Dockerfile").write_text("FROM evalrun-examples/not-here:never\nRUN true\n")
    images = TaskImages(lambda: docker_client)
    with pytest.raises(SandboxError, match="tag a local image with the name FROM uses"):
        asyncio.run(images.resolve(TaskImage("unreachable-base", context)))
    aliases = {"evalrun-examples/not-here:never": BASE_IMAGE}  # the explicit way round it
    tag = asyncio.run(
        TaskImages(lambda: docker_client, aliases).resolve(TaskImage("aliased", context))
    )
    assert docker_client.images.get(tag).attrs["Config"]["Labels"]["evalrun.task"] == "aliased"


@pytest.mark.docker
def test_a_prebuilt_image_wins_over_the_dockerfile_unless_force_build(docker_client, tmp_path):
    """As Harbor: `docker_image` is used even when environment/ has a Dockerfile too."""
    context = tmp_path / "environment"
    context.mkdir()
    (context / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN touch /built-from-dockerfile\n")
    image = TaskImage("both", context, prebuilt=BASE_IMAGE)
    assert asyncio.run(TaskImages(lambda: docker_client).resolve(image)) == BASE_IMAGE
    forced = TaskImages(lambda: docker_client, force_build=True)
    assert forced.unavailable(TaskImage("both", context, prebuilt="not-here:never")) is None
    tag = asyncio.run(forced.resolve(image))
    assert tag.startswith("evalrun-task/both:")
    output = docker_client.containers.run(tag, ["ls", "/built-from-dockerfile"], remove=True)
    assert output.strip() == b"/built-from-dockerfile"


@pytest.mark.docker
def test_a_missing_prebuilt_image_is_named(docker_client):
    images = TaskImages(lambda: docker_client)
    image = TaskImage("prebuilt", None, prebuilt="evalrun-examples/not-here:never")
    assert "needs the image 'evalrun-examples/not-here:never'" in images.unavailable(image)
    with pytest.raises(SandboxError, match="needs the image 'evalrun-examples/not-here:never'"):
        asyncio.run(images.resolve(image))


def write_folder(folder, files: dict[str, str]):
    """A task folder of `files` ({relative path: text}); returns `folder`."""
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


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
    task = load_task(write_folder(task_dir, files))
    gold = asyncio.run(run_sample(task, 0, OracleAgent(), _image_backend("1000:1000"), LIMITS, "t"))
    assert gold.outcome is Outcome.passed, (gold.reason, gold.verify_output)
    assert gold.agent.output.strip() == str(300 * 1024 * 1024)  # the task's memory_mb


@pytest.mark.docker
def test_environment_setup_sh_runs_as_the_images_user_and_leaves_the_workspace_to_the_agent(
    docker_client, tmp_path
):
    """The task author's preparation may install packages (root's work, as Harbor runs its
    environment's commands as the image's user); the agent, uid 1000, then owns what it made."""
    task_dir = tmp_path / "setup-as-root"
    files = {
        "task.toml": f"[environment]\ndocker_image = '{BASE_IMAGE}'\n",
        "instruction.md": "Append your uid to who.txt.\n",
        "environment/setup.sh": "id -u > who.txt\ntouch /usr/local/share/made-by-setup\n",
        "solution/solve.sh": "id -u >> who.txt\n",
        "tests/test.sh": (
            'got=$(tr "\\n" " " < who.txt); echo "$got"\n'
            '[ "$got" = "0 1000 " ] && [ -e /usr/local/share/made-by-setup ] && r=1 || r=0\n'
            'echo $r > "$VERIFIER_DIR/reward.txt"\n'
        ),
    }
    task = load_task(write_folder(task_dir, files))
    backend = _image_backend("1000:1000")
    gold = asyncio.run(run_sample(task, 0, OracleAgent(), backend, LIMITS, "t"))
    assert gold.outcome is Outcome.passed, (gold.reason, gold.verify_output)
    untouched = asyncio.run(run_sample(task, 0, NoopAgent(), backend, LIMITS, "t"))
    assert untouched.outcome is Outcome.failed
