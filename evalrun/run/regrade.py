"""`evalrun regrade RUN`: a past run's samples graded again by their tasks' current verifiers,
without running the agent again - for the verifier bug found after a week of runs.

```
plan_regrade(source, cfg, given)   the source run's tasks, loaded again now from its tasks folder;
                                   per cell the source's record and its kept final workspace
run_regrade(plan)                  a new run directory (plan.json names the source: regrade_of),
                                   each kept workspace unpacked into a fresh sandbox and graded
                                   by the engine's own verify path (`Regrade`, a `Trial`)
flips(records)                     per task, the verdicts that changed (pass -> fail, fail -> pass)
```

A regraded sample keeps the source's agent result, latency and cost; only its verdict is new,
and `regrade_of` names the run and the outcome it came from. A sample whose workspace was not
kept is recorded as an `error` saying why (it has no verdict now; errors are kept out of pass
rates and make the exit status non-zero, as in any run); a task gone from the tasks folder is
skipped as `cannot load`. The sandbox backend, timeouts, concurrency and retries are the
source's unless given again (`sandbox=docker`, `concurrency=8`).

What a regrade cannot bring back: anything a sample's setup or agent left outside the workspace
(packages installed in its container, files under /tmp); multi-step tasks and tasks whose
verifier runs apart keep no workspace.
"""

from __future__ import annotations

import asyncio
import copy
import os
import shutil
import signal
import tarfile
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from rich.console import Console

from evalrun.agents.noop import NoopAgent
from evalrun.config.schema import SuiteKind, resolved_dict
from evalrun.console import styled
from evalrun.errors import ExitCode, SandboxError, UsageError
from evalrun.models.plan import PlanFile, RegradeSource, RunKind
from evalrun.models.records import (
    CellKey,
    Outcome,
    Phases,
    RegradeOf,
    SampleRecord,
    SkipKind,
    SkippedEntry,
)
from evalrun.run.engine import STOP_SIGNALS, Batch, execute, stopped_by
from evalrun.run.final_workspace import unpack
from evalrun.run.plan import check_numbers, instantiate_group, load_for_suite, planned_task
from evalrun.run.runner import exiting_on_stop_signals
from evalrun.run.trial import Limits, LogSink, Trial, Turn
from evalrun.rundir.log import RunLog
from evalrun.rundir.provenance import reproduction_info
from evalrun.rundir.redact import override_name
from evalrun.rundir.store import (
    RunLock,
    RunStore,
    claim_new_run_dir,
    final_workspace_path,
    remove_if_unused,
)
from evalrun.sandbox.base import Sandbox, SandboxBackend
from evalrun.tasks.base import Verdict
from evalrun.tasks.loader import Task, runnable_on

KNOBS = (  # what a regrade takes from its own overrides, else from the source run's config
    "sandbox",
    "concurrency",
    "timeouts",
    "max_retries",
    "retry_backoff_s",
    "max_errors",
    "verifier_hardening",
    "reward_threshold",
)


@dataclass(frozen=True)
class Kept:
    """One cell to grade again: the source's record and its kept final workspace."""

    task: Task
    record: SampleRecord
    archive: Path


@dataclass(frozen=True)
class RegradePlan:
    """What a regrade will do, fixed before it starts (see the module docstring)."""

    source: RunLog
    run_dir: Path
    config: dict[str, Any]
    tasks: tuple[Task, ...]
    kept: tuple[Kept, ...]
    not_kept: tuple[SampleRecord, ...]  # the source's records of cells with no kept workspace
    skipped: tuple[SkippedEntry, ...]
    backend: SandboxBackend = field(repr=False)
    limits: Limits = field(repr=False)
    concurrency: int
    max_errors: int

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    def to_plan_file(self) -> PlanFile:
        """The new run's plan.json: the source's, with the tasks as they load now, this run's
        sandbox, and `regrade_of` naming the source."""
        source = self.source.plan
        choices = dict(source.choices)
        if "sandbox" in choices:
            choices["sandbox"] = self.backend.name
        return source.model_copy(
            update={
                "run_id": self.run_id,
                "run_dir": str(self.run_dir),
                "sandbox": self.backend.name,
                "concurrency": self.concurrency,
                "choices": choices,
                "tasks": [planned_task(t) for t in self.tasks],
                "cells": len(self.tasks) * source.trials,
                "provenance": reproduction_info(Path(source.tasks_dir)),
                "skipped": [*source.skipped, *self.skipped],
                "regrade_of": RegradeSource(
                    run_id=source.run_id, run_dir=str(self.source.run_dir.resolve())
                ),
            }
        )

    def batch(self) -> Batch:
        """The engine's batch: each cell's attempt is a `Regrade` of its kept workspace."""
        by_cell = {(k.task.id, k.record.trial): k for k in self.kept}

        async def attempt(task: Task, trial: int, log: LogSink | None) -> SampleRecord:
            kept = by_cell[(task.id, trial)]
            dest = final_workspace_path(self.run_dir, CellKey.of(task, trial))
            regrade = Regrade(kept, self.limits, self.run_id, dest, log)
            return await regrade.run(self.backend)

        return Batch(
            NoopAgent(),
            self.backend,
            self.limits,
            self.run_id,
            self.concurrency,
            attempt=attempt,
        )


def plan_regrade(source: RunLog, cfg: DictConfig, given: list[str], run_dir: Path) -> RegradePlan:
    """The regrade of `source` into `run_dir`; `cfg` is composed from the `given` overrides,
    and only the `KNOBS` they set replace the source's config. `UsageError` for a run that
    cannot be regraded (online, probes) or a bad override."""
    if source.kind is not RunKind.tasks:
        what = "judged live conversations" if source.kind == "online" else "graded on its steps"
        raise UsageError(
            f"{source.run_dir}: a {source.kind} run is {what}, not on a workspace: "
            "only runs of task folders can be regraded"
        )
    check_numbers(cfg)
    ours = resolved_dict(cfg)
    config = copy.deepcopy(source.config)
    config |= {knob: ours[knob] for knob in KNOBS if knob not in config}
    for key in (override_name(o) for o in given if "=" in o):
        if key.split(".")[0] not in KNOBS:
            continue
        try:
            _set_dotted(config, ours, key)
        except (KeyError, TypeError):
            group = key.split(".")[0]
            raise UsageError(
                f"{key}: not a key of the {group} the regrade would compose by default; "
                f"name the {group} too (e.g. {group}=<name> {key}=...)"
            ) from None
    config["run_dir"] = str(run_dir)
    sandbox_node = OmegaConf.create(config["sandbox"])
    backend = instantiate_group(sandbox_node, "sandbox", keep_workspaces=False)
    suite = load_for_suite(
        SuiteKind.tasks,
        source.plan.tasks_dir,
        float(config["reward_threshold"]),
        bool(config.get("strict_formats", False)),
        bool(config["verifier_hardening"]),
    )
    loaded = {t.id: t for t in suite.tasks}
    wanted = [loaded[t.id] for t in source.plan.tasks if t.id in loaded]
    skipped = [
        SkippedEntry(
            id=t.id,
            kind=SkipKind.cannot_load,
            reason=f"no longer loads from {suite.tasks_dir}: not regraded",
        )
        for t in source.plan.tasks
        if t.id not in loaded
    ]
    tasks, unrunnable = runnable_on(wanted, backend, explicit=False) if wanted else ([], [])
    skipped += [SkippedEntry(id=i, kind=SkipKind.cannot_run, reason=r) for i, r in unrunnable]
    ids = {t.id: t for t in tasks}
    kept: list[Kept] = []
    not_kept: list[SampleRecord] = []
    for record in source.planned(source.records()):
        task = ids.get(record.task_id)
        if task is None:
            continue
        archive = source.final_workspace(record.key)
        if archive is None:
            not_kept.append(record)
        else:
            kept.append(Kept(task, record, archive))
    timeouts = config["timeouts"]
    return RegradePlan(
        source=source,
        run_dir=run_dir,
        config=config,
        tasks=tuple(tasks),
        kept=tuple(kept),
        not_kept=tuple(not_kept),
        skipped=tuple(skipped),
        backend=backend,
        limits=Limits(
            setup_s=float(timeouts["setup_s"]),
            verify_s=float(timeouts["verify_s"]),
            max_retries=int(config["max_retries"]),
            retry_backoff_s=float(config["retry_backoff_s"]),
        ),
        concurrency=int(config["concurrency"]),
        max_errors=int(config["max_errors"]),
    )


def _set_dotted(config: dict[str, Any], ours: dict[str, Any], key: str) -> None:
    """Set dotted `key` of `config` to its value in `ours` (`sandbox=docker` replaces the whole
    node, `timeouts.verify_s=30` one leaf)."""
    *parents, leaf = key.split(".")
    target, source = config, ours
    for part in parents:
        source = source[part]
        target = target.setdefault(part, {})
    target[leaf] = source[leaf]


def default_run_dir(source: RunLog) -> Path:
    """Beside the source run: `<its folder>/<YYYYmmdd-HHMMSS>-regrade` (claimed fresh)."""
    return source.run_dir.parent / f"{datetime.now():%Y%m%d-%H%M%S}-regrade"


class Regrade(Trial):
    """One past sample graded again: its kept workspace unpacked into a fresh sandbox (as the
    task's format asks), then the engine's own grading (`Trial.grade`: the agent phase ended,
    the verifier's hook, the verifier) and a record that keeps the source's agent result,
    latency and cost. The archive is linked into the new run (`dest`), so a regrade can be
    regraded."""

    def __init__(self, kept: Kept, limits: Limits, run_id: str, dest: Path, log: LogSink | None):
        super().__init__(kept.task, kept.record.trial, NoopAgent(), limits, run_id, log)
        self.source = kept.record
        self.archive = kept.archive
        self.dest = dest

    async def run(self, backend: SandboxBackend) -> SampleRecord:
        self.started = time.time()
        self._backend = backend
        with tempfile.TemporaryDirectory(prefix="evalrun-regrade-") as staging:
            try:
                await asyncio.to_thread(unpack, self.archive, Path(staging))
            except (tarfile.TarError, OSError) as exc:
                reason = f"the kept workspace {self.archive} could not be unpacked: {exc}"
                return self._again(Outcome.error, reason)
            try:
                async with self._open(backend) as box:
                    await self.restore(box, Path(staging))
                    verdict, _ = await self.grade(box, self.task, self.source.agent.output)
            except (SandboxError, OSError) as exc:
                return self._again(Outcome.error, f"sandbox failed: {exc}")
        await asyncio.to_thread(_link_or_copy, self.archive, self.dest)
        return self.regraded(verdict)

    async def restore(self, box: Sandbox, folder: Path) -> None:
        """The kept workspace, and only it, in `box`'s workspace (a container's image may have
        put files there that the agent had removed)."""
        if box.is_container:
            emptied = await box.exec(
                ["find", ".", "-mindepth", "1", "-delete"], timeout_s=self.limits.setup_s
            )
            if not emptied.ok:
                raise SandboxError(f"could not empty the workspace: {emptied.stderr.strip()}")
        await box.put(folder)

    def regraded(self, verdict: Verdict) -> SampleRecord:
        """The record: the source's agent result, latency, cost and kept workspace; the new
        verdict; `regrade_of` naming where it came from."""
        source = self.source
        self.phases = Phases(setup=source.phases.setup)
        turn = Turn(
            result=source.agent,
            agent_timed_out=source.timed_out_phase == "agent",
            agent_s=source.phases.agent or 0.0,
            verdict=verdict,
            changes=source.workspace_diff,
            kept=source.final_workspace,
        )
        record = self.record(turn)
        return record.model_copy(
            update={
                "scores": {**source.scores, **record.scores},
                "judge_reasons": source.judge_reasons,
                "regrade_of": RegradeOf(run_id=source.run_id, outcome=source.outcome),
            }
        )

    def _again(self, outcome: Outcome, reason: str) -> SampleRecord:
        """A record with no new verdict (the harness failed), the source's agent result kept."""
        return self._record(
            outcome,
            reason=reason,
            agent=self.source.agent,
            regrade_of=RegradeOf(run_id=self.source.run_id, outcome=self.source.outcome),
        )


def not_regraded(plan: RegradePlan, record: SampleRecord, task: Task) -> SampleRecord:
    """The record of a cell whose workspace was not kept: an `error` saying why, the source's
    agent result kept."""
    kept = record.final_workspace
    why = kept.reason if kept is not None and kept.reason else "keeping was off in that run"
    now = time.time()
    return record.model_copy(
        update={
            "run_id": plan.run_id,
            "fingerprint": task.fingerprint,
            "outcome": Outcome.error,
            "reason": f"not regraded: its final workspace was not kept ({why})",
            "verify_exit_code": None,
            "verify_output": "",
            "phases": Phases(setup=record.phases.setup, agent=record.phases.agent),
            "started_at": now,
            "finished_at": now,
            "regrade_of": RegradeOf(run_id=record.run_id, outcome=record.outcome),
        }
    )


def _link_or_copy(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.unlink(missing_ok=True)
    try:
        os.link(source, dest)
    except OSError:  # another file system
        shutil.copyfile(source, dest)


Flip = tuple[Outcome, Outcome]


def flips(records: list[SampleRecord]) -> dict[str, Counter[Flip]]:
    """Per task, how many samples went from one outcome to another (only changes)."""
    changed: dict[str, Counter[Flip]] = {}
    for record in records:
        was = record.regrade_of
        if was is None or was.outcome == record.outcome or record.outcome is Outcome.error:
            continue
        changed.setdefault(record.task_id, Counter())[(was.outcome, record.outcome)] += 1
    return changed


def run_regrade(plan: RegradePlan, console: Console, overrides: list[str]) -> int:
    """Grade `plan`'s kept workspaces again into its new run directory (locked while written),
    report the run and what changed; return the `ExitCode`: INTERRUPTED (TERMINATED, HUNG_UP)
    when stopped - the run is partial, and says so; TOO_MANY_ERRORS when more samples than
    `max_errors` have no new verdict (no kept workspace, or the harness failed); UNLOADABLE
    when tasks of the source no longer load; else OK."""
    plan.backend.preflight()
    run_dir = claim_new_run_dir(plan.run_dir)
    plan = replace(plan, run_dir=run_dir, config={**plan.config, "run_dir": str(run_dir)})
    try:
        with exiting_on_stop_signals(plan.backend):
            return _regrade(plan, console, overrides)
    finally:
        remove_if_unused(run_dir)


def _regrade(plan: RegradePlan, console: Console, overrides: list[str]) -> int:
    from evalrun.report.files import write_reports
    from evalrun.report.terminal import render

    with RunLock(plan.run_dir, "regrade"):
        store = RunStore(plan.run_dir)
        store.begin(plan.config, overrides, plan.to_plan_file())
        tasks = {t.id: t for t in plan.tasks}
        for record in plan.not_kept:
            store.append(not_regraded(plan, record, tasks[record.task_id]))
        console.print(
            f"regrading {len(plan.kept)} samples of {plan.source.run_dir} "
            f"on sandbox={plan.backend.name} into {plan.run_dir}",
            highlight=False,
        )

        def on_interrupt(signum: signal.Signals) -> None:
            console.print(styled("[yellow]{}:[/]", stopped_by(signum)), "cancelling regrades")

        def on_record(record: SampleRecord) -> None:
            store.append(record)

        cells = [(k.task, k.record.trial) for k in plan.kept]
        work = execute(
            cells,
            plan.batch(),
            on_record=on_record,
            log=store.write_log,
            on_interrupt=on_interrupt,
        )
        try:
            signum = asyncio.run(work)
        finally:
            store.close()
        log = RunLog.open(plan.run_dir)
        summary = log.summarize()
        store.write_summary(summary)
        write_reports(plan.run_dir)
    records = log.planned(log.records())
    render(summary, plan.run_dir, console, records)
    say_changes(plan, records, console)
    return _exit_code(plan, summary.errors, signum, console)


def say_changes(plan: RegradePlan, records: list[SampleRecord], console: Console) -> None:
    """What the regrade changed, per task, and which samples have no new verdict and why."""
    changed = flips(records)
    source = plan.source.run_dir
    if not changed:
        console.print(f"no verdict changed from {source}", highlight=False)
    else:
        flipped = sum(sum(c.values()) for c in changed.values())
        verdicts = "verdict" if flipped == 1 else "verdicts"
        console.print(f"{flipped} {verdicts} changed from {source}:", highlight=False)
    for task_id, counts in changed.items():
        said = ", ".join(f"{a.value}->{b.value} {n}" for (a, b), n in sorted(counts.items()))
        console.print(f"  {task_id}: {said}", highlight=False)
    missing = [r for r in records if r.outcome is Outcome.error and r.regrade_of is not None]
    left = [(len(missing), "sample"), (len(plan.skipped), "task")]
    said = " and ".join(f"{n} {what}{'s' if n > 1 else ''}" for n, what in left if n)
    if said:
        console.print(styled("[yellow]{} not regraded:[/]", said))
    for record in missing:
        console.print(f"  {record.key.label}: {record.reason}", highlight=False)
    for entry in plan.skipped:
        console.print(f"  {entry.id} ({entry.kind}): {entry.reason}", highlight=False)


def _exit_code(
    plan: RegradePlan, errors: int, signum: signal.Signals | None, console: Console
) -> int:
    if signum is not None:
        console.print(
            styled("[yellow]{}: the regrade is partial.[/]", stopped_by(signum)),
            f"Regrade again: evalrun regrade {plan.source.run_dir}",
            soft_wrap=True,
        )
        return STOP_SIGNALS[signum]
    if errors > plan.max_errors:
        console.print(
            styled(
                "[red]{} samples have no new verdict, more than max_errors={}[/]",
                errors,
                plan.max_errors,
            )
        )
        return ExitCode.TOO_MANY_ERRORS
    if any(entry.kind is SkipKind.cannot_load for entry in plan.skipped):
        return ExitCode.UNLOADABLE
    return ExitCode.OK
