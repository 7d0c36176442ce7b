"""`evalrun export <run-dir> --format atif [--out DIR]`: a run's samples in a format others read.

`atif` writes each sample's trajectory.json (Harbor's Agent Trajectory Interchange Format,
`evalrun.rundir.trajectory`) from its record - the same file a run writes as it goes, so a run
made before evalrun wrote them gets them too. Without `--out` they go beside each sample's logs
in the run directory (taking its writer lock); with it, to `DIR/<task>/<trial>/trajectory.json`.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.errors import ExitCode
from evalrun.rundir.log import LATEST, RunLog
from evalrun.rundir.store import RunLock, sample_dir, write_trajectory
from evalrun.rundir.trajectory import Session

FORMATS = ("atif",)


def export_command(args: list[str], console: Console) -> int:
    """evalrun export <run-dir> --format atif [--out DIR]; see the module docstring."""
    parser = CommandParser("export", "Write a run's samples in a format other tools read.")
    parser.add_argument(
        "run_dir", metavar="<run-dir>", type=Path, help=f"a run: a path, its name, or {LATEST}"
    )
    parser.add_argument(
        "--format", required=True, choices=FORMATS, help="atif: one trajectory.json per sample"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        type=Path,
        help="write DIR/<task>/<trial>/... (default: into the run directory, beside the logs)",
    )
    options = parser.parse(args)
    run = RunLog.open(options.run_dir.expanduser())
    session = Session.of(run.plan, run.config)
    if options.out is None:
        with RunLock(run.run_dir, "export"):
            written = [
                write_trajectory(sample_dir(run.run_dir, r.key), r, session) for r in run.records()
            ]
    else:
        out = options.out.expanduser()
        written = [
            write_trajectory(out / r.task_id / str(r.trial), r, session) for r in run.records()
        ]
    for path in written:
        console.print(str(path), highlight=False, soft_wrap=True)
    console.print(f"{len(written)} trajectories (ATIF) written", highlight=False)
    return ExitCode.OK
