"""Metrics against values computed by hand."""

from __future__ import annotations

import pytest

from evalrun.analysis.metrics import pass_at_k, pass_hat_k, percentile, summarize
from evalrun.models.records import AgentResult, Outcome, Phases, SampleRecord, Usage


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),  # 1 - C(3,1)/C(5,1) = 1 - 3/5
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (5, 2, 3, 0.9),  # 1 - C(3,3)/C(5,3) = 1 - 1/10
        (5, 2, 4, 1.0),  # fewer than k failures: some k-subset always holds a pass
        (5, 0, 3, 0.0),
        (3, 3, 3, 1.0),
        (10, 1, 5, 0.5),  # 1 - C(9,5)/C(10,5) = 1 - 126/252
    ],
)
def test_pass_at_k_unbiased_estimator(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),
        (5, 2, 2, 0.1),  # C(2,2)/C(5,2) = 1/10
        (5, 2, 3, 0.0),
        (4, 3, 2, 0.5),  # C(3,2)/C(4,2) = 3/6
        (3, 3, 3, 1.0),
    ],
)
def test_pass_hat_k(n, c, k, expected):
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_is_undefined_not_zero_when_too_few_trials():
    assert pass_at_k(2, 1, 3) is None
    assert pass_hat_k(2, 2, 3) is None
    assert pass_at_k(0, 0, 1) is None


def test_percentile_interpolates():
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == pytest.approx(2.5)
    assert percentile([10.0], 0.95) == 10.0
    assert percentile(list(map(float, range(1, 21))), 0.95) == pytest.approx(19.05)
    assert percentile([], 0.5) is None


def _rec(task, trial, outcome, *, agent_s=1.0, cost=None):
    return SampleRecord(
        run_id="r",
        task_id=task,
        fingerprint="f",
        trial=trial,
        outcome=outcome,
        phases=Phases(setup=0.0, agent=agent_s, verify=0.5),
        agent=AgentResult(usage=Usage(cost_usd=cost)),
        started_at=0.0,
        finished_at=1.0,
    )


P, F, E = Outcome.passed, Outcome.failed, Outcome.error


def test_summary_per_task_group_and_suite():
    records = [
        # a: 2 of 3 pass (flaky), one error that must not count
        _rec("a", 0, P, cost=0.01),
        _rec("a", 1, F, cost=0.01),
        _rec("a", 2, P, cost=0.02),
        _rec("a", 3, E),
        # b: 0 of 3
        _rec("b", 0, F),
        _rec("b", 1, F),
        _rec("b", 2, F),
    ]
    meta = {
        "a": {"difficulty": "easy", "tags": ["python", "git"]},
        "b": {"difficulty": "hard", "tags": ["python"]},
    }
    s = summarize(records, meta, run_id="r", trials=3)
    a, b = s.tasks
    assert (a.n, a.passes, a.errors, a.flaky) == (3, 2, 1, True)
    assert a.pass_at[1] == pytest.approx(2 / 3)
    assert a.pass_at[2] == pytest.approx(1.0)  # 1 - C(1,2)/C(3,2) = 1 - 0
    assert a.pass_hat[2] == pytest.approx(1 / 3)  # C(2,2)/C(3,2)
    assert (b.n, b.passes, b.flaky) == (3, 0, False)
    assert s.overall.pass_at[1] == pytest.approx((2 / 3 + 0) / 2)  # macro mean over tasks
    assert s.overall.flaky_tasks == 1
    assert s.by_tag["git"].pass_at[1] == pytest.approx(2 / 3)
    assert s.by_tag["python"].tasks == 2
    assert s.by_difficulty["hard"].pass_at[1] == 0.0
    assert (s.samples, s.scored, s.passes, s.errors) == (7, 6, 2, 1)
    assert [e.task_id for e in s.error_samples] == ["a"]
    assert s.cost.total_usd == pytest.approx(0.04)
    assert s.cost.per_success_usd == pytest.approx(0.02)
    assert s.cost.unpriced_samples == 4
    assert s.latency["agent"].p50 == pytest.approx(1.0)


def test_summary_keeps_undefined_pass_at_k_for_short_tasks():
    records = [_rec("a", 0, P), _rec("a", 1, E), _rec("b", 0, P), _rec("b", 1, F)]
    s = summarize(records, {}, run_id="r", trials=2)
    assert s.tasks[0].pass_at[2] is None  # only one scored trial
    assert s.overall.pass_at[2] == pytest.approx(1.0)  # mean over tasks where it is defined
    assert s.cost.total_usd is None


def test_planned_task_without_records_shows_up_unscored():
    s = summarize([], {"a": {"difficulty": "easy", "tags": []}}, run_id="r", trials=1)
    assert s.tasks[0].n == 0
    assert s.overall.pass_at[1] is None


def test_every_suite_and_group_figure_carries_its_interval_and_method():
    one_trial = [_rec(t, 0, P if t < "d" else F) for t in "abcd"]  # 3 of 4 tasks pass
    meta = {t: {"difficulty": "easy", "tags": ["x"]} for t in "abcd"}
    s = summarize(one_trial, meta, run_id="r", trials=1)
    est = s.overall.intervals["pass@1"]
    assert est.method == "wilson" and est.tasks == 4
    assert (est.low, est.high) == (pytest.approx(0.3006, abs=1e-4), pytest.approx(0.9544, abs=1e-4))
    assert s.by_tag["x"].intervals["pass@1"] == est and s.by_difficulty["easy"].interval("pass^", 1)

    trials = [
        _rec(t, i, P if (t, i) in {("a", 0), ("a", 1), ("b", 0)} else F)
        for t in "ab"
        for i in range(3)
    ]
    s = summarize(trials, {}, run_id="r", trials=3)
    assert set(s.overall.intervals) == {"pass@1", "pass@2", "pass^2", "pass@3", "pass^3"}
    assert {e.method for e in s.overall.intervals.values()} == {"clustered-wilson"}
    assert s.overall.interval("pass^", 3).value == s.overall.pass_hat[3]


def test_a_summary_written_before_intervals_existed_still_reads():
    s = summarize([_rec("a", 0, P), _rec("b", 0, F)], {}, run_id="r", trials=1)
    old = s.model_dump(mode="json")
    for group in [old["overall"], *old["by_tag"].values(), *old["by_difficulty"].values()]:
        del group["intervals"]
    again = type(s).model_validate(old)
    assert again.overall.intervals == {} and again.overall.interval("pass@", 1) is None
    assert again.overall.pass_at[1] == 0.5


def test_judge_scores_get_a_mean_an_interval_and_the_worst_samples():
    from evalrun.models.records import SampleDigest

    def rec(task: str, trial: int, score: float | None, reason: str) -> SampleDigest:
        return SampleDigest(
            task_id=task,
            fingerprint="f",
            trial=trial,
            outcome="pass",
            scores={"tidy": score},
            judge_reasons={"tidy": reason},
        )

    records = [
        rec("a", 0, 0.9, "fine"),
        rec("a", 1, 0.1, "messy"),
        rec("b", 0, 0.8, "ok"),
        rec("b", 1, None, "judge failed"),
    ]
    summary = summarize(records, {"a": {}, "b": {}}, run_id="r", trials=2)
    tidy = summary.judges["tidy"]
    assert tidy.scored == 3 and tidy.failed == 1  # a failed judgement is not a 0
    assert tidy.mean == pytest.approx((0.5 + 0.8) / 2)  # each task weighs the same, as pass@k
    assert tidy.interval.method == "clustered-wilson" and tidy.interval.tasks == 2
    assert [(w.task_id, w.trial, w.reason) for w in tidy.worst] == [
        ("a", 1, "messy"),
        ("b", 0, "ok"),
        ("a", 0, "fine"),
    ]
