"""summary.json as data: the run's metrics per task, per tag, per difficulty and overall, with
their uncertainty (`Estimate`), latency, cost and judges (docs/summary-schema.md). Computed by
`evalrun.analysis.metrics.summarize`; written by `evalrun.rundir.store`, read by
`evalrun.rundir.log`. Metric names are spelled here once (`pass_metric`)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from evalrun.models.records import RunState, SkippedEntry

PHASES = ("setup", "agent", "verify")
PASS_AT, PASS_HAT = "pass@", "pass^"


def pass_metric(base: str, k: int) -> str:
    """The name of a pass metric - `pass@3`, `pass^3` - as the gate, diff and reports spell it."""
    return f"{base}{k}"


@dataclass(frozen=True)
class Estimate:
    """A figure with its uncertainty: `value` +- about `half_width`, 95% interval [low, high].

    `se` and the bounds are None when they cannot be estimated (fewer than two tasks with
    several trials each: one task says nothing about how tasks differ)."""

    value: float
    se: float | None
    low: float | None
    high: float | None
    method: str
    tasks: int

    @property
    def half_width(self) -> float | None:
        """Half the interval's width: the "+-" shown beside the figure (the interval itself may
        be asymmetric near 0 and 1; `low`/`high` are exact)."""
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2

    def plus_minus(self, digits: int = 2, value_digits: int | None = None) -> str:
        """`0.62 ± 0.11`; `1.00 [0.21, 1.00]` when the interval is lopsided (near 0 or 1, a
        symmetric ± would read as "up to 1.40"); the bare value when there is no interval.
        `value_digits` (default `digits`) for the value alone."""
        shown = f"{self.value:.{digits if value_digits is None else value_digits}f}"
        half = self.half_width
        if half is None or self.low is None or self.high is None:
            return shown
        if abs((self.value - self.low) - (self.high - self.value)) > 10**-digits:
            return f"{shown} {self.interval(digits)}"
        return f"{shown} ± {half:.{digits}f}"

    def interval(self, digits: int = 2) -> str:
        """`[0.41, 0.80]`, or `no interval`."""
        if self.low is None or self.high is None:
            return "no interval"
        return f"[{self.low:.{digits}f}, {self.high:.{digits}f}]"


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

    def value(self, base: str, k: int) -> float | None:
        return (self.pass_at if base == PASS_AT else self.pass_hat).get(k)


class GroupStats(BaseModel):
    tasks: int
    pass_at: dict[int, float | None]
    pass_hat: dict[int, float | None]
    flaky_tasks: int
    # metric name (`pass_metric`) -> its estimate, standard error and 95% interval; a metric
    # that is undefined for every task of the group has no entry
    intervals: dict[str, Estimate] = Field(default_factory=dict)

    def interval(self, base: str, k: int) -> Estimate | None:
        return self.intervals.get(pass_metric(PASS_AT if k == 1 else base, k))  # pass^1 = pass@1

    def value(self, base: str, k: int) -> float | None:
        return (self.pass_at if base == PASS_AT else self.pass_hat).get(k)


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


class JudgedSample(BaseModel):
    task_id: str
    trial: int
    score: float
    reason: str


class JudgeStats(BaseModel):
    """One judge over the run: its mean score with a 95% interval, and its lowest scores."""

    scored: int  # samples with a score
    failed: int  # judgements that produced no score (the reason is on the sample)
    mean: float | None  # macro mean over tasks of each task's mean score (the gate's judge:<name>)
    interval: Estimate | None = None  # `stats.task_mean` over the per-task means
    worst: list[JudgedSample] = Field(default_factory=list)


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
    judges: dict[str, JudgeStats] = Field(default_factory=dict)
    # complete, or partial N/M with the missing cells (`evalrun.models.records.run_state`),
    # filled by `RunLog`, which reads the plan; None in a summary computed from records alone
    state: RunState | None = None
    # the suite's tasks that did not run, as plan.json lists them (filled by `RunLog` likewise)
    skipped: list[SkippedEntry] = Field(default_factory=list)
