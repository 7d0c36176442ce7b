"""`evalrun check suite=probes`: prove every probe's expectations honest before trusting them.

Like verifier honesty for tasks: each probe's `scripted/good.yaml`, replayed through the coder
loop on a fresh fixture, must meet every expectation, and its `scripted/bad.yaml` must break at
least one.
A probe failing either is dishonest - an expectation too weak to catch the bad behaviour, or too
strict for the good one - and `check` exits 1 naming it and the expectations concerned.

On an isolated backend the harness attacks of `evalrun.honesty.tamper` run against every probe too
(the
verifier attacks have no verifier to aim at: probes are graded on the host). Each must end in
`fail`; one that ends in `error` (e.g. the evidence could not be written) makes the probe
gameable, named with the attack.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalrun.console import styled
from evalrun.errors import ExitCode
from evalrun.extras import require
from evalrun.honesty.tamper import ATTACKS, DEFENDERS, TamperAgent
from evalrun.models.records import Outcome, SampleRecord
from evalrun.probes.evidence import RecordingAgent
from evalrun.probes.format import SCORE_PREFIX
from evalrun.probes.replay import ReplayAgent
from evalrun.run.engine import cancelled_on_stop, run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import SandboxBackend
from evalrun.tasks.loader import Task

if TYPE_CHECKING:
    from evalrun.run.plan import RunPlan

EXPECTED = {"good": Outcome.passed, "bad": Outcome.failed}
TAMPER = "tamper/"


def expected(run: str) -> Outcome:
    return Outcome.failed if run.startswith(TAMPER) else EXPECTED[run]


@dataclass(frozen=True)
class RunCheck:
    probe_id: str
    run: str
    record: SampleRecord

    @property
    def honest(self) -> bool:
        return self.record.outcome is expected(self.run)

    @property
    def broken(self) -> list[str]:
        """Names of the expectations this run broke."""
        return [
            k.removeprefix(SCORE_PREFIX)
            for k, v in self.record.scores.items()
            if k.startswith(SCORE_PREFIX) and v == 0.0
        ]


async def check_probes(
    probes: list[Task],
    backend: SandboxBackend,
    limits: Limits,
    concurrency: int,
    defended_by: Sequence[str] = DEFENDERS,
) -> list[RunCheck]:
    gate = asyncio.Semaphore(max(1, concurrency))
    no_retry = Limits(limits.setup_s, limits.agent_s, limits.verify_s, max_retries=0)

    async def one(probe: Task, run: str) -> RunCheck:
        inner = ReplayAgent(run) if run in EXPECTED else TamperAgent(attacks[run], True)
        async with gate:
            rec = await run_sample(probe, 0, RecordingAgent(inner), backend, no_retry, "check")
        return RunCheck(probe.id, run, rec)

    attacks = {}
    if backend.isolated and "harness" in defended_by:  # graded on the host: no verifier to attack
        attacks = {f"{TAMPER}{a.name}": a for a in ATTACKS if a.defended_by == "harness"}
    jobs = [one(p, run) for p in probes for run in [*EXPECTED, *attacks]]
    return list(await asyncio.gather(*jobs))


def report(results: list[RunCheck], console: Console) -> list[str]:
    """Print the per-probe table; return the ids of dishonest or gameable probes."""
    by_probe: dict[str, dict[str, RunCheck]] = {}
    for result in results:
        by_probe.setdefault(result.probe_id, {})[result.run] = result
    table = Table(title="Probe sanity", header_style="bold")
    columns = ("probe", "good → every expectation", "bad → breaks", "tamper → fail", "verdict")
    for column in columns:
        table.add_column(column)
    flagged = []
    for probe_id, runs in by_probe.items():
        good, bad = runs["good"], runs["bad"]
        tamper = [r for name, r in runs.items() if name.startswith(TAMPER)]
        held = sum(r.honest for r in tamper)
        dishonest, gameable = not (good.honest and bad.honest), held < len(tamper)
        verdict = "[red]DISHONEST[/]" if dishonest else "[red]GAMEABLE[/]" if gameable else ""
        if dishonest or gameable:
            flagged.append(probe_id)
        shown = f"{held}/{len(tamper)}" if tamper else "none"
        table.add_row(
            probe_id,
            styled("[green]ok[/]")
            if good.honest
            else styled("[red]{}[/]", good.record.outcome.value),
            ", ".join(bad.broken) if bad.honest else styled("[red]{}[/]", bad.record.outcome.value),
            Text(shown) if held == len(tamper) else styled("[red]{}[/]", shown),
            styled(verdict or "[green]honest[/]"),
        )
    console.print(table)
    for probe_id in flagged:
        for result in by_probe[probe_id].values():
            if not result.honest:
                rec = result.record
                what = (
                    f"gameable by {result.run}"
                    if result.run.startswith(TAMPER)
                    else f"scripted/{result.run}.yaml: expected {expected(result.run).value}"
                )
                console.print(
                    styled("[red]{}[/]", probe_id),
                    f"{what}, got {rec.outcome.value}: {rec.reason or 'every expectation held'}",
                )
    return flagged


def run_check(plan: RunPlan, console: Console, defended_by: Sequence[str] = DEFENDERS) -> int:
    """`evalrun check suite=probes`: replay and report; 1 when any probe is dishonest."""
    require("pydantic_ai", "agents", "evalrun check suite=probes (scripted runs replay through it)")
    console.print(
        f"checking {len(plan.tasks)} probes in {plan.tasks_dir} on sandbox={plan.backend.name}"
    )
    work = check_probes(list(plan.tasks), plan.backend, plan.limits, plan.concurrency, defended_by)
    results = asyncio.run(cancelled_on_stop(work, plan.backend, "the probes' samples"))
    flagged = report(results, console)
    if flagged:
        console.print(
            styled("[red]{} dishonest or gameable probe(s):[/]", len(flagged)), ", ".join(flagged)
        )
        return ExitCode.FAILED
    console.print(
        styled("[green]all {} probes honest[/]:", len(plan.tasks)),
        "every good run meets every expectation, every bad run breaks one",
    )
    return ExitCode.OK
