"""`evalrun diff`: config, task-set and metric deltas between two real runs, with significance
notes that keep noise from being read as a regression."""

from __future__ import annotations

import io
import json
import re
import shutil

import pytest
from rich.console import Console

from evalrun.analysis.diff import diff_runs, suite_significance
from evalrun.cli.hydra import compose_config
from evalrun.errors import UsageError
from evalrun.models.summary import TaskStats
from evalrun.report.diff_terminal import render_diff
from evalrun.run.runner import run
from evalrun.rundir.readers import read_side
from tests.analysis.test_gate import evalrun


def run_suite(suite, run_dir, *overrides: str) -> None:
    cfg = compose_config([f"tasks_dir={suite}", f"run_dir={run_dir}", "trials=5", *overrides])
    run(cfg, Console(file=io.StringIO()))


@pytest.fixture
def two_runs(make_task, tmp_path):
    """Run a: oracle on 001, 002, 003. Run b: noop on 001, a changed 002 and a new 004."""
    make_task("001-answer")
    make_task("002-other")
    suite_a = make_task("003-gone").parent
    suite_b = tmp_path / "suite-b"
    shutil.copytree(suite_a, suite_b)
    shutil.rmtree(suite_b / "003-gone")
    (suite_b / "002-other" / "setup" / "README.md").write_text("changed fixture\n")
    shutil.copytree(suite_b / "001-answer", suite_b / "004-new")
    task_yaml = suite_b / "004-new" / "task.yaml"
    task_yaml.write_text(task_yaml.read_text().replace("001-answer", "004-new"))
    run_a, run_b = tmp_path / "a", tmp_path / "b"
    run_suite(suite_a, run_a)
    run_suite(suite_b, run_b, "agent=noop", "concurrency=2")
    return run_a, run_b


def test_diff_of_two_crafted_runs(two_runs):
    diff = diff_runs(*map(read_side, two_runs))
    result = diff.to_json()  # what `evalrun diff --json` prints
    config = result["config"]
    assert config["changed"]["agent._target_"] == {
        "a": "evalrun.agents.oracle.OracleAgent",
        "b": "evalrun.agents.noop.NoopAgent",
    }
    assert config["changed"]["concurrency"] == {"a": 4, "b": 2}
    assert "tasks_dir" in config["changed"] and "run_dir" not in config["changed"]
    assert "concurrency" in result["config_not_result_relevant"]
    assert "agent._target_" not in result["config_not_result_relevant"]

    tasks = result["tasks"]
    assert tasks["added"] == ["004-new"]
    assert tasks["removed"] == ["003-gone"]
    assert tasks["changed"] == ["002-other"]
    rows = {r["task_id"]: r for r in tasks["rows"]}
    assert set(rows) == {"001-answer", "002-other"}
    assert rows["001-answer"]["a"]["pass@1"] == 1.0 and rows["001-answer"]["b"]["pass@1"] == 0.0
    assert rows["001-answer"]["delta"]["pass@5"] == -1.0
    assert rows["001-answer"]["fingerprint_changed"] is False
    assert rows["002-other"]["fingerprint_changed"] is True
    sig = rows["001-answer"]["significance"]
    assert sig["significant"] and sig["p"] == pytest.approx(2 / 252)

    metrics = result["metrics"]
    assert result["k"] == 5
    paired = metrics["pass@1"].pop("paired")
    assert metrics["pass@1"] == {"a": 1.0, "b": 0.0, "delta": -1.0, "higher_is_better": True}
    assert metrics["pass^5"]["delta"] == -1.0
    assert metrics["error_rate"]["higher_is_better"] is False
    assert list(metrics)[:7] == [  # the metric table's names, in its order
        "pass@1", "pass@5", "pass^5", "flaky_rate", "error_rate", "cost_total", "cost_per_success"
    ]  # fmt: skip
    suite = result["significance"]  # both shared tasks fell 1.0 -> 0.0: too few to call
    assert suite == paired
    assert (suite["tasks"], suite["changed_tasks"], suite["mean_delta"]) == (2, 2, -1.0)
    assert suite["p"] == 0.5 and suite["significant"] is False  # 2 of 4 sign patterns as extreme
    assert "fewer than 6 changed tasks p cannot reach 0.05" in suite["note"]
    assert metrics["pass^5"]["paired"]["mean_delta"] == -1.0

    out = io.StringIO()
    render_diff(diff, Console(file=out, width=200))
    text = out.getvalue()
    assert "agent._target_" in text and "concurrency (does not affect results)" in text
    assert "tasks only in b: 004-new" in text and "tasks only in a: 003-gone" in text
    assert "fingerprint differs" in text and "002-other" in text
    assert "p=0.0079, significant" in text  # the task's Fisher test, beside its delta
    assert "pass@1 over shared tasks: noise: -1.000" in text and "p=0.5 (paired over 2" in text
    # the verdict first, figures rounded, the paired significance beside the suite deltas
    assert text.splitlines()[2] == "pass@1 1.00 → 0.00 (-1.00, p=0.5, noise)"
    assert result["verdict"] == "pass@1 1.00 → 0.00 (-1.00, p=0.5, noise)"
    assert "-1.00 [-1.00, -1.00] p=0.5, noise" in text
    assert not re.search(r"\d\.\d{4,}", text.split("pass@1 over shared tasks")[0])  # no raw floats


def test_identical_runs_show_no_change(make_task, tmp_path):
    suite = make_task().parent
    run_suite(suite, tmp_path / "a")
    run_suite(suite, tmp_path / "b")
    result = diff_runs(read_side(tmp_path / "a"), read_side(tmp_path / "b")).to_json()
    assert not any(result["config"].values())
    assert (
        result["tasks"]["added"] == result["tasks"]["removed"] == result["tasks"]["changed"] == []
    )
    assert result["significance"]["note"] == "no change"
    assert result["verdict"] == "pass@1 1.00 → 1.00 (no change on 1 shared tasks)"
    assert result["tasks"]["rows"][0]["significance"]["note"] == "no change"


def stats(task_id: str, passes: int, n: int) -> TaskStats:
    return TaskStats(
        task_id=task_id,
        difficulty="easy",
        tags=[],
        trials=n,
        n=n,
        passes=passes,
        errors=0,
        pass_at={1: passes / n},
        pass_hat={1: passes / n},
        flaky=0 < passes < n,
        mean_latency_s=None,
        cost_usd=None,
    )


def test_small_swings_are_noise_and_consistent_drops_are_not():
    # 20 tasks, each one trial, half flip up and half flip down: the suite did not move
    mixed = [(stats(f"t{i}", i % 2, 1), stats(f"t{i}", 1 - i % 2, 1)) for i in range(20)]
    verdict = suite_significance(mixed)
    assert verdict.significant is False and "noise" in verdict.note
    # 20 tasks each dropping from 5/5 to 3/5: a real regression
    dropped = [(stats(f"t{i}", 5, 5), stats(f"t{i}", 3, 5)) for i in range(20)]
    verdict = suite_significance(dropped)
    assert verdict.significant is True and verdict.ci95 is not None and verdict.ci95[1] < 0
    assert verdict.p == 2 / 2**20 and verdict.test == "sign-flip-exact"
    # 4 tasks that all fell: consistent, but four coin flips can do that 1 time in 8
    few = [(stats(f"t{i}", 1, 1), stats(f"t{i}", 0, 1)) for i in range(4)]
    verdict = suite_significance(few)
    assert verdict.p == 2 / 16 and verdict.significant is False


def test_cli_json_and_errors(two_runs, tmp_path):
    run_a, run_b = two_runs
    proc = evalrun("diff", str(run_a), str(run_b), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["tasks"]["added"] == ["004-new"]
    proc = evalrun("diff", str(run_a), str(run_b))
    assert proc.returncode == 0 and "Suite" in proc.stdout and "pass@1" in proc.stdout
    missing = evalrun("diff", str(run_a), str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "nowhere: no such directory" in missing.stderr
    one = evalrun("diff", str(run_a))
    assert one.returncode == 2 and "required: <run-b>" in one.stderr


def test_cli_writes_the_html_page(two_runs, tmp_path):
    page = tmp_path / "diff.html"
    proc = evalrun("diff", *map(str, two_runs), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    assert "004-new" in html and "agent._target_" in html and "<table" in html


def test_a_run_directory_without_summary_is_refused(two_runs, tmp_path):
    run_a, run_b = two_runs
    (run_b / "summary.json").unlink()
    with pytest.raises(UsageError, match=r"summary\.json not found"):
        diff_runs(read_side(run_a), read_side(run_b))


def test_diff_warns_when_either_side_is_partial(two_runs, tmp_path):
    run_a, _ = two_runs
    partial = tmp_path / "partial"
    shutil.copytree(run_a, partial)
    lines = (partial / "samples.jsonl").read_text().splitlines(keepends=True)
    (partial / "samples.jsonl").write_text("".join(lines[:7]))  # as if killed after 7 of 15
    proc = evalrun("diff", str(run_a), str(partial))
    assert proc.returncode == 0, proc.stderr
    shown = " ".join(proc.stdout.split())
    assert f"warning: run b ({partial}) is partial 7/15 (missing cells: " in shown
    assert "warning: run a" not in shown
    result = diff_runs(read_side(run_a), read_side(partial)).to_json()
    assert result["a"]["state"] == "complete" and result["b"]["state"].startswith("partial 7/15")
    assert sum(row["b"]["n"] for row in result["tasks"]["rows"]) == 7  # what was recorded
    as_json = evalrun("diff", str(partial), str(run_a), "--json")
    assert json.loads(as_json.stdout)["a"]["state"].startswith("partial 7/15")
    assert "warning: run a" in as_json.stderr
