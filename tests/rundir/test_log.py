"""The one reader of a run directory (evalrun/rundir/log.py): what it reads, and what it refuses."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from evalrun.errors import UsageError
from evalrun.models.plan import RunKind
from evalrun.models.records import Outcome, SampleRecord
from evalrun.run.runner import run
from evalrun.rundir.log import RunLog, read_summary

# a plan.json and summary.json as evalrun writes them, written by hand
PLAN = {
    "schema_version": 1,
    "kind": "tasks",
    "run_id": "20251101-120000-eval",
    "run_dir": "runs/20251101-120000-eval",
    "tasks_dir": "/suite",
    "trials": 2,
    "concurrency": 4,
    "sandbox": "local",
    "agent": "oracle",
    "tasks": [{"id": "a", "fingerprint": "fa", "difficulty": "easy", "tags": ["python"]}],
    "cells": 2,
}
SUMMARY_GROUP = {"tasks": 1, "pass_at": {"1": 0.5, "2": 1.0}, "pass_hat": {"1": 0.5, "2": 0.0}}


def written_run(run_dir: Path, *, summary: bool = True) -> Path:
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"suite": "tasks", "trials": 2}))
    (run_dir / "overrides.yaml").write_text(yaml.safe_dump(["trials=2"]))
    (run_dir / "plan.json").write_text(json.dumps(PLAN))
    lines = [
        SampleRecord(
            run_id="r", task_id="a", fingerprint="fa", trial=t, outcome=o, started_at=0,
            finished_at=1,
        ).model_dump_json()
        for t, o in ((0, Outcome.passed), (1, Outcome.failed))
    ]  # fmt: skip
    (run_dir / "samples.jsonl").write_text("\n".join(lines) + "\n")
    if summary:
        written = {
            "schema_version": 1, "run_id": "r", "samples": 2, "scored": 2, "passes": 1,
            "errors": 0, "ks": [1, 2], "overall": {**SUMMARY_GROUP, "flaky_tasks": 1},
            "by_tag": {}, "by_difficulty": {}, "tasks": [], "latency": {},
            "cost": {"total_usd": None, "per_sample_usd": None, "per_success_usd": None,
                     "priced_samples": 0, "unpriced_samples": 2},
        }  # fmt: skip
        (run_dir / "summary.json").write_text(json.dumps(written))
    return run_dir


def test_a_stale_or_missing_summary_is_recomputed_from_the_records(tmp_path):
    run_dir = written_run(tmp_path / "stale", summary=False)
    run = RunLog.open(run_dir)
    assert not run.ended and run.summary().samples == 2 and run.summary().passes == 1
    with pytest.raises(UsageError, match=r"not the directory of a run that ended: summary.json"):
        RunLog.open(run_dir, ended=True)
    with pytest.raises(UsageError, match=r"^gate: .* summary\.json not found"):
        read_summary(run_dir, "gate")


@pytest.mark.parametrize("name", ["plan.json", "summary.json"])
def test_a_file_from_a_newer_evalrun_is_refused_not_misread(tmp_path, name):
    run_dir = written_run(tmp_path / "new")
    path = run_dir / name
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 9}))
    with pytest.raises(UsageError, match=rf"{name}: written by a newer evalrun .*upgrade evalrun"):
        RunLog.open(run_dir)


def test_what_is_not_a_run_is_refused_naming_the_folder_and_the_file(tmp_path):
    with pytest.raises(UsageError, match=r"nowhere: no such directory"):
        RunLog.open(tmp_path / "nowhere")
    with pytest.raises(UsageError, match=r"is not a run directory: config.yaml and plan.json"):
        RunLog.open(tmp_path)
    run_dir = written_run(tmp_path / "broken")
    (run_dir / "plan.json").write_text(json.dumps({"run_id": "r", "tasks": "x"}))
    with pytest.raises(UsageError, match=r"plan.json: does not match the PlanFile schema"):
        RunLog.open(run_dir)
    (run_dir / "plan.json").write_text("{")
    with pytest.raises(UsageError, match=r"plan.json: not readable JSON"):
        RunLog.open(run_dir)


def test_a_run_written_now_reads_back_with_its_kind_and_state(make_task, tmp_path):
    from evalrun.cli.hydra import compose_config

    suite = make_task("001-x").parent
    run_dir = tmp_path / "run"
    cfg = compose_config([f"tasks_dir={suite}", f"run_dir={run_dir}", "trials=2"])
    assert run(cfg, Console(file=io.StringIO())) == 0
    log = RunLog.open(run_dir)
    assert log.plan.schema_version == 1 and log.kind is RunKind.tasks and log.ended
    assert log.state().complete and log.summary().samples == 2
    partial = tmp_path / "partial"
    shutil.copytree(run_dir, partial)
    (partial / "samples.jsonl").write_text((run_dir / "samples.jsonl").read_text().split("\n")[0])
    state = RunLog.open(partial).state()  # the one line left is torn: no record at all
    assert state.describe() == "partial 0/2 (missing cells: 001-x#0, 001-x#1)"
