"""Harbor compose environments on sandbox=docker: one compose project per sample.

The fixture tests/fixtures/harbor-compose/shop-migration has the agent migrate a PostgreSQL
database (a sidecar built from Debian's packages, its data in a named volume) from `main` by
service name; its verifier diffs the database's whole end state. Both images build once (their
tags follow their contexts, so later runs reuse them) with `build_network=host`, the RUN
apt-get reaching Debian's archive as on these machines. The docker tests need a running engine,
the compose plugin and the local base image (they skip without, and FAIL without when
EVALRUN_CI=1).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent
from evalrun.models.records import Outcome, SampleRecord
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import SandboxSpec
from evalrun.sandbox.bwrap.backend import BwrapBackend
from evalrun.sandbox.docker.compose import compose_missing
from evalrun.sandbox.local import LocalBackend
from evalrun.sandbox.modal import ModalBackend
from evalrun.tasks.loader import Task, load_task
from tests.conftest import BASE_IMAGE, PACKAGES_BASE, REPO, require_engine, tag_local_bases

SUITE = REPO / "tests" / "fixtures" / "harbor-compose"
FIXTURE = SUITE / "shop-migration"
LIMITS = Limits(setup_s=900, agent_s=120, verify_s=120, max_retries=0)
OWNER = "evalrun.owner"


@pytest.fixture(scope="session")
def compose_engine():
    """The engine with the compose plugin, `debian:bookworm` (the fixture's FROM) tagged as the
    local Debian image that reaches the package registries, and the fixture's images built."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
        client.images.get(BASE_IMAGE)
        available = compose_missing() is None
    except Exception:
        available = False
    require_engine(available, f"a Docker engine with compose and the base image {BASE_IMAGE}")
    tag_local_bases(client)
    client.images.get(PACKAGES_BASE).tag("debian", "bookworm")
    return client


def _backend():
    from evalrun.sandbox.docker.backend import DockerBackend

    return DockerBackend(build_network="host")


def _run(task: Task, agent, backend) -> SampleRecord:
    return asyncio.run(run_sample(task, 0, agent, backend, LIMITS, "t"))


def _left(client, owner: str) -> list[str]:
    """Every container, network and volume an evalrun process `owner` left."""
    label = {"label": f"{OWNER}={owner}"}
    found = [c.name for c in client.containers.list(all=True, filters=label)]
    found += [n.name for n in client.networks.list(filters=label)]
    return found + [v.name for v in client.volumes.list(filters=label)]


def _internet(tmp_path: Path, allowed: bool) -> Task:
    folder = tmp_path / "shop-migration"
    shutil.copytree(FIXTURE, folder)
    toml = folder / "task.toml"
    allow = f"allow_internet = {str(allowed).lower()}"
    toml.write_text(toml.read_text().replace("allow_internet = false", allow))
    return load_task(folder)


# --- without containers --------------------------------------------------------------------------


def test_the_task_loads_with_its_compose_file_and_backends_of_one_container_say_why_not():
    task = load_task(FIXTURE)
    spec = task.format.sandbox_spec
    assert not task.format.unsupported
    assert spec.compose_file == FIXTURE / "environment" / "docker-compose.yaml"
    for backend, name in ((LocalBackend(), "local"), (BwrapBackend(), "bwrap")):
        assert task.format.cannot_run_on(backend) == (
            "needs several containers (environment/docker-compose.yaml); "
            f"sandbox={name} runs one (use sandbox=docker)"
        )
    assert "sandbox=modal runs one" in (ModalBackend().cannot_host(spec) or "")


def test_without_the_compose_plugin_docker_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))  # a docker CLI config with no plugins
    compose_missing.cache_clear()
    try:
        plugins = [Path("/usr/libexec/docker/cli-plugins"), Path("/usr/lib/docker/cli-plugins")]
        if any((p / "docker-compose").exists() for p in plugins):
            pytest.fail("a system-wide compose plugin is installed; this test needs none")
        reason = _backend().cannot_host(load_task(FIXTURE).format.sandbox_spec)
    finally:
        compose_missing.cache_clear()
    assert reason is not None
    assert reason.startswith("needs several containers (environment/docker-compose.yaml)")
    assert "`evalrun setup docker`" in reason


def test_a_sidecar_that_could_reach_past_an_internal_network_is_refused(tmp_path):
    task = load_task(FIXTURE)
    compose = tmp_path / "docker-compose.yaml"
    compose.write_text("services:\n  main: {}\n  proxy:\n    image: x\n    network_mode: host\n")
    spec = SandboxSpec(compose_file=compose)
    assert _backend().cannot_host(spec) == (
        "must have no network, but its service 'proxy' has network_mode 'host'"
    )
    assert task.format.sandbox_spec.network.value == "none"


# --- on docker -----------------------------------------------------------------------------------


@pytest.mark.docker
def test_the_oracle_passes_and_noop_fails_and_no_project_is_left(compose_engine):
    backend = _backend()
    task = load_task(FIXTURE)
    assert task.format.cannot_run_on(backend) is None
    gold = _run(task, OracleAgent(), backend)
    assert gold.outcome is Outcome.passed, gold.reason
    untouched = _run(task, NoopAgent(), backend)
    assert untouched.outcome is Outcome.failed
    assert "(1,Ada,gb)" in (untouched.verify_output or "")  # the database as the agent left it
    assert _left(compose_engine, backend.owner_label) == []


@pytest.mark.docker
@pytest.mark.parametrize("allowed", [False, True])
def test_the_projects_network_is_internal_when_the_task_forbids_the_internet(
    compose_engine, tmp_path, allowed
):
    """Checked on the engine while the sample runs: the project's network, and `main` hardened
    as a single container is."""
    backend = _backend()
    task = _internet(tmp_path, allowed)

    async def inspect() -> tuple[list[bool], dict]:
        async with backend.open("net", task.format.sandbox_spec) as box:
            assert (await box.exec("getent hosts db")).ok  # main reaches the sidecar by name
            mine = {"label": f"{OWNER}={backend.owner_label}"}
            internal = [n.attrs["Internal"] for n in compose_engine.networks.list(filters=mine)]
            main = compose_engine.containers.get(box.container_id)
            return internal, main.attrs["HostConfig"]

    internal, host = asyncio.run(inspect())
    assert internal == [not allowed]
    assert host["CapDrop"] == ["ALL"] and host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Init"] is True and host["PidsLimit"] == 512 and host["Memory"] == 2 << 30
    assert _left(compose_engine, backend.owner_label) == []


_HOLD = textwrap.dedent(
    """\
    import asyncio, sys
    from pathlib import Path
    from evalrun.sandbox.docker.backend import DockerBackend
    from evalrun.tasks.loader import load_task

    async def hold():
        spec = load_task(Path(sys.argv[1])).format.sandbox_spec
        async with DockerBackend(build_network="host").open("killed", spec):
            print("up", flush=True)
            await asyncio.sleep(600)

    asyncio.run(hold())
    """
)


@pytest.mark.docker
def test_a_killed_runs_project_is_removed_by_the_next_preflight(compose_engine):
    from evalrun.sandbox.docker.backend import DockerBackend

    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(FIXTURE)],
        stdout=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    owner = f"{socket.gethostname()}:{proc.pid}"
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    finally:
        proc.kill()  # SIGKILL: nothing in evalrun gets to clean up
        proc.wait(timeout=60)
    left = _left(compose_engine, owner)
    assert len(left) == 4, left  # main, db, the network, the database's volume
    DockerBackend().preflight()
    assert _left(compose_engine, owner) == []


@pytest.mark.docker
def test_evalrun_check_proves_the_compose_tasks_verifier_honest(compose_engine):
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "check", "sandbox=docker", "--tamper=none",
         f"tasks_dir={SUITE}", "sandbox.build_network=host"],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "shop-migration" in line)
    assert "ok (reward 1)" in row and "ok (reward 0)" in row
    assert "all 1 verifiers honest" in proc.stdout
