"""`evalrun diff <run-a> <run-b>`: did the change between two runs make the agent better or worse?

Three comparisons, all read from the run directories (config.yaml, plan.json, summary.json):

- the resolved configs, as dotted keys changed / added / removed (`evalrun.analysis.configdiff`);
  keys that cannot change a result (`NOT_RESULT_RELEVANT`) are marked as such;
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

`diff_runs` returns a plain dict (the `--json` output, and the input of the HTML page in
`evalrun.report.diff_html`); `render` prints it with rich.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalrun.analysis.configdiff import NOT_RESULT_RELEVANT, diff
from evalrun.analysis.metric_table import PASS_AT, PASS_HAT, headline, parse_metric, pass_metric
from evalrun.analysis.metrics import Summary, TaskStats, paired_change
from evalrun.analysis.stats import ALPHA, FISHER_EXACT, Difference, fisher_exact
from evalrun.cli.arguments import CommandParser
from evalrun.console import make_console, styled
from evalrun.errors import UsageError
from evalrun.rundir.log import RunLog

MIN_TASKS_FOR_SIGNIFICANCE = 6  # the smallest sign-flip p over m changed tasks is 2 / 2^m
IGNORED_CONFIG_KEYS = ("run_dir",)  # always differs between two runs; says nothing


@dataclass(frozen=True)
class RunSide:
    """One of the two runs, as read from its directory."""

    run_dir: Path
    config: dict[str, Any]
    fingerprints: dict[str, str]  # task id -> fingerprint, from plan.json
    summary: Summary


def load_side(run_dir: str | Path) -> RunSide:
    """Read a run directory that ended (`RunLog`); `UsageError` naming what is missing."""
    try:
        run = RunLog.open(run_dir, ended=True)
    except UsageError as exc:
        raise UsageError(f"diff: {exc}") from exc
    fingerprints = {t.id: t.fingerprint for t in run.plan.tasks}
    return RunSide(run.run_dir, run.config, fingerprints, run.summary())


# --- significance ----------------------------------------------------------------------------
def task_significance(a: TaskStats, b: TaskStats) -> dict[str, Any]:
    p = fisher_exact(a.passes, a.n - a.passes, b.passes, b.n - b.passes)
    unchanged = a.passes * b.n == b.passes * a.n
    significant = p < ALPHA and not unchanged
    note = f"significant (Fisher p={p:.3g})" if significant else f"noise (Fisher p={p:.3g})"
    if unchanged:
        note = "no change"
    return {"test": FISHER_EXACT, "p": p, "significant": significant, "note": note}


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
) -> dict[str, Any]:
    """The paired change of a pass metric over the shared tasks, as JSON with a `note`."""
    change = paired_change([a for a, _ in pairs], [b for _, b in pairs], base, k)
    out: dict[str, Any] = {"metric": pass_metric(base, k)}
    out.update(change.to_json() if change else {"tasks": 0})
    out["note"] = change_note(change)
    return out


# --- the diff --------------------------------------------------------------------------------
def _task_metrics(task: TaskStats, k: int) -> dict[str, Any]:
    out: dict[str, Any] = {pass_metric(PASS_AT, 1): task.pass_at.get(1)}
    if k > 1:
        out[pass_metric(PASS_AT, k)] = task.pass_at.get(k)
    out[pass_metric(PASS_HAT, k)] = task.pass_hat.get(k)
    out.update(passes=task.passes, n=task.n, cost_usd=task.cost_usd, latency_s=task.mean_latency_s)
    return out


def _delta(a: Any, b: Any) -> float | None:
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))
    return b - a if numbers else None


def diff_runs(run_a: str | Path, run_b: str | Path) -> dict[str, Any]:
    """The whole comparison as a JSON-ready dict (shape documented in `report.diff_html`)."""
    a, b = load_side(run_a), load_side(run_b)
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
            {
                "task_id": task_id,
                "fingerprint_changed": a.fingerprints[task_id] != b.fingerprints[task_id],
                "a": row_a,
                "b": row_b,
                "delta": {m: _delta(row_a[m], row_b[m]) for m in row_a},
                "significance": task_significance(ta, tb),
                "index": {"a": index_a[task_id], "b": index_b[task_id]},  # report.html #t-<n>
            }
        )
    suite_a, suite_b = headline(a.summary, k), headline(b.summary, k)
    metrics: dict[str, dict[str, Any]] = {
        name: {
            "a": suite_a.get(name),
            "b": suite_b.get(name),
            "delta": _delta(suite_a.get(name), suite_b.get(name)),
            "higher_is_better": parse_metric(name).higher_is_better,
        }
        for name in dict.fromkeys([*suite_a, *suite_b])  # a judge may be on one side only
    }
    for base, kk in dict.fromkeys([(PASS_AT, 1), (PASS_AT, k), (PASS_HAT, k)]):
        if pass_metric(base, kk) in metrics:
            metrics[pass_metric(base, kk)]["paired"] = suite_significance(pairs, base, kk)
    return {
        "a": {"label": str(a.run_dir), "run_id": a.summary.run_id, "state": _state(a.summary)},
        "b": {"label": str(b.run_dir), "run_id": b.summary.run_id, "state": _state(b.summary)},
        "verdict": verdict_line(pass_metric(PASS_AT, 1), metrics.get(pass_metric(PASS_AT, 1))),
        "k": k,
        "config": config.to_json(),
        "config_not_result_relevant": sorted(
            key for key in flat_keys(config.to_json()) if _not_result_relevant(key)
        ),
        "tasks": {
            "added": sorted(ids_b - ids_a),
            "removed": sorted(ids_a - ids_b),
            "changed": [t for t in shared if a.fingerprints[t] != b.fingerprints[t]],
            "rows": rows,
        },
        "metrics": metrics,
        "significance": metrics[pass_metric(PASS_AT, 1)]["paired"],
    }


def _state(summary: Summary) -> str | None:
    """`complete` or `partial N/M (missing cells: ...)`; None for a side that cannot tell."""
    return summary.state.describe() if summary.state is not None else None


def partial_warnings(result: dict[str, Any]) -> list[str]:
    """One line per side that is partial: its numbers cover only the cells it recorded."""
    return [
        f"warning: run {side} ({result[side]['label']}) is {state}: its metrics cover only "
        "the recorded cells"
        for side in ("a", "b")
        if (state := result[side].get("state")) and state != "complete"
    ]


def flat_keys(config_json: dict[str, Any]) -> list[str]:
    return [key for part in ("changed", "added", "removed") for key in config_json[part]]


def _not_result_relevant(key: str) -> bool:
    return any(key == p or key.startswith(p + ".") for p in NOT_RESULT_RELEVANT)


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


def significance_text(paired: dict[str, Any] | None) -> str:
    """`p=0.03, significant` / `p=0.52, noise` / `` - for a delta's column."""
    if not paired or paired.get("p") is None:
        return ""
    if paired.get("changed_tasks") == 0:
        return "no change"
    verdict = "significant" if paired.get("significant") else "noise"
    return f"p={paired['p']:.2g}, {verdict}"


def verdict_line(name: str, entry: dict[str, Any] | None) -> str:
    """The diff in one line: `pass@1 0.62 → 0.71 (+0.09, p=0.03, significant)`."""
    if not entry:
        return f"{name}: not in both runs"
    a, b = entry.get("a"), entry.get("b")
    head = f"{name} {fmt_value(name, a)} → {fmt_value(name, b)}"
    paired = entry.get("paired") or {}
    if a is None or b is None:
        return head
    if not paired.get("tasks"):
        return f"{head} (no task scored in both runs)"
    if not paired.get("changed_tasks"):
        return f"{head} (no change on {paired['tasks']} shared tasks)"
    change = fmt_change(name, paired.get("mean_delta"))
    return f"{head} ({change}, {significance_text(paired)})"


# --- terminal --------------------------------------------------------------------------------
def _fmt_delta(name: str, delta: float | None, higher_is_better: bool) -> str | Text:
    if delta is None:
        return "-"
    if delta == 0:
        return "0"
    better = (delta > 0) == higher_is_better
    return styled("[green]{}[/]" if better else "[red]{}[/]", fmt_change(name, delta))


def render(result: dict[str, Any], console: Console) -> None:
    """Print the comparison: the verdict, config, task set, suite metrics, then the tasks that
    moved."""
    console.print(
        styled("[bold]a[/] {}\n[bold]b[/] {}", result["a"]["label"], result["b"]["label"])
    )
    console.print(styled("[bold]{}[/]", result["verdict"]), soft_wrap=True)
    for line in partial_warnings(result):
        console.print(styled("[yellow]{}[/]", line), soft_wrap=True)
    config = result["config"]
    quiet = set(result["config_not_result_relevant"])
    if any(config[p] for p in ("changed", "added", "removed")):
        table = Table(title="Config (resolved, dotted keys)", header_style="bold")
        for column in ("key", "a", "b"):
            table.add_column(column, overflow="fold")
        for key, pair in config["changed"].items():
            table.add_row(_key(key, quiet), _plain(pair["a"]), _plain(pair["b"]))
        for key, value in config["added"].items():
            table.add_row(_key(key, quiet), styled("[dim](absent)[/]"), _plain(value))
        for key, value in config["removed"].items():
            table.add_row(_key(key, quiet), _plain(value), styled("[dim](absent)[/]"))
        console.print(table)
    else:
        console.print("config: identical")
    tasks = result["tasks"]
    for label, ids in (("only in b", tasks["added"]), ("only in a", tasks["removed"])):
        if ids:
            console.print(f"tasks {label}: {', '.join(ids)}", highlight=False)
    if tasks["changed"]:
        console.print(
            styled("[yellow]tasks whose content changed (fingerprint differs):[/]"),
            ", ".join(tasks["changed"]),
        )
    table = Table(title="Suite", header_style="bold")
    for column in ("metric", "a", "b", "Δ", "significance (paired over shared tasks)"):
        table.add_column(column, justify="left" if column in ("metric",) else "right")
    for name, entry in result["metrics"].items():
        delta = _fmt_delta(name, entry["delta"], entry["higher_is_better"])
        table.add_row(
            name,
            fmt_value(name, entry["a"]),
            fmt_value(name, entry["b"]),
            delta,
            _paired_cell(name, entry),
        )
    console.print(table)
    console.print(styled("[dim]pass@1 over shared tasks: {}[/]", result["significance"]["note"]))
    moved = [r for r in tasks["rows"] if r["delta"]["pass@1"] or r["fingerprint_changed"]]
    if not moved:
        console.print(f"per task: no pass@1 change on {len(tasks['rows'])} shared tasks")
        return
    table = Table(title="Tasks whose pass@1 moved", header_style="bold")
    for column in ("task", "passes a", "passes b", "Δ pass@1", "significance"):
        table.add_column(column)
    for row in moved:
        a, b = row["a"], row["b"]
        name = styled(
            "{} [yellow](changed)[/]" if row["fingerprint_changed"] else "{}", row["task_id"]
        )
        sig = row["significance"]
        table.add_row(
            name,
            f"{a['passes']}/{a['n']}",
            f"{b['passes']}/{b['n']}",
            _fmt_delta("pass@1", row["delta"]["pass@1"], True),
            "no change"
            if sig["note"] == "no change"
            else f"p={sig['p']:.2g}, {'significant' if sig['significant'] else 'noise'}",
        )
    console.print(table)


def _plain(value: Any) -> str:
    return "-" if value is None else str(value)


def _paired_cell(name: str, entry: dict[str, Any]) -> str | Text:
    """The paired change over the shared tasks: `-0.25 [-0.40, -0.10] p=0.008, significant`."""
    paired = entry.get("paired")
    if not paired or "mean_delta" not in paired:
        return ""
    text = significance_text(paired)
    if paired.get("ci95") and paired.get("changed_tasks") != 0:
        low, high = paired["ci95"]
        text = f"{fmt_change(name, paired['mean_delta'])} [{low:+.2f}, {high:+.2f}] {text}"
    return styled("[bold]{}[/]" if paired["significant"] else "{}", text)


def _key(key: str, quiet: set[str]) -> Text:
    return styled("{} [dim](does not affect results)[/]" if key in quiet else "{}", key)


def diff_command(args: list[str], console: Console) -> int:
    """`evalrun diff <run-a> <run-b> [--json] [--html <path>]`; exit 0 (a diff is not a gate)."""
    parser = CommandParser("diff", "Config, task-set and metric differences of two runs.")
    parser.add_argument("run_a", metavar="<run-a>", help="the run before the change")
    parser.add_argument("run_b", metavar="<run-b>", help="the run after it")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--html", metavar="PATH", help="also write the comparison as a page")
    options = parser.parse(args)
    as_json, html = options.json, options.html
    result = diff_runs(options.run_a, options.run_b)
    if as_json:
        print(json.dumps(result, indent=2, default=str))
        for line in partial_warnings(result):  # on stderr, so the JSON stays parseable
            make_console(stderr=True).print(line, soft_wrap=True)
    else:
        render(result, console)
    if html:
        from evalrun.report.diff_html import render_diff_html

        Path(html).write_text(render_diff_html(result, Path(html).parent), encoding="utf-8")
        if not as_json:
            console.print(f"html: {html}", highlight=False)
    return 0
