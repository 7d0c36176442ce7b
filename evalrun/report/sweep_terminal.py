"""The terminal view of a sweep: its jobs side by side, then judge agreement - the sweep summary
`evalrun.analysis.sweep.summarize_sweep` computed (sweep.json), as rich tables."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.console import Console
from rich.table import Table

from evalrun.analysis.sweep import JUDGE_PASS
from evalrun.console import styled
from evalrun.models.summary import Estimate
from evalrun.models.sweep import SweepFile


def _fmt(value: Any, interval: Estimate | None = None) -> str:
    if value is None:
        return "-"
    if interval and interval.low is not None and interval.high is not None:
        return replace(interval, value=value).plus_minus(2, value_digits=3)
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def render_sweep(sweep: SweepFile, console: Console) -> None:
    """Print the jobs (swept values, metrics with their 95% intervals, gate), then judge
    agreement."""
    table = Table(title=f"Sweep {sweep.sweep_dir}", header_style="bold")
    metric_names = list(dict.fromkeys(m for job in sweep.jobs for m in (job.metrics or {})))
    for column in ["job", *sweep.swept, *metric_names, "gate"]:
        table.add_column(column)
    for job in sweep.jobs:
        metrics = job.metrics or {}
        intervals = job.intervals or {}
        state = job.state or ""
        if not job.finished:
            verdict = styled("[yellow]unfinished[/]")
        elif state.startswith("partial"):
            verdict = styled("[yellow]{}[/]", state.split(" (")[0])
        elif job.gate is not None and job.gate.exit_code:
            verdict = styled("[red]broken ({})[/]", len(job.gate.breaches))
        else:
            verdict = styled("ok ({})", job.gate.profile if job.gate else "none")
        table.add_row(
            str(job.job),
            *[_fmt(job.swept.get(k)) for k in sweep.swept],
            *[_fmt(metrics.get(m), intervals.get(m)) for m in metric_names],
            verdict,
        )
    console.print(table)
    judges = sweep.judges
    if not judges.with_verifier:
        console.print("judges: no judge scores in these jobs", highlight=False)
        return
    table = Table(title=f"Judge agreement (judge-pass: score >= {JUDGE_PASS})")
    for column in ("judge", "vs", "samples", "agreement"):
        table.add_column(column)
    for label, entry in judges.with_verifier.items():
        table.add_row(label, "verifier", str(entry.samples), _fmt(entry.agreement))
    for pair in judges.between_judges:
        table.add_row(pair.a, pair.b, str(pair.cells), _fmt(pair.agreement))
    console.print(table)
