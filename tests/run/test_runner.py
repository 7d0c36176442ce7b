"""The runner's bookkeeping of a run directory: one writer at a time, and a partial run says so.

Real `evalrun` processes: a run is SIGKILLed part-way, then two resumes of it start at the same
instant; the kernel's lock lets exactly one of them write. A run that SIGTERM or SIGHUP stops
(`timeout`, `docker stop`, a closed terminal) ends as Ctrl-C ends it, on every backend.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.run.test_engine import _cli, _kill_after, _lines
from tests.rundir.test_dirs import start_together
from tests.sandbox.conftest import backend_params, build_backend, host_pids_with


def test_two_concurrent_resumes_one_is_refused_and_nothing_runs_twice(make_task, tmp_path):
    for i in range(1, 5):
        make_task(f"00{i}-slow", files={"setup/setup.sh": "sleep 0.3\n"})
    suite = tmp_path / "suite"
    run_dir = tmp_path / "run"
    _kill_after(
        [f"tasks_dir={suite}", f"run_dir={run_dir}", "trials=3", "concurrency=2"], run_dir, 2
    )
    before = (run_dir / "samples.jsonl").read_text().count("\n")
    assert before < 12

    first, second = start_together(tmp_path, [f"resume={run_dir}"], [f"resume={run_dir}"])
    codes = sorted([first.returncode, second.returncode])
    assert codes == [0, 2], (first.stderr, second.stderr)
    refused = first if first.returncode == 2 else second
    assert f"run {run_dir} is being written by pid " in " ".join(refused.stderr.split())
    assert "(started " in refused.stderr and "Traceback" not in refused.stderr
    assert "resuming" not in refused.stdout  # refused before anything ran

    lines = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    cells = Counter((x["task_id"], x["trial"]) for x in lines)
    assert len(cells) == 12 and set(cells.values()) == {1}  # every cell once: 0 duplicates
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["samples"] == 12 and summary["state"]["label"] == "complete"
    assert (run_dir / "writer.lock").read_text() == ""  # released


def test_a_dry_run_or_a_refused_run_leaves_no_directory(make_task, tmp_path):
    suite = make_task("001-answer").parent
    dry = subprocess.run(
        _cli(f"tasks_dir={suite}", "dry_run=true"), cwd=tmp_path, capture_output=True, text=True
    )
    assert dry.returncode == 0, dry.stderr
    bad = subprocess.run(
        _cli(f"tasks_dir={suite}", "agent=command"), cwd=tmp_path, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "agent.cmd" in bad.stderr
    assert not (tmp_path / "runs").exists()  # not even runs/


# --- SIGTERM and SIGHUP end a run like the first Ctrl-C -------------------------------------

PACE = "EVALRUN_TEST_PACE"  # passed into the sandbox: 'slow' holds 002-slow's agent


def paced_suite(make_task, marker: str) -> Path:
    """Two tasks whose agent script (setup/agent.sh) answers at once, except 002-slow's while
    $EVALRUN_TEST_PACE is 'slow': it waits in `sleep <marker>`, a process the test can find
    (the marker is in no command line of evalrun's). A resume with the pace 'fast' finishes."""
    answer = "echo 42 > answer.txt\n"
    make_task("001-quick", files={"setup/agent.sh": answer})
    slow = f'[ "${PACE}" = slow ] && exec sleep {marker}\n{answer}'
    return make_task("002-slow", files={"setup/agent.sh": slow}).parent


def paced_args(suite: Path, run_dir: Path, sandbox: str) -> list[str]:
    return [
        f"sandbox={sandbox}", f"tasks_dir={suite}", f"run_dir={run_dir}", "trials=2",
        "concurrency=4", "max_retries=0", "agent=command", "agent.cmd='bash agent.sh'",
        f"agent.pass_env=[{PACE}]",
    ]  # fmt: skip


def paced_env(pace: str) -> dict[str, str]:
    return {**os.environ, PACE: pace, "COLUMNS": "200"}


def new_marker() -> str:
    return f"299.{uuid.uuid4().int % 10**9:09d}"  # seconds for sleep; in no other command line


@contextlib.contextmanager
def killing_strays(marker: str) -> Iterator[None]:
    """Whatever the test leaves carrying its marker is killed at the end (by pid)."""
    try:
        yield
    finally:
        for pid in host_pids_with(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def docker_containers(owner: str) -> list:
    docker = pytest.importorskip("docker", reason="the docker SDK is an optional extra")
    from evalrun.sandbox.docker.backend import OWNER_LABEL

    found = docker.from_env().containers.list(
        all=True, sparse=True, filters={"label": f"{OWNER_LABEL}={owner}"}
    )
    return list(found)


def in_flight(sandbox: str, marker: str, proc: subprocess.Popen) -> Callable[[], int]:
    """How many slow samples are running: their agent processes, or (docker) their containers."""
    if sandbox == "docker":
        owner = f"{socket.gethostname()}:{proc.pid}"
        return lambda: len(docker_containers(owner))
    return lambda: len(host_pids_with(marker))


def wait_for_slow_samples(proc: subprocess.Popen, run_dir: Path, running: Callable[[], int]):
    """Until the quick cells are recorded and both slow samples run (a bounded wait)."""
    deadline = time.monotonic() + 180
    while _lines(run_dir) < 2 or running() < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never got its slow samples going"
        time.sleep(0.1)


def assert_stopped_partial(run_dir: Path, out: str, how: str) -> None:
    """The record is closed as partial (quick cells in, slow ones missing) and says how to go on."""
    said = " ".join(out.split())
    label = "partial 2/4 (missing cells: 002-slow#0, 002-slow#1)"
    assert f"{how}: the run is {label}. Resume with: evalrun resume={run_dir}" in said, out
    state = json.loads((run_dir / "summary.json").read_text())["state"]
    assert (state["complete"], state["recorded"], state["cells"]) == (False, 2, 4)


def assert_resume_runs_only_the_missing_cells(run_dir: Path) -> None:
    done = subprocess.run(
        _cli(f"resume={run_dir}"), capture_output=True, text=True, env=paced_env("fast"),
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 samples already recorded, 2 to run" in done.stdout
    lines = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert sorted(x["task_id"] for x in lines[:2]) == ["001-quick", "001-quick"]
    assert sorted((x["task_id"], x["trial"]) for x in lines[2:]) == [
        ("002-slow", 0), ("002-slow", 1)
    ]  # fmt: skip
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["state"]["label"] == "complete" and summary["passes"] == 4


@pytest.mark.parametrize(
    ("sandbox", "signum"),
    [
        *[pytest.param(p.values[0], signal.SIGTERM, id=f"{p.id}-sigterm", marks=p.marks)
          for p in backend_params(["local", "bwrap", "docker"])],
        pytest.param("local", signal.SIGHUP, id="local-sighup"),
    ],
)  # fmt: skip
def test_sigterm_or_sighup_mid_run_cancels_closes_the_run_partial_and_a_resume_finishes_it(
    sandbox: str, signum: signal.Signals, make_task, tmp_path, request
):
    build_backend(sandbox, request)  # skips (fails in CI) without bubblewrap or an engine
    marker = new_marker()
    run_dir = tmp_path / "run"
    suite = paced_suite(make_task, marker)
    with killing_strays(marker):
        proc = subprocess.Popen(
            _cli(*paced_args(suite, run_dir, sandbox)), env=paced_env("slow"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            running = in_flight(sandbox, marker, proc)
            wait_for_slow_samples(proc, run_dir, running)
            proc.send_signal(signum)  # to evalrun alone, as `docker stop` or `kill` sends it
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 128 + signum, err
        assert "Traceback" not in err, err
        assert_stopped_partial(run_dir, out, f"stopped by {signum.name}")
        assert running() == 0  # no agent process, no container of the run is left
        assert host_pids_with(marker) == []
    assert_resume_runs_only_the_missing_cells(run_dir)


def test_timeout_as_a_user_types_it_ends_the_run_partial_with_nothing_left_running(
    make_task, tmp_path
):
    """`timeout -s TERM 10 evalrun ...`: timeout signals evalrun (and its own process group;
    the samples have sessions of their own) and exits 124 once evalrun has closed the run."""
    evalrun = shutil.which("evalrun", path=str(Path(sys.executable).parent))
    assert evalrun, "the evalrun console script is installed beside this Python"
    marker = new_marker()
    run_dir = tmp_path / "run"
    suite = paced_suite(make_task, marker)
    with killing_strays(marker):
        done = subprocess.run(
            ["timeout", "-s", "TERM", "10", evalrun, *paced_args(suite, run_dir, "local")],
            capture_output=True, text=True, env=paced_env("slow"), timeout=300,
        )  # fmt: skip
        assert done.returncode == 124, done.stderr  # timeout's own status: it had to stop it
        assert "stopped by SIGTERM: cancelling samples in flight" in done.stdout, done.stderr
        assert_stopped_partial(run_dir, done.stdout, "stopped by SIGTERM")
        assert host_pids_with(marker) == []
    assert_resume_runs_only_the_missing_cells(run_dir)


def test_a_closed_terminal_sighup_ends_the_run_partial_and_exits_129(make_task, tmp_path):
    """The terminal goes away (its SIGHUP, then every write to it fails): the run still cancels
    its samples, writes summary.json as partial and exits 129."""
    marker = new_marker()
    run_dir = tmp_path / "run"
    suite = paced_suite(make_task, marker)
    args = _cli(*paced_args(suite, run_dir, "local"))
    with killing_strays(marker):
        pid, terminal = pty.fork()
        if pid == 0:  # the child: evalrun on the pseudo-terminal, as a user's shell starts it
            os.execve(args[0], args, paced_env("slow"))
        os.set_blocking(terminal, False)
        try:
            deadline = time.monotonic() + 180
            while _lines(run_dir) < 2 or len(host_pids_with(marker)) < 2:
                with contextlib.suppress(OSError):  # nothing to read yet: BlockingIOError
                    os.read(terminal, 65536)  # keep the terminal's buffer from filling up
                assert time.monotonic() < deadline, "the run never got its slow samples going"
                time.sleep(0.1)
        finally:
            os.close(terminal)  # hang up: the kernel sends SIGHUP to the session
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 129
        state = json.loads((run_dir / "summary.json").read_text())["state"]
        assert (state["complete"], state["recorded"], state["cells"]) == (False, 2, 4)
        assert host_pids_with(marker) == []
    assert_resume_runs_only_the_missing_cells(run_dir)
