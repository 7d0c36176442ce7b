"""The docker backend beyond the shared conformance suite: configuration, clear errors before a
run, the container's limits and labels, cleanup on cancel / Ctrl-C / SIGKILL, and `evalrun check`
through the CLI. Engine-needing tests carry `@pytest.mark.docker` and fail in CI without one.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalrun.cli.hydra import compose_config
from evalrun.errors import SandboxUnavailable, UsageError
from evalrun.run.plan import build
from tests.conftest import REPO
from tests.sandbox.conftest import build_backend

docker_sdk = pytest.importorskip("docker", reason="the docker SDK is an optional extra")
from evalrun.sandbox.docker.backend import (  # noqa: E402 - after the SDK check
    DEFAULT_IMAGE,
    LABEL,
    OWNER_LABEL,
    DockerBackend,
)


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> DockerBackend:
    """A preflighted backend: skips without an engine + image, FAILS so in CI (EVALRUN_CI=1)."""
    return build_backend("docker", request)  # type: ignore[return-value]


def _containers(owner: str) -> list:
    """The run's containers, listed sparse: a full listing inspects each one and fails when a
    container is removed between the list and its inspect (the run removes them as it goes)."""
    client = docker_sdk.from_env()
    return client.containers.list(
        all=True, sparse=True, filters={"label": f"{OWNER_LABEL}={owner}"}
    )


# --- configuration and preflight: no engine needed ----------------------------------------------
def test_sandbox_docker_composes_into_a_docker_backend(make_task):
    suite = make_task().parent
    cfg = compose_config(
        ["sandbox=docker", f"tasks_dir={suite}", "sandbox.memory=512m", "sandbox.pids_limit=64"]
    )
    backend = build(cfg).backend
    assert isinstance(backend, DockerBackend)
    assert (backend.image, backend.network, backend.memory) == (DEFAULT_IMAGE, "none", "512m")
    assert (backend.pids_limit, backend.user) == (64, "1000:1000")


def test_a_typo_in_a_docker_knob_is_a_usage_error():
    with pytest.raises(UsageError, match="imagee"):
        compose_config(["sandbox=docker", "sandbox.imagee=x"])


@pytest.mark.parametrize(
    ("kwargs", "knob"),
    [({"memory": "lots"}, "sandbox.memory"), ({"cpus": 0}, "sandbox.cpus"),
     ({"pids_limit": -1}, "sandbox.pids_limit"), ({"user": "agent"}, "sandbox.user")],
)  # fmt: skip
def test_bad_limits_are_usage_errors_naming_the_knob(kwargs, knob):
    with pytest.raises(UsageError, match=rf"^{knob}: expected .*, got "):
        DockerBackend(**kwargs)


def test_unreachable_engine_is_a_clear_error_before_the_run(monkeypatch, tmp_path):
    sock = tmp_path / "no-engine.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
    with pytest.raises(SandboxUnavailable) as caught:
        DockerBackend().preflight()
    message = str(caught.value)
    assert f"unix://{sock}" in message
    assert "scripts/docker-engine.sh" in message and "DOCKER_HOST" in message
    assert caught.value.exit_code == 2


def test_missing_sdk_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(SandboxUnavailable, match=r"pip install 'evalrun\[docker\]'"):
        DockerBackend().preflight()


def test_cli_refuses_an_unreachable_engine_with_exit_2(make_task, tmp_path):
    suite = make_task().parent
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/none.sock"}
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "sandbox=docker", f"tasks_dir={suite}",
         f"run_dir={tmp_path / 'run'}"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "scripts/docker-engine.sh" in proc.stderr
    assert not (tmp_path / "run" / "samples.jsonl").exists()


# --- with an engine ------------------------------------------------------------------------------
@pytest.mark.docker
def test_missing_image_names_the_build_script(engine: DockerBackend):
    with pytest.raises(SandboxUnavailable, match=r"scripts/build-base-image\.sh"):
        DockerBackend(image="evalrun-no-such-image:never").preflight()


@pytest.mark.docker
def test_container_is_locked_down_and_labelled(engine: DockerBackend):
    backend = DockerBackend(memory="256m", cpus=0.5, pids_limit=64)

    async def body():
        async with backend.open("001-x#0") as box:
            attrs = backend.client.containers.get(box.container_id).attrs
            who = await box.exec("id -u; id -g; touch /usr/bin/evalrun-probe")
            return attrs, who

    attrs, who = asyncio.run(body())
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["Memory"] == 256 * 1024**2 and host["MemorySwap"] == 256 * 1024**2
    assert host["NanoCpus"] == 500_000_000 and host["PidsLimit"] == 64
    assert host["Binds"] in (None, []) and attrs["Mounts"] == []  # nothing of the host inside
    assert "no-new-privileges" in host["SecurityOpt"] and host["CapDrop"] == ["ALL"]
    labels = attrs["Config"]["Labels"]
    assert labels[LABEL] == "1" and labels["evalrun.sample"] == "001-x#0"
    assert labels[OWNER_LABEL] == f"{socket.gethostname()}:{os.getpid()}"
    assert who.stdout.split() == ["1000", "1000"]
    assert "Permission denied" in who.stderr  # the system files are not the agent's


@pytest.mark.docker
def test_a_kept_workspace_is_named_by_its_stopped_container(engine: DockerBackend):
    """keep_workspaces=true: the container stays (stopped) and `kept_at`, which the run prints
    and records, names it; without it, nothing is said to be kept."""
    keeping = DockerBackend(image=engine.image, keep_workspaces=True)

    async def body(backend: DockerBackend):
        async with backend.open("kept") as box:
            await box.write_file("notes.txt", "kept")
        return box.container_id, box.kept_at

    container_id, kept_at = asyncio.run(body(keeping))
    container = docker_sdk.from_env().containers.get(container_id)
    try:
        assert (
            kept_at
            == f"docker container {container.short_id} ({container.attrs['Config']['WorkingDir']})"
        )
        assert container.status == "exited"
    finally:
        container.remove(force=True)
    assert asyncio.run(body(engine))[1] is None


@pytest.mark.docker
def test_write_file_never_replaces_a_directory(engine: DockerBackend):
    async def body():
        async with engine.open("dir") as box:
            await box.exec("mkdir -p src && echo keep > src/a.py")
            with pytest.raises(IsADirectoryError):
                await box.write_file("src", "oops")
            return await box.read_file("src/a.py")

    assert asyncio.run(body()) == b"keep\n"


@pytest.mark.docker
def test_get_copies_files_out_without_what_is_excluded_or_leads_out(
    engine: DockerBackend, tmp_path: Path
):
    """`get` (a separate verifier's artifacts): a folder or a file, `exclude` left behind, a
    link out of the folder skipped, nothing at the path: False."""

    async def body():
        async with engine.open("get") as box:
            await box.exec(
                "mkdir -p /logs/artifacts/sub && echo a > /logs/artifacts/a.txt && "
                "echo t > /logs/artifacts/sub/x.tmp && ln -s /etc/passwd /logs/artifacts/pw && "
                "echo n > note.txt"
            )
            got = await box.get("/logs/artifacts", tmp_path / "dir", exclude=("*.tmp",))
            one = await box.get("note.txt", tmp_path / "file")
            return got, one, await box.get("/nothing/here", tmp_path / "none")

    (tmp_path / "dir").mkdir()
    (tmp_path / "file").mkdir()
    assert asyncio.run(body()) == (True, True, False)
    found = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert found == ["dir", "dir/artifacts", "dir/artifacts/a.txt", "dir/artifacts/sub", "file",
                     "file/note.txt"]  # fmt: skip
    assert (tmp_path / "file" / "note.txt").read_text() == "n\n"


@pytest.mark.docker
def test_read_file_follows_symlinks_inside_the_container(engine: DockerBackend):
    async def body():
        async with engine.open("link") as box:
            await box.exec(
                "echo inside > real.txt && ln -s real.txt rel && ln -s /etc/hostname abs"
            )
            return await box.read_file("rel"), await box.read_file("abs")

    rel, absolute = asyncio.run(body())
    assert rel == b"inside\n"
    assert absolute.strip() == b"sandbox"  # the container's /etc/hostname, not the host's


@pytest.mark.docker
def test_a_timeout_spares_a_concurrent_command(engine: DockerBackend):
    async def body():
        async with engine.open("concurrent") as box:
            slow = asyncio.ensure_future(box.exec("sleep 2; echo finished"))
            await asyncio.sleep(0.3)
            stuck = await box.exec("(setsid sleep 300 &); sleep 300", timeout_s=0.5)
            return stuck, await slow

    stuck, slow = asyncio.run(body())
    assert stuck.timed_out
    assert slow.ok and slow.stdout == "finished\n"


@pytest.mark.docker
def test_the_disk_watchdog_never_fails_a_sample_while_the_container_restarts(
    engine: DockerBackend,
):
    """A fork bomb's timeout restarts the container (the killer cannot run); the watchdog asking
    in that moment must ask again later, not end the sample as a harness error."""

    async def body():
        async with engine.open("restarting") as box:
            assert box.limit_poll_s is not None, "the watchdog is on by default (disk_mb)"
            await asyncio.to_thread(box._container.stop, timeout=0)
            between = await box.over_limit()
            await asyncio.to_thread(box._container.start)
            return between, await box.over_limit(), await box.exec("echo alive")

    between, after, alive = asyncio.run(body())
    assert between is None and after is None
    assert alive.stdout == "alive\n"


@pytest.mark.docker
def test_container_is_removed_when_the_sample_is_cancelled(engine: DockerBackend):
    async def body():
        opened: list[str] = []

        async def sample():
            async with engine.open("cancelled") as box:
                opened.append(box.container_id)
                await box.exec("sleep 300")

        task = asyncio.ensure_future(sample())
        while not opened:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return opened[0]

    container_id = asyncio.run(body())
    assert engine.client.containers.list(all=True, sparse=True, filters={"id": container_id}) == []


def _slow_suite(make_task) -> Path:
    return make_task("001-slow", files={"setup/setup.sh": "sleep 300\n"}).parent


def _start_run(suite: Path, run_dir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "evalrun.cli.main", "sandbox=docker", f"tasks_dir={suite}",
         f"run_dir={run_dir}", "trials=2", "max_retries=0"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for_containers(owner: str, count: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while len(_containers(owner)) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started its containers"
        time.sleep(0.2)


@pytest.mark.docker
def test_ctrl_c_removes_every_container_of_the_run(engine: DockerBackend, make_task, tmp_path):
    proc = _start_run(_slow_suite(make_task), tmp_path / "run")
    owner = f"{socket.gethostname()}:{proc.pid}"
    try:
        _wait_for_containers(owner, 2, proc)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _containers(owner) == []


@pytest.mark.docker
def test_ctrl_c_twice_exits_at_once_without_a_traceback_and_leaves_no_container(
    engine: DockerBackend, make_task, tmp_path
):
    proc = _start_run(_slow_suite(make_task), tmp_path / "run")
    owner = f"{socket.gethostname()}:{proc.pid}"
    try:
        _wait_for_containers(owner, 2, proc)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.1)  # the first one starts cancelling the samples
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    # Which handler takes the second one depends on whether the first one's clean-up is still
    # running (the engine's, "interrupted again") or already done (the runner's, "interrupted:
    # exiting now"); either way it leaves at once. tests/run/test_engine.py pins the first case.
    assert "interrupted" in err, err
    assert _containers(owner) == []


@pytest.mark.docker
def test_containers_of_a_killed_run_are_removed_by_the_next_preflight(
    engine: DockerBackend, make_task, tmp_path
):
    proc = _start_run(_slow_suite(make_task), tmp_path / "run")
    owner = f"{socket.gethostname()}:{proc.pid}"
    try:
        _wait_for_containers(owner, 2, proc)
    finally:
        proc.kill()  # SIGKILL: nothing in evalrun gets to clean up
        proc.communicate(timeout=60)
    assert len(_containers(owner)) == 2
    DockerBackend().preflight()
    assert _containers(owner) == []


@pytest.mark.docker
def test_evalrun_check_on_docker_through_the_cli(engine: DockerBackend, make_task):
    make_task("001-answer")
    suite = make_task(
        "002-git-setup",
        files={
            "setup/setup.sh": "git init -q -b main && echo 41 > answer.txt && git add -A "
            "&& git commit -qm start\n",
            "solution/solve.sh": "echo 42 > answer.txt && git commit -qam fix && echo fixed\n",
            "solution/answer.txt": "",
            "verify/verify.sh": '[ "$(git log --oneline | wc -l)" = 2 ] && grep -qx 42 answer.txt'
            ' && grep -q fixed "$EVALRUN_ANSWER_FILE" && echo PASS || { echo FAIL: no fix; exit 1; }\n',
        },
        drop=("solution/answer.txt",),
    ).parent
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "check", "sandbox=docker", f"tasks_dir={suite}"],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sandbox=docker" in proc.stdout
    assert "all 2 verifiers honest" in proc.stdout


# --- the offline tooling: scripts/ and `evalrun image build` -------------------------------------
BUILD_SCRIPT = REPO / "scripts" / "build-base-image.sh"


def _print_mirror(apt_etc: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "EVALRUN_APT_ETC": str(apt_etc)}
    env.pop("EVALRUN_DEBIAN_MIRROR", None)
    return subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--print-mirror"], capture_output=True, text=True, env=env
    )


def test_base_image_mirror_comes_from_the_machines_apt_sources(tmp_path):
    listed = tmp_path / "sources.list.d"
    listed.mkdir(parents=True)
    (listed / "a.sources").write_text(
        "Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates"
    )
    assert _print_mirror(tmp_path).stdout == "http://mirror.example/debian\n"
    (tmp_path / "sources.list").write_text(
        "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://one-line.example/debian bookworm main\n"
    )
    assert _print_mirror(tmp_path).stdout == "http://one-line.example/debian\n"


def test_base_image_without_a_bookworm_source_says_how_to_name_one(tmp_path):
    (tmp_path / "sources.list").write_text("deb http://old.example/debian bullseye main\n")
    proc = _print_mirror(tmp_path)
    assert proc.returncode == 1
    assert "EVALRUN_DEBIAN_MIRROR" in proc.stderr and "bookworm" in proc.stderr


def test_evalrun_image_without_build_is_a_usage_error():
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "image"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 2 and "usage: evalrun image [-h] [--force] build" in proc.stderr


@pytest.mark.docker
def test_engine_and_image_scripts_are_idempotent(engine: DockerBackend):
    started = subprocess.run(
        ["bash", str(REPO / "scripts" / "docker-engine.sh")], capture_output=True, text=True
    )
    assert started.returncode == 0 and "already answering" in started.stderr
    built = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "image", "build"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert built.returncode == 0 and f"{DEFAULT_IMAGE} already exists" in built.stderr
