"""`evalrun check`: prove every task's verifier honest before trusting any score it gives.

For each task, whatever its format, four columns of samples run through the real engine and
sandbox: the gold solution must PASS, the untouched workspace must FAIL, every near-miss overlay
its format offers (`wrong/<name>/` for evalrun tasks) must FAIL, and every reward hack must FAIL -
the generic attacks of `evalrun.honesty.tamper` plus the task's own `tamper/<name>/` overlays. For
reward-based formats PASS means a reward at or above the run's `reward_threshold`.

A verifier that fails one of the first three is *dishonest* (too weak, broken or flaky); one that
only a reward hack beats (a PASS, or an `error` the hack caused) is *gameable*: each hack that
won is named on a line of its own with the fix (`evalrun.honesty.fixes`), saying when verifier
hardening was off for the task or cannot help. Either way `check` exits 1. On a backend that is
not isolated only the attacks the verifier itself must stop run; the harness's defences are
proven on isolated backends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalrun.agents.base import Agent
from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent, OverlayAgent
from evalrun.console import styled
from evalrun.honesty.fixes import fix_for
from evalrun.honesty.tamper import (
    ATTACKS,
    DEFENDERS,
    SurveyAgent,
    TamperAgent,
    attacks_for,
    not_applicable,
)
from evalrun.models.records import Outcome, SampleRecord, SkipKind, SkippedEntry
from evalrun.run.engine import run_sample
from evalrun.run.trial import Limits
from evalrun.sandbox.base import SandboxBackend
from evalrun.tasks.loader import Task

Kind = Literal["gold", "untouched", "wrong", "tamper"]


@dataclass(frozen=True)
class Challenge:
    """One challenge to a verifier: an agent variant and the outcome an honest one must give."""

    label: str
    agent: Agent
    expect: Outcome
    kind: Kind
    summary: str = ""  # for a reward hack: what the hack tries


@dataclass(frozen=True)
class ChallengeResult:
    task_id: str
    challenge: Challenge
    record: SampleRecord
    hardened: bool = True  # verifier hardening was on for the task (`Task.verifier_hardening`)

    @property
    def honest(self) -> bool:
        return self.record.outcome is self.challenge.expect

    @property
    def not_applicable(self) -> bool:
        return not_applicable(self.record.agent)


def honesty_challenges(task: Task, survey: SurveyAgent | None = None) -> list[Challenge]:
    challenges = [
        Challenge("gold", OracleAgent(), Outcome.passed, "gold"),
        Challenge("untouched", survey or NoopAgent(), Outcome.failed, "untouched"),
    ]
    for folder in task.format.wrong_overlays():
        agent = OverlayAgent(folder, folder.name)
        challenges.append(Challenge(f"wrong/{folder.name}", agent, Outcome.failed, "wrong"))
    return challenges


def tamper_challenges(
    task: Task, isolated: bool, has_python: bool | None, defended_by: Sequence[str]
) -> list[Challenge]:
    challenges = []
    for attack in attacks_for(isolated, has_python, defended_by):
        tamper = TamperAgent(attack, isolated)
        challenges.append(Challenge(tamper.name, tamper, Outcome.failed, "tamper", attack.summary))
    for folder in task.format.tamper_overlays():
        agent = OverlayAgent(folder, folder.name)
        own = "the task's own tamper overlay"
        challenges.append(Challenge(f"tamper/{folder.name}", agent, Outcome.failed, "tamper", own))
    return challenges


async def check_tasks(
    tasks: list[Task],
    backend: SandboxBackend,
    limits: Limits,
    concurrency: int,
    defended_by: Sequence[str] = DEFENDERS,
) -> list[ChallengeResult]:
    """Every task's challenges, `concurrency` samples at a time; the reward hacks of the kinds in
    `defended_by` ("verifier", "harness"). A task's hacks start once its untouched sample has
    surveyed the workspace, so attacks that cannot apply are not run."""
    gate = asyncio.Semaphore(max(1, concurrency))
    no_retry = Limits(
        limits.setup_s, limits.agent_s, limits.verify_s, max_retries=0, workspace_diff=False
    )

    async def one(task: Task, challenge: Challenge) -> ChallengeResult:
        async with gate:
            rec = await run_sample(task, 0, challenge.agent, backend, no_retry, run_id="check")
        return ChallengeResult(task.id, challenge, rec, task.verifier_hardening)

    async def task_challenges(task: Task) -> list[ChallengeResult]:
        survey = SurveyAgent()
        honesty = honesty_challenges(task, survey)
        untouched = await one(task, honesty[1])
        hacks = tamper_challenges(task, backend.isolated, survey.has_python, defended_by)
        rest = await asyncio.gather(*(one(task, c) for c in [honesty[0], *honesty[2:], *hacks]))
        return [rest[0], untouched, *rest[1:]]

    per_task = await asyncio.gather(*(task_challenges(t) for t in tasks))
    return [result for results in per_task for result in results]


@dataclass(frozen=True)
class Verdicts:
    """Task ids whose verifier failed gold/untouched/wrong (dishonest) or only a hack (gameable)."""

    dishonest: list[str]
    gameable: list[str]


def report(
    results: list[ChallengeResult],
    console: Console,
    skipped: Sequence[SkippedEntry] = (),
    isolated: bool = True,
) -> Verdicts:
    """Print the per-task table (a row for each task that cannot load or cannot run here, with
    the reason below it) and every challenge a verifier got wrong."""
    by_task: dict[str, list[ChallengeResult]] = {}
    for result in results:
        by_task.setdefault(result.task_id, []).append(result)
    table = Table(title="Verifier honesty", header_style="bold")
    columns = ("task", "gold → pass", "untouched → fail", "wrong/* → fail", "tamper → fail")
    for column in (*columns, "verdict"):
        table.add_column(column)
    verdicts = Verdicts([], [])
    for task_id, rows in by_task.items():
        cells = {r.challenge.label: r for r in rows}
        wrong = [r for r in rows if r.challenge.kind == "wrong"]
        tamper = [r for r in rows if r.challenge.kind == "tamper"]
        dishonest = not all(r.honest for r in rows if r.challenge.kind != "tamper")
        gameable = not all(r.honest for r in tamper)
        if dishonest:
            verdicts.dishonest.append(task_id)
        elif gameable:
            verdicts.gameable.append(task_id)
        verdict = "[red]DISHONEST[/]" if dishonest else "[red]GAMEABLE[/]" if gameable else ""
        table.add_row(
            Text(task_id),
            _mark(cells["gold"]),
            _mark(cells["untouched"]),
            _count(wrong),
            _count(tamper),
            styled(verdict or "[green]honest[/]"),
        )
    for task in skipped:
        mark = styled(
            "[red]cannot load[/]" if task.kind is SkipKind.cannot_load else "[yellow]cannot run[/]"
        )
        table.add_row(Text(task.id), "", "", "", "", mark)
    console.print(table)
    for task in skipped:
        console.print(styled("[yellow]{}[/] {}:", task.id, task.kind), task.reason)
    for task_id in (*verdicts.dishonest, *verdicts.gameable):
        fixed: dict[str, str] = {}  # a fix already given for this task -> the hack it was for
        for r in by_task[task_id]:
            if not r.honest:
                console.print(styled("[red]{}[/]", task_id), _wrong(r, fixed))
    unhardened = [task_id for task_id, rows in by_task.items() if not rows[0].hardened]
    if unhardened:
        console.print(
            f"verifier hardening was off for {len(unhardened)} task(s) (verifier_hardening=false "
            f"for the run, or `verifier_hardening: false` in a task.yaml): {', '.join(unhardened)}"
        )
    if not isolated:
        skipped_attacks = len(ATTACKS) - len(attacks_for(False))
        console.print(
            f"{skipped_attacks} harness attacks (stale hidden files, agent processes left "
            "running, planted paths, ...) run only on isolated sandboxes: this one defends "
            "against none of them (use sandbox=bwrap or sandbox=docker)"
        )
    return verdicts


def _wrong(r: ChallengeResult, fixed: dict[str, str]) -> str:
    """One line for a challenge the verifier got wrong: a hack that won and its fix (`fixed`: the
    fixes already given for the task, named instead of said again), or what an honesty challenge
    expected and got."""
    if r.challenge.kind != "tamper":
        got = f"got {r.record.outcome.value}: {r.record.reason or 'verify passed'}"
        return f"{r.challenge.label}: expected {r.challenge.expect.value}, {got}"
    got = r.record.outcome.value
    if r.record.outcome is not Outcome.passed:
        got += f": {r.record.reason}"
    attack = r.challenge.agent.attack if isinstance(r.challenge.agent, TamperAgent) else None
    fix = fix_for(attack, r.hardened)
    said = f"as for {fixed[fix]}" if fix in fixed else fix
    fixed.setdefault(fix, r.challenge.label)
    return f"gameable by {r.challenge.label} (got {got}) - fix: {said}"


def _count(rows: list[ChallengeResult]) -> Text:
    if not rows:
        return styled("[yellow]none[/]")
    held = sum(r.honest for r in rows)
    idle = sum(r.not_applicable for r in rows)
    shown = f"{held}/{len(rows)}" + (f" ({idle} n/a)" if idle else "")
    return Text(shown) if held == len(rows) else styled("[red]{}[/]", shown)


def _mark(result: ChallengeResult) -> Text:
    reward = result.record.scores.get("reward")
    shown = f" (reward {reward:g})" if reward is not None else ""
    if result.honest:
        return styled("[green]ok[/]{}", shown)
    return styled("[red]{}[/]{}", result.record.outcome.value, shown)
