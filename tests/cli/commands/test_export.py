"""`evalrun export <run> --format ...`: a run's trajectory.json files (atif), also for a run made
before evalrun wrote them, identical to what the run writes as it goes; tables of real runs of
the bundled suite loaded back with pandas (csv, parquet), the run as one JSON document (log)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from evalrun.cli.hydra import compose_config
from evalrun.errors import ExitCode
from evalrun.run.runner import run
from tests.atif_check import checked_trajectories
from tests.cli.test_main import evalrun
from tests.conftest import REPO


def test_export_writes_what_the_run_wrote_into_the_run_or_another_folder(run_dir, tmp_path):
    written = {p: p.read_text() for p in run_dir.glob("samples/*/*/trajectory.json")}
    assert len(written) == len(checked_trajectories(run_dir)) > 0
    for path in written:  # a run from before trajectory.json existed
        path.unlink()

    done = evalrun("export", str(run_dir), "--format", "atif")
    assert done.returncode == 0, done.stderr
    assert f"{len(written)} trajectories (ATIF) written" in done.stdout
    assert {p: p.read_text() for p in run_dir.glob("samples/*/*/trajectory.json")} == written

    out = tmp_path / "atif"
    done = evalrun("export", str(run_dir), "--format", "atif", "--out", str(out))
    assert done.returncode == 0, done.stderr
    exported = {p.relative_to(out): p.read_text() for p in out.glob("*/*/trajectory.json")}
    assert exported == {p.relative_to(run_dir / "samples"): text for p, text in written.items()}


def test_export_refuses_a_folder_that_is_not_a_run_and_an_unknown_format(tmp_path):
    done = evalrun("export", str(tmp_path), "--format", "atif")
    assert done.returncode == 2
    assert f"{tmp_path} is not a run directory" in done.stderr
    done = evalrun("export", str(tmp_path), "--format", "xml")
    assert done.returncode == 2
    assert (
        "argument --format: invalid choice: 'xml' (choose from 'atif', 'csv', 'parquet', 'log')"
        in done.stderr
    )


# --- tables for notebooks (csv, parquet) and the run as one JSON document (log) ----------------
def bundled_run(run_dir: Path, *overrides: str) -> Path:
    """A run of the bundled smoke slice (5 tasks) on the local sandbox, in this process."""
    args = [f"run_dir={run_dir}", "slice=smoke", "sandbox=local", "concurrency=4", *overrides]
    code = run(compose_config(args), Console(file=io.StringIO(), width=160), overrides=args)
    assert code == ExitCode.OK, code
    return run_dir


@pytest.fixture(scope="module")
def oracle_and_noop(tmp_path_factory) -> tuple[Path, Path]:
    """The oracle (2 trials: everything passes) and noop (1 trial: everything fails) runs."""
    root = tmp_path_factory.mktemp("bundled")
    oracle = bundled_run(root / "oracle", "agent=oracle", "trials=2")
    return oracle, bundled_run(root / "noop", "agent=noop", "trials=1")


def _records(run_dir: Path) -> dict[tuple[str, int], dict]:
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return {(r["task_id"], r["trial"]): r for r in map(json.loads, lines)}


def test_csv_samples_load_in_pandas_with_the_records_values(oracle_and_noop, tmp_path):
    frames = []
    for run_dir in oracle_and_noop:
        done = evalrun("export", str(run_dir), "--format", "csv")
        assert done.returncode == 0, done.stderr
        assert f"samples (csv) written to {run_dir / 'samples.csv'}" in done.stdout
        frame = pd.read_csv(run_dir / "samples.csv")
        summary = json.loads((run_dir / "summary.json").read_text())
        records = _records(run_dir)
        assert len(frame) == summary["samples"] == len(records)
        assert (frame["outcome"] == "pass").sum() == summary["passes"]
        for row in frame.itertuples():
            record = records[(row.task_id, row.trial)]
            assert row.outcome == record["outcome"]
            assert row.verify_s == pytest.approx(record["phases"]["verify"])
            assert row.total_s == pytest.approx(record["finished_at"] - record["started_at"])
            assert row.fingerprint == record["fingerprint"]
        frames.append(frame)
    both = pd.concat(frames)  # every row names its run and agent: no join needed
    assert set(both["sandbox"]) == {"local"}
    rates = both.assign(passed=both["outcome"] == "pass").groupby("agent")["passed"].mean()
    assert rates.to_dict() == {"noop": 0.0, "oracle": 1.0}
    oracle = frames[0]
    assert list(oracle.groupby("task_id")["trial"].count()) == [2] * 5
    assert oracle["tags"].str.split(",").map(lambda tags: "python" in tags).all()
    assert oracle["input_tokens"].isna().all()  # the oracle's tokens are unknown, not 0
    assert oracle["model"].isna().all()


def test_parquet_tasks_carry_summary_json_per_task_figures(oracle_and_noop, tmp_path):
    oracle = oracle_and_noop[0]
    out = tmp_path / "out" / "tasks.parquet"
    done = evalrun(
        "export", str(oracle), "--format", "parquet", "--table", "tasks", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert f"5 tasks (parquet) written to {out}" in done.stdout
    frame = pd.read_parquet(out).set_index("task_id")
    summary = json.loads((oracle / "summary.json").read_text())
    assert list(frame.index) == [t["task_id"] for t in summary["tasks"]]
    for task in summary["tasks"]:
        row = frame.loc[task["task_id"]]
        assert row["pass@1"] == task["pass_at"]["1"] == 1.0
        assert row["pass^2"] == task["pass_hat"]["2"]
        assert (row["trials"], row["passes"], row["difficulty"]) == (2, 2, task["difficulty"])
    assert str(frame["passes"].dtype) == "Int64" and frame["cost_usd"].isna().all()

    samples = tmp_path / "samples.parquet"
    assert (
        evalrun("export", str(oracle), "--format", "parquet", "--out", str(samples)).returncode == 0
    )
    frame = pd.read_parquet(samples)
    assert str(frame["started_at"].dtype).startswith("datetime64") and len(frame) == 10


def test_log_is_plan_summary_and_samples_in_one_json_document(oracle_and_noop, tmp_path):
    noop = oracle_and_noop[1]
    done = evalrun("export", str(noop), "--format", "log")
    assert done.returncode == 0, done.stderr
    log = json.loads((noop / "run-log.json").read_text())
    assert log["format"] == "evalrun-log/1"
    assert log["plan"]["run_id"] == json.loads((noop / "plan.json").read_text())["run_id"]
    assert log["summary"] == json.loads((noop / "summary.json").read_text())
    assert {(s["task_id"], s["trial"]): s for s in log["samples"]} == _records(noop)
    assert log["config"]["agent"]["_target_"].endswith("NoopAgent")


def test_a_missing_pandas_is_named_with_its_extra_before_the_run_is_read(tmp_path):
    script = (
        "import sys; sys.modules['pyarrow'] = None; from evalrun.cli.main import main; "
        f"sys.argv = ['evalrun', 'export', {str(tmp_path)!r}, '--format', 'parquet']; main()"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2
    assert (
        "evalrun export --format parquet needs the pyarrow package: pip install 'evalrun[export]'"
        in done.stderr
    )
    done = evalrun("export", str(tmp_path), "--format", "atif", "--table", "tasks")
    assert done.returncode == 2
    assert "--table applies to csv and parquet, not to --format atif" in done.stderr
