"""`evalrun check`: prove every task's oracle honest before trusting any score it gives.

For each task, whatever its format: the gold solution must PASS, the untouched workspace must
FAIL, and every near-miss overlay its format offers (`wrong/<name>/` for evalrun tasks; Harbor
tasks have none) must FAIL. For reward-based formats PASS means a reward at or above the run's
`reward_threshold`, and the table shows each reward. An oracle that fails any of these is
dishonest - too weak, broken, or flaky - and `check` exits 1 naming it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalrun.agents.base import Agent
from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent, OverlayAgent
from evalrun.console import styled
from evalrun.engine import Limits, run_sample
from evalrun.plan import CANNOT_LOAD, SkippedTask
from evalrun.records import Outcome, SampleRecord
from evalrun.sandbox.base import SandboxBackend
from evalrun.tasks import Task


@dataclass(frozen=True)
class Probe:
    """One honesty probe: an agent variant and the outcome an honest oracle must give it."""

    label: str
    agent: Agent
    expect: Outcome


@dataclass(frozen=True)
class ProbeResult:
    task_id: str
    probe: Probe
    record: SampleRecord

    @property
    def honest(self) -> bool:
        return self.record.outcome is self.probe.expect


def probes_for(task: Task) -> list[Probe]:
    probes = [
        Probe("gold", OracleAgent(), Outcome.passed),
        Probe("untouched", NoopAgent(), Outcome.failed),
    ]
    for folder in task.format.wrong_overlays():
        probes.append(
            Probe(f"wrong/{folder.name}", OverlayAgent(folder, folder.name), Outcome.failed)
        )
    return probes


async def check_tasks(
    tasks: list[Task], backend: SandboxBackend, limits: Limits, concurrency: int
) -> list[ProbeResult]:
    gate = asyncio.Semaphore(max(1, concurrency))
    no_retry = Limits(
        limits.setup_s, limits.agent_s, limits.verify_s, max_retries=0, workspace_diff=False
    )

    async def one(task: Task, probe: Probe) -> ProbeResult:
        async with gate:
            rec = await run_sample(task, 0, probe.agent, backend, no_retry, run_id="check")
        return ProbeResult(task.id, probe, rec)

    return list(await asyncio.gather(*(one(t, p) for t in tasks for p in probes_for(t))))


def report(
    results: list[ProbeResult], console: Console, skipped: Sequence[SkippedTask] = ()
) -> list[str]:
    """Print the per-task table (a row for each task that cannot load or cannot run here, with
    the reason below it); return the ids of dishonest tasks."""
    by_task: dict[str, list[ProbeResult]] = {}
    for result in results:
        by_task.setdefault(result.task_id, []).append(result)
    table = Table(title="Oracle honesty", header_style="bold")
    for column in ("task", "gold → pass", "untouched → fail", "wrong/* → fail", "verdict"):
        table.add_column(column)
    dishonest = []
    for task_id, rows in by_task.items():
        cells = {r.probe.label: r for r in rows}
        wrong = [r for r in rows if r.probe.label.startswith("wrong/")]
        ok = all(r.honest for r in rows)
        if not ok:
            dishonest.append(task_id)
        table.add_row(
            Text(task_id),
            _mark(cells["gold"]),
            _mark(cells["untouched"]),
            f"{sum(r.honest for r in wrong)}/{len(wrong)}" if wrong else styled("[yellow]none[/]"),
            styled("[green]honest[/]") if ok else styled("[red]DISHONEST[/]"),
        )
    for task in skipped:
        mark = styled(
            "[red]cannot load[/]" if task.kind == CANNOT_LOAD else "[yellow]cannot run[/]"
        )
        table.add_row(Text(task.task_id), "", "", "", mark)
    console.print(table)
    for task in skipped:
        console.print(styled("[yellow]{}[/] {}:", task.task_id, task.kind), task.reason)
    for task_id in dishonest:
        for r in by_task[task_id]:
            if not r.honest:
                console.print(
                    styled("[red]{}[/]", task_id),
                    f"{r.probe.label}: expected {r.probe.expect.value}, "
                    f"got {r.record.outcome.value}: {r.record.reason or 'verify passed'}",
                )
    return dishonest


def _mark(result: ProbeResult) -> Text:
    reward = result.record.scores.get("reward")
    shown = f" (reward {reward:g})" if reward is not None else ""
    if result.honest:
        return styled("[green]ok[/]{}", shown)
    return styled("[red]{}[/]{}", result.record.outcome.value, shown)
