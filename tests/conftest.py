"""Shared test set-up: offline SDK settings and a factory for throwaway task folders."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from evalrun.bundled import TASKS_DIR

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPIK_ANALYTICS_ENABLE", "false")

REPO = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("EVALRUN_CI") == "1"


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background (`cmd &` in a script) inherits SIGINT ignored, and so
    would every evalrun it starts - an ignored stop signal stays ignored, as under `nohup` - so
    the Ctrl-C and SIGHUP tests would see nothing arrive. They need them delivered."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def require_engine(available: bool, what: str) -> None:
    """Skip when an engine is genuinely absent - but in CI (EVALRUN_CI=1) fail instead."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI (EVALRUN_CI=1) but is not available")
    pytest.skip(f"{what} is not available on this machine")


TaskFactory = Callable[..., Path]


@pytest.fixture
def make_task(tmp_path: Path) -> TaskFactory:
    """Write a minimal, honest task folder and return its path.

    The default task asks for `answer.txt` containing `42`; verify.sh checks it. Pass `spec`
    to change task.yaml fields, `files` as {relative path: text} to add or replace files.
    """
    suite = tmp_path / "suite"

    def factory(
        task_id: str = "001-answer",
        *,
        spec: dict | None = None,
        files: dict[str, str] | None = None,
        drop: tuple[str, ...] = (),
    ) -> Path:
        folder = suite / task_id
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "id": task_id,
            "prompt": "Write the number 42 into answer.txt.",
            "max_steps": 5,
            "difficulty": "easy",
            "tags": ["demo"],
        }
        data.update(spec or {})
        defaults = {
            "task.yaml": yaml.safe_dump(data),
            "setup/README.md": "Put the answer in answer.txt\n",
            "verify/verify.sh": textwrap.dedent(
                """\
                #!/usr/bin/env bash
                if [ "$(cat answer.txt 2>/dev/null)" = "42" ]; then echo PASS; exit 0; fi
                echo "FAIL: answer.txt does not contain 42"; exit 1
                """
            ),
            "solution/answer.txt": "42",
            "wrong/off-by-one/answer.txt": "41",
        }
        defaults.update(files or {})
        for rel, text in defaults.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for rel in drop:
            target = folder / rel
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink()
        return folder

    return factory


# --- task images: their Dockerfiles are built as written, FROM names these tests tag locally -----

BASE_IMAGE = os.environ.get("EVALRUN_DOCKER_IMAGE", "evalrun-base:bookworm")
# The names the fixtures' Dockerfiles use FROM. These machines reach no image registry, so the
# tests tag local images with them - the real path a user without a registry takes too (they
# could also set sandbox.image_aliases); a user with one gets the real images pulled.
LOCAL_BASES = ("ghcr.io/example/python-3-13:20250620", "python:3.12-slim")
# A Debian image whose RUN apt-get / pip install reach the package registries this machine has
# (with `build_network=host`): the base image plus this machine's CA bundle, which its TLS to
# the registries needs.
PACKAGES_BASE = "evalrun-test/debian-registries:bookworm"


def tag_local_bases(client) -> None:
    """Tag `BASE_IMAGE` under every FROM name of `LOCAL_BASES`, and build `PACKAGES_BASE`."""
    import io
    import tarfile

    base = client.images.get(BASE_IMAGE)
    for name in LOCAL_BASES:
        repository, _, tag = name.rpartition(":")
        base.tag(repository, tag)
    bundle = Path("/etc/ssl/certs/ca-certificates.crt").read_bytes()
    dockerfile = f"FROM {BASE_IMAGE}\nCOPY ca.crt /etc/ssl/certs/ca-certificates.crt\n".encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in (("Dockerfile", dockerfile), ("ca.crt", bundle)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    client.images.build(
        fileobj=context, custom_context=True, tag=PACKAGES_BASE, network_mode="none"
    )


@pytest.fixture
def docker_client():
    """The Docker engine, with the base image and the FROM names the fixtures use tagged locally
    (skipped without an engine - and FAILED without one when EVALRUN_CI=1)."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
        client.images.get(BASE_IMAGE)
        available = True
    except Exception:
        available = False
    require_engine(available, f"a Docker engine with the base image {BASE_IMAGE}")
    tag_local_bases(client)
    return client


# --- a suite in a git repository (suites by reference: evalrun.tasks.remote) ------------------
SUITE_REPO_TASKS = ("001-fizzbuzz-off-by-one", "002-factorial-missing-return")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def suite_repo(tmp_path: Path) -> dict[str, str]:
    """A git repository with two bundled tasks under tasks/: tag v1, a task changed, tag v2 (also
    the head of branch main). Returns its path and the commits of v1 and v2."""
    repo = tmp_path / "origin"
    (repo / "tasks").mkdir(parents=True)
    git("init", "--quiet", "--initial-branch=main", cwd=repo)
    for task in SUITE_REPO_TASKS:
        shutil.copytree(TASKS_DIR / task, repo / "tasks" / task)
    git("add", "-A", cwd=repo)
    git("commit", "--quiet", "-m", "two tasks", cwd=repo)
    git("tag", "v1", cwd=repo)
    prompt = repo / "tasks" / SUITE_REPO_TASKS[0] / "task.yaml"
    prompt.write_text(prompt.read_text() + "# v2: reworded\n")
    git("commit", "--quiet", "-am", "task 001 changed", cwd=repo)
    git("tag", "v2", cwd=repo)
    return {
        "path": str(repo),
        "v1": git("rev-parse", "v1", cwd=repo),
        "v2": git("rev-parse", "v2", cwd=repo),
    }
