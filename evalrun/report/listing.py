"""The runs under a folder, newest first, each read from its small files: `evalrun ls` prints
them as a table, `evalrun view` lists them on its index page.

Each run is opened with `evalrun.rundir.log.RunLog` (plan.json, config.yaml and summary.json are
read whole). samples.jsonl is read only as far as needed: its first line (when the run started),
and - only when nothing newer than summary.json tells the state (a run still being written, or
one that stopped without a summary) - each line's cell, for `RunLog.current_state`: complete, or
partial N/M with the missing cells. Multirun jobs (`runs/multirun/<stamp>/<n>/`) are found by
walking down a few levels (`evalrun.rundir.log.find_run_dirs`); a run directory is not searched
further.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from rich.table import Table
from rich.text import Text

from evalrun.errors import UsageError
from evalrun.models.summary import PASS_AT, Estimate, Summary
from evalrun.rundir.log import RunLog, find_run_dirs
from evalrun.rundir.store import (
    CONFIG_FILE,
    OVERRIDES_FILE,
    PLAN_FILE,
    SAMPLES_FILE,
    SUMMARY_FILE,
    current_writer,
)


class Progress(StrEnum):
    """Where a run stands: every planned cell recorded, some missing, or a live writer on it."""

    complete = "complete"
    partial = "partial"
    running = "running"
    unreadable = "unreadable"


@dataclass(frozen=True)
class RunRow:
    run_dir: Path
    when: float  # when summary.json was written (the run finished), else the last write
    agent: str  # the option chosen, with its model: `coder (gpt-4o-mini)`
    sandbox: str
    tasks: int
    trials: int
    pass_at_1: float | None
    cost_usd: float | None
    status: str  # "complete", "partial 3/12 (missing cells: ...)", or why it could not be read
    progress: Progress = Progress.unreadable
    agent_option: str = "?"
    model: str | None = None
    provider: str | None = None
    suite_name: str = "?"  # the tasks folder's name (probes: the probes folder's)
    started: float | None = None
    summary: Summary | None = None  # summary.json as written (None: the run has not ended)

    @property
    def pass_at_1_interval(self) -> Estimate | None:
        return self.summary.overall.interval(PASS_AT, 1) if self.summary else None


def regraded_from(run: RunLog) -> str:
    """` - regraded from <source>` for a regrade's run (`evalrun regrade`), else nothing."""
    source = run.plan.regrade_of
    return f" - regraded from {Path(source.run_dir).name}" if source is not None else ""


def read_files(run_dir: Path) -> RunRow:
    """One run from its files alone (`with_writer` adds who is writing it now)."""
    try:
        run = RunLog.open(run_dir)
        state = run.current_state()
        started = run.started_at
    except (UsageError, OSError) as exc:
        return RunRow(run_dir, 0.0, "?", "?", 0, 0, None, None, f"unreadable: {exc}")
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
        status=state.describe(shown=3) + regraded_from(run),
        progress=Progress.complete if state.complete else Progress.partial,
        agent_option=run.agent_option,
        model=run.model,
        provider=run.provider,
        suite_name=Path(run.plan.tasks_dir).name or run.plan.tasks_dir,
        started=started,
        summary=summary,
    )


def with_writer(row: RunRow) -> RunRow:
    """`row` marked running, its state naming the process, while a live process writes it."""
    writer = current_writer(row.run_dir)
    if writer is None or row.progress is Progress.unreadable:
        return row
    status = f"{row.status} - being written by pid {writer.pid} ({writer.what})"
    return replace(row, status=status, progress=Progress.running)


class RowCache:
    """Rows already read, kept while their run's files are unchanged: `evalrun view` lists the
    same runs on every page load, and re-reads only a run whose files changed (a run still
    writing, a resume, a new run). Whether a live process writes a run is checked every time."""

    def __init__(self) -> None:
        self._rows: dict[Path, tuple[tuple[tuple[int, int] | None, ...], RunRow]] = {}

    def read(self, run_dir: Path) -> RunRow:
        seen = tuple(_stamp(run_dir / name) for name in RUN_FILES)
        kept = self._rows.get(run_dir)
        if kept is not None and kept[0] == seen:
            return with_writer(kept[1])
        row = read_files(run_dir)
        self._rows[run_dir] = (seen, row)
        return with_writer(row)


RUN_FILES = (CONFIG_FILE, OVERRIDES_FILE, PLAN_FILE, SAMPLES_FILE, SUMMARY_FILE)


def _stamp(path: Path) -> tuple[int, int] | None:
    """A file's modification time and size: it changed when either did."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def list_runs(root: Path, cache: RowCache | None = None) -> list[RunRow]:
    """Every run directory under `root` (or `root` itself), newest first; `cache`: rows read
    before, reused while their files are unchanged."""
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory (expected a folder of runs, e.g. runs/)")
    read = (cache or RowCache()).read  # a fresh cache reads every run
    rows = [read(d) for d in find_run_dirs(root)]
    return sorted(rows, key=lambda r: r.when, reverse=True)


RIGHT_ALIGNED = ("tasks x trials", "pass@1", "cost")  # columns of `runs_table` holding figures


def runs_table(rows: list[RunRow], root: Path) -> Table:
    table = Table(title=f"Runs in {root}", header_style="bold")
    for name in ("when", "run", "agent", "sandbox", "tasks x trials", "pass@1", "cost", "status"):
        table.add_column(name, justify="right" if name in RIGHT_ALIGNED else "left")
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
