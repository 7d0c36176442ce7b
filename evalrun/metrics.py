"""pass@k, pass^k, flakiness, latency and cost - per task, per tag, per difficulty, overall.

Per task with n scored trials and c passes (errors are not scored):
  pass@k = 1 - C(n-c, k) / C(n, k)   unbiased estimator (Chen et al. 2021); None when n < k
  pass^k = C(c, k) / C(n, k)         all k tries pass (Yao et al. 2024); None when n < k
  flaky  = 0 < c < n
Suite and group values are macro means over the tasks for which the value is defined.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from evalrun.records import Outcome, SampleDigest, SampleRecord

AnySample = SampleRecord | SampleDigest

PHASES = ("setup", "agent", "verify")


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


class TaskStats(BaseModel):
    task_id: str
    difficulty: str
    tags: list[str]
    trials: int  # samples recorded, errors included
    n: int  # scored samples (pass + fail)
    passes: int
    errors: int
    pass_at: dict[int, float | None]
    pass_hat: dict[int, float | None]
    flaky: bool
    mean_latency_s: float | None
    cost_usd: float | None


class GroupStats(BaseModel):
    tasks: int
    pass_at: dict[int, float | None]
    pass_hat: dict[int, float | None]
    flaky_tasks: int


class LatencyStats(BaseModel):
    mean: float | None
    p50: float | None
    p95: float | None


class CostStats(BaseModel):
    total_usd: float | None
    per_sample_usd: float | None
    per_success_usd: float | None
    priced_samples: int
    unpriced_samples: int
    # fresh input x1 + cache write x1.25 + cache read x0.1 + output x5, over every sample
    cost_equivalent_tokens: float = 0.0


class SampleError(BaseModel):
    task_id: str
    trial: int
    reason: str | None


class Summary(BaseModel):
    schema_version: int = 1
    run_id: str
    samples: int
    scored: int
    passes: int
    errors: int
    ks: list[int]
    overall: GroupStats
    by_tag: dict[str, GroupStats]
    by_difficulty: dict[str, GroupStats]
    tasks: list[TaskStats]
    latency: dict[str, LatencyStats]
    cost: CostStats
    error_samples: list[SampleError] = Field(default_factory=list)


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


def _group(stats: list[TaskStats], ks: list[int]) -> GroupStats:
    return GroupStats(
        tasks=len(stats),
        pass_at={k: _mean(s.pass_at[k] for s in stats) for k in ks},
        pass_hat={k: _mean(s.pass_hat[k] for s in stats) for k in ks},
        flaky_tasks=sum(s.flaky for s in stats),
    )


def summarize(
    records: Iterable[AnySample], task_meta: dict[str, dict], *, run_id: str, trials: int
) -> Summary:
    """Summarise records. `task_meta` maps task id -> {difficulty, tags} for every planned task."""
    by_task: dict[str, list[AnySample]] = defaultdict(list)
    phase_values: dict[str, list[float]] = {p: [] for p in PHASES}
    all_recs: list[AnySample] = []
    for rec in records:
        by_task[rec.task_id].append(rec)
        all_recs.append(rec)
        for phase in PHASES:
            value = getattr(rec.phases, phase)
            if value is not None:
                phase_values[phase].append(value)
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
    total_cost = sum(priced) if priced else None
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
            total_usd=total_cost,
            per_sample_usd=total_cost / len(priced) if priced else None,
            per_success_usd=(total_cost / passes) if priced and passes else None,
            priced_samples=len(priced),
            unpriced_samples=len(all_recs) - len(priced),
            cost_equivalent_tokens=sum(r.agent.usage.cost_equivalent_tokens for r in all_recs),
        ),
        error_samples=[
            SampleError(task_id=r.task_id, trial=r.trial, reason=r.reason)
            for r in all_recs
            if r.outcome is Outcome.error
        ],
    )
