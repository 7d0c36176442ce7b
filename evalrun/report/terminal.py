"""The terminal report: a per-task table, a summary block and where the run directory is."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalrun.console import make_console, styled
from evalrun.models.plan import TasksSource
from evalrun.models.records import Outcome, SampleRecord
from evalrun.models.summary import PASS_AT, PASS_HAT, GroupStats, Summary
from evalrun.report.reasons import failure_groups

REASONS_SHOWN = 10  # reason lines after the tables; the rest are in report.html


def fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_usd(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"


def fmt_estimate(group: GroupStats, base: str, k: int, digits: int = 2) -> str:
    """`0.62 ± 0.11` (half the 95% interval), or the bare value when it has no interval."""
    estimate = group.interval(base, k)
    return fmt(group.value(base, k), digits) if estimate is None else estimate.plus_minus(digits)


def interval_line(summary: Summary) -> Text | None:
    """The exact 95% intervals of the headline figures and the method that gave them."""
    o, kmax = summary.overall, max(summary.ks)
    heads = [(PASS_AT, 1)] + ([(PASS_AT, kmax), (PASS_HAT, kmax)] if kmax > 1 else [])
    shown = [(f"{base}{k}", est) for base, k in heads if (est := o.interval(base, k)) is not None]
    if not shown or all(est.low is None for _, est in shown):
        return None
    methods = ", ".join(sorted({est.method for _, est in shown}))
    bounds = " · ".join(f"{name} {est.interval()}" for name, est in shown)
    return styled("[dim]95% CI over {} tasks ({}): {}[/]", shown[0][1].tasks, methods, bounds)


def _pass_columns(kmax: int) -> list[str]:
    """pass@1, and pass@k and pass^k at the run's trials when it has more than one."""
    return ["pass@1", *([f"pass@{kmax}", f"pass^{kmax}"] if kmax > 1 else [])]


def task_table(summary: Summary) -> Table:
    kmax = max(summary.ks)
    table = Table(title="Tasks", show_lines=False, header_style="bold")
    table.add_column("task")
    table.add_column("difficulty")
    for column in ["passed", *_pass_columns(kmax), "errors", "latency s"]:
        table.add_column(column, justify="right")
    for s in summary.tasks:
        colour = "green" if s.n and s.passes == s.n else ("red" if s.passes == 0 else "yellow")
        row: list[str | Text] = [
            styled("{} [yellow]flaky[/]" if s.flaky else "{}", s.task_id),
            s.difficulty,
            styled(f"[{colour}]{{}}/{{}}[/]", s.passes, s.n),
            fmt(s.pass_at.get(1)),
        ]
        if kmax > 1:
            row += [fmt(s.pass_at.get(kmax)), fmt(s.pass_hat.get(kmax))]
        row += [str(s.errors) if s.errors else "", fmt(s.mean_latency_s, 2)]
        table.add_row(*row)
    return table


def group_table(title: str, groups: dict, ks: list[int]) -> Table:
    kmax = max(ks)
    table = Table(title=title, header_style="bold")
    table.add_column("group")
    for column in ["tasks", *_pass_columns(kmax)]:
        table.add_column(column, justify="right")
    for label, g in groups.items():
        row = [label, str(g.tasks), fmt_estimate(g, PASS_AT, 1)]
        if kmax > 1:
            row += [fmt_estimate(g, PASS_AT, kmax), fmt_estimate(g, PASS_HAT, kmax)]
        table.add_row(*row)
    return table


def headline_pass_at_1(summary: Summary) -> Text:
    """pass@1 with the error count beside it; never a rate over zero scored samples."""
    if summary.scored == 0:
        return styled(
            "pass@1 [bold red]—[/] (no scored sample: {} of {} ended in a harness error)",
            summary.errors,
            summary.samples,
        )
    estimate = fmt_estimate(summary.overall, PASS_AT, 1, 3)
    if summary.errors:
        return styled("pass@1 [bold]{}[/]  errors [bold red]{}[/]", estimate, summary.errors)
    return styled("pass@1 [bold]{}[/]  errors 0", estimate)


def summary_lines(summary: Summary) -> list[Text]:
    """The summary block, a line each (styled; `.plain` is the text)."""
    o = summary.overall
    kmax = max(summary.ks)
    parts: list[str] = []
    if kmax > 1:
        parts += [
            f"pass@{kmax} {fmt_estimate(o, PASS_AT, kmax, 3)}",
            f"pass^{kmax} {fmt_estimate(o, PASS_HAT, kmax, 3)}",
        ]
    parts.append(f"flaky tasks {o.flaky_tasks}")
    intervals = interval_line(summary)
    lines: list[str | Text] = [
        Text.assemble(headline_pass_at_1(summary), "  ", "  ".join(parts)),
        *([intervals] if intervals else []),
        f"samples {summary.samples}  passed {summary.passes}  failed "
        f"{summary.scored - summary.passes}  errors {summary.errors} (not in pass rates)",
    ]
    lat = summary.latency
    lines.append(
        "latency s (mean/p50/p95)  "
        + "  ".join(f"{p} {fmt(lat[p].mean)}/{fmt(lat[p].p50)}/{fmt(lat[p].p95)}" for p in lat)
    )
    c = summary.cost
    if c.priced_samples:
        lines.append(
            f"cost total {fmt_usd(c.total_usd)}  per sample {fmt_usd(c.per_sample_usd)}  "
            f"per success {fmt_usd(c.per_success_usd)}"
            + (f"  ({c.unpriced_samples} samples unpriced)" if c.unpriced_samples else "")
        )
    else:
        lines.append("cost unknown (the agent reported no cost)")
    if c.cost_equivalent_tokens:
        lines.append(
            f"cost-equivalent tokens {c.cost_equivalent_tokens:,.0f} "
            "(input x1, cache write x1.25, cache read x0.1, output x5)"
        )
    return [line if isinstance(line, Text) else Text(line) for line in lines]


def render(
    summary: Summary,
    run_dir: Path,
    console: Console | None,
    records: Sequence[SampleRecord],
    source: TasksSource | None = None,
) -> None:
    """The tables, the summary block, then why samples did not pass (from `records`); for a
    suite given by reference (`source`), what it resolved to."""
    console = console or make_console(wide=True)
    console.print(task_table(summary))
    if len(summary.by_tag) > 1:
        console.print(group_table("By tag", summary.by_tag, summary.ks))
    if len(summary.by_difficulty) > 1:
        console.print(group_table("By difficulty", summary.by_difficulty, summary.ks))
    for line in summary_lines(summary):
        console.print(line)
    print_reasons(records, console)
    print_kept(records, console)
    state = summary.state
    if state is not None:
        colour = "green" if state.complete else "yellow"
        console.print(styled(f"run [{colour}]{{}}[/]", state.describe()))
    if source is not None:
        console.print(f"suite: {source.describe()}", highlight=False)
    console.print(f"run directory: {run_dir}")


def print_reasons(
    records: Sequence[SampleRecord], console: Console, cap: int = REASONS_SHOWN
) -> None:
    """Failures and harness errors grouped by task, one reason line each; after `cap` lines,
    how many more there are and where to read them."""
    groups = failure_groups(records)
    if not groups:
        return
    failed = sum(len(g.trials) for g in groups if g.outcome is Outcome.failed)
    errors = sum(len(g.trials) for g in groups if g.outcome is Outcome.error)
    counts = [f"{failed} failed" if failed else "", f"{errors} harness errors" if errors else ""]
    console.print(styled("[bold]Why[/] ({}):", ", ".join(c for c in counts if c)))
    width = max(len(g.label()) for g in groups[:cap])
    for group in groups[:cap]:
        tag = "[red]fail [/]" if group.outcome is Outcome.failed else "[yellow]error[/]"
        label = group.label().ljust(width)
        console.print(styled(f"  {tag} {{}}  {{}}", label, group.reason), soft_wrap=True)
    rest = groups[cap:]
    if rest:
        more = sum(len(g.trials) for g in rest)
        console.print(f"  ... and {more} more: see report.html")


def print_kept(records: Sequence[SampleRecord], console: Console, cap: int = REASONS_SHOWN) -> None:
    """Where keep_workspaces=true left each sample's workspace, one line per sample (after
    `cap`, how many more and where to find them); nothing when none was kept."""
    kept = [r for r in records if r.workspace_kept]
    if not kept:
        return
    console.print(f"workspaces kept (keep_workspaces=true): {len(kept)}")
    width = max(len(f"{r.task_id} #{r.trial}") for r in kept[:cap])
    for rec in kept[:cap]:
        label = f"{rec.task_id} #{rec.trial}".ljust(width)
        console.print(styled("  {}  {}", label, rec.workspace_kept), soft_wrap=True)
    if len(kept) > cap:
        console.print(f"  ... and {len(kept) - cap} more: evalrun show <run> <task-id>")
