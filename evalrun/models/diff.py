"""The comparison of two runs, as data: what `evalrun.analysis.diff.diff_runs` returns, what
`evalrun diff --json` prints (`RunDiff.to_json`), and what `evalrun.report.diff_terminal` and
`evalrun.report.diff_html` lay out.

```
RunDiff
  a, b                        DiffSide: the run directory as given, its run id and state
  verdict                     the diff in one line (pass@1 a → b, its change and significance)
  k                           the largest trial count both runs have (pass@k, pass^k)
  config                      ConfigChanges: resolved config keys changed / added / removed
  config_not_result_relevant  the changed keys that cannot change a result
  tasks                       TaskSetDiff: ids only in b / only in a / with a new fingerprint,
                              and one TaskRow per task both runs scored
  metrics                     metric name -> MetricDelta (the metric table's headline names)
  significance                the paired change of pass@1 over the shared tasks
```

A key missing from the JSON is a field left unset: `paired` on a metric that cannot be paired
over tasks, and the figures of a `PairedChange` when no task was scored by both runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

Figure = float | int | None
"""A metric's value: None when it is undefined (pass@3 with 2 trials, no priced sample)."""


class DiffSide(BaseModel):
    """One of the two runs."""

    label: str
    """The run directory as given on the command line."""
    run_id: str
    state: str | None
    """`complete` or `partial N/M (missing cells: ...)`; None when the summary has no state."""


class ValuePair(BaseModel):
    """A config key's value in run a and in run b."""

    a: Any
    b: Any


class ConfigChanges(BaseModel):
    """The resolved configs compared as dotted keys (`evalrun.analysis.configdiff`), after
    the config group options chosen (`agent: oracle -> noop`)."""

    options: dict[str, ValuePair] = {}
    """Config groups whose chosen option differs (from each run's plan.json)."""
    suite: dict[str, ValuePair] = {}
    """What a suite given by reference resolved to, where the runs differ (`registry`,
    `commit <url>[#sub]`: commit a -> commit b; None on a side that did not use it), from
    each run's plan.json provenance (`evalrun.models.plan.TasksSource.facts`)."""
    changed: dict[str, ValuePair]
    added: dict[str, Any]
    """Keys only in run b, with b's value."""
    removed: dict[str, Any]
    """Keys only in run a, with a's value."""


class TaskSignificance(BaseModel):
    """A task's pass-rate change: a two-sided Fisher exact test on (passes, fails) x (a, b)."""

    test: str
    p: float
    significant: bool
    note: str
    """`no change`, or `significant (Fisher p=...)` / `noise (Fisher p=...)`."""


class RowIndex(BaseModel):
    """The task's position in each run's summary: its anchor `#t-<n>` in that run's report."""

    a: int
    b: int


class TaskRow(BaseModel):
    """One task both runs scored."""

    task_id: str
    fingerprint_changed: bool
    """The same id graded by a different task: not the same measurement."""
    a: dict[str, Figure]
    """pass@1, pass@k, pass^k, passes, n, cost_usd and latency_s in run a."""
    b: dict[str, Figure]
    delta: dict[str, Figure]
    """b - a for each figure (None when either side is undefined)."""
    significance: TaskSignificance
    index: RowIndex


class TaskSetDiff(BaseModel):
    """The task sets of the two plans."""

    added: list[str]
    """Ids only in run b."""
    removed: list[str]
    """Ids only in run a."""
    changed: list[str]
    """Ids in both whose content fingerprint differs."""
    rows: list[TaskRow]


class PairedChange(BaseModel):
    """The mean per-task change b - a of a pass metric over the shared tasks
    (`evalrun.analysis.stats.Difference`), with its 95% interval and sign-flip p-value."""

    metric: str
    mean_delta: float | None = None
    se: float | None = None
    ci95: tuple[float, float] | None = None
    p: float | None = None
    tasks: int
    """Tasks scored by both runs (0: the figures before and after this one are unset)."""
    changed_tasks: int | None = None
    interval: str | None = None
    test: str | None = None
    significant: bool | None = None
    note: str
    """The change in one line: its size, interval, p and whether it is significant."""


class MetricDelta(BaseModel):
    """One headline metric in both runs."""

    a: Figure
    b: Figure
    delta: Figure
    higher_is_better: bool
    paired: PairedChange | None = None
    """Set for pass@1, pass@k and pass^k: the change paired over the shared tasks."""


class RunDiff(BaseModel):
    """`evalrun diff <run-a> <run-b>`: see the module docstring."""

    a: DiffSide
    b: DiffSide
    verdict: str
    k: int
    config: ConfigChanges
    config_not_result_relevant: list[str]
    tasks: TaskSetDiff
    metrics: dict[str, MetricDelta]
    significance: PairedChange

    def to_json(self) -> dict[str, Any]:
        """The `--json` output: every field that was set (see the module docstring)."""
        return self.model_dump(mode="json", exclude_unset=True)
