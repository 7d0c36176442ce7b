"""The comparison behind `evalrun diff <run-a> <run-b>`: did the change between two runs make the
agent better or worse?

Three comparisons, all read from the run directories (config.yaml, plan.json, summary.json):

- the resolved configs, as dotted keys changed / added / removed (`evalrun.analysis.configdiff`);
  keys that cannot change a result (`NOT_RESULT_RELEVANT`) are marked as such; for a suite given
  by reference, what it resolved to (the same `tasks_dir=...@main` may be two commits);
- the task sets from plan.json: ids only in a, only in b, and ids whose content fingerprint
  changed (the same id graded by a different task is not the same measurement);
- metric deltas per task (pass@1, pass@k, pass^k, cost, latency) and for the suite: the headline
  metrics of `evalrun.analysis.metric_table` (k = the largest trial count both runs have).

Significance. A pass-rate delta on a handful of tasks and trials is mostly noise, so every
pass-rate change carries a note, computed by `evalrun.analysis.stats` (the same module that puts
error
bars on the summary):

- per task: a two-sided Fisher exact test on the 2x2 table (passes, fails) x (run a, run b),
  exact for the small trial counts evals have. With 5 trials a side, only a 5/5 -> 0/5 swing
  reaches p < 0.05.
- for the suite (pass@1, pass@k, pass^k): a paired difference over the tasks both runs scored -
  the mean per-task change b - a, its standard error clustered by task, a Student t 95%
  interval, and a sign-flip p-value (exact up to 16 tasks that changed). Pairing by task removes
  the task-to-task spread in difficulty from the comparison; pooling every sample would treat
  100 trials of one easy task like 100 tasks and overstate certainty. A change is called
  significant at p < 0.05. With fewer than 6 tasks that changed no p can get below 0.05, and
  the note says so.

`diff_runs` returns a `RunDiff` (`evalrun.models.diff`): the `--json` output, and what
`evalrun.report.diff_terminal` prints and `evalrun.report.diff_html` lays out as a page. The
figures are rounded here (`fmt_value`, `fmt_change`), so the one-line verdict and both reports
read alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalrun.analysis.configdiff import NOT_RESULT_RELEVANT, diff, under
from evalrun.analysis.metric_table import headline, parse_metric
from evalrun.analysis.metrics import paired_change
from evalrun.analysis.stats import (
    ALPHA,
    FISHER_EXACT,
    PAIRED_T,
    SIGN_FLIP,
    Difference,
    fisher_exact,
)
from evalrun.models.diff import (
    ConfigChanges,
    DiffSide,
    Figure,
    MetricDelta,
    PairedChange,
    RowIndex,
    RunDiff,
    TaskRow,
    TaskSetDiff,
    TaskSignificance,
    ValuePair,
)
from evalrun.models.summary import PASS_AT, PASS_HAT, Summary, TaskStats, pass_metric

MIN_TASKS_FOR_SIGNIFICANCE = 6  # the smallest sign-flip p over m changed tasks is 2 / 2^m
IGNORED_CONFIG_KEYS = ("run_dir",)  # always differs between two runs; says nothing


@dataclass(frozen=True)
class RunSide:
    """One of the two runs, as read from its directory (`evalrun.rundir.readers.read_side`)."""

    run_dir: Path
    config: dict[str, Any]
    fingerprints: dict[str, str]  # task id -> fingerprint, from plan.json
    summary: Summary
    choices: dict[str, str] = field(default_factory=dict)  # config group -> option, plan.json
    suite: dict[str, str] = field(default_factory=dict)  # TasksSource.facts() (a reference)


# --- significance ----------------------------------------------------------------------------
def task_significance(a: TaskStats, b: TaskStats) -> TaskSignificance:
    p = fisher_exact(a.passes, a.n - a.passes, b.passes, b.n - b.passes)
    unchanged = a.passes * b.n == b.passes * a.n
    significant = p < ALPHA and not unchanged
    verdict = "significant" if significant else "noise"
    note = "no change" if unchanged else f"{verdict} (Fisher p={p:.3g})"
    return TaskSignificance(test=FISHER_EXACT, p=p, significant=significant, note=note)


def change_note(change: Difference | None) -> str:
    """One line on a paired suite change: its size, 95% interval, p and the verdict."""
    if change is None:
        return "no task scored in both runs"
    if change.changed == 0:
        return "no change"
    verdict = "significant" if change.significant else "noise"
    interval = "" if change.low is None else f", 95% CI [{change.low:+.3f}, {change.high:+.3f}]"
    note = (
        f"{verdict}: {change.mean:+.3f}{interval}, p={change.p:.3g} "
        f"(paired over {change.tasks} tasks, {change.changed} changed)"
    )
    if change.changed < MIN_TASKS_FOR_SIGNIFICANCE:
        note += f"; with fewer than {MIN_TASKS_FOR_SIGNIFICANCE} changed tasks p cannot reach 0.05"
    return note


def suite_significance(
    pairs: list[tuple[TaskStats, TaskStats]], base: str = PASS_AT, k: int = 1
) -> PairedChange:
    """The paired change of a pass metric over the shared tasks, with a `note`."""
    change = paired_change([a for a, _ in pairs], [b for _, b in pairs], base, k)
    metric, note = pass_metric(base, k), change_note(change)
    if change is None:
        return PairedChange(metric=metric, tasks=0, note=note)
    return PairedChange(
        metric=metric,
        mean_delta=change.mean,
        se=change.se,
        ci95=None if change.low is None or change.high is None else (change.low, change.high),
        p=change.p,
        tasks=change.tasks,
        changed_tasks=change.changed,
        interval=PAIRED_T,
        test=f"{SIGN_FLIP}-{'exact' if change.exact else 'monte-carlo'}",
        significant=change.significant,
        note=note,
    )


# --- the diff --------------------------------------------------------------------------------
def _task_metrics(task: TaskStats, k: int) -> dict[str, Figure]:
    out: dict[str, Figure] = {pass_metric(PASS_AT, 1): task.pass_at.get(1)}
    if k > 1:
        out[pass_metric(PASS_AT, k)] = task.pass_at.get(k)
    out[pass_metric(PASS_HAT, k)] = task.pass_hat.get(k)
    out.update(passes=task.passes, n=task.n, cost_usd=task.cost_usd, latency_s=task.mean_latency_s)
    return out


def _delta(a: Figure, b: Figure) -> float | None:
    return b - a if a is not None and b is not None else None


def diff_runs(a: RunSide, b: RunSide) -> RunDiff:
    """The whole comparison (`evalrun.models.diff.RunDiff`); the sides are read by
    `evalrun.rundir.readers.read_side`."""
    config = diff(a.config, b.config, ignore=IGNORED_CONFIG_KEYS)
    ids_a, ids_b = set(a.fingerprints), set(b.fingerprints)
    shared = sorted(ids_a & ids_b)
    k = max(1, min(max(a.summary.ks, default=1), max(b.summary.ks, default=1)))
    stats_a = {t.task_id: t for t in a.summary.tasks}
    stats_b = {t.task_id: t for t in b.summary.tasks}
    index_a = {t.task_id: i for i, t in enumerate(a.summary.tasks)}
    index_b = {t.task_id: i for i, t in enumerate(b.summary.tasks)}
    rows, pairs = [], []
    for task_id in shared:
        ta, tb = stats_a.get(task_id), stats_b.get(task_id)
        if ta is None or tb is None:
            continue
        pairs.append((ta, tb))
        row_a, row_b = _task_metrics(ta, k), _task_metrics(tb, k)
        rows.append(
            TaskRow(
                task_id=task_id,
                fingerprint_changed=a.fingerprints[task_id] != b.fingerprints[task_id],
                a=row_a,
                b=row_b,
                delta={m: _delta(row_a[m], row_b[m]) for m in row_a},
                significance=task_significance(ta, tb),
                index=RowIndex(a=index_a[task_id], b=index_b[task_id]),
            )
        )
    suite_a, suite_b = headline(a.summary, k), headline(b.summary, k)
    metrics = {
        name: MetricDelta(
            a=suite_a.get(name),
            b=suite_b.get(name),
            delta=_delta(suite_a.get(name), suite_b.get(name)),
            higher_is_better=parse_metric(name).higher_is_better,
        )
        for name in dict.fromkeys([*suite_a, *suite_b])  # a judge may be on one side only
    }
    paired = {
        pass_metric(base, kk): suite_significance(pairs, base, kk)
        for base, kk in dict.fromkeys([(PASS_AT, 1), (PASS_AT, k), (PASS_HAT, k)])
    }
    for name, change in paired.items():
        if name in metrics:
            metrics[name].paired = change
    changes = ConfigChanges(
        options=_differing(a.choices, b.choices),
        suite=_differing(a.suite, b.suite),
        changed={key: ValuePair(a=va, b=vb) for key, (va, vb) in sorted(config.changed.items())},
        added=dict(sorted(config.added.items())),
        removed=dict(sorted(config.removed.items())),
    )
    return RunDiff(
        a=_side(a),
        b=_side(b),
        verdict=verdict_line(pass_metric(PASS_AT, 1), metrics.get(pass_metric(PASS_AT, 1))),
        k=k,
        config=changes,
        config_not_result_relevant=sorted(
            key
            for key in [*changes.changed, *changes.added, *changes.removed]
            if under(key, NOT_RESULT_RELEVANT)
        ),
        tasks=TaskSetDiff(
            added=sorted(ids_b - ids_a),
            removed=sorted(ids_a - ids_b),
            changed=[t for t in shared if a.fingerprints[t] != b.fingerprints[t]],
            rows=rows,
        ),
        metrics=metrics,
        significance=paired[pass_metric(PASS_AT, 1)],
    )


def _differing(a: dict[str, str], b: dict[str, str]) -> dict[str, ValuePair]:
    """The keys (sorted) whose values differ between two mappings, with both values."""
    return {
        key: ValuePair(a=a.get(key), b=b.get(key))
        for key in sorted(set(a) | set(b))
        if a.get(key) != b.get(key)
    }


def _side(side: RunSide) -> DiffSide:
    """`state`: `complete` or `partial N/M (missing cells: ...)`; None for a side that cannot
    tell."""
    state = side.summary.state
    return DiffSide(
        label=str(side.run_dir),
        run_id=side.summary.run_id,
        state=state.describe() if state is not None else None,
    )


def partial_warnings(result: RunDiff) -> list[str]:
    """One line per side that is partial: its numbers cover only the cells it recorded."""
    return [
        f"warning: run {name} ({side.label}) is {side.state}: its metrics cover only "
        "the recorded cells"
        for name, side in (("a", result.a), ("b", result.b))
        if side.state and side.state != "complete"
    ]


# --- figures, rounded the way each kind of metric is read ---------------------------------------
def metric_kind(name: str) -> str:
    """rate (0..1, 2 decimals), usd, seconds, count or other: the metric table's unit for its
    metrics (`evalrun.analysis.metric_table`), else read from the name (a task row's `cost_usd`,
    ...)."""
    from evalrun.analysis.metric_table import FIXED

    if name in FIXED:
        return {"rate": "rate", "USD": "usd", "s": "seconds"}.get(FIXED[name].unit, "other")
    lowered = name.lower()
    if lowered.startswith(("pass@", "pass^", "judge:")) or lowered.endswith("_rate"):
        return "rate"
    if "usd" in lowered or lowered.startswith("cost"):
        return "usd"
    if lowered.endswith("_s") or "latency" in lowered:
        return "seconds"
    if lowered in ("passes", "n", "flaky_tasks", "samples", "errors"):
        return "count"
    return "other"


def fmt_value(name: str, value: Any) -> str:
    """`0.62`, `$0.0123`, `4.21s`, `3` - never a raw float such as 0.007076."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    kind = metric_kind(name)
    if kind == "rate":
        return f"{value:.2f}"
    if kind == "usd":
        return f"${value:.4f}" if abs(value) < 1 else f"${value:,.2f}"
    if kind == "seconds":
        return f"{value:.2f}s"
    if kind == "count":
        return f"{value:.0f}"
    return f"{value:.3g}"


def fmt_change(name: str, delta: float | None) -> str:
    """A delta with its sign, rounded like its metric (`+0.09`, `-$0.0040`, `+1.20s`)."""
    if delta is None:
        return "-"
    if delta == 0:
        return "0"
    shown = fmt_value(name, abs(delta))
    if not any(c in "123456789" for c in shown):  # rounds to zero: no sign to show
        return shown
    return ("+" if delta > 0 else "-") + shown


def significance_text(paired: PairedChange | None) -> str:
    """`p=0.03, significant` / `p=0.52, noise` / `` - for a delta's column."""
    if paired is None or paired.p is None:
        return ""
    if paired.changed_tasks == 0:
        return "no change"
    verdict = "significant" if paired.significant else "noise"
    return f"p={paired.p:.2g}, {verdict}"


def task_significance_text(significance: TaskSignificance) -> str:
    """`p=0.03, significant` / `p=0.52, noise` / `no change` - a task row's Fisher test."""
    if significance.note == "no change":
        return "no change"
    return f"p={significance.p:.2g}, {'significant' if significance.significant else 'noise'}"


def verdict_line(name: str, entry: MetricDelta | None) -> str:
    """The diff in one line: `pass@1 0.62 → 0.71 (+0.09, p=0.03, significant)`."""
    if entry is None:
        return f"{name}: not in both runs"
    a, b = entry.a, entry.b
    head = f"{name} {fmt_value(name, a)} → {fmt_value(name, b)}"
    paired = entry.paired
    if a is None or b is None:
        return head
    if paired is None or not paired.tasks:
        return f"{head} (no task scored in both runs)"
    if not paired.changed_tasks:
        return f"{head} (no change on {paired.tasks} shared tasks)"
    change = fmt_change(name, paired.mean_delta)
    return f"{head} ({change}, {significance_text(paired)})"
