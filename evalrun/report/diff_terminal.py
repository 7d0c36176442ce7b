"""The terminal view of `evalrun diff`: the comparison `evalrun.analysis.diff.diff_runs` computed,
as rich tables - the verdict, config, task set, suite metrics, then the tasks that moved.

Figures are rounded as the diff rounds them (`evalrun.analysis.diff.fmt_value`); a delta is green
when it is an improvement and red when it is not.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalrun.analysis.diff import (
    fmt_change,
    fmt_value,
    partial_warnings,
    significance_text,
    task_significance_text,
)
from evalrun.console import styled
from evalrun.models.diff import PairedChange, RunDiff


def _fmt_delta(name: str, delta: float | None, higher_is_better: bool) -> str | Text:
    if delta is None:
        return "-"
    if delta == 0:
        return "0"
    better = (delta > 0) == higher_is_better
    return styled("[green]{}[/]" if better else "[red]{}[/]", fmt_change(name, delta))


def render_diff(result: RunDiff, console: Console) -> None:
    """Print the comparison: the verdict, config, task set, suite metrics, then the tasks that
    moved."""
    console.print(styled("[bold]a[/] {}\n[bold]b[/] {}", result.a.label, result.b.label))
    console.print(styled("[bold]{}[/]", result.verdict), soft_wrap=True)
    for line in partial_warnings(result):
        console.print(styled("[yellow]{}[/]", line), soft_wrap=True)
    config = result.config
    for what, pair in config.suite.items():  # one line each: a long URL stays readable
        console.print(
            styled("[yellow]suite changed:[/] {}: {} -> {}", what, _plain(pair.a), _plain(pair.b)),
            soft_wrap=True,
        )
    quiet = set(result.config_not_result_relevant)
    if config.options or config.changed or config.added or config.removed:
        table = Table(
            title="Config (options chosen, then resolved dotted keys)", header_style="bold"
        )
        for column in ("key", "a", "b"):
            table.add_column(column, overflow="fold")
        for group, pair in config.options.items():
            table.add_row(styled("[bold]{}[/]", group), _plain(pair.a), _plain(pair.b))
        for key, pair in config.changed.items():
            table.add_row(_key(key, quiet), _plain(pair.a), _plain(pair.b))
        for key, value in config.added.items():
            table.add_row(_key(key, quiet), styled("[dim](absent)[/]"), _plain(value))
        for key, value in config.removed.items():
            table.add_row(_key(key, quiet), _plain(value), styled("[dim](absent)[/]"))
        console.print(table)
    else:
        console.print("config: identical")
    tasks = result.tasks
    for label, ids in (("only in b", tasks.added), ("only in a", tasks.removed)):
        if ids:
            console.print(f"tasks {label}: {', '.join(ids)}", highlight=False)
    if tasks.changed:
        console.print(
            styled("[yellow]tasks whose content changed (fingerprint differs):[/]"),
            ", ".join(tasks.changed),
        )
    table = Table(title="Suite", header_style="bold")
    for column in ("metric", "a", "b", "Δ", "significance (paired over shared tasks)"):
        table.add_column(column, justify="left" if column in ("metric",) else "right")
    for name, entry in result.metrics.items():
        delta = _fmt_delta(name, entry.delta, entry.higher_is_better)
        table.add_row(
            name,
            fmt_value(name, entry.a),
            fmt_value(name, entry.b),
            delta,
            _paired_cell(name, entry.paired),
        )
    console.print(table)
    console.print(styled("[dim]pass@1 over shared tasks: {}[/]", result.significance.note))
    moved = [r for r in tasks.rows if r.delta["pass@1"] or r.fingerprint_changed]
    if not moved:
        console.print(f"per task: no pass@1 change on {len(tasks.rows)} shared tasks")
        return
    table = Table(title="Tasks whose pass@1 moved", header_style="bold")
    for column in ("task", "passes a", "passes b", "Δ pass@1", "significance"):
        table.add_column(column)
    for row in moved:
        a, b = row.a, row.b
        task = styled("{} [yellow](changed)[/]" if row.fingerprint_changed else "{}", row.task_id)
        table.add_row(
            task,
            f"{a['passes']}/{a['n']}",
            f"{b['passes']}/{b['n']}",
            _fmt_delta("pass@1", row.delta["pass@1"], True),
            task_significance_text(row.significance),
        )
    console.print(table)


def _plain(value: Any) -> str:
    return "-" if value is None else str(value)


def _paired_cell(name: str, paired: PairedChange | None) -> str | Text:
    """The paired change over the shared tasks: `-0.25 [-0.40, -0.10] p=0.008, significant`."""
    if paired is None or paired.mean_delta is None:
        return ""
    text = significance_text(paired)
    if paired.ci95 and paired.changed_tasks != 0:
        low, high = paired.ci95
        text = f"{fmt_change(name, paired.mean_delta)} [{low:+.2f}, {high:+.2f}] {text}"
    return styled("[bold]{}[/]" if paired.significant else "{}", text)


def _key(key: str, quiet: set[str]) -> Text:
    return styled("{} [dim](does not affect results)[/]" if key in quiet else "{}", key)
