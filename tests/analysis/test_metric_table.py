"""One metric table (evalrun/analysis/metric_table.py): one name per metric, read the same way by the gate,
diff, the sweep summary and the Opik experiment scores."""

from __future__ import annotations

import pytest

from evalrun.analysis.gate import ThresholdProfile
from evalrun.analysis.metric_table import (
    FIXED,
    headline,
    headline_names,
    metric_value,
    parse_metric,
)
from evalrun.analysis.metrics import summarize
from evalrun.analysis.sweep import job_metrics
from evalrun.integrations.opik.traces import experiment_scores
from evalrun.models.records import AgentResult, Outcome, Phases, SampleRecord, Usage


def _rec(task: str, trial: int, outcome: Outcome, cost: float, agent_s: float) -> SampleRecord:
    return SampleRecord(
        run_id="r",
        task_id=task,
        fingerprint="f",
        trial=trial,
        outcome=outcome,
        phases=Phases(setup=0.1, agent=agent_s, verify=0.2),
        agent=AgentResult(usage=Usage(cost_usd=cost)),
        started_at=0,
        finished_at=1,
        scores={"tidy": 0.5 + 0.25 * trial},
        judge_reasons={"tidy": "ok"},
    )


@pytest.fixture
def summary():
    records = [
        _rec("a", 0, Outcome.passed, 0.1, 10),
        _rec("a", 1, Outcome.failed, 0.1, 20),
        _rec("b", 0, Outcome.passed, 0.2, 30),
        _rec("b", 1, Outcome.error, 0.0, 40),
    ]
    meta = {"a": {"difficulty": "easy", "tags": ["x"]}, "b": {"difficulty": "hard", "tags": []}}
    return summarize(records, meta, run_id="r", trials=2)


def test_every_headline_metric_has_one_name_and_one_value(summary):
    values = headline(summary)
    assert list(values)[:3] == ["pass@1", "pass@2", "pass^2"]
    assert values["flaky_rate"] == 0.5  # a: 1 of 2; b: 1 scored, passed
    assert values["error_rate"] == 0.25
    assert values["cost_total"] == pytest.approx(0.4)
    assert values["cost_per_success"] == pytest.approx(0.2)
    assert values["p95_agent_s"] == pytest.approx(38.5)
    assert values["judge:tidy"] == pytest.approx((0.625 + 0.625) / 2)
    assert metric_value(summary, "p50_setup_s") == pytest.approx(0.1)
    assert metric_value(summary, "tag:x:pass@1") == 0.5


def test_diff_sweep_and_opik_call_each_metric_by_the_tables_name(summary):
    names = set(headline_names(summary))
    scores = experiment_scores(summary)
    assert {n for n in scores if "_ci95_" not in n} <= names
    assert {"pass@1_ci95_low", "judge:tidy_ci95_high"} <= set(scores)
    assert set(job_metrics(summary)) - {"samples"} <= names
    for name in FIXED:
        assert parse_metric(name).base == name


def test_a_latency_or_rate_from_the_table_can_be_gated(summary):
    profile = ThresholdProfile(
        "p", ceilings={"p50_verify_s": 0.1, "flaky_rate": 0.4, "mean_agent_s": 100}
    )
    assert [b.metric for b in profile.check(summary)] == ["p50_verify_s", "flaky_rate"]
