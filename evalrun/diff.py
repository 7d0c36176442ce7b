"""`evalrun diff <run-a> <run-b>`: did the change between two runs make the agent better or worse?

Three comparisons, all read from the run directories (config.yaml, plan.json, summary.json):

- the resolved configs, as dotted keys changed / added / removed (`evalrun.configdiff`);
  keys that cannot change a result (`NOT_RESULT_RELEVANT`) are marked as such;
- the task sets from plan.json: ids only in a, only in b, and ids whose content fingerprint
  changed (the same id graded by a different task is not the same measurement);
- metric deltas per task and for the suite: pass@1, pass@k, pass^k (k = the largest trial count
  both runs have), cost and latency.

Significance. A pass-rate delta on a handful of trials is mostly noise, so every pass-rate change
carries a note:

- per task: a two-sided Fisher exact test on the 2x2 table (passes, fails) x (run a, run b).
  It is exact for the small trial counts evals have (a normal approximation is not), needs no
  assumption beyond independent trials, and is computed here with `math.comb` in integers. The
  p-value sums the probabilities of every table with the same margins that is no more likely than
  the observed one. With 5 trials a side, only a 5/5 -> 0/5 swing reaches p < 0.05.
- for the suite: a paired bootstrap over the tasks both runs share - resample tasks with
  replacement, average each task's pass-rate change (b - a), repeat - giving a 95% percentile
  interval for the suite's macro pass@1 change. Resampling tasks rather than pooling samples
  respects that suite pass@1 is a mean over tasks and that tasks differ in difficulty; pooling
  every sample into one Fisher test would treat 100 trials of one easy task like 100 tasks and
  overstate certainty. The resampling is seeded, so the same two runs always give the same
  interval. A change is called significant when the interval excludes 0.

`diff_runs` returns a plain dict (the `--json` output, and the input of the HTML page in
`evalrun.report.diff_html`); `render` prints it with rich.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from evalrun.configdiff import NOT_RESULT_RELEVANT, diff
from evalrun.errors import UsageError
from evalrun.gate import read_summary
from evalrun.metrics import Summary, TaskStats
from evalrun.store import CONFIG_FILE, PLAN_FILE

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 5000
BOOTSTRAP_SEED = 0
IGNORED_CONFIG_KEYS = ("run_dir",)  # always differs between two runs; says nothing


@dataclass(frozen=True)
class RunSide:
    """One of the two runs, as read from its directory."""

    run_dir: Path
    config: dict[str, Any]
    fingerprints: dict[str, str]  # task id -> fingerprint, from plan.json
    summary: Summary


def load_side(run_dir: str | Path) -> RunSide:
    """Read a finished run directory; `UsageError` naming the missing or unreadable file."""
    path = Path(run_dir).expanduser()
    for name in (CONFIG_FILE, PLAN_FILE):
        if not (path / name).is_file():
            raise UsageError(f"diff: {path / name} not found (expected a run directory)")
    try:
        config = yaml.safe_load((path / CONFIG_FILE).read_text(encoding="utf-8")) or {}
        plan = json.loads((path / PLAN_FILE).read_text(encoding="utf-8"))
        tasks = {str(t["id"]): str(t.get("fingerprint", "")) for t in plan.get("tasks", [])}
    except (yaml.YAMLError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"diff: {path} holds an unreadable config.yaml or plan.json: {exc}"
        ) from exc
    return RunSide(path, config, tasks, read_summary(path, "diff"))


# --- significance ----------------------------------------------------------------------------
def fisher_exact(pass_a: int, fail_a: int, pass_b: int, fail_b: int) -> float:
    """Two-sided Fisher exact p-value of the 2x2 table [[pass_a, fail_a], [pass_b, fail_b]]."""
    row_a, row_b = pass_a + fail_a, pass_b + fail_b
    passes = pass_a + pass_b
    if row_a == 0 or row_b == 0 or passes in (0, row_a + row_b):
        return 1.0  # no information: an empty side, or every sample agrees

    def weight(x: int) -> int:  # tables with x passes in run a, margins fixed (integer numerator)
        return math.comb(row_a, x) * math.comb(row_b, passes - x)

    observed = weight(pass_a)
    lo, hi = max(0, passes - row_b), min(row_a, passes)
    tail = sum(w for w in (weight(x) for x in range(lo, hi + 1)) if w <= observed)
    return min(1.0, tail / math.comb(row_a + row_b, passes))


def bootstrap_interval(
    deltas: list[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """95% percentile interval of the mean of `deltas`, resampling them with replacement."""
    rng = random.Random(seed)
    n = len(deltas)
    means = sorted(sum(rng.choices(deltas, k=n)) / n for _ in range(resamples))
    return means[int(0.025 * (resamples - 1))], means[int(0.975 * (resamples - 1))]


def _rate(task: TaskStats) -> float | None:
    return task.passes / task.n if task.n else None


def task_significance(a: TaskStats, b: TaskStats) -> dict[str, Any]:
    p = fisher_exact(a.passes, a.n - a.passes, b.passes, b.n - b.passes)
    significant = p < ALPHA and a.passes * b.n != b.passes * a.n
    note = f"significant (Fisher p={p:.3g})" if significant else f"noise (Fisher p={p:.3g})"
    if a.passes * b.n == b.passes * a.n:
        note = "no change"
    return {"test": "fisher-exact", "p": p, "significant": significant, "note": note}


def suite_significance(pairs: list[tuple[TaskStats, TaskStats]]) -> dict[str, Any]:
    """Paired bootstrap over shared tasks of the change in per-task pass rate."""
    deltas = [
        rb - ra for a, b in pairs if (ra := _rate(a)) is not None and (rb := _rate(b)) is not None
    ]
    if not deltas:
        return {"test": "bootstrap-over-tasks", "tasks": 0, "note": "no task scored in both runs"}
    mean = sum(deltas) / len(deltas)
    lo, hi = bootstrap_interval(deltas)
    significant = lo > 0 or hi < 0
    if not any(deltas):
        note = "no change"
    elif significant:
        note = f"significant: 95% CI [{lo:+.3f}, {hi:+.3f}] excludes 0"
    else:
        note = f"noise: 95% CI [{lo:+.3f}, {hi:+.3f}] includes 0"
    if any(deltas) and len(deltas) < 5:
        note += f" (only {len(deltas)} shared tasks: a rough interval)"
    return {
        "test": "bootstrap-over-tasks",
        "tasks": len(deltas),
        "mean_delta": mean,
        "ci95": [lo, hi],
        "significant": significant,
        "note": note,
    }


# --- the diff --------------------------------------------------------------------------------
def _task_metrics(task: TaskStats, k: int) -> dict[str, Any]:
    out: dict[str, Any] = {"pass@1": task.pass_at.get(1)}
    if k > 1:
        out[f"pass@{k}"] = task.pass_at.get(k)
    out[f"pass^{k}"] = task.pass_hat.get(k)
    out.update(passes=task.passes, n=task.n, cost_usd=task.cost_usd, latency_s=task.mean_latency_s)
    return out


def _suite_metrics(s: Summary, k: int) -> dict[str, float | None]:
    agent = s.latency.get("agent")
    out: dict[str, float | None] = {"pass@1": s.overall.pass_at.get(1)}
    if k > 1:
        out[f"pass@{k}"] = s.overall.pass_at.get(k)
    out[f"pass^{k}"] = s.overall.pass_hat.get(k)
    out.update(
        {
            "flaky_tasks": float(s.overall.flaky_tasks),
            "error_rate": s.errors / s.samples if s.samples else None,
            "cost.total_usd": s.cost.total_usd,
            "cost.per_success_usd": s.cost.per_success_usd,
            "latency.agent.mean_s": agent.mean if agent else None,
            "latency.agent.p95_s": agent.p95 if agent else None,
        }
    )
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
            }
        )
    suite_a, suite_b = _suite_metrics(a.summary, k), _suite_metrics(b.summary, k)
    metrics = {
        name: {
            "a": suite_a[name],
            "b": suite_b[name],
            "delta": _delta(suite_a[name], suite_b[name]),
            "higher_is_better": name.startswith("pass"),
        }
        for name in suite_a
    }
    return {
        "a": {"label": str(a.run_dir), "run_id": a.summary.run_id},
        "b": {"label": str(b.run_dir), "run_id": b.summary.run_id},
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
        "significance": suite_significance(pairs),
    }


def flat_keys(config_json: dict[str, Any]) -> list[str]:
    return [key for part in ("changed", "added", "removed") for key in config_json[part]]


def _not_result_relevant(key: str) -> bool:
    return any(key == p or key.startswith(p + ".") for p in NOT_RESULT_RELEVANT)


# --- terminal --------------------------------------------------------------------------------
def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _fmt_delta(name: str, delta: float | None, higher_is_better: bool) -> str:
    if delta is None:
        return "-"
    if delta == 0:
        return "0"
    better = (delta > 0) == higher_is_better
    colour = "green" if better else "red"
    return f"[{colour}]{delta:+.4g}[/]"


def render(result: dict[str, Any], console: Console) -> None:
    """Print the comparison: config, task set, suite metrics, then the tasks that moved."""
    console.print(f"[bold]a[/] {result['a']['label']}\n[bold]b[/] {result['b']['label']}")
    config = result["config"]
    quiet = set(result["config_not_result_relevant"])
    if any(config[p] for p in ("changed", "added", "removed")):
        table = Table(title="Config (resolved, dotted keys)", header_style="bold")
        for column in ("key", "a", "b"):
            table.add_column(column, overflow="fold")
        for key, pair in config["changed"].items():
            table.add_row(_key(key, quiet), _fmt(pair["a"]), _fmt(pair["b"]))
        for key, value in config["added"].items():
            table.add_row(_key(key, quiet), "[dim](absent)[/]", _fmt(value))
        for key, value in config["removed"].items():
            table.add_row(_key(key, quiet), _fmt(value), "[dim](absent)[/]")
        console.print(table)
    else:
        console.print("config: identical")
    tasks = result["tasks"]
    for label, ids in (("only in b", tasks["added"]), ("only in a", tasks["removed"])):
        if ids:
            console.print(f"tasks {label}: {', '.join(ids)}", highlight=False)
    if tasks["changed"]:
        console.print(
            f"[yellow]tasks whose content changed (fingerprint differs):[/] "
            f"{', '.join(tasks['changed'])}",
            highlight=False,
        )
    table = Table(title="Suite", header_style="bold")
    for column in ("metric", "a", "b", "Δ"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for name, entry in result["metrics"].items():
        delta = _fmt_delta(name, entry["delta"], entry["higher_is_better"])
        table.add_row(name, _fmt(entry["a"]), _fmt(entry["b"]), delta)
    console.print(table)
    console.print(f"suite pass rate: {result['significance']['note']}", highlight=False)
    moved = [r for r in tasks["rows"] if r["delta"]["pass@1"] or r["fingerprint_changed"]]
    if not moved:
        console.print(f"per task: no pass@1 change on {len(tasks['rows'])} shared tasks")
        return
    table = Table(title="Tasks whose pass@1 moved", header_style="bold")
    for column in ("task", "passes a", "passes b", "Δ pass@1", "significance"):
        table.add_column(column)
    for row in moved:
        a, b = row["a"], row["b"]
        name = row["task_id"] + (" [yellow](changed)[/]" if row["fingerprint_changed"] else "")
        table.add_row(
            name,
            f"{a['passes']}/{a['n']}",
            f"{b['passes']}/{b['n']}",
            _fmt_delta("pass@1", row["delta"]["pass@1"], True),
            row["significance"]["note"],
        )
    console.print(table)


def _key(key: str, quiet: set[str]) -> str:
    return f"{key} [dim](does not affect results)[/]" if key in quiet else key


def diff_command(args: list[str], console: Console) -> int:
    """`evalrun diff <run-a> <run-b> [--json] [--html <path>]`; exit 0 (a diff is not a gate)."""
    usage = "usage: evalrun diff <run-a> <run-b> [--json] [--html PATH]"
    as_json, html, runs = False, None, []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            console.print(usage, highlight=False)
            return 0
        if arg == "--json":
            as_json = True
        elif arg == "--html":
            if not rest:
                raise UsageError(f"--html needs a path ({usage})")
            html = rest.pop(0)
        elif arg.startswith("-"):
            raise UsageError(f"unknown option {arg!r} ({usage})")
        else:
            runs.append(arg)
    if len(runs) != 2:
        raise UsageError(f"expected two run directories, got {len(runs)} ({usage})")
    result = diff_runs(*runs)
    if as_json:
        print(json.dumps(result, indent=2, default=str))
    else:
        render(result, console)
    if html:
        from evalrun.report.diff_html import render_diff_html

        Path(html).write_text(render_diff_html(result), encoding="utf-8")
        if not as_json:
            console.print(f"html: {html}", highlight=False)
    return 0
