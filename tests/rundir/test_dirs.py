"""A new run or sweep gets a directory of its own, even when two start in the same second.

Real `evalrun` processes, real time: each process imports evalrun, then waits for the same
wall-clock instant (a fifth of a second into a second) before it composes its config, so both
stamp `runs/<YYYYmmdd-HHMMSS>-<name>` from the same second. If a slow machine still lets them
straddle a second boundary, the attempt is repeated (the stamps are checked, not assumed).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

LAUNCH = """
import sys, time
import evalrun.run.plan, evalrun.run.runner, hydra.main  # imported before the barrier: no import jitter
from evalrun.cli.main import main
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
main(sys.argv[2:])
"""
ATTEMPTS = 5


def start_together(cwd: Path, *commands: list[str]) -> list[subprocess.CompletedProcess]:
    go = math.ceil(time.time()) + 3.2  # time to import; then 0.2 s into a fresh second
    env = {**os.environ, "COLUMNS": "200"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LAUNCH, str(go), *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in commands
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def stamp(path: Path) -> str:
    return "-".join(path.name.split("-")[:2])  # 20250101-120000


def records(run_dir: Path) -> list[tuple[str, int]]:
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return [(json.loads(x)["task_id"], json.loads(x)["trial"]) for x in lines]


def test_two_runs_started_in_the_same_second_get_two_directories(make_task, tmp_path):
    suite = make_task("001-answer").parent
    args = [f"tasks_dir={suite}", "name=same", "trials=2"]
    for attempt in range(ATTEMPTS):
        cwd = tmp_path / f"attempt{attempt}"
        cwd.mkdir()
        for proc in start_together(cwd, args, args):
            assert proc.returncode == 0, proc.stderr
        dirs = sorted((cwd / "runs").iterdir())
        if len({stamp(d) for d in dirs}) == 1:
            break
    assert len(dirs) == 2 and len({stamp(d) for d in dirs}) == 1, dirs
    assert [d.name.removeprefix(stamp(d)) for d in dirs] == ["-same", "-same-2"]
    for run_dir in dirs:  # each run wrote its own two samples, nothing merged
        assert sorted(records(run_dir)) == [("001-answer", 0), ("001-answer", 1)]
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["samples"] == 2 and summary["state"]["label"] == "complete"
        assert json.loads((run_dir / "plan.json").read_text())["run_id"] == run_dir.name


def test_two_sweeps_in_the_same_second_and_their_joblib_jobs_get_their_own_directories(
    make_task, tmp_path
):
    suite = make_task("001-answer").parent
    basic = ["-m", f"tasks_dir={suite}", "name=sweep", "agent=oracle,noop"]
    joblib = [*basic, "hydra/launcher=joblib"]
    for attempt in range(ATTEMPTS):
        cwd = tmp_path / f"attempt{attempt}"
        cwd.mkdir()
        for proc in start_together(cwd, basic, joblib):
            assert proc.returncode == 0, proc.stderr
        sweeps = sorted((cwd / "runs" / "multirun").iterdir())
        if len({stamp(d) for d in sweeps}) == 1:
            break
    assert len(sweeps) == 2 and len({stamp(d) for d in sweeps}) == 1, sweeps
    for sweep in sweeps:
        jobs = json.loads((sweep / "sweep.json").read_text())["jobs"]
        assert [(j["job"], j["swept"]["agent"]) for j in jobs] == [(0, "oracle"), (1, "noop")]
        for job in jobs:
            run_dir = cwd / job["run_dir"]
            assert run_dir.parent == sweep
            assert records(run_dir) == [("001-answer", 0)]
        assert json.loads((sweep / "0" / "summary.json").read_text())["passes"] == 1
        assert json.loads((sweep / "1" / "summary.json").read_text())["passes"] == 0
