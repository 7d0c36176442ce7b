"""pass@k, pass^k, flakiness, latency and cost - per task, per tag, per difficulty, overall.

Per task with n scored trials and c passes (errors are not scored):
  pass@k = 1 - C(n-c, k) / C(n, k)   unbiased estimator (Chen et al. 2021); None when n < k
  pass^k = C(c, k) / C(n, k)         all k tries pass (Yao et al. 2024); None when n < k
  flaky  = 0 < c < n
Suite and group values are macro means over the tasks for which the value is defined, each with
its standard error and 95% interval clustered by task (`evalrun.analysis.stats`;
`GroupStats.intervals`).
Judge scores (0-1, from LLM judges) get a mean per judge with its 95% interval (the same
`task_mean` over per-task mean scores) and the lowest-scored samples with the judge's reasons.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from evalrun.analysis.stats import Difference, paired_difference, pass_rate, task_mean
from evalrun.models.records import Outcome, SampleDigest, SampleRecord
from evalrun.models.summary import (
    PASS_AT,
    PASS_HAT,
    PHASES,
    CostStats,
    Estimate,
    GroupStats,
    JudgedSample,
    JudgeStats,
    LatencyStats,
    SampleError,
    Summary,
    TaskStats,
    pass_metric,
)

AnySample = SampleRecord | SampleDigest


WORST_LISTED = 5  # lowest-scored samples listed per judge


def pass_at_k(n: int, c: int, k: int) -> float | None:
    if k <= 0 or n < k:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    if k <= 0 or n < k:
        return None
    return math.comb(c, k) / math.comb(n, k)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _task_stats(task_id: str, meta: dict, recs: list[AnySample], ks: list[int]) -> TaskStats:
    scored = [r for r in recs if r.outcome is not Outcome.error]
    n = len(scored)
    c = sum(r.outcome is Outcome.passed for r in scored)
    costs = [r.agent.usage.cost_usd for r in recs if r.agent.usage.cost_usd is not None]
    totals = [sum(v for v in r.phases.model_dump().values() if v is not None) for r in recs]
    return TaskStats(
        task_id=task_id,
        difficulty=meta.get("difficulty", "unknown"),
        tags=list(meta.get("tags", [])),
        trials=len(recs),
        n=n,
        passes=c,
        errors=len(recs) - n,
        pass_at={k: pass_at_k(n, c, k) for k in ks},
        pass_hat={k: pass_hat_k(n, c, k) for k in ks},
        flaky=0 < c < n,
        mean_latency_s=_mean(totals),
        cost_usd=sum(costs) if costs else None,
    )


def _intervals(stats: list[TaskStats], ks: list[int]) -> dict[str, Estimate]:
    """pass@1 as a pass rate over tasks; pass@k and pass^k (k >= 2) as means of per-task values.
    pass^1 is pass@1 and is not repeated."""
    out: dict[str, Estimate | None] = {
        pass_metric(PASS_AT, 1): pass_rate([(s.passes, s.n) for s in stats])
    }
    for k in ks[1:]:
        for base in (PASS_AT, PASS_HAT):
            defined = [(v, s.n) for s in stats if (v := s.value(base, k)) is not None]
            out[pass_metric(base, k)] = task_mean(
                [v for v, _ in defined], trials=sum(n for _, n in defined)
            )
    return {name: est for name, est in out.items() if est is not None}


def _group(stats: list[TaskStats], ks: list[int]) -> GroupStats:
    return GroupStats(
        tasks=len(stats),
        pass_at={k: _mean(s.pass_at[k] for s in stats) for k in ks},
        pass_hat={k: _mean(s.pass_hat[k] for s in stats) for k in ks},
        flaky_tasks=sum(s.flaky for s in stats),
        intervals=_intervals(stats, ks),
    )


def paired_change(
    a: Iterable[TaskStats], b: Iterable[TaskStats], base: str, k: int
) -> Difference | None:
    """How a pass metric moved from run a to run b, task by task over the tasks (by id) where
    both define it (`stats.paired_difference`); None when there is no such task."""
    in_b = {t.task_id: t for t in b}
    pairs = [
        (va, vb)
        for ta in a
        if (tb := in_b.get(ta.task_id)) is not None
        and (va := ta.value(base, k)) is not None
        and (vb := tb.value(base, k)) is not None
    ]
    return paired_difference([va for va, _ in pairs], [vb for _, vb in pairs])


def judge_stats(records: Iterable[AnySample]) -> dict[str, JudgeStats]:
    """Per judge name: the macro mean of per-task mean scores with its task-clustered interval,
    the judgements that failed, and the lowest scores with their reasons."""
    scored: dict[str, list[AnySample]] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    for rec in records:
        for name, value in rec.scores.items():
            if value is None:
                failed[name] += 1
            else:
                scored[name].append(rec)
    out = {}
    for name in sorted(set(scored) | set(failed)):
        recs = scored.get(name, [])
        per_task: dict[str, list[float]] = defaultdict(list)
        for rec in recs:
            per_task[rec.task_id].append(float(rec.scores[name] or 0.0))
        estimate = task_mean([sum(v) / len(v) for v in per_task.values()], trials=len(recs))
        lowest = sorted(recs, key=lambda r: (r.scores[name] or 0.0, r.task_id, r.trial))
        out[name] = JudgeStats(
            scored=len(recs),
            failed=failed.get(name, 0),
            mean=estimate.value if estimate else None,
            interval=estimate,
            worst=[
                JudgedSample(
                    task_id=r.task_id,
                    trial=r.trial,
                    score=float(r.scores[name] or 0.0),
                    reason=r.judge_reasons.get(name, ""),
                )
                for r in lowest[:WORST_LISTED]
            ],
        )
    return out


def summarize(
    records: Iterable[AnySample], task_meta: dict[str, dict], *, run_id: str, trials: int
) -> Summary:
    """Summarise records. `task_meta` maps task id -> {difficulty, tags} for every planned task."""
    all_recs = list(records)
    by_task: dict[str, list[AnySample]] = defaultdict(list)
    for rec in all_recs:
        by_task[rec.task_id].append(rec)
    phase_values: dict[str, list[float]] = {
        p: [v for r in all_recs if (v := getattr(r.phases, p)) is not None] for p in PHASES
    }
    ks = list(range(1, max(trials, 1) + 1))
    ids = sorted(set(task_meta) | set(by_task))
    stats = [_task_stats(t, task_meta.get(t, {}), by_task.get(t, []), ks) for t in ids]
    by_tag: dict[str, list[TaskStats]] = defaultdict(list)
    by_diff: dict[str, list[TaskStats]] = defaultdict(list)
    for s in stats:
        by_diff[s.difficulty].append(s)
        for tag in s.tags:
            by_tag[tag].append(s)

    scored = [r for r in all_recs if r.outcome is not Outcome.error]
    passes = sum(r.outcome is Outcome.passed for r in scored)
    priced = [r.agent.usage.cost_usd for r in all_recs if r.agent.usage.cost_usd is not None]
    total = sum(priced)
    return Summary(
        run_id=run_id,
        samples=len(all_recs),
        scored=len(scored),
        passes=passes,
        errors=len(all_recs) - len(scored),
        ks=ks,
        overall=_group(stats, ks),
        by_tag={tag: _group(v, ks) for tag, v in sorted(by_tag.items())},
        by_difficulty={d: _group(v, ks) for d, v in sorted(by_diff.items())},
        tasks=stats,
        latency={
            p: LatencyStats(mean=_mean(vals), p50=percentile(vals, 0.5), p95=percentile(vals, 0.95))
            for p, vals in phase_values.items()
        },
        cost=CostStats(
            total_usd=total if priced else None,
            per_sample_usd=total / len(priced) if priced else None,
            per_success_usd=(total / passes) if priced and passes else None,
            priced_samples=len(priced),
            unpriced_samples=len(all_recs) - len(priced),
            cost_equivalent_tokens=sum(r.agent.usage.cost_equivalent_tokens for r in all_recs),
        ),
        error_samples=[
            SampleError(task_id=r.task_id, trial=r.trial, reason=r.reason)
            for r in all_recs
            if r.outcome is Outcome.error
        ],
        judges=judge_stats(all_recs),
    )
