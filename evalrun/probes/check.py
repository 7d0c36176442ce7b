"""`evalrun check suite=probes`: prove every probe's expectations honest before trusting them.

Like oracle honesty for tasks: each probe's `scripted/good.yaml`, replayed through the coder
loop on a fresh fixture, must meet every expectation, and its `scripted/bad.yaml` must break at
least one.
A probe failing either is dishonest - an expectation too weak to catch the bad behaviour, or too
strict for the good one - and `check` exits 1 naming it and the expectations concerned.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from evalrun.console import styled
from evalrun.engine import Limits, run_sample
from evalrun.extras import require
from evalrun.probes.evidence import RecordingAgent
from evalrun.probes.format import SCORE_PREFIX
from evalrun.probes.replay import ReplayAgent
from evalrun.records import Outcome, SampleRecord
from evalrun.sandbox.base import SandboxBackend
from evalrun.tasks import Task

if TYPE_CHECKING:
    from evalrun.plan import RunPlan

EXPECTED = {"good": Outcome.passed, "bad": Outcome.failed}


@dataclass(frozen=True)
class RunCheck:
    probe_id: str
    run: str
    record: SampleRecord

    @property
    def honest(self) -> bool:
        return self.record.outcome is EXPECTED[self.run]

    @property
    def broken(self) -> list[str]:
        """Names of the expectations this run broke."""
        return [
            k.removeprefix(SCORE_PREFIX)
            for k, v in self.record.scores.items()
            if k.startswith(SCORE_PREFIX) and v == 0.0
        ]


async def check_probes(
    probes: list[Task], backend: SandboxBackend, limits: Limits, concurrency: int
) -> list[RunCheck]:
    gate = asyncio.Semaphore(max(1, concurrency))
    no_retry = Limits(limits.setup_s, limits.agent_s, limits.verify_s, max_retries=0)

    async def one(probe: Task, run: str) -> RunCheck:
        agent = RecordingAgent(ReplayAgent(run))
        async with gate:
            rec = await run_sample(probe, 0, agent, backend, no_retry, run_id="check")
        return RunCheck(probe.id, run, rec)

    jobs = [one(p, run) for p in probes for run in EXPECTED]
    return list(await asyncio.gather(*jobs))


def report(results: list[RunCheck], console: Console) -> list[str]:
    """Print the per-probe table; return the ids of dishonest probes."""
    by_probe: dict[str, dict[str, RunCheck]] = {}
    for result in results:
        by_probe.setdefault(result.probe_id, {})[result.run] = result
    table = Table(title="Probe sanity", header_style="bold")
    for column in ("probe", "good → every expectation", "bad → breaks", "verdict"):
        table.add_column(column)
    dishonest = []
    for probe_id, runs in by_probe.items():
        good, bad = runs["good"], runs["bad"]
        ok = good.honest and bad.honest
        if not ok:
            dishonest.append(probe_id)
        table.add_row(
            probe_id,
            styled("[green]ok[/]")
            if good.honest
            else styled("[red]{}[/]", good.record.outcome.value),
            ", ".join(bad.broken) if bad.honest else styled("[red]{}[/]", bad.record.outcome.value),
            styled("[green]honest[/]") if ok else styled("[red]DISHONEST[/]"),
        )
    console.print(table)
    for probe_id in dishonest:
        for result in by_probe[probe_id].values():
            if not result.honest:
                rec = result.record
                console.print(
                    styled("[red]{}[/]", probe_id),
                    f"scripted/{result.run}.yaml: expected "
                    f"{EXPECTED[result.run].value}, got {rec.outcome.value}: "
                    f"{rec.reason or 'every expectation held'}",
                )
    return dishonest


def run_check(plan: RunPlan, console: Console) -> int:
    """`evalrun check suite=probes`: replay and report; 1 when any probe is dishonest."""
    require("pydantic_ai", "agents", "evalrun check suite=probes (scripted runs replay through it)")
    console.print(
        f"checking {len(plan.tasks)} probes in {plan.tasks_dir} on sandbox={plan.backend.name}"
    )
    results = asyncio.run(
        check_probes(list(plan.tasks), plan.backend, plan.limits, plan.concurrency)
    )
    dishonest = report(results, console)
    if dishonest:
        console.print(
            styled("[red]{} dishonest probe(s):[/]", len(dishonest)), ", ".join(dishonest)
        )
        return 1
    console.print(
        styled("[green]all {} probes honest[/]:", len(plan.tasks)),
        "every good run meets every expectation, every bad run breaks one",
    )
    return 0
