"""The engine: concurrency, per-phase timeouts, retries, output bounds, crash-safe resume, Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from evalrun.analysis.metrics import summarize
from evalrun.errors import SandboxError
from evalrun.models.records import AgentResult, Outcome, SampleRecord
from evalrun.run.engine import Batch, execute, run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.loader import load_task
from tests.conftest import REPO

LIMITS = Limits(setup_s=30, agent_s=30, verify_s=30, max_retries=0, retry_backoff_s=0.01)


class SleepyAgent:
    """Waits like an agent waiting on a model, then solves the default task."""

    name = "sleepy"

    def __init__(self, seconds: float):
        self.seconds = seconds

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox) -> AgentResult:
        await asyncio.sleep(self.seconds)
        await sandbox.write_file("answer.txt", "42")
        return AgentResult(output="done")


def _max_overlap(records: list[SampleRecord]) -> int:
    events = sorted(
        [(r.started_at, 1) for r in records] + [(r.finished_at, -1) for r in records],
        key=lambda e: (e[0], e[1]),
    )
    live = peak = 0
    for _, step in events:
        live += step
        peak = max(peak, live)
    return peak


def _run_cells(task, agent, *, trials=1, concurrency=1, limits=LIMITS, backend=None):
    records: list[SampleRecord] = []
    asyncio.run(
        execute(
            [(task, i) for i in range(trials)],
            Batch(agent, backend or LocalBackend(), limits, "t", concurrency),
            on_record=records.append,
        )
    )
    return records


def test_samples_overlap_up_to_the_concurrency_bound(make_task):
    task = load_task(make_task())
    parallel = _run_cells(task, SleepyAgent(0.3), trials=8, concurrency=4)
    assert [r.outcome for r in parallel] == [Outcome.passed] * 8
    assert 2 <= _max_overlap(parallel) <= 4
    serial = _run_cells(task, SleepyAgent(0.05), trials=3, concurrency=1)
    assert _max_overlap(serial) == 1


class ForkingAgent:
    """Starts a grandchild that would outlive everything, records its pid, then hangs."""

    name = "forking"

    def __init__(self, pid_file: Path):
        self.pid_file = pid_file

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox) -> AgentResult:
        await sandbox.exec(f"sleep 300 & echo $! > {self.pid_file}; wait")
        return AgentResult(output="never")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in state


def test_agent_timeout_kills_the_process_tree_and_still_grades(make_task, tmp_path):
    task = load_task(make_task())
    pid_file = tmp_path / "child.pid"
    limits = Limits(setup_s=30, agent_s=0.5, verify_s=30, max_retries=0)
    (rec,) = _run_cells(task, ForkingAgent(pid_file), limits=limits)
    assert rec.timed_out_phase == "agent"
    assert rec.outcome is Outcome.failed  # graded, not an error
    assert "agent timed out after 0.5s" in rec.reason
    assert rec.phases.verify is not None
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_task_can_set_its_own_agent_timeout(make_task, tmp_path):
    task = load_task(make_task(spec={"agent_timeout_s": 0.3}))
    (rec,) = _run_cells(task, ForkingAgent(tmp_path / "pid"))
    assert rec.timed_out_phase == "agent" and "0.3s" in rec.reason


def test_verify_timeout_is_a_failure_with_its_phase(make_task):
    task = load_task(make_task(files={"verify/verify.sh": "sleep 30\n"}))
    limits = Limits(setup_s=30, agent_s=30, verify_s=0.5, max_retries=0)
    (rec,) = _run_cells(task, SleepyAgent(0), limits=limits)
    assert rec.outcome is Outcome.failed
    assert rec.timed_out_phase == "verify"
    assert "verify.sh timed out" in rec.reason


class CrashingAgent:
    name = "crashing"

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox) -> AgentResult:
        await sandbox.write_file("answer.txt", "42")
        raise RuntimeError("model said no")


def test_agent_crash_is_recorded_and_the_sample_still_graded(make_task):
    (rec,) = _run_cells(load_task(make_task()), CrashingAgent())
    assert rec.outcome is Outcome.passed  # its edit was made before it crashed
    assert rec.agent.error == "RuntimeError: model said no"


def test_setup_failure_is_a_harness_error(make_task):
    task = load_task(make_task(files={"setup/setup.sh": "echo broken >&2; exit 3\n"}))
    (rec,) = _run_cells(task, SleepyAgent(0))
    assert rec.outcome is Outcome.error
    assert "setup.sh failed (exit 3): broken" in rec.reason


class FlakyBackend(LocalBackend):
    """A local backend whose first `failures` sandboxes fail to start."""

    def __init__(self, failures: int):
        super().__init__()
        self.failures = failures
        self.opened = 0

    @asynccontextmanager
    async def open(self, label):
        self.opened += 1
        if self.opened <= self.failures:
            raise SandboxError("container runtime hiccup")
        async with super().open(label) as box:
            yield box


def test_infra_errors_are_retried_then_pass(make_task):
    task = load_task(make_task())
    backend = FlakyBackend(failures=2)
    limits = Limits(max_retries=2, retry_backoff_s=0.01)
    rec = asyncio.run(run_sample(task, 0, SleepyAgent(0), backend, limits, "t"))
    assert rec.outcome is Outcome.passed
    assert rec.attempts == 3


def test_persistent_infra_error_is_reported_outside_pass_rates(make_task):
    task = load_task(make_task())
    limits = Limits(max_retries=1, retry_backoff_s=0.01)
    bad = asyncio.run(run_sample(task, 0, SleepyAgent(0), FlakyBackend(99), limits, "t"))
    good = asyncio.run(run_sample(task, 1, SleepyAgent(0), LocalBackend(), limits, "t"))
    assert bad.outcome is Outcome.error and bad.attempts == 2
    assert "container runtime hiccup" in bad.reason
    summary = summarize([bad, good], {}, run_id="t", trials=2)
    assert summary.overall.pass_at[1] == 1.0  # the error is not a failure
    assert summary.errors == 1 and summary.error_samples[0].reason == bad.reason


def test_harness_errors_are_loud_and_never_a_rate_over_nothing(make_task, tmp_path):
    suite = make_task(files={"setup/setup.sh": "echo broken >&2; exit 3\n"}).parent
    base = [f"tasks_dir={suite}", "trials=2", "max_retries=0"]
    run_dir = tmp_path / "run"
    proc = subprocess.run(_cli(*base, f"run_dir={run_dir}"), capture_output=True, text=True)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "pass@1 — (no scored sample: 2 of 2 ended in a harness error)" in proc.stdout
    assert "more than max_errors=0" in proc.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["errors"] == 2 and summary["overall"]["pass_at"]["1"] is None
    html = (run_dir / "report.html").read_text()
    assert "nothing scored" in html and "harness errors" in html

    tolerated = subprocess.run(
        _cli(*base, f"run_dir={tmp_path / 'tolerated'}", "max_errors=2"), capture_output=True
    )
    assert tolerated.returncode == 0


def test_output_is_bounded_head_and_tail_kept(tmp_path):
    async def go():
        async with LocalBackend(output_limit_bytes=64 * 1024).open("big") as box:
            return await box.exec(
                "echo FIRST; head -c 50000000 /dev/zero | tr '\\0' x; echo; echo LAST"
            )

    result = asyncio.run(go())
    assert result.stdout_bytes > 50_000_000
    assert len(result.stdout) < 100_000
    assert result.stdout.startswith("FIRST")
    assert result.stdout.rstrip().endswith("LAST")
    assert "bytes omitted" in result.stdout


# --- crash safety and resume, through the CLI ---------------------------------------------


@pytest.fixture
def slow_suite(make_task):
    """Six tasks whose setup takes a moment, one of which the oracle fails."""
    for i in range(1, 6):
        make_task(f"00{i}-slow", files={"setup/setup.sh": "sleep 0.2\n"})
    return make_task(
        "006-gold-is-wrong",
        files={"setup/setup.sh": "sleep 0.2\n", "solution/answer.txt": "7"},
    ).parent


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalrun.cli.main", *args]


def _lines(run_dir: Path) -> int:
    path = run_dir / "samples.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _kill_after(args: list[str], run_dir: Path, records: int) -> None:
    proc = subprocess.Popen(
        _cli(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while _lines(run_dir) < records and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _keys(run_dir: Path) -> list[tuple[str, int]]:
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return sorted((json.loads(x)["task_id"], json.loads(x)["trial"]) for x in lines)


def test_sigkill_at_several_points_then_resume_matches_an_uninterrupted_run(slow_suite, tmp_path):
    base = [f"tasks_dir={slow_suite}", "trials=2", "concurrency=2"]
    clean = tmp_path / "clean"
    assert subprocess.run(_cli(*base, f"run_dir={clean}"), capture_output=True).returncode == 0

    crashed = tmp_path / "crashed"
    _kill_after([*base, f"run_dir={crashed}"], crashed, 2)
    for point in (5, 9):
        _kill_after([f"resume={crashed}"], crashed, point)
    with (crashed / "samples.jsonl").open("a") as handle:
        handle.write('{"run_id": "torn')  # as if the kill landed mid-write
    proc = subprocess.run(_cli(f"resume={crashed}"), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr

    assert _keys(crashed) == _keys(clean)
    assert len(_keys(crashed)) == len(set(_keys(crashed))) == 12
    a = json.loads((clean / "summary.json").read_text())
    b = json.loads((crashed / "summary.json").read_text())
    assert b["overall"] == a["overall"]
    assert [(t["task_id"], t["passes"], t["n"]) for t in b["tasks"]] == [
        (t["task_id"], t["passes"], t["n"]) for t in a["tasks"]
    ]
    assert a["overall"]["pass_at"]["1"] == pytest.approx(5 / 6)


def test_resume_reruns_only_a_changed_task(slow_suite, tmp_path):
    run_dir = tmp_path / "run"
    args = [f"tasks_dir={slow_suite}", f"run_dir={run_dir}", "concurrency=3"]
    assert subprocess.run(_cli(*args), capture_output=True).returncode == 0
    (slow_suite / "002-slow" / "setup" / "README.md").write_text("reworded\n")
    proc = subprocess.run(_cli(f"resume={run_dir}"), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "5 samples already recorded, 1 to run" in proc.stdout
    lines = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert [x["task_id"] for x in lines[6:]] == ["002-slow"]
    assert json.loads((run_dir / "summary.json").read_text())["samples"] == 6


def test_resume_refuses_a_result_relevant_change_but_not_concurrency(slow_suite, tmp_path):
    run_dir = tmp_path / "run"
    args = [f"tasks_dir={slow_suite}", f"run_dir={run_dir}", "ids=001-slow"]
    assert subprocess.run(_cli(*args), capture_output=True).returncode == 0
    refused = subprocess.run(
        _cli(f"resume={run_dir}", "agent=noop"), capture_output=True, text=True
    )
    assert refused.returncode == 2
    assert (
        "agent._target_: 'evalrun.agents.oracle.OracleAgent' -> 'evalrun.agents.noop.NoopAgent'"
        in refused.stderr
    )
    fine = subprocess.run(
        _cli(f"resume={run_dir}", "concurrency=7"), capture_output=True, text=True
    )
    assert fine.returncode == 0, fine.stderr


def test_resume_of_a_folder_that_is_not_a_run(tmp_path):
    proc = subprocess.run(_cli(f"resume={tmp_path}"), capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2
    assert "is not a run directory" in proc.stderr


def test_first_ctrl_c_writes_the_summary_and_prints_the_resume_command(slow_suite, tmp_path):
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        _cli(f"tasks_dir={slow_suite}", f"run_dir={run_dir}", "trials=4", "concurrency=1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while _lines(run_dir) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"Resume with: evalrun resume={run_dir}" in out
    summary = json.loads((run_dir / "summary.json").read_text())
    assert 2 <= summary["samples"] < 24
    done = summary["samples"]
    state = summary["state"]
    assert not state["complete"] and (state["recorded"], state["cells"]) == (done, 24)
    assert len(state["missing"]) == 24 - done
    label = f"partial {done}/24 (missing cells: {', '.join(state['missing'][:5])} and "
    assert f"interrupted: the run is {label}" in " ".join(out.split())
    assert label in (run_dir / "report.html").read_text()
    listed = subprocess.run(_cli("ls", str(tmp_path)), capture_output=True, text=True)
    assert f"partial {done}/24" in listed.stdout

    gated = subprocess.run(_cli("gate", str(run_dir), "profile=regression"), capture_output=True)
    assert gated.returncode == 5  # refused: a partial run is never gated as if finished
    assert b"refusing to gate a partial run" in gated.stdout
    allowed = subprocess.run(
        _cli("gate", str(run_dir), "profile=regression", "--allow-partial"),
        capture_output=True,
        text=True,
    )
    assert allowed.returncode in (0, 1), allowed.stderr
    assert "gating a partial run (--allow-partial)" in allowed.stdout

    done = subprocess.run(_cli(f"resume={run_dir}"), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["samples"] == 24 and summary["state"]["label"] == "complete"
    assert "run complete" in done.stdout


_SLOW_TO_CANCEL = """
import asyncio
import evalrun.run.engine as engine
from evalrun.run.engine import Batch, execute
from evalrun.run.trial import Limits

class Backend:
    def abandon(self):
        print("abandoned", flush=True)

async def stubborn(*args):  # a sample whose clean-up takes a long time once cancelled
    print("running", flush=True)
    try:
        await asyncio.sleep(300)
    except asyncio.CancelledError:
        print("cancelling", flush=True)
        await asyncio.shield(asyncio.sleep(300))

engine.run_sample = stubborn
asyncio.run(execute([(None, 0)], Batch(None, Backend(), Limits(), "r", 1),
                    on_record=print, on_interrupt=lambda signum: print(signum.name, flush=True)))
print("finished without a second signal", flush=True)
"""


@pytest.mark.parametrize(
    ("first", "second", "status", "said"),
    [
        (signal.SIGINT, signal.SIGINT, 130, "interrupted again"),
        (signal.SIGTERM, signal.SIGTERM, 143, "stopped by SIGTERM again"),
        (signal.SIGHUP, signal.SIGINT, 130, "interrupted again"),  # any two: the second's status
        (signal.SIGINT, signal.SIGHUP, 129, "stopped by SIGHUP again"),
    ],
    ids=["ctrl-c-twice", "sigterm-twice", "sighup-then-ctrl-c", "ctrl-c-then-sighup"],
)
def test_a_second_stop_signal_during_a_slow_cancel_abandons_the_sandboxes_and_exits_at_once(
    first: signal.Signals, second: signal.Signals, status: int, said: str
):
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_TO_CANCEL],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "running\n"
        proc.send_signal(first)
        assert proc.stdout.readline() == f"{first.name}\n"
        assert proc.stdout.readline() == "cancelling\n"  # the first one is still cleaning up
        proc.send_signal(second)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, err
    assert out == "abandoned\n"
    assert err.strip() == f"{said}: ending open sandboxes and exiting now"


def test_under_nohup_a_sighup_stays_ignored():
    proc = subprocess.Popen(
        ["nohup", sys.executable, "-c", _SLOW_TO_CANCEL],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "running\n"
        proc.send_signal(signal.SIGHUP)  # ignored: the sample runs on
        proc.send_signal(signal.SIGTERM)  # the first stop signal it takes
        assert proc.stdout.readline() == "SIGTERM\n"
        assert proc.stdout.readline() == "cancelling\n"
    finally:
        proc.kill()
        proc.communicate(timeout=30)
