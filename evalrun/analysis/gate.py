"""Threshold profiles: a Summary (and optionally a baseline's) -> an exit code CI can gate on.

A profile (`conf/profile/<name>.yaml`, `profile=<name>`) holds three mappings from metric name to
bound:

```
floors:    {metric: bound}   value must be >= bound            (pass rates)
ceilings:  {metric: bound}   value must be <= bound            (error rate, cost, latency)
max_drop:  {metric: bound}   with `baseline=<run-dir>`: the largest allowed worsening versus
                             that run's summary.json, in the metric's own unit. Worsening is a
                             fall for pass@/pass^ and judge means, a rise for the rest (rates,
                             USD, seconds).
```

A bound is a number, or a mapping that says what is checked against it (`Bound`):

```
floors:   {pass@1: {value: 0.6, on: lower_ci}}    on: estimate (the default), lower_ci or upper_ci
                                                  - the ends of the metric's 95% interval in
                                                  summary.json (suite/tag/difficulty pass metrics)
max_drop: {pass@1: {value: 0.05, significant: true}}   break only when the drop also is
                                                  significant (p < 0.05): a paired sign-flip test
                                                  over the tasks both runs scored, or Fisher's
                                                  exact test for one task (`evalrun.analysis.stats`)
```

Metric names are those of `evalrun.analysis.metric_table` (pass@K, pass^K - K a number or `k`, the
run's
trials - optionally scoped `tag:<tag>:`, `difficulty:<d>:` or `task:<id>:`; flaky_rate,
error_rate, cost_total, cost_per_success, mean/p50/p95_<phase>_s, judge:<name>); anything else is
a `UsageError` at plan time.

An undefined value (pass@3 with 2 trials, no priced sample) breaks a floor - nothing was proven -
but not a ceiling. A tag, difficulty or task the run did not select is *not applicable*: it is
reported as skipped, never as a breach, so one profile serves full runs and slices alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrun.analysis.metric_table import (
    JUDGE,
    MetricRef,
    NotApplicable,
    metric_interval,
    metric_value,
    parse_metric,
)
from evalrun.analysis.stats import ALPHA, fisher_exact
from evalrun.config.schema import ProfileConf
from evalrun.console import styled
from evalrun.errors import ExitCode, UsageError
from evalrun.models.summary import Estimate

if TYPE_CHECKING:  # the summary's models load with the first summary read, not with a profile
    from rich.console import Console

    from evalrun.models.summary import Summary, TaskStats

SECTIONS = ("floors", "ceilings", "max_drop")
CHECKED_ON = ("estimate", "lower_ci", "upper_ci")
EXCUSED = "max_drop not significant"  # a Breach kind: beyond the bound, but noise


def scope_tasks(summary: Summary, ref: MetricRef) -> list[TaskStats]:
    """The tasks a metric is computed over."""
    if ref.scope == "tag":
        return [t for t in summary.tasks if ref.label in t.tags]
    if ref.scope == "difficulty":
        return [t for t in summary.tasks if t.difficulty == ref.label]
    if ref.scope == "task":
        return [t for t in summary.tasks if t.task_id == ref.label]
    return list(summary.tasks)


def drop_significance(summary: Summary, baseline: Summary, ref: MetricRef) -> tuple[float, str]:
    """p-value of the change of a pass metric from `baseline` to `summary`, and how it was
    tested: Fisher's exact test for one task, else the paired sign-flip test over the tasks of
    the metric's scope that both runs scored. p = 1 when nothing can be compared."""
    k = ref.k if ref.k is not None else max(summary.ks, default=1)
    now, before = scope_tasks(summary, ref), scope_tasks(baseline, ref)
    if ref.scope == "task":
        if not (now and before):
            return 1.0, "the task is missing from one run"
        a, b = before[0], now[0]
        return fisher_exact(a.passes, a.n - a.passes, b.passes, b.n - b.passes), "Fisher exact"
    from evalrun.analysis.metrics import paired_change

    change = paired_change(before, now, ref.base, k)
    if change is None or change.p is None:
        return 1.0, "no task scored in both runs"
    return change.p, f"paired over {change.tasks} tasks, {change.changed} changed"


def _shown(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4g}"


@dataclass(frozen=True)
class Breach:
    """One broken threshold: the metric, its value, the bound, and the baseline's value if any."""

    metric: str
    value: float | None
    bound: float
    kind: str  # "floor", "ceiling", "max_drop" or EXCUSED
    baseline: float | None = None
    estimate: Estimate | None = None  # the metric's interval, when it has one
    on: str = "estimate"  # what a floor/ceiling was checked on (`Bound.on`)
    significance: str | None = None  # a max_drop's test, when the bound asked for one

    def __str__(self) -> str:
        base = f"baseline {_shown(self.baseline)}" if self.baseline is not None else "no baseline"
        est = self.estimate
        shown = _shown(self.value)
        if est is not None and est.low is not None and est.high is not None:
            shown += f" (95% CI {est.interval()})"
        if self.kind in ("max_drop", EXCUSED):
            worse = abs((self.value or 0.0) - (self.baseline or 0.0))
            if self.value is None:
                return f"{self.metric} = undefined, {base}: allowed drop {self.bound:g}"
            line = (
                f"{self.metric} = {shown}, {base}: worse by {worse:.4g}, "
                f"allowed drop {self.bound:g}"
            )
            return line + (f"; {self.significance}" if self.significance else "")
        sign = ">=" if self.kind == "floor" else "<="
        if self.on != "estimate":
            end = "lower" if self.on == "lower_ci" else "upper"
            checked = None if est is None else est.low if self.on == "lower_ci" else est.high
            return (
                f"{self.metric} = {shown}: its {end} bound {_shown(checked)}, "
                f"expected {sign} {self.bound:g} ({base})"
            )
        return f"{self.metric} = {shown}, expected {sign} {self.bound:g} ({base})"


@dataclass(frozen=True)
class Bound:
    """One threshold: its value, what a floor/ceiling checks (`on`: the estimate or an end of
    its 95% interval) and whether a max_drop must also be significant."""

    value: float
    on: str = "estimate"
    significant: bool = False


def parse_bound(section: str, ref: MetricRef, raw: object) -> Bound:
    """A profile entry as a `Bound`; `ValueError` saying what is expected."""
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return Bound(float(raw))
    allowed = ("value", "significant") if section == "max_drop" else ("value", "on")
    if not isinstance(raw, Mapping) or not isinstance(raw.get("value"), int | float):
        raise ValueError(f"expected a number or a mapping {{{', '.join(allowed)}}}, got {raw!r}")
    unknown = sorted(set(map(str, raw)) - set(allowed))
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)} (expected {', '.join(allowed)})")
    on, significant = str(raw.get("on", "estimate")), raw.get("significant", False)
    if on not in CHECKED_ON:
        raise ValueError(f"on: expected one of {', '.join(CHECKED_ON)}, got {on!r}")
    if not isinstance(significant, bool):
        raise ValueError(f"significant: expected true or false, got {significant!r}")
    if on != "estimate" and not (ref.is_pass or ref.base == JUDGE):
        raise ValueError(f"{ref.name} has no interval: pass@K / pass^K and judge:<name> do")
    if significant and not ref.is_pass:
        raise ValueError(f"{ref.name} has no significance test: only pass@K / pass^K metrics do")
    if on != "estimate" and ref.scope == "task":
        raise ValueError("task:<id>: metrics carry no interval in summary.json; use a tag")
    return Bound(float(raw["value"]), on, significant)


BoundSpec = float | Mapping[str, Any] | Bound  # a profile entry: a number, a mapping, parsed


@dataclass(frozen=True)
class Baseline:
    """The summary of an earlier run that `max_drop` bounds are measured against."""

    run_dir: Path
    summary: Summary


class ThresholdProfile:
    """Floors, ceilings and (against a baseline) largest allowed drops on summary metrics.

    Built from `conf/profile/<name>.yaml` by Hydra. Every metric name is parsed here, so a typo
    is a `UsageError` naming the section and key before anything runs.
    """

    def __init__(
        self,
        name: str = ProfileConf.name,
        floors: Mapping[str, BoundSpec] | None = None,
        ceilings: Mapping[str, BoundSpec] | None = None,
        max_drop: Mapping[str, BoundSpec] | None = None,
        baseline: Baseline | None = None,
    ):
        self.name = name
        self.baseline = baseline
        self._refs: dict[str, MetricRef] = {}
        parsed: dict[str, dict[str, Bound]] = {}
        for section, given in zip(SECTIONS, (floors, ceilings, max_drop), strict=True):
            parsed[section] = {}
            for key, raw in (given or {}).items():
                try:
                    self._refs[str(key)] = ref = parse_metric(str(key))
                    bound = raw if isinstance(raw, Bound) else parse_bound(section, ref, raw)
                except ValueError as exc:
                    raise UsageError(f"profile {name}: {section}.{key}: {exc}") from None
                if section == "max_drop" and bound.value < 0:
                    raise UsageError(
                        f"profile {name}: max_drop.{key}: expected a bound >= 0, "
                        f"got {bound.value:g}"
                    )
                parsed[section][str(key)] = bound
        self.floors, self.ceilings, self.max_drop = (parsed[s] for s in SECTIONS)

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
        return [b for b in self._verdicts(summary) if b.kind != EXCUSED]

    def excused(self, summary: Summary) -> list[Breach]:
        """Drops beyond their bound that were not failed because the bound asked for a
        significant drop and this one was not (shown so a real regression is not hidden)."""
        return [b for b in self._verdicts(summary) if b.kind == EXCUSED]

    def _verdicts(self, summary: Summary) -> list[Breach]:
        out: list[Breach] = []
        for section in SECTIONS:
            for key, bound in getattr(self, section).items():
                try:
                    value = metric_value(summary, self._refs[key])
                except NotApplicable:
                    continue
                breach = self._judge(section, key, value, bound, summary)
                if breach is not None:
                    out.append(breach)
        return out

    def _judge(
        self, section: str, key: str, value: float | None, bound: Bound, summary: Summary
    ) -> Breach | None:
        ref = self._refs[key]
        baseline = self._baseline_value(key)
        estimate = metric_interval(summary, ref)
        if section in ("floors", "ceilings"):
            checked = value
            if bound.on != "estimate":
                ends = (estimate.low, estimate.high) if estimate else (None, None)
                checked = ends[0] if bound.on == "lower_ci" else ends[1]
            if section == "floors":
                broken = checked is None or checked < bound.value
            else:
                broken = checked is not None and checked > bound.value
            kind = "floor" if section == "floors" else "ceiling"
            breach = Breach(key, value, bound.value, kind, baseline, estimate, bound.on)
            return breach if broken else None
        if baseline is None or self.baseline is None:
            return None  # nothing to measure a drop from
        higher = ref.higher_is_better
        if value is None:
            return Breach(key, value, bound.value, "max_drop", baseline) if higher else None
        worse = baseline - value if higher else value - baseline
        if worse <= bound.value + 1e-12:
            return None
        breach = Breach(key, value, bound.value, "max_drop", baseline, estimate)
        if not bound.significant:
            return breach
        p, how = drop_significance(summary, self.baseline.summary, ref)
        if p < ALPHA:
            return replace(breach, significance=f"significant (p={p:.3g}, {how})")
        return replace(breach, kind=EXCUSED, significance=f"not significant (p={p:.3g}, {how})")

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
        reasons = (
            ("skipped, tag/difficulty/task not in this run", absent),
            ("max_drop not checked, no baseline=<run-dir>", no_baseline),
            ("max_drop not checked, undefined in the baseline", undefined),
        )
        return checked, [f"{why}: {', '.join(keys)}" for why, keys in reasons if keys]


def build_profile(profile_cfg: Any, baseline: Baseline | None = None) -> ThresholdProfile:
    """Instantiate the `profile` config group and attach the baseline run (if any; read by
    `evalrun.rundir.readers.profile_for`)."""
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
    return profile.with_baseline(baseline) if baseline else profile


def print_verdict(profile: ThresholdProfile, summary: Summary, console: Console) -> int:
    """Print one line per broken threshold (and the skipped ones); return the exit code."""
    breaches = profile.check(summary)
    checked, notes = profile.coverage(summary)
    for note in notes:
        console.print(styled("[dim]gate ({}): {}[/]", profile.name, note), soft_wrap=True)
    for breach in profile.excused(summary):
        console.print(
            styled("[yellow]gate ({}): drop beyond its bound, not failed:[/]", profile.name),
            str(breach),
            soft_wrap=True,
        )
    for breach in breaches:
        console.print(
            styled("[red]threshold broken ({}):[/]", profile.name), str(breach), soft_wrap=True
        )
    if checked and not breaches:
        console.print(
            styled("[green]gate ({}): all {} checked thresholds hold[/]", profile.name, checked)
        )
    return ExitCode.FAILED if breaches else ExitCode.OK
