"""The runner's bookkeeping of a run directory: one writer at a time, and a partial run says so.

Real `evalrun` processes: a run is SIGKILLed part-way, then two resumes of it start at the same
instant; the kernel's lock lets exactly one of them write.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter

from tests.test_engine import _cli, _kill_after
from tests.test_run_dirs import start_together


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
    assert list((tmp_path / "runs").iterdir()) == []
