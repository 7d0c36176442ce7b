"""`run(cfg)`: the whole of `evalrun` as a plain function - plan, execute, summarise, report, gate.

The CLI is a thin shell around this; tests and other programs can call it directly.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from omegaconf import DictConfig
from rich.console import Console

from evalrun.engine import execute
from evalrun.metrics import Summary, summarize
from evalrun.plan import RunPlan, build, cell_key
from evalrun.progress import RunProgress
from evalrun.records import SampleRecord
from evalrun.report.terminal import render
from evalrun.store import PLAN_FILE, SUMMARY_FILE, RunStore


def print_plan(plan: RunPlan, console: Console) -> None:
    console.print(f"run id     {plan.run_id}")
    console.print(f"run dir    {plan.run_dir}")
    console.print(f"tasks dir  {plan.tasks_dir}")
    console.print(f"sandbox    {plan.backend.name}    agent {plan.agent.name}")
    console.print(
        f"tasks      {len(plan.tasks)}    trials {plan.trials}    cells {len(plan.cells)}"
    )
    for task in plan.tasks:
        tags = ",".join(task.spec.tags)
        console.print(
            f"  {task.id:<40} {task.spec.difficulty.value:<7} {task.fingerprint[:12]}  [{tags}]",
            highlight=False,
        )


def run(cfg: DictConfig, console: Console | None = None) -> int:
    """Run the composed config; return the process exit code (0, or 1 when the gate breaks)."""
    console = console or Console()
    plan = build(cfg)
    if plan.dry_run:
        print_plan(plan, console)
        console.print("dry run: nothing was run")
        return 0
    plan.backend.preflight()
    plan.agent.preflight()
    store = RunStore(plan.run_dir)
    store.create()
    store.write_config(plan.config)
    store.write_json(PLAN_FILE, plan.to_json())
    wanted = plan.cell_keys()
    done = {r.key for r in store.records()} & wanted
    todo = [(t, i) for t, i in plan.cells if cell_key(t, i) not in done]
    if done:
        console.print(
            f"resuming {plan.run_dir}: {len(done)} samples already recorded, {len(todo)} to run"
        )
    plan.tracker.start(plan)

    left = Counter(t.id for t, _ in todo)
    with RunProgress(len(todo), dict(left), console) as progress:

        def on_record(record: SampleRecord) -> None:
            store.append(record)
            plan.tracker.record(record)
            progress.advance(record)

        try:
            asyncio.run(
                execute(
                    todo,
                    plan.agent,
                    plan.backend,
                    plan.limits,
                    run_id=plan.run_id,
                    concurrency=plan.concurrency,
                    on_record=on_record,
                    log=store.write_log,
                )
            )
        finally:
            store.close()

    summary = summarize_run(plan, store)
    plan.tracker.finish(summary)
    render(summary, plan.run_dir, console)
    breaches = plan.profile.check(summary)
    for breach in breaches:
        console.print(f"[red]threshold broken ({plan.profile.name}):[/] {breach}")
    return 1 if breaches else 0


def summarize_run(plan: RunPlan, store: RunStore) -> Summary:
    """Summarise the plan's cells from the store and write summary.json."""
    wanted = plan.cell_keys()
    records = [r for r in store.records() if r.key in wanted]
    summary = summarize(records, plan.task_meta(), run_id=plan.run_id, trials=plan.trials)
    store.write_json(SUMMARY_FILE, summary.model_dump(mode="json"))
    return summary
