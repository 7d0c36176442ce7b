"""Sweeps: a real two-job multirun leaves a sweep summary (sweep.json + table) at its root, with
the basic launcher and with joblib; judge agreement is computed from judge scores when present."""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from evalrun.analysis.metrics import summarize
from evalrun.analysis.sweep import SWEEP_FILE, summarize_sweep
from evalrun.models.plan import PlanFile, PlannedTask, RunKind
from evalrun.models.records import Outcome, SampleRecord
from evalrun.report.sweep_terminal import render_sweep
from evalrun.rundir.readers import load_jobs
from evalrun.rundir.store import RunStore
from tests.analysis.test_gate import evalrun
from tests.run.test_engine import _lines
from tests.run.test_runner import killing_strays, new_marker, paced_args, paced_env, paced_suite
from tests.sandbox.conftest import host_pids_with


def test_two_job_multirun_writes_a_sweep_summary(make_task, tmp_path):
    make_task("001-answer")
    suite = make_task("002-more", spec={"tags": ["more"]}).parent
    sweep_dir = tmp_path / "sweep"
    proc = evalrun(
        "-m", "agent=oracle,noop", f"tasks_dir={suite}", "trials=2", f"hydra.sweep.dir={sweep_dir}"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep = json.loads((sweep_dir / SWEEP_FILE).read_text())
    assert sweep["swept"] == ["agent"]
    jobs = sweep["jobs"]
    assert [j["swept"] for j in jobs] == [{"agent": "oracle"}, {"agent": "noop"}]
    assert [j["metrics"]["pass@1"] for j in jobs] == [1.0, 0.0]
    assert [j["metrics"]["pass^2"] for j in jobs] == [1.0, 0.0]
    assert [j["metrics"]["samples"] for j in jobs] == [4, 4]
    assert jobs[0]["overrides"]["tasks_dir"] == str(suite)  # common overrides kept, not swept
    assert sweep["judges"]["with_verifier"] == {}
    table = proc.stdout[proc.stdout.index("Sweep ") :]
    assert "oracle" in table and "noop" in table and "1.000" in table and "0.000" in table
    assert "judges: no judge scores in these jobs" in proc.stdout
    assert f"sweep summary: {sweep_dir / SWEEP_FILE}" in proc.stdout


def test_a_dry_run_sweep_prints_every_jobs_plan_and_leaves_nothing(tmp_path):
    """The issue-19 command as typed, from an empty folder: no job folder is written, so there
    is no sweep page to draw - and that is no error."""
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", "-m", "agent=oracle,noop",
         "ids=[001-fizzbuzz-off-by-one]", "dry_run=true"],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "job 0: agent=oracle" in proc.stdout and "job 1: agent=noop" in proc.stdout
    assert proc.stdout.count("001-fizzbuzz-off-by-one") == 2  # each job's plan
    assert proc.stdout.count("dry run: nothing was run") == 2
    assert "no sweep summary or page (no job ran)" in proc.stdout
    assert "error" not in proc.stderr
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_joblib_launcher_runs_jobs_in_parallel_processes_and_a_broken_gate_fails(
    make_task, tmp_path
):
    suite = make_task().parent
    sweep_dir = tmp_path / "sweep"
    proc = evalrun(
        "-m",
        "agent=oracle,noop",
        f"tasks_dir={suite}",
        "profile=regression",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={sweep_dir}",
    )
    # the noop job breaks the regression floors in a worker process; the multirun still exits 1
    assert proc.returncode == 1, proc.stdout + proc.stderr
    jobs = json.loads((sweep_dir / SWEEP_FILE).read_text())["jobs"]
    assert [j["gate"]["exit_code"] for j in jobs] == [0, 1]
    assert (
        "pass@1 = 0 (95% CI [0.00, 0.79]), expected >= 0.6 (no baseline)"
        in jobs[1]["gate"]["breaches"]
    )
    assert {p.name for p in sweep_dir.iterdir() if p.is_dir()} >= {"0", "1"}


def fake_job(root, num, overrides, outcomes_scores):
    """A finished job folder: samples with oracle outcomes and judge scores."""
    run_dir = root / str(num)
    store = RunStore(run_dir)
    store.create()
    store.write_config(
        {"profile": {"_target_": "evalrun.analysis.gate.ThresholdProfile", "name": "none"}}
    )
    store.write_overrides(overrides)
    plan = PlanFile(
        schema_version=1,
        kind=RunKind.tasks,
        run_id=str(num),
        tasks_dir="tasks",
        trials=4,
        tasks=[PlannedTask(id="t1", fingerprint="f")],
    )
    store.write_plan(plan)
    records = []
    for trial, (outcome, scores) in enumerate(outcomes_scores):
        rec = SampleRecord(
            run_id=str(num),
            task_id="t1",
            fingerprint="f",
            trial=trial,
            outcome=Outcome(outcome),
            started_at=0,
            finished_at=1,
            scores=scores,
            judge_reasons={name: "because" for name in scores if name != "reward"},
        )
        store.append(rec)
        records.append(rec)
    store.close()
    summary = summarize(records, {"t1": {"difficulty": "easy", "tags": []}}, run_id="x", trials=4)
    store.write_summary(summary)


def test_judge_agreement_with_the_oracle_and_between_judges(tmp_path):
    # job 0 (judge a): agrees with the verifier on 3 of 4; job 1 (judge b): on 2 of 4 (one error)
    fake_job(
        tmp_path,
        0,
        ["judge=a"],
        [
            ("pass", {"quality": 0.9}),
            ("pass", {"quality": 0.5}),
            ("fail", {"quality": 0.1}),
            ("fail", {"quality": 0.8}),
        ],
    )
    fake_job(
        tmp_path,
        1,
        ["judge=b"],
        [
            ("pass", {"quality": 0.2}),
            ("pass", {"quality": 1.0}),
            ("fail", {"quality": 0.0, "reward": 1.0}),  # reward is no judge
            ("error", {"quality": 0.9}),  # harness errors are not judged against the verifier
        ],
    )
    judges = summarize_sweep(tmp_path, load_jobs(tmp_path)).to_json()["judges"]
    assert judges["with_verifier"] == {
        "judge=a:quality": {"samples": 4, "agreement": 0.75},
        "judge=b:quality": {"samples": 3, "agreement": 2 / 3},
    }
    # cells both judged: trials 0, 1, 2 -> a says pass, pass, fail; b says fail, pass, fail
    assert judges["between_judges"] == [
        {"a": "judge=a:quality", "b": "judge=b:quality", "cells": 3, "agreement": 2 / 3}
    ]
    out = io.StringIO()
    render_sweep(summarize_sweep(tmp_path, load_jobs(tmp_path)), Console(file=out, width=200))
    assert "Judge agreement" in out.getvalue() and "judge=a:quality" in out.getvalue()


def test_an_unfinished_job_is_listed_without_metrics(tmp_path):
    fake_job(tmp_path, 0, ["agent=oracle"], [("pass", {})])
    fake_job(tmp_path, 1, ["agent=noop"], [("fail", {})])
    (tmp_path / "1" / "summary.json").unlink()
    sweep = summarize_sweep(tmp_path, load_jobs(tmp_path))
    assert [j["finished"] for j in sweep.to_json()["jobs"]] == [True, False]
    assert sweep.to_json()["jobs"][1]["metrics"] is None
    out = io.StringIO()
    render_sweep(sweep, Console(file=out, width=200))
    assert "unfinished" in out.getvalue()


@pytest.mark.parametrize("name", ["none", "regression"])
def test_config_yaml_of_a_job_round_trips_into_its_gate(tmp_path, name):
    fake_job(tmp_path, 0, ["x=1"], [("fail", {})])
    config = {"profile": {"_target_": "evalrun.analysis.gate.ThresholdProfile", "name": name}}
    if name == "regression":
        config["profile"]["floors"] = {"pass@1": 0.5}
    (tmp_path / "0" / "config.yaml").write_text(yaml.safe_dump(config))
    gate = summarize_sweep(tmp_path, load_jobs(tmp_path)).to_json()["jobs"][0]["gate"]
    assert gate["exit_code"] == (1 if name == "regression" else 0)


# --- a stop signal ends a sweep as it ends a run ---------------------------------------------


def _sweep_args(suite: Path, sweep_dir: Path, *launcher: str) -> list[str]:
    run = [a for a in paced_args(suite, sweep_dir / "unused", "local") if a.split("=")[0]
           not in ("run_dir", "trials")]  # fmt: skip
    return ["-m", "trials=1,2", *run, *launcher, f"hydra.sweep.dir={sweep_dir}"]


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "evalrun.cli.main", *args], env=paced_env("slow"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def _wait(proc: subprocess.Popen, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 180
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep never got its slow samples going"
        time.sleep(0.1)


def _finish(out: str) -> subprocess.CompletedProcess:
    """Run the command the stopped sweep printed to finish it (the slow agent now quick)."""
    line = next(x for x in out.splitlines() if "Finish it with: " in x)
    command = shlex.split(line.split("Finish it with: ", 1)[1])
    assert command[:2] == ["evalrun", "-m"], line
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *command[1:]], capture_output=True, text=True,
        env=paced_env("fast"), timeout=300,
    )  # fmt: skip


def test_sigterm_stops_a_sweep_no_further_job_starts_and_it_can_be_finished(make_task, tmp_path):
    marker = new_marker()
    suite = paced_suite(make_task, marker)
    sweep_dir = tmp_path / "sweep"
    with killing_strays(marker):
        proc = _start(_sweep_args(suite, sweep_dir))
        try:
            _wait(proc, lambda: _lines(sweep_dir / "0") >= 1 and len(host_pids_with(marker)) >= 1)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        assert proc.returncode == 143, out + err
        assert host_pids_with(marker) == []
    said = " ".join(out.split())
    assert "stopped by SIGTERM: the run is partial 1/2 (missing cells: 002-slow#0)" in said
    assert "job 1: trials=2: not started, the sweep was stopped by SIGTERM" in said
    assert "stopped by SIGTERM: the sweep is partial. Finish it with: evalrun -m" in said
    jobs = json.loads((sweep_dir / SWEEP_FILE).read_text())["jobs"]
    assert [j["overrides"]["trials"] for j in jobs] == ["1"]  # job 1 never started
    assert not (sweep_dir / "1").exists()

    finished = _finish(out)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "1 samples already recorded, 1 to run" in finished.stdout  # job 0 resumed
    jobs = json.loads((sweep_dir / SWEEP_FILE).read_text())["jobs"]
    assert [(j["swept"], j["metrics"]["samples"]) for j in jobs] == [
        ({"trials": "1"}, 2), ({"trials": "2"}, 4)
    ]  # fmt: skip


@pytest.mark.parametrize("to", ["launcher", "group"])
def test_sigterm_ends_a_joblib_sweeps_jobs_in_their_worker_processes(to, make_task, tmp_path):
    """SIGTERM to the launching process alone (`docker stop`, Kubernetes) or to its whole
    process group (`timeout`, a terminal's Ctrl-C): each worker's job is cancelled once, closed
    partial, and nothing of it is left running."""
    marker = new_marker()
    suite = paced_suite(make_task, marker)
    sweep_dir = tmp_path / "sweep"
    joblib = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    with killing_strays(marker):
        proc = _start(_sweep_args(suite, sweep_dir, *joblib))
        try:
            _wait(proc, lambda: _lines(sweep_dir / "0") >= 1 and _lines(sweep_dir / "1") >= 2
                  and len(host_pids_with(marker)) >= 3)  # fmt: skip
            if to == "launcher":
                proc.send_signal(signal.SIGTERM)
            else:
                os.killpg(proc.pid, signal.SIGTERM)
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
        assert proc.returncode == 143, out + err
        assert host_pids_with(marker) == []
    assert "Traceback" not in err and "again" not in err, err  # each job got one signal
    for job, cells in (("0", 2), ("1", 4)):
        state = json.loads((sweep_dir / job / "summary.json").read_text())["state"]
        assert (state["complete"], state["cells"]) == (False, cells)
    assert "stopped by SIGTERM: the sweep is partial. Finish it with:" in out
