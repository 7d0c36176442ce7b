"""`evalrun ls`, `evalrun show` and `evalrun report`: looking at runs that already happened.

Each works from the run directories' files only (nothing is re-run, no config is composed), so
they work on runs copied from another machine. A folder that is not a run directory is a
`UsageError` naming it and what was expected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.console import styled
from evalrun.errors import ExitCode, UsageError
from evalrun.rundir.log import LATEST, RUNS_DIR, locate_run

if TYPE_CHECKING:
    from evalrun.report.rundata import RunFiles

PROMPT_LINES = 6  # of a task's prompt in `evalrun show <run> <task>`


def ls_command(args: list[str], console: Console) -> int:
    """evalrun ls [runs_dir]: every run under runs_dir (default runs/), newest first."""
    from evalrun.report.listing import list_runs, runs_table

    parser = CommandParser("ls", "The runs under a folder, newest first, with their state.")
    parser.add_runs_dir()
    root = parser.parse(args).root.expanduser()
    if root == RUNS_DIR and not root.is_dir():
        console.print(f"no runs yet in {root}/ (every run lands there; start one with `evalrun`)")
        return ExitCode.OK
    rows = list_runs(root)
    if not rows:
        console.print(f"no runs in {root}")
        return ExitCode.OK
    console.print(runs_table(rows, root))
    return ExitCode.OK


def show_command(args: list[str], console: Console) -> int:
    """evalrun show <run-dir> [task-id]: the terminal report of a run, printed again (and the
    tasks that did not run); with a task id, that task's view: its samples and every field of
    its task file evalrun keeps but does not use."""
    from evalrun.report.rundata import load_run
    from evalrun.report.terminal import render

    parser = CommandParser(
        "show", "A run's terminal report again (complete or partial), or one task's."
    )
    parser.add_argument(
        "run_dir", metavar="<run-dir>", type=Path, help=f"a run: a path, its name, or {LATEST}"
    )
    parser.add_argument("task_id", metavar="<task-id>", nargs="?", help="show one task")
    options = parser.parse(args)
    run = load_run(options.run_dir.expanduser())
    if options.task_id is not None:
        return show_task(run, options.task_id, console)
    render(run.summary, run.run_dir, console, run.records, run.plan.tasks_source)
    if run.plan.regrade_of is not None:
        console.print(f"regraded from {run.plan.regrade_of.run_dir}", highlight=False)
    for task in run.skipped:
        console.print(styled("[yellow]skipped[/] {} ({}):", task.id, task.kind), task.reason)
    return ExitCode.OK


def show_task(run: RunFiles, task_id: str, console: Console) -> int:
    """One task of a run: what the plan says of it, its samples, its kept task-file fields."""
    from evalrun.report.reasons import why
    from evalrun.report.terminal import print_reasons

    entry = run.plan.task(task_id)
    if entry is None:
        skipped = next((t for t in run.skipped if t.id == task_id), None)
        if skipped is None:
            known = ", ".join(t.id for t in run.plan.tasks)
            raise UsageError(f"{run.run_dir}: no task {task_id!r} in this run (tasks: {known})")
        console.print(f"{task_id}: did not run ({skipped.kind}): {skipped.reason}")
        return ExitCode.OK
    console.print(styled("[bold]{}[/]", task_id))
    shown = {"format": entry.format or "", "difficulty": entry.difficulty, "tags": entry.tags}
    for key, value in {**shown, "fingerprint": entry.fingerprint}.items():
        console.print(f"  {key:<12} {value}")
    prompt = run.prompt(task_id)
    if prompt:
        lines = prompt.strip().splitlines()
        head = lines[:PROMPT_LINES] + (["..."] if len(lines) > PROMPT_LINES else [])
        console.print("  prompt       " + "\n               ".join(head), soft_wrap=True)
    records = [r for r in run.records if r.task_id == task_id]
    for rec in records:
        took = sum(v for v in rec.phases.model_dump().values() if v is not None)
        colour = {"pass": "green", "fail": "red"}.get(rec.outcome.value, "yellow")
        console.print(
            styled(
                f"  trial {{:<6}} [{colour}]{{:<5}}[/] {{:>7}}",
                rec.trial,
                rec.outcome.value,
                f"{took:.1f}s",
            ),
            why(rec),
            soft_wrap=True,
        )
        if rec.workspace_diff is not None:
            changed = ", ".join(f"{f.change} {f.path}" for f in rec.workspace_diff.files[:8])
            more = len(rec.workspace_diff.files) - 8
            console.print(
                f"{'':22}changed: {rec.workspace_diff.summary()}"
                + (f" ({changed}{f' and {more} more' if more > 0 else ''})" if changed else ""),
                soft_wrap=True,
            )
        if rec.workspace_kept:
            console.print(styled(f"{'':22}kept: {{}}", rec.workspace_kept), soft_wrap=True)
    fields = run.log.task_fields(task_id)
    if fields:
        console.print("  kept from the task file, not used by evalrun:")
        width = max(len(k) for k in fields)
        for key, value in fields.items():
            console.print(f"    {key:<{width}}  {json.dumps(value, ensure_ascii=False)}")
    print_reasons(records, console)
    return ExitCode.OK


def report_command(args: list[str], console: Console) -> int:
    """evalrun report <run-dir | multirun-dir>: write report.html and junit.xml again."""
    from evalrun.report.files import rerender

    parser = CommandParser("report", "Write report.html and junit.xml of a run (or sweep) again.")
    parser.add_argument(
        "run_dir",
        metavar="<run-dir | multirun-dir>",
        nargs="?",
        default=LATEST,
        help=f"a run or a sweep: a path, a run's name, or {LATEST} (the default)",
    )
    given = Path(parser.parse(args).run_dir).expanduser()
    for path in rerender(given if given.is_dir() else locate_run(given)):  # takes the lock
        console.print(str(path), highlight=False, soft_wrap=True)
    return ExitCode.OK
