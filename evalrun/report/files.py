"""The report files of a run directory, written together: report.html and junit.xml.

The runner calls `write_reports` right after summary.json, under its writer lock; `evalrun
report <dir>` calls it again (for a multirun folder: every job, then the sweep page), taking
each run directory's writer lock (`evalrun.rundir.store.RunLock`) while it writes there. Both read
only
the run's files.
"""

from __future__ import annotations

from pathlib import Path

from evalrun.report.html import write_html
from evalrun.report.junit import write_junit
from evalrun.report.rundata import load_run
from evalrun.report.sweep_html import render_sweep_html
from evalrun.rundir.log import RunLog, is_run_dir, sweep_jobs
from evalrun.rundir.store import RunLock


def write_reports(run_dir: Path) -> list[Path]:
    """Write report.html and junit.xml into `run_dir`; return their paths."""
    run = load_run(Path(run_dir))
    return [write_html(run), write_junit(run)]


def rerender(path: Path) -> list[Path]:
    """`evalrun report`: a run directory gets its two files; a multirun folder gets them for
    every job plus its sweep report.html. `UsageError` when `path` is neither, or when another
    process is writing one of the run directories (`RunBusy`)."""
    path = Path(path)
    if not is_run_dir(path) and sweep_jobs(path):
        written = [p for job in sweep_jobs(path) for p in _locked_reports(job)]
        return [*written, render_sweep_html(path)]
    return _locked_reports(RunLog.open(path).run_dir)


def _locked_reports(run_dir: Path) -> list[Path]:
    with RunLock(run_dir, "report"):
        return write_reports(run_dir)
