"""`evalrun export <run-dir> --format atif|csv|parquet|log [--table samples|tasks] [--out PATH]`:
a run in a format other tools read.

- `atif` writes each sample's trajectory.json (Harbor's Agent Trajectory Interchange Format,
  `evalrun.rundir.trajectory`) from its record - the same file a run writes as it goes, so a run
  made before evalrun wrote them gets them too. Without `--out` they go beside each sample's logs
  in the run directory; with it, to `DIR/<task>/<trial>/trajectory.json`.
- `csv` and `parquet` write a table for notebooks (`evalrun.report.tables`): one row per sample,
  or with `--table tasks` one row per task of summary.json. They need the `export` extra
  (pandas, pyarrow), checked before the run is read. Without `--out`: `<run-dir>/samples.csv`
  (`tasks.parquet`, ...).
- `log` writes the whole run - plan, config, summary, every record - as one JSON document
  (`<run-dir>/run-log.json` without `--out`).

Writing into the run directory takes its writer lock, like every writer of it.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.errors import ExitCode, UsageError
from evalrun.extras import require
from evalrun.rundir.log import LATEST, RunLog
from evalrun.rundir.store import RunLock, sample_dir, write_trajectory
from evalrun.rundir.trajectory import Session

FORMATS = ("atif", "csv", "parquet", "log")
TABLES = ("samples", "tasks")
LOG_FILE = "run-log.json"


def export_command(args: list[str], console: Console) -> int:
    """evalrun export <run-dir> --format ... [--table ...] [--out PATH]; see the module
    docstring."""
    parser = CommandParser("export", "Write a run in a format other tools read.")
    parser.add_argument(
        "run_dir", metavar="<run-dir>", type=Path, help=f"a run: a path, its name, or {LATEST}"
    )
    parser.add_argument(
        "--format",
        required=True,
        choices=FORMATS,
        help="atif: one trajectory.json per sample; csv, parquet: a table (pandas); "
        "log: the whole run as one JSON document",
    )
    parser.add_argument(
        "--table",
        choices=TABLES,
        help="csv and parquet: one row per sample (default) or per task",
    )
    parser.add_argument(
        "--out",
        metavar="PATH",
        type=Path,
        help="atif: a folder, written DIR/<task>/<trial>/...; csv, parquet, log: a file "
        "(default: into the run directory)",
    )
    options = parser.parse(args)
    if options.table is not None and options.format not in ("csv", "parquet"):
        raise UsageError(f"--table applies to csv and parquet, not to --format {options.format}")
    if options.format in ("csv", "parquet"):
        feature = f"evalrun export --format {options.format}"
        require("pandas", "export", feature)
        if options.format == "parquet":
            require("pyarrow", "export", feature)
    run = RunLog.open(options.run_dir.expanduser())
    out = None if options.out is None else options.out.expanduser()
    with RunLock(run.run_dir, "export") if out is None else nullcontext():
        return _export(run, options.format, options.table or "samples", out, console)


def _export(run: RunLog, fmt: str, table: str, out: Path | None, console: Console) -> int:
    if fmt == "atif":
        return _atif(run, out, console)
    from evalrun.report import tables

    if fmt == "log":
        path = out or run.run_dir / LOG_FILE
        tables.write_log(run, path)
        what = "the run as one JSON document"
    else:
        path = out or run.run_dir / f"{table}.{fmt}"
        rows = tables.sample_rows(run) if table == "samples" else tables.task_rows(run)
        tables.write_table(rows, path, "csv" if fmt == "csv" else "parquet")
        what = f"{len(rows)} {table[:-1] if len(rows) == 1 else table} ({fmt})"
    console.print(f"{what} written to {path}", highlight=False, soft_wrap=True)
    return ExitCode.OK


def _atif(run: RunLog, out: Path | None, console: Console) -> int:
    session = Session.of(run.plan, run.config)
    if out is None:
        written = [
            write_trajectory(sample_dir(run.run_dir, r.key), r, session) for r in run.records()
        ]
    else:
        written = [
            write_trajectory(out / r.task_id / str(r.trial), r, session) for r in run.records()
        ]
    for path in written:
        console.print(str(path), highlight=False, soft_wrap=True)
    console.print(f"{len(written)} trajectories (ATIF) written", highlight=False)
    return ExitCode.OK
