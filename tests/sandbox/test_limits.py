"""Resource limits and leftovers: a sample's disk limit on the isolated backends (the backend's
`disk_mb`, or a Harbor task's own `storage_mb`), a Harbor task's `memory_mb` on bwrap, and what a
run killed outright leaves behind being removed by the next start on local and bwrap.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from evalrun.models.records import AgentResult, Outcome
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import Sandbox
from evalrun.sandbox.bwrap import cgroup
from evalrun.sandbox.common.owner import MARKER_FILE
from evalrun.tasks.loader import load_task
from tests.conftest import REPO, require_engine
from tests.sandbox.conftest import backend_params, build_backend, host_pids_with

LIMITS = Limits(setup_s=60, agent_s=120, verify_s=60, max_retries=0, retry_backoff_s=0.01)
DISK_MB = 64


class Writer:
    """Writes far more than the disk limit, in one file or in many."""

    name = "writer"

    def __init__(self, script: str):
        self.script = script
        self.seen = ""
        self.finished = False

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox: Sandbox) -> AgentResult:
        done = await sandbox.exec(self.script)
        self.seen = done.stdout + done.stderr
        await asyncio.sleep(60)  # an agent that goes on thinking: the watchdog must end it
        self.finished = True
        return AgentResult(output="done")


ONE_5GB_FILE = "dd if=/dev/zero of=big bs=1M count=5120 2>&1; stat -c 'size=%s' big"
MANY_FILES = (
    "for i in $(seq 640); do head -c 8M /dev/zero > f$i || break; sleep 0.02; done; echo WROTE-ALL"
)


@pytest.mark.parametrize("script", [ONE_5GB_FILE, MANY_FILES], ids=["one-file", "many-files"])
@pytest.mark.parametrize("backend_id", backend_params(["bwrap", "docker"]))
def test_a_5_gb_write_is_stopped_at_the_disk_limit(backend_id, script, request, make_task):
    backend = build_backend(backend_id, request)
    backend.disk_mb = DISK_MB  # type: ignore[attr-defined]
    agent = Writer(script)
    rec = asyncio.run(run_sample(load_task(make_task()), 0, agent, backend, LIMITS, "limits"))
    assert rec.outcome is Outcome.failed
    error = rec.agent.error or ""
    assert "stopped: workspace disk limit" in error and f"sandbox.disk_mb={DISK_MB}" in error
    written = int(re.search(r"wrote (\d+) MiB", error).group(1))
    assert DISK_MB <= written < 1024, error  # stopped near the limit, far from 5 GB
    assert not agent.finished  # ended by the watchdog
    if script == ONE_5GB_FILE:  # RLIMIT_FSIZE: the file stops exactly at the limit
        assert f"size={DISK_MB * 1024 * 1024}" in agent.seen, agent.seen
    else:
        assert "WROTE-ALL" not in agent.seen


BELOW_PATH_MAX = (
    'n=$(printf "x%.0s" $(seq 250)); for i in $(seq 24); do mkdir "$n" && cd "$n" || exit 1; done; '
    "for i in $(seq 40); do head -c 8M /dev/zero > f$i || break; sleep 0.1; done; echo WROTE-ALL"
)


@pytest.mark.bwrap
def test_files_hidden_deeper_than_path_max_count_toward_the_disk_limit(request, make_task):
    """Files written at the bottom of a 6 KB path (no path-based walk reaches them) are
    counted by bwrap's watchdog, which walks the sample's folders on the host: the agent is
    stopped at the limit, not after writing all 320 MB."""
    backend = build_backend("bwrap", request)
    backend.disk_mb = DISK_MB  # type: ignore[attr-defined]
    agent = Writer(BELOW_PATH_MAX)
    rec = asyncio.run(run_sample(load_task(make_task()), 0, agent, backend, LIMITS, "limits"))
    assert rec.outcome is Outcome.failed
    assert "stopped: workspace disk limit" in (rec.agent.error or ""), rec.agent.error
    assert "WROTE-ALL" not in agent.seen and not agent.finished


def harbor_limits_task(root: Path, environment: str):
    """A Harbor task whose `[environment]` table is `environment` (its limits), loaded."""
    from tests.tasks.harbor.test_task import harbor_task

    return load_task(harbor_task(root, files={"task.toml": f"[environment]\n{environment}"}))


@pytest.mark.parametrize("backend_id", backend_params(["bwrap", "docker"]))
def test_a_harbor_tasks_storage_mb_is_its_samples_disk_limit(backend_id, request, tmp_path):
    backend = build_backend(backend_id, request)
    assert backend.disk_mb > 1024  # type: ignore[attr-defined]  # the default: far above the task's
    task = harbor_limits_task(tmp_path, f"storage_mb = {DISK_MB}\n")
    agent = Writer(ONE_5GB_FILE)
    rec = asyncio.run(run_sample(task, 0, agent, backend, LIMITS, "limits"))
    assert rec.outcome is Outcome.failed
    error = rec.agent.error or ""
    assert "stopped: workspace disk limit" in error, error
    assert f"at or over the task's storage_mb={DISK_MB}" in error
    assert f"size={DISK_MB * 1024 * 1024}" in agent.seen, agent.seen  # the file stopped there
    assert not agent.finished


class Prober:
    """Runs each command once in the agent phase and keeps what it printed on stdout."""

    name = "prober"

    def __init__(self, *commands: str):
        self.commands = commands
        self.seen: list[str] = []

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox: Sandbox) -> AgentResult:
        for command in self.commands:
            done = await sandbox.exec(command, timeout_s=60)
            self.seen.append(done.stdout)
        return AgentResult(output="probed")


HOG = 'python3 -c \'import time; x = b"x" * (120 << 20); time.sleep(2); print("held")\''


@pytest.mark.bwrap
def test_a_harbor_tasks_memory_mb_is_its_bwrap_samples_memory_limit(request, tmp_path):
    backend = build_backend("bwrap", request)  # sandbox.memory_mb: TEST_MEMORY_MB, > 3 x 120 MiB
    assert backend.memory_mb >= 512  # type: ignore[attr-defined]
    require_engine(backend.memory_cgroups is not None, "a memory cgroup (evalrun as root)")
    task = harbor_limits_task(tmp_path, "memory_mb = 300\n")
    agent = Prober(HOG, f"for i in 1 2 3; do {HOG} & done; wait")
    asyncio.run(run_sample(task, 0, agent, backend, LIMITS, "limits"))
    alone, together = agent.seen
    assert alone.split() == ["held"], alone  # 120 MiB fits under the task's 300
    assert together.count("held") < 3, together  # 3 x 120 MiB do not: the kernel ended one


@pytest.mark.bwrap
def test_without_a_cgroup_a_tasks_memory_mb_is_the_per_process_limit(
    request, tmp_path, monkeypatch
):
    monkeypatch.setattr(cgroup, "find", lambda: None)
    backend = build_backend("bwrap", request)
    task = harbor_limits_task(tmp_path, "memory_mb = 256\n")
    agent = Prober("ulimit -v")
    asyncio.run(run_sample(task, 0, agent, backend, LIMITS, "limits"))
    assert agent.seen == [f"{256 * 1024}\n"]


def _roots_of(pid: int) -> list[Path]:
    """Temp roots whose owner marker names process `pid`."""
    found = []
    for entry in Path(tempfile.gettempdir()).glob("evalrun-*"):
        try:
            if f":{pid}:" in (entry / MARKER_FILE).read_text():
                found.append(entry)
        except OSError:
            continue
    return found


@pytest.mark.parametrize("backend_id", backend_params(["local", "bwrap"]))
def test_what_a_killed_run_left_is_removed_by_the_next_start(
    backend_id, request, make_task, tmp_path, stray_processes
):
    marker = f"evalrun-orphan-{secrets.token_hex(6)}"
    setup = f"bash -c 'sleep 300; : {marker}' & sleep 300\n"
    suite = make_task(files={"setup/setup.sh": setup}).parent
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalrun.cli.main", f"sandbox={backend_id}", f"tasks_dir={suite}",
         f"run_dir={tmp_path / 'run'}", "trials=2", "max_retries=0"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(stray_processes(marker)) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, "samples never started"
            time.sleep(0.1)
        roots = _roots_of(proc.pid)
    finally:
        proc.kill()  # SIGKILL the run itself only: nothing in evalrun gets to clean up
        proc.wait()
    assert len(roots) == 2 and all(root.exists() for root in roots)
    build_backend(backend_id, request)  # a new start: its preflight sweeps
    assert [root for root in roots if root.exists()] == []
    assert host_pids_with(marker) == []
