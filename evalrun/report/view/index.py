"""The index page of `evalrun view`: every run under a folder in one table, a trend of a chosen
metric across them, and two runs picked to open their diff.

It is built from `evalrun.report.listing.list_runs` - the rows `evalrun ls` prints, read from
each run's plan.json, config.yaml and summary.json and the first line of samples.jsonl - so the
index of hundreds of runs never reads their samples (bench/view_index.py measures it); a run's
own page and a diff are built only when opened (`evalrun.report.view.site`).

Every value on the page is autoescaped by the template (run folders, agent and model names and
reasons come from the runs, which the agents under test shaped); the trend plots come from
`evalrun.report.svg`, which escapes its labels.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from markupsafe import Markup

from evalrun.models.summary import PASS_AT, Summary
from evalrun.report.listing import Progress, RunRow
from evalrun.report.page import fmt_rate, fmt_s, fmt_usd, render, svg
from evalrun.report.svg import TrendPoint, trend_chart

INDEX_FILE = "index.html"
RUNS_PREFIX = "runs"  # a run's pages live under runs/<key>/ (report.html, samples/...)
DIFF_FILE = "diff.html"  # served: diff.html?a=<key>&b=<key>


def run_key(root: Path, run_dir: Path) -> str:
    """A run's name in every link of the view: its folder relative to the listed root (the
    root's own name when the root is the run)."""
    rel = run_dir.relative_to(root).as_posix()
    return root.resolve().name if rel == "." else rel


def report_href(key: str) -> str:
    """A run's report page, relative to the index."""
    return f"{RUNS_PREFIX}/{quote(key)}/report.html"


@dataclass(frozen=True)
class IndexEntry:
    """One run as the index shows it."""

    key: str
    href: str
    agent: str  # the option chosen (`coder`, `my_agent`)
    model: str | None
    provider: str | None
    sandbox: str
    suite: str
    tasks: int
    trials: int
    pass_at_1: float | None
    pass_shown: str  # `0.62 ± 0.11`, `1.00 [0.34, 1.00]`, or the bare value
    pass_title: str  # the interval and how it was computed
    cost_usd: float | None
    started: float | None
    progress: Progress
    status: str
    diffable: bool  # it ended (summary.json): `evalrun diff` compares runs that ended

    @property
    def started_text(self) -> str:
        if self.started is None:
            return "—"
        return datetime.fromtimestamp(self.started).strftime("%Y-%m-%d %H:%M")

    @property
    def text(self) -> str:
        """What the page's filter box matches."""
        words = [self.key, self.agent, self.model or "", self.provider or "", self.sandbox]
        return " ".join([*words, self.suite, self.progress.value]).lower()


def entry(root: Path, row: RunRow) -> IndexEntry:
    est = row.pass_at_1_interval
    if row.pass_at_1 is None:
        shown, title = "—", "no summary yet" if row.summary is None else "nothing scored"
    elif est is None or est.low is None or est.high is None:
        shown, title = fmt_rate(row.pass_at_1), "no interval (fewer than 2 tasks)"
    else:
        shown = est.plus_minus(2)
        title = f"95% CI {est.interval(3)} ({est.method}, {est.tasks} tasks)"
    key = run_key(root, row.run_dir)
    return IndexEntry(
        key=key,
        href=report_href(key),
        agent=row.agent_option,
        model=row.model,
        provider=row.provider,
        sandbox=row.sandbox,
        suite=row.suite_name,
        tasks=row.tasks,
        trials=row.trials,
        pass_at_1=row.pass_at_1,
        pass_shown=shown,
        pass_title=title,
        cost_usd=row.cost_usd,
        started=row.started,
        progress=row.progress,
        status=row.status,
        diffable=row.summary is not None,
    )


# --- the trend ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrendMetric:
    """A figure of a run's summary that the trend can follow across runs."""

    name: str
    read: Callable[[Summary], float | None]
    fmt: Callable[[float], str]
    y_max: float | None = None  # rates run 0..1; others up to their largest value
    interval: bool = False  # pass@1: its 95% interval as a whisker


def _p50(phase: str) -> Callable[[Summary], float | None]:
    return lambda s: s.latency[phase].p50 if phase in s.latency else None


TREND_METRICS = (
    TrendMetric("pass@1", lambda s: s.overall.pass_at.get(1), fmt_rate, 1.0, True),
    TrendMetric("harness errors", lambda s: float(s.errors), lambda v: f"{v:g}"),
    TrendMetric("flaky tasks", lambda s: float(s.overall.flaky_tasks), lambda v: f"{v:g}"),
    TrendMetric("cost total", lambda s: s.cost.total_usd, fmt_usd),
    TrendMetric("cost per sample", lambda s: s.cost.per_sample_usd, fmt_usd),
    TrendMetric("agent latency p50", _p50("agent"), fmt_s),
    TrendMetric("verify latency p50", _p50("verify"), fmt_s),
)


def trend_points(
    rows: Sequence[RunRow], keys: Sequence[str], metric: TrendMetric
) -> list[tuple[str, list[TrendPoint]]]:
    """The metric over the runs that ended, oldest first, one series per suite. Every ended
    run has its place on the x axis even where this metric is unknown (cost of an unpriced
    agent), so all metrics share one time axis."""
    ended = sorted(
        ((r, k) for r, k in zip(rows, keys, strict=True) if r.summary is not None),
        key=lambda pair: pair[0].started or 0.0,
    )
    series: dict[str, list[TrendPoint]] = {}
    for x, (row, key) in enumerate(ended):
        assert row.summary is not None
        value = metric.read(row.summary)
        if value is None:
            continue
        est = row.summary.overall.interval(PASS_AT, 1) if metric.interval else None
        low, high = (est.low, est.high) if est is not None else (None, None)
        label = f"{key} · {row.agent}"
        series.setdefault(row.suite_name, []).append(TrendPoint(x, value, label, low, high))
    return list(series.items())


def trend_plots(rows: Sequence[RunRow], keys: Sequence[str]) -> list[tuple[str, Markup]]:
    """One plot per metric (the page shows the one chosen)."""
    runs = sum(1 for r in rows if r.summary is not None)
    plots = []
    for m in TREND_METRICS:
        title = f"{m.name} per run" + (" (bars: 95% interval)" if m.interval else "")
        chart = trend_chart(
            trend_points(rows, keys, m), title=title, runs=runs, fmt=m.fmt, y_max=m.y_max
        )
        plots.append((m.name, svg(chart)))
    return plots


# --- the page ----------------------------------------------------------------------------------
def index_html(root: Path, rows: Sequence[RunRow], pairs: dict[str, str] | None = None) -> str:
    """The index page over `rows` (newest first). `pairs`: where a static copy keeps the diff
    of two runs (`"<older key>\\n<newer key>"` -> its page); None when a server builds any
    pair's diff on request (diff.html?a=...&b=...)."""
    entries = [entry(root, r) for r in rows]
    keys = [e.key for e in entries]
    return render(
        "view.html.j2",
        title=f"evalrun view · {root}",
        root=str(root),
        entries=entries,
        trends=trend_plots(rows, keys) if rows else [],
        pairs=json.dumps(pairs) if pairs is not None else "",
        diff_href=DIFF_FILE,
    )
