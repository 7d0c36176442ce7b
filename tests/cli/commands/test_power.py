"""`evalrun power` and the dry run's precision line: what a user reads before spending money."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from evalrun.cli.commands.power import power_command
from evalrun.cli.hydra import compose_config
from evalrun.errors import UsageError
from evalrun.run.runner import run
from tests.report.conftest import make_suite, run_suite


def power(*args: str) -> str:
    out = io.StringIO()
    assert power_command(list(args), Console(file=out, width=300)) == 0
    return out.getvalue()


def test_the_bundled_suite_with_an_assumed_rate():
    text = power("--rate", "0.62")
    assert "plan       23 tasks x 1 trial" in text
    assert (
        "precision  with 23 tasks x 1 trial, a 95% interval on pass@1 is about ±0.20; "
        "±0.10 needs ~91 task-trials (91 tasks x 1 trial)" in text
    )
    assert "pass@1 0.62, ICC 0.50 (assumed)" in text
    # the table: one row per trial count, the plan's marked
    assert "1 (plan)" in text and "> suite" in text


def test_overrides_choose_the_plan_like_a_run(make_task):
    make_task("001-a")
    suite = make_task("002-b").parent
    text = power(f"tasks_dir={suite}", "trials=3", "--width", "0.3")
    assert "plan       2 tasks x 3 trials" in text
    # assumed rate 0.5, ICC 0.5: 1.96 * sqrt((0.125 + 0.125 / 3) / 2) = 0.566;
    # +-0.30 needs 1.96^2 * (0.125 + 0.125 / 3) / 0.09 = 7.1 -> 8 tasks
    assert (
        "with 2 tasks x 3 trials, a 95% interval on pass@1 is about ±0.57; ±0.30 needs "
        "~24 task-trials (8 tasks x 3 trials)" in text
    )


def test_a_baseline_with_several_trials_measures_the_between_task_variance(make_task, tmp_path):
    baseline = run_suite(
        make_suite(make_task, tmp_path / "counter"), tmp_path / "base", "trials=3"
    )  # 1.0, 0.67, 0.0 over three scored tasks: mostly between-task variance
    text = power(str(baseline))
    assert "pass@1 0.56, ICC 0.67 (measured)" in text
    assert f"baseline {baseline} (4 tasks, 3 trials each)" in text
    assert "more tasks buy far more precision than more trials" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--delta", "2"], r"--delta: expected a number between 0 and 1, got 2"),
        (["--icc", "x"], r"--icc: expected a number, got 'x'"),
        (["--tasks", "3"], r"unknown option '--tasks'"),
        (["a", "b"], r"unexpected argument 'b'"),
    ],
)
def test_bad_arguments_are_usage_errors(args, message):
    with pytest.raises(UsageError, match=message):
        power_command(args, Console(file=io.StringIO()))


def test_a_dry_run_prints_the_expected_interval_width(make_task, tmp_path):
    suite = make_task().parent
    out = io.StringIO()
    cfg = compose_config([f"tasks_dir={suite}", "dry_run=true", "trials=2"])
    assert run(cfg, Console(file=out, width=300)) == 0
    text = out.getvalue()
    assert "precision  with 1 task x 2 trials, a 95% interval on pass@1 is about ±" in text
    assert "pass@1 0.50, ICC 0.50 (assumed), no baseline (more: evalrun power)" in text
