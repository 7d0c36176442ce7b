"""Resource limits and leftovers: a sample's disk limit on the isolated backends, and what a run
killed outright leaves behind being removed by the next start on local and bwrap.
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

from evalrun.engine import Limits, run_sample
from evalrun.records import AgentResult, Outcome
from evalrun.sandbox.base import Sandbox
from evalrun.sandbox.owner import MARKER_FILE
from evalrun.tasks import load_task
from tests.conftest import REPO
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
        [sys.executable, "-m", "evalrun.cli", f"sandbox={backend_id}", f"tasks_dir={suite}",
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
