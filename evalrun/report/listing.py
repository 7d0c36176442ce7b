"""`evalrun ls`: the runs under a folder, newest first, from each run directory's small files.

Each run is opened with `evalrun.rundir.log.RunLog` (plan.json, config.yaml and summary.json are
read
whole); of samples.jsonl only each line's cell (task, fingerprint, trial) is parsed, for the run's
state (`RunLog.state`): complete, or partial N/M with the missing cells - true even while a run
or resume is writing it. Multirun jobs (`runs/multirun/<stamp>/<n>/`) are found by walking down
a few levels (`evalrun.rundir.log.find_run_dirs`); a run directory is not searched further.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rich.table import Table
from rich.text import Text

from evalrun.errors import UsageError
from evalrun.rundir.log import RunLog, find_run_dirs
from evalrun.rundir.store import current_writer


@dataclass(frozen=True)
class RunRow:
    run_dir: Path
    when: float  # when summary.json was written (the run finished), else the last write
    agent: str
    sandbox: str
    tasks: int
    trials: int
    pass_at_1: float | None
    cost_usd: float | None
    status: str  # "complete", "partial 3/12 (missing cells: ...)", or why it could not be read


def read_row(run_dir: Path) -> RunRow:
    try:
        run = RunLog.open(run_dir)
        status = run.state().describe(shown=3)
    except UsageError as exc:
        return RunRow(run_dir, 0.0, "?", "?", 0, 0, None, None, f"unreadable: {exc}")
    if run.plan.regrade_of is not None:
        status += f" - regraded from {Path(run.plan.regrade_of.run_dir).name}"
    writer = current_writer(run_dir)
    if writer is not None:
        status += f" - being written by pid {writer.pid} ({writer.what})"
    summary = run.saved_summary
    return RunRow(
        run_dir=run_dir,
        when=run.last_written,
        agent=run.agent,
        sandbox=run.plan.sandbox,
        tasks=len(run.plan.tasks),
        trials=run.plan.trials,
        pass_at_1=summary.overall.pass_at.get(1) if summary else None,
        cost_usd=summary.cost.total_usd if summary else None,
        status=status,
    )


def list_runs(root: Path) -> list[RunRow]:
    """Every run directory under `root` (or `root` itself), newest first."""
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory (expected a folder of runs, e.g. runs/)")
    rows = [read_row(d) for d in find_run_dirs(root)]
    return sorted(rows, key=lambda r: r.when, reverse=True)


def runs_table(rows: list[RunRow], root: Path) -> Table:
    table = Table(title=f"Runs in {root}", header_style="bold")
    for name, justify in (
        ("when", "left"),
        ("run", "left"),
        ("agent", "left"),
        ("sandbox", "left"),
        ("tasks x trials", "right"),
        ("pass@1", "right"),
        ("cost", "right"),
        ("status", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        try:
            shown = r.run_dir.relative_to(root)
        except ValueError:
            shown = r.run_dir
        table.add_row(
            datetime.fromtimestamp(r.when).strftime("%Y-%m-%d %H:%M") if r.when else "—",
            Text(str(shown) if str(shown) != "." else str(r.run_dir)),
            Text(r.agent),
            Text(r.sandbox),
            f"{r.tasks}x{r.trials}",
            "—" if r.pass_at_1 is None else f"{r.pass_at_1:.3f}",
            "—" if r.cost_usd is None else f"${r.cost_usd:.4f}",
            Text(r.status),
        )
    return table
