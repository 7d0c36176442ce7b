"""`evalrun ls`: the runs under a folder, newest first, from each run directory's small files.

plan.json, config.yaml and summary.json are read whole; of samples.jsonl only each line's cell
(task, fingerprint, trial) is parsed, for the run's state (`evalrun.store.read_state`): complete,
or partial N/M with the missing cells - true even while a run or resume is writing it. Multirun
jobs (`runs/multirun/<stamp>/<n>/`) are found by walking down a few levels; a folder that is a
run directory is not searched further.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import yaml
from rich.table import Table
from rich.text import Text

from evalrun.errors import UsageError
from evalrun.report.rundata import is_run_dir
from evalrun.store import (
    CONFIG_FILE,
    PLAN_FILE,
    SAMPLES_FILE,
    SUMMARY_FILE,
    current_writer,
    read_state,
)

MAX_DEPTH = 4


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


def find_run_dirs(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        if is_run_dir(here):
            found.append(here)
            dirnames[:] = []
        elif len(here.relative_to(root).parts) >= MAX_DEPTH:
            dirnames[:] = []
        else:
            dirnames.sort()
    return found


def _mtime(*paths: Path) -> float:
    return next((p.stat().st_mtime for p in paths if p.exists()), 0.0)


def read_row(run_dir: Path) -> RunRow:
    when = _mtime(run_dir / SUMMARY_FILE, run_dir / SAMPLES_FILE, run_dir / PLAN_FILE)
    try:
        plan = json.loads((run_dir / PLAN_FILE).read_text())
        config = yaml.safe_load((run_dir / CONFIG_FILE).read_text()) or {}
        summary_path = run_dir / SUMMARY_FILE
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return RunRow(run_dir, when, "?", "?", 0, 0, None, None, f"unreadable: {exc}")
    agent = str(plan.get("agent", "?"))
    provider = (config.get("agent") or {}).get("provider") if isinstance(config, dict) else None
    if isinstance(provider, dict) and provider.get("model"):
        agent = f"{agent} ({provider['model']})"
    pass_at_1 = cost = None
    if summary is not None:
        pass_at_1 = (summary.get("overall") or {}).get("pass_at", {}).get("1")
        cost = (summary.get("cost") or {}).get("total_usd")
    try:
        status = read_state(run_dir).describe(shown=3)
    except UsageError as exc:
        status = f"unreadable: {exc}"
    writer = current_writer(run_dir)
    if writer is not None:
        status += f" - being written by pid {writer.pid} ({writer.what})"
    return RunRow(
        run_dir=run_dir,
        when=when,
        agent=agent,
        sandbox=str(plan.get("sandbox", "?")),
        tasks=len(plan.get("tasks", [])),
        trials=int(plan.get("trials", 0)),
        pass_at_1=pass_at_1,
        cost_usd=cost,
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
