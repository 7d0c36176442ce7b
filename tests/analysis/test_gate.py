"""Threshold profiles: every kind of bound trips when broken and holds when not; the CLI exits 1
on a broken gate, 0 otherwise, and `evalrun gate` re-gates a finished run without running it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from evalrun.analysis.gate import (
    Baseline,
    ThresholdProfile,
    build_profile,
    parse_metric,
    print_verdict,
)
from evalrun.analysis.metrics import summarize
from evalrun.cli.hydra import compose_config
from evalrun.errors import UsageError
from evalrun.models.records import AgentResult, Outcome, Phases, SampleRecord, Usage
from evalrun.models.summary import Summary
from evalrun.run.plan import build
from tests.conftest import REPO

META = {
    "t1": {"difficulty": "easy", "tags": ["python"]},
    "t2": {"difficulty": "hard", "tags": ["python", "git"]},
}


def record(task: str, trial: int, outcome: str, *, agent_s: float = 1.0, cost: float | None = None):
    return SampleRecord(
        run_id="r",
        task_id=task,
        fingerprint="f",
        trial=trial,
        outcome=Outcome(outcome),
        phases=Phases(setup=0.1, agent=agent_s, verify=0.1),
        agent=AgentResult(usage=Usage(cost_usd=cost)),
        started_at=0,
        finished_at=1,
    )


def run_summary(outcomes: dict[str, list[str]], *, agent_s=1.0, cost=None) -> Summary:
    """t1/t2 with the given outcome per trial."""
    recs = [
        record(task, i, o, agent_s=agent_s, cost=cost)
        for task, outs in outcomes.items()
        for i, o in enumerate(outs)
    ]
    trials = max(len(v) for v in outcomes.values())
    return summarize(recs, META, run_id="r", trials=trials)


GOOD = {"t1": ["pass", "pass"], "t2": ["pass", "pass"]}
MIXED = {"t1": ["pass", "pass"], "t2": ["pass", "fail"]}  # pass@1 .75, pass^2 .5


def breaches(summary: Summary, baseline: Summary | None = None, **sections) -> list[str]:
    profile = ThresholdProfile("t", **sections)
    if baseline is not None:
        profile = profile.with_baseline(Baseline(Path("base"), baseline))
    return [b.metric for b in profile.check(summary)]


@pytest.mark.parametrize(
    "metric, bound, tripped",
    [
        ("pass@1", 0.8, True),
        ("pass@1", 0.75, False),
        ("pass^2", 0.6, True),
        ("pass^k", 0.5, False),  # k = the run's trials = 2
        ("pass^k", 0.51, True),
        ("pass@2", 1.0, False),
        ("tag:git:pass@1", 0.6, True),
        ("tag:python:pass@1", 0.75, False),
        ("difficulty:easy:pass^2", 1.0, False),
        ("difficulty:hard:pass^2", 0.1, True),
        ("task:t2:pass@1", 0.5, False),
        ("task:t2:pass@1", 0.51, True),
    ],
)
def test_floors(metric, bound, tripped):
    assert breaches(run_summary(MIXED), floors={metric: bound}) == ([metric] if tripped else [])


def test_ceilings_on_error_rate_cost_and_latency():
    errors = run_summary({"t1": ["pass", "error"], "t2": ["pass", "pass"]})
    assert breaches(errors, ceilings={"error_rate": 0.2}) == ["error_rate"]  # 1 of 4
    assert breaches(errors, ceilings={"error_rate": 0.25}) == []
    priced = run_summary(MIXED, cost=0.3)  # 1.2 USD over 3 successes
    assert breaches(priced, ceilings={"cost_per_success": 0.39}) == ["cost_per_success"]
    assert breaches(priced, ceilings={"cost_per_success": 0.4}) == []
    slow = run_summary(MIXED, agent_s=120.0)
    assert breaches(slow, ceilings={"p95_agent_s": 119}) == ["p95_agent_s"]
    assert breaches(slow, ceilings={"p95_agent_s": 120}) == []


def test_undefined_breaks_a_floor_but_not_a_ceiling():
    summary = run_summary(MIXED)  # 2 trials: pass@3 undefined; nothing priced
    assert breaches(summary, floors={"pass@3": 0.1}) == ["pass@3"]
    assert breaches(summary, ceilings={"cost_per_success": 0.01}) == []


def test_a_tag_or_task_the_run_did_not_select_is_skipped_and_said_so():
    profile = ThresholdProfile("t", floors={"tag:sqlite:pass@1": 0.9, "task:nope:pass@1": 1})
    summary = run_summary(MIXED)
    assert profile.check(summary) == []
    assert profile.coverage(summary) == (
        0,
        [
            "skipped, tag/difficulty/task not in this run: floors.tag:sqlite:pass@1, "
            "floors.task:nope:pass@1"
        ],
    )


def test_max_drop_against_a_baseline_both_ways():
    base, now = run_summary(GOOD), run_summary(MIXED)  # pass@1 1.0 -> 0.75
    assert breaches(now, base, max_drop={"pass@1": 0.2}) == ["pass@1"]
    assert breaches(now, base, max_drop={"pass@1": 0.25}) == []
    assert breaches(now, base, max_drop={"tag:git:pass@1": 0.4}) == ["tag:git:pass@1"]
    # improving is never a drop
    assert breaches(base, now, max_drop={"pass@1": 0.0}) == []
    # lower-is-better metrics worsen upwards
    cheap, dear = run_summary(GOOD, cost=0.1), run_summary(GOOD, cost=0.3)
    assert breaches(dear, cheap, max_drop={"cost_per_success": 0.19}) == ["cost_per_success"]
    assert breaches(dear, cheap, max_drop={"cost_per_success": 0.2}) == []
    assert breaches(cheap, dear, max_drop={"cost_per_success": 0.0}) == []
    fast, slow = run_summary(GOOD, agent_s=10), run_summary(GOOD, agent_s=40)
    assert breaches(slow, fast, max_drop={"p95_agent_s": 29}) == ["p95_agent_s"]
    assert breaches(slow, fast, max_drop={"p95_agent_s": 30}) == []
    errs = run_summary({"t1": ["error", "pass"], "t2": ["pass", "pass"]})
    assert breaches(errs, base, max_drop={"error_rate": 0.2}) == ["error_rate"]
    assert breaches(errs, base, max_drop={"error_rate": 0.25}) == []


def test_max_drop_without_baseline_is_not_checked_and_said_so():
    profile = ThresholdProfile("t", max_drop={"pass@1": 0.0})
    summary = run_summary(MIXED)
    assert profile.check(summary) == []
    assert profile.coverage(summary) == (
        0,
        ["max_drop not checked, no baseline=<run-dir>: pass@1"],
    )


def test_breach_line_names_metric_value_bound_and_baseline():
    base = Baseline(Path("base"), run_summary(GOOD))
    profile = ThresholdProfile("reg", floors={"pass@1": 0.9}, max_drop={"pass@1": 0.1})
    out = io.StringIO()
    code = print_verdict(profile.with_baseline(base), run_summary(MIXED), Console(file=out))
    lines = [line for line in out.getvalue().splitlines() if "threshold broken" in line]
    assert code == 1
    assert lines == [
        "threshold broken (reg): pass@1 = 0.75 (95% CI [0.01, 1.00]), expected >= 0.9 (baseline 1)",
        "threshold broken (reg): pass@1 = 0.75 (95% CI [0.01, 1.00]), baseline 1: worse by 0.25, "
        "allowed drop 0.1",
    ]


def suite_of(passed: int, tasks: int = 20, trials: int = 1) -> Summary:
    """`tasks` tasks of one trial each (or `trials`), the first `passed` passing every trial."""
    recs = [
        record(f"s{i:02}", t, "pass" if i < passed else "fail")
        for i in range(tasks)
        for t in range(trials)
    ]
    meta = {f"s{i:02}": {"difficulty": "easy", "tags": ["python"]} for i in range(tasks)}
    return summarize(recs, meta, run_id="r", trials=trials)


def test_a_floor_on_the_interval_is_stricter_or_more_lenient_than_on_the_estimate():
    summary = suite_of(14)  # 14 of 20: pass@1 0.70, Wilson 95% interval [0.481, 0.855]
    estimate = summary.overall.interval("pass@", 1)
    assert (estimate.low, estimate.high) == (
        pytest.approx(0.4810, abs=1e-4),
        pytest.approx(0.8545, abs=1e-4),
    )
    assert breaches(summary, floors={"pass@1": 0.6}) == []
    # lower_ci: the run must *show* it is above the floor - 20 tasks cannot show 0.6
    assert breaches(summary, floors={"pass@1": {"value": 0.6, "on": "lower_ci"}}) == ["pass@1"]
    assert breaches(summary, floors={"pass@1": {"value": 0.45, "on": "lower_ci"}}) == []
    # upper_ci: fail only when the run shows it is below the floor
    assert breaches(summary, floors={"pass@1": {"value": 0.85, "on": "upper_ci"}}) == []
    assert breaches(summary, floors={"pass@1": {"value": 0.9, "on": "upper_ci"}}) == ["pass@1"]
    scoped = {"tag:python:pass@1": {"value": 0.6, "on": "lower_ci"}}
    assert breaches(summary, floors=scoped) == ["tag:python:pass@1"]
    out = io.StringIO()
    profile = ThresholdProfile("ci", floors={"pass@1": {"value": 0.6, "on": "lower_ci"}})
    assert print_verdict(profile, summary, Console(file=out, width=300)) == 1
    assert (
        "pass@1 = 0.7 (95% CI [0.48, 0.85]): its lower bound 0.481, expected >= 0.6 (no baseline)"
        in out.getvalue()
    )


def test_a_drop_that_must_be_significant_fails_only_when_it_is(capsys):
    base = suite_of(20)
    significant = {"pass@1": {"value": 0.05, "significant": True}}
    # 3 of 20 tasks fell: worse by 0.15 > 0.05, but 3 coin flips do that 1 time in 4
    assert breaches(suite_of(17), base, max_drop={"pass@1": 0.05}) == ["pass@1"]
    assert breaches(suite_of(17), base, max_drop=significant) == []
    profile = ThresholdProfile("sig", max_drop=significant).with_baseline(
        Baseline(Path("base"), base)
    )
    out = io.StringIO()
    assert print_verdict(profile, suite_of(17), Console(file=out, width=300)) == 0
    assert (
        "drop beyond its bound, not failed: pass@1 = 0.85 (95% CI [0.64, 0.95]), baseline 1: worse "
        "by 0.15, allowed drop 0.05; not significant (p=0.25, paired over 20 tasks, 3 changed)"
        in out.getvalue()
    )
    # 8 of 20 fell: p = 2 / 2^8
    profile_breaches = profile.check(suite_of(12))
    assert [b.metric for b in profile_breaches] == ["pass@1"]
    assert "significant (p=0.00781, paired over 20 tasks, 8 changed)" in str(profile_breaches[0])
    # one task: Fisher's exact test on its trials
    five = {"task:s00:pass@1": {"value": 0.1, "significant": True}}
    base5 = suite_of(20, trials=5)
    assert breaches(suite_of(0, trials=5), base5, max_drop=five) == ["task:s00:pass@1"]
    three_of_five = run_summary_for({"s00": ["pass"] * 3 + ["fail"] * 2})
    assert breaches(three_of_five, base5, max_drop=five) == []


def run_summary_for(outcomes: dict[str, list[str]]) -> Summary:
    recs = [record(t, i, o) for t, outs in outcomes.items() for i, o in enumerate(outs)]
    meta = {t: {"difficulty": "easy", "tags": ["python"]} for t in outcomes}
    return summarize(recs, meta, run_id="r", trials=max(len(v) for v in outcomes.values()))


@pytest.mark.parametrize(
    "section, bound, message",
    [
        (
            "floors",
            {"value": 0.6, "on": "lower"},
            r"floors\.pass@1: on: expected one of estimate, lower_ci, upper_ci, got 'lower'",
        ),
        (
            "floors",
            {"value": 0.6, "om": "lower_ci"},
            r"floors\.pass@1: unknown key\(s\) om \(expected value, on\)",
        ),
        (
            "floors",
            {"on": "lower_ci"},
            r"floors\.pass@1: expected a number or a mapping \{value, on\}",
        ),
        (
            "max_drop",
            {"value": 0.1, "on": "lower_ci"},
            r"max_drop\.pass@1: unknown key\(s\) on \(expected value, significant\)",
        ),
        ("max_drop", {"value": 0.1, "significant": "yes"}, r"significant: expected true or false"),
    ],
)
def test_a_bad_bound_is_a_usage_error_naming_the_key(section, bound, message):
    with pytest.raises(UsageError, match=message):
        ThresholdProfile("p", **{section: {"pass@1": bound}})


def test_only_pass_metrics_of_a_suite_tag_or_difficulty_have_an_interval_or_a_test():
    with pytest.raises(UsageError, match=r"error_rate has no interval"):
        ThresholdProfile("p", ceilings={"error_rate": {"value": 0.1, "on": "upper_ci"}})
    with pytest.raises(UsageError, match=r"cost_per_success has no significance test"):
        ThresholdProfile("p", max_drop={"cost_per_success": {"value": 0.1, "significant": True}})
    with pytest.raises(UsageError, match=r"task:<id>: metrics carry no interval"):
        ThresholdProfile("p", floors={"task:t1:pass@1": {"value": 0.5, "on": "lower_ci"}})


def test_interval_bounds_compose_from_yaml_overrides():
    cfg = compose_config(
        ["profile=regression", "profile.floors={pass@1: {value: 0.6, on: lower_ci}}"]
    )
    profile = build_profile(cfg.profile)
    assert (profile.floors["pass@1"].value, profile.floors["pass@1"].on) == (0.6, "lower_ci")


@pytest.mark.parametrize(
    "name",
    ["pass@0", "pass@", "pass@x", "tag:python:error_rate", "latency", "task::pass@1", "p95_agent"],
)
def test_unknown_metric_names_are_rejected(name):
    with pytest.raises(ValueError):
        parse_metric(name)


def test_unknown_metric_in_a_profile_is_a_usage_error_at_plan_time_naming_the_key(make_task):
    suite = make_task().parent
    cfg = compose_config(
        [f"tasks_dir={suite}", "profile=regression", "+profile.ceilings.p99_agent_s=3"]
    )
    with pytest.raises(UsageError, match=r"ceilings\.p99_agent_s: unknown metric 'p99_agent_s'"):
        build(cfg)


def test_regression_profile_composes_with_every_section():
    profile = build_profile(compose_config(["profile=regression"]).profile)
    assert profile.name == "regression"
    assert {"pass@1", "pass^k", "tag:probe:pass@1"} <= set(profile.floors)
    assert {"error_rate", "cost_per_success", "p95_agent_s"} <= set(profile.ceilings)
    assert {"pass@1", "p95_agent_s"} <= set(profile.max_drop)


def test_a_bound_can_be_merged_in_from_the_command_line():
    cfg = compose_config(["profile=regression", "profile.floors={pass@1: 0.9}"])
    profile = build_profile(cfg.profile)
    assert profile.floors["pass@1"].value == 0.9 and profile.floors["tag:git:pass@1"].value == 0.5


def test_missing_baseline_is_a_usage_error(make_task, tmp_path):
    cfg = compose_config(
        [f"tasks_dir={make_task().parent}", "profile=regression", f"baseline={tmp_path}"]
    )
    with pytest.raises(UsageError, match=r"baseline: .*summary.json not found"):
        build(cfg)


def evalrun(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )


def test_cli_exit_codes_and_gating_a_finished_run(make_task, tmp_path):
    make_task("001-answer", spec={"tags": ["python"]})
    suite = make_task("002-other", spec={"tags": ["git"]}).parent
    good, bad = tmp_path / "good", tmp_path / "bad"
    run = evalrun(f"tasks_dir={suite}", f"run_dir={good}", "profile=regression")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all 7 checked thresholds hold" in run.stdout
    run = evalrun(f"tasks_dir={suite}", f"run_dir={bad}", "agent=noop", "profile=regression")
    assert run.returncode == 1
    broken = [line for line in run.stdout.splitlines() if "threshold broken" in line]
    assert (
        "threshold broken (regression): pass@1 = 0 (95% CI [0.00, 0.66]), expected >= 0.6 "
        "(no baseline)" in broken
    )
    assert any(
        line.startswith("threshold broken (regression): tag:git:pass@1 = 0") for line in broken
    )

    samples_before = (bad / "samples.jsonl").read_text()
    gated = evalrun("gate", str(bad), "profile=regression", f"baseline={good}")
    assert gated.returncode == 1, gated.stderr
    assert (
        "pass@1 = 0 (95% CI [0.00, 0.66]), baseline 1: worse by 1, allowed drop 0.05"
        in gated.stdout
    )
    assert (bad / "samples.jsonl").read_text() == samples_before  # nothing re-ran
    assert json.loads((bad / "summary.json").read_text())["samples"] == 2

    assert evalrun("gate", str(good), "profile=regression", f"baseline={good}").returncode == 0
    missing = evalrun("gate", str(tmp_path / "nowhere"), "profile=regression")
    assert missing.returncode == 2 and "nowhere: no such directory" in missing.stderr

    nothing = evalrun("gate", str(good))  # profile=none: no threshold, nothing proven
    assert nothing.returncode == 2
    assert "nothing to check: pass profile=<name>" in nothing.stderr
    assert "available: " in nothing.stderr and "regression" in nothing.stderr


def test_the_hinted_bound_override_gates_a_run_with_the_default_profile(make_task, tmp_path):
    """Issue 19: what `evalrun gate` suggests when the profile has no threshold is a command
    that works - it holds on a passing run (exit 0), breaks on a failing one (exit 1)."""
    import shlex

    suite = make_task("001-answer").parent
    good, bad = tmp_path / "good", tmp_path / "bad"
    assert evalrun(f"tasks_dir={suite}", f"run_dir={good}").returncode == 0
    ran = evalrun(f"tasks_dir={suite}", f"run_dir={bad}", "agent=noop")
    assert ran.returncode == 0, ran.stderr  # profile=none: no gate on the run itself

    nothing = evalrun("gate", str(good))
    assert nothing.returncode == 2
    [hinted] = shlex.split(nothing.stderr.split("e.g. ", 1)[1])
    assert hinted == "profile.floors={pass@1: 0.8}"
    assert "'profile.floors={pass@1: 0.8}'" in evalrun("gate", "--help").stdout
    held = evalrun("gate", str(good), hinted)
    assert held.returncode == 0, held.stdout + held.stderr
    assert "gate (none): all 1 checked thresholds hold" in held.stdout
    broken = evalrun("gate", str(bad), hinted)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "threshold broken (none): pass@1 = 0" in broken.stdout
    # The same override gates a run as it ends, and merges into a chosen profile's bounds.
    on_run = evalrun(f"tasks_dir={suite}", f"run_dir={tmp_path / 'again'}", "agent=noop", hinted)
    assert on_run.returncode == 1 and "expected >= 0.8" in on_run.stdout
    merged = evalrun("gate", str(bad), "profile=regression", "profile.floors={pass@1: 0.99}")
    assert merged.returncode == 1
    assert "expected >= 0.99" in merged.stdout  # the bound given
    assert "threshold broken (regression): pass^k = 0" in merged.stdout  # the profile's own
    # The old hint's form is one line naming the form that works, not a parser trace.
    for old in ("+profile.floors.pass@1=0.8", "profile.floors.pass@1=0.8"):
        refused = evalrun("gate", str(good), old)
        assert refused.returncode == 2
        assert refused.stderr.strip() == (
            "error: cannot read the key 'profile.floors.pass@1': a metric name cannot be part "
            "of a key on the command line; give the bound as a mapping: "
            "'profile.floors={pass@1: 0.8}'"
        )


def test_judge_means_gate_and_a_judge_the_run_lacks_is_skipped():
    from evalrun.analysis.gate import NotApplicable, ThresholdProfile, metric_value
    from evalrun.analysis.metrics import summarize
    from evalrun.models.records import SampleDigest

    records = [
        SampleDigest(task_id=t, fingerprint="f", trial=0, outcome="pass", scores={"tidy": s})
        for t, s in (("a", 0.4), ("b", 0.6))
    ]
    summary = summarize(records, {"a": {}, "b": {}}, run_id="r", trials=1)
    assert metric_value(summary, "judge:tidy") == pytest.approx(0.5)
    with pytest.raises(NotApplicable):
        metric_value(summary, "judge:other")
    profile = ThresholdProfile("p", floors={"judge:tidy": 0.6, "judge:other": 0.9})
    assert [b.metric for b in profile.check(summary)] == ["judge:tidy"]
    lower = summary.judges["tidy"].interval.low
    on_interval = ThresholdProfile("p", ceilings={"judge:tidy": {"value": 0.45, "on": "lower_ci"}})
    assert lower < 0.45 and not on_interval.check(summary)  # the mean is above, the interval not
    with pytest.raises(UsageError, match="judge:<name>"):
        ThresholdProfile("p", floors={"judge:": 0.5})
    with pytest.raises(UsageError, match="judge:tidy has no significance test"):
        ThresholdProfile("p", max_drop={"judge:tidy": {"value": 0.1, "significant": True}})
