"""What `evalrun push <run-dir>` and `evalrun sync` do: Opik without running anything.

`push` sends a finished (or interrupted) run from its files (read through `RunLog`) exactly as
`tracker=opik` would have sent it live: same dataset, same experiment (its id kept in
`<run-dir>/opik.json`), same trace ids. Samples already in the experiment are skipped, so pushing
after an outage sends each missing sample once and pushing again sends none.

`sync` upserts a suite's dataset (one item per task) from a suite folder; it takes any folder of
task folders, so the probes suite can be synced the same way.

Tested against `tests/opik_standin.py` (a local stand-in for Opik's REST API), not a real server.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalrun.errors import TaskFormatError, UsageError
from evalrun.integrations.opik.export import ExperimentExport, connect, upsert_dataset
from evalrun.integrations.opik.link import OpikDestination, OpikLink, TaskItem, new_link, task_item
from evalrun.rundir.log import RunLog
from evalrun.tasks.loader import Task, load_task


def task_items(run: RunLog) -> dict[str, TaskItem]:
    """The run's planned tasks as dataset items, with each prompt when its folder still exists
    unchanged (else None: a prompt is never guessed)."""
    tasks_dir = Path(run.plan.tasks_dir)
    return {
        t.id: TaskItem(
            task_id=t.id,
            difficulty=t.difficulty,
            tags=tuple(t.tags),
            fingerprint=t.fingerprint,
            prompt=_prompt_from_suite(tasks_dir, t.id, t.fingerprint),
        )
        for t in run.plan.tasks
    }


def _prompt_from_suite(tasks_dir: Path, task_id: str, fingerprint: str) -> str | None:
    """The task's prompt if its folder still exists unchanged; else None (never a guess)."""
    try:
        task = load_task(tasks_dir / task_id)
    except (TaskFormatError, OSError):
        return None
    return task.spec.prompt if task.fingerprint == fingerprint else None


@dataclass(frozen=True)
class PushResult:
    experiment_name: str
    experiment_id: str
    project: str
    dataset: str
    sent: int
    skipped: int
    problem: str | None


def push(run_dir: Path, dest: OpikDestination) -> PushResult:
    """Send a run directory to Opik. Raises `UsageError` (incl. `OpikUnavailable`) before
    sending anything when the run directory or the connection is not usable."""
    run = RunLog.open(run_dir)
    if not (records := run.planned(run.records())):
        raise UsageError(f"{run.run_dir}: this run recorded no sample; nothing to push")
    items = task_items(run)
    link = OpikLink.load(run.run_dir) or new_link(
        run_dir=run.run_dir,
        config=run.config,
        tasks_dir=Path(run.plan.tasks_dir),
        tasks=items.values(),
        cells=run.plan.cells or len(run.plan.cell_keys()),
        dest=dest,
        recorded_at="push",
        source=run.plan.tasks_source,
    )
    tasks = {  # a prompt the link kept fills one the suite no longer has
        tid: item if item.prompt is not None else replace(item, prompt=link.prompts.get(tid))
        for tid, item in items.items()
    }
    client = connect(replace(dest, project=link.project))
    export = ExperimentExport(client, link, tasks)
    export.open()
    for record in records:
        export.send(record)
    problem = export.finish(run.summary(records), dest.flush_timeout_s)
    return PushResult(
        experiment_name=link.experiment_name,
        experiment_id=link.experiment_id,
        project=link.project,
        dataset=link.dataset,
        sent=export.counts.sent,
        skipped=export.counts.skipped,
        problem=problem,
    )


@dataclass(frozen=True)
class SyncResult:
    dataset: str
    project: str
    tasks: int


def sync(suite_dir: Path, tasks: list[Task], dest: OpikDestination) -> SyncResult:
    """Upsert the dataset of the suite in `suite_dir` (tasks or probes): one item per task."""
    suite_dir = Path(suite_dir)
    items = [task_item(t) for t in tasks]
    client = connect(dest)
    name = dest.dataset_for(suite_dir)
    try:
        count = upsert_dataset(client, name, dest.project, items)
        client.flush(timeout=dest.flush_timeout_s)
    finally:
        client.end(flush=False)
    return SyncResult(dataset=name, project=dest.project, tasks=count)


def destination(tracker: Any) -> OpikDestination:
    """The Opik destination from a composed `tracker=opik` config node."""
    if tracker.get("_target_") != "evalrun.integrations.opik.tracker.OpikTracker":
        raise UsageError("push/sync send to Opik: leave `tracker` at opik (tracker.<key>=... only)")
    return OpikDestination.of(tracker)
