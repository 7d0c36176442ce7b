"""Threshold profiles: turn a Summary into an exit code a CI job can gate on."""

from __future__ import annotations

from dataclasses import dataclass

from evalrun.metrics import Summary


@dataclass(frozen=True)
class Breach:
    metric: str
    value: float | None
    bound: float
    kind: str  # "floor" or "ceiling"

    def __str__(self) -> str:
        shown = "undefined" if self.value is None else f"{self.value:.4g}"
        sign = ">=" if self.kind == "floor" else "<="
        return f"{self.metric} = {shown}, expected {sign} {self.bound:g}"


def metric_value(summary: Summary, name: str) -> float | None:
    """Look up a gateable metric by name: pass@K, pass^K, error_rate, cost_per_success,
    p95_agent_s, tag:<tag>:pass@K, difficulty:<d>:pass@K."""
    group = summary.overall
    if name.startswith(("tag:", "difficulty:")):
        kind, label, name = name.split(":", 2)
        groups = summary.by_tag if kind == "tag" else summary.by_difficulty
        if label not in groups:
            return None
        group = groups[label]
    if name.startswith("pass@"):
        return group.pass_at.get(int(name[5:]))
    if name.startswith("pass^"):
        return group.pass_hat.get(int(name[5:]))
    if name == "error_rate":
        return summary.errors / summary.samples if summary.samples else None
    if name == "cost_per_success":
        return summary.cost.per_success_usd
    if name == "p95_agent_s":
        return summary.latency["agent"].p95
    raise KeyError(name)


class ThresholdProfile:
    """Floors (value must be >= bound) and ceilings (value must be <= bound) on summary metrics.

    An undefined value breaks a floor (nothing proven) but not a ceiling (nothing exceeded).
    """

    def __init__(self, name: str = "none", floors=None, ceilings=None):
        self.name = name
        self.floors = dict(floors or {})
        self.ceilings = dict(ceilings or {})

    def metric_names(self) -> list[str]:
        return [*self.floors, *self.ceilings]

    def check(self, summary: Summary) -> list[Breach]:
        breaches = []
        for metric, bound in self.floors.items():
            value = metric_value(summary, metric)
            if value is None or value < bound:
                breaches.append(Breach(metric, value, bound, "floor"))
        for metric, bound in self.ceilings.items():
            value = metric_value(summary, metric)
            if value is not None and value > bound:
                breaches.append(Breach(metric, value, bound, "ceiling"))
        return breaches
