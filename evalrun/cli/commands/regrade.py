"""`evalrun regrade <run> [overrides]`: a past run's kept workspaces graded again by their tasks'
current verifiers, into a new run directory (`evalrun.run.regrade`); the agent does not run."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.cli.hydra import compose_config
from evalrun.rundir.log import LATEST


def regrade_command(args: list[str], console: Console) -> int:
    """evalrun regrade <run> [run_dir=DIR] [sandbox=...] [overrides]: each sample with a kept
    final workspace graded again in a fresh sandbox (the source's backend unless `sandbox=`
    says otherwise); prints the verdicts that changed, per task, and the samples that could not
    be regraded. Exit codes as a run's (`evalrun.run.regrade.run_regrade`)."""
    from evalrun.run.regrade import default_run_dir, plan_regrade, run_regrade
    from evalrun.rundir.log import RunLog

    parser = CommandParser(
        "regrade",
        "Grade a past run's kept workspaces again with the tasks' current verifiers, into a new "
        "run directory (the agent does not run again; diff it with the source).",
        overrides=True,
    )
    parser.add_argument("run", metavar="<run>", help=f"a run: a path, its name, or {LATEST}")
    options = parser.parse(args)
    source = RunLog.open(options.run)
    given = [o for o in options.overrides if not o.startswith("run_dir=")]
    chosen = [o.split("=", 1)[1] for o in options.overrides if o.startswith("run_dir=")]
    run_dir = Path(chosen[-1]).expanduser() if chosen else default_run_dir(source)
    plan = plan_regrade(source, compose_config(given), given, run_dir)
    return run_regrade(plan, console, options.overrides)
