"""Threshold profiles: a Summary (and optionally a baseline's) -> an exit code CI can gate on.

A profile (`conf/profile/<name>.yaml`, `profile=<name>`) holds three mappings from metric name to
bound:

```
floors:    {metric: bound}   value must be >= bound            (pass rates)
ceilings:  {metric: bound}   value must be <= bound            (error rate, cost, latency)
max_drop:  {metric: bound}   with `baseline=<run-dir>`: the largest allowed worsening versus
                             that run's summary.json, in the metric's own unit. Worsening is a
                             fall for pass@/pass^ and a rise for error_rate, cost_per_success
                             (USD) and p95_agent_s (seconds).
```

Metric names (`parse_metric` is the grammar; anything else is a `UsageError` at plan time):

```
pass@K  pass^K                   suite macro means; K is a number or `k` (= the run's trials)
tag:<tag>:pass@K                 the same over the tasks carrying <tag>
difficulty:<d>:pass@K            ... of one difficulty
task:<id>:pass@K                 one task (or one probe: probes are tasks to the metrics)
error_rate                       error samples / all samples
cost_per_success                 USD per passing sample
p95_agent_s                      95th percentile of the agent phase, seconds
```

An undefined value (pass@3 with 2 trials, no priced sample) breaks a floor - nothing was proven -
but not a ceiling. A tag, difficulty or task the run did not select is *not applicable*: it is
reported as skipped, never as a breach, so one profile serves full runs and slices alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from evalrun.errors import UsageError
from evalrun.metrics import GroupStats, Summary
from evalrun.store import SUMMARY_FILE

_PASS = re.compile(r"^(pass[@^])(\d+|k)$")
_SCOPED = re.compile(r"^(tag|difficulty|task):([^:]+):(.+)$")
LOWER_IS_BETTER = ("error_rate", "cost_per_success", "p95_agent_s")
SECTIONS = ("floors", "ceilings", "max_drop")


@dataclass(frozen=True)
class MetricRef:
    """A parsed metric name: an optional scope (tag/difficulty/task + label) and a base metric."""

    name: str
    base: str  # "pass@", "pass^" or one of LOWER_IS_BETTER
    k: int | None = None  # None with a pass metric: the run's trial count (`k`)
    scope: str | None = None
    label: str | None = None

    @property
    def higher_is_better(self) -> bool:
        return self.base.startswith("pass")


def parse_metric(name: str) -> MetricRef:
    """Parse a metric name; `ValueError` saying what is expected when it is not one."""
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
    if base_name in LOWER_IS_BETTER and scope is None:
        return MetricRef(name, base_name)
    raise ValueError(
        f"unknown metric {name!r} (expected pass@K, pass^K - K a number or k - optionally as "
        "tag:<tag>:, difficulty:<d>: or task:<id>:<metric>; "
        f"or one of {', '.join(LOWER_IS_BETTER)})"
    )


class NotApplicable(Exception):
    """The metric's tag, difficulty or task is not in this run."""


def metric_value(summary: Summary, metric: MetricRef | str) -> float | None:
    """The metric's value in `summary` (None: undefined).

    Raises `NotApplicable` when its tag, difficulty or task is not in the run."""
    ref = parse_metric(metric) if isinstance(metric, str) else metric
    if ref.base == "error_rate":
        return summary.errors / summary.samples if summary.samples else None
    if ref.base == "cost_per_success":
        return summary.cost.per_success_usd
    if ref.base == "p95_agent_s":
        agent = summary.latency.get("agent")
        return agent.p95 if agent else None
    k = ref.k if ref.k is not None else max(summary.ks, default=1)
    stats: GroupStats | None
    if ref.scope is None:
        stats = summary.overall
    elif ref.scope == "task":
        task = next((t for t in summary.tasks if t.task_id == ref.label), None)
        if task is None:
            raise NotApplicable(f"task {ref.label!r} is not in this run")
        table = task.pass_at if ref.base == "pass@" else task.pass_hat
        return table.get(k)
    else:
        groups = summary.by_tag if ref.scope == "tag" else summary.by_difficulty
        stats = groups.get(str(ref.label))
        if stats is None:
            raise NotApplicable(f"{ref.scope} {ref.label!r} is not in this run")
    table = stats.pass_at if ref.base == "pass@" else stats.pass_hat
    return table.get(k)


def _shown(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4g}"


@dataclass(frozen=True)
class Breach:
    """One broken threshold: the metric, its value, the bound, and the baseline's value if any."""

    metric: str
    value: float | None
    bound: float
    kind: str  # "floor", "ceiling" or "max_drop"
    baseline: float | None = None

    def __str__(self) -> str:
        base = f"baseline {_shown(self.baseline)}" if self.baseline is not None else "no baseline"
        if self.kind == "max_drop":
            worse = abs((self.value or 0.0) - (self.baseline or 0.0))
            if self.value is None:
                return f"{self.metric} = undefined, {base}: allowed drop {self.bound:g}"
            return (
                f"{self.metric} = {_shown(self.value)}, {base}: worse by {worse:.4g}, "
                f"allowed drop {self.bound:g}"
            )
        sign = ">=" if self.kind == "floor" else "<="
        return f"{self.metric} = {_shown(self.value)}, expected {sign} {self.bound:g} ({base})"


@dataclass(frozen=True)
class Baseline:
    """The summary of an earlier run that `max_drop` bounds are measured against."""

    run_dir: Path
    summary: Summary


def read_summary(run_dir: str | Path, role: str) -> Summary:
    """Read `<run_dir>/summary.json`; `UsageError` naming `role` and the path when it is missing
    or unreadable."""
    path = Path(run_dir).expanduser() / SUMMARY_FILE
    if not path.is_file():
        raise UsageError(f"{role}: {path} not found (expected a finished run directory)")
    try:
        return Summary.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        raise UsageError(f"{role}: {path} is not a readable run summary: {exc}") from exc


def load_baseline(run_dir: str | Path) -> Baseline:
    return Baseline(Path(run_dir), read_summary(run_dir, "baseline"))


class ThresholdProfile:
    """Floors, ceilings and (against a baseline) largest allowed drops on summary metrics.

    Built from `conf/profile/<name>.yaml` by Hydra. Every metric name is parsed here, so a typo
    is a `UsageError` naming the section and key before anything runs.
    """

    def __init__(
        self,
        name: str = "none",
        floors: Mapping[str, float] | None = None,
        ceilings: Mapping[str, float] | None = None,
        max_drop: Mapping[str, float] | None = None,
        baseline: Baseline | None = None,
    ):
        self.name = name
        self.floors = {str(k): float(v) for k, v in (floors or {}).items()}
        self.ceilings = {str(k): float(v) for k, v in (ceilings or {}).items()}
        self.max_drop = {str(k): float(v) for k, v in (max_drop or {}).items()}
        self.baseline = baseline
        self._refs: dict[str, MetricRef] = {}
        for section in SECTIONS:
            for key, bound in getattr(self, section).items():
                try:
                    self._refs[key] = parse_metric(key)
                except ValueError as exc:
                    raise UsageError(f"profile {name}: {section}.{key}: {exc}") from None
                if section == "max_drop" and bound < 0:
                    raise UsageError(
                        f"profile {name}: max_drop.{key}: expected a bound >= 0, got {bound:g}"
                    )

    def with_baseline(self, baseline: Baseline | None) -> ThresholdProfile:
        """This profile, measuring `max_drop` against `baseline`."""
        return ThresholdProfile(self.name, self.floors, self.ceilings, self.max_drop, baseline)

    def metric_names(self) -> list[str]:
        return list(dict.fromkeys([*self.floors, *self.ceilings, *self.max_drop]))

    def _baseline_value(self, key: str) -> float | None:
        if self.baseline is None:
            return None
        try:
            return metric_value(self.baseline.summary, self._refs[key])
        except NotApplicable:
            return None

    def check(self, summary: Summary) -> list[Breach]:
        """Every broken threshold, in profile order (floors, ceilings, then drops)."""
        breaches: list[Breach] = []
        for section in SECTIONS:
            for key, bound in getattr(self, section).items():
                try:
                    value = metric_value(summary, self._refs[key])
                except NotApplicable:
                    continue
                breach = self._judge(section, key, value, bound)
                if breach is not None:
                    breaches.append(breach)
        return breaches

    def _judge(self, section: str, key: str, value: float | None, bound: float) -> Breach | None:
        baseline = self._baseline_value(key)
        if section == "floors":
            broken = value is None or value < bound
            return Breach(key, value, bound, "floor", baseline) if broken else None
        if section == "ceilings":
            broken = value is not None and value > bound
            return Breach(key, value, bound, "ceiling", baseline) if broken else None
        if baseline is None:
            return None  # nothing to measure a drop from
        higher = self._refs[key].higher_is_better
        if value is None:
            return Breach(key, value, bound, "max_drop", baseline) if higher else None
        worse = baseline - value if higher else value - baseline
        return Breach(key, value, bound, "max_drop", baseline) if worse > bound + 1e-12 else None

    def coverage(self, summary: Summary) -> tuple[int, list[str]]:
        """How many thresholds were checked, and one note per reason some were not."""
        checked = 0
        absent: list[str] = []
        no_baseline: list[str] = []
        undefined: list[str] = []
        for section in SECTIONS:
            for key in getattr(self, section):
                try:
                    metric_value(summary, self._refs[key])
                except NotApplicable:
                    absent.append(f"{section}.{key}")
                    continue
                if section != "max_drop":
                    checked += 1
                elif self.baseline is None:
                    no_baseline.append(key)
                elif self._baseline_value(key) is None:
                    undefined.append(key)
                else:
                    checked += 1
        notes = []
        if absent:
            notes.append(f"skipped, tag/difficulty/task not in this run: {', '.join(absent)}")
        if no_baseline:
            notes.append(f"max_drop not checked, no baseline=<run-dir>: {', '.join(no_baseline)}")
        if undefined:
            notes.append(f"max_drop not checked, undefined in the baseline: {', '.join(undefined)}")
        return checked, notes


def build_profile(profile_cfg, baseline: str | None) -> ThresholdProfile:
    """Instantiate the `profile` config group and attach the baseline run (if any)."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        profile = instantiate(profile_cfg, _convert_="all")
    except InstantiationException as exc:
        if isinstance(exc.__cause__, UsageError):
            raise exc.__cause__ from None
        raise UsageError(f"profile: could not build {profile_cfg.get('_target_')}: {exc}") from exc
    if not isinstance(profile, ThresholdProfile):
        raise UsageError(f"profile: {profile_cfg.get('_target_')} is not a ThresholdProfile")
    return profile.with_baseline(load_baseline(baseline)) if baseline else profile


def print_verdict(profile: ThresholdProfile, summary: Summary, console) -> int:
    """Print one line per broken threshold (and the skipped ones); return the exit code."""
    breaches = profile.check(summary)
    checked, notes = profile.coverage(summary)
    for note in notes:
        console.print(f"[dim]gate ({profile.name}): {note}[/]", highlight=False, soft_wrap=True)
    for breach in breaches:
        console.print(
            f"[red]threshold broken ({profile.name}):[/] {breach}", highlight=False, soft_wrap=True
        )
    if checked and not breaches:
        console.print(f"[green]gate ({profile.name}): all {checked} checked thresholds hold[/]")
    return 1 if breaches else 0


def gate_command(args: list[str], compose, console) -> int:
    """`evalrun gate <run-dir> [profile=<name>] [baseline=<run-dir>] [overrides]`.

    Gates a finished run from its summary.json without running anything. `compose` turns
    overrides into the composed config (the CLI's `compose_config`).
    """
    run_dirs = [a for a in args if "=" not in a]
    if len(run_dirs) != 1:
        raise UsageError(
            "usage: evalrun gate <run-dir> profile=<name> [baseline=<run-dir>]"
            f" (expected one run directory, got {len(run_dirs)})"
        )
    cfg = compose([a for a in args if "=" in a])
    run_dir = Path(run_dirs[0]).expanduser()
    profile = build_profile(cfg.profile, cfg.baseline)
    summary = read_summary(run_dir, "gate")
    console.print(f"gating {run_dir} with profile={profile.name}", highlight=False)
    return print_verdict(profile, summary, console)
