"""`evalrun push <run-dir>` and `evalrun sync`: send to Opik without running anything
(`evalrun.integrations.opik.push`).

The Opik integration is imported only when one of these runs, never with the rest of the CLI.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.cli.hydra import compose_config
from evalrun.config.schema import SuiteKind
from evalrun.console import styled
from evalrun.errors import ExitCode, UsageError


def push_command(args: list[str], console: Console) -> int:
    """`evalrun push <run-dir> [tracker.<key>=...]`: exit 0 when everything reached Opik."""
    from evalrun.integrations.opik.push import destination, push
    from evalrun.rundir.store import RunLock

    parser = CommandParser(
        "push",
        "Send a finished (or interrupted) run to Opik; samples already there are skipped.",
        overrides=True,
        epilog="overrides: tracker.project=... tracker.host=... tracker.workspace=...",
    )
    parser.add_argument("run_dir", metavar="<run-dir>", help="the run to send")
    options = parser.parse(args)
    dest = destination(compose_config(["tracker=opik", *options.overrides]).tracker)
    run_dir = Path(options.run_dir).expanduser()
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such directory (expected a run directory)")
    with RunLock(run_dir, "push"):  # push writes opik.json: one writer at a time
        result = push(run_dir, dest)
    skipped = f", {result.skipped} already there" if result.skipped else ""
    console.print(
        f"pushed {options.run_dir} to Opik: experiment {result.experiment_name} "
        f"({result.experiment_id}) in project {result.project}, dataset {result.dataset}: "
        f"{result.sent} samples sent{skipped}",
        highlight=False,
    )
    if result.problem:
        console.print(styled("[yellow]opik:[/]"), f"{result.problem}; push again to retry")
        return ExitCode.SERVICE_DOWN
    return ExitCode.OK


def sync_command(args: list[str], console: Console) -> int:
    """`evalrun sync [suite=...] [tasks_dir=...] [tracker.<key>=...]`: upsert the datasets.

    With neither `suite=` nor `tasks_dir=` (nor one `tracker.dataset=` for everything), both
    bundled suites are synced: the tasks and the behaviour probes, one dataset each.
    """
    from evalrun.integrations.opik.push import destination, sync
    from evalrun.run.plan import load_for_suite, refuse_unloadable, say_loading

    parser = CommandParser(
        "sync",
        "Upsert the suite's Opik dataset (one item per task); both bundled suites by default.",
        overrides=True,
        epilog="overrides: suite=tasks|probes, tasks_dir=DIR, tracker.dataset=NAME, ...",
    )
    args = parser.parse(args).overrides
    cfg = compose_config(["tracker=opik", *args])
    chosen = any(a.startswith(("suite=", "tasks_dir=", "tracker.dataset=")) for a in args)
    dest = destination(cfg.tracker)
    for suite in [cfg.suite] if chosen else list(SuiteKind):
        loaded = load_for_suite(
            suite,
            cfg.tasks_dir,
            cfg.reward_threshold,
            cfg.strict_formats,
            tasks_ref=cfg.tasks_ref,
        )
        say_loading(loaded.warnings, refuse_unloadable(loaded, []))
        suite_dir = loaded.tasks_dir
        result = sync(suite_dir, loaded.tasks, dest)
        console.print(
            f"synced {result.tasks} {suite} from {suite_dir} to Opik dataset {result.dataset} "
            f"in project {result.project} (unchanged items are not sent again)",
            highlight=False,
        )
    return ExitCode.OK
