"""`evalrun ls`, `evalrun show` and `evalrun report`: looking at runs that already happened.

Each works from the run directories' files only (nothing is re-run, no config is composed), so
they work on runs copied from another machine. A folder that is not a run directory is a
`UsageError` naming it and what was expected.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evalrun.errors import UsageError

DEFAULT_RUNS_DIR = Path("runs")


def _one_dir(args: list[str], usage: str) -> Path:
    if len(args) != 1 or args[0].startswith("-"):
        raise UsageError(f"usage: {usage}")
    return Path(args[0]).expanduser()


def ls(args: list[str], console: Console) -> int:
    """evalrun ls [runs_dir]: every run under runs_dir (default runs/), newest first."""
    from evalrun.report.listing import list_runs, runs_table

    if len(args) > 1 or (args and args[0].startswith("-")):
        raise UsageError("usage: evalrun ls [runs_dir]   (default: runs/)")
    root = Path(args[0]).expanduser() if args else DEFAULT_RUNS_DIR
    rows = list_runs(root)
    if not rows:
        console.print(f"no runs in {root}")
        return 0
    console.print(runs_table(rows, root))
    return 0


def show(args: list[str], console: Console) -> int:
    """evalrun show <run-dir>: the terminal report of a finished run, printed again."""
    from evalrun.report.rundata import load_run
    from evalrun.report.terminal import render

    run = load_run(_one_dir(args, "evalrun show <run-dir>"))
    render(run.summary, run.run_dir, console)
    if not run.finished:
        console.print(
            f"[yellow]unfinished run:[/] {run.summary.samples} of {run.plan.get('cells', '?')} "
            "samples recorded (summary computed from samples.jsonl)"
        )
    return 0


def report(args: list[str], console: Console) -> int:
    """evalrun report <run-dir | multirun-dir>: write report.html and junit.xml again."""
    from evalrun.report.files import rerender

    for path in rerender(_one_dir(args, "evalrun report <run-dir | multirun-dir>")):
        console.print(str(path), highlight=False, soft_wrap=True)
    return 0
