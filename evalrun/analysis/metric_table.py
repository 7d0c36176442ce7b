"""The headline metrics of a run, each named once, with its definition and the way it is read.

The threshold profiles (`evalrun gate`), `evalrun diff`, the sweep summary, the Opik experiment
scores and the reports all call a metric by the name in this table and read its value (and its
95% interval, where it has one) through `metric_value` / `metric_interval`:

```
name                 definition                                                     better
pass@K               macro mean over tasks of 1 - C(n-c, K) / C(n, K)                higher
pass^K               macro mean over tasks of C(c, K) / C(n, K)                      higher
                     (K a number, or `k` = the run's trials; n scored trials, c passes)
flaky_rate           tasks with some but not all scored trials passing / tasks       lower
error_rate           samples that ended in a harness error / all samples            lower
cost_total           USD over the samples whose cost is known                       lower
cost_per_success     cost_total / passing samples (USD)                             lower
mean_<phase>_s       mean seconds of a phase (setup, agent, verify) over samples     lower
p50_<phase>_s        median seconds of a phase                                      lower
p95_<phase>_s        95th percentile seconds of a phase                             lower
judge:<name>         macro mean over tasks of the LLM judge's mean score (0-1)       higher
```

pass@K and pass^K may be scoped: `tag:<tag>:pass@1`, `difficulty:<d>:pass^k`, `task:<id>:pass@3`.
pass metrics (suite, tag, difficulty) and judge means carry a 95% interval
(`evalrun.analysis.stats`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalrun.models.summary import PASS_AT, PASS_HAT, PHASES, pass_metric

if TYPE_CHECKING:  # the summary's models are built when a summary is read, not at start-up
    from evalrun.models.summary import Estimate, GroupStats, Summary


@dataclass(frozen=True)
class Metric:
    """One metric that is not a pass@K / pass^K / judge family member."""

    name: str
    unit: str  # "rate", "USD" or "s"
    read: Callable[[Summary], float | None]
    higher_is_better: bool = False


def _latency(phase: str, stat: str) -> Metric:
    def read(summary: Summary) -> float | None:
        stats = summary.latency.get(phase)
        return getattr(stats, stat) if stats is not None else None

    return Metric(f"{stat}_{phase}_s", "s", read)


def _flaky_rate(summary: Summary) -> float | None:
    overall = summary.overall
    return overall.flaky_tasks / overall.tasks if overall.tasks else None


def _error_rate(summary: Summary) -> float | None:
    return summary.errors / summary.samples if summary.samples else None


FIXED: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric("flaky_rate", "rate", _flaky_rate),
        Metric("error_rate", "rate", _error_rate),
        Metric("cost_total", "USD", lambda s: s.cost.total_usd),
        Metric("cost_per_success", "USD", lambda s: s.cost.per_success_usd),
        *(_latency(phase, stat) for phase in PHASES for stat in ("mean", "p50", "p95")),
    ]
}
JUDGE = "judge"

_PASS = re.compile(r"^(pass[@^])(\d+|k)$")
_SCOPED = re.compile(r"^(tag|difficulty|task):([^:]+):(.+)$")
_JUDGE = re.compile(r"^judge:(.+)$")  # a score name may hold ":" (expect:<name>)


@dataclass(frozen=True)
class MetricRef:
    """A parsed metric name: an optional scope (tag/difficulty/task + label) and a base metric:
    `pass@`, `pass^`, `judge` or the name of a `FIXED` metric."""

    name: str
    base: str
    k: int | None = None  # None with a pass metric: the run's trial count (`k`)
    scope: str | None = None
    label: str | None = None

    @property
    def is_pass(self) -> bool:
        return self.base in (PASS_AT, PASS_HAT)

    @property
    def higher_is_better(self) -> bool:
        return self.is_pass or self.base == JUDGE or FIXED[self.base].higher_is_better

    @property
    def has_interval(self) -> bool:
        """Suite, tag and difficulty pass metrics and judge means carry a 95% interval."""
        return (self.is_pass and self.scope != "task") or self.base == JUDGE


def parse_metric(name: str) -> MetricRef:
    """Parse a metric name; `ValueError` saying what is expected when it is not one."""
    judge = _JUDGE.match(name)
    if judge:
        return MetricRef(name, JUDGE, label=judge.group(1))
    scope = label = None
    base_name = name
    scoped = _SCOPED.match(name)
    if scoped:
        scope, label, base_name = scoped.groups()
    passing = _PASS.match(base_name)
    if passing:
        kind, k = passing.groups()
        k_value = None if k == "k" else int(k)
        if k_value == 0:
            raise ValueError(f"{name!r}: K must be at least 1")
        return MetricRef(name, kind, k_value, scope, label)
    if base_name in FIXED and scope is None:
        return MetricRef(name, base_name)
    raise ValueError(
        f"unknown metric {name!r} (expected pass@K, pass^K - K a number or k - optionally as "
        "tag:<tag>:, difficulty:<d>: or task:<id>:<metric>; judge:<name>; "
        f"or one of {', '.join(FIXED)})"
    )


class NotApplicable(Exception):
    """The metric's tag, difficulty, task or judge is not in this run."""


def _k(summary: Summary, ref: MetricRef) -> int:
    return ref.k if ref.k is not None else max(summary.ks, default=1)


def _group(summary: Summary, ref: MetricRef) -> GroupStats:
    """The suite, or the tag / difficulty group a scoped pass metric is over."""
    if ref.scope is None:
        return summary.overall
    groups = summary.by_tag if ref.scope == "tag" else summary.by_difficulty
    group = groups.get(str(ref.label))
    if group is None:
        raise NotApplicable(f"{ref.scope} {ref.label!r} is not in this run")
    return group


def metric_value(summary: Summary, metric: MetricRef | str) -> float | None:
    """The metric's value in `summary` (None: undefined, e.g. pass@3 with 2 trials).

    Raises `NotApplicable` when its tag, difficulty, task or judge is not in the run."""
    ref = parse_metric(metric) if isinstance(metric, str) else metric
    if ref.base == JUDGE:
        judge = summary.judges.get(str(ref.label))
        if judge is None:
            raise NotApplicable(f"judge {ref.label!r} is not in this run")
        return judge.mean
    if not ref.is_pass:
        return FIXED[ref.base].read(summary)
    k = _k(summary, ref)
    if ref.scope == "task":
        task = next((t for t in summary.tasks if t.task_id == ref.label), None)
        if task is None:
            raise NotApplicable(f"task {ref.label!r} is not in this run")
        return task.value(ref.base, k)
    return _group(summary, ref).value(ref.base, k)


def metric_interval(summary: Summary, metric: MetricRef | str) -> Estimate | None:
    """The 95% interval of a suite, tag or difficulty pass metric, or of a judge's mean (None
    when it has none, or when its group or judge is not in the run)."""
    ref = parse_metric(metric) if isinstance(metric, str) else metric
    if not ref.has_interval:
        return None
    if ref.base == JUDGE:
        judge = summary.judges.get(str(ref.label))
        return judge.interval if judge is not None else None
    try:
        return _group(summary, ref).interval(ref.base, _k(summary, ref))
    except NotApplicable:
        return None


def headline_names(summary: Summary, k: int | None = None) -> list[str]:
    """The headline metrics of a run, in report order: pass@1, pass@k and pass^k (k = the
    run's trials, or `k`), flaky and error rates, cost, agent latency, then each judge."""
    k = max(summary.ks, default=1) if k is None else k
    passes = dict.fromkeys([pass_metric(PASS_AT, 1), pass_metric(PASS_AT, k)])
    passes[pass_metric(PASS_HAT, k)] = None
    fixed = ["flaky_rate", "error_rate", "cost_total", "cost_per_success"]
    latency = ["mean_agent_s", "p95_agent_s"]
    return [*passes, *fixed, *latency, *(f"judge:{name}" for name in summary.judges)]


def headline(summary: Summary, k: int | None = None) -> dict[str, float | None]:
    """`headline_names` with their values in `summary` (None: undefined)."""
    return {name: metric_value(summary, name) for name in headline_names(summary, k)}
